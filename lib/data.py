"""Multi30k German–English: a checksummed loader and token-budget batching for translation.

The book's translation chapters train on Multi30k task 1: short English image descriptions and their
professional German translations (29,000 training pairs, 1,014 validation, 1,000 test).  The loader
reads the six raw ``<split>.<lang>.gz`` files from a local folder, downloads the missing ones from
the dataset's public repository, and verifies every file against the SHA-256 sums shipped below.

Where the files are looked for (first match wins): the ``root`` argument, the environment variable
``MULTI30K_DIR``, then ``platformdirs.user_cache_dir("attention-book") / "multi30k"``.

Batching groups sentence pairs of similar length so that each batch holds about ``max_tokens``
tokens including padding, the way the original Transformer was trained ("each training batch
contained a set of sentence pairs containing approximately 25000 source tokens and 25000 target
tokens", Vaswani et al. 2017, §5.1).

Source: Elliott, Frank, Sima'an, Specia (2016), "Multi30K: Multilingual English-German Image
Descriptions", Proceedings of the 5th Workshop on Vision and Language, 70–74.  The data are provided by
their authors for non-commercial research and educational use.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import random
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import torch
from torch import Tensor

from ._checks import check_int as _check_int
from .special_tokens import PAD_ID

__all__ = [
    "SPLITS",
    "LANGUAGES",
    "BASE_URL",
    "SHA256",
    "ChecksumError",
    "data_dir",
    "load_multi30k",
    "encode_pairs",
    "token_batches",
    "Batch",
    "collate",
    "pad_batch",
    "make_batches",
]

SPLITS = ("train", "val", "test_2016_flickr")
LANGUAGES = ("de", "en")
BASE_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
SHA256 = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
}

ENV_VAR = "MULTI30K_DIR"
DOWNLOAD_TIMEOUT_S = 30.0


class ChecksumError(ValueError):
    """A Multi30k file is present but its SHA-256 differs from the one shipped in ``SHA256``."""


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def data_dir(root: str | os.PathLike | None = None) -> Path:
    """The folder that holds (or will hold) the six Multi30k ``.gz`` files.

    Args:
        root: a folder given by the caller; wins over everything else.

    Returns:
        ``Path(root)`` if given, else ``$MULTI30K_DIR`` if set and non-empty, else
        ``platformdirs.user_cache_dir("attention-book") / "multi30k"``.  The folder need not exist.
    """
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("attention-book")) / "multi30k"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _how_to_provide(directory: Path) -> str:
    return (
        f"To use a local copy, put the six files {', '.join(sorted(SHA256))} in one folder and pass "
        f"root=<folder> or set the environment variable {ENV_VAR}=<folder> "
        f"(they can be fetched from {BASE_URL}/<name>); or run again with network access and "
        f"download=True so they are saved to {directory}."
    )


def _missing(name: str, directory: Path, reason: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"Multi30k file {name!r} is missing from {directory} and {reason} "
        f"(URL: {BASE_URL}/{name}). {_how_to_provide(directory)}"
    )


def _download(name: str, directory: Path) -> None:
    """Fetch ``BASE_URL/name`` into ``directory/name`` atomically, verifying its checksum first."""
    url = f"{BASE_URL}/{name}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=directory)
    except OSError as err:
        raise _missing(name, directory, f"the folder is not writable ({err})") from err
    tmp = Path(tmp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
                shutil.copyfileobj(response, out)
        except OSError as err:  # urllib.error.URLError, HTTPError and socket timeouts are all OSErrors
            raise _missing(name, directory, f"downloading it failed ({err})") from err
        actual = _sha256(tmp)
        if actual != SHA256[name]:
            raise ChecksumError(
                f"Downloaded Multi30k file {name!r} from {url} has SHA-256 {actual}, expected {SHA256[name]}; "
                f"nothing was saved. The server may have changed the file. {_how_to_provide(directory)}"
            )
        os.replace(tmp, directory / name)
    finally:
        tmp.unlink(missing_ok=True)


def _verify(path: Path) -> None:
    actual = _sha256(path)
    expected = SHA256[path.name]
    if actual != expected:
        raise ChecksumError(
            f"Multi30k file {str(path)!r} has SHA-256 {actual}, expected {expected}. The file is corrupt "
            f"or a different version: delete it and run again with download=True to re-download it, or "
            f"replace it with a good copy from {BASE_URL}/{path.name}."
        )


def _read_lines(path: Path) -> list[str]:
    with gzip.open(path, "rb") as f:
        text = f.read().decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":  # the file ends with a newline
        lines.pop()
    return [line.strip() for line in lines]


@functools.lru_cache(maxsize=len(SPLITS))
def _read_pairs(de: Path, de_stat: tuple[int, int], en: Path, en_stat: tuple[int, int]) -> tuple[tuple[str, str], ...]:
    # The stat tuples (size, mtime_ns) are part of the cache key, so a replaced file is read again.
    _verify(de)
    _verify(en)
    de_lines, en_lines = _read_lines(de), _read_lines(en)
    if len(de_lines) != len(en_lines):
        raise ValueError(
            f"Multi30k files {de.name} and {en.name} in {de.parent} have different line counts "
            f"({len(de_lines)} vs {len(en_lines)}); line i of one must translate line i of the other."
        )
    return tuple(zip(de_lines, en_lines))


def load_multi30k(split: str, root: str | os.PathLike | None = None, download: bool = True) -> list[tuple[str, str]]:
    """The (German, English) sentence pairs of one Multi30k split, checksummed, downloading if needed.

    Args:
        split: one of ``SPLITS``: ``"train"`` (29,000 pairs), ``"val"`` (1,014), ``"test_2016_flickr"``
            (1,000).
        root: folder holding the ``<split>.<lang>.gz`` files; default :func:`data_dir`.
        download: if a file is missing, fetch it from ``BASE_URL`` (timeout 30 s), verify it and save it
            into the folder.

    Returns:
        list of ``(german, english)`` pairs; line i of ``<split>.de.gz`` with line i of ``<split>.en.gz``,
        whitespace stripped at both ends.  Verified reads are cached in-process (keyed on path, size and
        modification time), so loading a split again is cheap; the returned list is a fresh copy.

    Raises:
        ValueError: ``split`` is not in ``SPLITS``, or the German and English files differ in length.
        ChecksumError: a file's SHA-256 differs from ``SHA256`` (delete it and re-download).
        FileNotFoundError: a file is missing and ``download`` is False, the download failed (no network)
            or the folder is not writable; the message names the file, the folder, the URL and how to
            provide a local copy (``root=`` or ``MULTI30K_DIR``).

    Source: Elliott et al. (2016), "Multi30K: Multilingual English-German Image Descriptions".
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: split must be one of {SPLITS}")
    directory = data_dir(root)
    paths = []
    for lang in LANGUAGES:
        name = f"{split}.{lang}.gz"
        path = directory / name
        if not path.is_file():
            if not download:
                raise _missing(name, directory, "download=False")
            _download(name, directory)
        paths.append(path.resolve())
    stats = [(p.stat().st_size, p.stat().st_mtime_ns) for p in paths]
    return list(_read_pairs(paths[0], stats[0], paths[1], stats[1]))


