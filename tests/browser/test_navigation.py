"""Finding one's way on every screen, in headless Chromium with the network cut off (issue 42).

- The sidebars' buttons: on a 390-px phone (every page) and a 768-px tablet (five pages; the same drawers), a tap
  on ☰ opens the chapter list and a tap on ≣ this page's contents, as drawers (pydata-sphinx-theme 0.17 bound
  them to hidden copies: ``_theme/book.js`` hands each click to the theme's own code); Escape closes a drawer and
  focus returns to the button. At 1,280 px ☰ collapses the chapter list and a second click brings it back.
- The search field: what a reader types starts right of the magnifier, in the Ctrl+K dialog and on the search page.
- Keyboard: formulas are not Tab stops; every control Tab reaches shows a focus ring; a button keeps the focus after
  it is used.
- The zoom hint under a shrunk figure is at least 4.5:1 against the page in both themes.

Screenshots: ``_build/screenshots/navigation_*.png``. Needs ``make book`` and ``make browser-deps``.
"""

from __future__ import annotations

import re

import pytest

from .conftest import SCREENSHOTS, built_pages

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}
TABLET = {"viewport": {"width": 768, "height": 1024}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}
SCREENS = {"phone": PHONE, "tablet": TABLET}

# The visible button of a kind (.primary-toggle: ☰, .secondary-toggle: ≣), or null where the page has none.
VISIBLE_TOGGLE_JS = """kind => {
  const shown = [...document.querySelectorAll('.' + kind)].filter(b => {
    const r = b.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(b).visibility !== 'hidden';
  });
  return shown.length;
}"""

# A drawer open: the theme's <dialog> for that sidebar, open, holding the sidebar's links, and on screen.
DRAWER_JS = """id => {
  const d = document.getElementById(id);
  if (!d) return {exists: false};
  const r = d.getBoundingClientRect();
  return {exists: true, open: d.open, links: d.querySelectorAll('a').length,
          width: Math.round(r.width), left: Math.round(r.left)};
}"""


def _shot(name: str) -> str:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return str(SCREENSHOTS / f"navigation_{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png")


def _visible(page, kind: str):
    count = page.evaluate(VISIBLE_TOGGLE_JS, kind)
    return page.locator(f".{kind}:visible").first if count else None


def _tap_open_close(page, path: str, kind: str, dialog: str, screenshot: str | None) -> None:
    button = _visible(page, kind)
    assert button is not None, f"{path}: no visible {kind} button"
    button.tap()
    page.wait_for_function(f"() => document.getElementById('{dialog}').open", timeout=5000)
    drawer = page.evaluate(DRAWER_JS, dialog)
    assert drawer["open"] and drawer["links"] > 0 and drawer["width"] > 150, f"{path}: {kind} opened {drawer}"
    if screenshot:
        page.screenshot(path=_shot(screenshot))
    page.keyboard.press("Escape")
    page.wait_for_function(f"() => !document.getElementById('{dialog}').open", timeout=5000)


# Every page on a phone; on a tablet (the same drawers below 992 px) the home page, a chapter, a deeper dive, the
# live page and the glossary.
TABLET_PAGES = [
    "chapters/intro.html",
    "chapters/transformer.html",
    "chapters/transformer_batching.html",
    "chapters/translate_live.html",
    "chapters/glossary.html",
]
SIDEBAR_CASES = [(path, "phone") for path in built_pages()] + [(path, "tablet") for path in TABLET_PAGES]


@pytest.mark.parametrize(("path", "screen"), SIDEBAR_CASES)
def test_a_tap_on_the_sidebar_buttons_opens_them(visit, path, screen):
    v = visit(path, wait_maths=False, **SCREENS[screen])
    page = v.page
    shoot = path in ("chapters/transformer.html", "chapters/intro.html")
    stem = path.removesuffix(".html")
    _tap_open_close(page, path, "primary-toggle", "pst-primary-sidebar-modal", shoot and f"{stem}_{screen}_chapters")
    chapters = page.evaluate(DRAWER_JS, "pst-primary-sidebar-modal")
    assert not chapters["open"]
    if page.evaluate(VISIBLE_TOGGLE_JS, "secondary-toggle"):
        _tap_open_close(page, path, "secondary-toggle", "pst-secondary-sidebar-modal", shoot and f"{stem}_{screen}_toc")
    assert v.problems() == [], "; ".join(v.problems())


