"""Translate German to English with a trained run.

Command line (one German sentence per line in, one English sentence per line out)::

    python -m lib.translate --run models/de-en [--beam 5] < input.de > output.en
    python -m lib.translate --run models/de-en --bleu test_2016_flickr     # score a Multi30k split

Output line i is the translation of input line i, whatever the input holds. The input is read as bytes and
decoded as UTF-8 whatever the locale, line by line; lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (Unix, Windows and
old Mac files read alike); a UTF-8 byte-order mark is dropped, and a file that starts with a UTF-16 byte-order
mark (what Windows PowerShell writes) is read as UTF-16. A blank line gives a blank line; a line that is not
valid UTF-8 gives an empty line and a message on stderr naming it. A line of several sentences (a paragraph) is
split by pysbd's German rules, translated sentence by sentence and joined on one output line; a sentence longer
than the model's limit is translated in pieces and named on stderr (see :func:`translate`). A line that looks out
of the model's domain (German image captions: :func:`domain_note`) is translated and named on stderr. The
output is UTF-8.

The translations stream: stdin from a pipe or a terminal is translated as its lines arrive, a file a few batches at
a time (:data:`STREAM_BATCHES`), and each line is written and flushed as soon as it and the lines before it are
done, so a reader sees output at once and Ctrl-C keeps every finished line (stderr says how many); on a terminal,
a progress bar on stderr follows a long input.

Exit status: 0 = every line was translated; 1 = some lines were not valid UTF-8 (their output lines are empty,
every other line was written), or stdout could not be written (a full disk: one line says so); 2 = bad arguments
or a closed stdin or stdout (nothing was loaded); 130 = interrupted with Ctrl-C (the lines before it were
written); 141 = the reader of stdout stopped reading (as ``| head`` does), quietly.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import math
import os
import re
import select
import signal
import stat
import sys
import threading
import unicodedata
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pysbd
import torch
from torch import Tensor
from tqdm import tqdm

from .bpe import decode, encode
from .checkpoint import load_run
from .data import SPLITS, load_multi30k, pad_batch
from .decode import beam_search, greedy_decode, in_eval_mode
from .interfaces import AttentionMaps, EncoderDecoder
from .metrics import BleuResult, corpus_bleu
from .special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID

__all__ = [
    "translate",
    "evaluate_bleu",
    "TranslationAttention",
    "translation_attention",
    "MAX_BEAM",
    "MAX_HYPOTHESES",
    "STREAM_BATCHES",
    "PROGRESS_LINES",
    "DEFAULT_ALPHA",
    "clean_text",
    "plain_text_tokenizer",
    "text_pieces",
    "split_sentences",
    "DOMAIN_RULE",
    "domain_note",
]

#: The widest beam the command line accepts: beam search holds beam x batch hypotheses, each with its key/value
#: cache and a vocabulary-sized row of scores per step, so memory grows with beam x batch (``--beam 1000`` ran
#: out of memory). Translation uses small beams: Vaswani et al. 2017, §6.1, use 4.
MAX_BEAM = 64
#: Hypotheses decoded at once by :func:`translate`: the batch is lowered to ``MAX_HYPOTHESES // beam_size``
#: sentences, so the default batch of 100 runs unchanged up to beam 5 and beam 64 decodes 7 sentences at a time.
MAX_HYPOTHESES = 500
#: The command line translates its input this many batches at a time (pieces of similar length share a batch
#: within them) and writes each line as soon as it and the lines before it are done.
STREAM_BATCHES = 4
#: The command line shows a progress bar on a terminal for inputs of at least this many lines.
PROGRESS_LINES = 200
#: Beam search's length penalty α by default (:func:`translate`, :func:`evaluate_bleu`), and the command line's for a
#: run that records none (``beam_alpha`` in its ``results.json``): Vaswani et al. 2017, §6.1, use 0.6.
DEFAULT_ALPHA = 0.6
#: The out-of-domain rule of :func:`domain_note`, in one place: ``python -m lib.export`` writes it into the live
#: page's ``manifest.json`` ("domain"), and the page (tools/explorer/domain.js) applies the same rule to the same
#: tokens. Calibrated on Multi30k: the 1,000 German lines of test_2016_flickr have a median of 1.25 sub-words per
#: word, a 99th percentile of 2.17 and a maximum of 2.75; the rule flags 7 of them (0.7 %), and flags news
#: ("Die Bundesregierung hat am Mittwoch neue Steuergesetze beschlossen.", 2.62), numbers ("Zwölf, dreizehn,
#: vierzehn, 1999.", 4.75), a greeting ("Guten Morgen, wie geht es Ihnen?", a question) and English ("The quick brown
#: fox jumps over the lazy dog.", 2 English function words, no German one). The word lists are a language
#: signal from the tokens alone (the vocabulary is joint, so sub-word counts cannot tell English from German):
#: the most frequent function words of each language that the other does not share ("in" and "an" are both).
DOMAIN_RULE: dict = {
    "max_pieces_per_word": 2.25,  # more sub-words per word than this: mostly words the model has rarely seen
    "min_english_words": 2,  # at least this many English function words, and more than German ones: not German
    "english_words": sorted(
        "the a of and is are was were to with on at this that it you for from by his her their".split()  # noqa: SIM905
    ),
    "german_words": sorted(
        "der die das den dem des ein eine einem einen einer eines und ist sind mit auf im am von zu vor für sich "  # noqa: SIM905
        "zwei".split()
    ),
    # captions describe a picture in the third person and ask nothing: a question or a first/second person
    "conversation_words": sorted(
        "ich du wir mir mich dir dich uns euch mein meine meinen meinem dein deine unser unsere euer".split()  # noqa: SIM905
    ),
    "question_mark": "?",
}

_CONTROL_IDS = frozenset({PAD_ID, BOS_ID, EOS_ID})
_WORD_START = "\u2581"  # the Metaspace marker that lib.bpe's tokenizer puts before every word
# where a too-long text is split: after . ! ? ; (optionally followed by a closing quote or bracket) and a space
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[.!?;][\"'\u00ab\u00bb\u201c\u201d\u2018\u2019)\]])\s+")
_LINE_END = re.compile(r"\r\n|\r|\n")
_LINE_END_BYTES = re.compile(rb"\r\n|\r|\n")


def clean_text(text: str) -> str:
    """The text as the model should see it: NFC, without byte-order marks and surrounding whitespace; a text of
    invisible characters only (zero-width spaces, joiners, soft hyphens) is blank.

    The first step of :func:`translate` (and of the exported model's and the web page's tokenizer).

    Args:
        text: a sentence or a paragraph.

    Returns:
        The cleaned text.
    """
    # U+FEFF inside text is a byte-order mark left over from concatenated files (its use as a zero-width
    # no-break space is deprecated since Unicode 3.2); str.strip() also removes a "\r" left from "\r\n".
    text = unicodedata.normalize("NFC", text).replace("\ufeff", "").strip()
    # a text of invisible characters only (zero-width spaces and joiners, soft hyphens: format characters) is blank
    return "" if all(unicodedata.category(c) == "Cf" or c.isspace() for c in text) else text


def plain_text_tokenizer(tokenizer):
    """A copy of ``tokenizer`` that reads ``<pad>``, ``<s>``, ``</s>``, ``<unk>`` in a text as characters.

    A ``tokenizers.Tokenizer`` matches its special tokens anywhere in the text (``add_special_tokens=False``
    only stops it from *adding* any), so a literal ``</s>`` in a sentence became the end-of-sentence id.
    With ``encode_special_tokens = True`` it tokenises them like any other characters. The flag is set on a
    copy (16 ms) so that the caller's tokenizer is never changed, not even for a moment.

    This belongs in ``lib.bpe.encode`` (every caller that encodes user text wants it); it lives here until then.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` (anything else is returned as it is).

    Returns:
        The copy, or ``tokenizer`` itself when it is not a ``tokenizers.Tokenizer``.
    """
    if not (hasattr(tokenizer, "encode_special_tokens") and hasattr(tokenizer, "to_str")):
        return tokenizer  # not a tokenizers.Tokenizer: _text_ids' safety net still applies
    plain = type(tokenizer).from_str(tokenizer.to_str())
    plain.encode_special_tokens = True
    return plain


def _text_ids(tokenizer, text: str) -> list[int]:
    """Token ids of ``text`` read as text: never PAD, BOS or EOS (a control id from text becomes UNK)."""
    return [UNK_ID if i in _CONTROL_IDS else i for i in encode(tokenizer, text)]


def _cut(tokenizer, ids: list[int], limit: int) -> int:
    """Where to cut ``ids`` (longer than ``limit``): the last word start in the window's second half, else the limit."""
    for j in range(limit, limit // 2, -1):
        if (tokenizer.id_to_token(ids[j]) or "").startswith(_WORD_START):
            return j
    return limit


def text_pieces(tokenizer, text: str, limit: int) -> tuple[list[list[int]], int]:
    """Split a cleaned text into pieces of at most ``limit`` ids: sentence ends first, then the token limit.

    A piece too long even as a sentence is cut at the last word start in the second half of its window (else at
    the limit). The ids are those of the text read as text: never PAD, BOS or EOS (a control id becomes UNK).

    Args:
        tokenizer: the tokenizer, as :func:`plain_text_tokenizer` returns it.
        text: the text, as :func:`clean_text` returns it.
        limit: the most ids a piece may have (the model's ``max_len - 1``, room for EOS).

    Returns:
        ``(pieces, n_ids)``: the pieces' ids (one piece, the whole text, when it fits; none for a blank text) and the
        number of ids of the whole text.
    """
    ids = _text_ids(tokenizer, text)
    if len(ids) <= limit:
        return ([ids] if ids else []), len(ids)
    pieces = []
    for sentence in _SENTENCE_END.split(text):
        rest = _text_ids(tokenizer, sentence)
        while len(rest) > limit:
            cut = _cut(tokenizer, rest, limit)
            pieces.append(rest[:cut])
            rest = rest[cut:]
        if rest:
            pieces.append(rest)
    return pieces, len(ids)


_SEGMENTER: list = []  # pysbd's German segmenter, built on first use (building it compiles its rules)
#: Most characters pysbd reads at once: its rules take time quadratic in the length of what they read (64 kB in one
#: line took 2.3 s, 0.5 MB over 300 s), so a long line is cut into pieces of this size first (:func:`_chunks`).
SENTENCE_CHUNK = 2_000


def split_sentences(text: str) -> list[str]:
    """The sentences of a cleaned text, by pysbd's German rules (abbreviations, ordinals and initials are no end).

    :func:`translate` translates a paragraph sentence by sentence, since the model learned from one-sentence
    captions (a 17-sentence paragraph came back as one English sentence). The live page splits with the browser's
    own ``Intl.Segmenter`` (ICU's rules), which agrees on plain sentences but also ends one after "Dr." or "3.".

    Args:
        text: a text, as :func:`clean_text` returns it.

    A text longer than :data:`SENTENCE_CHUNK` characters is first cut into pieces after a sentence end (". ",
    "! ", "? ") or else at a space, so that the work grows linearly with its length; a piece ends a sentence
    there even after an abbreviation (once in 2,000 characters at most).

    Returns:
        Its sentences, stripped, none blank (``[]`` for a blank text; ``[text]`` for one sentence).

    Source: pysbd (Sadvilkar and Neumann 2020), the Golden Rules of sentence boundaries.
    """
    if not text:
        return []
    if not _SEGMENTER:
        _SEGMENTER.append(pysbd.Segmenter(language="de", clean=False))
    sentences = [s.strip() for chunk in _chunks(text) for s in _SEGMENTER[0].segment(chunk)]
    return [s for s in sentences if s] or [text]


def _chunks(text: str, size: int | None = None) -> Iterator[str]:
    """``text`` in consecutive pieces of at most ``size`` characters (:data:`SENTENCE_CHUNK`), each cut after the
    last sentence end in it, else at its last space, else (one word of ``size`` characters) where it is full."""
    size = SENTENCE_CHUNK if size is None else size
    start = 0
    while len(text) - start > size:
        window = text[start : start + size]
        cut = max(window.rfind(". "), window.rfind("! "), window.rfind("? ")) + 1
        if cut <= 0:
            cut = window.rfind(" ")
        if cut <= 0:
            cut = size
        yield text[start : start + cut]
        start += cut
    yield text[start:]


def _words(tokens: list[str]) -> list[str]:
    """Whitespace words from sub-word tokens (a word starts at the Metaspace marker), lowercased, outer
    punctuation stripped (tools/explorer/domain.js: words)."""
    words: list[str] = []
    for token in tokens:
        if token.startswith(_WORD_START) or not words:
            words.append(token.removeprefix(_WORD_START))
        else:
            words[-1] += token
    out = []
    for word in words:
        i, j = 0, len(word)
        while i < j and unicodedata.category(word[i]).startswith("P"):
            i += 1
        while j > i and unicodedata.category(word[j - 1]).startswith("P"):
            j -= 1
        out.append(word[i:j].lower())
    return out


def domain_note(tokens: list[str], rule: dict | None = None) -> str | None:
    """Why a text looks out of the model's domain (image captions in German), or None: from its sub-words only.

    Three signals (:data:`DOMAIN_RULE`): more sub-words per whitespace word than any caption has (words the model
    has rarely seen: names, news, numbers); more English function words than German ones (the vocabulary is
    joint, so English splits into few pieces); a question, or a first or second person (captions describe a
    picture). The live page applies the same rule to the same tokens (tools/explorer/domain.js).

    Args:
        tokens: the text's sub-word tokens (``tokenizer.encode(text).tokens`` of the text as :func:`translate`
            reads it).
        rule: the rule's constants, default :data:`DOMAIN_RULE`.

    Returns:
        A short reason (e.g. ``"19 sub-words for 4 words (captions have at most about 2.25 per word)"``), or None
        when the text looks like a caption (or is blank).
    """
    rule = DOMAIN_RULE if rule is None else rule
    words = _words(tokens)
    if not words:
        return None
    reasons = []
    per_word = len(tokens) / len(words)
    if per_word > rule["max_pieces_per_word"]:
        reasons.append(
            f"{len(tokens)} sub-words for {len(words)} words (captions have at most about "
            f"{rule['max_pieces_per_word']} per word)"
        )
    english = sum(w in rule["english_words"] for w in words)
    german = sum(w in rule["german_words"] for w in words)
    if english >= rule["min_english_words"] and english > german:
        reasons.append(f"{english} English function words and {german} German ones: it looks like English")
    if any(rule["question_mark"] in t for t in tokens) or any(w in rule["conversation_words"] for w in words):
        reasons.append("a question or a first/second person: captions describe a picture")
    return "; ".join(reasons) or None


@dataclass
class _Line:
    """One translated line: its index, its translation, its (ids, pieces) when a sentence was over the model's
    limit, and why it looks out of domain (or None)."""

    index: int
    text: str
    split: tuple[int, int] | None
    note: str | None


def _translate(
    model: EncoderDecoder,
    tokenizer,
    sentences: list[str],
    beam_size: int,
    alpha: float,
    batch_size: int,
    device: torch.device | str | None,
    too_long: str,
    max_hypotheses: int,
    by_sentence: bool = True,
) -> tuple[list[str], dict[int, tuple[int, int]]]:
    """:func:`translate` without the checks and warnings; also returns {index: (ids, pieces)} of the split sentences."""
    out, split = [], {}
    for line in _translations(
        model, tokenizer, [sentences], beam_size, alpha, batch_size, device, too_long, max_hypotheses, by_sentence
    ):
        out.append(line.text)
        if line.split is not None:
            split[line.index] = line.split
    return out, split


@torch.no_grad()
def _translations(
    model: EncoderDecoder,
    tokenizer,
    groups: Iterable[list[str]],
    beam_size: int,
    alpha: float,
    batch_size: int,
    device: torch.device | str | None,
    too_long: str,
    max_hypotheses: int,
    by_sentence: bool = True,
) -> Iterator[_Line]:
    """Each line's :class:`_Line`, in order, as soon as it and every line before it are translated.

    The lines come in groups (the whole list in one group: the best batching, the first translation last; a few
    batches' worth: output that flows); in a group, pieces of similar length share a batch. A line is split into
    sentences (:func:`split_sentences`), and a sentence over the limit into pieces (:func:`text_pieces`).
    """
    limit = model.config.max_len - 1  # source ids, so that with EOS the source fills at most max_len positions
    plain = plain_text_tokenizer(tokenizer)
    device = next(model.parameters()).device if device is None else torch.device(device)
    model.to(device).eval()
    batch = max(1, min(batch_size, max_hypotheses // beam_size))  # at most max_hypotheses hypotheses at once
    first = 0
    for group in groups:
        pieces: list[list[int]] = []  # source ids of every piece to decode, EOS appended
        owner: list[int] = []  # the line (in the group) each piece belongs to
        split: dict[int, tuple[int, int]] = {}
        notes: list[str | None] = []
        for i, line in enumerate(group):
            text = clean_text(line)
            notes.append(domain_note(plain.encode(text, add_special_tokens=False).tokens) if text else None)
            parts: list[list[int]] = []
            for sentence in split_sentences(text) if by_sentence else ([text] if text else []):
                sentence_parts, n_ids = text_pieces(plain, sentence, limit)  # a blank sentence has no piece
                if len(sentence_parts) > 1:
                    if too_long == "error":
                        raise ValueError(
                            f"sentences[{first + i}] has {n_ids} sub-word tokens in one sentence, more than the "
                            f"model's limit of {limit} (model.config.max_len - 1); pass too_long='split' to "
                            "translate it in pieces"
                        )
                    ids, count = split.get(i, (0, 0))
                    split[i] = (max(ids, n_ids), count + len(sentence_parts))
                parts += sentence_parts
            pieces += [p + [EOS_ID] for p in parts]
            owner += [i] * len(parts)
        pieces_of: list[list[int]] = [[] for _ in group]
        for j, i in enumerate(owner):
            pieces_of[i].append(j)
        waiting = [len(js) for js in pieces_of]  # pieces of each line still to decode
        texts = [""] * len(pieces)
        done = 0  # lines of the group already yielded
        order = sorted(range(len(pieces)), key=lambda j: len(pieces[j]))  # similar lengths share a batch
        for start in range(0, len(order) + 1, batch):  # one more round: yields the group's trailing blank lines
            chunk = order[start : start + batch]
            if chunk:
                src = pad_batch([pieces[j] for j in chunk], PAD_ID).to(device)
                if beam_size == 1:
                    hyps = greedy_decode(model, src)
                else:
                    hyps = beam_search(model, src, beam_size=beam_size, alpha=alpha)
                for j, h in zip(chunk, hyps):
                    texts[j] = decode(tokenizer, h)
                    waiting[owner[j]] -= 1
            while done < len(group) and waiting[done] == 0:
                parts_text = [texts[j] for j in pieces_of[done]]
                text = parts_text[0] if len(parts_text) == 1 else " ".join(t for t in parts_text if t)
                yield _Line(first + done, text, split.get(done), notes[done])
                done += 1
        first += len(group)


@torch.no_grad()
@in_eval_mode
def translate(
    model: EncoderDecoder,
    tokenizer,
    sentences: list[str],
    beam_size: int = 1,
    alpha: float = DEFAULT_ALPHA,
    batch_size: int = 100,
    device: torch.device | str | None = None,
    *,
    too_long: str = "split",
    max_hypotheses: int = MAX_HYPOTHESES,
    by_sentence: bool = True,
) -> list[str]:
    """Translate sentences, batching those of similar length together; one translation per sentence, always.

    A text of several sentences (a paragraph) is split into sentences by pysbd's German rules
    (:func:`split_sentences`), each translated on its own, and their translations joined with a space: the model
    learned from one-sentence captions, and a 17-sentence paragraph read at once came back as one English sentence.

    Each sentence is first cleaned: Unicode-normalised to NFC, byte-order marks (U+FEFF) removed, surrounding
    whitespace stripped (so a ``\\r`` left from a Windows line end changes nothing). It is read as text: a
    literal ``</s>``, ``<pad>``, ``<s>`` or ``<unk>`` is tokenised like any other characters, never taken for a
    control token. A sentence that is empty after cleaning translates to ``""`` without running the model.

    A single sentence longer than the model's limit (``model.config.max_len - 1`` sub-word ids, plus EOS) is, with
    ``too_long="split"``, cut after ``;`` (or another sentence end pysbd did not take) and, where a part alone is
    still too long, at the limit (at a word start when one lies in the second half of the window); the pieces
    are translated one by one and joined with a space, and a ``UserWarning`` names the text's index. A sentence
    within the limit is never cut.

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``).
        tokenizer: its tokenizer.
        sentences: source sentences (plain text), a list (or other iterable) of str.
        beam_size: 1 = greedy decoding, otherwise beam search with this width.
        alpha: beam search's length-penalty exponent (finite, >= 0).
        batch_size: most sentences (or pieces) decoded at once; lowered to ``max_hypotheses // beam_size``.
        device: default: the model's device.
        too_long: ``"split"`` (translate a too-long sentence in pieces, with a warning) or ``"error"``.
        max_hypotheses: most hypotheses (sentences x beam) decoded at once, which bounds the memory.
        by_sentence: split each text into sentences first (default); False reads a text within the limit whole.

    Returns:
        The translations, in the order of ``sentences`` (``""`` for a blank sentence).

    Raises:
        ValueError: ``sentences`` is a single str or holds a non-str; beam_size, batch_size or max_hypotheses
            < 1; alpha negative or not finite; too_long not ``"split"`` or ``"error"``; with ``too_long="error"``, a
            sentence longer than the model's limit (the message names its index).
    """
    if isinstance(sentences, str):
        raise ValueError("sentences must be a list of str, got a single str (pass [sentence])")
    sentences = list(sentences)
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise ValueError(f"sentences must hold str, sentences[{i}] is {type(sentence).__name__}")
    if beam_size < 1 or batch_size < 1:
        raise ValueError(f"beam_size and batch_size must be >= 1, got {beam_size} and {batch_size}")
    if max_hypotheses < 1:
        raise ValueError(f"max_hypotheses must be >= 1, got {max_hypotheses}")
    if not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha}")
    if too_long not in ("split", "error"):
        raise ValueError(f"too_long must be 'split' or 'error', got {too_long!r}")
    out, split = _translate(
        model, tokenizer, sentences, beam_size, alpha, batch_size, device, too_long, max_hypotheses, by_sentence
    )
    for i, (n_ids, n_pieces) in split.items():
        warnings.warn(
            f"sentence {i} has {n_ids} sub-word tokens in one sentence, more than the model's limit of "
            f"{model.config.max_len - 1}: translated in {n_pieces} pieces joined by spaces",
            stacklevel=3,  # the caller of translate (torch.no_grad's wrapper sits in between)
        )
    return out


def evaluate_bleu(
    model: EncoderDecoder,
    tokenizer,
    split: str = "test_2016_flickr",
    root=None,
    beam_size: int = 1,
    alpha: float = DEFAULT_ALPHA,
    device=None,
    batch_size: int = 100,
) -> BleuResult:
    """Translate a Multi30k split's German side and score it with sacreBLEU against the English side.

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``).
        tokenizer: its tokenizer.
        split: a Multi30k split (``lib.data.SPLITS``), by default the 2016 Flickr test set (1,000 pairs).
        root: folder of the Multi30k files; default ``lib.data.data_dir`` (``MULTI30K_DIR`` if set).
        beam_size: 1 = greedy decoding, otherwise beam search with this width.
        alpha: beam search's length-penalty exponent.
        device: where to decode; default: the model's device.
        batch_size: sentences decoded at once (see :func:`translate`).

    Returns:
        :class:`lib.metrics.BleuResult`: corpus BLEU in [0, 100] with sacreBLEU's signature.

    Raises:
        ValueError: unknown split (from ``lib.data.load_multi30k``); beam_size or batch_size < 1.
        FileNotFoundError: the split's files are missing and cannot be downloaded.
        ChecksumError: a file's SHA-256 differs from the expected one.
    """
    pairs = load_multi30k(split, root)
    hyps = translate(
        model,
        tokenizer,
        [de for de, _ in pairs],
        beam_size=beam_size,
        alpha=alpha,
        batch_size=batch_size,
        device=device,
    )
    return corpus_bleu(hyps, [en for _, en in pairs])


@dataclass
class TranslationAttention:
    """A translation with every attention map the model computed for it.

    Attributes:
        source: the source sentence.
        translation: the target sentence (the model's greedy output, or the one forced on it).
        source_tokens: source sub-words plus ``</s>`` (the keys of cross-attention, length seq_s).
        target_tokens: the target sub-words plus ``</s>`` (length seq_t): row t of a decoder or cross map is
            the query that *predicted* ``target_tokens[t]``.
        weights: the model's :class:`lib.interfaces.AttentionMaps` with batch size 1, e.g.
            ``weights.cross[layer][0]`` of shape ``(heads, seq_t, seq_s)``; a recurrent model with attention has
            one cross "layer" with one head.
    """

    source: str
    translation: str
    source_tokens: list[str]
    target_tokens: list[str]
    weights: AttentionMaps

    def cross_map(self, layer: int = -1, head: int | None = None) -> Tensor:
        """One cross-attention map: target tokens (rows) against source tokens (columns).

        Args:
            layer: decoder layer (default the last; a recurrent model has only layer 0).
            head: one head, or None for the mean over the heads.

        Returns:
            ``(seq_t, seq_s)`` tensor; each row sums to 1.

        Raises:
            IndexError: no such layer or head.
        """
        maps = self.weights.cross[layer][0]  # (heads, seq_t, seq_s)
        if head is None:
            return maps.mean(0)
        if not -maps.size(0) <= head < maps.size(0):
            raise IndexError(f"head {head} out of range: the model has {maps.size(0)} heads")
        return maps[head]


@torch.no_grad()
@in_eval_mode
def translation_attention(
    model: EncoderDecoder, tokenizer, source: str, translation: str | None = None
) -> TranslationAttention:
    """Translate ``source`` greedily (or force ``translation``) and return every attention map of the model.

    The one function for the attention maps of a translation, for any model the book trains: the Transformer
    (encoder, decoder and cross maps of every layer) and the recurrent model with attention (its alignment
    α_ij, as one cross map with one head).

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``) whose forward accepts
            ``return_attention=True``.
        tokenizer: its tokenizer.
        source: one source sentence.
        translation: a target sentence to score instead of the model's own greedy output.

    Returns:
        A :class:`TranslationAttention` whose token lists label the maps' axes.

    Raises:
        ValueError: the model computes no attention (the fixed-vector model attends to nothing).

    The texts are read as :func:`translate` reads them (NFC, ``</s>`` and the like as text); a source or
    translation longer than the model's limit (``model.config.max_len - 1`` sub-words) is cut there, with a
    ``UserWarning`` (one attention map cannot be split into pieces).

    Source: the alignment figures of Bahdanau et al. 2015, Fig. 3; Vaswani et al. 2017, Figures 3–5.
    """
    model.eval()
    device = next(model.parameters()).device
    plain, limit = plain_text_tokenizer(tokenizer), model.config.max_len - 1
    src_ids = _text_ids(plain, clean_text(source))
    if len(src_ids) > limit:
        warnings.warn(
            f"the source has {len(src_ids)} sub-word tokens, more than the model's limit of {limit}: "
            f"the maps show its first {limit}",
            stacklevel=3,
        )
    src_ids = src_ids[:limit] + [EOS_ID]
    src = torch.tensor([src_ids], device=device)
    if translation is None:
        tgt_ids = greedy_decode(model, src)[0]
    else:
        tgt_ids = _text_ids(plain, clean_text(translation))
        if len(tgt_ids) > limit:
            warnings.warn(
                f"the translation has {len(tgt_ids)} sub-word tokens, more than the model's limit of {limit}: "
                f"the maps show its first {limit}",
                stacklevel=3,
            )
        tgt_ids = tgt_ids[:limit]
    tgt_in = torch.tensor([[BOS_ID] + tgt_ids], device=device)
    _, weights = model(src, tgt_in, return_attention=True)
    if not weights.kinds():
        raise ValueError("this model computes no attention (a fixed-vector model): there are no maps to show")
    name = tokenizer.id_to_token
    return TranslationAttention(
        source=source,
        translation=decode(tokenizer, tgt_ids),
        source_tokens=[name(i) for i in src_ids],
        target_tokens=[name(i) for i in tgt_ids] + [name(EOS_ID)],
        weights=weights,
    )


def _parser() -> argparse.ArgumentParser:
    """The command line's arguments (help texts in ASCII: under the C locale stdout may be ASCII-only)."""
    p = argparse.ArgumentParser(
        prog="python -m lib.translate",
        description=(
            "Translate German to English with a trained run: one sentence per line of stdin (UTF-8), one "
            "translation per line of stdout (UTF-8), always as many lines out as in. A blank line gives a blank "
            "line; a line that is not valid UTF-8 gives an empty line and a message on stderr; a paragraph is "
            "translated sentence by sentence on one line; a sentence longer than the model's limit is translated in "
            "pieces joined by spaces, and a line that does not look like a German image caption is translated with "
            "a note on stderr (the model knows image captions only)."
        ),
        epilog=(
            "exit status: 0 = every line translated; 1 = some input lines were not valid UTF-8 (their output "
            "lines are empty, all other lines were written) or stdout could not be written (a full disk); 2 = bad "
            "arguments or a closed stdin/stdout (checked before anything is loaded); 130 = interrupted with Ctrl-C "
            "(every line translated before it was written); 141 = the reader of stdout stopped reading."
        ),
    )
    p.add_argument("--run", required=True, help="run folder (e.g. models/de-en or runs/NAME)")
    p.add_argument(
        "--beam",
        type=int,
        default=1,
        help=f"beam width, 1 (greedy, the default) to {MAX_BEAM}: memory grows with beam x batch, so at most "
        f"{MAX_HYPOTHESES} hypotheses are decoded at once (the batch is lowered to {MAX_HYPOTHESES} // beam)",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="length-penalty exponent for beam search (>= 0); default: the run's own, beam_alpha in its "
        f"results.json (the one its beam BLEU was measured with; stderr says so), else {DEFAULT_ALPHA}",
    )
    p.add_argument("--batch-size", type=int, default=100, help="sentences decoded at once (>= 1; default 100)")
    p.add_argument("--device", default=None, help="cpu (default), cuda, cuda:1, ...")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for torch (>= 1; default: torch's)")
    p.add_argument(
        "--bleu", metavar="SPLIT", default=None, help=f"instead of stdin, score a Multi30k split: {', '.join(SPLITS)}"
    )
    p.add_argument("--data", default=None, help="folder with the Multi30k files (default: MULTI30K_DIR or download)")
    return p


def _check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Stop with a one-line usage error (exit status 2) on a bad argument, before anything slow is loaded."""
    if not 1 <= args.beam <= MAX_BEAM:
        p.error(f"argument --beam: must be 1 to {MAX_BEAM}, got {args.beam} (memory grows with beam x batch)")
    if args.batch_size < 1:
        p.error(f"argument --batch-size: must be >= 1, got {args.batch_size}")
    if args.alpha is not None and not (math.isfinite(args.alpha) and args.alpha >= 0):
        p.error(f"argument --alpha: must be a finite number >= 0, got {args.alpha}")
    if args.threads is not None and args.threads < 1:
        p.error(f"argument --threads: must be >= 1, got {args.threads}")
    if args.bleu is not None and args.bleu not in SPLITS:
        p.error(f"argument --bleu: unknown split {args.bleu!r}, expected one of {', '.join(SPLITS)}")
    if args.device is not None:
        try:
            device = torch.device(args.device)
        except RuntimeError as err:
            p.error(f"argument --device: {err}")
        if device.type == "cuda" and not (
            torch.cuda.is_available() and (device.index or 0) < torch.cuda.device_count()
        ):
            p.error(f"argument --device: {args.device} is not available on this machine")


def _run_alpha(p: argparse.ArgumentParser, args: argparse.Namespace, run) -> float:
    """The length penalty the run recorded (``beam_alpha`` in its ``results.json``, read by ``load_run``), said on
    stderr when beam search uses it; :data:`DEFAULT_ALPHA` when it records none; a bad one is a usage error."""
    results = run.results if isinstance(run.results, dict) else {}
    if args.beam == 1 or "beam_alpha" not in results:  # greedy decoding has no length penalty
        return DEFAULT_ALPHA
    alpha = results["beam_alpha"]
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not (math.isfinite(alpha) and alpha >= 0):
        p.error(
            f"argument --run: {os.path.join(args.run, 'results.json')}: beam_alpha must be a finite number >= 0, "
            f"got {alpha!r} (fix it, or give --alpha)"
        )
    print(
        f"length penalty alpha {alpha}, as the run recorded (beam_alpha in its results.json; --alpha sets another)",
        file=sys.stderr,
    )
    return float(alpha)


def _decode_line(number: int, line: bytes) -> tuple[str, str | None]:
    """Line ``number``'s text, or ``""`` and a message when it is not valid UTF-8."""
    try:
        return line.decode("utf-8"), None
    except UnicodeDecodeError as err:
        return "", (
            f"line {number}: not valid UTF-8 (byte 0x{line[err.start]:02x} at byte {err.start + 1}): "
            "wrote an empty line"
        )


class _StdinLines:
    """Stdin's lines as they arrive: from a pipe or a terminal, whatever has come so far (a reader typing or a slow
    producer gets each translation at once); from a file, everything (its total is known, for the progress bar).

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``; a UTF-8 byte-order mark is dropped; input that starts with a UTF-16
    byte-order mark is read whole and decoded as UTF-16. ``take`` gives ``(text, message or None)`` per line.
    """

    def __init__(self, stream) -> None:
        self.stream, self.fd = stream, None
        try:
            fd = stream.fileno()
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a pipe, a terminal, a socket: lines may come slowly
                self.fd = fd
        except (OSError, ValueError, AttributeError):  # an in-memory stream (io.UnsupportedOperation is an OSError)
            pass
        self.raw = b""  # bytes read but not yet split into lines
        self.pending: list[tuple[str, str | None]] = []  # decoded lines not yet taken
        self.eof, self.count, self.started = False, 0, False
        if self.fd is None:
            self.raw, self.eof = stream.read(), True
            self._split()

    def _read(self, block: bool) -> bool:
        """Read what stdin has (blocking: wait for at least a byte); False when nothing came."""
        if self.eof or (not block and not select.select([self.fd], [], [], 0)[0]):
            return False
        data = os.read(self.fd, 1 << 16)
        self.raw += data
        self.eof = not data
        self._split()
        return True

    def _split(self) -> None:
        """Move the complete lines of ``raw`` (all of it at the end of input) into ``pending``."""
        if not self.started:
            if len(self.raw) < 3 and not self.eof:
                return  # too few bytes to tell a byte-order mark
            self.started = True
            if self.raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # e.g. Windows PowerShell's `>`
                while not self.eof:
                    self._read(block=True)  # UTF-16 is read whole (it has no byte-wise line ends)
            self.raw = self.raw.removeprefix(codecs.BOM_UTF8)
        if self.raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            if self.eof:
                try:
                    lines = _LINE_END.split(self.raw.decode("utf-16"))
                    self.pending += [(line, None) for line in (lines[:-1] if lines[-1] == "" else lines)]
                except UnicodeDecodeError as err:
                    self.pending.append(
                        ("", f"stdin starts with a UTF-16 byte-order mark but is not valid UTF-16: {err}")
                    )
                self.raw = b""
            return
        end = len(self.raw) if self.eof else self.raw.rfind(b"\n") + 1  # "\r\n" never splits: it ends with "\n"
        if end <= 0:
            return
        raw = _LINE_END_BYTES.split(self.raw[:end])
        self.raw = self.raw[end:]
        if raw[-1] == b"":  # the last line's end (or empty input)
            raw.pop()
        for line in raw:
            self.pending.append(_decode_line(len(self.pending) + self.count + 1, line))

    def take(self, most: int) -> list[tuple[str, str | None]]:
        """Up to ``most`` lines: at least one unless the input is done, and no more than have arrived."""
        while not self.pending and self._read(block=True):
            pass
        while len(self.pending) < most and self._read(block=False):
            pass
        lines, self.pending = self.pending[:most], self.pending[most:]
        self.count += len(lines)
        return lines

    @property
    def total(self) -> int | None:
        """The number of lines of the whole input, once it is known."""
        return self.count + len(self.pending) if self.eof and not self.raw else None


def main(argv: list[str] | None = None) -> int:
    """The command line: translate stdin line by line, or score a Multi30k split with ``--bleu``.

    Arguments are checked before the run is loaded; a bad one stops with a one-line usage error (exit status 2).
    Stdin is read as bytes and decoded as UTF-8 (see the module's docstring), whatever the locale, and the
    translations are written to stdout as UTF-8, one line per input line.

    Ctrl-C (SIGINT) is never lost while it runs (see :class:`_CtrlC`): once it came, the status is 130, after the
    lines finished before it were written. A process started with SIGINT ignored (a script's background job,
    ``cmd &``) keeps ignoring it, as Python and the shell's tools do.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 = every line translated; 1 = some lines were not valid UTF-8 (their output lines are
        empty, every other line was written, stderr names them) or stdout could not be written; 130 = Ctrl-C (the
        lines done before it were written, and stderr says how many); 141 = stdout's reader stopped reading.
    """
    with _CtrlC() as ctrl_c:
        try:
            return _main(argv, ctrl_c)
        except KeyboardInterrupt:  # while the run was loaded or a split scored: before any translation was written
            print("\ninterrupted: nothing was written", file=sys.stderr)
            return 130


def _main(argv: list[str] | None, ctrl_c: _CtrlC) -> int:
    """:func:`main` under ``ctrl_c``: a Ctrl-C while the lines stream is answered here, with the count written."""
    p = _parser()
    args = p.parse_args(argv)
    _check_args(p, args)
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        p.error("stdout is closed: the translations have nowhere to go (redirect it to a file: > output.en)")
    if args.bleu is None and sys.stdin is None:  # started with stdin closed (`<&-`)
        p.error("stdin is closed: give German sentences on stdin (< input.de), or score a split with --bleu")
    if args.bleu is not None:  # a missing or damaged data file stops us before the model is loaded
        try:
            load_multi30k(args.bleu, args.data)
        except (FileNotFoundError, ValueError) as err:  # lib.data.ChecksumError is a ValueError
            p.error(f"argument --bleu {args.bleu}: {err}")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    try:
        run = load_run(args.run, device=args.device or "cpu")
    except (FileNotFoundError, ValueError, KeyError) as err:  # missing files; a config it cannot read
        p.error(f"argument --run: {err}")
    alpha = args.alpha if args.alpha is not None else _run_alpha(p, args, run)
    sys.stdout.flush()
    out = sys.stdout.buffer
    if args.bleu is not None:
        bleu = evaluate_bleu(run.model, run.tokenizer, args.bleu, args.data, args.beam, alpha, None, args.batch_size)
        ctrl_c.settle()  # the score is done: a Ctrl-C from here on comes too late to change it
        try:
            _write(out, f"{bleu}\n")
        except _StdoutError as err:
            return err.status(p.prog, "the score was not written")
        return 0
    if sys.stdin.isatty():
        print("reading German sentences from stdin, one per line (end with Ctrl-D)", file=sys.stderr)
    limit = run.model.config.max_len - 1
    window = STREAM_BATCHES * max(1, min(args.batch_size, MAX_HYPOTHESES // args.beam))
    reader = _StdinLines(sys.stdin.buffer)
    bar = _Progress(reader)
    errors = 0

    def groups() -> Iterator[list[str]]:
        """The input a window at a time, as it arrives; a line that is not UTF-8 is named on stderr."""
        nonlocal errors
        while lines := reader.take(window):
            for _, message in lines:
                if message is not None:
                    errors += 1
                    bar.say(message)
            bar.grow()
            yield [text for text, _ in lines]

    done = 0
    try:
        for line in _translations(
            run.model, run.tokenizer, groups(), args.beam, alpha, args.batch_size, None, "split", MAX_HYPOTHESES
        ):
            if line.split is not None:
                bar.say(
                    f"line {line.index + 1}: a sentence of {line.split[0]} sub-word tokens, more than the model's "
                    f"limit of {limit}: translated in pieces joined by spaces"
                )
            if line.note is not None:
                bar.say(
                    f"line {line.index + 1}: looks out of the model's domain (German image captions): {line.note}; "
                    "translated anyway"
                )
            # a translation never spans lines: the line count out equals the line count in
            with ctrl_c.held_back():  # so that the count said after Ctrl-C is the count of lines written
                _write(out, " ".join(line.text.splitlines()) + "\n")  # flushed: a reader gets each line at once
                done += 1
            bar.update()
        ctrl_c.settle()  # the end of the input: a Ctrl-C that came before it (or was swallowed) is raised here
    except _StdoutError as err:
        bar.close()
        return err.status(p.prog, f"{done} lines were written")
    except KeyboardInterrupt:
        bar.close()
        total = reader.total
        of = f"{total} lines" if total is not None else f"{reader.count} lines read so far"
        print(f"\ninterrupted: {done} of {of} translated and written", file=sys.stderr)
        return 130
    bar.close()
    return 1 if errors else 0


class _Progress:
    """The progress bar on stderr (tqdm): on a terminal, once the input has :data:`PROGRESS_LINES` lines; its total
    is known from the start for a file, and at the end of the input for a pipe."""

    def __init__(self, reader: _StdinLines) -> None:
        self.reader, self.bar, self.done = reader, None, 0

    def grow(self) -> None:
        """Start the bar once the input is long enough, and give it its total once that is known."""
        total = self.reader.total
        if self.bar is None and _show_progress(total if total is not None else self.reader.count):
            self.bar = tqdm(total=total, initial=self.done, unit="line", file=sys.stderr)
        elif self.bar is not None and total is not None and self.bar.total != total:
            self.bar.total = total
            self.bar.refresh()

    def update(self) -> None:
        """One more line written."""
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)

    def say(self, message: str) -> None:
        """A message on stderr, on its own line above the bar."""
        if self.bar is not None:
            self.bar.clear()
        print(message, file=sys.stderr)

    def close(self) -> None:
        """Close the bar."""
        if self.bar is not None:
            self.bar.close()


class _StdoutError(Exception):
    """Stdout could not be written: its reader went away (a broken pipe) or its disk is full."""

    def __init__(self, err: OSError) -> None:
        super().__init__(err.strerror or str(err))
        self.broken_pipe = isinstance(err, BrokenPipeError)

    def status(self, prog: str, done: str) -> int:
        """Say so in one line (nothing for a reader that stopped reading, as ``| head`` does) and give the exit
        status: 141 (128 + SIGPIPE, what a shell tool gives) for a broken pipe, 1 otherwise. Stdout is pointed at
        the null device, so that Python's own flush at exit does not fail again with a traceback."""
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if self.broken_pipe:
            return 141
        print(f"{prog}: error: cannot write to stdout ({self}): {done}", file=sys.stderr)
        return 1


def _write(out, text: str) -> None:
    """Write ``text`` to stdout's buffer as UTF-8 and flush it; a failed write is a :class:`_StdoutError`."""
    try:
        out.write(text.encode("utf-8"))
        out.flush()
    except OSError as err:
        raise _StdoutError(err) from None


class _CtrlC:
    """Ctrl-C (SIGINT) for :func:`main`, never lost: the handler notes it and raises ``KeyboardInterrupt``, except
    while ``held`` (a line being written; the exit status settled), when it only notes it.

    A noted Ctrl-C is raised by :meth:`held_back` after its block and by :meth:`settle` at the end; so is one that
    code on its way swallowed (an atexit callback or a ``__del__`` reports such an exception and drops it). The
    handler is installed in the main thread only (signals go to it alone), and not over an ignored SIGINT; on the
    way out the previous one is put back (``signal.signal`` first runs a Ctrl-C that came in between, here).
    """

    def __init__(self) -> None:
        self.pressed, self.held, self.installed, self.previous = False, False, False, None

    def __call__(self, signum: int, frame) -> None:
        self.pressed = True
        if not self.held:
            raise KeyboardInterrupt

    def __enter__(self) -> _CtrlC:
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
            self.previous, self.installed = signal.signal(signal.SIGINT, self), True
        return self

    def __exit__(self, *exc) -> None:
        self.held = True
        if self.installed:
            signal.signal(signal.SIGINT, self.previous if self.previous is not None else signal.SIG_DFL)

    @contextlib.contextmanager
    def held_back(self) -> Iterator[None]:
        """Hold back Ctrl-C until the block is done: it raises ``KeyboardInterrupt`` right after it."""
        self.held = True
        try:
            yield
        finally:
            self.held = False
        self.check()

    def settle(self) -> None:
        """The exit status is settled: raise a Ctrl-C noted so far; one that comes later is only noted."""
        self.held = True
        self.check()

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` for a Ctrl-C noted so far."""
        if self.pressed:
            raise KeyboardInterrupt


def _show_progress(lines: int) -> bool:
    """Whether the command line shows a progress bar: on a terminal's stderr, for an input of many lines."""
    return lines >= PROGRESS_LINES and sys.stderr.isatty()


if __name__ == "__main__":
    try:
        status = main()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the status is settled: a Ctrl-C from here on is too late
    except KeyboardInterrupt:  # one that came between main putting Python's handler back and the line above
        status = 130
    # end now: Python's own shutdown takes about a second with torch loaded, and a Ctrl-C during it was reported as
    # an error in an atexit callback and lost (status 0); the output is written and flushed
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(status)
