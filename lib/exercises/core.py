"""The registry of exercises and the helpers that checkers use (``lib/exercises/<chapter>.py`` import them from here).

The checker-writing API: :func:`exercise` registers a checker; :func:`call_answer` calls the reader's function
safely; :func:`fmt`, :func:`as_array`, :func:`as_number`, :func:`require_callable` and :func:`diagnose` turn an
answer into numbers and a wrong one into a hint; :func:`checker_setup` marks the checker's own set-up;
:class:`AnswerRaised`, :class:`AnswerStopped`, :class:`NotSolved` and :class:`CheckerSetupError` are how an answer
(or the checker) ended. ``lib.exercises`` (the package's ``__init__``) imports the chapters' checker modules; those
import from this module, never from the ``__init__``, so that no import cycle runs through the package. Readers
call :func:`lib.exercises.check`; see the package's docstring for how to add an exercise.
"""

from __future__ import annotations

import contextlib
import copy
import dis
import inspect
import numbers
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = [
    "Checker",
    "CheckerSetupError",
    "Exercise",
    "EXERCISES",
    "TIME_LIMIT_S",
    "exercise",
    "list_exercises",
    "AnswerRaised",
    "AnswerStopped",
    "NotSolved",
    "checker_setup",
    "call_answer",
    "observed",
    "ANSWER_HOOK",
    "fmt",
    "as_array",
    "as_number",
    "require_callable",
    "diagnose",
    "one_thread",
]

Checker = Callable[[Any], "str | None"]

#: Seconds one call of the reader's function may run before :func:`lib.exercises.check` gives up on it and prints
#: "❌ ... ⏱ your function did not return within 20 s" (an endless loop must not hang the notebook). A teacher may
#: change it for a session: ``lib.exercises.core.TIME_LIMIT_S = 60``; None or 0: no limit. Enforced with a
#: ``SIGALRM`` timer, so only where there is one and only in the main thread (Linux and macOS, a notebook's
#: kernel); on Windows, or when ``check`` runs in another thread, the reader's function runs without a limit.
TIME_LIMIT_S: float | None = 20.0

#: None in normal use. The classroom grader (:mod:`lib.classroom.answers`) sets it while a checker runs, to an object
#: with ``call(fn, args, copy_args, real)`` and ``observe(what, measure)``: inside the student's sandbox it records
#: what the reader's function returned on each input (``real`` is the call :func:`call_answer` makes without a hook),
#: in the grader it replays those records, so that the verdict is made outside the student's kernel.
ANSWER_HOOK: Any = None


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


class CheckerSetupError(Exception):
    """The checker itself could not run (a missing model file or data set, a package that does not import).

    Not the reader's fault: :func:`lib.exercises.check` prints it as ``⚠ name: the checker could not run: ...
    (this is not about your answer; check the installation: ...)`` and returns False. Checkers raise it through
    :func:`checker_setup`, around the code that loads what they need, before they call the reader's function.

    Args:
        problem: what failed and why, e.g. ``"loading the shipped model failed (FileNotFoundError: ...)"``.
        fix: what to check in the installation, e.g. ``"install the book with pip install -e . from its clone"``.
    """

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


class AnswerRaised(Exception):
    """The reader's function raised; carries the original exception.

    :func:`call_answer` raises it; :func:`lib.exercises.check` prints ``❌ name: your function raised ...``. A checker
    that expects the reader's function to raise (a ValueError for bad sizes) catches it and looks at ``original``.

    Args:
        original: the exception the reader's function raised.
    """

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


