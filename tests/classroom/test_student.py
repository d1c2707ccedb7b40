"""Tests of the student edition (``lib.classroom.student``, ``make student``): no solution survives, every exercise
keeps a starter cell that reports ⏳ instead of a traceback, and (slow, ``STUDENT_EXECUTE=1``) every student notebook
runs top to bottom.

The fast tests build the edition in memory and in a temporary folder; they never execute a notebook.
"""

import ast
import contextlib
import io
import json
import math
import os
import re
import time
from pathlib import Path

import pytest

from lib.classroom import student
from lib.classroom.edition import EDITION_KEY

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = student.toc_notebooks(ROOT)
STARTER = student.STARTER_TAG


# --- reading notebooks (independent of the tool's own parsing) ------------------------------------------------


def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _is_exercise(cell):
    return cell["cell_type"] == "markdown" and re.search(r"(?m)^(:{3,}|`{3,})\{exercise\}", _source(cell))


def _solution_cells(cells):
    """Indices of the source cells that are solution text: tagged `solution`, or inside solution-start ... -end."""
    inside, found = False, []
    for i, cell in enumerate(cells):
        src = _source(cell).lstrip()
        if cell["cell_type"] == "markdown" and re.match(r"(`{3,}|:{3,})\{solution-start\}", src):
            inside = True
        if inside or "solution" in _tags(cell):
            found.append(i)
        if cell["cell_type"] == "markdown" and re.match(r"(`{3,}|:{3,})\{solution-end\}", src):
            inside = False
    return found


def _solution_directive_bodies(markdown):
    """The lines inside each ``{solution}`` directive of a markdown cell."""
    bodies, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        m = re.match(r"\s*(`{3,}|:{3,})\{solution\}", lines[i])
        if m:
            fence, j = m.group(1), i + 1
            while j < len(lines) and not (
                lines[j].strip() and set(lines[j].strip()) == {fence[0]} and len(lines[j].strip()) >= len(fence)
            ):
                j += 1
            bodies.append(lines[i + 1 : j])
            i = j
        i += 1
    return bodies


def _check_name(code):
    """The exercise name of the last ``check("name", ...)`` call in ``code``, or None."""
    names = re.findall(r'check\(\s*"([^"]+)"', code)
    return names[-1] if names else None


def _exercises_with_solution_code(cells):
    """[(exercise cell index, check name or None)] for each exercise followed by solution code (before the next)."""
    solution = set(_solution_cells(cells))
    exercises = [i for i, c in enumerate(cells) if _is_exercise(c)]
    found = []
    for k, i in enumerate(exercises):
        end = exercises[k + 1] if k + 1 < len(exercises) else len(cells)
        code = [_source(cells[j]) for j in range(i + 1, end) if j in solution and cells[j]["cell_type"] == "code"]
        if code:
            found.append((i, _check_name("\n".join(code))))
    return found


@pytest.fixture(scope="module")
def editions():
    """{stem: (source notebook, student notebook, report)}, built in memory from one read of each chapter."""
    result = {}
    for path in CHAPTERS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        result[path.stem] = (nb, *student.make_student_notebook(nb))
    return result


def test_the_book_has_chapters_with_exercises():
    assert len(CHAPTERS) >= 5
    assert all(p.suffix == ".ipynb" for p in CHAPTERS)


def test_write_student_edition_writes_every_toc_notebook(tmp_path):
    import nbformat

    reports = student.write_student_edition(tmp_path / "student", quiet=True)
    assert sorted(reports) == sorted(p.stem for p in CHAPTERS)
    for path in CHAPTERS:
        written = tmp_path / "student" / path.name
        nb = nbformat.read(str(written), as_version=4)
        nbformat.validate(nb)
        assert "widgets" not in nb.metadata
        assert nb.metadata[EDITION_KEY]["source"] == f"chapters/{path.name}"
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{path.stem}: outputs left"
            assert "execution" not in cell.metadata
        assert len({c.id for c in nb.cells}) == len(nb.cells), "cell ids must be unique"
    # a second run over a chosen chapter rewrites only that one
    one = CHAPTERS[0].stem
    assert list(student.write_student_edition(tmp_path / "student", [one], quiet=True)) == [one]


