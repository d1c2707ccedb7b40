"""Tests of the portable notebooks (``tools/portable.py``, ``make portable``, committed in ``notebooks/``): no MyST
directive or role survives, the code cells and outputs are the chapters' own, every citation resolves to
"Author (year)" text and a reference entry, solutions are folded, links point to files that exist, and the
committed notebooks are up to date with the chapters.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


portable = _load("portable_tool", ROOT / "tools" / "portable.py")
colab_cell = _load("colab_cell_tool", ROOT / "tools" / "colab_cell.py")
PLACEHOLDER = colab_cell.is_placeholder(colab_cell.repository_url())

# What MyST looks like: a directive fence, a role, a target line, a directive option line.
MYST = re.compile(
    r"(?P<what>^[ \t>]*(?:`{3,}|:{3,})[ \t]*\{[\w:-]+\}"  # ```{note}  :::{exercise}
    r"|\{[\w:-]+\}`"  # {cite:t}`key`, {doc}`page`, {ref}`label`, {eq}`label`, any role
    r"|\{(?:cite|ref|numref|doc|eq|term|math|download)[:}]"
    r"|^\([\w.:-]+\)=[ \t]*$"  # (label)=
    r"|^[ \t>]*:(?:class|label|name|nonumber|dropdown):)",
    re.M,
)


@pytest.fixture(scope="module")
def built() -> dict[str, dict]:
    """The portable notebooks as the tool writes them now, from the chapters in the working tree."""
    return {name: json.loads(text) for name, text in portable.build().items()}


def _markdown(nb: dict) -> list[str]:
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def _chapter(name: str) -> dict:
    return json.loads((ROOT / "chapters" / name).read_text(encoding="utf-8"))


def test_there_is_one_portable_notebook_per_chapter(built):
    assert CHAPTERS
    assert sorted(built) == [p.name for p in CHAPTERS]


def test_committed_portable_notebooks_are_up_to_date():
    stale = portable.stale()
    assert not stale, (
        f"notebooks/ is out of date with chapters/ ({', '.join(stale)}): run `make portable` "
        "(python tools/portable.py) and commit notebooks/"
    )


def test_no_myst_directive_or_role_survives(built):
    found = []
    for name, nb in built.items():
        for text in _markdown(nb):
            # Code spans and fenced code may show MyST as an example; the rendered text may not.
            prose = re.sub(r"(?ms)^[ \t]*```(?!\{).*?^[ \t]*```[ \t]*$|`[^`\n]+`", "", text)
            found += [f"{name}: {m.group(0).strip()!r}" for m in MYST.finditer(prose)]
    assert not found, found[:10]


def test_the_myst_pattern_catches_what_the_chapters_use():
    """The check above is only as good as its pattern: it must find every construct the chapters are written in."""
    text = "\n".join(t for p in CHAPTERS for t in _markdown(_chapter(p.name)))
    kinds = {m.group(0).strip()[:8] for m in MYST.finditer(text)}
    assert {":::{exer", ":::{admo", "```{solu", "{cite:t}", "{cite:p}", "{doc}`"} <= kinds, kinds


def test_code_cells_and_outputs_equal_the_chapters(built):
    for name, nb in built.items():
        chapter = [c for c in _chapter(name)["cells"] if c["cell_type"] == "code"]
        ported = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert len(ported) == len(chapter), name
        for ours, theirs in zip(ported, chapter, strict=True):
            for key in ("id", "source", "outputs", "execution_count"):
                if key == "source" and theirs.get("id") == "colab-setup" and PLACEHOLDER:
                    continue  # tested below: no clone step while repository.url is the placeholder
                assert ours.get(key) == theirs.get(key), f"{name}, cell {theirs.get('id')}: {key} differs"
            meta = {k: v for k, v in ours["metadata"].items() if k != "cellView"}
            if "jupyter" in meta and "jupyter" not in theirs["metadata"]:
                meta["jupyter"] = {k: v for k, v in meta["jupyter"].items() if k != "source_hidden"} or None
                if meta["jupyter"] is None:
                    del meta["jupyter"]
            assert meta == theirs["metadata"], f"{name}, cell {theirs.get('id')}: metadata differs beyond folding"
        assert nb["metadata"] == _chapter(name)["metadata"], name


def test_citations_read_as_author_and_year():
    bib = portable.Bibliography.load()
    cite = portable.format_cite
    assert cite("cite:t", "vaswani2017attention", bib, []) == "Vaswani et al. (2017)"
    assert cite("cite:p", "vaswani2017attention", bib, []) == "(Vaswani et al., 2017)"
    assert cite("cite:p", "bahdanau2015neural{§3.2}", bib, []) == "(Bahdanau et al., 2015, §3.2)"
    assert cite("cite:t", "jain2019attention", bib, []) == "Jain and Wallace (2019)"
    assert cite("cite:p", "jain2019attention,wiegreffe2019attention", bib, []) == (
        "(Jain and Wallace, 2019; Wiegreffe and Pinter, 2019)"
    )
    with pytest.raises(KeyError):
        cite("cite:t", "nobody1999nothing", bib, [])


def test_every_citation_resolves_and_is_listed(built):
    bib = portable.Bibliography.load()
    cited = 0
    for name, nb in built.items():
        chapter_text = "\n".join(_markdown(_chapter(name)))
        keys = {
            key
            for body in re.findall(r"\{cite(?::\w+)?\}`([^`]*)`", chapter_text)
            for _, key, _ in portable.parse_cite(body)
        }
        missing = sorted(keys - set(bib.authors))
        assert not missing, f"{name}: cited but not in references.bib: {missing}"
        text = "\n".join(_markdown(nb))
        for key in keys:
            assert f"{bib.authors[key]} ({bib.years[key]})" in text or f"{bib.authors[key]}, {bib.years[key]}" in text
        if keys:
            cited += 1
            listing = _markdown(nb)[-1]
            assert re.match(r"#{2,3} ", listing), f"{name}: the reference list is not the last cell"
            for key in keys:
                assert bib.text[key] in listing, f"{name}: {key} missing from the reference list"
    assert cited >= 1, "no chapter cites anything: the citation pattern found nothing to check"


def test_solutions_are_folded(built):
    for name, nb in built.items():
        chapter_md = "\n".join(_markdown(_chapter(name)))
        written = len(re.findall(r"^:::+\{solution\}", chapter_md, re.M))
        gated = len(re.findall(r"^`{3,}\{solution-start\}", chapter_md, re.M))
        text = "\n".join(_markdown(nb))
        details = re.findall(
            r"<details>\n<summary><b>Solution to Exercise \d+</b></summary>\n(.*?)\n</details>", text, re.S
        )
        assert len(details) == written, f"{name}: {written} markdown solutions, {len(details)} <details>"
        assert all(d.strip() for d in details), f"{name}: an empty solution"
        assert text.count("<details>") == text.count("</details>"), name
        # Solutions written as code: every cell between solution-start and solution-end is folded.
        cells, folded, inside = _chapter(name)["cells"], 0, False
        ported = {c.get("id"): c for c in nb["cells"]}
        for cell in cells:
            source = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and "{solution-start}" in source:
                inside = True
            elif cell["cell_type"] == "markdown" and "{solution-end}" in source:
                inside = False
            elif cell["cell_type"] == "code" and inside:
                assert ported[cell["id"]]["metadata"]["jupyter"]["source_hidden"] is True, f"{name}: {cell['id']}"
                folded += 1
            elif cell["cell_type"] == "code":
                assert not ported[cell["id"]]["metadata"].get("jupyter", {}).get("source_hidden"), cell["id"]
        assert folded >= gated, f"{name}: {gated} code solutions, {folded} folded cells"
        assert text.count("**Solution to Exercise") == gated, name


def test_exercises_are_numbered_in_order(built):
    for name, nb in built.items():
        count = len(re.findall(r"^[`:]{3,}\{exercise\}", "\n".join(_markdown(_chapter(name))), re.M))
        numbers = [int(n) for n in re.findall(r"^> \*\*Exercise (\d+)\*\*", "\n".join(_markdown(nb)), re.M)]
        assert numbers == list(range(1, count + 1)), f"{name}: {numbers}"


def test_links_point_to_files_that_exist(built):
    checked = 0
    for name, nb in built.items():
        for text in _markdown(nb):
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                path = (ROOT / "notebooks" / target.split("#")[0]).resolve()
                assert path.exists(), f"{name}: link to missing file {target}"
                checked += 1
    assert checked >= 1, "no link to a file was found: the link pattern checked nothing"


def test_an_unknown_directive_or_role_stops_the_tool_naming_the_cell():
    bib, labels = portable.Bibliography.load(), portable.Labels.collect(CHAPTERS)
    ctx = portable.Context("x", bib, labels, where="chapters/x.ipynb, cell 3")
    with pytest.raises(portable.PortableError, match=r"chapters/x\.ipynb, cell 3: unknown directive \{mystery\}"):
        portable.convert_markdown(":::{mystery}\nbody\n:::", ctx)
    with pytest.raises(portable.PortableError, match=r"cell 3: unknown role \{mystery\}"):
        portable.convert_markdown("text {mystery}`x` text", ctx)
    with pytest.raises(portable.PortableError, match=r"not in references\.bib"):
        portable.convert_markdown("{cite:t}`nobody1999nothing`", ctx)
    # Code spans and code blocks are left alone.
    kept = "`{cite:t}` is a role\n\n```\n:::{note}\n```"
    assert portable.convert_markdown(kept, ctx) == kept


def test_admonitions_become_quotes_and_dropdowns_details():
    bib, labels = portable.Bibliography.load(), portable.Labels.collect(CHAPTERS)
    ctx = portable.Context("x", bib, labels)
    assert portable.convert_markdown(":::{note}\nOne $x$.\n\nTwo.\n:::", ctx) == "> **Note**\n>\n> One $x$.\n>\n> Two."
    folded = portable.convert_markdown(":::{tip} Why?\n:class: dropdown\nBecause.\n:::", ctx)
    assert folded == "<details>\n<summary><b>Why?</b></summary>\n\nBecause.\n\n</details>"
    assert portable.convert_markdown("```{figure} fig.png\n:alt: A plot\nThe caption.\n```", ctx) == (
        "![A plot](../chapters/fig.png)\n\n*The caption.*"
    )


def test_the_site_serves_the_portable_notebooks_from_its_buttons():
    """tools/sphinxext/book_site.py points the chapter's .ipynb download and its Colab/Binder buttons to notebooks/."""
    book_site = _load("book_site_ext", ROOT / "tools" / "sphinxext" / "book_site.py")

    class App:
        srcdir = str(ROOT)

    page = "chapters/" + CHAPTERS[0].stem
    repo = "https://colab.research.google.com/github/o/r/blob/main/"
    context = {
        "pathto": lambda target, resource=0: "../" + target,
        "header_buttons": [
            {
                "label": "download-buttons",
                "buttons": [{"url": f"../_sources/{page}.ipynb"}, {"type": "javascript"}],
            },
            {
                "label": "launch-buttons",
                "buttons": [
                    {"url": f"https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/{page}.ipynb"},
                    {"url": f"{repo}{page}.ipynb"},
                ],
            },
        ],
    }
    book_site._portable_buttons(App(), page, context)
    download, launch = context["header_buttons"]
    assert download["buttons"][0]["url"] == f"../notebooks/{CHAPTERS[0].name}"
    assert launch["buttons"][0]["url"].endswith(f"urlpath=lab/tree/notebooks/{CHAPTERS[0].name}")
    assert launch["buttons"][1]["url"] == f"{repo}notebooks/{CHAPTERS[0].name}"


