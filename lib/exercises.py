"""Checkable exercises: ``check("pe_row", my_function)`` prints one friendly line and returns True/False.

Every chapter ends with exercises. A reader writes an answer (a function or a value) and calls
:func:`check` with the exercise's name; the registered checker compares the answer with ``lib`` on a
few inputs, including the edge the exercise is about, and :func:`check` prints one line::

    ✅ pe_row: correct. <a short remark>
    ❌ pe_row: for pos=1, d_model=8 your row is [...]; expected [...]. It looks like ...
    ⏳ pe_row: not solved yet — replace the ... with your answer

A wrong answer never raises: an exception from the reader's function is reported on the ❌ line.
Only a programming error raises, e.g. an unknown exercise name (:class:`ValueError`).

Adding an exercise (one block per chapter at the end of this module)::

    @exercise("softmax_row", chapter="preliminaries", summary="softmax(z) of a 1-D list of scores")
    def _check_softmax_row(answer) -> str | None:
        got = _as_array(_call(answer, [0.5, 0.8, 0.6]), "softmax([0.5, 0.8, 0.6])")
        if not np.allclose(got, [0.28943, 0.39069, 0.31987], atol=1e-5):
            raise AssertionError(f"your softmax is {_fmt(got)}; expected [0.28943, 0.39069, 0.31987]")
        return "an optional remark shown after 'correct.'"

A checker raises ``AssertionError("helpful message")`` when the answer is wrong (use ``raise``, not a bare
``assert``, which ``python -O`` removes). It calls the reader's function through :func:`_call`, so that an
exception the reader's code raises is reported as "your function raised ...", not as a failure of the checker,
and a function that forgot its ``return`` is named as such.

Source: the exercise/solution pattern of the QuantEcon lectures (``sphinx-exercise``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .positional import PositionalEncoding, sinusoidal_positional_encoding

__all__ = ["Exercise", "EXERCISES", "exercise", "check", "list_exercises"]

Checker = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class Exercise:
    """One registered exercise.

    Attributes:
        name: the key readers pass to :func:`check`, e.g. ``"pe_row"``.
        chapter: the chapter's file stem, e.g. ``"positional_encoding"``.
        summary: one line saying what the answer is.
        checker: ``checker(answer) -> str | None``; raises ``AssertionError`` with a helpful
            message when the answer is wrong, returns an optional short remark when it is right.
    """

    name: str
    chapter: str
    summary: str
    checker: Checker


EXERCISES: dict[str, Exercise] = {}


def exercise(name: str, chapter: str, summary: str) -> Callable[[Checker], Checker]:
    """Decorator that registers ``checker`` in :data:`EXERCISES` under ``name``.

    Args:
        name: unique exercise name (what readers pass to :func:`check`).
        chapter: the chapter's file stem, e.g. ``"positional_encoding"``.
        summary: one line saying what the answer is.

    Returns:
        The decorator; it returns the checker unchanged.

    Raises:
        ValueError: ``name`` is empty or already registered.
    """
    if not name:
        raise ValueError("exercise name must be a non-empty string")

    def register(checker: Checker) -> Checker:
        if name in EXERCISES:
            raise ValueError(f"exercise {name!r} is already registered (chapter {EXERCISES[name].chapter!r})")
        EXERCISES[name] = Exercise(name, chapter, summary, checker)
        return checker

    return register


def list_exercises(chapter: str | None = None) -> list[Exercise]:
    """The registered exercises in registration order, optionally only those of one chapter.

    Args:
        chapter: a chapter's file stem (e.g. ``"positional_encoding"``); None: all chapters.

    Returns:
        A list of :class:`Exercise` (empty for a chapter without exercises).
    """
    return [ex for ex in EXERCISES.values() if chapter is None or ex.chapter == chapter]


class _AnswerRaised(Exception):
    """The reader's function raised; carries the original exception."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call the reader's function; an exception it raises becomes :class:`_AnswerRaised`.

    Raises:
        _AnswerRaised: the reader's function raised (reported by :func:`check`).
        AssertionError: it returned None or ``...`` (a forgotten ``return``).
    """
    try:
        result = fn(*args)
    except Exception as err:  # noqa: BLE001 - any error of the reader's code is reported, not raised
        raise _AnswerRaised(err) from err
    if result is None or result is Ellipsis:
        raise AssertionError(f"your function returned {result!r} — did you forget the `return` statement?")
    return result


def check(name: str, answer: Any) -> bool:
    """Check a reader's answer to exercise ``name`` and print one line saying how it went.

    Args:
        name: the exercise's name, e.g. ``"pe_row"`` (see :func:`list_exercises`).
        answer: the reader's function or value. ``None`` or ``...`` means "not solved yet".

    Returns:
        True when the answer is correct, False otherwise (also when the reader's function raised).

    Raises:
        ValueError: ``name`` is not a registered exercise (the message lists the known names).
    """
    if name not in EXERCISES:
        known = ", ".join(sorted(EXERCISES)) or "(none)"
        raise ValueError(f"unknown exercise {name!r}; known exercises: {known}")
    if answer is None or answer is Ellipsis:
        print(f"⏳ {name}: not solved yet — replace the ... with your answer")
        return False
    try:
        remark = EXERCISES[name].checker(answer)
    except _AnswerRaised as err:
        e = err.original
        print(f"❌ {name}: your function raised {type(e).__name__}: {e}")
        return False
    except AssertionError as err:
        print(f"❌ {name}: {err}")
        return False
    except Exception as err:  # noqa: BLE001 - an answer of an unexpected type must not crash the page
        print(f"❌ {name}: could not check your answer ({type(err).__name__}: {err})")
        return False
    print(f"✅ {name}: correct." + (f" {remark}" if remark else ""))
    return True


# --------------------------------------------------------------------------------------------
# Helpers for checkers
# --------------------------------------------------------------------------------------------


def _fmt(values: Any, digits: int = 5, max_items: int = 8) -> str:
    """A short readable vector: ``[0.84147, 0.54030, ...]`` (first ``max_items`` entries)."""
    flat = np.asarray(values, dtype=float).ravel()
    items = [f"{v:.{digits}f}" for v in flat[:max_items]]
    if flat.size > max_items:
        items.append(f"… ({flat.size} values)")
    return "[" + ", ".join(items) + "]"


def _as_array(x: Any, what: str) -> np.ndarray:
    """A float64 numpy array from a list, tuple, numpy array or tensor; AssertionError otherwise."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise AssertionError(
            f"{what} should be numbers (a list, numpy array or tensor), got {type(x).__name__}"
        ) from None


