"""The bibliography and the glossary: citations, bib entries and glossary terms agree (no book build needed).

Checks, on the sources only:
- every key cited with {cite}, {cite:t} or {cite:p} in chapters/*.ipynb (markdown cells) and chapters/*.md
  exists in references.bib, and every entry of references.bib is cited somewhere;
- every entry has an author, a title, a year and a url, except the five source documents (keys notes_*/blog_*),
  which have no stated author, year or address: they have their Chinese title, an English translation (note) and
  the kind of document (howpublished), and the intro's "Sources" section cites each of them;
- every chapter's "References" section is a list of {cite:t} bullets, and no markdown still cites a paper in
  plain text ("Vaswani et al. (2017)", "(Jain and Wallace 2019)");
- every glossary entry gives a Chinese equivalent (at least one CJK character in its definition);
- the Reference part of the table of contents lists the glossary and the bibliography.
"""

import json
import re
from pathlib import Path

import pytest
from pybtex.database import parse_file
from sphinxcontrib.bibtex.citation_target import parse_citation_targets

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
MARKDOWN_PAGES = sorted(CHAPTERS.glob("*.md"))

# {cite}`key`, {cite:t}`key1,key2`, {cite:p}`{pre}key{post}` (sphinxcontrib-bibtex's roles in MyST syntax)
CITE_ROLE = re.compile(r"\{cite(?::[a-z]+)*\}`([^`]+)`")
# plain-text citations: "Vaswani et al. (2017", "Vaswani et al. 2017", "Jain and Wallace 2019", "Cho et al. (2014b)"
PLAIN_CITATION = re.compile(r"\b[A-Z][\w'’-]+(?: et al\.,?| and [A-Z][\w'’-]+,?)\s+\(?(?:19|20)\d\d[a-z]?\b")
CJK = re.compile(r"[\u3400-\u9fff]")
# the book's five source documents (Chinese lecture notes and blog posts): keys name their subject
SOURCE_KEY = re.compile(r"(notes|blog)_[a-z_]+")


def _markdown_texts(path):
    """(label, text) of every markdown cell of a notebook, or of the whole page for a .md file."""
    if path.suffix == ".md":
        return [(path.name, path.read_text(encoding="utf-8"))]
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        (f"{path.name} cell {cell.get('id', i)}", "".join(cell["source"]))
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown"
    ]


def _all_markdown():
    return [item for path in NOTEBOOKS + MARKDOWN_PAGES for item in _markdown_texts(path)]


def _cited_keys(text):
    keys = []
    for targets in CITE_ROLE.findall(text):
        keys += [target.key for target in parse_citation_targets(targets)]
    return keys


@pytest.fixture(scope="module")
def bib():
    return parse_file(str(ROOT / "references.bib"), bib_format="bibtex")


@pytest.fixture(scope="module")
def citations():
    """{key: [where it is cited]} over all chapter markdown."""
    found = {}
    for where, text in _all_markdown():
        for key in _cited_keys(text):
            found.setdefault(key, []).append(where)
    return found


def test_the_chapters_cite_something(citations):
    assert len(citations) >= 10, f"only {len(citations)} distinct keys cited: is the {{cite}} pattern still right?"


def test_every_cited_key_is_in_the_bib(bib, citations):
    missing = {key: where for key, where in citations.items() if key not in bib.entries}
    assert not missing, f"cited but not in references.bib: {missing}"


def test_every_bib_entry_is_cited(bib, citations):
    unused = sorted(key for key in bib.entries if key not in citations)
    assert not unused, f"in references.bib but cited nowhere in chapters/: {unused}"


def test_every_entry_has_author_title_year_and_url(bib):
    problems = []
    for key, entry in bib.entries.items():
        if SOURCE_KEY.fullmatch(key):
            continue  # checked by test_source_documents_have_title_translation_and_kind
        if not entry.persons.get("author"):
            problems.append(f"{key}: no author")
        for field in ("title", "year", "url"):
            if not entry.fields.get(field, "").strip():
                problems.append(f"{key}: no {field}")
        year = entry.fields.get("year", "")
        if year and not re.fullmatch(r"(19|20)\d\d", year):
            problems.append(f"{key}: year {year!r} is not a four-digit year")
    assert not problems, "; ".join(problems)


def test_keys_follow_surname_year_word(bib):
    bad = [
        key
        for key in bib.entries
        if not re.fullmatch(r"[a-z]+(19|20)\d\d[a-z0-9]+", key) and not SOURCE_KEY.fullmatch(key)
    ]
    assert not bad, f"keys not of the form surname<year><firstword>: {bad}"


