"""Write the portable notebooks: every chapter with its MyST markup turned into what any notebook front end renders.

The chapters (``chapters/*.ipynb``) are written in MyST: ``:::{exercise}``, ``:::{solution}``, ``{cite:t}`key```,
``{doc}`page```, ``:::{note}``. The website (Jupyter Book) and JupyterLab with ``jupyterlab-myst`` render it;
Colab, VS Code, Notebook without the extension and GitHub's notebook viewer show it raw. This tool writes, from
the same chapters and nothing else, one notebook per chapter into ``notebooks/`` whose markdown uses only
CommonMark, ``$…$`` / ``$$…$$`` maths and a little HTML:

- exercises and other admonitions: a blockquote with a bold title ("**Exercise 3**", "**Note**");
- solutions written in markdown: ``<details><summary>Solution to Exercise 3</summary> … </details>``; solutions
  that are code cells (``solution-start`` … ``solution-end``): a bold "Solution to Exercise 3" line, and the code
  cells get ``jupyter.source_hidden`` (folded in JupyterLab, Notebook 7 and VS Code) and Colab's
  ``cellView: form`` (folded in Colab);
- citations as text read from ``references.bib``: "Vaswani et al. (2017)" for ``{cite:t}``, "(Vaswani et al.,
  2017)" for ``{cite:p}``, with a reference list at the end of the notebook;
- ``{doc}`` a link to the other portable notebook (or to the page's source for the non-notebook pages),
  ``{ref}`` / ``{numref}`` the target's name ("Exercise 3", a section title), ``{eq}`` the equation's number;
- ``{figure}`` / ``{image}``: a markdown image;
- ``{attention-explorer}`` (the website's attention explorer, drawn from maps computed at build time): a note
  that the website shows it there, and the code that draws the same explorer live in the notebook
  (``lib.explorer.explorer_widget``, the same ES module as an anywidget);
- the Colab set-up cell (``tools/colab_cell.py``): while ``repository.url`` in ``_config.yml`` is the placeholder,
  a cell that clones nothing and says why on Colab (the chapters keep the cell written from the URL).

A directive or role it does not know stops it with an error that names the notebook and the cell, so no MyST
markup can slip through (``tests/chapters/test_portable.py`` checks that none survives). Code cells keep their
source and outputs unchanged (but for the Colab set-up cell above). The notebooks are committed (Colab opens a path
in the GitHub repository; the website's download button and launch buttons point to them) and must be regenerated
after any chapter edit:

Usage: ``python tools/portable.py`` (``make portable``) writes ``notebooks/``; ``python tools/portable.py --check``
exits 1 and names the notebooks that are missing or out of date.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
OUT = ROOT / "notebooks"
BIB = ROOT / "references.bib"
REGENERATE = "make portable"  # the command named by every "out of date" message

# Admonitions and the title each gets when the directive has no argument.
ADMONITIONS = {
    "note": "Note",
    "tip": "Tip",
    "hint": "Hint",
    "important": "Important",
    "warning": "Warning",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "error": "Error",
    "seealso": "See also",
    "admonition": "",
    "margin": "",
    "sidebar": "",
    "epigraph": "",
    "topic": "",
}

OPENING = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>:{3,}|`{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*?)[ \t]*$")
OPTION = re.compile(r"^[ \t]*:(?P<key>[\w-]+):[ \t]*(?P<value>.*?)[ \t]*$")
TARGET = re.compile(r"^\((?P<label>[\w.:-]+)\)=[ \t]*$", re.M)
EQ_LABEL = re.compile(r"\$\$[ \t]*\((?P<label>[\w.:-]+)\)[ \t]*$", re.M)
ROLE_OR_CODE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<body>[^`]*)`|(?P<ticks>`+)(?:[^`]|(?!(?P=ticks))`)+?(?P=ticks)")
CODE_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(?!\{)")


class PortableError(ValueError):
    """A chapter uses MyST markup this tool cannot translate (names the notebook, the cell and the markup)."""


# ---------------------------------------------------------------------------------------------------------------
# Bibliography
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Bibliography:
    """The entries of ``references.bib``: their author–year labels and their formatted reference text."""

    authors: dict[str, str]  # key -> "Vaswani et al."
    years: dict[str, str]
    text: dict[str, str]  # key -> "A. Vaswani, ... Attention is all you need. In NeurIPS 30, 2017. <url>"

    @classmethod
    def load(cls, path: Path = BIB) -> Bibliography:
        from pybtex.database import parse_file  # comes with sphinxcontrib-bibtex (Jupyter Book)
        from pybtex.plugin import find_plugin
        from pybtex.richtext import Text

        data = parse_file(str(path))
        backend = find_plugin("pybtex.backends", "text")()  # once: render_as() looks the plugin up on every call
        authors, years, text = {}, {}, {}
        for key, entry in data.entries.items():
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [Text.from_latex(" ".join(p.prelast_names + p.last_names)).render(backend).strip() for p in people]
            if not names:
                names = [entry.fields.get("organization", entry.fields.get("publisher", key))]
            if len(names) == 1:
                authors[key] = names[0]
            elif len(names) == 2:
                authors[key] = f"{names[0]} and {names[1]}"
            else:
                authors[key] = f"{names[0]} et al."
            years[key] = entry.fields.get("year", "n.d.")
        style = find_plugin("pybtex.style.formatting", "plain")()
        for formatted in style.format_entries(data.entries.values()):
            plain = " ".join(formatted.text.render(backend).split())
            text[formatted.key] = re.sub(r"URL: (\S+?)\.?$", r"<\1>", plain)
        return cls(authors, years, text)


def parse_cite(body: str) -> list[tuple[str, str, str]]:
    """``{pre}key{post},key2`` (sphinxcontrib-bibtex's syntax) -> [(pre, key, post), ...]."""
    items = re.findall(r"\s*(?:\{([^}]*)\})?\s*([^\s{},]+)\s*(?:\{([^}]*)\})?\s*(?:,|$)", body)
    return [(pre, key, post) for pre, key, post in items]


def format_cite(kind: str, body: str, bib: Bibliography, cited: list[str]) -> str:
    """{cite:t} -> "Vaswani et al. (2017)"; {cite:p} / {cite} -> "(Vaswani et al., 2017)"."""
    parts = []
    for pre, key, post in parse_cite(body):
        if key not in bib.authors:
            raise KeyError(key)
        if key not in cited:
            cited.append(key)
        parts.append((pre, bib.authors[key], bib.years[key], post))
    if kind in ("cite:t", "cite:ts", "cite:ct", "cite:cts"):
        texts = [
            f"{pre + ' ' if pre else ''}{who} ({year}{', ' + post if post else ''})" for pre, who, year, post in parts
        ]
        return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]
    if kind in ("cite:author", "cite:authors"):
        return " and ".join(who for _, who, _, _ in parts)
    if kind in ("cite:year", "cite:years"):
        return ", ".join(year for _, _, year, _ in parts)
    texts = [f"{pre + ' ' if pre else ''}{who}, {year}{', ' + post if post else ''}" for pre, who, year, post in parts]
    return "(" + "; ".join(texts) + ")"