def _as_number(x: Any, what: str) -> float:
    """A float from a Python number, a numpy scalar or a one-element tensor/array; AssertionError otherwise."""
    if isinstance(x, bool):
        raise AssertionError(f"{what} should be a number, got {x!r}")
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, torch.Tensor) and x.numel() == 1:
        return float(x.item())
    if isinstance(x, np.ndarray) and x.size == 1:
        return float(x.item())
    raise AssertionError(f"{what} should be a single number, got {type(x).__name__}")


def _require_callable(answer: Any, signature: str) -> None:
    if not callable(answer):
        raise AssertionError(f"expected a function {signature}, got {type(answer).__name__} {answer!r:.40}")


def _diagnose(got: np.ndarray, variants: dict[str, np.ndarray], atol: float) -> str:
    """' It looks like <mistake>.' when ``got`` equals one of the known wrong ``variants``, else ''."""
    for mistake, wrong in variants.items():
        if wrong.shape == got.shape and np.allclose(got, wrong, atol=atol, rtol=0.0):
            return f" It looks like {mistake}."
    return ""


# --------------------------------------------------------------------------------------------
# Chapter: positional_encoding
# --------------------------------------------------------------------------------------------

_CHAPTER_PE = "positional_encoding"


def _pe_row_variants(pos: int, d_model: int) -> dict[str, np.ndarray]:
    """Typical wrong rows PE(pos, ·), keyed by the mistake that produces them."""
    j = np.arange(d_model)  # column index
    two_i = j - j % 2  # 2i: the even column of each (sin, cos) pair
    i = two_i // 2  # the pair index
    even = j % 2 == 0
    ang = pos / 10000.0 ** (two_i / d_model)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return {
            "you swapped sin and cos (even columns 2i take the sin, odd columns 2i+1 the cos)":
                np.where(even, np.cos(ang), np.sin(ang)),
            "you used i instead of 2i in the exponent: it is 10000^(2i/d_model), "
            "where i counts the (sin, cos) pairs":
                np.where(even, np.sin(pos / 10000.0 ** (i / d_model)), np.cos(pos / 10000.0 ** (i / d_model))),
            "the cos column 2i+1 used its own index in the exponent; it must share the frequency "
            "of its sin partner: 10000^(2i/d_model) for both":
                np.where(even, np.sin(pos / 10000.0 ** (j / d_model)), np.cos(pos / 10000.0 ** (j / d_model))),
            "you used i as the exponent; it is 2i/d_model, i.e. 10000^(2i/d_model)":
                np.where(even, np.sin(pos / 10000.0 ** i), np.cos(pos / 10000.0 ** i)),
            "you forgot to divide the exponent by d_model: it is 10000^(2i/d_model)":
                np.where(even, np.sin(pos / 10000.0 ** two_i), np.cos(pos / 10000.0 ** two_i)),
            "you multiplied pos by 10000^(2i/d_model); divide instead":
                np.where(even, np.sin(pos * 10000.0 ** (two_i / d_model)), np.cos(pos * 10000.0 ** (two_i / d_model))),
            "you used sin in every column; odd columns 2i+1 take the cos":
                np.sin(ang),
        }


