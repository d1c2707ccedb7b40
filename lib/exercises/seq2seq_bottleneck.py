"""Checkers of the chapter "The seq2seq bottleneck" (registered in :data:`lib.exercises.EXERCISES` on import).

The expected values come from :meth:`lib.seq2seq.Seq2Seq.summary` (the fixed vector c read from padded
encoder states), from the path-length formulas of the chapter (the encoder–decoder chain of the blog post
"Everything is a mapping" (一切皆是映射) and the lecture notes' equation with c at every step), and from
``math.log2`` (the information in a random sequence).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..seq2seq import Seq2Seq
from .core import as_array, as_number, call_answer, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "seq2seq_bottleneck"


# --------------------------------------------------------------------------------------------
# bottleneck_summary: read c = [→h_last; ←h_1] from right-padded encoder states
# --------------------------------------------------------------------------------------------


def _padded_states(lengths: list[int], width: int, d_hidden: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random encoder states ``(batch, width, d_hidden)`` that are zero at padded positions, as lib's encoder gives."""
    gen = torch.Generator().manual_seed(seed)
    mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]  # (batch, width), True = real token
    memory = torch.randn(len(lengths), width, d_hidden, generator=gen, dtype=torch.float64) * mask[..., None]
    return memory, mask


def _summary_hint(got: np.ndarray, memory: torch.Tensor, mask: torch.Tensor) -> str:
    """Name the mistake when ``got`` matches a typical wrong reading of the states."""
    half = memory.size(-1) // 2
    rows = torch.arange(memory.size(0))
    last = mask.sum(-1) - 1
    m = memory.numpy()
    fwd_got, bwd_got = got[:, :half], got[:, half:]
    right_fwd, right_bwd = m[rows, last, :half], m[:, 0, half:]
    if np.allclose(fwd_got, right_bwd) and np.allclose(bwd_got, right_fwd):
        return (
            " You swapped the halves: c = [→h_last; ←h_1], the forward direction's features (the first "
            "d_hidden/2) first."
        )
    padded_rows = [b for b in range(len(last)) if last[b] < memory.size(1) - 1]
    if padded_rows and np.allclose(fwd_got[padded_rows], 0.0) and not np.allclose(right_fwd[padded_rows], 0.0):
        return (
            " The forward half of every padded sentence is all zeros: you read a padding position (the last "
            "column, or index L instead of L - 1). A sentence of L tokens has its last real token at index "
            "L - 1, i.e. mask.sum(-1) - 1, and its last column is padding when it is shorter than the batch."
        )
    if np.allclose(fwd_got, m[:, 0, :half]):
        return (
            " Your forward half is →h_1, the forward state at the first token: it has read one token. The "
            "forward direction's summary is its state at the last real token."
        )
    if np.allclose(bwd_got, m[rows, last, half:]) or np.allclose(bwd_got, m[:, -1, half:]):
        return (
            " Your backward half is taken at the end of the sentence; the backward direction runs from the "
            "last token to the first, so its final state ←h_1 sits at position 0."
        )
    if got.shape == (memory.size(0), memory.size(-1)) and np.allclose(
        got, m.sum(1) / mask.sum(-1, keepdim=True).numpy()
    ):
        return " That is the mean over positions; the fixed vector is [→h_last; ←h_1], two states, not an average."
    return ""


@exercise(
    "bottleneck_summary",
    chapter=_CHAPTER,
    summary="summary(memory, mask): the fixed vector [→h_last; ←h_1] of each right-padded sentence, (batch, d)",
)
def _check_summary(answer: Any) -> str | None:
    """``answer(memory, mask)`` must equal :meth:`Seq2Seq.summary` on padded batches."""
    require_callable(answer, "summary(memory, mask)")
    # the first case has no full-length row, so reading a padded position gives zeros instead of an IndexError
    for lengths, width, d_hidden, seed in [([4, 2, 1], 6, 8, 0), ([5, 3, 5, 1], 5, 6, 1), ([1], 1, 4, 2)]:
        memory, mask = _padded_states(lengths, width, d_hidden, seed)
        expected = Seq2Seq.summary(memory, mask).numpy()
        where = f"for sentences of lengths {lengths} padded to {width} tokens, d_hidden = {d_hidden}"
        got = as_array(call_answer(answer, memory.clone(), mask.clone()), f"summary(memory, mask) {where}")
        if got.shape != expected.shape:
            raise AssertionError(
                f"{where} your result has shape {got.shape}; expected (batch, d_hidden) = "
                f"{expected.shape}: one vector of d_hidden numbers per sentence, whatever its length"
            )
        if not np.allclose(got, expected, atol=1e-9):
            bad = int(np.argmax(np.abs(got - expected).max(axis=1)))
            raise AssertionError(
                f"{where} your vector for sentence {bad} (length {lengths[bad]}) is {fmt(got[bad])}; expected "
                f"{fmt(expected[bad])}.{_summary_hint(got, memory, mask)}"
            )
    return (
        "c = [→h_last; ←h_1] has d_hidden numbers for a sentence of 1 token and of 100: that fixed size is "
        "the bottleneck. Seq2Seq.summary reads it this way, and the book's tests check that it equals the "
        "final states the GRU returns."
    )


# --------------------------------------------------------------------------------------------
# bottleneck_path_length: sequential steps between source word j and target word i
# --------------------------------------------------------------------------------------------


