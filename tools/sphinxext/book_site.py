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

Three more fixes of what the theme and Sphinx write, for readers and their screen readers (issue 35; the browser
tests' axe-core check in ``tests/browser/test_layout.py`` finds each of them if it comes back):

3. ``_drop_thebe``: sphinx-thebe (which Jupyter Book always loads) adds ``const THEBE_JS_URL =
   "https://unpkg.com/..."``, its script and its stylesheet to every page, although the book has no Thebe button
   (``launch_buttons.thebe: false``): a CDN address on an offline site. They are left out while Thebe is off.
4. ``_bibliography_translator``: docutils writes the bibliography as ``<div role="list">`` holding ``<div
   role="doc-biblioentry">`` entries, a DPUB-ARIA role that ARIA 1.3 deprecates and that is not a list item,
   so assistive technology (and axe-core's aria-required-children, a critical violation) sees a list without
   items. Each entry is written as ``role="listitem"`` instead.

And ``_name_nav_toggles``: the sidebar's expanders (a chapter's deeper dives) are ``<summary>`` elements holding only
a chevron icon, so a screen reader announces an unnamed control (axe-core's summary-name, serious); each gets the
name "Pages under <chapter>". And ``_visit_hidden_cell``: MyST-NB's folded cells (``hide-input``, ``hide-output``)
are ``<summary aria-label="Toggle hidden content">`` around the visible words "Show code cell output", a name that
does not contain what a speech user sees and says (label-content-name-mismatch, serious): the same markup without
that label, so the visible words are the name.

It also puts the book's own JavaScript into the site: ``lib/explorer.js`` (the attention explorer, in ``lib``
because the notebook widget ``lib.explorer.ExplorerWidget`` runs the same module) and ``tools/explorer/*.js`` (the
live translator) into ``_static/explorer/``, and the ONNX export of the shipped model, which ``make book`` writes
into ``_build/live/`` (``python -m lib.export``), into ``_static/live/``. Only the pages that use them load them
(``chapters/translate_live.md`` imports ``_static/explorer/live.js`` from its own script). A build without the
export warns, and so fails under ``-W``, naming the command that makes it.

Exercises are numbered within their chapter: sphinx-exercise numbers them as Sphinx numbers figures, and with no
numbered table of contents (the sidebar shows the chapter titles without numbers) Sphinx counts across the whole
book ("Exercise 45" in the capstone). ``_number_within_page`` renumbers every numbered kind (exercises, and
captioned figures, tables and code blocks) from 1 on each page, in the order Sphinx counted them, right after Sphinx
assigns the numbers; titles, "Solution to Exercise N" and ``{numref}`` all read the numbers from there. The portable
notebooks (``tools/portable.py``) number them the same way.

While ``repository.url`` in ``_config.yml`` is the placeholder the book ships with
(``tools/colab_cell.py``'s ``PLACEHOLDER_URL``, a repository that does not exist), the build leaves out the Binder
and Colab launch buttons and the repository button, and says so in its output, so that no reader meets a dead
link.

Finally it defines the ``attention-explorer`` directive, which embeds the attention explorer with its data in a
page, in a Markdown page or a notebook's Markdown cell alike::

    ```{attention-explorer}
    :run: models/de-en
    :decimals: 3
    :kinds: encoder cross
    :kind: encoder
    :layer: 0
    :head: 1
    Ein Hund läuft über die Wiese.
    Zwei Männer spielen Fußball.
    ```

At build time it translates the sentences (one per line) with the run (default: the shipped model) and embeds
what :func:`lib.explorer.explorer_data` returns as JSON, with the explorer's module inline (once per page), so
the explorer also works when the page is opened from a file. Options: ``:run:`` the model's folder,
``:decimals:`` of each weight, ``:kinds:`` the kinds of map to embed (some of ``encoder decoder cross``; default:
every kind the model computes), and the first view the reader sees: ``:kind:``, ``:layer:`` and ``:head:``
(counted from 0, or ``mean``; default: cross-attention or the first kind, the last layer, the mean of the heads).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from dataclasses import dataclass, field
from html import escape as html_escape
from pathlib import Path
from typing import Any, ClassVar

import sphinxcontrib.bibtex.plugin
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective
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
    _drop_thebe(app, context)
    _name_nav_toggles(context)
    _drop_anywidget_state(context)
    _portable_buttons(app, pagename, context)


def _thebe_on(app: Any) -> bool:
    launch = (app.config.html_theme_options or {}).get("launch_buttons") or {}
    return bool(launch.get("thebe")) or bool((getattr(app.config, "thebe_config", None) or {}).get("always_load"))


def _drop_thebe(app: Any, context: dict) -> None:
    """No sphinx-thebe configuration (its CDN ``THEBE_JS_URL``), script or stylesheet while Thebe is off."""
    if _thebe_on(app):
        return
    for name in ("script_files", "css_files"):
        assets = context.get(name) or []
        context[name] = [
            asset
            for asset in assets
            if "sphinx-thebe" not in str(getattr(asset, "filename", asset) or "")
            and "THEBE_JS_URL" not in str((getattr(asset, "attributes", {}) or {}).get("body", ""))
        ]


def _name_nav_toggles(context: dict) -> None:
    """Give the sidebar's icon-only expanders (``<summary>``) a name: "Pages under <the chapter's title>"."""
    original = context.get("generate_toctree_html")  # pydata-sphinx-theme's, per page (its html-page-context)
    if original is None:
        return

    def generate_toctree_html(kind: str, *args: Any, **kwargs: Any) -> Any:
        soup = original(kind, *args, **kwargs)
        if kind == "sidebar" and hasattr(soup, "select"):
            for summary in soup.select("li > details > summary"):
                if summary.get_text(strip=True) or summary.get("aria-label"):
                    continue
                item = summary.find_parent("li")
                link = item.find("a", class_="reference", recursive=False) if item else None
                title = link.get_text(" ", strip=True) if link else ""
                summary["aria-label"] = f"Pages under {title}" if title else "More pages"
        return soup

    context["generate_toctree_html"] = generate_toctree_html


def _visit_hidden_cell(self: Any, node: Any) -> None:
    """MyST-NB's ``visit_HideCellInput`` without ``aria-label`` on ``<summary>`` (its visible prompt names it)."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{html_escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{html_escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def _name_hidden_cells(app: Any) -> None:
    """Replace MyST-NB's HTML visitor of folded cells (see the module's docstring)."""
    try:
        from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput
    except ImportError:  # MyST-NB not loaded: nothing to fix
        return
    app.add_node(HideCodeCellNode, override=True, html=(_visit_hidden_cell, depart_HideCellInput))


def _bibliography_translator(app: Any) -> None:
    """Write each bibliography entry as a list item (see the module's docstring, point 4)."""
    if app.builder.format != "html":
        return
    base = app.builder.get_translator_class()

    class BibliographyListTranslator(base):
        def visit_citation(self, node: Any) -> None:
            if not isinstance(node.previous_sibling(), type(node)):
                self.body.append('<div role="list" class="citation-list">\n')
            self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))

    app.registry.translators[app.builder.name] = BibliographyListTranslator


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _drop_anywidget_state(context: dict) -> None:
    """Leave the notebook's anywidget models (the explorer widget: its ES module and its maps) out of the page.

    MyST-NB copies a notebook's saved widget state into its page. The site draws no widget view
    (``nb_ipywidgets_js: {}``), and a page shows the attention explorer with the ``{attention-explorer}``
    directive, so the live explorer's state would only add its data and module a second time (about 64 kB on
    the multi-head page)."""
    scripts = context.get("script_files") or []
    for index, asset in enumerate(scripts):
        attributes = dict(getattr(asset, "attributes", {}) or {})
        if attributes.get("type") != WIDGET_STATE or not attributes.get("body"):
            continue
        state = json.loads(attributes["body"])
        models = state.get("state", {})
        kept = {key: model for key, model in models.items() if model.get("model_module") != "anywidget"}
        if len(kept) == len(models):
            continue
        state["state"] = kept
        attributes["body"] = json.dumps(state).replace("</", "<\\/")  # as MyST-NB writes it: no </script> inside
        scripts[index] = type(asset)(asset.filename, priority=asset.priority, **attributes)


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


def _renumber(numbers: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """One page's numbers of one kind, {node id: (n,)}, renumbered 1, 2, ... in the order they had.

    Numbers with a section prefix ((2, 1): a numbered table of contents) are already per section: kept."""
    if any(len(number) != 1 for number in numbers.values()):
        return numbers
    ordered = sorted(numbers, key=numbers.__getitem__)
    return {ident: (index,) for index, ident in enumerate(ordered, start=1)}


def _restore_book_numbers(app: Any, env: Any) -> list[str]:
    """Before Sphinx assigns figure numbers: put back the numbers it assigned last time (pickled with the
    environment), so that it compares like with like and rewrites only the pages whose numbers changed."""
    book_numbers = getattr(env, "book_site_fignumbers", None)
    if book_numbers is not None:
        env.toc_fignumbers = book_numbers
    return []


def _number_within_page(app: Any, env: Any) -> list[str]:
    """After Sphinx assigns figure numbers (``env-get-updated``): every page's exercises (and other numbered
    nodes) from 1. Sphinx's own numbers are kept aside for the next incremental build."""
    env.book_site_fignumbers = {
        docname: {kind: dict(numbers) for kind, numbers in kinds.items()}
        for docname, kinds in env.toc_fignumbers.items()
    }
    for kinds in env.toc_fignumbers.values():
        for kind, numbers in kinds.items():
            kinds[kind] = _renumber(numbers)
    return []  # the pages whose numbers changed are the ones Sphinx's own handler names


def _colab_cell_tool(srcdir: Path) -> Any:
    spec = importlib.util.spec_from_file_location("book_colab_cell", srcdir / "tools" / "colab_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _leave_out_placeholder_buttons(app: Any, config: Any) -> None:
    """While ``repository.url`` is the placeholder: no launch buttons, no repository button, and a line that says so."""
    from sphinx.util import logging

    options = dict(config.html_theme_options or {})
    url = options.get("repository_url") or ""
    if not _colab_cell_tool(Path(app.srcdir)).is_placeholder(url):
        return
    options["launch_buttons"] = {}
    options["use_repository_button"] = False
    options["use_edit_page_button"] = False
    options["use_issues_button"] = False
    config.html_theme_options = options
    logging.getLogger(__name__).info(
        f"book_site: repository.url is the placeholder {url} (no such repository): launch buttons "
        "(Binder, Colab) and the repository button left out; set repository.url in _config.yml (see CONTRIBUTING.md)"
    )


EXPLORER_MODULE = Path("lib") / "explorer.js"  # the explorer, relative to the book's root (Sphinx's source folder)
EXPLORER_SOURCE = Path("tools") / "explorer"  # the live translator's modules (they import ./explorer.js)
LIVE_EXPORT = Path("_build") / "live"  # where `make book` runs `python -m lib.export --out`
LIVE_FILES = ("manifest.json", "encoder.onnx", "decoder.onnx", "weights.bin", "tokenizer.json")
LIVE_COMMAND = "python -m lib.export --run models/de-en --out _build/live --dtype fp16"


def _check_live_export(app: Any) -> None:
    """Warn (an error under -W) when the live translation page is built without the ONNX export."""
    if app.builder.format != "html":
        return
    missing = [name for name in LIVE_FILES if not (Path(app.srcdir) / LIVE_EXPORT / name).is_file()]
    if missing:
        from sphinx.util import logging

        logging.getLogger(__name__).warning(
            f"book_site: the live translation page needs the ONNX export of the shipped model, but "
            f"{LIVE_EXPORT}/ lacks {', '.join(missing)}: run `make book` (or `{LIVE_COMMAND}`)"
        )


def _copy_scripts(app: Any, exception: Exception | None) -> None:
    """Copy the explorer's modules and the model export into the built site's ``_static/``."""
    if exception is not None or app.builder.format != "html":
        return
    root, static = Path(app.srcdir), Path(app.outdir) / "_static"
    target = static / "explorer"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for script in [root / EXPLORER_MODULE, *sorted((root / EXPLORER_SOURCE).glob("*.js"))]:
        shutil.copy2(script, target / script.name)
    live = static / "live"
    shutil.rmtree(live, ignore_errors=True)
    if all((root / LIVE_EXPORT / name).is_file() for name in LIVE_FILES):
        live.mkdir(parents=True)
        for name in LIVE_FILES:
            shutil.copy2(root / LIVE_EXPORT / name, live / name)


class AttentionExplorer(SphinxDirective):
    """``{attention-explorer}``: every attention map of the model's translations of the given sentences."""

    has_content = True
    option_spec: ClassVar[dict] = {
        "run": directives.unchanged,
        "decimals": directives.positive_int,
        "kinds": directives.unchanged,
        "kind": directives.unchanged,
        "layer": directives.nonnegative_int,
        "head": directives.unchanged,
    }

    def _view(self, kinds: list[str] | None) -> dict:
        """The first view from ``:kind:``, ``:layer:`` and ``:head:`` (checked here: the page must not break)."""
        view: dict = {}
        if "kind" in self.options:
            kind = self.options["kind"].strip()
            if kind not in (kinds or ("encoder", "decoder", "cross")):
                raise self.error(f"attention-explorer: :kind: must be one of {kinds or 'encoder decoder cross'}")
            view["kind"] = kind
        if "layer" in self.options:
            view["layer"] = self.options["layer"]
        if "head" in self.options:
            head = self.options["head"].strip()
            if head != "mean" and not head.isdigit():
                raise self.error(f"attention-explorer: :head: must be a head's index from 0 or mean, got {head!r}")
            view["head"] = head if head == "mean" else int(head)
        return view

    def run(self) -> list:
        from lib.checkpoint import SHIPPED_MODEL, load_run
        from lib.explorer import explorer_data, explorer_json

        sentences = [line.strip() for line in self.content if line.strip()]
        if not sentences:
            raise self.error("attention-explorer: give one source sentence per line as the directive's content")
        kinds = self.options["kinds"].replace(",", " ").split() if "kinds" in self.options else None
        view = self._view(kinds)
        run_dir = Path(self.env.srcdir) / self.options.get("run", str(SHIPPED_MODEL))
        for name in ("model.pt", "config.json", "tokenizer.json"):
            self.env.note_dependency(str(run_dir / name))  # rebuild the page when the model changes
        script = Path(self.env.srcdir) / EXPLORER_MODULE
        self.env.note_dependency(str(script))
        try:
            run = load_run(run_dir)
            data = explorer_data(
                run.model, run.tokenizer, sentences, decimals=self.options.get("decimals", 3), kinds=kinds
            )
        except (FileNotFoundError, ValueError, TypeError) as err:
            raise self.error(f"attention-explorer: {err}") from None
        first = data["sentences"][0]["maps"]
        layers = len(first[view.get("kind", "cross" if "cross" in first else next(iter(first)))])
        if view.get("layer", 0) >= layers:
            raise self.error(f"attention-explorer: :layer: must be below {layers}, got {view['layer']}")
        count = self.env.temp_data.get("attention_explorers", 0)
        self.env.temp_data["attention_explorers"] = count + 1
        ident = f"attention-explorer-{count}"
        view_attribute = f' data-attention-explorer-view="{html_escape(json.dumps(view))}"' if view else ""
        html = (
            f'<div class="attention-explorer-embed" data-attention-explorer="{ident}-data" id="{ident}"'
            f"{view_attribute}></div>\n"
            f'<script type="application/json" id="{ident}-data">{explorer_json(data)}</script>\n'
        )
        if count == 0:  # the module once per page, inline: module scripts from file:// URLs are blocked
            code = script.read_text(encoding="utf-8")
            html += f'<script type="module">\n{code}\nmountAll(document);\n</script>\n'
        return [nodes.raw("", html, format="html")]


def setup(app: Any) -> dict:
    # The directive imports lib: the one beside this _config.yml, even where another checkout is installed.
    if str(app.srcdir) not in sys.path:
        sys.path.insert(0, str(app.srcdir))
    app.add_directive("attention-explorer", AttentionExplorer)
    app.connect("config-inited", _leave_out_placeholder_buttons)
    # Sphinx's toctree collector assigns the figure numbers on env-get-updated at the default priority (500).
    app.connect("env-get-updated", _restore_book_numbers, priority=100)
    app.connect("env-get-updated", _number_within_page, priority=900)
    app.connect("html-page-context", _page_context, priority=900)  # after the extensions that add assets
    app.connect("builder-inited", _check_portable)
    app.connect("build-finished", _copy_portable)
    app.connect("builder-inited", _check_live_export)
    app.connect("builder-inited", _bibliography_translator)
    app.connect("builder-inited", _name_hidden_cells)
    app.connect("build-finished", _copy_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
