"""A joint German–English byte-pair-encoding (BPE) tokenizer, built with HuggingFace ``tokenizers``.

BPE starts from single characters and repeatedly merges the most frequent adjacent pair into a new
symbol until the vocabulary has the requested size, so frequent words become one token and rare words
split into known pieces: no word is out of vocabulary.  One vocabulary is learned from both languages
(German and English share many names, numbers and word pieces), and source and target share its ids.

Whitespace is kept as the marker ``▁`` at the start of a word (the ``Metaspace`` scheme of
SentencePiece), so ``decode`` restores the spaces exactly and sub-word pieces read as ``▁Ein``, ``▁Hund``,
``e`` in plots.  Text is NFKC-normalised (e.g. a no-break space becomes a space) and case is kept,
because BLEU is computed on cased text.

The special tokens come first, so their ids are fixed: ``<pad>`` = 0, ``<s>`` = 1, ``</s>`` = 2,
``<unk>`` = 3.

Source: Sennrich, Haddow, Birch (2016), "Neural Machine Translation of Rare Words with Subword Units",
ACL, §3.2 (joint BPE on the union of source and target text).
"""

from __future__ import annotations

import numbers
import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import platformdirs
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from .data import load_multi30k
from .files import atomic_write_text
from .special_tokens import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, SPECIAL_TOKENS, UNK, UNK_ID

__all__ = [
    "PAD",
    "BOS",
    "EOS",
    "UNK",
    "SPECIAL_TOKENS",
    "PAD_ID",
    "BOS_ID",
    "EOS_ID",
    "UNK_ID",
    "train_bpe",
    "load_tokenizer",
    "save_tokenizer",
    "multi30k_tokenizer",
    "encode",
    "decode",
    "tokens",
]

TOKENIZER_VERSION = "v2"  # part of the cache file name: bump it when train_bpe's settings change


def _check_vocab_size(vocab_size: int) -> None:
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"vocab_size must be an int greater than the {len(SPECIAL_TOKENS)} special tokens "
            f"{SPECIAL_TOKENS}, got {vocab_size!r}"
        )


def train_bpe(texts: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2) -> Tokenizer:
    """Learn a BPE vocabulary of ``vocab_size`` tokens from ``texts``.

    Training is deterministic: the same texts give the same vocabulary and merges.

    Args:
        texts: sentences (one string each); for a joint vocabulary pass both languages.
        vocab_size: final vocabulary size, special tokens and single characters included.  If the texts
            hold fewer merge candidates, the vocabulary comes out smaller.
        min_frequency: a pair must occur at least this often to be merged.

    Returns:
        ``tokenizers.Tokenizer``: BPE model with ``<unk>`` for unseen characters, NFKC normaliser,
        ``Metaspace`` pre-tokenizer (punctuation split off) and decoder, special tokens
        ``<pad>, <s>, </s>, <unk>`` at ids 0–3.
        No special tokens are added by ``encode``; :func:`lib.data.collate` adds BOS/EOS.

    Raises:
        ValueError: ``vocab_size`` ≤ 4 (the number of special tokens), or smaller than the special tokens and the
            distinct characters of the texts (the message says how many that is); ``min_frequency`` < 1;
            ``texts`` is empty, holds a non-string or only blank strings.
        RuntimeError: the trained vocabulary does not give the special tokens ids 0–3 (a safeguard against a
            change in the ``tokenizers`` trainer; not expected to happen).

    Source: Sennrich et al. (2016), "Neural Machine Translation of Rare Words with Subword Units", §3.2.
    """
    _check_vocab_size(vocab_size)
    if not isinstance(min_frequency, int) or min_frequency < 1:
        raise ValueError(f"min_frequency must be an int >= 1, got {min_frequency!r}")
    if isinstance(texts, str):
        raise ValueError("texts must be a list of sentences, got a single str")
    texts = list(texts)
    if not texts:
        raise ValueError("texts must hold at least one sentence, got none")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts must hold strings, texts[{i}] is {type(text).__name__}")
    if not any(text.strip() for text in texts):
        raise ValueError(f"texts hold no characters to learn sub-words from: all {len(texts)} are blank")

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.normalizer = normalizers.NFKC()
    # "a dog." -> "▁a", "▁dog", "." : words start with ▁, punctuation becomes its own piece
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(), pre_tokenizers.Punctuation()])
    tok.decoder = decoders.Metaspace()  # "▁a", "▁do", "g" -> "a dog"
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    ids = tuple(tok.token_to_id(t) for t in SPECIAL_TOKENS)
    if ids != tuple(range(len(SPECIAL_TOKENS))):  # guards against a change in the trainer's behaviour
        raise RuntimeError(f"special tokens {SPECIAL_TOKENS} got ids {ids}, expected 0..3")
    if tok.get_vocab_size() > vocab_size:  # the trainer keeps every character, whatever vocab_size says
        raise ValueError(
            f"vocab_size={vocab_size} cannot be reached: the {len(SPECIAL_TOKENS)} special tokens and the "
            f"{tok.get_vocab_size() - len(SPECIAL_TOKENS)} distinct characters of the texts (every one is kept) "
            f"already make {tok.get_vocab_size()} tokens; ask for at least {tok.get_vocab_size()}"
        )
    return tok