class AnswerStopped(Exception):
    """The reader's function did not finish normally: it ran past :data:`TIME_LIMIT_S` or called ``sys.exit()``.

    Not an :class:`AnswerRaised` (which checkers catch to look at the exception, e.g. an expected ValueError) and
    not an AssertionError, so that it reaches :func:`lib.exercises.check`, which prints ``❌ name: <message>``.

    Args:
        message: the line's text after the exercise's name.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotSolved(Exception):
    """The reader's function is still the starter's placeholder (its body is ``...``, or it returned ``...``).

    Not an AssertionError and not an :class:`AnswerRaised`, so that a checker's own ``except`` clauses
    let it through to :func:`lib.exercises.check`, which reports ⏳.

    Args:
        function_name: the name of the reader's function, as the ⏳ line names it ("fill in the body of ...").
    """

    def __init__(self, function_name: str) -> None:
        super().__init__(function_name)
        self.function_name = function_name


class _TimeUp(BaseException):
    """Raised by the SIGALRM handler of :func:`_time_limit` inside the reader's function.

    A BaseException, so that an ``except Exception:`` in the reader's code does not swallow it.
    """


@dataclass
class _Timer:
    """What :func:`_time_limit` yields: whether the limit was enforced and whether it ran out."""

    enforced: bool = False
    fired: bool = False


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[_Timer]:
    """Raise :class:`_TimeUp` in the code of the ``with`` block once it has run ``seconds`` seconds.

    Uses ``signal.setitimer(signal.ITIMER_REAL, ...)`` and a ``SIGALRM`` handler, which only exist on Unix and only
    work in the main thread; elsewhere (Windows, a thread) and for ``seconds`` None or ≤ 0 the block runs without a
    limit (``enforced`` stays False). Afterwards the previous SIGALRM handler is back, and a timer that was already
    running (another tool's) is re-armed with the time it had left, less the time the block took (it fires at once
    if that has passed). The handler runs between Python bytecodes: one long C call (a huge matrix product) is not
    interrupted before it returns.
    """
    timer = _Timer()
    if (
        not seconds
        or seconds <= 0
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield timer
        return

    def on_alarm(signum: int, frame: Any) -> None:
        if timer.enforced and not timer.fired:
            timer.fired = True
            raise _TimeUp

    previous = signal.signal(signal.SIGALRM, on_alarm)
    start = time.monotonic()
    timer.enforced = True
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield timer
    finally:
        timer.enforced = False  # an alarm that is already pending does nothing now
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if outer_delay > 0:
            left = outer_delay - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), outer_interval)


@contextlib.contextmanager
def checker_setup(what: str, fix: str) -> Iterator[None]:
    """Turn an exception of the checker's own set-up (loading a model, data, a package) into :class:`CheckerSetupError`.

    Wrap the code that prepares the expected values, before the reader's function is called::

        with checker_setup("loading the shipped model", "install the book with `pip install -e .`"):
            run = _shipped()

    Args:
        what: what the block does, e.g. ``"loading the shipped model (models/de-en)"``.
        fix: what to check in the installation; shown after "check the installation:".

    Yields:
        Nothing; the block runs as it is.

    Raises:
        CheckerSetupError: the block raised an Exception (its type and message are in the problem).
    """
    try:
        yield
    except (CheckerSetupError, AnswerRaised, AnswerStopped, NotSolved):
        raise  # already classified (a reader's function called inside the block by mistake stays the reader's)
    except Exception as err:
        raise CheckerSetupError(f"{what} failed ({type(err).__name__}: {err})", fix) from err


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


def _timed_out(limit: float | None) -> AnswerStopped:
    """The verdict for a reader's function that ran past ``limit`` seconds."""
    return AnswerStopped(
        f"⏱ your function did not return within {limit:g} s. Is there a loop that never ends (a `while` whose "
        "condition stays true, a counter that is never increased)?"
    )


def call_answer(fn: Callable[..., Any], *args: Any, copy_args: bool = True) -> Any:
    """Call the reader's function on private copies of ``args``, with a time limit, and classify how it ended.

    (Through :data:`ANSWER_HOOK` when the classroom grader set one.)

    The reader's code can neither change the checker's objects nor stop the notebook:

    - it gets deep copies (``copy.deepcopy``, one for all ``args`` together, so two arguments that are one object
      stay one object): an answer that zeroes a tensor in place, appends to a list or changes a model's weights
      changes its own copies, never the inputs the checker reuses for later cases or for its expected values;
    - it runs for at most :data:`TIME_LIMIT_S` seconds (see :func:`_time_limit` for where that is enforced);
    - an exception it raises, ``sys.exit()`` (SystemExit) included, is reported, never propagated. Only
      KeyboardInterrupt (the reader pressing stop) goes through.

    Args:
        fn: the reader's function.
        *args: its arguments.
        copy_args: False when the checker passes objects it made for this one call and looks at afterwards
            (the model whose training mode it inspects) or when copying would distort a measurement (the peak
            memory of the call).

    Returns:
        What ``fn`` returned (never None, never ``...``).

    Raises:
        AnswerRaised: the reader's function raised an Exception (reported by :func:`check`).
        AnswerStopped: it did not return within :data:`TIME_LIMIT_S` seconds, or it called ``sys.exit()``.
        NotSolved: it returned ``...``, or its body is still the starter's ``...`` (only a docstring and
            ``...``); :func:`check` prints ⏳.
        AssertionError: it returned None from a body that does something (a forgotten ``return``).
        TypeError: ``copy_args`` is True and an argument cannot be deep-copied (a bug of the checker).
    """
    if ANSWER_HOOK is not None:
        return ANSWER_HOOK.call(fn, args, copy_args, _call_answer)
    return _call_answer(fn, *args, copy_args=copy_args)


def observed(what: str, measure: Callable[[], Any]) -> Any:
    """``measure()``: something a checker measures about the reader's function besides what it returns.

    A checker wraps such a measurement (the peak memory of a call, the model's training mode after it) in this, so
    that the classroom grader records it where the reader's code runs and replays it where the verdict is made
    (:data:`ANSWER_HOOK`); without the grader it is ``measure()``.

    Args:
        what: what is measured, e.g. ``"peak tensor bytes"`` (the record's key, with the order of the calls).
        measure: a function of no arguments that measures it (plain data: a number, a bool).

    Returns:
        What ``measure()`` returned (or the recorded value, when the grader replays).
    """
    if ANSWER_HOOK is not None:
        return ANSWER_HOOK.observe(what, measure)
    return measure()


