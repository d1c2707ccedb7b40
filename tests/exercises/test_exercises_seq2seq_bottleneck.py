"""Tests of the exercises of the chapter "The seq2seq bottleneck": a correct answer passes, typical mistakes are named.

The correct answers are written with ``lib`` and ``math``; ``test_exercises.py`` also collects this module's
``CASES`` (every registered exercise must have test cases).
"""

import functools
import math

import numpy as np
import torch

from lib.book.seq2seq_bottleneck import correct_matrix, teacher_forced_outputs
from lib.exercises import check
from lib.experiments import reversal_experiment, sequence_task
from lib.seq2seq import Seq2Seq, Seq2SeqConfig

# --- answers, correct and wrong ---------------------------------------------------------------------------


def summary_correct(memory, mask):
    return Seq2Seq.summary(memory, mask)


def _read(memory, mask, forward_at, backward_at):
    half = memory.size(-1) // 2
    rows = torch.arange(memory.size(0))
    return torch.cat([memory[rows, forward_at, :half], memory[rows, backward_at, half:]], dim=-1)


def summary_last_column(memory, mask):  # ignores the padding: the last column of a short sentence is zeros
    n = memory.size(0)
    return _read(memory, mask, torch.full((n,), memory.size(1) - 1), torch.zeros(n, dtype=torch.long))


def summary_off_by_one(memory, mask):  # index L instead of L - 1
    return _read(memory, mask, mask.sum(-1), torch.zeros(memory.size(0), dtype=torch.long))


def summary_backward_at_end(memory, mask):  # the whole state at the last real token
    last = mask.sum(-1) - 1
    return memory[torch.arange(memory.size(0)), last]


def summary_forward_first(memory, mask):  # →h_1 instead of →h_last
    return memory[:, 0]


def summary_swapped(memory, mask):
    c = summary_correct(memory, mask)
    half = c.size(-1) // 2
    return torch.cat([c[:, half:], c[:, :half]], dim=-1)


def summary_mean(memory, mask):
    return memory.sum(1) / mask.sum(-1, keepdim=True)


def path_length_correct(m, j, i, every_step):
    return (m - j + 1) + (1 if every_step else i)


def capacity_correct(bits, num_symbols):
    return math.floor(bits / math.log2(num_symbols))


# --- break-it measurements on the chapter's reversal model, made with the chapter's plumbing ---------------


class Lazy:
    """A measurement computed when the checker first reads it (np.asarray), not when the tests are collected."""

    def __init__(self, compute):
        self.compute = compute

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.compute(), dtype=dtype)


@functools.cache
def _model_and_pairs():
    return reversal_experiment(None).model, sequence_task(1000, 4, 30, 20, seed=2)


def _zero_half(which):
    def change(memory, src_mask):
        half = memory.size(-1) // 2
        keep = torch.ones(memory.size(-1))
        keep[:half] = which != "forward"
        keep[half:] = which == "forward"
        return memory * keep

    return change