def test_every_chapter_page_has_both_buttons_on_a_phone(visit):
    """A chapter has sections, so ≣ is there too (the loop above skips it only on pages without sections)."""
    v = visit("chapters/transformer.html", wait_maths=False, **PHONE)
    assert v.page.evaluate(VISIBLE_TOGGLE_JS, "primary-toggle") == 1
    assert v.page.evaluate(VISIBLE_TOGGLE_JS, "secondary-toggle") == 1


def test_on_a_desktop_the_chapter_button_collapses_the_list_and_keeps_the_focus(visit):
    v = visit("chapters/self_attention.html", wait_maths=False)
    page = v.page
    sidebar = page.locator("#pst-primary-sidebar")
    assert sidebar.is_visible()
    button = _visible(page, "primary-toggle")
    assert button is not None
    button.click()
    page.wait_for_timeout(400)  # the theme's transition
    width = sidebar.evaluate("e => e.getBoundingClientRect().width")
    assert not sidebar.is_visible() or width < 5, f"☰ did not collapse the chapter list ({width} px)"
    assert not page.evaluate("() => document.getElementById('pst-primary-sidebar-modal').open")
    page.screenshot(path=_shot("self_attention_desktop_collapsed"))
    button.click()
    page.wait_for_timeout(400)
    assert sidebar.is_visible() and sidebar.evaluate("e => e.getBoundingClientRect().width") > 150
    assert v.problems() == [], "; ".join(v.problems())


def test_focus_comes_back_to_the_button_that_opened_a_drawer(visit):
    v = visit("chapters/self_attention.html", wait_maths=False, **TABLET)
    page = v.page
    button = _visible(page, "primary-toggle")
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('pst-primary-sidebar-modal').open", timeout=5000)
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.getElementById('pst-primary-sidebar-modal').open", timeout=5000)
    focused = page.evaluate("() => document.activeElement.className")
    assert "primary-toggle" in focused, f"focus went to {focused!r}"


# The search input's text starts right of the magnifier icon: its content box's left edge against the icon's right.
SEARCH_JS = """() => [...document.querySelectorAll('form.bd-search')].filter(f => f.getBoundingClientRect().width > 0)
  .map(f => {
    const input = f.querySelector('input'), icon = f.querySelector('.fa-magnifying-glass');
    const r = input.getBoundingClientRect(), s = getComputedStyle(input);
    return {text: r.left + parseFloat(s.paddingLeft) + parseFloat(s.borderLeftWidth),
            icon: icon.getBoundingClientRect().right};
  })"""


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_what_is_typed_in_search_is_not_under_the_magnifier(visit, screen):
    options = PHONE if screen == "phone" else {}
    v = visit("search.html", wait_maths=False, **options)
    fields = v.page.evaluate(SEARCH_JS)
    assert fields, "the search page shows no search field"
    assert all(f["text"] >= f["icon"] + 2 for f in fields), fields
    v = visit("chapters/intro.html", wait_maths=False, **options)
    page = v.page
    page.keyboard.press("Control+k")
    page.wait_for_function("() => document.activeElement.matches('form.bd-search input')")
    page.keyboard.type("query")
    page.screenshot(path=_shot(f"search_dialog_{screen}"))
    fields = page.evaluate(SEARCH_JS)
    assert fields and all(f["text"] >= f["icon"] + 2 for f in fields), fields


def test_formulas_are_not_tab_stops(visit):
    v = visit("chapters/self_attention.html")
    page = v.page
    assert page.locator("mjx-container").count() > 50
    assert page.evaluate("() => document.querySelectorAll('mjx-container[tabindex]').length") == 0
    page.keyboard.press("Tab")
    for _ in range(40):
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.closest('mjx-container') === null")


