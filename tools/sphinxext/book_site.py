"""The book's own Sphinx extension: the citation style, and two fixes so that every page loads with no
console error.

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

from dataclasses import dataclass, field
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


def setup(app: Any) -> dict:
    app.connect("html-page-context", _page_context, priority=900)  # after the extensions that add assets
    return {"parallel_read_safe": True, "parallel_write_safe": True}
