"""Tests of the exercises of the chapter "Preliminaries": a correct answer passes, typical mistakes are named.

The correct answers are written with numpy and torch; ``test_exercises.py`` also collects this module's
``CASES`` (every registered exercise must have test cases).
"""

import warnings

import numpy as np
import pytest
import torch

from lib.exercises import check

# --- answers, correct and wrong ---------------------------------------------------------------------------


def matvec_correct(w, x):
    w, x = np.asarray(w), np.asarray(x)
    if w.shape[1] != x.shape[0]:
        raise ValueError(f"W has {w.shape[1]} columns but x has {x.shape[0]} entries")
    return w @ x


def matvec_loops_zip(w, x):
    return [sum(a * b for a, b in zip(row, x)) for row in w]  # zip stops silently at the shorter list


def matvec_columns(w, x):
    w = np.asarray(w)
    if w.shape[1] != len(x):
        raise ValueError("sizes differ")
    return [sum(w[j][i] * x[j] for j in range(len(x))) for i in range(len(w))]


def matvec_no_sum(w, x):
    return np.asarray(w) * np.asarray(x)


def matvec_index_error(w, x):
    return [sum(row[j] * x[j] for j in range(len(row))) for row in w]  # IndexError when x is short


def softmax_correct(z):
    return torch.softmax(torch.as_tensor(z), dim=0)


def softmax_naive(z):
    e = np.exp(z)
    return e / e.sum()


def softmax_minus_min(z):
    e = np.exp(z - z.min())
    return e / e.sum()


def softmax_unnormalised(z):
    return np.exp(z - z.max())


def softmax_t_correct(z, t):
    return torch.softmax(torch.as_tensor(z) / t, dim=0)


def one_hot_correct(ids, vocab_size):
    return torch.nn.functional.one_hot(torch.tensor(ids), vocab_size)


def one_hot_transposed(ids, vocab_size):
    return one_hot_correct(ids, vocab_size).T


def one_hot_from_one(ids, vocab_size):
    m = np.zeros((len(ids), vocab_size))
    for row, i in enumerate(ids):
        m[row, i - 1] = 1
    return m


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "matvec": (
        matvec_correct,
        [
            (matvec_loops_zip, "zip() stops silently"),
            (matvec_columns, "raised IndexError"),  # Wᵀ·x cannot even run on the seed's (2, 4) matrix
            (matvec_no_sum, "did not add up each row"),
            (matvec_index_error, "raised IndexError; expected a ValueError"),
            (lambda w, x: [0.82, 1.07], "expected [-1.00000, -1.00000]. Entry i is the dot product"),
            ([0.82, 1.07], "expected a function"),
        ],
    ),
    "softmax_stable": (
        softmax_correct,
        [
            (softmax_naive, "exp(1002) overflows to inf"),
            (lambda z: softmax_naive(z) if z.max() < 1000 else softmax_correct(z), "underflows to 0"),
            (softmax_minus_min, "you subtracted the minimum"),
            (softmax_unnormalised, "forgot to divide by the sum"),
            (lambda z: z / z.sum(), "forgot the exponential"),
            (lambda z: softmax_correct(z)[:-1], "expected (3,)"),
        ],
    ),
    "softmax_temperature": (
        softmax_t_correct,
        [
            (lambda z, t: softmax_correct(z * t), "multiplied the scores by T"),
            (lambda z, t: softmax_correct(z), "does not depend on T"),
            (lambda z, t: softmax_correct(z) / t, "after the softmax"),
            (lambda z, t: softmax_naive(z / t), "exp(800) overflows to inf"),
        ],
    ),
    "one_hot": (
        one_hot_correct,
        [
            (one_hot_transposed, "That is the transpose"),
            (one_hot_from_one, "start at 1"),
            (lambda ids, v: one_hot_correct(ids, v) * 2, "only 0s and one 1 per row"),
            (lambda ids, v: torch.eye(v)[: len(ids)], "for ids = [2, 0, 2] and vocab_size = 5"),
        ],
    ),
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


def test_naive_softmax_gives_one_line_and_no_warning(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow RuntimeWarning would fail here
        assert check("softmax_stable", softmax_naive) is False
    out = capsys.readouterr()
    assert out.err == ""
    assert out.out == (
        "❌ softmax_stable: for z = [1000.0, 1001.0, 1002.0] your result is [nan, nan, nan]: exp(1002) overflows "
        "to inf (the largest float64 is about exp(709.78)), and inf / inf is nan. Subtract max(z) before exp; "
        "softmax does not change when the same number is subtracted from every score.\n"
    )


def test_the_seed_numbers_are_in_the_remarks(capsys):
    assert check("matvec", matvec_correct)
    assert "[0.82, 1.07]" in capsys.readouterr().out
    assert check("softmax_stable", softmax_correct)
    assert "[0.28943, 0.39069, 0.31987]" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name, answer",
    [
        ("matvec", lambda w, x: matvec_correct(w, x).tolist()),
        ("matvec", lambda w, x: torch.tensor(matvec_correct(w, x))[:, None]),  # a column (m, 1) is fine
        ("softmax_stable", lambda z: softmax_correct(z).numpy()),
        ("softmax_stable", lambda z: softmax_correct(z).tolist()),
        ("softmax_temperature", lambda z, t: softmax_t_correct(z, t).float()),
        ("one_hot", lambda ids, v: one_hot_correct(ids, v).bool()),
        ("one_hot", lambda ids, v: one_hot_correct(ids, v).tolist()),
    ],
)
def test_answers_may_be_lists_numpy_or_tensors(name, answer, capsys):
    assert check(name, answer)