# --------------------------------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------------------------------

Example = tuple[Sequence[int], Sequence[int]]  # (source ids, target ids), no special tokens


def _check_examples(examples: Sequence[Example]) -> list[tuple[int, int]]:
    """The ``(len(source), len(target))`` of each example; each must be a pair of id sequences."""
    if isinstance(examples, (str, bytes)) or not (hasattr(examples, "__len__") and hasattr(examples, "__getitem__")):
        raise TypeError(f"examples must be a list of (source_ids, target_ids) pairs, got {type(examples).__name__}")
    lengths = []
    for i, example in enumerate(examples):
        try:
            src, tgt = example
            if isinstance(src, (str, bytes)) or isinstance(tgt, (str, bytes)):
                raise TypeError("token ids, not text")
            lengths.append((len(src), len(tgt)))
        except (TypeError, ValueError):
            raise TypeError(
                f"examples must hold (source_ids, target_ids) pairs of id lists, examples[{i}] is {example!r:.60}"
            ) from None
    return lengths


def _as_row(row: object, i: int) -> Tensor:
    """One row of :func:`pad_batch` as a 1-D long tensor; floats, bools and nested lists are refused."""
    if isinstance(row, (str, bytes)):
        raise TypeError(f"rows must hold sequences of int ids, rows[{i}] is a {type(row).__name__}")
    try:
        t = row.detach().cpu() if isinstance(row, Tensor) else torch.as_tensor(list(row))
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"rows must hold sequences of int ids, rows[{i}] is {row!r:.60} ({err})") from None
    if t.numel() == 0:
        return torch.zeros(0, dtype=torch.long)
    if t.dim() != 1:
        raise TypeError(f"rows must hold flat sequences of int ids, rows[{i}] has shape {tuple(t.shape)}")
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"rows must hold int ids, rows[{i}] holds {t.dtype} values: {row!r:.60}")
    return t.long()