# ---------------------------------------------------------------------------------------------------------------
# Labels: what {ref}, {numref}, {eq} and {doc} point to
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Labels:
    """Every label of the book: exercises ("Exercise 3" in its notebook), sections, equations, page titles."""

    names: dict[str, str] = field(default_factory=dict)  # label -> "Exercise 3" / "Section title" / "(2)"
    pages: dict[str, str] = field(default_factory=dict)  # label -> notebook stem ("" for a page that is no notebook)
    titles: dict[str, str] = field(default_factory=dict)  # page stem -> its title (first "# " heading)

    @classmethod
    def collect(cls, notebooks: list[Path]) -> Labels:
        labels = cls()
        for page in sorted(CHAPTERS.glob("*.md")):
            match = re.search(r"^# (.+)$", page.read_text(encoding="utf-8"), re.M)
            labels.titles[page.stem] = match.group(1).strip() if match else page.stem
        for path in notebooks:
            nb = json.loads(path.read_text(encoding="utf-8"))
            exercise, equation = 0, 0
            for cell in nb["cells"]:
                if cell["cell_type"] != "markdown":
                    continue
                text = "".join(cell["source"])
                if path.stem not in labels.titles:
                    match = re.search(r"^# (.+)$", text, re.M)
                    if match:
                        labels.titles[path.stem] = match.group(1).strip()
                lines = text.splitlines()
                for i, line in enumerate(lines):
                    opening = OPENING.match(line)
                    if opening and opening.group("name") == "exercise":
                        exercise += 1
                        for option in lines[i + 1 : i + 8]:
                            m = OPTION.match(option)
                            if m is None:
                                break
                            if m.group("key") == "label":
                                labels.add(m.group("value"), f"Exercise {exercise}", path.stem)
                    target = TARGET.match(line)
                    if target:
                        heading = next((h for h in lines[i + 1 :] if h.strip()), "")
                        labels.add(target.group("label"), heading.lstrip("#").strip(), path.stem)
                for match in EQ_LABEL.finditer(text):
                    equation += 1
                    labels.add(match.group("label"), f"({equation})", path.stem)
        return labels

    def add(self, label: str, name: str, page: str) -> None:
        self.names[label] = name
        self.pages[label] = page


