"""tools/figure_text.py measures the figures a notebook draws while it runs: each PNG (a cell's figure, every frame
of a slider) with its cell and its smallest text on the page, at the PNG's dpi."""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import figure_text  # noqa: E402

CELLS = [
    "import sys; sys.path.insert(0, {root!r})\n%matplotlib inline\nfrom matplotlib.figure import Figure",
    # IPython shows a Figure with axes (here empty, switched off), not one without
    "small = Figure(figsize=(4, 2))\nsmall.add_subplot().set_axis_off()\n"
    "small.text(0.1, 0.5, 'seven', fontsize=7)\nsmall",
    "big = Figure(figsize=(4, 2))\nbig.add_subplot().set_axis_off()\nbig.text(0.1, 0.5, 'ten', fontsize=10)\nbig",
    "from lib.plots import figure_slider\n"
    "def view(size):\n    f = Figure(figsize=(4, 2)); f.text(0.1, 0.5, 'x', fontsize=size); return f\n"
    "figure_slider(view, [9, 12], name='size')",
    "print('no figure')",
]


@pytest.mark.slow
def test_measure_reports_each_png_with_its_cell_and_size(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c.format(root=str(ROOT))) for c in CELLS]
    path = tmp_path / "figures.ipynb"
    nbformat.write(nb, path)
    records = figure_text.measure(path, timeout=120)
    ids = [c.id for c in nb.cells]
    got = [(r["cell"], r["desktop_pt"], r["dpi"]) for r in records]
    assert got == [(ids[1], 7.0, 100.0), (ids[2], 10.0, 100.0), (ids[3], 9.0, 100.0), (ids[3], 12.0, 100.0)]
    assert all(r["phone_pt"] == r["desktop_pt"] for r in records), "a tight PNG of one word fits a phone's column"


def test_a_failing_notebook_is_one_line_naming_the_error(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("raise ValueError('no data')")]
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(RuntimeError, match=r"broken.ipynb: ValueError: no data"):
        figure_text.measure(path, timeout=60)