def encode_pairs(
    pairs: Sequence[tuple[str, str]], tokenizer, max_len: int | None = None
) -> list[tuple[list[int], list[int]]]:
    """Token ids of each (source, target) sentence pair, without special tokens.

    Args:
        pairs: ``(source, target)`` strings, e.g. from :func:`load_multi30k` (German → English).
        tokenizer: a ``tokenizers.Tokenizer`` (see ``lib.bpe``); its ``encode_batch`` is used.
        max_len: if given, drop pairs whose source or target has more than ``max_len`` tokens.

    Returns:
        list of ``(source_ids, target_ids)``, in the order of ``pairs`` (minus any dropped).

    Raises:
        TypeError: ``max_len`` is not an int or None; ``pairs`` does not hold ``(str, str)`` pairs.
        ValueError: ``max_len`` is given and smaller than 1.
    """
    if max_len is not None and _check_int(max_len, "max_len") < 1:
        raise ValueError(f"max_len must be a positive int or None, got {max_len!r}")
    if isinstance(pairs, (str, bytes)) or not (hasattr(pairs, "__len__") and hasattr(pairs, "__iter__")):
        raise TypeError(f"pairs must be a list of (source, target) strings, got {type(pairs).__name__}")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise TypeError(f"pairs must hold (source, target) strings, pairs[{i}] is {pair!r:.60}")
    if len(pairs) == 0:
        return []
    sources = tokenizer.encode_batch([p[0] for p in pairs], add_special_tokens=False)
    targets = tokenizer.encode_batch([p[1] for p in pairs], add_special_tokens=False)
    examples = [(s.ids, t.ids) for s, t in zip(sources, targets)]
    if max_len is not None:
        examples = [(s, t) for s, t in examples if len(s) <= max_len and len(t) <= max_len]
    return examples


def token_batches(examples: Sequence[Example], max_tokens: int, shuffle: bool = True, seed: int = 0) -> list[list[int]]:
    """Group example indices into batches of similar length holding at most ``max_tokens`` tokens each.

    Examples are sorted by ``max(len(src), len(tgt))`` (then target, then source length) and packed
    greedily, so a batch costs ``len(batch) * (longest side in the batch + 2)`` tokens including padding
    and BOS/EOS, and that cost is ≤ ``max_tokens``; an example longer than that gets a batch of its own.

    Args:
        examples: ``(source_ids, target_ids)`` pairs, e.g. from :func:`encode_pairs`.
        max_tokens: token budget per batch (padded positions included).
        shuffle: if True, add a seeded random jitter in ``[0, 2)`` to each length before sorting (so the
            batches' make-up changes with the seed, padding grows by at most 2 per row) and shuffle the
            order of the batches.  If False, batches come shortest first and are the same every call.
        seed: seed of ``random.Random``; pass the epoch number to get a new order each epoch.

    Returns:
        list of batches, each a list of indices into ``examples``; every index appears exactly once.

    Raises:
        TypeError: ``max_tokens`` is not an int (a float, NaN included, would make the budget meaningless);
            ``examples`` does not hold ``(source_ids, target_ids)`` pairs.
        ValueError: ``max_tokens`` < 1.

    Source: batching by approximate length, Vaswani et al. (2017), §5.1.
    """
    _check_int(max_tokens, "max_tokens", minimum=1)
    lengths = _check_examples(examples)
    rng = random.Random(seed)
    jitter = [rng.uniform(0.0, 2.0) for _ in lengths] if shuffle else [0.0] * len(lengths)

    def key(i: int) -> tuple[float, int, int]:
        src_len, tgt_len = lengths[i]
        return (max(src_len, tgt_len) + jitter[i], tgt_len, src_len)

    order = sorted(range(len(examples)), key=key)

    batches: list[list[int]] = []
    batch: list[int] = []
    longest = 0
    for i in order:
        n = max(lengths[i])
        new_longest = max(longest, n)
        if batch and (len(batch) + 1) * (new_longest + 2) > max_tokens:
            batches.append(batch)
            batch, new_longest = [], n
        batch.append(i)
        longest = new_longest
    if batch:
        batches.append(batch)
    if shuffle:
        rng.shuffle(batches)
    return batches