# ---------------------------------------------------------------------------------------------------------------
# Markdown conversion
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Context:
    """What the conversion of one notebook needs and collects."""

    stem: str
    bib: Bibliography
    labels: Labels
    cited: list[str] = field(default_factory=list)
    exercise: int = 0
    where: str = ""  # "chapters/x.ipynb, cell 12" for error messages

    def fail(self, message: str) -> PortableError:
        return PortableError(f"{self.where}: {message}")


def quote(text: str) -> str:
    """A blockquote of ``text`` (every line prefixed with "> ", blank lines with ">")."""
    return "\n".join(("> " + line) if line.strip() else ">" for line in text.strip("\n").splitlines())


def page_link(target: str, text: str | None, ctx: Context) -> str:
    """A link for {doc}`target`: the portable notebook of a chapter, else the page's MyST source."""
    stem = target.split("/")[-1].removesuffix(".md").removesuffix(".ipynb")
    title = text or ctx.labels.titles.get(stem)
    if title is None:
        raise ctx.fail(f"{{doc}}`{target}`: no chapter page named {stem!r}")
    if (CHAPTERS / f"{stem}.ipynb").exists():
        return f"[{title}]({stem}.ipynb)"
    return f"[{title}](../chapters/{stem}.md)"


def label_text(label: str, text: str | None, role: str, ctx: Context) -> str:
    if label not in ctx.labels.names:
        raise ctx.fail(f"{{{role}}}`{label}`: no such label in the chapters")
    name = ctx.labels.names[label]
    if text:
        name = text.replace("{number}", name.split()[-1]).replace("%s", name.split()[-1])
    page = ctx.labels.pages[label]
    if page and page != ctx.stem:
        return f"{name} of [{ctx.labels.titles.get(page, page)}]({page}.ipynb)"
    return name


def convert_roles(text: str, ctx: Context) -> str:
    """Replace every ``{role}`content``` outside code spans and code blocks."""

    def role(match: re.Match) -> str:
        name, body = match.group("name"), match.group("body")
        explicit = re.fullmatch(r"(?s)(.*?)\s*<([^<>]+)>", body)
        shown, target = (explicit.group(1), explicit.group(2)) if explicit else (None, body)
        if name == "cite" or name.startswith("cite:"):
            kind = "cite:p" if name in ("cite", "cite:p", "cite:ps", "cite:cp") else name
            try:
                return format_cite(kind, body, ctx.bib, ctx.cited)
            except KeyError as error:
                raise ctx.fail(f"{{{name}}}`{body}`: key {error} is not in references.bib") from None
        if name == "doc":
            return page_link(target, shown, ctx)
        if name in ("ref", "numref"):
            return label_text(target, shown, name, ctx)
        if name == "eq":
            return label_text(target, None, name, ctx)
        if name == "math":
            return f"${body}$"
        if name in ("term", "abbr"):
            return shown or re.sub(r"\s*\(.*\)$", "", body)
        if name in ("sub", "subscript"):
            return f"<sub>{body}</sub>"
        if name in ("sup", "superscript"):
            return f"<sup>{body}</sup>"
        if name in ("code", "samp", "kbd", "file", "command", "program", "envvar"):
            return f"`{body}`"
        raise ctx.fail(f"unknown role {{{name}}}`{body}`: teach tools/portable.py how to write it")

    def token(match: re.Match) -> str:
        return role(match) if match.group("name") else match.group(0)  # a code span stays as it is

    # Fenced code blocks stay as they are; in the text between them, roles and code spans are matched together,
    # leftmost first, so that neither a role's backticks nor a role inside a code span are mistaken.
    out, chunk, in_code = [], [], False
    for line in text.split("\n"):
        if CODE_FENCE.match(line) or in_code:
            if not in_code:
                out.append(ROLE_OR_CODE.sub(token, "\n".join(chunk)) if chunk else None)
                chunk = []
            if CODE_FENCE.match(line):
                in_code = not in_code
            out.append(line)
        else:
            chunk.append(line)
    if chunk:
        out.append(ROLE_OR_CODE.sub(token, "\n".join(chunk)))
    out = [o for o in out if o is not None]
    return "\n".join(out)


