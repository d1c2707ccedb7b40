"""Checkers of the chapter "Preliminaries" (registered in :data:`lib.exercises.EXERCISES` on import).

The expected values come from numpy's matrix product and ``torch.softmax`` / ``torch.nn.functional.one_hot``
in float64; the first input of each checker is the worked example of the blog post "BERT on the left, GPT on
the right" (天才在左 (BERT),疯子在右 (GPT)).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from .core import AnswerRaised, as_array, call_answer, diagnose, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "preliminaries"

# The 'Genius on the left' post's worked numbers.
_SEED_W = [[0.5, 0.2, 0.0, 1.0], [1.0, 0.0, 0.2, 0.1]]
_SEED_X1 = [1.0, 0.1, 0.2, 0.3]  # x1 = E1 + P1
_SEED_Z = [0.5, 0.8, 0.6]


def _quiet_call(fn: Any, *args: Any) -> Any:
    """:func:`call_answer` without numpy's overflow/invalid RuntimeWarnings (a naive softmax must print one ❌ line)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return call_answer(fn, *args)


def _softmax64(z: Any) -> np.ndarray:
    """The reference: ``torch.softmax`` in float64 over the last axis."""
    return torch.softmax(torch.as_tensor(np.asarray(z, dtype=float)), dim=-1).numpy()


# --------------------------------------------------------------------------------------------
# matvec: the 'Genius on the left' post's matrix product
# --------------------------------------------------------------------------------------------


@exercise(
    "matvec",
    chapter=_CHAPTER,
    summary="matvec(W, x): the product W·x of an (m, n) matrix and an n-vector; ValueError if sizes differ",
)
def _check_matvec(answer: Any) -> str | None:
    """``answer(W, x)`` (lists of floats) must return the m values of W·x and raise ValueError on a size mismatch."""
    require_callable(answer, "matvec(W, x)")
    gen = np.random.default_rng(0)
    cases = [
        (_SEED_W, _SEED_X1),  # the 'Genius on the left' post: [0.82, 1.07]
        ([[1.0, 2.0], [3.0, 4.0]], [1.0, -1.0]),  # square, not symmetric
        (gen.normal(size=(3, 5)).round(2).tolist(), gen.normal(size=5).round(2).tolist()),
        ([[2.0, -1.0, 0.5]], [1.0, 2.0, 4.0]),  # one row
    ]
    for w, x in cases:
        expected = np.asarray(w) @ np.asarray(x)
        m, n = len(w), len(w[0])
        where = f"for W of shape ({m}, {n}) and x = {x}"
        got = as_array(call_answer(answer, [row[:] for row in w], list(x)), f"matvec(W, x) {where}")
        if got.size != m:
            hint = ""
            if got.size == m * n:
                hint = (
                    " It looks like you multiplied element by element but did not add up each row: "
                    "entry i is the sum over j of W[i][j]·x[j]."
                )
            raise AssertionError(f"{where} your result has {got.size} values; expected {m}, one per row of W.{hint}")
        got = got.ravel()
        if not np.allclose(got, expected, atol=1e-9, rtol=1e-9):
            raise AssertionError(
                f"{where} your result is {fmt(got)}; expected {fmt(expected)}. Entry i is the dot product of "
                f"row i of W with x: the sum over j of W[i][j]·x[j]."
            )
    # (m × n)·(n × 1) needs the same n: the 'Genius on the left' post says the product cannot be computed otherwise.
    for w, x in [(_SEED_W, [1.0, 0.1, 0.2]), (_SEED_W, [1.0, 0.1, 0.2, 0.3, 0.4])]:
        try:
            value = call_answer(answer, [row[:] for row in w], list(x))
        except AnswerRaised as err:
            if isinstance(err.original, ValueError):
                continue
            raise AssertionError(
                f"for W of shape (2, 4) and x of length {len(x)} your function raised "
                f"{type(err.original).__name__}; expected a ValueError that says the sizes differ"
            ) from None
        try:
            shown = fmt(value)
        except (TypeError, ValueError):
            shown = f"{value!r:.60}"
        raise AssertionError(
            f"for W of shape (2, 4) and x of length {len(x)} your function returned {shown}; it should raise "
            f"ValueError: (m × n)·(n × 1) needs as many columns in W as entries in x. (zip() stops silently "
            f"at the shorter list; check the lengths first.)"
        )
    return "The 'Genius on the left' post: W·x1 = [0.82, 1.07]; a (2 × 4) matrix times a 4-vector gives a 2-vector."


