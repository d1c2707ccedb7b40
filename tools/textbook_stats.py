"""How heavy each chapter is to read: the measurements of the textbook edition, per core page and in total.

Usage:
    python tools/textbook_stats.py              # a table, one row per core chapter and one per deeper dive
    python tools/textbook_stats.py --json       # the same as JSON
    python tools/textbook_stats.py --check      # exit 1 when a core page is over a limit (the list says which)

What is counted, per page (a notebook listed in ``_toc.yml``):
- ``words``: the words of prose a reader meets on the page's core path: markdown cells up to the page's
  ``## Exercises`` heading (exercises, solutions and references are not counted), without display maths,
  MyST directive fences and their ``:option:`` lines, and HTML comments.
- ``long_paragraphs``: paragraphs of that prose over 150 words (tables and lists are paragraphs too).
- ``source_mentions``: mentions of the book's five source documents (their nicknames or citation keys) in what
  a reader sees: markdown, visible code and its text output.
- ``long_code_cells``: visible code cells over 15 lines (solutions, hidden cells and the Colab set-up aside).
- ``nbval_comments``: code cells with an ``# NBVAL_`` comment (nbval's masks belong in cell tags).

Core pages are the notebooks listed at the top level of the book's parts (not the Reference part); deeper
dives are the notebooks listed as their ``sections``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

LIMITS = {"words": 4000, "long_paragraphs": 0, "source_mentions": 3, "long_code_cells": 0, "nbval_comments": 0}
TOTAL_WORDS = 35_000
PARAGRAPH_WORDS = 150
CODE_LINES = 15

# The five source documents, as the text names them: nickname or citation key.
SOURCE_NAMES = re.compile(
    r"notes_attention_transformer|blog_bert_gpt|blog_deconstructing_transformer|blog_everything_mapping"
    r"|blog_transformer_background|Genius on the left|Everything is a mapping|Deconstructing the Transformer"
    r"|\*Background\* post|Background post|lecture notes",
    re.IGNORECASE,
)
HIDDEN = {"remove-cell", "remove-input", "solution"}


def book_pages(toc_path: Path = ROOT / "_toc.yml") -> list[tuple[str, list[str]]]:
    """The core chapter notebooks of ``_toc.yml`` in reading order, each with its deeper-dive notebooks.

    Returns:
        ``[(chapter, [deeper dive, ...]), ...]`` as paths relative to the repository root without ``.ipynb``.
    """
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    pages = []
    for part in toc.get("parts", []):
        if part.get("caption") == "Reference":
            continue
        for entry in part.get("chapters", []):
            if (ROOT / f"{entry['file']}.ipynb").exists():
                dives = [s["file"] for s in entry.get("sections", []) if (ROOT / f"{s['file']}.ipynb").exists()]
                pages.append((entry["file"], dives))
    return pages


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _prose(markdown: str) -> str:
    text = re.sub(r"<!--.*?-->", " ", markdown, flags=re.DOTALL)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.DOTALL)
    lines = [ln for ln in text.splitlines() if not re.match(r"\s*(:::|```|:[\w-]+:(\s|$))", ln)]
    return "\n".join(lines)


def _visible_text(cell: dict) -> str:
    if cell["cell_type"] == "markdown":
        return _source(cell)
    if HIDDEN & set(cell.get("metadata", {}).get("tags", [])) or cell.get("id") == "colab-setup":
        return ""
    parts = [_source(cell)]
    for out in cell.get("outputs", []):
        text = out.get("text", out.get("data", {}).get("text/plain", ""))
        parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def measure(path: Path) -> dict:
    """The counts of one notebook (see the module's docstring)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    core, in_core = [], True
    for cell in cells:
        if cell["cell_type"] == "markdown" and re.search(r"^## (Exercises|References)\b", _source(cell), re.M):
            in_core = False
        if in_core:
            core.append(cell)
    prose = [_prose(_source(c)) for c in core if c["cell_type"] == "markdown"]
    paragraphs = [p for text in prose for p in re.split(r"\n\s*\n", text)]
    visible_code = [
        c
        for c in cells
        if c["cell_type"] == "code"
        and not HIDDEN & set(c.get("metadata", {}).get("tags", []))
        and c.get("id") != "colab-setup"
    ]
    return {
        "words": sum(len(text.split()) for text in prose),
        "long_paragraphs": sum(len(p.split()) > PARAGRAPH_WORDS for p in paragraphs),
        "source_mentions": sum(len(SOURCE_NAMES.findall(_visible_text(c))) for c in cells),
        "long_code_cells": sum(len(_source(c).rstrip().splitlines()) > CODE_LINES for c in visible_code),
        "nbval_comments": sum("# NBVAL_" in _source(c) for c in cells if c["cell_type"] == "code"),
    }


def report() -> dict:
    """Every core page's and deeper dive's counts, the core pages' total words, and the limits."""
    chapters, dives = {}, {}
    for chapter, sections in book_pages():
        chapters[chapter] = measure(ROOT / f"{chapter}.ipynb")
        for dive in sections:
            dives[dive] = {"chapter": chapter, **measure(ROOT / f"{dive}.ipynb")}
    total = sum(c["words"] for c in chapters.values())
    return {
        "chapters": chapters,
        "deeper_dives": dives,
        "total_words": total,
        "limits": LIMITS,
        "total_limit": TOTAL_WORDS,
    }


def over_limits(stats: dict) -> list[str]:
    """One line per core page and count over its limit, and one for the total."""
    bad = [
        f"{page}: {key} {value} > {LIMITS[key]}"
        for page, counts in stats["chapters"].items()
        for key, value in counts.items()
        if value > LIMITS[key]
    ]
    if stats["total_words"] > TOTAL_WORDS:
        bad.append(f"total words of the core pages {stats['total_words']} > {TOTAL_WORDS}")
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a core page is over a limit")
    args = parser.parse_args(argv)
    stats = report()
    if args.json:
        print(json.dumps(stats, indent=1))
    else:
        keys = list(LIMITS)
        print(f"{'page':52} " + " ".join(f"{k:>16}" for k in keys))
        rows = [(p, c) for p, c in stats["chapters"].items()]
        rows += [(f"  deeper: {p}", c) for p, c in stats["deeper_dives"].items()]
        for page, counts in rows:
            print(f"{page:52} " + " ".join(f"{counts[k]:>16}" for k in keys))
        print(f"{'limit per core page':52} " + " ".join(f"{LIMITS[k]:>16}" for k in keys))
        print(f"total words of the core pages: {stats['total_words']} (limit {TOTAL_WORDS})")
    bad = over_limits(stats)
    if args.check and bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