def _first_at_position_0(memory, src_mask):  # ←h_1 alone: the backward half at position 0, where C reads it
    memory = memory.clone()
    memory[:, 0, memory.size(-1) // 2 :] = 0
    return memory


@functools.cache
def _accuracy(length, change=None, columns=None):
    model, pairs = _model_and_pairs()
    correct = correct_matrix(pairs, teacher_forced_outputs(model, pairs, change), length)
    if columns is None:
        return correct.mean()
    return correct[:, :3].mean() if columns == "first" else correct[:, -3:].mean()


def _zero(memory, src_mask):
    return torch.zeros_like(memory)


def _shuffled(memory, src_mask):  # another sentence's C: rows rolled by one
    return memory.roll(1, dims=0)


def _greedy_8():
    acc = reversal_experiment(None).accuracy
    return acc.token[acc.lengths.index(8)]


def _ends(change):
    return (_accuracy(12, change, "first"), _accuracy(12, change, "last"))


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "bottleneck_summary": (
        summary_correct,
        [
            (summary_last_column, "you read a padding position"),
            (summary_off_by_one, "index L instead of L - 1"),
            (summary_backward_at_end, "its final state ←h_1 sits at position 0"),
            (summary_forward_first, "Your forward half is →h_1"),
            (summary_swapped, "You swapped the halves"),
            (summary_mean, "That is the mean over positions"),
            (lambda memory, mask: memory, "expected (batch, d_hidden) = (3, 8)"),
            (summary_correct(*[torch.zeros(1, 1, 2), torch.ones(1, 1, dtype=torch.bool)]), "expected a function"),
        ],
    ),
    "bottleneck_path_length": (
        path_length_correct,
        [
            (lambda m, j, i, every_step: (m - j) + (1 if every_step else i), "One step short"),
            (lambda m, j, i, every_step: m - j + 1 + i, "one application of D, whatever i is"),
            (lambda m, j, i, every_step: m - j + 2, "i applications of D"),
            (lambda m, j, i, every_step: m - j + 1, "counted the encoder's steps only"),
            (lambda m, j, i, every_step: j + (1 if every_step else i), "read backwards"),
            (lambda m, j, i, every_step: 2, "path_length(m=5, j=1, i=1, every_step=False) returned 2; expected 6"),
        ],
    ),
    "bottleneck_capacity": (
        capacity_correct,
        [
            (lambda bits, v: bits / math.log2(v), "not a whole number"),
            (lambda bits, v: round(bits / math.log2(v)), "round down"),
            (lambda bits, v: math.ceil(bits / math.log2(v)), "round down"),
            (lambda bits, v: math.floor(bits / math.log(v)), "natural logarithm"),
            (lambda bits, v: math.floor(bits / math.log10(v)), "log10"),
            (lambda bits, v: bits // v, "carries log2(20) = 4.322 bits"),
            (lambda bits, v: math.floor(bits * math.log2(v)), "You multiplied"),
        ],
    ),
    "bottleneck_break_context": (
        Lazy(lambda: (_accuracy(8), _accuracy(8, _zero))),
        [
            (Lazy(lambda: (_accuracy(8, _zero), _accuracy(8))), "the intact model first"),
            (Lazy(lambda: (_accuracy(8), _accuracy(8))), "your change did not reach the decoder"),
            (Lazy(lambda: (_greedy_8(), _accuracy(8, _zero))), "§3's greedy accuracy"),
            (Lazy(lambda: (_accuracy(8), _accuracy(8, _zero_half("forward")))), "only the forward half"),
            (Lazy(lambda: (_accuracy(8), _accuracy(8, _zero_half("backward")))), "only the backward half"),
            (Lazy(lambda: (_accuracy(8), _accuracy(8, _shuffled))), "another sentence's C"),
            ("0.93, 0.02", "should be numbers"),
            ((0.9, 0.1, 0.0), "a pair of two numbers"),
        ],
    ),
    "bottleneck_break_half": (
        Lazy(lambda: _ends(_first_at_position_0)),
        [
            (Lazy(lambda: _ends(_first_at_position_0)[::-1]), "Your two numbers are swapped"),
            (Lazy(lambda: _ends(None)), "your change did not reach the decoder"),
            (Lazy(lambda: _ends(_zero_half("forward"))), "That is the forward half →h_m set to zero"),
            (Lazy(lambda: _ends(_zero)), "That is all of C set to zero"),
            ((0.5, 0.5), "average its first three and its last three columns"),
            (lambda: (0.76, 0.01), "should be numbers"),
        ],
    ),
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


def test_the_break_it_checkers_agree_with_the_chapters_plumbing_and_accept_any_array_type(capsys):
    # zeroing ←h_1 at position 0 or the backward half everywhere is the same break for the fixed-vector decoder
    assert _ends(_first_at_position_0) == _ends(_zero_half("backward"))
    intact, broken = _accuracy(8), _accuracy(8, _zero)
    assert intact > 0.8 and broken < 0.1  # the direction and size the exercise's prose states
    assert check("bottleneck_break_context", [intact, broken])
    assert check("bottleneck_break_context", torch.tensor([intact, broken]))
    assert check("bottleneck_break_context", np.array([round(intact, 3), round(broken, 3)]))
    first, last = _ends(_first_at_position_0)
    assert first > 0.5 and last < 0.1
    assert check("bottleneck_break_half", (first, last))


def test_a_break_it_answer_that_is_a_function_is_not_called(capsys):
    # the answers are measurements (numbers); a function, even one that raises or never returns, is not run
    def loops():
        while True:
            pass

    def raises():
        raise RuntimeError("not a measurement")

    for name in ("bottleneck_break_context", "bottleneck_break_half"):
        for answer in (loops, raises):
            assert check(name, answer) is False
            assert "should be numbers (a list, numpy array or tensor), got function" in capsys.readouterr().out


def test_the_summary_exercise_accepts_the_grus_final_state(capsys):
    # the reader may also recompute c with lib's encoder; on real encoder states the checker's reference is the same
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(30, d_embed=12, d_hidden=16, attention=None, dropout=0.0)).eval()
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]])
    memory, mask = model.encode(src)
    _, last = model.encoder(model.src_embed(src), mask.sum(-1))
    torch.testing.assert_close(summary_correct(memory, mask), last)
    assert check("bottleneck_summary", summary_correct)
    assert capsys.readouterr().out.startswith("✅ bottleneck_summary: correct.")