# --------------------------------------------------------------------------------------------
# softmax_stable
# --------------------------------------------------------------------------------------------


def _softmax_variants(z: np.ndarray) -> dict[str, np.ndarray]:
    """Typical wrong softmax results, keyed by the mistake that produces them."""
    with np.errstate(all="ignore"):
        e = np.exp(z - z.max())
        return {
            "you forgot to divide by the sum: the values must add up to 1": e,
            "you forgot the exponential: softmax divides exp(z_i) by the sum of exp(z_j)": z / z.sum(),
            "you subtracted the minimum; subtract the maximum, so that the largest exponent is exp(0) = 1": np.exp(
                z - z.min()
            )
            / np.exp(z - z.min()).sum(),
            "you divided exp(z_i) by the sum of the z_j; divide by the sum of the exp(z_j)": np.exp(z) / z.sum(),
        }


def _check_probabilities(
    got: np.ndarray, expected: np.ndarray, where: str, z: np.ndarray, variants: dict[str, np.ndarray]
) -> None:
    """AssertionError with a hint unless ``got`` equals ``expected`` (the softmax of ``z``)."""
    if got.shape != expected.shape:
        raise AssertionError(f"{where} your result has shape {got.shape}; expected {expected.shape}, one per score")
    if not np.all(np.isfinite(got)):
        for mistake, wrong in variants.items():  # a known mistake that also overflows
            if wrong.shape == got.shape and np.allclose(got, wrong, atol=1e-6, rtol=0.0, equal_nan=True):
                raise AssertionError(
                    f"{where} your result is {fmt(got)}; expected {fmt(expected)}. It looks like {mistake}."
                )
        if z.max() > 700:
            why = f"exp({z.max():g}) overflows to inf (the largest float64 is about exp(709.78)), and inf / inf is nan"
        else:
            why = f"exp({z.max():g}) underflows to 0 for every score, and 0 / 0 is nan"
        raise AssertionError(
            f"{where} your result is {fmt(got)}: {why}. Subtract max(z) before exp; softmax does not change "
            f"when the same number is subtracted from every score."
        )
    if not np.allclose(got, expected, atol=1e-6, rtol=1e-6):
        hint = diagnose(got, variants, atol=1e-6)
        raise AssertionError(f"{where} your result is {fmt(got)}; expected {fmt(expected)}.{hint}")


@exercise(
    "softmax_stable",
    chapter=_CHAPTER,
    summary="softmax(z): a numerically stable softmax of a 1-D numpy array (survives z = [1000, 1001, 1002])",
)
def _check_softmax_stable(answer: Any) -> str | None:
    """``answer(z)`` must return softmax(z) for ordinary, huge, hugely negative and widely spread scores."""
    require_callable(answer, "softmax(z)")
    cases = [
        _SEED_Z,  # the 'Genius on the left' post: [0.28943, 0.39069, 0.31987]
        [1000.0, 1001.0, 1002.0],  # exp overflows
        [-1000.0, -1000.0, -1000.0],  # exp underflows: 0 / 0
        [-1000.0, 0.0, 1000.0],  # subtracting the minimum overflows
        [2.0, 2.0, 2.0, 2.0],  # uniform
        [3.0],  # one score: probability 1
    ]
    for values in cases:
        z = np.array(values)
        expected = _softmax64(z)
        got = as_array(_quiet_call(answer, z.copy()), f"softmax({values})").ravel()
        _check_probabilities(got, expected, f"for z = {values}", z, _softmax_variants(z))
    return (
        "softmax([0.5, 0.8, 0.6]) = [0.28943, 0.39069, 0.31987] (the 'Genius on the left' post), and "
        "softmax([1000, 1001, 1002]) = softmax([-2, -1, 0]) = [0.09003, 0.24473, 0.66524]."
    )


