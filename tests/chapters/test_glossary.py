"""The glossary's "See {doc}`page`, §N" references (no book build needed).

- every section a glossary entry cites (§N, §N–§M, §N–M, §N and §M) is a numbered heading ("## N. ...") of the
  cited page, so a renumbered chapter cannot leave the glossary pointing at the wrong place;
- every entry's term, or one of its alias lines, occurs in the text of at least one page it cites.
"""

import json
import re
from pathlib import Path

import pytest

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
GLOSSARY = (CHAPTERS / "glossary.md").read_text(encoding="utf-8")
DOC = re.compile(r"\{doc\}`(?:[^`<]*<)?([\w/]+)>?`")
SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)(?:\s*[–-]\s*§?\s*(\d+(?:\.\d+)*))?")


def _entries():
    """(terms, definition) of every entry of the {glossary} directive."""
    block = GLOSSARY.split("```{glossary}", 1)[1].split("```", 1)[0]
    entries = []
    for chunk in re.split(r"\n\s*\n", block):
        lines = [line for line in chunk.splitlines() if line.strip() and not line.startswith(":")]
        terms = [line.strip() for line in lines if not line[0].isspace()]
        if terms:
            entries.append((terms, " ".join(line.strip() for line in lines if line[0].isspace())))
    return entries


def _references(definition):
    """(page, [section numbers]) for every {doc} link of a definition; the numbers follow it up to the next link
    or the end of the sentence."""
    links = list(DOC.finditer(definition))
    refs = []
    for link, after in zip(links, links[1:] + [None]):
        span = definition[link.end() : after.start() if after else len(definition)]
        span = re.split(r"\.(?:\s|$)", span, maxsplit=1)[0]
        refs.append((link.group(1), [n for pair in SECTION.findall(span) for n in pair if n]))
    return refs


def _markdown(page):
    path = CHAPTERS / f"{page}.ipynb"
    if not path.exists():
        return (CHAPTERS / f"{page}.md").read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")


ENTRIES = _entries()


def test_glossary_has_entries():
    assert len(ENTRIES) > 50


@pytest.mark.parametrize(("terms", "definition"), ENTRIES, ids=[terms[0] for terms, _ in ENTRIES])
def test_cited_sections_exist_and_name_the_term(terms, definition):
    refs = _references(definition)
    assert refs, f"glossary entry {terms[0]!r} cites no page"
    texts = []
    for page, numbers in refs:
        assert any((CHAPTERS / f"{page}{ext}").exists() for ext in (".ipynb", ".md")), (
            f"glossary entry {terms[0]!r} cites {page!r}, which is not a page of chapters/"
        )
        text = _markdown(page)
        texts.append(text.lower())
        for number in numbers:
            heading = re.compile(rf"^##+ {re.escape(number)}\.?\s", re.MULTILINE)
            assert heading.search(text), f"glossary entry {terms[0]!r} cites {page}, §{number}: no such heading"
    assert any(term.lower() in text for term in terms for text in texts), (
        f"glossary entry {terms[0]!r}: none of {terms} occurs in the pages it cites ({[p for p, _ in refs]})"
    )
