"""Tests of the classroom grader, ``python -m lib.grade``, on the book's synthetic class (``lib.classroom.example``).

Fast (``make test``): the command line's usage errors, submissions graded without a kernel (a damaged file,
another chapter, the book's own notebook, a notebook whose chapter cannot be told), chapter and name detection,
how the outcome of each exercise is read from an executed notebook, the CSV, the summary, the figure, the kernel
set-up (the ``check`` wrapper that records on the tape, the network guard) and the committed example of the
instructor page.

Slow (``student_execution``, ``make test-student``): the whole synthetic class graded by the command, each
submission in a fresh sandboxed kernel (about 10 s of CPU each), every row asserted, and the result equal to the
committed example.
"""

from __future__ import annotations

import csv
import json
import os
import re
import socket
import time
from pathlib import Path

import numpy as np
import pytest

import lib.exercises as exercises
from lib.classroom import example, grade
from lib.classroom.chart import plot_grade_summary
from lib.exercises import core

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ["matvec", "softmax_stable", "softmax_temperature", "one_hot"]


@pytest.fixture(scope="module")
def synthetic_class(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grading") / "class"
    example.make_class(folder)
    return folder


def test_the_synthetic_chapter_has_the_exercises_the_tests_name():
    assert [ex.name for ex in exercises.list_exercises(example.CHAPTER)] == EXERCISES


# --- the command line -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no/such/folder"], "does not exist"),
        (["{nb}", "--chapter", "no_such_chapter"], "--chapter must be one of"),
        (["{nb}", "--cell-timeout", "0"], "positive number of seconds"),
        (["{nb}", "--timeout", "soon"], "expected a number of seconds"),
        (["{nb}", "--out", "{tmp}/missing/grades.csv"], "does not exist"),
        (["{nb}", "--out", "{tmp}/grades.txt"], "must name a .csv file"),
        (["{tmp}/empty"], "no .ipynb files found"),
    ],
)
def test_usage_errors_exit_2_before_anything_runs(argv, message, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    nb = tmp_path / "a.ipynb"
    nb.write_text("{}")
    argv = [a.format(nb=nb, tmp=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as info:
        grade.main([*argv, "--out", str(tmp_path / "grades.csv")] if "--out" not in argv else argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "usage: python -m lib.grade" in err
    assert not (tmp_path / "grades.csv").exists()


def test_the_command_lib_grade_runs_the_classroom_grader():
    import lib.grade as command

    assert command.main is grade.main


def test_grade_submission_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="chapter must be one with exercises"):
        grade.grade_submission(tmp_path / "x.ipynb", "intro")
    with pytest.raises(ValueError, match="time limits must be positive"):
        grade.grade_submission(tmp_path / "x.ipynb", "preliminaries", cell_timeout=0)
    with pytest.raises(ValueError, match="no submissions given"):
        grade.find_submissions([])


@pytest.mark.bwrap  # the command starts one empty sandbox before the first submission
def test_the_command_grades_submissions_that_need_no_kernel(synthetic_class, tmp_path, capsys):
    """A damaged file, another chapter and the book's own notebook: error rows, a CSV, a summary and a figure."""
    files = [synthetic_class / n for n in ("ivan.ipynb", "hana.ipynb", "kim.ipynb")]
    out = tmp_path / "grades.csv"
    assert grade.main([*map(str, files), "--chapter", "preliminaries", "--out", str(out)]) == 0
    rows = grade.read_csv(out)
    assert [(r.student, r.exercise, r.verdict) for r in rows] == [
        (s, e, "error") for s in ("hana", "ivan", "kim") for e in EXERCISES
    ]
    by_student = {r.student: r.message for r in rows}
    assert by_student["ivan"].startswith("not a notebook: invalid JSON")
    assert (
        by_student["hana"]
        == "this is the notebook of chapter 'positional_encoding' (from its metadata), not 'preliminaries'"
    )
    assert by_student["kim"].startswith("this is the book's own notebook with its solutions")
    printed = capsys.readouterr()
    assert "matvec                  0/3" in printed.out and "ivan: " in printed.err and "(not run)" in printed.err
    png = out.with_suffix(".png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*.tmp")), "atomic writes leave no temporary file"


# --- reading, detecting, naming ----------------------------------------------------------------------------


def test_a_file_that_is_not_a_notebook_gets_one_row_per_exercise_or_one_row(tmp_path):
    cases = {
        "binary.ipynb": b"\xff\xfe\x00garbage",
        "list.ipynb": b"[1, 2, 3]",
        "nocells.ipynb": b'{"metadata": {}}',
        "badcells.ipynb": json.dumps(
            {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"x": 1}]}
        ).encode(),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        rows, seconds = grade.grade_submission(tmp_path / name, "preliminaries")
        assert seconds == 0.0
        assert [r.exercise for r in rows] == EXERCISES and {r.verdict for r in rows} == {"error"}
        assert rows[0].message.startswith(("not a notebook", "not a valid notebook")), (name, rows[0].message)
        rows, _ = grade.grade_submission(tmp_path / name)  # no --chapter: the chapter is unknown, one row
        assert [(r.chapter, r.exercise, r.verdict) for r in rows] == [("", "", "error")]


def test_a_notebook_without_metadata_or_check_calls_asks_for_the_chapter(tmp_path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}
    (tmp_path / "x.ipynb").write_text(json.dumps(nb))
    rows, _ = grade.grade_submission(tmp_path / "x.ipynb")
    assert len(rows) == 1 and rows[0].verdict == "error" and rows[0].message.endswith("pass --chapter")


def test_detect_chapter_from_metadata_old_metadata_content_or_nothing():
    def nb(meta=None, code=()):
        cells = [{"cell_type": "code", "source": c, "metadata": {}, "outputs": []} for c in code]
        return {"metadata": {} if meta is None else {"student_edition": meta}, "cells": cells}

    assert grade.detect_chapter(nb({"chapter": "transformer", "source": "x/y.ipynb"})) == ("transformer", "metadata")
    assert grade.detect_chapter(nb({"source": "chapters/bert_gpt.ipynb"})) == ("bert_gpt", "metadata")
    code = ['check("pe_row", f)', "check('pe_norm', g)\ncheck(\"matvec\", h)"]
    assert grade.detect_chapter(nb(None, code)) == ("positional_encoding", "content")
    assert grade.detect_chapter(nb(None, ['check("no_such", f)', "print(1)"])) == (None, "unknown")


def test_student_name_from_metadata_file_or_folder():
    assert grade.student_name("sub/alice.ipynb") == "alice"
    assert grade.student_name("sub/bob/preliminaries.ipynb", None, "preliminaries") == "bob"
    assert grade.student_name("sub/bob/transformer.ipynb") == "bob"  # any chapter's name
    assert grade.student_name("Copy of x.ipynb.txt") == "Copy of x.ipynb"
    meta = {"metadata": {"student_edition": {"student": " Chen Li "}}}
    assert grade.student_name("sub/alice.ipynb", meta) == "alice"  # the metadata's name is reported, not trusted


def test_find_submissions_walks_folders_and_skips_hidden_ones(tmp_path):
    (tmp_path / "a" / ".ipynb_checkpoints").mkdir(parents=True)
    for name in ("a/x.ipynb", "a/.ipynb_checkpoints/x-checkpoint.ipynb", "a/notes.txt", "b.ipynb"):
        (tmp_path / name).write_text("{}")
    found = grade.find_submissions([tmp_path / "a", tmp_path / "b.ipynb", tmp_path / "a" / "x.ipynb"])
    assert found == [tmp_path / "a" / "x.ipynb", tmp_path / "b.ipynb"]


def test_same_names_in_two_folders_are_told_apart(tmp_path):
    for group in ("g1", "g2"):
        (tmp_path / group).mkdir()
        (tmp_path / group / "al.ipynb").write_text("not json")
    rows = grade.grade([tmp_path], "preliminaries")
    assert sorted({r.student for r in rows}) == ["g1/al", "g2/al"]


def test_editions(synthetic_class):
    def read(name):
        return json.loads((synthetic_class / name).read_text(encoding="utf-8"))

    assert grade._edition(read("ada.ipynb"), "preliminaries") == (None, "")
    assert grade._edition(read("jo_final_v2.ipynb"), "preliminaries")[1].startswith("older edition")
    newer = read("ada.ipynb")
    newer["metadata"]["student_edition"]["exercises"] = ["matvec"]
    newer["metadata"]["student_edition"]["book_version"] = "0.0.1"
    note = grade._edition(newer, "preliminaries")[1]
    assert "no cell for softmax_stable, softmax_temperature, one_hot" in note and "book version 0.0.1" in note
    problem, _ = grade._edition(read("kim.ipynb"), "preliminaries")
    assert "not the student edition" in problem


# --- the outcome of each exercise, from an executed notebook ---------------------------------------------------


def _cell(source, outputs=()):
    return {"cell_type": "code", "source": source, "metadata": {}, "outputs": list(outputs)}


def _err(ename, evalue=""):
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}