def find_closing(lines: list[str], start: int, fence: str) -> int:
    """Index of the line that closes the directive opened at ``start`` with ``fence`` (``:::`` or a backtick fence)."""
    char, depth = fence[0], 0
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        opening = OPENING.match(lines[i])
        if opening and opening.group("fence")[0] == char and len(opening.group("fence")) == len(fence):
            depth += 1
        elif stripped and set(stripped) == {char} and len(stripped) >= len(fence):
            if depth == 0:
                return i
            depth -= 1
        elif char == "`" and re.match(r"^[ \t]*`{3,}\S", lines[i]) and len(lines[i].strip().split("`")[0]) == 0:
            depth += 1  # a plain code block inside a backtick directive
    return -1


#: What the website's ``{attention-explorer}`` becomes where no website draws it (the portable notebooks, and
#: JupyterLab through tools/lab_server.py): this text, then the code of :func:`attention_explorer_code`.
EXPLORER_NOTE = (
    "The book's website shows the attention explorer here: every map of the model for the sentences below, with "
    "hover. In a notebook, a code cell with this code draws it live:"
)


def attention_explorer_code(options: dict[str, str], body: str) -> str:
    """The Python lines that draw the explorer of an ``{attention-explorer}`` directive live in a notebook."""
    sentences = [line.strip() for line in body.splitlines() if line.strip()]
    run = options.get("run", "models/de-en").strip().rstrip("/")
    # models/NAME relative to the book, as lib finds it from anywhere (the notebook's folder is not the book's)
    folder = "SHIPPED_MODEL" if run == "models/de-en" else f'SHIPPED_MODEL.parent / "{Path(run).name}"'
    args = ""
    if "kinds" in options:
        args += f", kinds={json.dumps(options['kinds'].replace(',', ' ').split())}"
    view = {k: options[k].strip() for k in ("kind", "layer", "head") if k in options}
    view = {k: (int(v) if k == "layer" or (k == "head" and v.isdigit()) else v) for k, v in view.items()}
    if view:
        args += f", view={json.dumps(view)}"
    listed = "".join(f"    {json.dumps(s, ensure_ascii=False)},\n" for s in sentences)
    return (
        "from lib.checkpoint import SHIPPED_MODEL, load_run\nfrom lib.explorer import explorer_widget\n\n"
        f"run = load_run({folder})\nexplorer_widget(run.model, run.tokenizer, [\n{listed}]{args})"
    )


def attention_explorer(options: dict[str, str], body: str) -> str:
    """The website's ``{attention-explorer}`` as a note and the code that draws it live in a notebook."""
    code = attention_explorer_code(options, body)
    return quote(f"**Attention explorer.** {EXPLORER_NOTE}") + f"\n\n```python\n{code}\n```"