def _path_length(m: int, j: int, i: int, every_step: bool) -> int:
    encoder = m - j + 1  # E reads x_j at step j, then steps j + 1 … m carry it to h_m = c
    return encoder + (1 if every_step else i)


_PATH_MISTAKES = [
    (
        lambda m, j, i, e: m - j + (1 if e else i),
        "One step short: E is applied to x_j itself at step j (h_j = E(x_j, h_{j-1})), then at steps j + 1, …, m: "
        "that is m - j + 1 applications.",
    ),
    (
        lambda m, j, i, e: m - j + 1 + i,
        "With c given to every decoder step (the lecture notes: y_i = D(C, y_1 … y_{i-1})), y_i reads c directly: one "
        "application of D, whatever i is.",
    ),
    (
        lambda m, j, i, e: m - j + 2,
        "Without c at every step (the 'Everything is a mapping' post's chain c → 狗 → 追了 → 猫), "
        "c reaches y_i only through the decoder "
        "states s_1 … s_i: i applications of D.",
    ),
    (lambda m, j, i, e: m - j + 1, "You counted the encoder's steps only; the decoder's steps are on the path too."),
    (
        lambda m, j, i, e: j + (1 if e else i),
        "That is the path when the source is read backwards (Sutskever et al.'s trick); here x_1 is read first, "
        "so it is the farthest from c.",
    ),
]


@exercise(
    "bottleneck_path_length",
    chapter=_CHAPTER,
    summary="path_length(m, j, i, every_step): recurrent steps from source word x_j to target word y_i",
)
def _check_path_length(answer: Any) -> str | None:
    """``answer(m, j, i, every_step)`` must count the applications of E and D between x_j and y_i (1-based)."""
    require_callable(answer, "path_length(m, j, i, every_step)")
    cases = [
        (m, j, i, e)
        for e in (False, True)
        for m, j, i in [(5, 1, 1), (5, 5, 3), (5, 2, 1), (1, 1, 1), (30, 1, 30), (30, 30, 1), (12, 7, 4)]
    ]
    got = {
        case: as_number(call_answer(answer, *case), "path_length(m={}, j={}, i={}, every_step={})".format(*case))
        for case in cases
    }
    wrong = [case for case in cases if got[case] != _path_length(*case)]
    if not wrong:
        return (
            "the chain of the chapter's §2: 'The' → '狗' is 6 steps, 'cat' → '猫' is 4. "
            "With attention (next chapter) "
            "every pair is 2 steps apart: x_j → h_j → s_i."
        )
    hint = next((f" {text}" for mistake, text in _PATH_MISTAKES if all(got[c] == mistake(*c) for c in cases)), "")
    case = wrong[0]
    raise AssertionError(
        "path_length(m={}, j={}, i={}, every_step={}) ".format(*case)
        + f"returned {got[case]:g}; expected {_path_length(*case)}.{hint}"
    )


# --------------------------------------------------------------------------------------------
# bottleneck_capacity: how many random symbols fit in a given number of bits
# --------------------------------------------------------------------------------------------


def _max_symbols(bits: float, num_symbols: int) -> int:
    return math.floor(bits / math.log2(num_symbols) + 1e-9)


@exercise(
    "bottleneck_capacity",
    chapter=_CHAPTER,
    summary="max_symbols(bits, num_symbols): the longest random sequence over num_symbols symbols that "
    "`bits` bits can store",
)
def _check_capacity(answer: Any) -> str | None:
    """``answer(bits, num_symbols)`` must return floor(bits / log2(num_symbols))."""
    require_callable(answer, "max_symbols(bits, num_symbols)")
    # 20 bits: about what the chapter's fixed vector delivers; 4096 bits: 128 float32 numbers;
    # 8000: Multi30k's vocabulary
    cases = [(20, 20), (4096, 20), (64, 26), (1000, 8000), (100, 2), (3, 20), (1, 2)]
    for bits, v in cases:
        expected = _max_symbols(bits, v)
        call = f"max_symbols({bits}, {v})"
        got = as_number(call_answer(answer, bits, v), call)
        if got == expected:
            continue
        exact = bits / math.log2(v)
        hint = ""
        if got != int(got):
            hint = (
                f" Your answer is not a whole number: {exact:.4g} symbols' worth of bits stores only "
                f"{expected} whole symbols (round down)."
            )
        elif got == math.ceil(exact) or got == round(exact):
            hint = (
                f" {bits} bits hold {exact:.4g} symbols' worth of information; a symbol that does not fully "
                f"fit is not stored, so round down."
            )
        elif got == math.floor(bits / math.log(v) + 1e-9):
            hint = " You used the natural logarithm: information in bits needs log2."
        elif got == math.floor(bits / math.log10(v) + 1e-9):
            hint = " You used log10: information in bits needs log2."
        elif got == math.floor(bits / v):
            hint = (
                f" One symbol out of {v} carries log2({v}) = {math.log2(v):.4g} bits, not {v}: n symbols need "
                f"n·log2({v}) bits."
            )
        elif got == math.floor(bits * math.log2(v)):
            hint = " You multiplied; a sequence of n symbols needs n·log2(V) bits, so n = bits / log2(V)."
        raise AssertionError(f"{call} returned {got:g}; expected {expected}.{hint}")
    return (
        "A random sequence of n symbols out of V holds n·log2(V) bits: 4.32 bits per symbol for V = 20. "
        "128 float32 numbers hold 4096 bits, 947 such symbols, far more than a trained GRU manages to use."
    )
