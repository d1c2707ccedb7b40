"""The built site for every reader and every screen, in headless Chromium with the network cut off (issue 35).

- Accessibility: axe-core (vendored from npm at a pinned version and sha512, ``tools/vendor_js.py --tests``) runs
  on every page at 1,280 px; no violation of impact "critical" or "serious" is allowed. Every icon the theme shows
  is drawn by its web font (the site does not load the theme's 1.5 MB ``fontawesome.js``).
- Code cells at 1,280 px: no code cell's code or printed output is wider than its box (long lines wrap inside it),
  and no display formula is wider than the 688-px column (long ones are set over two or three lines); on a phone a
  formula wider than the screen scrolls in its own box, with a shadow at the edge that hides more.
- A 390-px touch phone: no page is wider than the screen (inline code wraps, tables scroll inside their own box),
  and the Transformer chapter's "Block in the picture / lib code" table has no tall, nearly empty rows.
- Figures at their own size (``_theme/book.js``): every figure the page shows narrower than its own size (on a phone,
  the schematics, the grids, the walk's frames) is marked zoomable, and a tap shows it at its own size, where its
  text is at least 9 pt (tests/unit/test_plots_legibility.py, test_diagrams.py), in a box that scrolls sideways.
- Weight: every chapter page is at most ``tools/site_weight.LIMIT_BYTES`` (1.5 MB) before its figures on a cold
  load, as a gzip-compressing server sends it; the table of every page, raw and gzipped, is printed by
  ``python tools/site_weight.py``.
- No page carries a CDN address for Thebe (``THEBE_JS_URL``); the home page's ``<title>`` names the book once.

Screenshots at both widths: ``_build/screenshots/layout_*.png``. Needs ``make book`` and ``make browser-deps``.
"""

from __future__ import annotations

import re

import pytest

from tools.site_weight import LIMIT_BYTES, weigh

from .conftest import ROOT, SCREENSHOTS, SITE, built_pages, notebook_pages

AXE = ROOT / ".cache" / "vendor" / "tests" / "axe-core" / "axe.min.js"
BLOCKING = ("critical", "serious")
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}

