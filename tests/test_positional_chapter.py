"""Static checks of chapters/positional_encoding.ipynb: the mechanics every chapter must follow.

These read the committed notebook (with its stored outputs) and never execute it; `make test` re-runs it
with nbval. They catch what nbval does not: a figure stored as text, a solution that is not in a dropdown,
a `check` of an exercise that does not exist, a notebook that grew too large.
"""

import json
import re
from pathlib import Path

import pytest

from lib.exercises import EXERCISES, list_exercises

NOTEBOOK = Path(__file__).resolve().parents[1] / "chapters" / "positional_encoding.ipynb"
CHAPTER = "positional_encoding"

pytestmark = pytest.mark.skipif(not NOTEBOOK.exists(), reason=f"{NOTEBOOK.name} not found")


@pytest.fixture(scope="module")
def cells():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _text_outputs(cell):
    for out in cell.get("outputs", []):
        if "text" in out:
            yield "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
        plain = out.get("data", {}).get("text/plain")
        if plain is not None:
            yield "".join(plain) if isinstance(plain, list) else plain


def test_notebook_is_small():
    assert NOTEBOOK.stat().st_size < 1_000_000


def test_first_code_cell_starts_with_matplotlib_inline(cells):
    first = next(c for c in cells if c["cell_type"] == "code")
    assert _source(first).startswith("%matplotlib inline")
    assert "torch.manual_seed(" in _source(first)


def test_every_code_cell_ran_without_errors_and_figures_are_images(cells):
    for i, cell in enumerate(c for c in cells if c["cell_type"] == "code"):
        assert cell.get("execution_count") is not None, f"code cell {i} was not executed: run `make execute`"
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"code cell {i} stored an error"
            data = out.get("data", {})
            if "<Figure size" in "".join(data.get("text/plain", "")):
                assert "image/png" in data, f"code cell {i} stored a figure as text, not as an image"


def test_checks_name_registered_exercises_of_this_chapter(cells):
    used = set()
    for cell in cells:
        used |= set(re.findall(r'check\("([^"]+)"', _source(cell)))
    chapter_names = {ex.name for ex in list_exercises(CHAPTER)}
    assert used <= set(EXERCISES), f"unknown exercises: {used - set(EXERCISES)}"
    assert used == chapter_names
    assert len(chapter_names) >= 3


def test_solutions_are_gated_dropdowns_whose_code_passes(cells):
    solutions = [i for i, c in enumerate(cells) if "solution" in _tags(c)]
    assert len(solutions) >= 3
    for i in solutions:
        before, cell, after = _source(cells[i - 1]), cells[i], _source(cells[i + 1])
        assert cells[i - 1]["cell_type"] == "markdown" and before.startswith("```{solution-start}")
        assert ":class: dropdown" in before
        assert cells[i + 1]["cell_type"] == "markdown" and after.startswith("```{solution-end}")
        label = before.split()[1]
        assert any(f":label: {label}" in _source(c) for c in cells[:i] if c["cell_type"] == "markdown")
        assert any(t.startswith("✅") for t in _text_outputs(cell)), f"solution {label} has no stored ✅"


def test_widget_comes_after_a_static_figure_and_is_ignored_by_nbval(cells):
    widget = [i for i, c in enumerate(cells) if "ipywidgets" in _source(c) and c["cell_type"] == "code"]
    assert len(widget) == 1
    assert "nbval-ignore-output" in _tags(cells[widget[0]])
    static = [c for c in cells[:widget[0]] if c["cell_type"] == "code"][-1]
    assert any("image/png" in out.get("data", {}) for out in static.get("outputs", []))


def test_seed_001_correction_is_a_note(cells):
    notes = [_source(c) for c in cells if c["cell_type"] == "markdown" and ":::{note}" in _source(c)]
    assert any("PE(0,6)" in n and "PE(0,7)" in n for n in notes)