def convert_directive(name: str, arg: str, options: dict[str, str], body: str, ctx: Context) -> str:
    if name == "attention-explorer":
        return attention_explorer(options, body)
    body = body.strip("\n")
    body = convert_markdown(body, ctx) if name not in ("math", "code", "code-block", "code-cell") else body
    anchor = f'<a id="{options["label"]}"></a>\n\n' if "label" in options else ""
    dropdown = "dropdown" in options.get("class", "").split()
    if name == "exercise":
        ctx.exercise += 1
        title = f"**Exercise {ctx.exercise}**" + (f" ({convert_markdown(arg, ctx)})" if arg else "")
        return anchor + quote(f"{title}\n\n{body}")
    if name == "solution":
        label = arg.strip()
        of = ctx.labels.names.get(label, "the exercise above")
        return f"<details>\n<summary><b>Solution to {of}</b></summary>\n\n{body.strip()}\n\n</details>"
    if name in ADMONITIONS:
        title = convert_markdown(arg, ctx) if arg else ADMONITIONS[name]
        if dropdown:
            return anchor + f"<details>\n<summary><b>{title or 'More'}</b></summary>\n\n{body.strip()}\n\n</details>"
        return anchor + quote((f"**{title}**\n\n" if title else "") + body)
    if name == "dropdown":
        return anchor + f"<details>\n<summary><b>{arg or 'More'}</b></summary>\n\n{body.strip()}\n\n</details>"
    if name in ("figure", "image"):
        src = arg if re.match(r"^[a-z]+://", arg) else f"../chapters/{arg}"
        alt = options.get("alt", body.strip().split("\n")[0] if body.strip() else "")
        image = anchor + f"![{alt}]({src})"
        return image + (f"\n\n*{body.strip()}*" if name == "figure" and body.strip() else "")
    if name == "math":
        return anchor + f"$$\n{body.strip()}\n$$"
    if name in ("code", "code-block", "code-cell"):
        return f"```{arg}\n{body.rstrip()}\n```"
    raise ctx.fail(f"unknown directive {{{name}}}: teach tools/portable.py how to write it")


def convert_markdown(text: str, ctx: Context) -> str:
    """One markdown cell (or a directive's body) in MyST -> portable markdown."""
    lines = text.split("\n")
    out, i, in_code = [], 0, False
    while i < len(lines):
        line = lines[i]
        opening = OPENING.match(line)
        if not opening and CODE_FENCE.match(line):
            in_code = not in_code
        if in_code or not opening:
            target = TARGET.match(line) if not in_code else None
            out.append(f'<a id="{target.group("label")}"></a>' if target else line)
            i += 1
            continue
        end = find_closing(lines, i, opening.group("fence"))
        if end < 0:
            raise ctx.fail(f"directive {{{opening.group('name')}}} is never closed")
        body_lines, options = lines[i + 1 : end], {}
        while body_lines and OPTION.match(body_lines[0]):
            m = OPTION.match(body_lines[0])
            options[m.group("key")] = m.group("value")
            body_lines = body_lines[1:]
        out.append(convert_directive(opening.group("name"), opening.group("arg"), options, "\n".join(body_lines), ctx))
        i = end + 1
    converted = "\n".join(out)
    converted = EQ_LABEL.sub(lambda m: f"$$ {ctx.labels.names.get(m.group('label'), '')}".rstrip(), converted)
    return convert_roles(converted, ctx)


# ---------------------------------------------------------------------------------------------------------------
# Notebooks
# ---------------------------------------------------------------------------------------------------------------


def markdown_cell(source: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source.splitlines(keepends=True)}