@exercise("pe_row", chapter=_CHAPTER_PE,
          summary="pe_row(pos, d_model): one row of the sinusoidal positional-encoding table")
def _check_pe_row(answer: Any) -> str | None:
    """``answer(pos, d_model)`` must return the d_model values PE(pos, 0 .. d_model-1)."""
    _require_callable(answer, "pe_row(pos, d_model)")
    # The seed's worked row first, then pos = 0 (the [0, 1, 0, 1, ...] edge), then wider tables.
    for pos, d_model in [(1, 8), (0, 8), (3, 8), (7, 4), (1, 2), (25, 128), (49, 128)]:
        expected = sinusoidal_positional_encoding(pos + 1, d_model)[pos].double().numpy()
        got = _as_array(_call(answer, pos, d_model), f"pe_row({pos}, {d_model})").ravel()
        if got.shape != expected.shape:
            raise AssertionError(
                f"for pos={pos}, d_model={d_model} your row has {got.size} values; expected d_model = "
                f"{d_model} (one per dimension)"
            )
        if not np.allclose(got, expected, atol=1e-5, rtol=0.0):
            hint = _diagnose(got, _pe_row_variants(pos, d_model), atol=1e-5)
            raise AssertionError(
                f"for pos={pos}, d_model={d_model} your row is {_fmt(got)}; expected {_fmt(expected)}.{hint}"
            )
    return "Row 1 for d_model = 8 is seed 001's [0.84147, 0.54030, 0.09983, 0.99500, ...]."


@exercise("pe_norm", chapter=_CHAPTER_PE,
          summary="pe_norm(d_model): the length ||PE(pos)|| of a row, the same for every pos, without the table")
def _check_pe_norm(answer: Any) -> str | None:
    """``answer(d_model)`` must return ||PE(pos)||₂ = √(d_model / 2), measured on lib's table."""
    _require_callable(answer, "pe_norm(d_model)")
    for d_model in (512, 8, 2, 128, 1000):
        norms = sinusoidal_positional_encoding(200, d_model).double().norm(dim=1)  # one per position
        expected = float(norms.mean())
        value = _as_number(_call(answer, d_model), f"pe_norm({d_model})")
        if math.isclose(value, expected, rel_tol=1e-4):
            continue
        wrong = {
            d_model / 2: "that is the squared length ||PE||² = d_model/2; take the square root",
            math.sqrt(d_model): "that is √d_model, as if every dimension contributed 1; a (sin, cos) pair "
                                "contributes sin² + cos² = 1 in total, and there are d_model/2 pairs",
            float(d_model): "that counts every dimension as 1 and forgets the square root",
            1.0: "a single (sin, cos) pair has length 1, but the row has d_model/2 pairs",
        }
        why = next((w for v, w in wrong.items() if math.isclose(value, v, rel_tol=1e-4)), None)
        hint = f" It looks like {why}." if why else (
            " Hint: add up PE(pos, j)² over the columns j pair by pair, using sin² + cos² = 1.")
        raise AssertionError(f"for d_model={d_model} your length is {value:g}; expected {expected:.5g}.{hint}")
    return ("d_model/2 pairs, each with sin² + cos² = 1, give the length √(d_model/2) at every position "
            "(16 for d_model = 512): PE turns as pos grows, it never gets longer.")


