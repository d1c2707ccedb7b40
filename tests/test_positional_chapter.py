"""Static checks of chapters/positional_encoding.ipynb: what is particular to this chapter.

These read the committed notebook (with its stored outputs) and never execute it; `make test` re-runs it
with nbval. The checks every chapter shares (exercises, solutions, widgets, figures) are in tests/test_chapters.py.
"""

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "chapters" / "positional_encoding.ipynb"


@pytest.fixture(scope="module")
def cells():
    # a missing notebook is a failure, not a skip: the chapter is in the toc and the book needs it
    assert NOTEBOOK.is_file(), f"{NOTEBOOK} is missing"
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_seed_001_correction_is_a_note(cells):
    notes = [
        _source(c)
        for c in cells
        if c["cell_type"] == "markdown" and ":::{admonition} A note on the source" in _source(c)
    ]
    assert any("PE(0,6)" in n and "PE(0,7)" in n for n in notes)
