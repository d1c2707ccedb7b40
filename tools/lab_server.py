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
round trip gives back exactly its text (:func:`show_citations` checks it), so a cell that already holds such a
link, or a citation of a key that ``references.bib`` lacks, is left as it is. Editing the link's text in
JupyterLab changes nothing on disk (the role is written back); deleting the link deletes the citation.
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


def show_cell(source: str, bib) -> str:
    """``source`` with each citation role (outside code spans) written as its link; unchanged unless reversible."""

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
    shown = "\n".join(lines)
    return shown if restore_cell(shown) == source else source


def restore_cell(source: str) -> str:
    """``source`` with each shown citation written back as its role."""
    return SHOWN.sub(lambda m: f"{{{m.group('role')}}}`{urllib.parse.unquote(m.group('body'))}`", source)


def _markdown_cells(nb: dict):
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            yield cell


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else source


def show_citations(nb: dict, bib=None) -> int:
    """Rewrite the citation roles of every markdown cell of ``nb`` in place as links; return the cells changed."""
    bib = bib or bibliography()
    changed = 0
    for cell in _markdown_cells(nb):
        source = _text(cell.get("source", ""))
        shown = show_cell(source, bib)
        if shown != source:
            cell["source"] = shown
            changed += 1
    return changed


def restore_citations(nb: dict) -> int:
    """Write every shown citation of ``nb``'s markdown cells back as its role, in place; return the cells changed."""
    changed = 0
    for cell in _markdown_cells(nb):
        source = _text(cell.get("source", ""))
        restored = restore_cell(source)
        if restored != source:
            cell["source"] = restored
            changed += 1
    return changed


class BookContentsManager(AsyncLargeFileManager):
    """Jupyter Server's default contents manager, with citations shown on load and written back as roles on save."""

    async def get(self, path, content=True, type=None, format=None, require_hash=False):
        model = await super().get(path, content=content, type=type, format=format, require_hash=require_hash)
        if model.get("type") == "notebook" and model.get("content"):
            try:
                show_citations(model["content"])
            except Exception as error:  # a broken references.bib must not stop a notebook from opening
                self.log.warning("lab_server: citations left as keys in %s: %s", path, error)
        return model

    async def save(self, model, path=""):
        if model.get("type") == "notebook" and model.get("content"):
            model = {**model, "content": copy.deepcopy(model["content"])}
            restore_citations(model["content"])
        return await super().save(model, path)
