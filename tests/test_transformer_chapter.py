"""Static checks of chapters/transformer.ipynb: what is particular to this chapter.

These read the committed notebook (with its stored outputs) and never execute it; `make test` re-runs it with
nbval, which also runs the hidden cells that check the whole-model walk-through and the written-out training step.
The checks every chapter shares are in tests/test_chapters.py.
"""

import json
import re
from pathlib import Path

import pytest

from lib.plots import TRANSFORMER_DIAGRAM_BLOCKS

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "chapters" / "transformer.ipynb"


@pytest.fixture(scope="module")
def cells():
    assert NOTEBOOK.is_file(), f"{NOTEBOOK} is missing"
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _index(cells, predicate, what):
    hits = [i for i, c in enumerate(cells) if predicate(c)]
    assert len(hits) == 1, f"expected one cell with {what}, found {len(hits)}"
    return hits[0]


def _diagram(cells):
    def draws(cell):
        return cell["cell_type"] == "code" and "plot_transformer_diagram()" in _source(cell)

    return _index(cells, draws, "the diagram")


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def test_the_diagram_is_drawn_before_section_1_and_stored_as_an_image(cells):
    drawn = _diagram(cells)
    first = _index(cells, lambda c: c["cell_type"] == "markdown" and _source(c).startswith("## 1. "), "§1")
    assert drawn < first
    assert "remove-input" not in _tags(cells[drawn]) and "remove-cell" not in _tags(cells[drawn])
    assert any("image/png" in out.get("data", {}) for out in cells[drawn]["outputs"]), "re-execute the chapter"


def test_the_legend_under_the_diagram_names_every_block_and_links_existing_chapters(cells):
    drawn = _diagram(cells)
    legend = next(_source(c) for c in cells[drawn + 1 :] if c["cell_type"] == "markdown")
    assert legend.startswith("| Block in the picture |")
    for key, label, code in TRANSFORMER_DIAGRAM_BLOCKS:
        owner, _, attr = code.rpartition(".")
        assert (attr or owner) in legend and owner.split(".")[-1] in legend, f"{key}: {code} is not in the legend"
        assert label.split(" (")[0].lower()[:12] in legend.lower(), f"{key}: {label!r} has no row"
    rows = [r for r in legend.splitlines() if r.startswith("| ") and not r.startswith("| Block") and "---" not in r]
    assert len(rows) >= 10
    for row in rows:
        assert "{doc}" in row or "this chapter" in row, f"row without a link to the chapter that teaches it: {row}"
    targets = re.findall(r"\{doc\}`(?:[^`<]*<)?([\w/]+)>?`", legend)
    assert {"positional_encoding", "self_attention", "multihead_attention"} <= set(targets)
    for target in targets:
        assert any((ROOT / "chapters" / f"{target}{ext}").is_file() for ext in (".ipynb", ".md")), target


def test_the_walk_through_prints_source_decoder_input_and_target_side_by_side(cells):
    i = _index(cells, lambda c: c["cell_type"] == "code" and "pieces(tgt_in)" in _source(c), "the side-by-side table")
    text = "".join("".join(out.get("text", "")) for out in cells[i]["outputs"])
    header = next(line for line in text.splitlines() if "decoder input" in line)
    assert header.split() == ["t", "source", "decoder", "input", "target"]
    assert re.search(r"^ 0\s+\S+\s+<s>\s+\S+", text, re.MULTILINE), "position 0 of the decoder input is <s>"


def test_the_training_step_and_the_objective_are_asserted_in_hidden_cells(cells):
    hidden = [_source(c) for c in cells if c["cell_type"] == "code" and "remove-cell" in _tags(c)]
    assert any("grad_gap < 1e-6" in s and "lib_loss" in s for s in hidden), "the step's check against lib is gone"
    assert any('reduction="sum"' in s and "torch.allclose(L, ce_sum" in s for s in hidden)
    assert any("y_prime, y_out" in s for s in hidden), "the decoder-layer equations are no longer checked"