def test_command_line_and_stale_notebooks(tmp_path, capsys):
    out = tmp_path / "student"
    out.mkdir()
    (out / "old_chapter.ipynb").write_text(json.dumps({"metadata": {EDITION_KEY: {}}}))
    (out / "mine.ipynb").write_text(json.dumps({"metadata": {}}))  # not written by the tool: left alone
    assert student.main(["--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{out / CHAPTERS[0].name}: " in printed and "starter cell(s)" in printed
    assert not (out / "old_chapter.ipynb").exists() and (out / "mine.ipynb").exists()


def test_unknown_chapter_is_refused(tmp_path):
    with pytest.raises(SystemExit, match=r"not a notebook with exercises in _toc\.yml"):
        student.write_student_edition(tmp_path, ["no_such_chapter"], quiet=True)


@pytest.mark.parametrize("stem", [p.stem for p in CHAPTERS])
def test_no_solution_survives(stem, editions):
    source, nb, _ = editions[stem]
    text = "\n".join(_source(c) for c in nb["cells"])
    assert not [c for c in nb["cells"] if "solution" in _tags(c)], "a cell tagged solution is left"
    assert "{solution-start}" not in text and "{solution-end}" not in text
    assert not re.search(r"(?m)^\s*(:{3,}|`{3,})\{solution\}", text), "a {solution} directive is left"

    starters = "\n".join(_source(c) for c in nb["cells"] if STARTER in _tags(c))
    starter_lines = {line.strip() for line in starters.splitlines()}
    solution_idx = set(_solution_cells(source["cells"]))
    # Lines that the chapter also has outside its solutions (a shared `return e / e.sum()`) are not solution text.
    outside = "\n".join(
        _source(c)
        for i, c in enumerate(source["cells"])
        if i not in solution_idx and not re.search(r"(?m)^\s*(:{3,}|`{3,})\{solution\}", _source(c))
    )
    solution_lines = [line for i in sorted(solution_idx) for line in _source(source["cells"][i]).splitlines()]
    for cell in source["cells"]:
        if cell["cell_type"] == "markdown":
            solution_lines += [line for body in _solution_directive_bodies(_source(cell)) for line in body]
    checked = 0
    for line in solution_lines:
        line = line.strip()
        if (
            len(line) < 12
            or line in starter_lines
            or line.startswith(("import ", "from ", "```", ":::", ":class:"))
            or line in outside
        ):
            continue
        checked += 1
        assert line not in text, f"{stem}: solution text leaked into the student edition: {line!r}"
    assert checked >= 1, f"{stem}: no solution line was looked for in the student edition"


@pytest.mark.parametrize("stem", [p.stem for p in CHAPTERS])
def test_every_exercise_keeps_its_text_and_gets_one_starter(stem, editions):
    source, nb, report = editions[stem]
    cells = nb["cells"]
    labels = re.findall(r"\{exercise\}\s*\n:label:\s*(\S+)", "\n".join(_source(c) for c in source["cells"]))
    for label in labels:
        assert any(_is_exercise(c) and f":label: {label}" in _source(c) for c in cells), f"exercise {label} lost"

    expected = _exercises_with_solution_code(source["cells"])
    starters = [i for i, c in enumerate(cells) if STARTER in _tags(c)]
    assert len(starters) == len(expected) == len(report.starters)
    exercises = [i for i, c in enumerate(cells) if _is_exercise(c)]
    for source_index, name in expected:
        label = re.search(r":label:\s*(\S+)", _source(source["cells"][source_index])).group(1)
        k = next(k for k, i in enumerate(exercises) if f":label: {label}" in _source(cells[i]))
        start, end = exercises[k], exercises[k + 1] if k + 1 < len(exercises) else len(cells)
        code = [i for i in range(start + 1, end) if cells[i]["cell_type"] == "code"]
        assert code and STARTER in _tags(cells[code[0]]), f"{label}: no starter cell after the exercise"
        starter = _source(cells[code[0]])
        last = ast.parse(starter).body[-1]
        assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call), f"{label}: must end with check(...)"
        assert ast.unparse(last.value.func) == "check", f"{label}: must end with check(...), not assert check(...)"
        assert last.value.args[0].value == name, f"{label}: checks {last.value.args[0].value!r}, solution {name!r}"
        # `;` after the call: Jupyter shows only the ⏳ line, not also the call's value (False).
        assert starter.rstrip().endswith(");"), f"{label}: the check call must end with ';'"
        assert "..." in starter


@pytest.mark.parametrize("stem", [p.stem for p in CHAPTERS])
def test_student_note_follows_the_title(stem, editions):
    _, nb, _ = editions[stem]
    cells = nb["cells"]
    title = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and _source(c).startswith("# "))
    # the tool's note, once, as the markdown cell right after the title (its wording is the tool's to choose)
    notes = [i for i, c in enumerate(cells) if _source(c) == student.STUDENT_NOTE]
    assert notes == [title + 1] and cells[title + 1]["cell_type"] == "markdown"


@pytest.mark.parametrize("stem", [p.stem for p in CHAPTERS])
def test_starter_cells_run_and_print_not_solved_yet(stem, editions):
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    from lib.exercises import check

    _, nb, _ = editions[stem]
    ran = 0
    for cell in nb["cells"]:
        if STARTER not in _tags(cell):
            continue
        ran += 1
        namespace = {"check": check, "math": math, "np": np, "torch": torch, "F": F, "nn": nn}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(_source(cell), f"<{stem} starter>", "exec"), namespace)
        lines = out.getvalue().splitlines()
        assert lines, f"{stem}: the starter printed nothing:\n{_source(cell)}"
        assert all(line.startswith("⏳") for line in lines), f"{stem}: {out.getvalue()}"
    assert ran >= 1, f"{stem}: no starter cell to run"


