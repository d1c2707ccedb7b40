"""Checkable exercises: ``check("pe_row", my_function)`` prints one friendly line and returns True/False.

Every chapter ends with exercises. A reader writes an answer (a function or a value) and calls
:func:`check` with the exercise's name; the registered checker compares the answer with ``lib`` on a
few inputs, including the edge the exercise is about, and :func:`check` prints one line::

    ✅ pe_row: correct. <a short remark>
    ❌ pe_row: for pos=1, d_model=8 your row is [...]; expected [...]. It looks like ...
    ⏳ pe_row: not solved yet — replace the ... with your answer
    ⏳ pe_row: not solved yet — fill in the body of pe_row

The last line is for a function whose body is still ``...`` (the starter cells of the student edition,
``lib.classroom.student``, write ``def pe_row(pos, d_model): ...``) or that returns ``...``: not written yet,
not wrong. A function whose body does something but returns None is told that it forgot its ``return``.

A wrong answer never raises: an exception from the reader's function is reported on the ❌ line.
Only a programming error raises, e.g. an unknown exercise name (:class:`ValueError`).

A reader's function cannot break the checker or the notebook (see :func:`lib.exercises.core.call_answer`):

- it gets deep copies of its arguments, so an answer that changes them in place (zeroes a tensor, changes
  the shipped model's weights) cannot make a later, correct answer fail;
- it runs at most ``lib.exercises.core.TIME_LIMIT_S`` = 20 s per call (where a ``SIGALRM`` timer exists: Linux,
  macOS, the main thread): ``❌ name: ⏱ your function did not return within 20 s ...``;
- ``sys.exit()`` is reported (``❌ name: your function called sys.exit() ...``); only KeyboardInterrupt (the
  reader pressing stop) goes through.

When the checker itself cannot run (the shipped model or a package is missing: an installation problem, not
the reader's), the line says so and :func:`check` returns False::

    ⚠ cap_greedy_decode: the checker could not run: loading the shipped model ... failed (FileNotFoundError:
    ...) (this is not about your answer; check the installation: ...)

Adding an exercise (one module per chapter, ``lib/exercises/<chapter>.py``, imported at the end of
this file). The chapter's module imports the ``exercise`` decorator and the checkers' helpers (``call_answer``,
``fmt``, ``as_array``, ``as_number``, ``diagnose``, ``require_callable``, ``checker_setup``, ``AnswerRaised``) from
:mod:`lib.exercises.core`, never from this package, so that no import cycle runs through it::

    import numpy as np

    from .core import as_array, call_answer, exercise, fmt

    @exercise("softmax_row", chapter="preliminaries", summary="softmax(z) of a 1-D list of scores")
    def _check_softmax_row(answer) -> str | None:
        got = as_array(call_answer(answer, [0.5, 0.8, 0.6]), "softmax([0.5, 0.8, 0.6])")
        if not np.allclose(got, [0.28943, 0.39069, 0.31987], atol=1e-5):
            raise AssertionError(f"your softmax is {fmt(got)}; expected [0.28943, 0.39069, 0.31987]")
        return "an optional remark shown after 'correct.'"

A checker raises ``AssertionError("helpful message")`` when the answer is wrong (use ``raise``, not a bare
``assert``, which ``python -O`` removes). It calls the reader's function through
:func:`lib.exercises.core.call_answer`, so that an exception the reader's code raises is reported as "your function
raised ...", not as a failure of the checker, a function that forgot its ``return`` (returns None) is named as
such, and a function that returns ``...`` (a body not filled in yet) is reported as ⏳ "not solved yet".
Code that loads what the checker needs (a model, data) runs before the first call of the reader's function,
inside ``with checker_setup("what it does", "what to check in the installation"):``, so that its failure is reported
with ⚠ as the checker's (:class:`lib.exercises.core.CheckerSetupError`), not with ❌ as the reader's.

Source: the exercise/solution pattern of the QuantEcon lectures (``sphinx-exercise``).
"""

from __future__ import annotations

from typing import Any

