"""Static checks of chapters/self_attention.ipynb: what is particular to this chapter.

These read the committed notebook (with its stored outputs) and never execute it; `make test` re-runs it
with nbval. The checks every chapter shares (exercises, solutions, widgets, figures) are in tests/test_chapters.py.
"""

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "chapters" / "self_attention.ipynb"


@pytest.fixture(scope="module")
def cells():
    # a missing notebook is a failure, not a skip: the chapter is in the toc and the book needs it
    assert NOTEBOOK.is_file(), f"{NOTEBOOK} is missing"
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_notebook_is_small():
    assert NOTEBOOK.stat().st_size < 1_500_000


def test_first_code_cell_starts_with_matplotlib_inline_and_seeds_without_semicolon(cells):
    first = next(c for c in cells if c["cell_type"] == "code" and c.get("id") != "colab-setup")
    assert _source(first).startswith("%matplotlib inline")
    assert "_ = torch.manual_seed(" in _source(first)


def test_every_code_cell_ran_without_errors_or_warnings_and_figures_are_images(cells):
    images = 0
    for i, cell in enumerate(c for c in cells if c["cell_type"] == "code" and c.get("id") != "colab-setup"):
        assert cell.get("execution_count") is not None, f"code cell {i} was not executed: run `make execute`"
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"code cell {i} stored an error"
            assert out.get("name") != "stderr", f"code cell {i} stored a warning: {''.join(out.get('text', ''))[:200]}"
            data = out.get("data", {})
            if "<Figure size" in "".join(data.get("text/plain", "")):
                assert "image/png" in data, f"code cell {i} stored a figure as text, not as an image"
            images += "image/png" in data
    assert images >= 8


def test_timings_are_ignored_by_nbval(cells):
    for cell in cells:
        if cell["cell_type"] == "code" and ("attention_cost(" in _source(cell) or "perf_counter" in _source(cell)):
            assert _source(cell).startswith("# NBVAL_IGNORE_OUTPUT")


def test_seed_003_correction_is_a_note(cells):
    notes = [
        _source(c)
        for c in cells
        if c["cell_type"] == "markdown" and ":::{admonition} A note on the source" in _source(c)
    ]
    assert any(
        "*Everything is a mapping*" in n and "with\nitself" in n.replace("with itself", "with\nitself") for n in notes
    )


def test_ends_with_summary_then_exercises(cells):
    headings = [
        line
        for c in cells
        if c["cell_type"] == "markdown"
        for line in _source(c).splitlines()
        if line.startswith("## ")
    ]
    assert headings[-3:] == ["## Summary", "## Exercises", "## References"]