# --- the derivation of a starter -------------------------------------------------------------------------------


def test_starter_keeps_signature_and_docstring_and_drops_the_body():
    code = '''def pe_row(pos, d_model):
    """One row of the sinusoidal encoding.

    Returns a list of d_model floats."""
    row = []
    for j in range(d_model):
        angle = pos / 10000 ** ((j - j % 2) / d_model)   # the pair's frequency
        row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
    return row


assert check("pe_row", pe_row)  # prints ✅
'''
    starter = student.starter_from_solution(code, "pe-row")
    assert (
        starter
        == '''# Exercise pe-row: replace each ... with your code, then run this cell.
def pe_row(pos, d_model):
    """One row of the sinusoidal encoding.

    Returns a list of d_model floats."""
    ...  # your code here


check("pe_row", pe_row);
'''
    )


def test_starter_of_an_assignment():
    code = 'half = 512 // 2\nnorm = math.sqrt(half)  # the length\nassert check("pe_norm_value", norm)\n'
    assert student.starter_from_solution(code) == (
        "# Exercise: replace each ... with your code, then run this cell.\n"
        "norm = ...  # your answer here\n"
        'check("pe_norm_value", norm);\n'
    )


def test_starter_of_several_defs_keeps_decorators_defaults_and_multiline_signatures():
    code = """import functools


def helper(x):
    return x * 2


@functools.lru_cache(maxsize=None)
def layer_norm(x,
               eps=1e-5):
    mu = x.mean(dim=-1, keepdim=True)
    return (x - mu) / eps


assert check("layer_norm_last_axis", layer_norm)
"""
    assert (
        student.starter_from_solution(code, "tr-layer-norm")
        == """# Exercise tr-layer-norm: replace each ... with your code, then run this cell.
import functools


def helper(x):
    ...  # your code here


@functools.lru_cache(maxsize=None)
def layer_norm(x,
               eps=1e-5):
    ...  # your code here


check("layer_norm_last_axis", layer_norm);
"""
    )


def test_helper_code_that_check_does_not_use_is_dropped():
    code = """def crossings(weights):
    path = np.asarray(weights).argmax(axis=1)
    return int(sum(path[i] > path[k] for i in range(len(path)) for k in range(i + 1, len(path))))


example = np.eye(4)[::-1]
print(crossings(np.eye(4)), crossings(example))   # monotonic: 0; reversed: 6
torch.testing.assert_close(torch.tensor(crossings(example)), torch.tensor(6))
assert check("ba_crossings", crossings)
"""
    starter = student.starter_from_solution(code)
    assert "example" not in starter and "print" not in starter and "assert" not in starter
    assert "argmax" not in starter and "monotonic" not in starter
    assert starter.rstrip().endswith('check("ba_crossings", crossings);')


def test_an_answer_expression_in_check_is_not_copied():
    code = 'peak = 128 ** -0.5 * 400 ** -0.5\nassert check("noam_factor", 1e-3 / peak)\n'
    starter = student.starter_from_solution(code)
    assert "1e-3" not in starter and "peak" not in starter
    assert starter.endswith('answer = ...  # your answer here\ncheck("noam_factor", answer);\n')


def test_a_solution_without_check_or_def_gives_no_starter_and_magics_are_allowed():
    assert student.starter_from_solution("print(1 + 1)\n") is None
    starter = student.starter_from_solution("%time x = 1\ndef f(x):\n    return x\nassert check('e', f)\n")
    assert "def f(x):\n    ...  # your code here" in starter and starter.rstrip().endswith("check('e', f);")


def test_a_class_keeps_its_methods_signatures_only():
    code = '''class Scorer(nn.Module):
    """Additive score."""

    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, d)

    def forward(self, x):
        return self.w(x).tanh()


assert check("scorer", Scorer)
'''
    starter = student.starter_from_solution(code)
    assert "nn.Linear" not in starter and "tanh" not in starter
    assert "    def __init__(self, d):\n        ...  # your code here" in starter
    assert "    def forward(self, x):\n        ...  # your code here" in starter


def test_starters_compile_to_stubs_that_check_reports_as_not_solved(capsys):
    from lib.exercises import check

    starter = student.starter_from_solution(
        'def pe_norm(d_model):\n    """Length."""\n    return math.sqrt(d_model / 2)\n'
        'assert check("pe_norm", pe_norm)\n'
    )
    exec(starter, {"check": check})
    assert capsys.readouterr().out == "⏳ pe_norm: not solved yet — fill in the body of pe_norm\n"


