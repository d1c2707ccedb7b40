"""Record and replay (lib.classroom.answers) on every exercise of the book: the grader's verdict is the kernel's.

For each exercise of :data:`lib.exercises.EXERCISES` (whatever the chapters register, so new exercises are
covered as they come), the chapter's correct answer (the first entry of its ``CASES`` in
``tests/exercises/test_exercises*.py``; ``test_every_registered_exercise_has_test_cases`` makes every exercise
have one) is checked as in the sandbox, with the recording hook, and the tape is then replayed to the trusted
checker as the grader does, with the global random generators left in another state in between: the replayed
line must be the recorded one, a ✅. An input drawn differently in the two places (a digest that differs) would
make it "no record of your function"; the hook seeds the generators (``same_random_state``), so a checker
without a seed of its own needs no change.

Slow (about 25 s on a busy 2-core machine: every checker runs twice; ``tied_embedding_params`` alone takes 8 s).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import random
from pathlib import Path

import numpy as np
import pytest
import torch

import lib.exercises as exercises
from lib.classroom import answers
from lib.exercises import core

ROOT = Path(__file__).resolve().parents[2]


def _correct_answers() -> dict:
    """The first (correct) answer of every exercise's CASES (tests/exercises/test_exercises.py's ALL_CASES)."""
    spec = importlib.util.spec_from_file_location("_all_exercise_cases", ROOT / "tests/exercises/test_exercises.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: correct for name, (correct, _) in module.ALL_CASES.items()}


def _plain(answer):
    """A test's lazily computed answer (CASES defer costly measurements) as the plain value a student would pass."""
    if isinstance(answer, dict):
        return {key: _plain(answer[key]) for key in answer}  # iterating fills a lazy dict
    if hasattr(answer, "__array__") and not isinstance(answer, (np.ndarray, torch.Tensor)):
        return np.asarray(answer)
    return answer


def _seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _record(tmp_path, monkeypatch, name, answer):
    """``check(name, answer)`` as in the sandbox: (the line it printed, the start record, the end record)."""
    tape = tmp_path / f"{name}.jsonl"
    monkeypatch.setattr(exercises, "check", exercises.check)
    monkeypatch.setattr(core, "TIME_LIMIT_S", core.TIME_LIMIT_S)
    real = exercises.check
    answers.start_recording(str(tape), None)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exercises.check(name, answer)
    finally:
        exercises.check = real  # the grader's process never records
    line = exercises.RESULTS.pop(name, "")
    records = [r for _, r in answers.read_tape(tape)]
    assert [r["event"] for r in records] == ["start", "end"], records
    return line, records[0], records[1]


@pytest.mark.slow
def test_every_exercise_replays_its_recorded_correct_answer_to_the_same_verdict(tmp_path, monkeypatch):
    correct = _correct_answers()
    assert set(exercises.EXERCISES) <= set(correct), "every exercise has CASES (test_exercises.py says which not)"
    differ = {}
    for name in exercises.EXERCISES:
        _seed_all(1)
        line, start, end = _record(tmp_path, monkeypatch, name, _plain(correct[name]))
        assert line.startswith(f"✅ {name}: correct."), line
        _seed_all(2)  # the grader's generators are never in the kernel's state
        replayed = answers.replay(name, start, end)
        if replayed != line:
            differ[name] = replayed
    assert not differ, differ


def test_a_checker_with_unseeded_random_inputs_replays_to_the_same_verdict(tmp_path, monkeypatch):
    def checker(answer):
        x = torch.randn(5)  # no seed of its own: the hook's generators decide
        got = core.call_answer(answer, x)
        return None if torch.allclose(torch.as_tensor(got), 2 * x) else "not 2·x"

    name = "rr_unseeded_double"
    monkeypatch.setitem(exercises.EXERCISES, name, core.Exercise(name, "preliminaries", "double(x)", checker))
    _seed_all(1)
    line, start, end = _record(tmp_path, monkeypatch, name, lambda x: 2 * x)
    assert line.startswith(f"✅ {name}: correct"), line
    _seed_all(2)
    assert answers.replay(name, start, end) == line
    state = torch.get_rng_state()
    with answers.same_random_state(name):
        torch.randn(3)
    assert torch.equal(torch.get_rng_state(), state), "the student's generators are restored after a check"
