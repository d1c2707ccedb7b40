"""Static checks of chapters/transformer.ipynb: what is particular to this chapter.

These read the committed notebook and its deeper dives (with their stored outputs) and never execute them;
`make test` re-runs them with nbval, which also runs the hidden cells that check the whole-model walk-through and
the written-out training step.
The checks every chapter shares are in tests/chapters/test_chapters.py.
"""

import json
import re
from pathlib import Path

import pytest

from lib.diagrams import TRANSFORMER_DIAGRAM_BLOCKS

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "chapters" / "transformer.ipynb"
# The chapter's deeper dives (listed under it in _toc.yml): what left the core path.
DIVES = {
    "transformer_batching": ROOT / "chapters" / "transformer_batching.ipynb",
    "transformer_cost": ROOT / "chapters" / "transformer_cost.ipynb",
}


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


def _table(markdown):
    """The rows of a markdown table as lists of cells (the header and the --- line left out)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in markdown.splitlines()]
    table = [r for r in rows if len(r) > 1]
    assert len(table) > 2 and set(table[1][0]) <= set("-: "), "no markdown table"
    return table[0], table[2:]


def test_the_legend_under_the_diagram_has_a_row_for_every_block_linking_existing_chapters(cells):
    drawn = _diagram(cells)
    legend = next(_source(c) for c in cells[drawn + 1 :] if c["cell_type"] == "markdown")
    header, rows = _table(legend)
    assert len(header) == 3, header  # block in the picture, lib code, the chapter that teaches it
    for key, _, code in TRANSFORMER_DIAGRAM_BLOCKS:
        owner, _, attr = code.rpartition(".")
        names = [attr or owner, owner.split(".")[-1]]
        assert any(all(name in row[1] for name in names) for row in rows), f"{key}: no row names {code}"
    targets = []
    for row in rows:
        taught = row[2]
        links = re.findall(r"\{doc\}`(?:[^`<]*<)?([\w/]+)>?`", taught)
        assert links or "this chapter" in taught, f"row without a link to the chapter that teaches it: {row}"
        targets += links
    assert {"positional_encoding", "self_attention", "multihead_attention"} <= set(targets)
    for target in targets:
        assert any((ROOT / "chapters" / f"{target}{ext}").is_file() for ext in (".ipynb", ".md")), target


def test_the_walk_through_prints_source_decoder_input_and_target_side_by_side(cells):
    i = _index(cells, lambda c: c["cell_type"] == "code" and "pieces(tgt_in)" in _source(c), "the side-by-side table")
    text = "".join("".join(out.get("text", "")) for out in cells[i]["outputs"])
    header = next(line for line in text.splitlines() if "decoder input" in line)
    assert header.split() == ["t", "source", "decoder", "input", "target"]
    assert re.search(r"^ 0\s+\S+\s+<s>\s+\S+", text, re.MULTILINE), "position 0 of the decoder input is <s>"


def _section(cells, index):
    """The text of the last `## ` heading at or before cell ``index``."""
    for cell in reversed(cells[: index + 1]):
        if cell["cell_type"] == "markdown":
            heads = [line for line in _source(cell).splitlines() if line.startswith("## ")]
            if heads:
                return heads[-1]
    return ""


def test_the_sentence_walk_is_the_first_section_and_its_training_step_comes_back_later(cells):
    table = _index(cells, lambda c: c["cell_type"] == "code" and "pieces(tgt_in)" in _source(c), "the walk's table")
    assert _section(cells, table).startswith("## 1. "), "the one-sentence walk opens the chapter's sections"
    step = _index(cells, lambda c: c["cell_type"] == "code" and "train(library" in _source(c), "the library's step")
    assert "pair_batch" in _source(cells[step]), "the training step runs on the walk's sentence"
    assert table < step


def test_the_chapter_uses_the_books_start_and_end_tokens():
    for path in [NOTEBOOK, *DIVES.values()]:
        text = path.read_text(encoding="utf-8")
        assert "<bos>" not in text and "<eos>" not in text, f"{path.name}: the book's tokens are <s> and </s>"


@pytest.mark.parametrize("name", sorted(DIVES))
def test_each_deeper_dive_is_a_page_of_its_own_that_the_chapter_links(cells, name):
    dive = json.loads(DIVES[name].read_text(encoding="utf-8"))["cells"]
    first = _source(dive[0])
    assert first.startswith("# Deeper dive: ") and "{doc}`transformer`" in first
    assert dive[1].get("id") == "colab-setup" and _source(dive[2]).startswith("%matplotlib inline")
    assert _source(dive[-1]).startswith("## Back to the chapter") and "{doc}`transformer`" in _source(dive[-1])
    assert any(c["cell_type"] == "code" and "remove-cell" in _tags(c) for c in dive), "no hidden checks"
    links = [c for c in cells if c["cell_type"] == "markdown" and f"<{name}>`" in _source(c)]
    assert links, f"the chapter does not link {name}"


def _slider_data(cell):
    """The figure-slider JSON (frames, labels, alts) of a cell's stored HTML output."""
    for out in cell.get("outputs", []):
        page = out.get("data", {}).get("text/html")
        page = "".join(page) if isinstance(page, list) else page
        if page and 'class="figure-slider"' in page:
            return json.loads(page.split('class="figure-slider-data">')[1].split("</script>")[0].replace("<\\/", "</"))
    raise AssertionError("no stored figure-slider output: re-execute the chapter")


def test_the_walk_animated_follows_the_diagram_legend_with_a_slider_a_check_and_a_widget(cells):
    # Issue 31: the one-sentence walk as a kernel-free slider and a live widget, right after the block diagram.
    legend = next(i for i in range(_diagram(cells) + 1, len(cells)) if cells[i]["cell_type"] == "markdown")
    assert _source(cells[legend + 1]).startswith("(tr-walk)=\n### "), "the walk's labelled section follows the legend"
    slider, check, widget = cells[legend + 2 : legend + 5]
    assert "sentence_walk(" in _source(slider) and "figure_slider(" in _source(slider)
    assert "remove-cell" in _tags(check) and "Transformer.forward" in _source(check)
    assert "interact_manual" in _source(widget) and "walk_figure(" in _source(widget)
    first = _index(cells, lambda c: c["cell_type"] == "markdown" and _source(c).startswith("## 1. "), "§1")
    assert legend + 4 < first
    data = _slider_data(slider)
    stages = ["embedding", "positional encoding", "encoder layer 1", "memory", "masked self-attention"]
    stages += ["cross-attention", "softmax"]
    for stage in stages:
        assert any(stage in label for label in data["labels"]), f"no frame of the stage {stage!r}"
    assert len(set(data["alts"])) == len(data["frames"]) == 11, "each frame has its own alt text"
    assert all(len(alt.split()) >= 20 for alt in data["alts"]), "alt text a screen reader can use"


def test_the_intro_links_the_walk():
    intro = (ROOT / "chapters" / "intro.md").read_text(encoding="utf-8")
    assert re.search(r"\{ref\}`[^`]*<tr-walk>`", intro), "the intro links the walk's section (label tr-walk)"