def save_tokenizer(tok: Tokenizer, path: str | os.PathLike) -> None:
    """Write ``tok`` as one JSON file (the ``tokenizers`` format), creating parent folders, atomically.

    Args:
        tok: the tokenizer.
        path: file to write, conventionally ``*.json``.

    Raises:
        OSError: the folder cannot be created or written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, tok.to_str(pretty=True))  # unique temp file, fsync, ordinary permissions, rename


def load_tokenizer(path: str | os.PathLike) -> Tokenizer:
    """Read a tokenizer written by :func:`save_tokenizer`.

    Args:
        path: the JSON file.

    Returns:
        ``tokenizers.Tokenizer``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the file is not a tokenizer the installed ``tokenizers`` can read (truncated, damaged or
            written by an incompatible version; the message names the file), or its special tokens do not have
            ids 0–3 (not a tokenizer made by :func:`train_bpe`).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"tokenizer file {str(path)!r} does not exist; create it with save_tokenizer")
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as err:  # the tokenizers library raises a bare Exception for a damaged file
        raise ValueError(f"tokenizer file {str(path)!r} cannot be read ({err})") from None
    ids = tuple(tok.token_to_id(t) for t in SPECIAL_TOKENS)
    if ids != tuple(range(len(SPECIAL_TOKENS))):
        raise ValueError(f"tokenizer {str(path)!r} maps special tokens {SPECIAL_TOKENS} to ids {ids}, expected 0..3")
    return tok


def multi30k_tokenizer(
    vocab_size: int = 8000,
    root: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> Tokenizer:
    """The book's joint German–English BPE tokenizer, trained on the Multi30k train split and cached.

    The first call trains on the 29,000 German and 29,000 English training sentences (about a second on
    two CPU cores for 8,000 tokens) and saves the JSON; later calls load it.

    Args:
        vocab_size: vocabulary size, special tokens included.
        root: folder with the Multi30k files, passed to :func:`lib.data.load_multi30k`.
        cache_dir: folder for the JSON file ``multi30k-bpe{vocab_size}-v2.json``; default
            ``platformdirs.user_cache_dir("attention-book") / "tokenizers"``.

    Returns:
        ``tokenizers.Tokenizer`` as made by :func:`train_bpe` (``min_frequency=2``).

    Raises:
        ValueError: ``vocab_size`` ≤ 4.
        FileNotFoundError, lib.data.ChecksumError: see :func:`lib.data.load_multi30k`.

    A cached file that cannot be read (truncated, damaged) is named in a warning and rebuilt.

    Source: Sennrich et al. (2016), §3.2; data: Elliott et al. (2016), Multi30K.
    """
    _check_vocab_size(vocab_size)
    folder = (
        Path(cache_dir) if cache_dir is not None else Path(platformdirs.user_cache_dir("attention-book")) / "tokenizers"
    )
    path = folder / f"multi30k-bpe{vocab_size}-{TOKENIZER_VERSION}.json"
    if path.is_file():
        try:
            return load_tokenizer(path)
        except ValueError as err:  # a damaged cache file: say which, then build it again
            warnings.warn(f"{err}; training the tokenizer again and replacing the cached file", stacklevel=2)
    pairs = load_multi30k("train", root)
    tok = train_bpe([de for de, _ in pairs] + [en for _, en in pairs], vocab_size=vocab_size, min_frequency=2)
    try:
        save_tokenizer(tok, path)
    except OSError as err:
        warnings.warn(
            f"could not cache the tokenizer at {path} ({err}); it will be trained again next time", stacklevel=1
        )
    return tok


def encode(tok: Tokenizer, text: str) -> list[int]:
    """Token ids of ``text``, without special tokens.

    Args:
        tok: a tokenizer from :func:`train_bpe`.
        text: one sentence.

    Returns:
        list of ids, one per sub-word piece; characters never seen in training become ``UNK_ID``.

    Raises:
        ValueError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return tok.encode(text, add_special_tokens=False).ids


def decode(tok: Tokenizer, ids: Sequence[int]) -> str:
    """The text of a sequence of ids: stops at the first EOS and drops the special tokens.

    Args:
        tok: a tokenizer from :func:`train_bpe`.
        ids: token ids (list, tuple or 1-D tensor), e.g. a model's output after BOS.

    Returns:
        the sentence, spaces restored; for a normal sentence ``decode(tok, encode(tok, s)) == s`` (up to
        NFKC normalisation).

    Raises:
        TypeError: ``ids`` is not a sequence of ints (a float id, a str).
        ValueError: ``ids`` is not one-dimensional, or holds an id outside the vocabulary ``[0, vocab size)``.
    """
    if hasattr(ids, "tolist"):  # torch tensor / numpy array
        if getattr(ids, "ndim", 1) != 1:
            raise ValueError(f"ids must be one-dimensional, got shape {tuple(ids.shape)}")
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"ids must be a sequence of int token ids, got {type(ids).__name__}")
    ids = list(ids)
    for i, value in enumerate(ids):
        if isinstance(value, (list, tuple)):
            raise ValueError(f"ids must be one-dimensional, ids[{i}] is a {type(value).__name__}")
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"ids must hold int token ids, ids[{i}] is {value!r} ({type(value).__name__})")
    ids = [int(i) for i in ids]
    size = tok.get_vocab_size()
    outside = [i for i in ids if not 0 <= i < size]
    if outside:
        raise ValueError(f"ids must be token ids in [0, {size}), got {outside[:5]}")
    if EOS_ID in ids:
        ids = ids[: ids.index(EOS_ID)]
    return tok.decode(ids, skip_special_tokens=True)


def tokens(tok: Tokenizer, text: str) -> list[str]:
    """The sub-word pieces of ``text`` as strings, for plot labels.

    Args:
        tok: a tokenizer from :func:`train_bpe`.
        text: one sentence.

    Returns:
        list of strings, one per id of :func:`encode`; ``▁`` marks the start of a word, e.g.
        ``"Ein Hund läuft über die Wiese."`` -> ``["▁Ein", "▁Hund", "▁läuft", "▁über", "▁die", "▁Wiese", "."]``
        with the 8,000-token Multi30k vocabulary (punctuation is a piece of its own).

    Raises:
        ValueError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return tok.encode(text, add_special_tokens=False).tokens