AXE_JS = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.length, where: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
}"""

# Code cells (their code and their printed output) whose content is wider than their box.
CODE_OVERFLOW_JS = """() => [...document.querySelectorAll(
    '.bd-article div.cell div.highlight pre, .bd-article div.cell_output pre, .bd-article div.output pre')]
  .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
  .map(pre => ({width: pre.scrollWidth, box: pre.clientWidth, text: pre.textContent.trim().slice(0, 60)}))"""

# Display formulas wider than their column: the width MathJax drew against the box the page gives it, and whether
# that box scrolls sideways (with the shadow cue of book.css).
WIDE_FORMULAS_JS = """() => [...document.querySelectorAll('.bd-article mjx-container[display="true"]')].map(m => ({
    drawn: Math.round(m.firstElementChild ? m.firstElementChild.getBoundingClientRect().width : 0),
    box: Math.round(m.getBoundingClientRect().width), scrolls: getComputedStyle(m).overflowX === 'auto',
    text: m.textContent.slice(0, 40)})).filter(f => f.drawn > f.box + 1)"""

# Elements that stick out of the phone's screen on the right without a scrolling box of their own around them.
WIDE_JS = """() => {
  const screen = document.documentElement.clientWidth, out = [];
  for (const e of document.querySelectorAll(".bd-article *, .bd-header *, .bd-footer *")) {
    const r = e.getBoundingClientRect();
    if (!r.width || r.right <= screen + 1) continue;
    let boxed = false;
    for (let a = e.parentElement; a && !boxed; a = a.parentElement) {
      boxed = ["auto", "scroll", "hidden"].includes(getComputedStyle(a).overflowX);
    }
    const name = `${e.tagName.toLowerCase()}.${[...e.classList].join(".")}`;
    if (!boxed) out.push(`${name}: ${e.textContent.trim().slice(0, 50)}`);
  }
  return out.slice(0, 5);
}"""

# Icons: each <i class="fa-..."> must draw a glyph of the theme's Font Awesome web font (not a box or nothing).
ICONS_JS = """() => [...document.querySelectorAll("i[class*='fa-']")].map(i => {
  const before = getComputedStyle(i, "::before");
  return {cls: i.className, content: before.content, font: before.fontFamily};
}).filter(i => !/Font Awesome/.test(i.font) || i.content === "none" || i.content === "normal")"""


# Every figure of a page: its own width, the width the page shows it at, and whether book.js marked it zoomable.
FIGURES_JS = """() => [...document.querySelectorAll('.bd-article .cell_output img, .bd-article figure img')]
  .map(img => ({alt: img.alt.slice(0, 60), natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
                zoomable: img.parentElement.classList.contains('figure-zoomable')}))"""

# One figure's state: its width on the page, its own width, and the width of its box and of what the box holds.
FIGURE_JS = """img => ({natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
  box: img.parentElement.clientWidth, content: img.parentElement.scrollWidth,
  zoomable: img.parentElement.classList.contains('figure-zoomable'),
  zoomed: img.parentElement.classList.contains('figure-zoomed')})"""


def _shot(path: str, suffix: str) -> str:
    return str(SCREENSHOTS / f"layout_{re.sub(r'[^A-Za-z0-9_.-]', '_', path.removesuffix('.html'))}_{suffix}.png")


def chapter_weight_pages() -> list[str]:
    """The pages limited in weight: every page built from a chapter notebook (the live page fetches a model)."""
    return notebook_pages()


@pytest.mark.parametrize("path", built_pages())
def test_desktop_page_is_accessible_and_its_code_fits(visit, path):
    if not AXE.is_file():
        pytest.fail(f"axe-core is missing ({AXE}): run `make browser-deps` (python tools/vendor_js.py --tests)")
    v = visit(path)
    page = v.page
    page.add_script_tag(path=str(AXE))
    violations = page.evaluate(AXE_JS)
    blocking = [x for x in violations if x["impact"] in BLOCKING]
    assert not blocking, f"{path}: axe-core violations: " + "; ".join(
        f"{x['id']} ({x['impact']}, {x['nodes']} nodes: {x['where']})" for x in blocking
    )
    icons = page.evaluate(ICONS_JS)
    assert not icons, f"{path}: icons without a glyph of the theme's web font: {icons[:3]}"
    overflowing = page.evaluate(CODE_OVERFLOW_JS)
    assert not overflowing, f"{path}: {len(overflowing)} code cells wider than their box at 1,280 px: {overflowing[:3]}"
    formulas = page.evaluate(WIDE_FORMULAS_JS)
    assert not formulas, f"{path}: display formulas wider than the 688-px column: {formulas[:3]}"
    assert v.problems() == [], "; ".join(v.problems())


@pytest.mark.parametrize("path", built_pages())
def test_no_page_is_wider_than_a_phone(visit, path):
    v = visit(path, **PHONE)
    page = v.page
    width = page.evaluate("document.documentElement.scrollWidth")
    if path in ("chapters/transformer.html", "chapters/multihead_attention.html", "chapters/capstone.html"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=_shot(path, "phone"))
    assert width <= 390, f"{path}: the page is {width} px wide on a 390-px phone: {page.evaluate(WIDE_JS)}"
    unboxed = [f for f in page.evaluate(WIDE_FORMULAS_JS) if not f["scrolls"]]
    assert not unboxed, f"{path}: display formulas wider than a phone that do not scroll in their box: {unboxed[:3]}"
    figures = page.evaluate(FIGURES_JS)
    unloaded = [f["alt"] for f in figures if not f["natural"]]
    assert not unloaded, f"{path}: figures that did not load: {unloaded[:3]}"
    wrong = [f for f in figures if f["zoomable"] != (f["shown"] < f["natural"] - 1)]
    assert not wrong, f"{path}: figures shown narrower than their own size and not zoomable, or zoomable: {wrong[:3]}"


def test_a_phone_reader_taps_a_figure_to_see_it_at_its_own_size(visit):
    """The walk's frames and the schematics are drawn for the desktop column: text at least 9 pt there, about 4.5 pt
    scaled to a phone. A tap (or Enter) shows one at its own size in a box that scrolls sideways, without widening
    the page, and keeps it so while the walk's slider moves; a second tap fits it to the screen again."""
    v = visit("chapters/transformer.html", **PHONE)
    page = v.page
    for name, selector in (("walk", ".figure-slider-image"), ("schematic", ".cell_output img[src$='.svg']")):
        img = page.locator(f".bd-article {selector}").first
        img.scroll_into_view_if_needed()
        before = img.evaluate(FIGURE_JS)
        assert before["zoomable"] and before["shown"] <= 358 < before["natural"], f"{name}: {before}"
        img.tap()
        after = img.evaluate(FIGURE_JS)
        assert after["zoomed"] and abs(after["shown"] - before["natural"]) <= 1, f"{name} after a tap: {after}"
        assert after["content"] > after["box"] and after["box"] <= 390, f"{name}: its box does not scroll: {after}"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, f"{name} widened the page"
        img.screenshot(path=_shot(f"transformer_{name}_zoomed", "phone"))
        if name == "walk":
            page.evaluate(
                """() => { const s = document.querySelector('.figure-slider-input');
                           s.value = s.max; s.dispatchEvent(new Event('input')); }"""
            )
            moved = img.evaluate(FIGURE_JS)
            assert moved["zoomed"] and moved["shown"] > 358, f"the walk's last frame is not at its own size: {moved}"
        img.tap()
        fitted = img.evaluate(FIGURE_JS)
        assert not fitted["zoomed"] and fitted["shown"] <= 358, f"{name} after a second tap: {fitted}"
        img.focus()
        page.keyboard.press("Enter")
        assert img.evaluate(FIGURE_JS)["zoomed"], f"{name}: Enter does not show it at its own size"
        page.keyboard.press("Enter")


