"""Checkers of the chapter "The seq2seq bottleneck" (registered in :data:`lib.exercises.EXERCISES` on import).

The expected values come from :meth:`lib.seq2seq.Seq2Seq.summary` (the fixed vector c read from padded
encoder states), from the path-length formulas of the chapter (the encoder–decoder chain of the blog post
"Everything is a mapping" (一切皆是映射) and the lecture notes' equation with c at every step), and from
``math.log2`` (the information in a random sequence). The break-it checkers measure the chapter's own
reversal model (``lib.experiments.reversal_experiment(None)``, cached on disk) on its test set, teacher-forced,
with the same change to the encoder states that the reader makes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..experiments import reversal_experiment, sequence_task
from ..seq2seq import Seq2Seq
from ..special_tokens import BOS_ID, EOS_ID
from .core import as_array, as_number, call_answer, checker_setup, exercise, fmt, require_callable
from .core import one_thread as _one_thread

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


# --------------------------------------------------------------------------------------------
# Break-it exercises on the chapter's reversal model (reversal_experiment(None), cached on disk)
# --------------------------------------------------------------------------------------------

_SETUP_FIX = (
    "the chapter's reversal model is trained once (about a minute) and kept in the user cache folder; run the "
    "chapter's §1 from the top, then check again"
)


@functools.cache
def _reversal() -> tuple[Seq2Seq, list[tuple[list[int], list[int]]]]:
    """The chapter's fixed-vector reversal model and its 1,000 test pairs (§3's ``test_pairs``)."""
    model = reversal_experiment(None).model.eval()
    return model, sequence_task(1000, 4, 30, 20, seed=2)


@torch.no_grad()
def _teacher_forced_correct(
    model: Seq2Seq, pairs: list, length: int, memory_fn: Callable[[Tensor, Tensor], Tensor] | None = None
) -> np.ndarray:
    """``(sequences, length)``: 1 where the teacher-forced decoder's most probable symbol is the target's, else 0."""
    group = [(s, t) for s, t in pairs if len(s) == length]
    src = torch.tensor([s + [EOS_ID] for s, _ in group])  # (group, length + 1)
    tgt = torch.tensor([[BOS_ID] + t for _, t in group])  # (group, length + 1)
    memory, src_mask = model.encode(src)
    if memory_fn is not None:
        memory = memory_fn(memory, src_mask)
    best = model.decode(tgt, memory, src_mask)[:, :length].argmax(-1)  # </s>'s position left out
    return (best == torch.tensor([t for _, t in group])).double().numpy()


def _zero_half(which: str) -> Callable[[Tensor, Tensor], Tensor]:
    """A memory_fn that zeroes the forward (first) or backward (second) half of every encoder state."""

    def change(memory: Tensor, src_mask: Tensor) -> Tensor:
        half = memory.size(-1) // 2
        memory = memory.clone()
        if which == "forward":
            memory[..., :half] = 0
        else:
            memory[..., half:] = 0
        return memory

    return change


def _pair(answer: Any, what: str) -> tuple[float, float]:
    """The reader's measurement as two numbers (a tuple, list, array or tensor of two)."""
    values = as_array(answer, what).ravel()
    if values.size != 2:
        raise AssertionError(f"{what} should be a pair of two numbers, got {values.size} numbers: {fmt(values, 3)}")
    return float(values[0]), float(values[1])


def _close(a: float, b: float, tol: float = 0.01) -> bool:
    return abs(a - b) <= tol