def _run(cells, records=(), ran=None, stopped=None, stopped_at=None, cut=(), setup_error=None):
    ran = set(range(len(cells))) if ran is None else ran
    return grade._Run(cells, ran, stopped, stopped_at, set(cut), list(records), setup_error, 1.0, 60.0)


def _tape(tmp_path, monkeypatch, answer, name="matvec"):
    """The tape records of ``check(name, answer)`` run as in the sandbox (lib.classroom.answers)."""
    from lib.classroom import answers

    tape = tmp_path / "tape.jsonl"
    monkeypatch.setattr(exercises, "check", exercises.check)
    monkeypatch.setattr(core, "TIME_LIMIT_S", core.TIME_LIMIT_S)
    real = exercises.check
    answers.start_recording(str(tape), 5)
    exercises.check(name, answer)
    exercises.check = real  # the grader's process never records
    return [(0, r) for _, r in answers.read_tape(tape)]


def test_outcome_replays_the_recorded_answers_to_the_trusted_checker(tmp_path, monkeypatch):
    cells = [_cell('print("✅ matvec: correct.")\ncheck("matvec", f)')]

    def wrong(W, x):
        return [0.0 for _ in W]

    records = _tape(tmp_path, monkeypatch, wrong)
    assert [r["event"] for _, r in records] == ["start", "end"]
    verdict, message = grade._outcome(_run(cells, records), "matvec", 10)
    assert verdict == "❌" and message.startswith("for W of shape")
    # a verdict written into the tape by the student counts for nothing; an end without the calls is unsolved
    start = records[0]
    forged = (0, {"event": "end", "exercise": "matvec", "calls": [], "line": "✅ matvec: correct."})
    verdict, message = grade._outcome(_run(cells, [start, forged]), "matvec", 10)
    assert verdict == "❌" and "no record of your function" in message

    # the recorded raise, sys.exit() and placeholder come back as themselves
    def exits(W, x):
        raise SystemExit("no")

    assert "sys.exit()" in grade._outcome(_run(cells, _tape(tmp_path, monkeypatch, exits)), "matvec", 10)[1]

    def todo(W, x): ...

    assert grade._outcome(_run(cells, _tape(tmp_path, monkeypatch, todo)), "matvec", 10)[0] == "⏳"


