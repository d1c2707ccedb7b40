"""A reader's answer cannot break the checkers (lib.exercises.core.call_answer) or the notebook's flow.

- an answer that changes its inputs in place (a tensor zeroed, a list cleared, the shipped model's weights
  zeroed) changes its own deep copies: the next, correct answer still gets ✅;
- an endless loop gets a ⏱ ❌ line after ``lib.exercises.core.TIME_LIMIT_S`` seconds (1 s here), even when the
  answer catches the time-out, and the SIGALRM handler and timer that were there before are back afterwards;
- ``sys.exit()`` is a ❌ line, not the end of the notebook; KeyboardInterrupt still stops;
- when the checker's own set-up fails (the shipped model missing, as after a non-editable install), the line
  says ⚠ and that it is not about the answer.

The time-out tests run under a watchdog (an outer SIGALRM timer of 10 s), so that code without a time limit fails
them instead of hanging; it also checks that the outer timer survives the checker's own.
"""

import math
import signal
import sys
import threading
import time

import pytest
import torch

from lib import exercises
from lib.decode import greedy_decode
from lib.exercises import EXERCISES, check, core, exercise

# test_exercises.py gathers CASES (correct and wrong answers per exercise) from every
# test_exercises_*.py (this folder); this file registers no chapter exercise of its own.
CASES: dict = {}

needs_alarm = pytest.mark.skipif(
    not hasattr(signal, "setitimer"), reason="no SIGALRM timer on this platform (Windows): answers run without a limit"
)


def pe_norm_correct(d_model):
    return math.sqrt(d_model / 2)


# --- answers that change their inputs in place ------------------------------------------------------


@pytest.fixture
def shared_inputs_exercise():
    """An exercise whose checker passes the same tensor and list to every answer, with a fixed expected value."""
    name = "_test_shared_inputs"
    x = torch.ones(3)
    items = [1.0, 2.0, 3.0]

    @exercise(name, chapter="_tests", summary="total(x, items): sum(x) + sum(items)")
    def _checker(answer):
        value = float(core.call_answer(answer, x, items))
        if value != 9.0:
            raise AssertionError(f"your total is {value:g}; expected 9")

    try:
        yield name
    finally:
        del EXERCISES[name]


def test_an_answer_that_changes_its_inputs_cannot_fail_the_next_answer(shared_inputs_exercise, capsys):
    def vandal(x, items):
        x.zero_()  # in place: the checker's tensor, if it were not a copy
        items.clear()
        return 0.0

    assert check(shared_inputs_exercise, vandal) is False
    assert capsys.readouterr().out == f"❌ {shared_inputs_exercise}: your total is 0; expected 9\n"
    assert check(shared_inputs_exercise, lambda x, items: float(x.sum()) + sum(items)) is True


def test_an_answer_that_zeroes_the_shipped_model_cannot_fail_the_next_answer(capsys):
    from lib.exercises.capstone import _shipped

    before = {k: v.clone() for k, v in _shipped().model.state_dict().items()}

    @torch.no_grad()
    def vandal(model, src, max_len):
        for p in model.parameters():
            p.zero_()
        model.train()
        return [4, 5]

    assert check("cap_greedy_decode", vandal) is False
    assert capsys.readouterr().out.startswith("❌ cap_greedy_decode: ")
    assert check("cap_greedy_decode", lambda m, s, n: greedy_decode(m, s, max_len=n)) is True
    model = _shipped().model
    assert not model.training
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


# --- endless loops --------------------------------------------------------------------------------


class _WatchdogFired(BaseException):
    """The test's own outer timer ran out: the checker did not stop the answer."""


@pytest.fixture
def watchdog():
    """An outer SIGALRM timer (stands for another tool's): 10 s, then every 1 s; cancelled after the test.

    It repeats so that code without a time limit fails the tests even when the answer swallows one alarm.
    """

    def on_alarm(signum, frame):
        raise _WatchdogFired

    before = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 10.0, 1.0)
    try:
        yield on_alarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


@needs_alarm
def test_an_endless_loop_gets_a_time_out_verdict(watchdog, monkeypatch, capsys):
    monkeypatch.setattr(core, "TIME_LIMIT_S", 1.0, raising=False)  # raising=False: code without a limit fails, not errs

    def spin(d_model):
        while True:
            pass

    start = time.monotonic()
    assert check("pe_norm", spin) is False
    assert time.monotonic() - start < 3.0
    out = capsys.readouterr().out
    assert out.startswith("❌ pe_norm: ⏱ your function did not return within 1 s.") and out.count("\n") == 1
    # the outer timer and its handler are back, with the time they had left
    assert signal.getsignal(signal.SIGALRM) is watchdog
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    assert 5.0 < left <= 9.5 and interval == 1.0
    assert check("pe_norm", pe_norm_correct) is True


@needs_alarm
def test_an_answer_that_catches_the_time_out_still_gets_it(watchdog, monkeypatch, capsys):
    monkeypatch.setattr(core, "TIME_LIMIT_S", 1.0, raising=False)  # raising=False: code without a limit fails, not errs

    def sly(d_model):
        try:
            while True:
                pass
        except BaseException:  # the reader's code swallows everything, the time-out included
            return math.sqrt(d_model / 2)

    assert check("pe_norm", sly) is False
    assert capsys.readouterr().out.startswith("❌ pe_norm: ⏱ your function did not return within 1 s.")


