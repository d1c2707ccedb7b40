"""Checkable exercises: ``check("pe_row", my_function)`` prints one friendly line and returns True/False.

Every chapter ends with exercises. A reader writes an answer (a function or a value) and calls
:func:`check` with the exercise's name; the registered checker compares the answer with ``lib`` on a
few inputs, including the edge the exercise is about, and :func:`check` prints one line::

    ✅ pe_row: correct. <a short remark>
    ❌ pe_row: for pos=1, d_model=8 your row is [...]; expected [...]. It looks like ...
    ⏳ pe_row: not solved yet — replace the ... with your answer
    ⏳ pe_row: not solved yet — fill in the body of pe_row

The last line is for a function whose body is still ``...`` (the starter cells of the student edition,
``tools/student.py``, write ``def pe_row(pos, d_model): ...``) or that returns ``...``: not written yet,
not wrong. A function whose body does something but returns None is told that it forgot its ``return``.

A wrong answer never raises: an exception from the reader's function is reported on the ❌ line.
Only a programming error raises, e.g. an unknown exercise name (:class:`ValueError`).

Adding an exercise (one module per chapter, ``lib/exercises/<chapter>.py``, imported at the end of
this file)::

    @exercise("softmax_row", chapter="preliminaries", summary="softmax(z) of a 1-D list of scores")
    def _check_softmax_row(answer) -> str | None:
        got = _as_array(_call(answer, [0.5, 0.8, 0.6]), "softmax([0.5, 0.8, 0.6])")
        if not np.allclose(got, [0.28943, 0.39069, 0.31987], atol=1e-5):
            raise AssertionError(f"your softmax is {_fmt(got)}; expected [0.28943, 0.39069, 0.31987]")
        return "an optional remark shown after 'correct.'"

A checker raises ``AssertionError("helpful message")`` when the answer is wrong (use ``raise``, not a bare
``assert``, which ``python -O`` removes). It calls the reader's function through :func:`_call`, so that an
exception the reader's code raises is reported as "your function raised ...", not as a failure of the checker,
a function that forgot its ``return`` (returns None) is named as such, and a function that returns ``...``
(a body not filled in yet) is reported as ⏳ "not solved yet".

Source: the exercise/solution pattern of the QuantEcon lectures (``sphinx-exercise``).
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


__all__ = ["Exercise", "EXERCISES", "exercise", "check", "list_exercises", "progress"]

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
    ops = [(ins.opname, ins.argval) for ins in dis.get_instructions(code)
           if ins.opname not in ("RESUME", "NOP", "CACHE", "COPY_FREE_VARS", "MAKE_CELL")]
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
    except Exception as err:  # noqa: BLE001 - any error of the reader's code is reported, not raised
        raise _AnswerRaised(err) from err
    if result is Ellipsis or (result is None and _is_placeholder(fn)):
        name = getattr(fn, "__name__", "")
        raise _NotSolved(name if name.isidentifier() else "your function")
    if result is None:
        raise AssertionError(f"your function returned {result!r} — did you forget the `return` statement?")
    return result


def check(name: str, answer: Any) -> bool:
    """Check a reader's answer to exercise ``name`` and print one line saying how it went.

    Args:
        name: the exercise's name, e.g. ``"pe_row"`` (see :func:`list_exercises`).
        answer: the reader's function or value. ``None`` or ``...`` means "not solved yet", and so does a
            function that returns ``...`` (a body not filled in yet, e.g. ``def pe_row(pos, d_model): ...``).

    Returns:
        True when the answer is correct, False otherwise (also when the reader's function raised, and when
        the exercise is not solved yet).

    Raises:
        ValueError: ``name`` is not a registered exercise (the message lists the known names).
    """
    if name not in EXERCISES:
        known = ", ".join(sorted(EXERCISES)) or "(none)"
        raise ValueError(f"unknown exercise {name!r}; known exercises: {known}")
    line = _verdict(name, answer)
    print(line)
    RESULTS[name] = line
    return line.startswith("✅")


def _verdict(name: str, answer: Any) -> str:
    """The one line :func:`check` prints for ``answer``."""
    if answer is None or answer is Ellipsis:
        return f"⏳ {name}: not solved yet — replace the ... with your answer"
    try:
        remark = EXERCISES[name].checker(answer)
    except _NotSolved as err:
        return f"⏳ {name}: not solved yet — fill in the body of {err.function_name}"
    except _AnswerRaised as err:
        e = err.original
        return f"❌ {name}: your function raised {type(e).__name__}: {e}"
    except AssertionError as err:
        return f"❌ {name}: {err}"
    except Exception as err:  # noqa: BLE001 - an answer of an unexpected type must not crash the page
        return f"❌ {name}: could not check your answer ({type(err).__name__}: {err})"
    return f"✅ {name}: correct." + (f" {remark}" if remark else "")


# The latest line check() printed for each exercise in this Python session (this notebook's kernel).
RESULTS: dict[str, str] = {}


def progress(chapter: str | None = None) -> dict[str, str]:
    """Print one line per exercise, ✅ / ❌ / ⏳ as last checked in this session, · if never checked.

    For a class: students run ``progress()`` in the last cell of a chapter and hand in the notebook (or copy
    the lines into a form); the teacher sees at a glance what each solved.

    Args:
        chapter: a chapter's file stem (``"positional_encoding"``); None: every chapter with at least one
            exercise checked in this session.

    Returns:
        ``{exercise name: status}`` with status ``"✅"``, ``"❌"``, ``"⏳"`` or ``"·"``, in registration order.

    Raises:
        ValueError: ``chapter`` has no registered exercises (the message lists the chapters that do).
    """
    chapters = list(dict.fromkeys(ex.chapter for ex in EXERCISES.values()))
    if chapter is not None and chapter not in chapters:
        raise ValueError(f"no exercises for chapter {chapter!r}; chapters with exercises: {', '.join(chapters)}")
    wanted = [chapter] if chapter is not None else [c for c in chapters if any(
        ex.chapter == c and ex.name in RESULTS for ex in EXERCISES.values())]
    status: dict[str, str] = {}
    for ch in wanted:
        exercises = list_exercises(ch)
        solved = sum(RESULTS.get(ex.name, "").startswith("✅") for ex in exercises)
        print(f"{ch}: {solved} of {len(exercises)} solved")
        for ex in exercises:
            mark = RESULTS[ex.name][0] if ex.name in RESULTS else "·"
            status[ex.name] = mark
            print(f"  {mark} {ex.name}: {ex.summary}")
    if not wanted:
        print("no exercise checked yet in this session")
    return status


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


# Each chapter's checkers live in their own module and register themselves on import.
from . import positional_encoding  # noqa: E402,F401  (registers pe_row, pe_norm, ...)
from . import multihead_attention  # noqa: E402,F401
from . import transformer  # noqa: E402,F401
from . import preliminaries  # noqa: E402,F401
from . import self_attention  # noqa: E402,F401
from . import bahdanau_attention  # noqa: E402,F401
from . import seq2seq_bottleneck  # noqa: E402,F401
from . import efficient_attention  # noqa: E402,F401
from . import bert_gpt  # noqa: E402,F401
from . import capstone  # noqa: E402,F401
