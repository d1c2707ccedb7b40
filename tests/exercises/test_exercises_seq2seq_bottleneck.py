"""Tests of the exercises of the chapter "The seq2seq bottleneck": a correct answer passes, typical mistakes are named.

The correct answers are written with ``lib`` and ``math``; ``test_exercises.py`` also collects this module's
``CASES`` (every registered exercise must have test cases).
"""

import math

import torch

from lib.exercises import check
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
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


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