# --------------------------------------------------------------------------------------------
# softmax_temperature
# --------------------------------------------------------------------------------------------


@exercise(
    "softmax_temperature",
    chapter=_CHAPTER,
    summary="softmax_t(z, T): softmax(z / T) of a 1-D numpy array, stable for small T",
)
def _check_softmax_temperature(answer: Any) -> str | None:
    """``answer(z, T)`` must return softmax(z / T), also for a tiny T where z / T is huge."""
    require_callable(answer, "softmax_t(z, T)")
    z = np.array(_SEED_Z)
    for t in (1.0, 0.25, 4.0, 100.0, 0.001):
        expected = _softmax64(z / t)
        got = as_array(_quiet_call(answer, z.copy(), t), f"softmax_t({_SEED_Z}, {t})").ravel()
        variants = {
            "you multiplied the scores by T; divide them: softmax(z / T)": _softmax64(z * t),
            "your result does not depend on T: divide the scores by T before the softmax": _softmax64(z),
            "you divided the probabilities by T after the softmax; divide the scores before it": _softmax64(z) / t,
        }
        variants.update(_softmax_variants(z / t))
        _check_probabilities(got, expected, f"for z = {_SEED_Z} and T = {t}", z / t, variants)
    return (
        "T < 1 sharpens the distribution towards the argmax (T = 0.001 gives [0, 1, 0]); T > 1 flattens it "
        "towards uniform. Dividing the scores by √d_k in attention is a temperature of √d_k."
    )


# --------------------------------------------------------------------------------------------
# one_hot: an embedding lookup is a matrix product
# --------------------------------------------------------------------------------------------


@exercise(
    "one_hot",
    chapter=_CHAPTER,
    summary="one_hot(ids, vocab_size): the (len(ids), vocab_size) one-hot matrix; one_hot(ids) @ table == table[ids]",
)
def _check_one_hot(answer: Any) -> str | None:
    """``answer(ids, vocab_size)`` must return the one-hot rows of ``ids``; its product with a table picks rows."""
    require_callable(answer, "one_hot(ids, vocab_size)")
    gen = torch.Generator().manual_seed(0)
    # the 'Genius on the left' post's sentence
    # 我 爱 机器 学习 as ids 0..3 (row 0 is its E1 = [1, 0, 0, 0]), repeats, a single id
    for ids, vocab_size in [([0, 1, 2, 3], 4), ([2, 0, 2], 5), ([7], 8), ([3, 3, 1, 0, 9], 10)]:
        expected = torch.nn.functional.one_hot(torch.tensor(ids), vocab_size).double().numpy()
        where = f"for ids = {ids} and vocab_size = {vocab_size}"
        got = as_array(call_answer(answer, list(ids), vocab_size), f"one_hot({ids}, {vocab_size})")
        if got.shape != expected.shape:
            hint = ""
            if got.shape == expected.T.shape:
                hint = (
                    " That is the transpose: one row per token and one column per vocabulary entry, so "
                    "that one_hot(ids) @ table (vocab_size, d_model) picks the tokens' rows."
                )
            raise AssertionError(
                f"{where} your matrix has shape {got.shape}; expected (len(ids), vocab_size) = {expected.shape}.{hint}"
            )
        if not np.array_equal(got, expected):
            shifted = np.roll(expected, -1, axis=1)  # the 1 of id i in column i - 1 (id 0 in the last column)
            hint = ""
            if np.array_equal(got, shifted):
                hint = " It looks like your ids start at 1; id i puts its 1 in column i, counting from 0."
            elif not np.isin(got, [0.0, 1.0]).all():
                hint = " A one-hot matrix holds only 0s and one 1 per row."
            raise AssertionError(f"{where} your first row is {fmt(got[0])}; expected {fmt(expected[0])}.{hint}")
        table = torch.randn(vocab_size, 3, generator=gen, dtype=torch.float64).numpy()
        if not np.allclose(got @ table, table[ids]):  # guaranteed by the equality above; stated for the reader
            raise AssertionError(f"{where} one_hot(ids) @ table differs from table[ids]")
    return (
        "one_hot(ids) @ table == table[ids]: nn.Embedding skips the multiplications by 0 and reads the rows directly."
    )