def test_the_transformer_table_has_no_tall_empty_rows_on_a_phone(visit):
    """The "Block in the picture / lib code" table: each row at most five lines of text high at 390 px (its longest
    cell, "Preliminaries: vectors, softmax, tokens, recurrent networks, BLEU, this chapter, §7", takes five)."""
    v = visit("chapters/transformer.html", **PHONE)
    table = v.page.locator("main table", has_text="Block in the picture").first
    table.scroll_into_view_if_needed()
    table.screenshot(path=_shot("transformer_table", "phone"))
    rows = table.evaluate(
        """t => [...t.querySelectorAll('tbody tr')].map(r => ({h: r.getBoundingClientRect().height,
             line: parseFloat(getComputedStyle(r.querySelector('td')).lineHeight), text: r.textContent.trim()}))"""
    )
    tall = [r for r in rows if r["h"] > 5 * r["line"] + 24]  # five lines and the cells' padding
    assert len(rows) >= 10 and not tall, f"rows taller than five lines: {tall[:3]}"
    box = table.evaluate("t => t.closest('.pst-scrollable-table-container')?.getBoundingClientRect().right")
    assert box is not None and box <= 390, "the table does not scroll inside its own box on a phone"


@pytest.mark.parametrize("path", chapter_weight_pages())
def test_a_chapter_page_is_light_before_its_figures(browser, server, path):
    weight = weigh(browser, server.url, path)
    assert weight["outside"] == [], f"{path}: requests off the site: {weight['outside'][:3]}"
    names = {url.rsplit("/", 1)[-1].split("?")[0] for url, _, _ in weight["files"]}
    assert "fontawesome.js" not in names, f"{path} loads the theme's fontawesome.js (1.5 MB)"
    gz = weight["gzip_before_figures"]
    table = ", ".join(f"{k} {weight['raw'][k] / 1e6:.2f}" for k in weight["raw"])
    assert gz <= LIMIT_BYTES, f"{path}: {gz / 1e6:.2f} MB gzipped before its figures (limit 1.5); raw MB: {table}"


def test_no_thebe_cdn_and_the_home_title_once():
    pages = [p for p in built_pages() if "THEBE_JS_URL" in (SITE / p).read_text(encoding="utf-8")]
    assert pages == [], f"pages with sphinx-thebe's CDN address (THEBE_JS_URL): {pages[:5]}"
    home = (SITE / "chapters" / "intro.html").read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?)</title>", home, re.S).group(1).strip()
    assert title == "Attention, from Seq2Seq to Transformers", f"the intro's <title> is {title!r}"
