"""The pitfall boxes: each a `:class: warning pitfall` admonition, then its demonstration and its hidden checks.

Each box is followed by one visible code cell of at most 12 lines that ran (an execution count and an output),
then one hidden cell (tag ``remove-cell``) that asserts the numbers the box states.
"""

import json
import re

from tools.textbook_stats import ROOT, book_pages

BOX = re.compile(r":::\{admonition\} Pitfall: .+\n:class: warning pitfall\n")


def _pitfalls():
    """(chapter, index, cells) for every pitfall box of the core chapters."""
    found = []
    for chapter, _ in book_pages():
        cells = json.loads((ROOT / f"{chapter}.ipynb").read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] == "markdown" and ":class: warning pitfall" in "".join(cell["source"]):
                found.append((chapter, i, cells))
    return found


def test_at_least_six_pitfall_boxes_across_the_chapters():
    assert len(_pitfalls()) >= 6, [f"{chapter}[{i}]" for chapter, i, _ in _pitfalls()]


def test_each_box_is_followed_by_a_short_demonstration_that_ran_and_a_hidden_check():
    for chapter, i, cells in _pitfalls():
        box = "".join(cells[i]["source"])
        assert BOX.match(box), f"{chapter}[{i}]: title 'Pitfall: …' and ':class: warning pitfall' first"
        body = box.split("\n", 2)[2].rsplit(":::", 1)[0]
        assert len(body.split()) <= 80, f"{chapter}[{i}]: {len(body.split())} words in the box (at most 80)"
        demo, check = cells[i + 1 : i + 3]
        assert demo["cell_type"] == "code" and "remove-cell" not in demo["metadata"].get("tags", []), chapter
        assert len("".join(demo["source"]).strip().splitlines()) <= 12, f"{chapter}[{i + 1}]: over 12 lines"
        assert demo["execution_count"] and demo["outputs"], f"{chapter}[{i + 1}]: the demonstration has not run"
        assert check["cell_type"] == "code" and "remove-cell" in check["metadata"].get("tags", []), chapter
        assert "assert " in "".join(check["source"]), f"{chapter}[{i + 2}]: the hidden cell asserts nothing"
