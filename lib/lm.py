"""Data for the book's language models: BERT's sentence pairs and GPT's sequences, batched for ``lib.training.train``.

The seq2seq models train on (source, target) pairs; BERT and GPT see one token sequence at a time and differ
only in their loss. Both train with the book's one loop, ``lib.training.train``: this module makes the
batches of each epoch (:func:`sentence_batches`), GPT's ``<s> … </s>`` sequences (:func:`gpt_sequences`),
BERT's padded pairs (:func:`collate_pairs`) and the unigram counts of the baselines (:func:`unigram_counts`).

Determinism: the batch order of epoch e comes from ``random.Random(seed + e)``, so with a step budget a run
gives the same numbers on every machine of the same kind.

Source: Devlin et al. (2019), §3.1 and Appendix A.2; Radford et al. (2018), §3.1 and §4.1.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ._checks import check_int as _check_int
from .data import pad_batch
from .special_tokens import BOS_ID, EOS_ID, PAD_ID

__all__ = ["sentence_batches", "gpt_sequences", "collate_pairs", "unigram_counts"]


def sentence_batches(items: Sequence[Any], batch_size: int, seed: int = 0) -> Callable[[int], list[list[Any]]]:
    """The batches of each epoch for ``lib.training.train``: a new shuffle of ``items`` every epoch.

    Args:
        items: training examples (token-id lists, or ``(ids, segments)`` pairs, …).
        batch_size: examples per batch; the last, incomplete batch of an epoch is dropped.
        seed: epoch e shuffles with ``random.Random(seed + e)``.

    Returns:
        ``batches(epoch) -> list of batches``, each a list of ``batch_size`` items.

    Raises:
        ValueError: batch_size < 1, or fewer items than one batch.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if len(items) < batch_size:
        raise ValueError(f"need at least batch_size={batch_size} items, got {len(items)}")

    def batches(epoch: int) -> list[list[Any]]:
        order = list(range(len(items)))
        random.Random(seed + epoch).shuffle(order)
        return [
            [items[j] for j in order[i : i + batch_size]] for i in range(0, len(order) - batch_size + 1, batch_size)
        ]

    return batches


def gpt_sequences(sentences: Sequence[Sequence[int]], max_len: int) -> list[list[int]]:
    """``<s> u₁ … u_m </s>`` for each tokenised sentence, cut to ``max_len`` tokens (longer ones lose their end).

    Args:
        sentences: token-id lists without specials.
        max_len: most tokens per sequence, BOS and EOS included (GPT's context, ``GPTConfig.max_len``).

    Returns:
        One list of ids per sentence, starting with BOS; ending with EOS unless it was cut.

    Raises:
        TypeError: max_len is not an int.
        ValueError: max_len < 2.
    """
    if _check_int(max_len, "max_len") < 2:
        raise ValueError(f"max_len must be at least 2, got {max_len}")
    return [([BOS_ID, *s, EOS_ID])[:max_len] for s in sentences]


def unigram_counts(sequences: Sequence[Sequence[int]], vocab_size: int) -> Tensor:
    """How often each id occurs in ``sequences`` (a unigram model's counts).

    Args:
        sequences: token-id lists, every id in ``[0, vocab_size)``.
        vocab_size: number of ids counted.

    Returns:
        ``(vocab_size,)`` float64 tensor of counts.

    Raises:
        TypeError: vocab_size is not an int.
        ValueError: vocab_size < 1, or a sequence holds an id outside ``[0, vocab_size)``.
    """
    if _check_int(vocab_size, "vocab_size") < 1:
        raise ValueError(f"vocab_size must be at least 1, got {vocab_size}")
    counts = torch.zeros(vocab_size, dtype=torch.float64)
    for i, s in enumerate(sequences):
        ids = torch.as_tensor(list(s), dtype=torch.long)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
            raise ValueError(f"sequences must hold ids in [0, {vocab_size}), sequences[{i}] holds {ids.tolist()[:8]}")
        counts += torch.bincount(ids, minlength=vocab_size).double()
    return counts


def collate_pairs(rows: Sequence[tuple[list[int], list[int]]], pad_id: int = PAD_ID) -> tuple[Tensor, Tensor]:
    """Right-pad BERT's ``(ids, segment_ids)`` rows into two batch tensors.

    Args:
        rows: ``(ids, segment_ids)`` pairs of equal-length lists, e.g. from ``lib.bert.pack_pair``.
        pad_id: the padding id of ``ids``; segment ids are padded with 0.

    Returns:
        ``(ids, segment_ids)``, two ``(batch, seq)`` LongTensors, seq = the longest row.

    Raises:
        TypeError: a row is not an ``(ids, segment_ids)`` pair.
        ValueError: ``rows`` is empty, or a row's ids and segment ids differ in length.
    """
    if not rows:
        raise ValueError("collate_pairs needs at least one row in rows")
    for i, row in enumerate(rows):
        if not (isinstance(row, (tuple, list)) and len(row) == 2):
            raise TypeError(f"rows must hold (ids, segment_ids) pairs, rows[{i}] is {row!r:.60}")
        if len(row[0]) != len(row[1]):
            raise ValueError(
                f"rows[{i}] has {len(row[0])} ids but {len(row[1])} segment ids: they must have equal length"
            )
    return pad_batch([ids for ids, _ in rows], pad_id), pad_batch([seg for _, seg in rows], 0)
