"""Static checks of chapters/self_attention.ipynb: the mechanics every chapter must follow.

These read the committed notebook (with its stored outputs) and never execute it; `make test` re-runs it
with nbval. They catch what nbval does not: a figure stored as text, a solution that is not in a dropdown,
a `check` of an exercise that does not exist, a timing that nbval would compare, a notebook that grew too large.
"""

import json
import re
from pathlib import Path

import pytest

from lib.exercises import EXERCISES, list_exercises

NOTEBOOK = Path(__file__).resolve().parents[1] / "chapters" / "self_attention.ipynb"
CHAPTER = "self_attention"

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
    assert NOTEBOOK.stat().st_size < 1_500_000


def test_first_code_cell_starts_with_matplotlib_inline_and_seeds_without_semicolon(cells):
    first = next(c for c in cells if c["cell_type"] == "code")
    assert _source(first).startswith("%matplotlib inline")
    assert "_ = torch.manual_seed(" in _source(first)


def test_every_code_cell_ran_without_errors_or_warnings_and_figures_are_images(cells):
    images = 0
    for i, cell in enumerate(c for c in cells if c["cell_type"] == "code"):
        assert cell.get("execution_count") is not None, f"code cell {i} was not executed: run `make execute`"
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"code cell {i} stored an error"
            assert out.get("name") != "stderr", f"code cell {i} stored a warning: {''.join(out.get('text', ''))[:200]}"
            data = out.get("data", {})
            if "<Figure size" in "".join(data.get("text/plain", "")):
                assert "image/png" in data, f"code cell {i} stored a figure as text, not as an image"
            images += "image/png" in data
    assert images >= 8


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
        assert _source(cell).rstrip().splitlines()[-1].startswith("assert check(")


def test_widget_comes_after_a_static_figure_and_is_ignored_by_nbval(cells):
    widget = [i for i, c in enumerate(cells) if "ipywidgets" in _source(c) and c["cell_type"] == "code"]
    assert len(widget) == 1
    assert {"nbval-ignore-output", "remove-output"} <= set(_tags(cells[widget[0]]))
    assert "interact_manual" in _source(cells[widget[0]])
    static = [c for c in cells[:widget[0]] if c["cell_type"] == "code"][-1]
    assert any("image/png" in out.get("data", {}) for out in static.get("outputs", []))


def test_timings_are_ignored_by_nbval(cells):
    for cell in cells:
        if cell["cell_type"] == "code" and ("attention_cost(" in _source(cell) or "perf_counter" in _source(cell)):
            assert _source(cell).startswith("# NBVAL_IGNORE_OUTPUT")


def test_seed_003_correction_is_a_note(cells):
    notes = [_source(c) for c in cells if c["cell_type"] == "markdown" and ":::{note}" in _source(c)]
    assert any("Seed 003" in n and "with\nitself" in n.replace("with itself", "with\nitself") for n in notes)


def test_ends_with_summary_then_exercises(cells):
    headings = [line for c in cells if c["cell_type"] == "markdown" for line in _source(c).splitlines()
                if line.startswith("## ")]
    assert headings[-3:] == ["## Summary", "## Exercises", "## References"]
