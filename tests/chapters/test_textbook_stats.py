"""tools/textbook_stats.py counts what a reader of the core path meets, and the core pages keep within its limits."""

import json
import re

import pytest

from tools import textbook_stats as stats


def _notebook(tmp_path, cells):
    def cell(kind, text, tags=()):
        c = {"cell_type": kind, "metadata": {"tags": list(tags)}, "source": text}
        if kind == "code":
            c["outputs"] = []
        return c

    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps({"cells": [cell(*c) for c in cells], "metadata": {}, "nbformat": 4}))
    return path


def test_counts_the_core_path_only(tmp_path):
    long = " ".join(["word"] * 151)
    path = _notebook(
        tmp_path,
        [
            ("markdown", "# Title\n\nOne two three.\n\n$$\nx = y + z\n$$\n\n:::{note}\n:class: tip\nFour five.\n:::"),
            ("markdown", long),
            ("code", "\n".join(["x = 1"] * 16)),  # visible, 16 lines
            ("code", "\n".join(["x = 1"] * 40), ["remove-cell"]),  # hidden: not counted
            ("code", "# NBVAL_IGNORE_OUTPUT\nprint(1)"),
            ("markdown", "As the *Genius on the left* post and {cite:p}`blog_bert_gpt` say."),
            ("markdown", "## Exercises\n\n" + long),  # after the core path: not counted
            ("code", "\n".join(["x = 1"] * 30), ["solution"]),
        ],
    )
    counts = stats.measure(path)
    # "# Title" (2) + "One two three." (3) + "Four five." (2) + 151 + the mention cell (10)
    assert counts["words"] == 2 + 3 + 2 + 151 + 10
    assert counts["long_paragraphs"] == 1
    assert counts["source_mentions"] == 2
    assert counts["long_code_cells"] == 1
    assert counts["nbval_comments"] == 1


def test_book_pages_are_the_chapters_with_their_deeper_dives(tmp_path, monkeypatch):
    (tmp_path / "chapters").mkdir()
    for name in ("a", "a_more", "b", "ref"):
        (tmp_path / "chapters" / f"{name}.ipynb").write_text("{}")
    toc = tmp_path / "_toc.yml"
    toc.write_text(
        "format: jb-book\nroot: chapters/intro\nparts:\n"
        "  - caption: One\n    chapters:\n      - file: chapters/a\n        sections:\n"
        "          - file: chapters/a_more\n      - file: chapters/b\n"
        "  - caption: Reference\n    chapters:\n      - file: chapters/ref\n"
    )
    monkeypatch.setattr(stats, "ROOT", tmp_path)
    assert stats.book_pages(toc) == [("chapters/a", ["chapters/a_more"]), ("chapters/b", [])]


def test_the_book_has_core_pages():
    pages = stats.book_pages()
    assert len(pages) == 12, [chapter for chapter, _ in pages]


@pytest.mark.parametrize("chapter", [c for c, _ in stats.book_pages()])
def test_core_page_is_within_its_limits(chapter):
    counts = stats.measure(stats.ROOT / f"{chapter}.ipynb")
    over = {key: value for key, value in counts.items() if value > stats.LIMITS[key]}
    assert not over, f"{chapter} is over the textbook edition's limits {stats.LIMITS}: {over}"


def test_core_pages_together_are_within_the_total():
    total = sum(stats.measure(stats.ROOT / f"{chapter}.ipynb")["words"] for chapter, _ in stats.book_pages())
    assert total <= stats.TOTAL_WORDS, f"the core pages hold {total} words of prose (limit {stats.TOTAL_WORDS})"


@pytest.mark.parametrize("chapter", [c for c, _ in stats.book_pages()])
def test_core_page_opens_with_an_in_short_box(chapter):
    cells = json.loads((stats.ROOT / f"{chapter}.ipynb").read_text(encoding="utf-8"))["cells"]
    first = "".join(cells[0]["source"])
    assert first.startswith("# ") and ":::{admonition} In short" in first, f"{chapter}: no 'In short' box first"
    box = first.split(":::{admonition} In short", 1)[1].split(":::", 1)[0]
    for item in ("You will learn", "You need", "Time"):
        assert item in box, f"{chapter}: the 'In short' box says nothing under '{item}'"
    # the reading time it states is the core path at 200 words a minute, rounded to 5 minutes
    stated = int(re.search(r"about (\d+) minutes to read", box).group(1))
    minutes = stats.measure(stats.ROOT / f"{chapter}.ipynb")["words"] / 200
    assert stated % 5 == 0 and abs(stated - minutes) <= 2.5, (
        f"{chapter}: {minutes:.1f} min of reading, box says {stated}"
    )
