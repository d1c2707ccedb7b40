"""Reader-facing text names the source documents as works, never by their file numbers.

The book follows five Chinese documents (lecture notes and blog posts, described on the page "Sources and
errata", chapters/sources_errata.ipynb, and in references.bib). While the book was written they were files 000 to
004 ("seed 001"), a name that means nothing to a reader. This test fails if any text a reader or student
sees still says so:

- notebook markdown cells, code cells' source (comments, strings, figure titles) and stored outputs (text/plain,
  text/html with its alt texts, stream text, output metadata);
- the Markdown pages chapters/*.md (intro, glossary, bibliography, instructor page);
- the checkers' messages (the source of lib/exercises/*.py) and the classroom's (lib/classroom/*.py: the student
  edition, the grader).

The built website is checked too, by tests/browser/test_no_source_file_names.py.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
MARKDOWN_PAGES = sorted(CHAPTERS.glob("*.md"))
SOURCES = sorted((ROOT / "lib" / "exercises").glob("*.py")) + sorted((ROOT / "lib" / "classroom").glob("*.py"))
# text files that pages include (the grading example's CSV and summary on the instructor page)
INCLUDED = sorted(p for p in (CHAPTERS / "images").glob("*") if p.suffix in {".csv", ".txt", ".json", ".md"})

# "seed 001", "Seed 000's", "seeds 000 and 004", "seed001", "seed_002", a path ".../seeds/", "seed document(s)",
# and "the seeds" / "a seed" as a name for the source documents ("not in the seeds", "the seeds say")
FILE_NAME = re.compile(
    r"seeds?[\s_-]?0\d\d|seeds/|seed documents?"
    r"|(?:in|of|from) the seeds?\b(?! of\b| for\b| \d)|the seeds (?:say|give|use)",
    re.IGNORECASE,
)
BINARY = ("image/png", "image/jpeg", "image/gif", "application/pdf")


def offending(text: str) -> list[str]:
    """The matches of FILE_NAME in text, each with a little context."""
    return [repr(text[max(0, m.start() - 40) : m.end() + 40]) for m in FILE_NAME.finditer(text)]


def _output_texts(output: dict) -> str:
    """All text of a stored output except binary images: stream text, every text MIME type, metadata."""
    parts = ["".join(output.get("text", ""))]
    for mime, value in output.get("data", {}).items():
        if mime not in BINARY:
            parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    parts.append(json.dumps(output.get("metadata", {}), ensure_ascii=False))
    return "\n".join(parts)


def test_the_pattern_catches_what_it_must():
    for text in (
        "Seed 001 prints",
        "seeds 000 and 004",
        "seed001",
        "shared/seeds/000.txt",
        "the seed documents",
        "(standard term, not in the seeds)",
        "as the seeds say",
    ):
        assert offending(text), text
    for text in (
        "torch.manual_seed(0)",
        "seed=0",
        "a random seed",
        "seed_ids = [0, 1]",
        "PERF_SEEDS",
        "with fixed seeds and step counts",
        "the mean of the seeds of the random features",
        "over 5 seeds",
    ):
        assert not offending(text), text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_text_names_no_source_file(path):
    found = []
    for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        where = f"{path.name} cell {i} ({cell['cell_type']}, id {cell.get('id', '?')})"
        found += [f"{where} source: {hit}" for hit in offending("".join(cell["source"]))]
        for j, output in enumerate(cell.get("outputs", [])):
            found += [f"{where} output {j}: {hit}" for hit in offending(_output_texts(output))]
    assert not found, (
        "name the source document as a work (see the page Sources and errata), not by its file:\n" + "\n".join(found)
    )


@pytest.mark.parametrize("path", MARKDOWN_PAGES + SOURCES + INCLUDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_page_or_message_names_no_source_file(path):
    found = [
        f"{path.relative_to(ROOT)} line {text.count(chr(10), 0, m.start()) + 1}: {text[m.start() : m.end() + 30]!r}"
        for text in [path.read_text(encoding="utf-8")]
        for m in FILE_NAME.finditer(text)
    ]
    assert not found, (
        "name the source document as a work (see the page Sources and errata), not by its file:\n" + "\n".join(found)
    )