# Every element Tab reaches on the page (up to `limit` stops): its outline or box-shadow while focused.
FOCUS_RING_JS = """() => {
  const e = document.activeElement, s = getComputedStyle(e);
  const r = e.getBoundingClientRect();
  const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 1;
  return {tag: e.tagName.toLowerCase(), cls: String(e.className).slice(0, 60),
          text: e.textContent.trim().slice(0, 30), shown: r.width > 0 && r.height > 0,
          ring: outline || (s.boxShadow && s.boxShadow !== 'none')};
}"""


@pytest.mark.parametrize("path", ["chapters/self_attention.html", "chapters/transformer.html"])
def test_every_control_tab_reaches_shows_the_focus(visit, path):
    v = visit(path)
    page = v.page
    seen, missing = 0, []
    for _ in range(80):
        page.keyboard.press("Tab")
        state = page.evaluate(FOCUS_RING_JS)
        if state["tag"] == "body" or not state["shown"]:
            continue
        seen += 1
        if not state["ring"]:
            missing.append(state)
    assert seen > 30, f"{path}: Tab reached only {seen} visible controls"
    assert not missing, f"{path}: {len(missing)} controls without a visible focus ring: {missing[:5]}"


CONTRAST_JS = """() => {
  const box = document.querySelector('.bd-article .figure-zoomable');
  if (!box) return null;
  const hint = getComputedStyle(box, '::after');
  const parse = c => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const channel = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  let bgEl = box, bg = 'rgba(0, 0, 0, 0)';
  while (bgEl && /rgba\\(0, 0, 0, 0\\)|transparent/.test(bg)) {
    bg = getComputedStyle(bgEl).backgroundColor;
    bgEl = bgEl.parentElement;
  }
  const [a, b] = [lum(parse(hint.color)), lum(parse(bg))].sort((x, y) => y - x);
  return {content: hint.content, color: hint.color, background: bg, ratio: (a + 0.05) / (b + 0.05)};
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_zoom_hint_is_readable_in_both_themes(visit, theme):
    v = visit("chapters/transformer.html", wait_maths=False, **PHONE)
    page = v.page
    page.evaluate(f"() => document.documentElement.dataset.theme = '{theme}'")
    page.wait_for_function("() => document.querySelector('.bd-article .figure-zoomable') !== null", timeout=10000)
    hint = page.evaluate(CONTRAST_JS)
    assert hint and "full size" in hint["content"] and hint["ratio"] >= 4.5, hint


def test_the_sliders_are_a_fingers_height_on_a_phone(visit):
    v = visit("chapters/transformer.html", wait_maths=False, **PHONE)
    heights = v.page.evaluate(
        "() => [...document.querySelectorAll('.bd-article input[type=range]')]"
        ".map(s => s.getBoundingClientRect().height)"
    )
    assert heights and min(heights) >= 24, heights


@pytest.mark.parametrize("query", ["dot product", "softmax scores"])
def test_search_snippets_show_formulas_as_text(visit, query):
    """Result snippets never show a formula's TeX source (``\\(K \\cdot V\\)``) or a table of one repeated word."""
    v = visit(f"search.html?q={query.replace(' ', '+')}", wait_maths=False)
    page = v.page
    page.wait_for_function("() => document.querySelectorAll('#search-results li p.context').length >= 3", timeout=60000)
    page.wait_for_timeout(1000)  # the remaining snippets
    snippets = page.evaluate(
        "() => [...document.querySelectorAll('#search-results li p.context')].map(p => p.textContent)"
    )
    raw = [s for s in snippets if re.search(r"\\[()\[\]]|\\[A-Za-z]{2,}", s)]
    assert not raw, f"snippets with TeX source: {raw[:2]}"
    repeated = [s for s in snippets if re.search(r"\b(\w+) \1 \1\b", s)]
    assert not repeated, f"snippets of a repeated word: {repeated[:2]}"
    assert v.problems() == [], "; ".join(v.problems())