def test_source_documents_have_title_translation_and_kind(bib):
    sources = {key: entry for key, entry in bib.entries.items() if SOURCE_KEY.fullmatch(key)}
    assert len(sources) == 5, f"expected the five source documents in references.bib, found {sorted(sources)}"
    problems = []
    for key, entry in sources.items():
        if not CJK.search(entry.fields.get("title", "")):
            problems.append(f"{key}: the title should be the document's Chinese title")
        if not entry.fields.get("note", "").startswith("English: "):
            problems.append(f"{key}: no English translation (note = {{English: ...}})")
        if not re.match(
            r"(Lecture notes|Blog post|Technical blog post) \(Chinese\)", entry.fields.get("howpublished", "")
        ):
            problems.append(f"{key}: howpublished should say the kind of document")
    assert not problems, "; ".join(problems)
    intro = (CHAPTERS / "intro.md").read_text(encoding="utf-8")
    sources_section = intro.split("## Sources", 1)[-1].split("\n## ", 1)[0]
    missing = [key for key in sources if key not in _cited_keys(sources_section)]
    assert not missing, f"the intro's Sources section does not cite {missing}"


def _references_sections():
    """(where, text) of every markdown cell or page section that starts with a '## References' heading."""
    sections = []
    for where, text in _all_markdown():
        match = re.search(r"^## References\s*$(.*?)(?=^#{1,2} |\Z)", text, flags=re.M | re.S)
        if match:
            sections.append((where, match.group(1)))
    return sections


def test_references_sections_exist():
    assert len(_references_sections()) >= 5, "expected a '## References' section at the end of most chapters"


@pytest.mark.parametrize("where,text", [pytest.param(*section, id=section[0]) for section in _references_sections()])
def test_references_sections_are_cite_bullets(where, text):
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    assert bullets, f"{where}: '## References' has no bullet list"
    plain = [line for line in bullets if not line.startswith("- {cite:t}`")]
    assert not plain, f"{where}: References bullets without a leading {{cite:t}} role: {plain}"


@pytest.mark.parametrize("path", NOTEBOOKS + MARKDOWN_PAGES, ids=lambda path: path.name)
def test_no_plain_text_citations(path):
    found = []
    for where, text in _markdown_texts(path):
        found += [f"{where}: {match.group(0)!r}" for match in PLAIN_CITATION.finditer(text)]
    assert not found, "cite these with {cite:t}/{cite:p} instead of plain text: " + "; ".join(found)


def _glossary_entries():
    """[(terms, definition)] of the {glossary} directive in chapters/glossary.md."""
    text = (CHAPTERS / "glossary.md").read_text(encoding="utf-8")
    match = re.search(r"^```\{glossary\}\n(.*?)^```$", text, flags=re.M | re.S)
    assert match, "chapters/glossary.md has no ```{glossary} directive"
    entries, terms, definition = [], [], []
    for line in match.group(1).splitlines():
        if line.startswith(":"):  # directive options such as :sorted:
            continue
        if line and not line[0].isspace():
            if definition:  # a new entry starts
                entries.append((terms, "\n".join(definition)))
                terms, definition = [], []
            terms.append(line.strip())
        elif line.strip():
            definition.append(line.strip())
    if terms:
        entries.append((terms, "\n".join(definition)))
    return entries


def test_glossary_has_entries():
    entries = _glossary_entries()
    assert len(entries) >= 40, f"only {len(entries)} glossary entries"
    terms = [term.lower() for entry_terms, _ in entries for term in entry_terms]
    duplicates = sorted({term for term in terms if terms.count(term) > 1})
    assert not duplicates, f"glossary terms defined twice: {duplicates}"


@pytest.mark.parametrize("terms,definition", [pytest.param(*entry, id=entry[0][0]) for entry in _glossary_entries()])
def test_glossary_entry_has_chinese_definition_and_link(terms, definition):
    assert definition, f"{terms}: no definition"
    assert definition.startswith("Chinese:"), f"{terms}: the definition should start with 'Chinese: ...'"
    chinese = definition.split(".", 1)[0]
    assert CJK.search(chinese), f"{terms}: no Chinese (CJK) term in {chinese!r}"
    assert "{doc}`" in definition, f"{terms}: no link to the chapter that explains it"


def test_toc_has_the_reference_part():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    part = toc.split("- caption: Reference", 1)
    assert len(part) == 2, "_toc.yml has no 'Reference' part"
    assert "chapters/glossary" in part[1] and "chapters/bibliography" in part[1]
    page = (CHAPTERS / "bibliography.md").read_text(encoding="utf-8")
    assert "```{bibliography}" in page