def test_solution_directives_are_removed_from_markdown():
    markdown = """:::{exercise}
:label: x

Why?
:::

:::{solution} x
:class: dropdown

Because.

```python
print(":::")
```
:::

After."""
    assert student.strip_solution_directives(markdown) == ":::{exercise}\n:label: x\n\nWhy?\n:::\n\nAfter."
    assert student.strip_solution_directives(":::{solution} x\nonly this\n:::\n") == ""
    with pytest.raises(ValueError, match="never closed"):
        student.strip_solution_directives(":::{solution} x\nopen\n")


def _nb(*cells):
    made = []
    for k, (kind, src, tags) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"c{k}", "metadata": {"tags": tags}, "source": src}
        if kind == "code":
            cell.update(outputs=[{"output_type": "stream", "name": "stdout", "text": "✅"}], execution_count=k + 1)
        made.append(cell)
    return {"cells": made, "metadata": {"widgets": {"state": {}}}, "nbformat": 4, "nbformat_minor": 5}


def test_make_student_notebook_on_a_small_notebook():
    nb = _nb(
        ("markdown", "# Title", []),
        ("code", "x = 1", []),
        ("markdown", ":::{exercise}\n:label: e1\nWrite f.\n:::", []),
        ("markdown", "```{solution-start} e1\n:class: dropdown\n```", []),
        ("code", "def f(a):\n    return a + 41\n\n\nassert check('e1', f)", ["solution"]),
        ("markdown", "Explanation of why a + 41 works.", []),
        ("markdown", "```{solution-end}\n```", []),
        ("markdown", ":::{exercise}\n:label: e2\nWrite g.\n:::", []),
        ("code", "g = 42 * x\nassert check('e2', g)", ["solution"]),
        ("code", "print(f(1))", []),
    )
    student_nb, report = student.make_student_notebook(nb)
    sources = [_source(c) for c in student_nb["cells"]]
    assert sources[0] == "# Title" and "Student edition" in sources[1]
    assert not any("41" in s or "Explanation" in s or "{solution" in s for s in sources)
    assert [s.name for s in report.starters] == ["e1", "e2"]
    assert sources[4].endswith("def f(a):\n    ...  # your code here\n\n\ncheck('e1', f);\n")
    assert sources[6].endswith("g = ...  # your answer here\ncheck('e2', g);\n")
    assert report.later_uses == [(9, ["f"])]  # print(f(1)) needs the solution's f
    assert "widgets" not in student_nb["metadata"] and "widgets" in nb["metadata"]
    assert all(c.get("outputs", []) == [] for c in student_nb["cells"])
    with pytest.raises(ValueError, match="no solution-end"):
        student.make_student_notebook(_nb(("markdown", "```{solution-start} e\n```", [])))


# --- slow: execute every student notebook ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def built_student_dir():
    """The student edition where ``make student`` writes it (``student/`` beside ``chapters/``), freshly built."""
    out = ROOT / "student"
    student.write_student_edition(out, quiet=True)
    return out


@pytest.mark.student_execution
@pytest.mark.skipif(
    os.environ.get("STUDENT_EXECUTE") != "1",
    reason="executes every student notebook (10+ minutes): set STUDENT_EXECUTE=1 (and MULTI30K_DIR)",
)
@pytest.mark.parametrize("stem", [p.stem for p in CHAPTERS])
def test_student_notebook_runs_top_to_bottom(stem, built_student_dir, multi30k_dir, monkeypatch):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", os.environ.get("JUPYTER_PREFER_ENV_PATH", "1"))
    path = built_student_dir / f"{stem}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(
        nb,
        timeout=1800,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(built_student_dir)}},
    )
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as err:  # only with allow_errors=False; kept for clarity
        pytest.fail(f"{stem}: {err}")
    seconds = time.perf_counter() - start
    print(f"{stem}: executed in {seconds:.0f} s")
    errors = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                errors.append(f"cell {i} ({_source(cell)[:60]!r}...): {out['ename']}: {out['evalue']}")
        if STARTER in _tags(cell):
            text = "".join(out.get("text", "") for out in cell.get("outputs", []) if out.get("output_type") == "stream")
            lines = text.splitlines()
            if not lines or not all(line.startswith("⏳") for line in lines):
                errors.append(f"starter cell {i} printed {text!r}, expected only ⏳ lines")
    assert not errors, f"{stem} ({seconds:.0f} s):\n" + "\n".join(errors)


def test_the_student_edition_is_the_chapters_with_exercises():
    # a deeper dive and the reference pages have no exercises: they stay on the website
    stems = [p.stem for p in CHAPTERS]
    assert len(stems) == 12 and "sources_errata" not in stems, stems
    assert all("{exercise}" in p.read_text(encoding="utf-8") for p in CHAPTERS)