def test_each_folded_solution_is_named_for_its_exercise(visit):
    v = visit("chapters/self_attention.html", wait_maths=False)
    page = v.page
    page.wait_for_function("() => document.querySelector('.toggle-button[aria-label^=\"Show or hide\"]') !== null")
    buttons = page.evaluate(
        "() => [...document.querySelectorAll('.toggle-button')]"
        ".map(b => ({name: b.getAttribute('aria-label'), hint: b.dataset.toggleHint}))"
    )
    names = [b["name"] for b in buttons]
    assert len(buttons) >= 5 and len(set(names)) == len(names), names
    assert all(re.fullmatch(r"Show or hide: Solution to Exercise \d+.*", n) for n in names), names
    assert all("Click" not in b["hint"] for b in buttons), buttons


def test_a_slider_stays_under_the_finger_through_its_frames(visit):
    """The walk's label wraps to a different number of lines per stage: the slider must not move with it."""
    v = visit("chapters/transformer.html", wait_maths=False, **PHONE)
    tops = v.page.evaluate(
        """() => [...document.querySelectorAll('.figure-slider')].map(root => {
             const input = root.querySelector('.figure-slider-input'), seen = [];
             for (let i = Number(input.min); i <= Number(input.max); i++) {
               input.value = i;
               input.dispatchEvent(new Event('input'));
               seen.push(input.getBoundingClientRect().top - root.getBoundingClientRect().top);
             }
             return seen;
           })"""
    )
    assert tops, "no slider on the page"
    moving = [t for t in tops if max(t) - min(t) > 1]
    assert not moving, f"sliders that move between frames (px from the top of their figure): {moving[:2]}"


def test_chinese_in_the_text_is_marked_as_chinese(visit):
    v = visit("chapters/self_attention.html", wait_maths=False)
    unmarked = v.page.evaluate(
        """() => {
             const han = /[\\u4e00-\\u9fff]/, out = [];
             const walker = document.createTreeWalker(document.querySelector('.bd-article'), NodeFilter.SHOW_TEXT);
             while (walker.nextNode()) {
               const node = walker.currentNode;
               if (!han.test(node.nodeValue) || node.parentElement.closest('script, style, code, pre, svg')) continue;
               if (!node.parentElement.closest('[lang="zh"]')) out.push(node.nodeValue.trim().slice(0, 30));
             }
             return out;
           }"""
    )
    marked = v.page.evaluate("() => document.querySelectorAll('.bd-article [lang=\"zh\"]').length")
    assert marked > 0 and not unmarked, (marked, unmarked[:3])


def test_the_theme_switch_keeps_the_focus_when_used_from_the_keyboard(visit):
    v = visit("chapters/self_attention.html", wait_maths=False)
    page = v.page
    switch = page.locator(".theme-switch-button:visible").first
    switch.focus()
    before = page.evaluate("() => document.documentElement.dataset.mode")
    page.keyboard.press("Enter")
    page.wait_for_timeout(200)
    assert page.evaluate("() => document.documentElement.dataset.mode") != before
    assert page.evaluate("() => document.activeElement.classList.contains('theme-switch-button')")


# Each explorer map: wider than its box, and whether the line that says it scrolls follows it.
MAPS_JS = """() => [...document.querySelectorAll('.attn-explorer .attn-figure')].map(f => ({
  wide: f.scrollWidth > f.clientWidth + 1,
  hint: !!(f.nextElementSibling && f.nextElementSibling.classList.contains('attn-scroll-hint'))}))"""


@pytest.mark.parametrize(("screen", "wide"), [("phone", True), ("desktop", False)])
def test_a_map_wider_than_the_page_says_it_scrolls(visit, screen, wide):
    options = PHONE if screen == "phone" else {}
    v = visit("chapters/self_attention.html", wait_maths=False, **options)
    v.page.wait_for_function("() => document.querySelector('.attn-explorer svg') !== null")
    v.page.wait_for_timeout(300)
    maps = v.page.evaluate(MAPS_JS)
    assert maps and all(m["wide"] == wide for m in maps), maps
    assert all(m["hint"] == m["wide"] for m in maps), maps