@needs_alarm
def test_the_time_limit_leaves_no_handler_and_no_timer_behind(monkeypatch, capsys):
    monkeypatch.setattr(core, "TIME_LIMIT_S", 5.0)
    before = signal.getsignal(signal.SIGALRM)
    with core._time_limit(5.0) as timer:
        assert timer.enforced and signal.getsignal(signal.SIGALRM) is not before
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 5.0
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert check("pe_norm", pe_norm_correct) is True
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_outside_the_main_thread_answers_run_without_a_limit(capsys):
    results = {}

    def in_thread():
        with core._time_limit(1.0) as timer:
            results["enforced"] = timer.enforced
        results["check"] = check("pe_norm", pe_norm_correct)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(timeout=60)
    assert results == {"enforced": False, "check": True}


# --- sys.exit() and KeyboardInterrupt ---------------------------------------------------------------


def test_sys_exit_in_an_answer_is_a_cross_and_the_notebook_goes_on(capsys):
    def leave(d_model):
        sys.exit(3)

    def leave_quietly(d_model):
        sys.exit()

    assert check("pe_norm", leave) is False
    assert check("pe_norm", leave_quietly) is False
    assert capsys.readouterr().out == (
        "❌ pe_norm: your function called sys.exit() (SystemExit: 3); return the result instead: sys.exit() "
        "would stop the notebook\n"
        "❌ pe_norm: your function called sys.exit() (SystemExit); return the result instead: sys.exit() "
        "would stop the notebook\n"
    )


def test_sys_exit_goes_through_a_checker_that_expects_an_exception(capsys):
    # mha_d_k expects a ValueError for d_model = 512, num_heads = 6; its `except AnswerRaised` must not see this
    def d_k(d_model, num_heads):
        if d_model % num_heads:
            sys.exit("num_heads must divide d_model")
        return d_model // num_heads

    assert check("mha_d_k", d_k) is False
    out = capsys.readouterr().out
    assert out.startswith("❌ mha_d_k: your function called sys.exit() (SystemExit: num_heads must divide d_model)")


def test_keyboard_interrupt_still_stops_and_leaves_no_alarm_behind():
    # A guard, not a new behaviour: the reader pressing stop must stop the cell (the old code let it through too).
    before = signal.getsignal(signal.SIGALRM) if hasattr(signal, "SIGALRM") else None

    def interrupted(d_model):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check("pe_norm", interrupted)
    if hasattr(signal, "setitimer"):
        assert signal.getsignal(signal.SIGALRM) is before
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


# --- the checker's own set-up fails ---------------------------------------------------------------


@pytest.fixture
def capstone_caches():
    """Empty the capstone checker's caches of the shipped model before and after the test."""
    from lib.exercises import capstone

    capstone._shipped.cache_clear()
    capstone._greedy_case.cache_clear()
    try:
        yield
    finally:
        capstone._shipped.cache_clear()
        capstone._greedy_case.cache_clear()


def test_a_missing_shipped_model_is_the_installation_s_fault_not_the_answer_s(
    capstone_caches, monkeypatch, tmp_path, capsys
):
    from lib import checkpoint

    # a non-editable install: lib is a copy in site-packages, and models/ did not come with it
    monkeypatch.setattr(checkpoint, "SHIPPED_MODEL", tmp_path / "site-packages" / "models" / "de-en")
    calls = []

    def greedy(model, src, max_len):
        calls.append(max_len)
        return greedy_decode(model, src, max_len=max_len)

    exercises.RESULTS.clear()
    assert check("cap_greedy_decode", greedy) is False
    out = capsys.readouterr().out
    assert out.startswith(
        "⚠ cap_greedy_decode: the checker could not run: loading the shipped model and decoding the test sentences "
        "with it failed (FileNotFoundError: "
    )
    assert "(this is not about your answer; check the installation: " in out and "pip install -e ." in out
    assert "site-packages/models/de-en" in out and out.count("\n") == 1
    assert calls == []  # the set-up runs before the answer is called
    assert exercises.progress("capstone")["cap_greedy_decode"] == "⚠"

    monkeypatch.undo()  # the model is back: a failed load was not cached
    assert check("cap_greedy_decode", greedy) is True
    exercises.RESULTS.clear()


def test_any_set_up_failure_wrapped_in_setup_is_reported_with_a_warning(capsys):
    name = "_test_setup_fails"

    @exercise(name, chapter="_tests", summary="anything")
    def _checker(answer):
        with core.checker_setup("importing the reference package", "pip install the book's requirements"):
            raise ImportError("No module named 'sacrebleu'")

    try:
        assert check(name, lambda: 1) is False
        assert capsys.readouterr().out == (
            f"⚠ {name}: the checker could not run: importing the reference package failed (ImportError: No module "
            "named 'sacrebleu') (this is not about your answer; check the installation: pip install the book's "
            "requirements)\n"
        )
    finally:
        del EXERCISES[name]