def test_outcome_of_a_check_that_started_and_never_ended():
    cells = [_cell('print("✅ matvec: correct.")\ncheck("matvec", f)')]
    start = (0, {"event": "start", "exercise": "matvec"})
    cells[0]["outputs"] = [_err("KeyboardInterrupt")]
    assert grade._outcome(_run(cells, [start]), "matvec", 10) == (
        "time-out",
        'check("matvec", ...) in cell 1 (\'print("✅ matvec: correct.")\') ran past the cell\'s limit of 10 s',
    )
    cells[0]["outputs"] = []
    dead = _run(cells, [start], stopped="the kernel stopped (x)", stopped_at=0)
    assert (
        grade._outcome(dead, "matvec", 10)[0] == "error"
        and "the kernel stopped" in grade._outcome(dead, "matvec", 10)[1]
    )
    # no record at all: the printed ✅ counts for nothing
    assert grade._outcome(_run(cells), "matvec", 10) == (
        "⏳",
        'check("matvec", ...) in cell 1 (\'print("✅ matvec: correct.")\') did not run',
    )


def test_an_exercise_whose_last_check_never_ran_because_the_run_stopped_is_not_the_earlier_verdict(
    tmp_path, monkeypatch
):
    cells = [
        _cell('check("matvec", None)'),
        _cell("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"),
        _cell('def matvec(W, x): ...\ncheck("matvec", matvec)'),
    ]
    blank = _tape(tmp_path, monkeypatch, None)  # recorded in cell 1 (index 0)
    stopped = "the submission's sandbox stopped before its run finished (it exited with status 1: ...)"
    killed = _run(cells, blank, ran={0}, stopped=stopped, stopped_at=1)
    verdict, message = grade._outcome(killed, "matvec", 10)
    assert verdict == "error" and message == (
        f"crashed in this exercise: {stopped} in cell 2 ('import os, signal'), before check(\"matvec\", ...) in "
        "cell 3 ('def matvec(W, x): ...') ran (its earlier check in cell 1 ('check(\"matvec\", None)') gave ⏳)"
    )
    late = _run(cells, blank, ran={0}, stopped="the notebook ran past its limit of 60 s", stopped_at=1)
    assert grade._outcome(late, "matvec", 10)[0] == "time-out"
    # the last check ran (or the run did not stop before it): the recorded verdict stands
    assert grade._outcome(_run(cells[:1] + cells[2:], blank, ran={0, 1}), "matvec", 10)[0] == "⏳"
    assert grade._outcome(_run(cells, blank, ran={0, 1}, stopped=stopped, stopped_at=2), "matvec", 10)[0] == "error"
    assert grade._outcome(_run(cells[:2], blank, ran={0}, stopped=stopped, stopped_at=1), "matvec", 10)[0] == "⏳"