from .core import (
    EXERCISES,
    AnswerRaised,
    AnswerStopped,
    CheckerSetupError,
    Exercise,
    NotSolved,
    exercise,
    list_exercises,
)

__all__ = ["Exercise", "EXERCISES", "exercise", "check", "list_exercises", "progress"]


def check(name: str, answer: Any) -> bool:
    """Check a reader's answer to exercise ``name`` and print one line saying how it went.

    Args:
        name: the exercise's name, e.g. ``"pe_row"`` (see :func:`list_exercises`).
        answer: the reader's function or value. ``None`` or ``...`` means "not solved yet", and so does a
            function that returns ``...`` (a body not filled in yet, e.g. ``def pe_row(pos, d_model): ...``).

    Returns:
        True when the answer is correct, False otherwise (also when the reader's function raised, ran past the
        time limit or called ``sys.exit()``, when the exercise is not solved yet, and when the checker itself
        could not run: ⚠).

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
    except NotSolved as err:
        return f"⏳ {name}: not solved yet — fill in the body of {err.function_name}"
    except CheckerSetupError as err:
        return (
            f"⚠ {name}: the checker could not run: {err.problem} (this is not about your answer; "
            f"check the installation: {err.fix})"
        )
    except AnswerStopped as err:
        return f"❌ {name}: {err.message}"
    except AnswerRaised as err:
        e = err.original
        return f"❌ {name}: your function raised {type(e).__name__}: {e}"
    except AssertionError as err:
        return f"❌ {name}: {err}"
    except Exception as err:  # broad on purpose: an answer of an unexpected type must not crash the page
        return f"❌ {name}: could not check your answer ({type(err).__name__}: {err})"
    return f"✅ {name}: correct." + (f" {remark}" if remark else "")


# The latest line check() printed for each exercise in this Python session (this notebook's kernel).
RESULTS: dict[str, str] = {}


def progress(chapter: str | None = None) -> dict[str, str]:
    """Print one line per exercise, ✅ / ❌ / ⏳ / ⚠ as last checked in this session, · if never checked.

    For a class: students run ``progress()`` in the last cell of a chapter and hand in the notebook (or copy
    the lines into a form); the teacher sees at a glance what each solved.

    Args:
        chapter: a chapter's file stem (``"positional_encoding"``); None: every chapter with at least one
            exercise checked in this session.

    Returns:
        ``{exercise name: status}`` with status ``"✅"``, ``"❌"``, ``"⏳"``, ``"⚠"`` (the checker could not run)
        or ``"·"``, in registration order.

    Raises:
        ValueError: ``chapter`` has no registered exercises (the message lists the chapters that do).
    """
    chapters = list(dict.fromkeys(ex.chapter for ex in EXERCISES.values()))
    if chapter is not None and chapter not in chapters:
        raise ValueError(f"no exercises for chapter {chapter!r}; chapters with exercises: {', '.join(chapters)}")
    wanted = (
        [chapter]
        if chapter is not None
        else [c for c in chapters if any(ex.chapter == c and ex.name in RESULTS for ex in EXERCISES.values())]
    )
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


# Each chapter's checkers live in their own module and register themselves on import (E402: after the
# definitions above; F401: imported for that side effect). The order is the order of EXERCISES, of
# list_exercises() and of progress(), so isort must not sort these lines.
# isort: off
from . import positional_encoding  # noqa: E402, F401  (registers pe_row, pe_norm, ...)
from . import multihead_attention  # noqa: E402, F401
from . import transformer  # noqa: E402, F401
from . import preliminaries  # noqa: E402, F401
from . import self_attention  # noqa: E402, F401
from . import bahdanau_attention  # noqa: E402, F401
from . import seq2seq_bottleneck  # noqa: E402, F401
from . import efficient_attention  # noqa: E402, F401
from . import bert_gpt  # noqa: E402, F401
from . import capstone  # noqa: E402, F401
from . import decoding  # noqa: E402, F401
from . import modern_transformer  # noqa: E402, F401
# isort: on
