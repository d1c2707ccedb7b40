"""Tests of lib.exercises: every registered exercise accepts a correct answer and explains a typical wrong one.

The correct answers here are written with ``lib`` (not copied from the chapters), the wrong answers are the
mistakes readers make (sin and cos swapped, i instead of 2i, a missing √d_model, ...), and each wrong answer
must give ❌ with a message that names the mistake, never a traceback.
"""

import math

import numpy as np
import pytest
import torch

from lib.exercises import EXERCISES, Exercise, check, exercise, list_exercises
from lib.positional import sinusoidal_positional_encoding

# --- answers, correct and wrong, written with lib -------------------------------------------------


def pe_row_correct(pos, d_model):
    return sinusoidal_positional_encoding(pos + 1, d_model)[pos]


def pe_row_swapped(pos, d_model):
    row = pe_row_correct(pos, d_model)
    return row.view(-1, 2).flip(-1).reshape(-1)  # cos in the even columns, sin in the odd ones


def _pe_row_with_exponent(pos, d_model, exponent):
    j = np.arange(d_model)
    angle = pos / 10000.0 ** exponent(j)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle))


def pe_row_i_not_2i(pos, d_model):
    return _pe_row_with_exponent(pos, d_model, lambda j: (j // 2) / d_model)


def pe_row_own_index(pos, d_model):
    return _pe_row_with_exponent(pos, d_model, lambda j: j / d_model)


def pe_row_exponent_i(pos, d_model):
    return _pe_row_with_exponent(pos, d_model, lambda j: (j // 2).astype(float))


def pe_row_no_divide(pos, d_model):
    return _pe_row_with_exponent(pos, d_model, lambda j: (j - j % 2).astype(float))


def shift_matrix_correct(k, d_model):
    # Solve PE(pos + k) = M PE(pos) from the table itself: least squares over 1000 positions.
    pe = sinusoidal_positional_encoding(1000 + abs(k), d_model).double()
    start = max(0, -k)
    a, b = pe[start : start + 1000 - abs(k)], pe[start + k : start + k + 1000 - abs(k)]
    return torch.linalg.lstsq(a, b).solution.T  # rows of b = rows of a @ Mᵀ


def shift_matrix_transposed(k, d_model):
    return shift_matrix_correct(k, d_model).T


def encoder_input_correct(emb):
    d_model = emb.size(-1)
    return emb * math.sqrt(d_model) + sinusoidal_positional_encoding(emb.size(1), d_model)


def encoder_input_unscaled(emb):
    return emb + sinusoidal_positional_encoding(emb.size(1), emb.size(-1))


def encoder_input_times_d(emb):
    return emb * emb.size(-1) + sinusoidal_positional_encoding(emb.size(1), emb.size(-1))


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "pe_row": (
        pe_row_correct,
        [
            (pe_row_swapped, "swapped sin and cos"),
            (pe_row_i_not_2i, "i instead of 2i"),
            (pe_row_own_index, "share the frequency"),
            (pe_row_no_divide, "divide the exponent by d_model"),
            (pe_row_exponent_i, "used i as the exponent; it is 2i/d_model"),
            (lambda pos, d: np.sin(pe_row_correct(pos, d).numpy()), "your row is [0.74562"),  # no known mistake
            (lambda pos, d: pe_row_correct(pos, d)[:-1], "expected d_model"),
        ],
    ),
    "pe_norm": (
        lambda d: float(sinusoidal_positional_encoding(1, d).norm()),
        [
            (lambda d: d / 2, "squared length"),
            (lambda d: math.sqrt(d), "d_model/2 pairs"),
            (lambda d: 16.0, "for d_model=8 your length is 16; expected 2"),
            (lambda d: 12.0, "Hint"),
            (16.0, "expected a function"),
        ],
    ),
    "pe_shift_matrix": (
        shift_matrix_correct,
        [
            (shift_matrix_transposed, "shifts by -k"),
            (lambda k, d: torch.eye(d), "identity"),
            (lambda k, d: torch.eye(d - 2), "expected (8, 8)"),
        ],
    ),
    "encoder_input": (
        encoder_input_correct,
        [
            (encoder_input_unscaled, "forgot to multiply the embeddings by √d_model"),
            (encoder_input_times_d, "multiplied by d_model"),
            (lambda emb: encoder_input_correct(emb)[:, :-1], "expected"),
        ],
    ),
}


def _all_cases() -> dict:
    """CASES of this file and of every tests/exercises/test_exercises_<chapter>.py (one per chapter)."""
    import importlib.util
    from pathlib import Path

    cases = dict(CASES)
    for path in sorted(Path(__file__).parent.glob("test_exercises_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        cases.update(getattr(module, "CASES", {}))  # a file of tests across chapters may have none
    return cases


ALL_CASES = _all_cases()


def test_every_registered_exercise_has_test_cases():
    missing = sorted(set(EXERCISES) - set(ALL_CASES))
    assert not missing, (
        f"add a correct and a wrong answer to CASES (tests/exercises/test_exercises.py, or the chapter's "
        f"tests/exercises/test_exercises_<chapter>.py) for {missing}"
    )


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_correct_answer_passes(name, capsys):
    assert check(name, ALL_CASES[name][0]) is True
    out = capsys.readouterr().out
    assert out.startswith(f"✅ {name}: correct.") and out.count("\n") == 1


@pytest.mark.parametrize(
    "name, wrong, words",
    [(name, wrong, words) for name, (_, wrongs) in sorted(ALL_CASES.items()) for wrong, words in wrongs],
)
def test_wrong_answer_fails_with_a_message_naming_the_mistake(name, wrong, words, capsys):
    assert check(name, wrong) is False
    out = capsys.readouterr().out
    assert out.startswith(f"❌ {name}: ") and out.count("\n") == 1
    assert words in out


def test_pe_row_message_shows_the_seed_row(capsys):
    # The first input checked is seed 001's worked row, pos = 1, d_model = 8.
    check("pe_row", pe_row_swapped)
    out = capsys.readouterr().out
    assert "for pos=1, d_model=8" in out
    assert "expected [0.84147, 0.54030, 0.09983, 0.99500, 0.01000, 0.99995, 0.00100, 1.00000]" in out


def test_pe_row_accepts_lists_numpy_and_tensors(capsys):
    assert check("pe_row", lambda pos, d: pe_row_correct(pos, d).tolist())
    assert check("pe_row", lambda pos, d: pe_row_correct(pos, d).numpy())
    assert check("pe_norm", lambda d: torch.tensor(d / 2).sqrt())
    assert check("pe_norm", lambda d: np.float32(math.sqrt(d / 2)))
    assert check("pe_norm", lambda d: np.array([math.sqrt(d / 2)]))


@pytest.mark.parametrize("answer", [None, ...])
def test_unsolved_prints_the_not_yet_message(answer, capsys):
    assert check("pe_row", answer) is False
    assert capsys.readouterr().out == "⏳ pe_row: not solved yet — replace the ... with your answer\n"


def test_unknown_name_raises_and_lists_the_known_names():
    with pytest.raises(ValueError, match=r"unknown exercise 'no_such'.*pe_row"):
        check("no_such", 1)


def test_an_answer_that_raises_gives_a_cross_not_a_traceback(capsys):
    def broken(pos, d_model):
        raise ValueError("d_model is odd")

    assert check("pe_row", broken) is False
    assert capsys.readouterr().out == "❌ pe_row: your function raised ValueError: d_model is odd\n"


def test_a_function_without_return_is_reported(capsys):
    def forgot_return(pos, d_model):
        pe_row_correct(pos, d_model)

    assert check("pe_row", forgot_return) is False
    assert "did you forget the `return`" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name, answer, words",
    [
        ("pe_row", 3, "expected a function"),
        ("pe_row", lambda pos, d: "not numbers", "should be numbers"),
        ("pe_norm", lambda d: "16", "single number"),
        ("pe_norm", lambda d: [16, 16], "single number"),
    ],
)
def test_answers_of_the_wrong_type_give_a_cross(name, answer, words, capsys):
    assert check(name, answer) is False
    out = capsys.readouterr().out
    assert out.startswith(f"❌ {name}: ") and words in out


def test_registry_and_listing():
    names = [ex.name for ex in list_exercises("positional_encoding")]
    assert names == [
        "pe_row",
        "pe_norm",
        "pe_shift_matrix",
        "encoder_input",
        "pe_break_no_pe",
        "pe_break_raw_positions",
    ]
    assert list_exercises("no such chapter") == []
    assert all(isinstance(ex, Exercise) and ex.summary for ex in list_exercises())
    assert len(list_exercises()) == len(EXERCISES)


def test_registering_twice_raises():
    with pytest.raises(ValueError, match="already registered"):
        exercise("pe_row", chapter="positional_encoding", summary="again")(lambda answer: None)


def test_a_checker_remark_is_printed_after_correct(capsys):
    name = "_test_remark"

    @exercise(name, chapter="_tests", summary="answer 42")
    def _checker(answer):
        if answer != 42:  # (a bare assert would get pytest's rewritten message here)
            raise AssertionError("not 42")
        return "Well done."

    try:
        assert check(name, 42) and capsys.readouterr().out == f"✅ {name}: correct. Well done.\n"
        assert not check(name, 41) and capsys.readouterr().out == f"❌ {name}: not 42\n"
    finally:
        del EXERCISES[name]


# --- a function whose body is still `...` (the student edition's starter cells) -------------------


def test_a_function_returning_ellipsis_is_not_solved_yet(capsys):
    def pe_row(pos, d_model):
        """One row of the encoding."""
        ...  # your code here

    assert check("pe_row", pe_row) is False
    assert capsys.readouterr().out == "⏳ pe_row: not solved yet — fill in the body of pe_row\n"


def test_a_lambda_returning_ellipsis_is_not_solved_yet(capsys):
    assert check("pe_norm", lambda d_model: ...) is False
    assert capsys.readouterr().out == "⏳ pe_norm: not solved yet — fill in the body of your function\n"


def test_none_still_means_a_forgotten_return_not_unsolved(capsys):
    def pe_norm(d_model):
        math.sqrt(d_model / 2)  # computed, but not returned

    assert check("pe_norm", pe_norm) is False
    out = capsys.readouterr().out
    assert out.startswith("❌ pe_norm: ") and "did you forget the `return`" in out


@pytest.mark.parametrize("name", sorted(n for n, (correct, _) in ALL_CASES.items() if callable(correct)))
def test_every_function_exercise_reports_a_placeholder_body_as_not_solved(name, capsys):
    # Whatever the checker does first (a plain call, a call that expects ValueError, a memory measurement),
    # a stub that returns `...` must give the one ⏳ line, never ❌ or a traceback.
    def stub(*args, **kwargs): ...

    assert check(name, stub) is False
    assert capsys.readouterr().out == f"⏳ {name}: not solved yet — fill in the body of stub\n"


def test_a_placeholder_body_is_recognised_with_or_without_docstring_and_pass(capsys):
    def with_pass(d_model):
        pass

    def with_docstring_only(d_model):
        """The length of one row."""

    assert check("pe_norm", with_pass) is False
    assert check("pe_norm", with_docstring_only) is False
    assert capsys.readouterr().out == (
        "⏳ pe_norm: not solved yet — fill in the body of with_pass\n"
        "⏳ pe_norm: not solved yet — fill in the body of with_docstring_only\n"
    )


def test_a_returned_ellipsis_from_a_body_that_does_something_is_also_not_solved(capsys):
    def pe_norm(d_model):
        half = d_model / 2  # started, not finished
        return ... if half else ...  # noqa: RUF034 - a body that does something, yet returns ... either way

    assert check("pe_norm", pe_norm) is False
    assert capsys.readouterr().out == "⏳ pe_norm: not solved yet — fill in the body of pe_norm\n"


def test_a_decorated_placeholder_is_not_solved_yet(capsys):
    @torch.no_grad()
    def pe_norm(d_model): ...

    assert check("pe_norm", pe_norm) is False
    assert capsys.readouterr().out == "⏳ pe_norm: not solved yet — fill in the body of pe_norm\n"


def test_progress_reports_the_latest_result_of_each_exercise_of_a_chapter(capsys):
    import math

    from lib import exercises

    exercises.RESULTS.clear()
    assert exercises.progress() == {}
    assert "no exercise checked yet" in capsys.readouterr().out

    def pe_norm(d_model):
        return d_model  # wrong

    assert not exercises.check("pe_norm", pe_norm)
    assert not exercises.check("pe_row", ...)
    status = exercises.progress("positional_encoding")
    out = capsys.readouterr().out
    assert status["pe_norm"] == "❌" and status["pe_row"] == "⏳" and status["pe_shift_matrix"] == "·"
    assert "positional_encoding: 0 of" in out

    assert exercises.check("pe_norm", lambda d_model: math.sqrt(d_model / 2))  # the latest result counts
    assert exercises.progress()["pe_norm"] == "✅"
    assert "positional_encoding: 1 of" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no exercises for chapter 'nope'"):
        exercises.progress("nope")
    exercises.RESULTS.clear()