def test_a_sandbox_that_died_mid_run_leaves_the_progress_of_the_cells_before(tmp_path, monkeypatch):
    """run.json written after each cell ("finished": false): the cells that ran, the tape lines of each cell."""
    import nbformat

    recorded = _tape(tmp_path, monkeypatch, None)  # start, end
    tape = tmp_path / "tape.jsonl"
    with open(tape, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": "start", "exercise": "one_hot", "answer": "function"}) + "\n")
    assert len(recorded) == 2
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("from lib.exercises import check"),
            nbformat.v4.new_markdown_cell("text"),
            nbformat.v4.new_code_cell('check("matvec", None)'),
            nbformat.v4.new_code_cell('check("one_hot", f)'),
        ]
    )
    progress = {"finished": False, "ran": [0, 2], "errors": {}, "tape_lines": [[0, 0], [2, 2]], "seconds": 1.0}
    result = {"run": progress, "tape": tape, "exit": 1, "seconds": 2.0}
    run = grade._run_from_sandbox(nb, result, 60.0)
    assert run.ran == {0, 2} and run.stopped_at == 3 and run.stopped.startswith("the submission's sandbox stopped")
    assert [cell for cell, _ in run.records] == [2, 2, 3]
    assert grade._outcome(run, "matvec", 10)[0] == "⏳"
    assert grade._outcome(run, "one_hot", 10) == (
        "error",
        f'crashed in this exercise: {run.stopped} during check("one_hot", ...) in cell 4 (\'check("one_hot", f)\')',
    )