def _call_answer(fn: Callable[..., Any], *args: Any, copy_args: bool = True) -> Any:
    """:func:`call_answer` without :data:`ANSWER_HOOK`."""
    if copy_args:
        try:
            args = copy.deepcopy(args)
        except Exception as err:  # a checker's bug (an object deepcopy cannot copy), found by its tests
            raise TypeError(
                f"call_answer could not deep-copy the arguments ({type(err).__name__}: {err}); make fresh ones for "
                "this call and pass copy_args=False"
            ) from err
    limit = TIME_LIMIT_S
    timer = _Timer()  # rebound to the one _time_limit yields
    try:
        with _time_limit(limit) as timer:
            result = fn(*args)
    except _TimeUp:
        raise _timed_out(limit) from None
    except SystemExit as err:
        code = f": {err}" if str(err) else ""
        raise AnswerStopped(
            f"your function called sys.exit() (SystemExit{code}); return the result instead: "
            "sys.exit() would stop the notebook"
        ) from None
    except Exception as err:  # broad on purpose: any error of the reader's code is reported, not raised
        if timer.fired:  # the reader's code caught the time-out and raised something else
            raise _timed_out(limit) from None
        raise AnswerRaised(err) from err
    if timer.fired:  # the reader's code caught the time-out (a bare `except:`) and returned
        raise _timed_out(limit)
    if result is Ellipsis or (result is None and _is_placeholder(fn)):
        name = getattr(fn, "__name__", "")
        raise NotSolved(name if name.isidentifier() else "your function")
    if result is None:
        raise AssertionError(f"your function returned {result!r} — did you forget the `return` statement?")
    return result


# --------------------------------------------------------------------------------------------
# Helpers for checkers
# --------------------------------------------------------------------------------------------


def fmt(values: Any, digits: int = 5, max_items: int = 8) -> str:
    """A short readable vector for a checker's message: ``[0.84147, 0.54030, ...]``.

    Args:
        values: numbers of any shape (a list, numpy array or tensor on the CPU), read flattened.
        digits: digits after the decimal point.
        max_items: how many values to write; more are summed up as ``… (n values)``.

    Returns:
        The text, in square brackets.
    """
    flat = np.asarray(values, dtype=float).ravel()
    items = [f"{v:.{digits}f}" for v in flat[:max_items]]
    if flat.size > max_items:
        items.append(f"… ({flat.size} values)")
    return "[" + ", ".join(items) + "]"


def as_array(x: Any, what: str) -> np.ndarray:
    """The reader's answer as a float64 numpy array (from a list, tuple, numpy array or tensor).

    Args:
        x: the answer.
        what: what it is, for the message, e.g. ``"pe_row(1, 8)"``.

    Returns:
        The array (a tensor is detached and copied to the CPU).

    Raises:
        AssertionError: ``x`` is not numbers (the message names ``what`` and the type it got).
    """
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise AssertionError(
            f"{what} should be numbers (a list, numpy array or tensor), got {type(x).__name__}"
        ) from None


def as_number(x: Any, what: str) -> float:
    """The reader's answer as a float (from a Python number, a numpy scalar or a one-element tensor or array).

    Args:
        x: the answer.
        what: what it is, for the message.

    Returns:
        The number.

    Raises:
        AssertionError: ``x`` is a bool or not a single number (the message names ``what``).
    """
    if isinstance(x, bool):
        raise AssertionError(f"{what} should be a number, got {x!r}")
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, torch.Tensor) and x.numel() == 1:
        return float(x.item())
    if isinstance(x, np.ndarray) and x.size == 1:
        return float(x.item())
    raise AssertionError(f"{what} should be a single number, got {type(x).__name__}")


def require_callable(answer: Any, signature: str) -> None:
    """Check that the reader's answer is a function before a checker calls it.

    Args:
        answer: the answer.
        signature: the function the exercise asks for, for the message, e.g. ``"pe_row(pos, d_model)"``.

    Raises:
        AssertionError: ``answer`` is not callable (the message names ``signature`` and what it got).
    """
    if not callable(answer):
        raise AssertionError(f"expected a function {signature}, got {type(answer).__name__} {answer!r:.40}")


def diagnose(got: np.ndarray, variants: dict[str, np.ndarray], atol: float) -> str:
    """Name a known mistake: the hint a checker appends when the reader's result equals a known wrong result.

    Args:
        got: the reader's result.
        variants: ``{mistake: its result}``, e.g. ``{"you used sin for every column": array}``; the first that
            matches is named.
        atol: the absolute tolerance of the comparison.

    Returns:
        ``" It looks like <mistake>."`` for the first variant of the same shape within ``atol``, else ``""``.
    """
    for mistake, wrong in variants.items():
        if wrong.shape == got.shape and np.allclose(got, wrong, atol=atol, rtol=0.0):
            return f" It looks like {mistake}."
    return ""


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run the block on one torch thread, then restore the reader's setting.

    Checkers that run small models step by step use it: a second thread gains little there, and on a busy CPU
    threads that wait for each other make each step many times slower.

    Returns:
        A context manager: inside it torch uses one thread; on leaving, the earlier number again.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
