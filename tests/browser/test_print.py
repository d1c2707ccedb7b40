"""A chapter printed, or saved as PDF from the browser (issue 42), in headless Chromium with the network cut off.

The page in print media at the width of an A4 sheet's text (718 px at 96 dpi, 1 cm margins): no code line or
printed output runs past the margin (they wrap), no display formula is wider than the text, the site's navigation
is left out, and the first page holds the chapter's title and its "In short" box. A PDF of the Transformer chapter
and a picture of its first page: ``_build/screenshots/print_*``.
"""

from __future__ import annotations

import pytest

from .conftest import SCREENSHOTS

A4_TEXT = {"width": 718, "height": 1047}  # 210 x 297 mm less 1-cm margins, at 96 px per inch

PRINT_JS = """() => {
  const article = document.querySelector('.bd-article');
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const code = [...article.querySelectorAll('pre')].filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => p.textContent.trim().slice(0, 50));
  const width = e => e.getBoundingClientRect().width;
  const formulas = [...article.querySelectorAll('mjx-container[display="true"]')]
    .filter(m => m.firstElementChild && width(m.firstElementChild) > width(m) + 1)
    .map(m => m.textContent.slice(0, 40));
  const past = [...article.querySelectorAll('*')]
    .filter(e => shown(e) && e.getBoundingClientRect().right > innerWidth + 1 && !e.closest('pre, mjx-container'))
    .map(e => e.tagName + ': ' + e.textContent.trim().slice(0, 40));
  const nav = ['.bd-sidebar-primary', '.bd-sidebar-secondary', '.bd-header-article', '.prev-next-area']
    .filter(s => { const e = document.querySelector(s); return e && shown(e); });
  const title = article.querySelector('h1'), short = article.querySelector('.admonition');
  return {code, formulas, past: past.slice(0, 5), nav, title: title.getBoundingClientRect().top,
          shortBottom: short ? short.getBoundingClientRect().bottom : null};
}"""


@pytest.mark.parametrize(
    "path",
    [
        "chapters/transformer.html",
        "chapters/self_attention.html",
        "chapters/positional_encoding.html",
        "chapters/capstone.html",
        "chapters/efficient_attention.html",
    ],
)
def test_a_printed_chapter_keeps_its_code_and_formulas_inside_the_margins(visit, path):
    v = visit(path)
    page = v.page
    page.emulate_media(media="print")
    page.set_viewport_size(A4_TEXT)
    page.wait_for_timeout(300)
    printed = page.evaluate(PRINT_JS)
    assert not printed["code"], f"{path}: code or output past the margin: {printed['code'][:3]}"
    assert not printed["formulas"], f"{path}: formulas wider than the text: {printed['formulas'][:3]}"
    assert not printed["past"], f"{path}: elements past the margin: {printed['past']}"
    assert not printed["nav"], f"{path}: the site's navigation is printed: {printed['nav']}"
    assert printed["title"] < 200 and printed["shortBottom"] is not None, printed
    assert printed["shortBottom"] < A4_TEXT["height"], f"{path}: the 'In short' box does not end on page 1: {printed}"
    if path == "chapters/transformer.html":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "print_transformer_page1.png"))
        pdf = page.pdf(
            path=str(SCREENSHOTS / "print_transformer.pdf"),
            format="A4",
            margin={"top": "1cm", "bottom": "1cm", "left": "1cm", "right": "1cm"},
        )
        assert pdf[:4] == b"%PDF"
    assert v.problems() == [], "; ".join(v.problems())