def test_outcome_of_cells_that_failed_or_never_ran():
    cells = [_cell("x = 1"), _cell('check("matvec", f)', [_err("NameError", "name 'f' is not defined")])]
    assert grade._outcome(_run(cells), "matvec", 10) == (
        "error",
        "cell 2 ('check(\"matvec\", f)') raised NameError: name 'f' is not defined",
    )
    syntax = [_cell('def f(:\ncheck("matvec", f)', [_err("SyntaxError", "invalid syntax (3141592.py, line 1)")])]
    assert grade._outcome(_run(syntax), "matvec", 10)[1].endswith("raised SyntaxError: invalid syntax (line 1)")
    loop = [_cell('while True: pass\ncheck("matvec", f)', [_err("KeyboardInterrupt")])]
    assert grade._outcome(_run(loop), "matvec", 10)[0] == "time-out"
    assert "the notebook's limit of 60 s" in grade._outcome(_run(loop, cut={0}), "matvec", 10)[1]
    late = _run(
        cells[:1] + [_cell('check("matvec", f)')],
        ran={0},
        stopped="the notebook ran past its limit of 60 s",
        stopped_at=1,
    )
    assert grade._outcome(late, "matvec", 10) == (
        "time-out",
        "not reached: the notebook ran past its limit of 60 s at cell 2 ('check(\"matvec\", f)')",
    )
    died = _run(cells[:1] + [_cell('check("matvec", f)')], ran={0}, stopped="the kernel stopped (x)", stopped_at=0)
    assert grade._outcome(died, "matvec", 10)[0] == "error"
    assert grade._outcome(_run([_cell("x = 1")]), "matvec", 10) == (
        "⏳",
        'no cell calls check("matvec", ...): the exercise\'s cell was deleted or changed',
    )
    assert grade._outcome(_run(cells, setup_error="ModuleNotFoundError: lib"), "matvec", 10)[0] == "error"


# --- inside the kernel ------------------------------------------------------------------------------------------


def test_the_hidden_cell_records_each_check_on_the_tape_and_sets_the_call_limit(tmp_path, monkeypatch, capsys):
    from lib.classroom import answers

    tape = tmp_path / "tape.jsonl"
    monkeypatch.setattr(exercises, "check", exercises.check)
    monkeypatch.setattr(core, "TIME_LIMIT_S", core.TIME_LIMIT_S)
    answers.start_recording(str(tape), 3.0)
    assert core.TIME_LIMIT_S == 3.0
    assert exercises.check("matvec", lambda W, x: [0.0] * len(W)) is False
    assert exercises.check("matvec", None) is False
    records = [r for _, r in answers.read_tape(tape)]
    assert [(r["event"], r["exercise"], r.get("answer")) for r in records] == [
        ("start", "matvec", "function"),
        ("end", "matvec", None),
        ("start", "matvec", "value"),
        ("end", "matvec", None),
    ]
    # the values the function returned, never a verdict; None is recorded as the value it is
    assert records[1]["calls"] and all(set(outcome) == {"value"} for _, outcome in records[1]["calls"])
    assert "line" not in records[1] and records[2]["value"] == {"v": None} and records[3]["calls"] == []
    assert capsys.readouterr().out.count("matvec:") == 2  # check still prints its line
    with pytest.raises(ValueError, match="unknown exercise"):
        exercises.check("no_such_exercise", 1)
    assert len(answers.read_tape(tape)) == 4


def test_the_network_guard_refuses_other_machines_but_not_this_one(monkeypatch):
    monkeypatch.setattr(socket.socket, "connect", socket.socket.connect)
    monkeypatch.setattr(socket.socket, "connect_ex", socket.socket.connect_ex)
    grade._refuse_network()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, pytest.raises(OSError, match="network access is off"):
        s.connect(("93.184.216.34", 80))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, pytest.raises(OSError, match="network access is off"):
        s.connect_ex(("example.org", 80))
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    with server, socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.connect(server.getsockname())  # loopback stays allowed (the kernel talks to Jupyter through it)


