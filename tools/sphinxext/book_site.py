"""The book's own Sphinx extension: the citation style, the portable notebooks behind the download and launch
buttons, and two fixes so that every page loads with no console error.

Portable notebooks: ``notebooks/`` holds every chapter with its MyST markup written as plain markdown
(``tools/portable.py``, ``make portable``), committed so that Colab can open them from the repository. The
extension checks that they are up to date with the chapters (a warning, so the ``-W`` build fails, naming
``make portable``), copies them into ``_build/html/notebooks/``, and points each chapter's download button
(.ipynb) to its copy and its Colab and Binder launch buttons to ``notebooks/`` in the repository: a reader
who downloads or launches a chapter gets a notebook that Colab, VS Code and plain Jupyter render.

Loaded by ``_config.yml`` (``sphinx.local_extensions``). Found with the browser tests in
``tests/browser/`` (headless Chromium reports both as console errors on every page):

1. ``default_mode``: pydata-sphinx-theme (under sphinx-book-theme) writes
   ``dataset.mode = localStorage.getItem("mode") || "{{ default_mode }}"``; Jupyter Book v1 leaves that
   template variable empty, so a first-time visitor's page logs "Got invalid theme mode: ." We set
   ``"auto"`` (follow the reader's system), as the theme documents for ``html_context``.
2. Duplicate scripts: sphinx-thebe adds its inline configuration script (``const THEBE_JS_URL = ...``)
   twice under Jupyter Book, and the second copy throws "Identifier 'THEBE_JS_URL' has already been
   declared". We drop exact duplicates from each page's script and stylesheet lists, keeping the first.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sphinxcontrib.bibtex.plugin
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


@dataclass
class RoundAuthorYear(AuthorYearReferenceStyle):
    """Author–year citations in round brackets, as the papers the book cites write them:
    {cite:t} gives "Vaswani et al. (2017)", {cite:p} "(Vaswani et al., 2017)". (The plugin's built-in
    ``author_year`` uses square brackets.) Selected by ``bibtex_reference_style: author_year_round``."""

    bracket_parenthetical: BracketStyle = field(default_factory=_round)
    bracket_textual: BracketStyle = field(default_factory=_round)
    bracket_author: BracketStyle = field(default_factory=_round)
    bracket_label: BracketStyle = field(default_factory=_round)
    bracket_year: BracketStyle = field(default_factory=_round)


sphinxcontrib.bibtex.plugin.register_plugin(
    "sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYear
)


def _set_default_mode(context: dict) -> None:
    if not context.get("default_mode"):  # a template variable of pydata-sphinx-theme's layout.html
        context["default_mode"] = "auto"


def _key(asset: Any) -> tuple:
    """Identity of a script or stylesheet: its file name plus attributes (an inline script's body)."""
    attributes = getattr(asset, "attributes", {}) or {}
    filename = getattr(asset, "filename", asset) or ""  # an inline script's is None or "": the same
    return (str(filename), tuple(sorted((k, str(v)) for k, v in attributes.items())))


def _page_context(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    _set_default_mode(context)
    _dedupe_assets(context)
    _portable_buttons(app, pagename, context)


def _dedupe_assets(context: dict) -> None:
    for name in ("script_files", "css_files"):
        assets = context.get(name)
        if not assets:
            continue
        seen, unique = set(), []
        for asset in assets:
            key = _key(asset)
            if key not in seen:
                seen.add(key)
                unique.append(asset)
        context[name] = unique


PORTABLE = "notebooks"  # the folder of the portable notebooks, in the repository and in the built site


def _portable_tool(srcdir: Path) -> Any:
    spec = importlib.util.spec_from_file_location("book_portable", srcdir / "tools" / "portable.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are created
    spec.loader.exec_module(module)
    return module


def _check_portable(app: Any) -> None:
    """Warn (the -W build fails) when notebooks/ is missing a chapter or out of date with it."""
    from sphinx.util import logging

    if app.builder.format != "html":
        return
    stale = _portable_tool(Path(app.srcdir)).stale(Path(app.srcdir) / PORTABLE)
    if stale:
        logging.getLogger(__name__).warning(
            f"portable notebooks out of date with chapters/: {', '.join(stale)}; run `make portable`"
        )


def _copy_portable(app: Any, exception: Exception | None) -> None:
    """Publish notebooks/*.ipynb at _build/html/notebooks/ (the download buttons link there)."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / PORTABLE
    target.mkdir(parents=True, exist_ok=True)
    for notebook in sorted((Path(app.srcdir) / PORTABLE).glob("*.ipynb")):
        shutil.copy2(notebook, target / notebook.name)


def _portable_buttons(app: Any, pagename: str, context: dict) -> None:
    """A chapter's .ipynb download and its Colab/Binder launch buttons: the portable notebook, not the MyST one."""
    name = pagename.rsplit("/", 1)[-1]
    if not (Path(app.srcdir) / PORTABLE / f"{name}.ipynb").is_file() or "pathto" not in context:
        return
    source = f"{pagename}.ipynb"
    for group in context.get("header_buttons") or []:
        for button in group.get("buttons") or []:
            url = button.get("url") or ""
            if group.get("label") == "download-buttons" and url.endswith(f"_sources/{source}"):
                button["url"] = context["pathto"](f"{PORTABLE}/{name}.ipynb", 1)
                button["tooltip"] = "Download the notebook (plain markdown: Jupyter, Colab, VS Code)"
            elif group.get("label") == "launch-buttons" and url.endswith(source):
                button["url"] = url[: -len(source)] + f"{PORTABLE}/{name}.ipynb"


def setup(app: Any) -> dict:
    app.connect("html-page-context", _page_context, priority=900)  # after the extensions that add assets
    app.connect("builder-inited", _check_portable)
    app.connect("build-finished", _copy_portable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