@exercise(
    "bottleneck_break_context",
    chapter=_CHAPTER,
    summary="(intact, broken): teacher-forced token accuracy of the reversal model on the length-8 test "
    "sequences, with its C and with C set to zero",
)
def _check_break_context(answer: Any) -> str | None:
    """The pair must match the checker's own measurement on the chapter's cached model (C = 0: near chance)."""
    with checker_setup("loading the chapter's reversal model (reversal_experiment(None))", _SETUP_FIX), _one_thread():
        model, pairs = _reversal()
        intact = _teacher_forced_correct(model, pairs, 8).mean()
        broken = _teacher_forced_correct(model, pairs, 8, lambda m, k: torch.zeros_like(m)).mean()
        forward = _teacher_forced_correct(model, pairs, 8, _zero_half("forward")).mean()
        backward = _teacher_forced_correct(model, pairs, 8, _zero_half("backward")).mean()
        greedy = reversal_experiment(None).accuracy
        greedy_8 = greedy.token[greedy.lengths.index(8)]
    got_intact, got_broken = _pair(answer, "your measurement (intact, broken)")
    expected = f"expected about ({intact:.3f}, {broken:.3f})"
    if _close(got_intact, broken) and _close(got_broken, intact):
        raise AssertionError(f"your pair is ({got_intact:.3f}, {got_broken:.3f}); {expected}: the intact model first.")
    if not _close(got_intact, intact):
        hint = ""
        if _close(got_intact, greedy_8):
            hint = (
                " That is §3's greedy accuracy at length 8: here the decoder is fed the correct previous symbols "
                "(teacher forcing, teacher_forced_outputs), so that each position measures what C delivers."
            )
        raise AssertionError(
            f"your intact accuracy is {got_intact:.3f}; {expected}. Measure the length-8 test sequences with "
            f"correct_matrix(test_pairs, teacher_forced_outputs(model, test_pairs), 8).mean().{hint}"
        )
    if _close(got_broken, intact, 0.005):
        raise AssertionError(
            f"with C set to zero you still measure {got_broken:.3f}, the intact value: your change did not reach "
            "the decoder. Did your memory_fn return the changed memory (not None, not the original), and did you "
            "change the states C is read from (→h_m at the last real token, ←h_1 at position 0)?"
        )
    if not _close(got_broken, broken):
        hint = ""
        if _close(got_broken, forward):
            hint = " That is the accuracy with only the forward half →h_m set to zero; set all of C to zero."
        elif _close(got_broken, backward):
            hint = " That is the accuracy with only the backward half ←h_1 set to zero; set all of C to zero."
        elif got_broken < 0.15:
            hint = (
                " Near chance, as expected, but not the value of C = 0: a random or another sentence's C "
                "gives a similar number; set C (or all of memory) to zeros."
            )
        raise AssertionError(f"your accuracy with C = 0 is {got_broken:.3f}; {expected}.{hint}")
    return (
        f"with its C the decoder gets {intact:.2f} of the symbols right; with C = 0 it gets {broken:.2f}, "
        "about the 1/20 = 0.05 of a blind guess: everything the decoder knows about the source is C."
    )


@exercise(
    "bottleneck_break_half",
    chapter=_CHAPTER,
    summary="(first, last): teacher-forced accuracy of the first three and last three outputs of the length-12 "
    "test sequences with the backward half ←h_1 of C set to zero",
)
def _check_break_half(answer: Any) -> str | None:
    """The pair must match the checker's own measurement: the first outputs survive, the last ones collapse."""
    with checker_setup("loading the chapter's reversal model (reversal_experiment(None))", _SETUP_FIX), _one_thread():
        model, pairs = _reversal()
        ends = lambda c: (c[:, :3].mean(), c[:, -3:].mean())  # noqa: E731
        first, last = ends(_teacher_forced_correct(model, pairs, 12, _zero_half("backward")))
        intact = ends(_teacher_forced_correct(model, pairs, 12))
        forward = ends(_teacher_forced_correct(model, pairs, 12, _zero_half("forward")))
        both = ends(_teacher_forced_correct(model, pairs, 12, lambda m, k: torch.zeros_like(m)))
    got_first, got_last = _pair(answer, "your measurement (first, last)")
    expected = f"expected about ({first:.3f}, {last:.3f})"
    if _close(got_first, first) and _close(got_last, last):
        return (
            f"without ←h_1 the first three outputs still score {first:.2f} (intact {intact[0]:.2f}), the last "
            f"three {last:.2f} (intact {intact[1]:.2f}): each half of C carries the symbols its GRU read last."
        )
    if _close(got_first, last) and _close(got_last, first):
        hint = (
            " Your two numbers are swapped: first = output positions 1–3 (the source's last three symbols), "
            "last = output positions 10–12."
        )
    elif _close(got_first, intact[0]) and _close(got_last, intact[1]):
        hint = (
            " That is the intact model: your change did not reach the decoder. ←h_1 is the backward half (the "
            "second d_hidden/2 features) at position 0, where the backward GRU ends; did your memory_fn return "
            "the changed memory?"
        )
    elif _close(got_first, forward[0]) and _close(got_last, forward[1]):
        hint = " That is the forward half →h_m set to zero (the first d_hidden/2 features); ←h_1 is the second half."
    elif _close(got_first, both[0]) and _close(got_last, both[1]):
        hint = " That is all of C set to zero; set only the backward half (the second d_hidden/2 features)."
    else:
        hint = (
            " Take correct_matrix(test_pairs, outputs, 12) of the teacher-forced outputs and average its first "
            "three and its last three columns."
        )
    raise AssertionError(f"your pair is ({got_first:.3f}, {got_last:.3f}); {expected}.{hint}")