def test_the_colab_cell_clones_nothing_while_the_repository_url_is_the_placeholder(built):
    """Colab opens the portable notebooks: with the placeholder URL their set-up cell must not clone a repository
    that does not exist, but stop on Colab with a message naming the setting; with a real URL it is the chapter's."""
    for name, nb in built.items():
        cell = next(c for c in nb["cells"] if c.get("id") == "colab-setup")
        chapter = next(c for c in _chapter(name)["cells"] if c.get("id") == "colab-setup")
        source = "".join(cell["source"])
        if PLACEHOLDER:
            assert "subprocess" not in source and '"git"' not in source and "pip" not in source, name
            assert 'if "google.colab" in sys.modules:' in source and "raise RuntimeError(" in source, name
            assert "repository.url" in source and colab_cell.PLACEHOLDER_URL in source, name
            assert cell["metadata"] == chapter["metadata"] and cell["outputs"] == [], name
        else:
            assert cell["source"] == chapter["source"], name
    # Off Colab the placeholder cell does nothing, as the chapters' cell does (nbval runs it with no output).
    exec(compile(colab_cell.placeholder_source(), "colab-setup", "exec"), {})
    # With a real URL the tool keeps the chapter's cell: convert_notebook is given no replacement.
    chapter = CHAPTERS[0]
    kept = portable.convert_notebook(chapter, portable.Bibliography.load(), portable.Labels.collect(CHAPTERS))
    assert (
        next(c for c in kept["cells"] if c.get("id") == "colab-setup")["source"]
        == next(c for c in _chapter(chapter.name)["cells"] if c.get("id") == "colab-setup")["source"]
    )


