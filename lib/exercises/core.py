"""The registry of exercises and the helpers that checkers use (``lib/exercises/<chapter>.py`` import them from here).

``lib.exercises`` (the package's ``__init__``) re-exports every name of this module and imports the chapters'
checker modules; those import from this module, never from the ``__init__``, so that no import cycle runs through
the package. Readers call :func:`lib.exercises.check`; see the package's docstring for how to add an exercise.
"""

from __future__ import annotations

import dis
import inspect
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

# The checkers' private helpers (_call, _fmt, _as_array, ...) are imported by name, not through __all__.
__all__ = ["Checker", "Exercise", "EXERCISES", "exercise", "list_exercises"]

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


class _NotSolved(Exception):
    """The reader's function is still the starter's placeholder (its body is ``...``, or it returned ``...``).

    Not an AssertionError and not an :class:`_AnswerRaised`, so that a checker's own ``except`` clauses
    let it through to :func:`check`, which reports ⏳.
    """

    def __init__(self, function_name: str) -> None:
        super().__init__(function_name)
        self.function_name = function_name


def _is_placeholder(fn: Any) -> bool:
    """True for a function whose body does nothing: only a docstring and ``...`` (or ``pass``).

    Such a function returns None, like one that forgot its ``return``; its bytecode tells the two apart
    (it only returns the constant None). Decorators that use ``functools.wraps`` (``@torch.no_grad()``) are
    looked through.
    """
    try:
        fn = inspect.unwrap(fn)
    except ValueError:  # a cycle of __wrapped__
        return False
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    ops = [
        (ins.opname, ins.argval)
        for ins in dis.get_instructions(code)
        if ins.opname not in ("RESUME", "NOP", "CACHE", "COPY_FREE_VARS", "MAKE_CELL")
    ]
    return ops in ([("LOAD_CONST", None), ("RETURN_VALUE", None)], [("RETURN_CONST", None)])


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call the reader's function; an exception it raises becomes :class:`_AnswerRaised`.

    Raises:
        _AnswerRaised: the reader's function raised (reported by :func:`check`).
        _NotSolved: it returned ``...``, or its body is still the starter's ``...`` (only a docstring and
            ``...``); :func:`check` prints ⏳.
        AssertionError: it returned None from a body that does something (a forgotten ``return``).
    """
    try:
        result = fn(*args)
    except Exception as err:  # broad on purpose: any error of the reader's code is reported, not raised
        raise _AnswerRaised(err) from err
    if result is Ellipsis or (result is None and _is_placeholder(fn)):
        name = getattr(fn, "__name__", "")
        raise _NotSolved(name if name.isidentifier() else "your function")
    if result is None:
        raise AssertionError(f"your function returned {result!r} — did you forget the `return` statement?")
    return result


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