def colab_cell_tool():
    """``tools/colab_cell.py`` as a module (this file is also loaded by path, from the Sphinx extension)."""
    spec = importlib.util.spec_from_file_location("book_colab_cell", ROOT / "tools" / "colab_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def colab_setup_source() -> str | None:
    """The Colab set-up cell's source for the portable notebooks: None (the chapter's own cell) when
    ``repository.url`` is a real repository, a cell that clones nothing while it is the placeholder."""
    tool = colab_cell_tool()
    return tool.placeholder_source() if tool.is_placeholder(tool.repository_url()) else None


def convert_notebook(path: Path, bib: Bibliography, labels: Labels, colab_setup: str | None = None) -> dict:
    """The portable version of one chapter notebook (a new notebook dict; the chapter is not changed).

    ``colab_setup``: if given, the source of the Colab set-up cell (:func:`colab_setup_source`)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    out = copy.deepcopy(nb)
    ctx = Context(path.stem, bib, labels)
    cells, in_solution = [], False
    for index, cell in enumerate(nb["cells"]):
        ctx.where = f"{path.relative_to(ROOT).as_posix()}, cell {index}"
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            cell = copy.deepcopy(cell)
            if colab_setup is not None and cell.get("id") == "colab-setup":
                cell["source"] = colab_setup.splitlines(keepends=True)
            if in_solution:  # a solution written as code: folded where the front end can fold a cell
                cell["metadata"].setdefault("jupyter", {})["source_hidden"] = True
                cell["metadata"]["cellView"] = "form"
            cells.append(cell)
            continue
        if cell["cell_type"] != "markdown":
            cells.append(copy.deepcopy(cell))
            continue
        gate = re.fullmatch(
            r"\s*(`{3,}|:{3,})\{(solution-start|solution-end)\}[ \t]*(\S*)[^\n]*(?:\n.*)?", source, re.S
        )
        if gate and gate.group(2) == "solution-start":
            in_solution = True
            of = labels.names.get(gate.group(3), "the exercise above")
            text = (
                f"**Solution to {of}** (the code below: folded in JupyterLab, Notebook, VS Code and Colab; "
                "try the exercise before you unfold it)"
            )
            cells.append(markdown_cell(text, cell.get("id", f"cell-{index}")))
            continue
        if gate and gate.group(2) == "solution-end":
            in_solution = False
            continue  # the end of a gated solution needs no cell of its own
        new = copy.deepcopy(cell)
        new["source"] = convert_markdown(source, ctx).splitlines(keepends=True)
        cells.append(new)
    if ctx.cited:
        heading = "### The works cited, in full" if re.search(r"^## References\s*$", all_markdown(nb), re.M) else ""
        heading = heading or "## References"
        entries = "\n".join(
            f"- **{bib.authors[k]} ({bib.years[k]})**. {bib.text[k]}"
            for k in sorted(ctx.cited, key=lambda k: (bib.authors[k], bib.years[k], k))
        )
        cells.append(markdown_cell(f"{heading}\n\n{entries}", "portable-references"))
    out["cells"] = cells
    return out


def all_markdown(nb: dict) -> str:
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def chapter_notebooks() -> list[Path]:
    return sorted(CHAPTERS.glob("*.ipynb"))


def render(nb: dict) -> str:
    """The notebook as the repository stores notebooks (indent 1, UTF-8, trailing newline)."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def build() -> dict[str, str]:
    """{file name: text} of every portable notebook, from chapters/*.ipynb."""
    notebooks = chapter_notebooks()
    bib, labels, colab_setup = Bibliography.load(), Labels.collect(notebooks), colab_setup_source()
    return {p.name: render(convert_notebook(p, bib, labels, colab_setup)) for p in notebooks}


def stale(out: Path = OUT) -> list[str]:
    """Names of the portable notebooks in ``out`` that are missing, out of date, or have no chapter any more."""
    want = build()
    names = [n for n, text in want.items() if not (out / n).is_file() or (out / n).read_text("utf-8") != text]
    names += [p.name for p in sorted(out.glob("*.ipynb")) if p.name not in want]
    return names


def write(out: Path = OUT) -> list[str]:
    """Write every portable notebook into ``out`` (atomically), remove those without a chapter; return the changed."""
    sys.path.insert(0, str(ROOT))
    from lib.files import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    want, changed = build(), []
    for name, text in want.items():
        target = out / name
        if not target.is_file() or target.read_text("utf-8") != text:
            atomic_write_text(target, text)
            changed.append(name)
    for old in sorted(out.glob("*.ipynb")):
        if old.name not in want:
            old.unlink()
            changed.append(old.name)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a portable notebook is missing or stale")
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write into (default: notebooks/)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            names = stale(args.out)
            if names:
                print(f"portable notebooks out of date: {', '.join(names)}; run `{REGENERATE}`")
                return 1
            print("portable notebooks: up to date")
            return 0
        changed = write(args.out)
    except PortableError as error:
        print(f"tools/portable.py: {error}", file=sys.stderr)
        return 1
    print(
        f"portable notebooks: {len(changed)} written into {args.out}" + (f" ({', '.join(changed)})" if changed else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