def test_the_placeholder_url_is_recognised_only_as_itself():
    url = colab_cell.PLACEHOLDER_URL
    assert (
        colab_cell.is_placeholder(url)
        and colab_cell.is_placeholder(url + ".git")
        and colab_cell.is_placeholder(url + "/")
    )
    assert not colab_cell.is_placeholder("https://github.com/someone/attention-book")
    assert not colab_cell.is_placeholder(url + "-fork")


def test_the_site_numbers_exercises_from_1_on_every_page():
    """book_site renumbers what Sphinx numbered across the book (no numbered toc) from 1 on each page, in order;
    Sphinx's own numbers are kept aside and put back before it numbers again (incremental builds)."""
    book_site = _load("book_site_ext", ROOT / "tools" / "sphinxext" / "book_site.py")

    env = types.SimpleNamespace(
        toc_fignumbers={
            "chapters/a": {"exercise": {"ex-a1": (1,), "ex-a2": (2,)}},
            "chapters/b": {"exercise": {"ex-b2": (4,), "ex-b1": (3,)}, "figure": {"fig": (2,)}},
            "chapters/c": {"exercise": {"ex-c1": (1, 1), "ex-c2": (2, 1)}},  # a numbered toc: left alone
        }
    )
    sphinx_numbers = json.loads(json.dumps(env.toc_fignumbers))
    assert book_site._number_within_page(None, env) == []
    assert env.toc_fignumbers["chapters/a"] == {"exercise": {"ex-a1": (1,), "ex-a2": (2,)}}
    assert env.toc_fignumbers["chapters/b"] == {"exercise": {"ex-b1": (1,), "ex-b2": (2,)}, "figure": {"fig": (1,)}}
    assert env.toc_fignumbers["chapters/c"] == {"exercise": {"ex-c1": (1, 1), "ex-c2": (2, 1)}}
    book_site._restore_book_numbers(None, env)
    assert json.loads(json.dumps(env.toc_fignumbers)) == sphinx_numbers


