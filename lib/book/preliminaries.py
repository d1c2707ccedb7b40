"""The plumbing of the chapter "Preliminaries": what its pages run but its reader need not read.

- :func:`subword_statistics`: how many sub-words the book's BPE tokenizer makes of a set of sentences (§6).
- :func:`gru_direction_cells`: the two directions of a bidirectional ``nn.GRU`` as two ``nn.GRUCell`` (§8).
"""

from __future__ import annotations

import string
from collections import Counter
from dataclasses import dataclass

import numpy as np
from torch import nn

from lib.bpe import encode, tokens

__all__ = ["SubwordStats", "subword_statistics", "gru_direction_cells"]


@dataclass(frozen=True)
class SubwordStats:
    """Sub-words against words over a set of sentences (see :func:`subword_statistics`).

    Attributes:
        pieces_per_sentence: mean number of token ids per sentence (``encode``, no special tokens).
        words_per_sentence: mean number of space-separated words per sentence.
        split_fraction: the share of words (punctuation stripped) that become two or more pieces.
        words: the number of words counted (punctuation stripped, empty ones left out).
        pieces_per_word: the share of words that become 1, 2, 3 and 4-or-more pieces (sums to 1).
    """

    pieces_per_sentence: float
    words_per_sentence: float
    split_fraction: float
    words: int
    pieces_per_word: tuple[float, float, float, float]


def subword_statistics(tokenizer, sentences: list[str]) -> SubwordStats:
    """How much longer sentences get in sub-words than in words, for one language's sentences.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` such as ``lib.bpe.multi30k_tokenizer()``.
        sentences: plain-text sentences; a word is a space-separated run with the punctuation around it stripped.

    Returns:
        :class:`SubwordStats`: means per sentence, the share of words split into several pieces and the
        distribution of pieces per word (1, 2, 3, 4 or more).

    Raises:
        ValueError: ``sentences`` is empty or holds no word.
    """
    if not sentences:
        raise ValueError("sentences must hold at least one sentence")
    words = [w for w in (w.strip(string.punctuation) for s in sentences for w in s.split()) if w]
    if not words:
        raise ValueError("sentences hold no word")
    per_word = [len(tokens(tokenizer, w)) for w in words]
    counts = Counter(min(n, 4) for n in per_word)
    return SubwordStats(
        pieces_per_sentence=float(np.mean([len(encode(tokenizer, s)) for s in sentences])),
        words_per_sentence=float(np.mean([len(s.split()) for s in sentences])),
        split_fraction=float(np.mean([n > 1 for n in per_word])),
        words=len(words),
        pieces_per_word=tuple(counts[n] / len(per_word) for n in (1, 2, 3, 4)),
    )


def gru_direction_cells(gru: nn.GRU) -> tuple[nn.GRUCell, nn.GRUCell]:
    """Two ``nn.GRUCell`` holding copies of the forward and backward weights of a bidirectional ``nn.GRU``.

    Run the first over x_1 … x_m and the second over x_m … x_1 to reproduce the GRU's layer 0 step by step.

    Args:
        gru: a one-layer ``nn.GRU(..., bidirectional=True)`` with biases.

    Returns:
        ``(forward_cell, backward_cell)``, each ``GRUCell(input_size, hidden_size)``.

    Raises:
        ValueError: ``gru`` is not a one-layer bidirectional GRU with biases.
    """
    if not (gru.bidirectional and gru.num_layers == 1 and gru.bias):
        raise ValueError("gru must be a one-layer nn.GRU(..., bidirectional=True) with biases")
    cells = []
    for suffix in ("l0", "l0_reverse"):
        cell = nn.GRUCell(gru.input_size, gru.hidden_size)
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).data.copy_(getattr(gru, f"{name}_{suffix}").data)
        cells.append(cell)
    return cells[0], cells[1]
