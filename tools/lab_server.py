"""Citations as "Vaswani et al. (2017)" in JupyterLab, while the chapters on disk keep their ``{cite:t}`key``` roles.

jupyterlab-myst 2.7 (what ``make lab`` renders MyST with) parses ``{cite}`` roles but resolves none: it reads no
bibliography (neither a ``bibliography`` entry of the notebook's frontmatter nor a ``.bib`` file) and marks every
citation "Citation Not Found", showing its bare key (its ``addCiteChildrenPlugin``; jupyterlab-myst issue #127).
So the JupyterLab server that ``make lab`` starts uses :class:`BookContentsManager` (``tools/lab_config.py``): when
JupyterLab loads a notebook, every citation role of its markdown cells is shown as a link whose text is the
author–year citation read from ``references.bib`` (as the portable notebooks write it, ``tools/portable.py``) and
whose tooltip is the full reference; when JupyterLab saves it, every such link becomes the role again, so the
file on disk keeps its MyST and the reader works on the real chapters::

    {cite:t}`vaswani2017attention`
    <->  [Vaswani et al. (2017)](bibliography.md#cite:t=vaswani2017attention "A. Vaswani, ... 2017.")

The link points to the book's bibliography page (``chapters/bibliography.md``). A cell is rewritten only when the
round trip gives back exactly its text (:func:`show_cell` checks it), so a cell that already holds such a
link, or a citation of a key that ``references.bib`` lacks, is left as it is. Editing the link's text in
JupyterLab changes nothing on disk (the role is written back); deleting the link deletes the citation.

The website's attention explorer is the ``{attention-explorer}`` directive (``tools/sphinxext/book_site.py``), which
jupyterlab-myst does not know: it would show a red "Unknown Directive" box. So, on load, each such directive (one
not inside a code block or another directive) is shown as a ``{note}`` with the text and the Python lines that the
portable notebooks give it (``tools/portable.py``: a code cell with these lines draws the same explorer live), and
the directive itself kept in MyST comments (``%`` lines, which jupyterlab-myst does not show); on save, the note
is the directive again, as its comments hold it (editing the note's text changes nothing on disk; editing the
commented directive edits it)::

    ```{attention-explorer}               :::{note} Attention explorer
    :kinds: encoder                       % make lab shows ... (MARKER)
    Ein Mann repariert ...        <->     % ```{attention-explorer}
    ```                                   % :kinds: encoder
                                          % Ein Mann repariert ...
                                          % ```
                                          The book's website shows the attention explorer here: ...

                                          ```python
                                          from lib.checkpoint import SHIPPED_MODEL, load_run
                                          ...
                                          ```
                                          :::

As for citations, a cell is rewritten only when the round trip gives back exactly its text.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
import urllib.parse
from pathlib import Path

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

ROOT = Path(__file__).resolve().parent.parent
TARGET = "bibliography.md"  # the book's bibliography page, beside the chapters

# A shown citation: [text](bibliography.md#cite:t=key1,key2 "full reference"), the role and keys in the fragment.
SHOWN = re.compile(
    r"\[(?P<text>[^\[\]\n]*)\]\(" + re.escape(TARGET) + r"#(?P<role>cite(?::\w+)?)=(?P<body>[^\s()\"]*)"
    r"(?: \"[^\"\n]*\")?\)"
)


def _portable():
    """``tools/portable.py`` as a module: its reading of ``references.bib`` and its author–year citation text."""
    spec = importlib.util.spec_from_file_location("book_portable_tool", ROOT / "tools" / "portable.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


_portable_tool = _portable()
_bib_cache: dict[str, tuple[float, object]] = {}


def bibliography(path: Path | None = None):
    """``references.bib`` read by ``tools/portable.py`` (its ``Bibliography``), read again when the file changes."""
    path = Path(path or _portable_tool.BIB)
    mtime = path.stat().st_mtime
    cached = _bib_cache.get(str(path))
    if cached is None or cached[0] != mtime:
        cached = (mtime, _portable_tool.Bibliography.load(path))
        _bib_cache[str(path)] = cached
    return cached[1]


def _link(role: str, body: str, bib) -> str | None:
    """The shown form of ``{role}`body```, or None when a key is not in ``references.bib``."""
    try:
        text = _portable_tool.format_cite(role, body, bib, [])
    except KeyError:
        return None
    if re.search(r"[\[\]\n]", text):
        return None
    keys = [key for _, key, _ in _portable_tool.parse_cite(body)]
    title = " · ".join(bib.text[k] for k in keys).replace('"', "'").replace("\n", " ")
    fragment = urllib.parse.quote(body, safe=",:;{}-_.")
    return f'[{text}]({TARGET}#{role}={fragment} "{title}")'


# The note an {attention-explorer} directive is shown as: its opening line, then MARKER, then the directive in comments.
EXPLORER_OPENING = ":::{note} Attention explorer"
EXPLORER_MARKER = (
    "% make lab (tools/lab_server.py) shows the website's attention explorer directive below as this note, "
    "and saves the directive:"
)


def _comment(line: str) -> str:
    return f"% {line}" if line else "%"


def _uncomment(line: str) -> str | None:
    """The line a MyST comment line holds (``_comment``'s inverse), or None for a line that is no comment."""
    if line == "%":
        return ""
    return line[2:] if line.startswith("% ") else None


def _explorer_note(directive: list[str], options: dict[str, str], body: str) -> list[str]:
    """The lines of the note that shows the ``{attention-explorer}`` directive ``directive`` (its lines)."""
    code = _portable_tool.attention_explorer_code(options, body)
    note = [EXPLORER_OPENING, EXPLORER_MARKER, *map(_comment, directive), _portable_tool.EXPLORER_NOTE, ""]
    return [*note, "```python", *code.split("\n"), "```", ":::"]


def show_explorers(source: str) -> str:
    """``source`` with each ``{attention-explorer}`` directive (outside code blocks and other directives) as a note."""
    lines, out, i, fence = source.split("\n"), [], 0, None
    while i < len(lines):
        line = lines[i]
        code = re.match(r"^[ \t]*(`{3,}|~{3,})(?!\{)", line)
        if fence is not None or code:  # a code block: nothing here is a directive
            if fence is None:
                fence = code.group(1)
            elif code and code.group(1)[0] == fence[0] and len(code.group(1)) >= len(fence):
                fence = None
            out.append(line)
            i += 1
            continue
        opening = _portable_tool.OPENING.match(line)
        end = _portable_tool.find_closing(lines, i, opening.group("fence")) if opening else -1
        if end < 0:
            out.append(line)
            i += 1
            continue
        if opening.group("name") == "attention-explorer" and not opening.group("indent") and not opening.group("arg"):
            body = lines[i + 1 : end]
            options = {}
            while body and _portable_tool.OPTION.match(body[0]):
                match = _portable_tool.OPTION.match(body.pop(0))
                options[match.group("key")] = match.group("value")
            out += _explorer_note(lines[i : end + 1], options, "\n".join(body))
        else:  # another directive: left as it is, with whatever it holds
            out += lines[i : end + 1]
        i = end + 1
    return "\n".join(out)


def restore_explorers(source: str) -> str:
    """``source`` with each note that :func:`show_explorers` wrote back as the directive its comments hold."""
    lines, out, i = source.split("\n"), [], 0
    while i < len(lines):
        if lines[i] == EXPLORER_OPENING and i + 1 < len(lines) and lines[i + 1] == EXPLORER_MARKER:
            end = _portable_tool.find_closing(lines, i, ":::")
            directive = []
            for line in lines[i + 2 : end]:
                if _uncomment(line) is None:
                    break
                directive.append(_uncomment(line))
            if end > 0 and directive:
                out += directive
                i = end + 1
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def show_cell(source: str, bib) -> str:
    """``source`` with its ``{attention-explorer}`` directives as notes (:func:`show_explorers`) and its citations
    as links; each step is taken only if :func:`restore_cell` undoes it exactly."""
    explorers = show_explorers(source)
    if restore_explorers(explorers) != source:
        explorers = source
    shown = show_citations_text(explorers, bib)
    return shown if restore_citations_text(shown) == explorers else explorers


def show_citations_text(source: str, bib) -> str:
    """``source`` with each citation role (outside code spans and code blocks) written as its link."""

    def token(match: re.Match) -> str:
        name = match.group("name")
        if name is None or not re.fullmatch(r"cite(?::\w+)?", name):
            return match.group(0)  # a code span or another role
        return _link(name, match.group("body"), bib) or match.group(0)

    lines, fence = source.split("\n"), None
    for i, line in enumerate(lines):
        opening = re.match(r"^[ \t]*(`{3,}|~{3,})", line)
        if fence is not None:  # inside a code block: no role here
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            continue
        if opening and not line.lstrip()[len(opening.group(1)) :].startswith("{"):
            fence = opening.group(1)  # a code block (a ```{directive} line is not one: its body is MyST)
            continue
        if not opening:
            lines[i] = _portable_tool.ROLE_OR_CODE.sub(token, line)
    return "\n".join(lines)


def restore_cell(source: str) -> str:
    """``source`` with each shown citation written back as its role, each shown explorer as its directive."""
    return restore_explorers(restore_citations_text(source))


def restore_citations_text(source: str) -> str:
    """``source`` with each shown citation written back as its role."""
    return SHOWN.sub(lambda m: f"{{{m.group('role')}}}`{urllib.parse.unquote(m.group('body'))}`", source)


def _markdown_cells(nb: dict):
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            yield cell


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else source


def show_markup(nb: dict, bib=None) -> int:
    """Show the explorers and citations of every markdown cell of ``nb`` in place (:func:`show_cell`); return the
    cells changed."""
    bib = bib or bibliography()
    changed = 0
    for cell in _markdown_cells(nb):
        source = _text(cell.get("source", ""))
        shown = show_cell(source, bib)
        if shown != source:
            cell["source"] = shown
            changed += 1
    return changed


def restore_markup(nb: dict) -> int:
    """Write every shown citation and explorer of ``nb``'s markdown cells back as its role or directive, in place
    (:func:`restore_cell`); return the cells changed."""
    changed = 0
    for cell in _markdown_cells(nb):
        source = _text(cell.get("source", ""))
        restored = restore_cell(source)
        if restored != source:
            cell["source"] = restored
            changed += 1
    return changed


class BookContentsManager(AsyncLargeFileManager):
    """Jupyter Server's default contents manager: citations and attention explorers shown on load (as links and
    notes), written back as roles and directives on save."""

    async def get(self, path, content=True, type=None, format=None, require_hash=False):
        model = await super().get(path, content=content, type=type, format=format, require_hash=require_hash)
        if model.get("type") == "notebook" and model.get("content"):
            try:
                show_markup(model["content"])
            except Exception as error:  # a broken references.bib must not stop a notebook from opening
                self.log.warning("lab_server: citations and explorers left as written in %s: %s", path, error)
        return model

    async def save(self, model, path=""):
        if model.get("type") == "notebook" and model.get("content"):
            model = {**model, "content": copy.deepcopy(model["content"])}
            restore_markup(model["content"])
        return await super().save(model, path)