def test_the_site_leaves_out_launch_buttons_while_the_repository_url_is_the_placeholder():
    book_site = _load("book_site_ext", ROOT / "tools" / "sphinxext" / "book_site.py")
    launch = {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"}

    class App:
        srcdir = str(ROOT)

    class Config:
        def __init__(self, url):
            self.html_theme_options = {"repository_url": url, "use_repository_button": True, "launch_buttons": launch}

    placeholder = Config(colab_cell.PLACEHOLDER_URL)
    book_site._leave_out_placeholder_buttons(App(), placeholder)
    assert placeholder.html_theme_options["launch_buttons"] == {}
    assert placeholder.html_theme_options["use_repository_button"] is False
    real = Config("https://github.com/someone/attention-book")
    book_site._leave_out_placeholder_buttons(App(), real)
    assert real.html_theme_options == Config("https://github.com/someone/attention-book").html_theme_options


def test_an_attention_explorer_becomes_the_code_that_draws_it_live(built):
    """The website's {attention-explorer} (maps computed at build time) becomes, in a portable notebook, a note and
    a code block that draws the same explorer in the notebook; the code runs and shows the directive's sentences."""
    chapters_with = {
        p.name: re.findall(r"(?ms)^```\{attention-explorer\}\n(.*?)^```", "\n".join(_markdown(_chapter(p.name))))
        for p in CHAPTERS
    }
    chapters_with = {name: found for name, found in chapters_with.items() if found}
    assert chapters_with, "no chapter uses the attention explorer"
    blocks = {}
    for name, directives in chapters_with.items():
        text = "\n".join(_markdown(built[name]))
        assert "{attention-explorer}" not in text and "**Attention explorer.**" in text
        codes = re.findall(r"(?ms)^```python\n(from lib\.checkpoint import SHIPPED_MODEL.*?)^```", text)
        assert len(codes) == len(directives), name
        for body, code in zip(directives, codes):
            sentences = [line for line in body.splitlines() if line.strip() and not line.startswith(":")]
            assert all(json.dumps(s, ensure_ascii=False) in code for s in sentences), (name, sentences)
            compile(code, name, "exec")
            blocks[name] = (code, sentences)
    code, sentences = blocks["bahdanau_attention.ipynb"]  # the recurrent model: quick to run
    namespace: dict = {}
    exec(code.replace("explorer_widget(run.model", "widget = explorer_widget(run.model"), namespace)
    assert [s["source"] for s in namespace["widget"].data["sentences"]] == sentences