# --- CSV, summary, figure ---------------------------------------------------------------------------------------


ROWS = [
    grade.Row("ann", "preliminaries", "matvec", "✅", "correct.", "", "a.ipynb"),
    grade.Row("ann", "preliminaries", "softmax_stable", "❌", 'your "x", sum 2', "note, with comma", "a.ipynb"),
    grade.Row("bo", "preliminaries", "matvec", "❌", "wrong B", "", "b.ipynb"),
    grade.Row("bo", "preliminaries", "softmax_stable", "❌", 'your "x", sum 2', "", "b.ipynb"),
    grade.Row("cy", "preliminaries", "matvec", "❌", "wrong A", "", "c.ipynb"),
    grade.Row("cy", "preliminaries", "softmax_stable", "time-out", "⏱", "", "c.ipynb"),
    grade.Row("dee", "", "", "error", "not a notebook", "", "d.ipynb"),
]


def test_csv_round_trip_with_quotes_commas_and_unicode(tmp_path):
    path = grade.write_csv(ROWS, tmp_path / "g.csv")
    assert grade.read_csv(path) == ROWS
    with open(path, encoding="utf-8", newline="") as f:
        lines = list(csv.reader(f))
    assert tuple(lines[0]) == grade.COLUMNS and len(lines) == len(ROWS) + 1
    (tmp_path / "bad.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="header must be"):
        grade.read_csv(tmp_path / "bad.csv")


def test_summary_counts_and_most_common_wrong_answers():
    summary = grade.summarize(ROWS, top=2)
    assert [s["exercise"] for s in summary] == ["matvec", "softmax_stable"]  # registry order; no row for dee
    assert summary[0]["counts"] == {"✅": 1, "❌": 2, "⏳": 0, "time-out": 0, "error": 0}
    assert summary[0]["wrong"] == [("wrong A", 1), ("wrong B", 1)]  # ties alphabetical
    assert summary[1]["wrong"] == [('your "x", sum 2', 2)] and summary[1]["students"] == 3
    text = grade.format_summary(summary, width=20)
    assert text.splitlines()[0].split() == [
        "exercise",
        "solved",
        "❌",
        "wrong",
        "⏳",
        "not",
        "yet",
        "time-out",
        "error",
    ]
    assert text.splitlines()[1].split() == ["matvec", "1/3", "2", "0", "0", "0"]
    assert '  softmax_stable (2×): your "x", sum 2' in text
    assert grade.format_summary([]) == "no exercise graded\n"


def test_plot_grade_summary_stacks_one_bar_per_exercise_and_verdict():
    summary = grade.summarize(ROWS)
    fig = grade.summary_figure(summary, title="preliminaries")
    ax = fig.axes[0]
    assert len(ax.containers) == len(grade.VERDICTS)
    widths = np.array([[bar.get_width() for bar in c] for c in ax.containers])
    assert widths.tolist() == [[1, 0], [2, 2], [0, 0], [0, 1], [0, 0]]  # ✅ ❌ ⏳ time-out error
    assert [t.get_text() for t in ax.get_yticklabels()] == ["matvec", "softmax_stable"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(grade.VERDICT_LABELS.values())
    with pytest.raises(ValueError, match="summary is empty"):
        grade.summary_figure([])


@pytest.mark.parametrize(
    "exercises_, counts, message",
    [
        ([], {"solved": []}, "at least one exercise"),
        (["a"], {}, "non-empty dict"),
        (["a", "b"], {"solved": [1]}, "must hold 2 counts"),
        (["a"], {"solved": [-1]}, "non-negative integers"),
        (["a"], {"solved": [0.5]}, "non-negative integers"),
    ],
)
def test_plot_grade_summary_refuses_bad_input(exercises_, counts, message):
    with pytest.raises(ValueError, match=message):
        plot_grade_summary(exercises_, counts)


# --- the committed example of the instructor page --------------------------------------------------------------


def test_the_committed_example_is_consistent():
    """chapters/images/grading_example.*: every student has a row per exercise; the summary is the CSV's."""
    rows = grade.read_csv(example.EXAMPLE.with_suffix(".csv"))
    students = sorted({r.student for r in rows})
    assert students == ["ada", "ben", "cleo", "dan", "eve", "finn", "gus", "hana", "ivan", "jo_final_v2", "kim"]
    assert [(r.student, r.exercise) for r in rows] == [(s, e) for s in students for e in EXERCISES]
    assert {r.chapter for r in rows} == {"preliminaries"} and {r.verdict for r in rows} <= set(grade.VERDICTS)
    assert {r.verdict for r in rows} == set(grade.VERDICTS), "the example shows every verdict"
    assert example.EXAMPLE.with_suffix(".txt").read_text(encoding="utf-8") == example.summary_text(
        example.EXAMPLE.with_suffix(".csv")
    )
    assert example.EXAMPLE.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (ROOT / "chapters" / "instructor.md").read_text(encoding="utf-8")
    section = page.split("## Grading a class", 1)[1].split("\n## ", 1)[0]
    for name in ("grading_example.csv", "grading_example.txt", "grading_example.png", "python -m lib.grade"):
        assert name in section
    for verdict in grade.VERDICTS:
        assert f"`{verdict}`" in section, f"the page does not explain the verdict {verdict}"
    # the excerpt the page shows (literalinclude :lines:) is the header and at least one row of each verdict
    spec = re.search(r"grading_example\.csv\n:language: text\n:lines: ([\d,-]+)\n", section).group(1)
    wanted = [n for part in spec.split(",") for n in _line_range(part)]
    lines = example.EXAMPLE.with_suffix(".csv").read_text(encoding="utf-8").splitlines()
    excerpt = list(csv.reader([lines[n - 1] for n in wanted]))
    assert tuple(excerpt[0]) == grade.COLUMNS
    assert {row[3] for row in excerpt[1:]} == set(grade.VERDICTS)


def _line_range(part):
    first, _, last = part.partition("-")
    return range(int(first), int(last or first) + 1)


def test_the_student_edition_records_what_the_grader_reads(synthetic_class):
    meta = json.loads((synthetic_class / "ben.ipynb").read_text(encoding="utf-8"))["metadata"]["student_edition"]
    assert meta["edition"] == "student" and meta["chapter"] == "preliminaries"
    assert meta["exercises"] == EXERCISES and meta["book_version"] == grade._book_version()


# --- slow: the whole class, in kernels ------------------------------------------------------------------------

# (student, exercise) -> (verdict, the message's start); rows not listed are ✅ "correct."
EXPECTED = {
    **{("ben", e): ("⏳", "not solved yet — fill in the body of ") for e in EXERCISES},
    ("cleo", "softmax_temperature"): ("❌", "for z = [0.5, 0.8, 0.6] and T = 0.25 your result is"),
    ("cleo", "one_hot"): ("⏳", "not solved yet — fill in the body of one_hot"),
    ("dan", "matvec"): ("error", "cell 107 ('def matvec(W, x)') raised SyntaxError: expected ':' (line 1)"),
    ("dan", "softmax_stable"): ("❌", "for z = [1000.0, 1001.0, 1002.0] your result is [nan, nan, nan]"),
    ("dan", "softmax_temperature"): ("❌", "for z = [0.5, 0.8, 0.6] and T = 0.25 your result is"),
    ("eve", "matvec"): ("time-out", "⏱ your function did not return within 2 s."),
    ("eve", "softmax_stable"): ("time-out", "cell 109 ('while True:') ran past the cell's limit of 10 s"),
    ("finn", "matvec"): ("❌", "your function called sys.exit() (SystemExit: wrong sizes)"),
    ("finn", "softmax_stable"): ("error", "cell 109 ('import sys') raised SystemExit"),
    ("gus", "one_hot"): ("⏳", 'no cell calls check("one_hot", ...): the exercise\'s cell was deleted'),
    **{("hana", e): ("error", "this is the notebook of chapter 'positional_encoding'") for e in EXERCISES},
    **{("ivan", e): ("error", "not a notebook: invalid JSON") for e in EXERCISES},
    **{("kim", e): ("error", "this is the book's own notebook with its solutions") for e in EXERCISES},
}


@pytest.mark.student_execution
@pytest.mark.skipif(
    os.environ.get("STUDENT_EXECUTE") != "1",
    reason="grades the synthetic class in 8 kernels (1-3 minutes): set STUDENT_EXECUTE=1 (and MULTI30K_DIR)",
)
@pytest.mark.bwrap
def test_the_command_grades_the_synthetic_class(tmp_path, multi30k_dir):
    start = time.perf_counter()
    result = example.run_example(tmp_path)
    seconds = time.perf_counter() - start
    print(result.stderr, result.stdout, f"graded in {seconds:.0f} s", sep="\n")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = grade.read_csv(tmp_path / "grades.csv")
    students = ["ada", "ben", "cleo", "dan", "eve", "finn", "gus", "hana", "ivan", "jo_final_v2", "kim"]
    assert [(r.student, r.chapter, r.exercise) for r in rows] == [
        (s, "preliminaries", e) for s in students for e in EXERCISES
    ]
    for r in rows:
        verdict, start_of_message = EXPECTED.get((r.student, r.exercise), ("✅", "correct."))
        assert (r.verdict, r.message[: len(start_of_message)]) == (verdict, start_of_message), r
        assert r.note == (
            "older edition (made before the edition recorded its chapter and exercises)"
            if r.student == "jo_final_v2"
            else ""
        )
    assert (tmp_path / "grades.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "softmax_temperature (2×): for z = [0.5, 0.8, 0.6] and T = 0.25" in result.stdout
    # the committed example (instructor page) is what the command produces, up to the folder it ran in
    committed = grade.read_csv(example.EXAMPLE.with_suffix(".csv"))
    assert rows == committed, "re-run python -m lib.classroom.example and commit chapters/images/grading_example.*"
    # every executed submission's time is logged
    assert result.stderr.count(" s): ") == 8


def _tiny(path, *sources):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["student_edition"] = {"edition": "student", "chapter": "preliminaries", "exercises": EXERCISES}
    nbformat.write(nb, str(path))
    return path


@pytest.mark.student_execution
@pytest.mark.skipif(os.environ.get("STUDENT_EXECUTE") != "1", reason="starts two kernels: set STUDENT_EXECUTE=1")
@pytest.mark.bwrap
def test_a_dead_kernel_and_the_notebook_limit_leave_the_verdicts_recorded_before(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "1")
    dead = _tiny(
        tmp_path / "dead.ipynb",
        "from lib.exercises import check",
        'check("matvec", None)',
        "import os\nos._exit(1)",
        'check("softmax_stable", None)',
    )
    rows, _ = grade.grade_submission(dead, cell_timeout=20, timeout=60)
    assert [(r.exercise, r.verdict) for r in rows] == [
        ("matvec", "⏳"),
        ("softmax_stable", "error"),
        ("softmax_temperature", "⏳"),
        ("one_hot", "⏳"),
    ]
    assert (
        rows[1].message
        == "not reached: the kernel stopped (exit, os._exit, a crash or out of memory) at cell 3 ('import os')"
    )
    slow = _tiny(
        tmp_path / "slow.ipynb",
        "from lib.exercises import check",
        'check("matvec", None)',
        "import time\ntime.sleep(60)",
        'check("softmax_stable", None)',
    )
    rows, _ = grade.grade_submission(slow, cell_timeout=50, timeout=10)
    assert [(r.exercise, r.verdict) for r in rows][:2] == [("matvec", "⏳"), ("softmax_stable", "time-out")]
    assert rows[1].message.startswith("not reached: the notebook ran past its limit of 10 s at cell 4")