def _shift_matrix(k: int, d_model: int) -> np.ndarray:
    """The block-diagonal M_k with PE(pos + k) = M_k · PE(pos) (rotation by ω_i k in each pair)."""
    m = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        a = k / 10000.0 ** (2 * i / d_model)
        c, s = math.cos(a), math.sin(a)
        m[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = [[c, s], [-s, c]]
    return m


@exercise("pe_shift_matrix", chapter=_CHAPTER_PE,
          summary="shift_matrix(k, d_model): the matrix M_k with PE(pos + k) = M_k · PE(pos) for every pos")
def _check_pe_shift_matrix(answer: Any) -> str | None:
    """``answer(k, d_model)`` must return a (d_model, d_model) M_k that shifts every row of PE by k."""
    _require_callable(answer, "shift_matrix(k, d_model)")
    for k, d_model in [(1, 8), (3, 8), (0, 8), (5, 16), (-2, 8), (17, 32)]:
        m = _as_array(_call(answer, k, d_model), f"shift_matrix({k}, {d_model})")
        if m.shape != (d_model, d_model):
            raise AssertionError(
                f"shift_matrix({k}, {d_model}) has shape {m.shape}; expected ({d_model}, {d_model})"
            )
        pe = sinusoidal_positional_encoding(300, d_model).double().numpy()  # (300, d_model)
        start = max(0, -k)
        pos = np.arange(start, 300 - max(k, 0))
        shifted = pe[pos] @ m.T  # row r is M_k · PE(pos_r)
        err = np.abs(shifted - pe[pos + k]).max(axis=1)
        if err.max() > 1e-4:
            first = int(np.argmax(err > 1e-4))  # the first position where the shift fails
            p = int(pos[first])
            hint = ""
            if k != 0 and np.allclose(m, np.eye(d_model), atol=1e-4):
                hint = " Your matrix is the identity, which is M_0; M_k must move PE by k positions."
            elif k != 0 and np.allclose(m, _shift_matrix(-k, d_model), atol=1e-4):
                hint = (" Your matrix shifts by -k (it is the transpose of M_k): check the signs of the "
                        "sin terms; sin(a + b) = sin a cos b + cos a sin b.")
            elif np.allclose(np.diag(m), np.diag(_shift_matrix(k, d_model)), atol=1e-4):
                hint = " The diagonal (the cos terms) is right; look at the sin terms beside it."
            raise AssertionError(
                f"for k={k}, d_model={d_model}: M_k · PE({p}) = {_fmt(shifted[first])}; "
                f"expected PE({p + k}) = {_fmt(pe[p + k])}.{hint}"
            )
    return ("M_k depends on the offset k only, never on pos: a rotation by the angle k·ω_i in each "
            "(sin, cos) pair, so 'k positions later' is one fixed linear map.")


def _encoder_input_variants(emb: torch.Tensor) -> dict[str, np.ndarray]:
    d_model, seq = emb.size(-1), emb.size(-2)
    pe = sinusoidal_positional_encoding(seq, d_model).double()
    e = emb.double()
    root = math.sqrt(d_model)
    return {
        "you forgot to multiply the embeddings by √d_model": (e + pe).numpy(),
        "you multiplied by d_model; the factor is √d_model": (e * d_model + pe).numpy(),
        "you scaled after adding PE; scale the embeddings only, then add PE": ((e + pe) * root).numpy(),
        "you scaled the positional encoding instead of the embeddings": (e + pe * root).numpy(),
        "you divided by √d_model; multiply instead": (e / root + pe).numpy(),
    }


@exercise("encoder_input", chapter=_CHAPTER_PE,
          summary="encoder_input(emb): embeddings (batch, seq, d_model) scaled by √d_model plus PE")
def _check_encoder_input(answer: Any) -> str | None:
    """``answer(emb)`` must return emb·√d_model + PE[:seq], as the Transformer's embedding layer does."""
    _require_callable(answer, "encoder_input(emb)")
    gen = torch.Generator().manual_seed(0)
    for batch, seq, d_model in [(1, 4, 8), (2, 5, 32), (3, 1, 16)]:
        emb = torch.randn(batch, seq, d_model, generator=gen) * d_model**-0.5
        with torch.no_grad():
            expected = PositionalEncoding(d_model, max_len=seq)(emb * math.sqrt(d_model)).double().numpy()
        got = _as_array(_call(answer, emb.clone()), f"encoder_input of a {tuple(emb.shape)} tensor")
        if got.shape != expected.shape:
            raise AssertionError(
                f"for emb of shape {tuple(emb.shape)} your output has shape {got.shape}; expected "
                f"{expected.shape} (the same shape as emb)"
            )
        if not np.allclose(got, expected, atol=1e-4, rtol=1e-5):
            hint = _diagnose(got, _encoder_input_variants(emb), atol=1e-4)
            raise AssertionError(
                f"for emb of shape {tuple(emb.shape)} your first row is {_fmt(got[0, 0])}; expected "
                f"{_fmt(expected[0, 0])}.{hint}"
            )
    return ("With embeddings initialised at std d_model^-0.5, the scaled embedding and PE both have "
            "coordinates of order 1, so neither drowns the other.")
