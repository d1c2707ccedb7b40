"""The website in headless Chromium, offline: pages load cleanly, figures show, maths typesets,
solutions open, the kernel-free sliders move, search works. A screenshot of every page goes to
``_build/screenshots/``.
"""

from __future__ import annotations

import re

import pytest

from .conftest import SCREENSHOTS, built_pages, chapter_pages, notebook_pages

# Fraction of a figure's pixels that must differ from its corner pixel: a blank or failed image has ~0.
MIN_INK = 0.005
#: The kernel-free sliders' frames carry a description of their figure (issue 31) once the chapters are re-executed
#: with lib.plots.figure_slider's new alt text; until then they are named by their setting only, and exempt.
SLIDER_FRAMES_DESCRIBED = True

# Draws the image on a canvas (same-origin or data: URL, so readable) and returns the share of pixels that
# differ from the top-left one; 0 when the image did not load.
INK_JS = """
async (img) => {
  try { await img.decode(); } catch (e) { return {loaded: false, ink: 0, src: img.src.slice(0, 80)}; }
  if (!img.naturalWidth) return {loaded: false, ink: 0, src: img.src.slice(0, 80)};
  const w = Math.min(img.naturalWidth, 240), h = Math.min(img.naturalHeight, 240);
  const c = document.createElement("canvas"); c.width = w; c.height = h;
  const ctx = c.getContext("2d"); ctx.drawImage(img, 0, 0, w, h);
  const d = ctx.getImageData(0, 0, w, h).data;
  let differ = 0;
  for (let i = 0; i < d.length; i += 4) {
    const distance = Math.abs(d[i] - d[0]) + Math.abs(d[i+1] - d[1])
                   + Math.abs(d[i+2] - d[2]) + Math.abs(d[i+3] - d[3]);
    if (distance > 30) differ++;
  }
  return {loaded: true, ink: differ / (w * h), src: img.src.slice(0, 80)};
}
"""


def _shot_name(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", path.removesuffix(".html"))


def test_the_site_has_every_chapter():
    chapters = chapter_pages()
    assert len(chapters) >= 10, f"expected every chapter notebook to be built, found {chapters}"


@pytest.mark.parametrize("path", built_pages())
def test_page_loads_offline_without_errors(visit, path):
    v = visit(path)
    assert v.page.title(), f"{path} has no title"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    v.page.screenshot(path=str(SCREENSHOTS / f"{_shot_name(path)}.png"))
    assert v.problems() == [], f"{path}: " + "; ".join(v.problems())


@pytest.mark.parametrize("path", notebook_pages())
def test_chapter_figures_are_not_blank(visit, path):
    v = visit(path)
    images = v.page.locator("main img")
    if path in chapter_pages():  # a deeper dive or the errata page may have no figure
        assert images.count() > 0, f"{path} shows no figure"
    bad, unnamed = [], []
    for i in range(images.count()):
        info = images.nth(i).evaluate(INK_JS)
        if not info["loaded"] or info["ink"] < MIN_INK:
            bad.append(info)
        # a screen reader reads the alt text: a description, not nothing or a file's name (the kernel-free
        # sliders' frames too, once SLIDER_FRAMES_DESCRIBED)
        alt = (images.nth(i).get_attribute("alt") or "").strip()
        in_slider = images.nth(i).evaluate("e => e.closest('.figure-slider') !== null")
        exempt = in_slider and not SLIDER_FRAMES_DESCRIBED
        if (not exempt and len(alt.split()) < 4) or re.search(r"\.(png|svg|jpe?g)\b|_images/", alt):
            unnamed.append(alt or images.nth(i).get_attribute("src"))
    assert not bad, f"{path}: {len(bad)} of {images.count()} images blank or not loaded: {bad[:3]}"
    assert not unnamed, f"{path}: {len(unnamed)} images without a real alt text: {unnamed[:3]}"


@pytest.mark.parametrize("path", [p for p in built_pages() if not p.startswith(("genindex", "search"))])
def test_maths_is_typeset_without_tex_errors(visit, path):
    v = visit(path)
    page = v.page
    sources = page.locator("main .math").count()
    if sources == 0:
        pytest.skip(f"{path} has no maths")
    typeset = page.locator("main mjx-container").count()
    assert typeset >= sources, f"{path}: {sources} maths elements but only {typeset} typeset by MathJax"
    errors = page.locator("mjx-merror").all_inner_texts()
    assert errors == [], f"{path}: TeX errors {errors[:5]}"
    raw = page.locator("main .math").evaluate_all(
        "els => els.filter(e => !e.querySelector('mjx-container') && /\\\\[a-zA-Z]/.test(e.textContent))"
        ".map(e => e.textContent.slice(0, 60))"
    )
    assert raw == [], f"{path}: maths still shown as raw TeX: {raw[:3]}"


@pytest.mark.parametrize("path", chapter_pages())
def test_solutions_are_closed_and_open_on_click(visit, path):
    v = visit(path)
    page = v.page
    solutions = page.locator("main div.solution.dropdown")
    assert solutions.count() >= 3, f"{path}: expected at least 3 solution dropdowns, found {solutions.count()}"
    first = solutions.first
    body = first.locator("section, div.cell").first
    first.scroll_into_view_if_needed()
    assert not body.is_visible(), f"{path}: the first solution is open before a click"
    first.locator("button.toggle-button").click()
    body.wait_for(state="visible", timeout=5000)
    assert body.is_visible()
    first.screenshot(path=str(SCREENSHOTS / f"{_shot_name(path)}-solution.png"))


@pytest.mark.parametrize("path", chapter_pages())
def test_kernel_free_sliders_change_the_figure(visit, path):
    v = visit(path)
    page = v.page
    sliders = page.locator("main .figure-slider")
    assert sliders.count() >= 1, f"{path}: no kernel-free interactive figure (.figure-slider)"
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        image = slider.locator("img.figure-slider-image")
        value = slider.locator("output.figure-slider-value")
        rng = slider.locator("input[type=range]")
        before_src, before_value = image.get_attribute("src"), value.inner_text()
        at_max = rng.get_attribute("value") == rng.get_attribute("max")
        rng.focus()
        rng.press("ArrowLeft" if at_max else "ArrowRight")  # what a reader's keyboard or drag does
        assert image.get_attribute("src") != before_src, f"{path}: slider {i} did not change the figure"
        assert value.inner_text() != before_value, f"{path}: slider {i} did not change its label"
        info = image.evaluate(INK_JS)
        assert info["loaded"] and info["ink"] >= MIN_INK, f"{path}: slider {i} shows a blank frame"
        if i == 0:
            slider.scroll_into_view_if_needed()
            slider.screenshot(path=str(SCREENSHOTS / f"{_shot_name(path)}-slider.png"))
    assert v.problems() == [], "; ".join(v.problems())


def test_search_finds_positional_encoding(visit):
    v = visit("search.html?q=positional+encoding", wait_maths=False)
    page = v.page
    results = page.locator("#search-results li a, #search-results a")
    results.first.wait_for(timeout=15000)
    hrefs = results.evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert any("positional_encoding" in (h or "") for h in hrefs), f"search results: {hrefs[:10]}"
    page.screenshot(path=str(SCREENSHOTS / "search.png"))
    assert v.problems() == [], "; ".join(v.problems())