@dataclass
class Batch:
    """One padded batch for a teacher-forced encoder–decoder.

    Attributes:
        src: ``(batch, src_len)`` long, source ids + EOS, right-padded with ``pad_id``.
        tgt_in: ``(batch, tgt_len)`` long, BOS + target ids, the decoder's input.
        tgt_out: ``(batch, tgt_len)`` long, target ids + EOS, what the decoder must predict
            (``tgt_out[:, t]`` is the next token after ``tgt_in[:, t]``).
        pad_id: the padding id used in all three tensors.
    """

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    pad_id: int = 0

    @property
    def num_tokens(self) -> int:
        """Number of non-pad target tokens (the ones the loss is averaged over)."""
        return int((self.tgt_out != self.pad_id).sum())

    def __len__(self) -> int:
        return self.src.shape[0]

    def to(self, device: torch.device | str) -> Batch:
        """A new Batch with the three tensors moved to ``device``.

        Args:
            device: the target device, e.g. ``"cuda"`` or ``torch.device("cpu")``.

        Returns:
            A new :class:`Batch` with ``src``, ``tgt_in`` and ``tgt_out`` on ``device`` (same shapes, dtype
            long) and the same ``pad_id``; this batch is left unchanged.
        """
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device), self.pad_id)


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int = PAD_ID, width: int | None = None) -> Tensor:
    """Right-pad token-id lists into one tensor: the book's one padding helper.

    Args:
        rows: token-id sequences (lists, tuples or 1-D tensors), at least one.
        pad_id: the id written after each row's last token (default ``<pad>`` = 0).
        width: the padded length; default the longest row.

    Returns:
        ``(len(rows), width)`` long tensor; row i holds ``rows[i]`` then ``pad_id``.

    Raises:
        TypeError: ``rows`` is not a sequence of int-id sequences (floats, bools, strings and nested lists are
            refused); ``pad_id`` or ``width`` is not an int.
        ValueError: no rows, or a row longer than ``width``.
    """
    if isinstance(rows, (str, bytes)) or not (hasattr(rows, "__len__") and hasattr(rows, "__iter__")):
        raise TypeError(f"rows must be a list of token-id sequences, got {type(rows).__name__}")
    pad_id = _check_int(pad_id, "pad_id")
    if len(rows) == 0:
        raise ValueError("pad_batch needs at least one row in rows, got none")
    tensors = [_as_row(r, i) for i, r in enumerate(rows)]
    longest = max(len(t) for t in tensors)
    width = longest if width is None else _check_int(width, "width")
    if longest > width:
        raise ValueError(f"a row of {longest} tokens does not fit width={width}")
    out = torch.full((len(tensors), width), pad_id, dtype=torch.long)
    for i, t in enumerate(tensors):
        out[i, : len(t)] = t
    return out


def collate(examples: Sequence[Example], pad_id: int, bos_id: int, eos_id: int) -> Batch:
    """Pad a list of (source, target) id lists into one :class:`Batch`.

    Args:
        examples: ``(source_ids, target_ids)`` pairs without special tokens.
        pad_id, bos_id, eos_id: ids of the padding, begin- and end-of-sentence tokens
            (``lib.bpe.PAD_ID``, ``BOS_ID``, ``EOS_ID``).

    Returns:
        :class:`Batch` with ``src = ids + [eos]``, ``tgt_in = [bos] + ids``, ``tgt_out = ids + [eos]``,
        each right-padded with ``pad_id`` to the longest row: shapes ``(batch, max_src + 1)`` and
        ``(batch, max_tgt + 1)``.

    Raises:
        TypeError: ``examples`` does not hold pairs of int-id sequences; a special id is not an int.
        ValueError: ``examples`` is empty.
    """
    _check_examples(examples)
    if len(examples) == 0:
        raise ValueError("examples must hold at least one (source_ids, target_ids) pair, got none")
    for value, name in ((pad_id, "pad_id"), (bos_id, "bos_id"), (eos_id, "eos_id")):
        _check_int(value, name)
    src = [list(s) + [eos_id] for s, _ in examples]
    tgt_in = [[bos_id] + list(t) for _, t in examples]
    tgt_out = [list(t) + [eos_id] for _, t in examples]
    return Batch(pad_batch(src, pad_id), pad_batch(tgt_in, pad_id), pad_batch(tgt_out, pad_id), pad_id)


def make_batches(
    examples: Sequence[Example],
    max_tokens: int,
    pad_id: int,
    bos_id: int,
    eos_id: int,
    shuffle: bool = True,
    seed: int = 0,
) -> list[Batch]:
    """:func:`token_batches` then :func:`collate`: padded batches of about ``max_tokens`` tokens each.

    Args:
        examples: ``(source_ids, target_ids)`` pairs, e.g. from :func:`encode_pairs`.
        max_tokens: token budget per batch, padding and BOS/EOS included.
        pad_id, bos_id, eos_id: special token ids (``lib.bpe.PAD_ID``, ``BOS_ID``, ``EOS_ID``).
        shuffle: jitter lengths and shuffle the batch order (see :func:`token_batches`).
        seed: seed for the shuffle; pass the epoch number for a new order each epoch.

    Returns:
        list of :class:`Batch` covering every example exactly once.

    Raises:
        TypeError: ``max_tokens`` is not an int; ``examples`` does not hold pairs of int-id sequences.
        ValueError: ``max_tokens`` < 1.
    """
    return [
        collate([examples[i] for i in batch], pad_id, bos_id, eos_id)
        for batch in token_batches(examples, max_tokens, shuffle=shuffle, seed=seed)
    ]
