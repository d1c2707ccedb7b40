"""The schematics render the same on a system without the DejaVu fonts they were laid out with.

matplotlib lays out every label with DejaVu Sans, which Windows, macOS, iOS and Android do not have. The site shows
each schematic as an SVG image: a plain label is one ``<text>`` (anchored at its start, middle or end, so another
sans-serif font only makes it a little narrower or wider), and a maths label is outlines, which need no font
(``lib.diagrams.save_svg``). Here every schematic on the site is opened twice in headless Chromium, once as on this
machine and once with the DejaVu fonts hidden from it (fontconfig; Liberation Sans, with Arial's metrics, takes
their place): no SVG asks for a font no system has (STIX, DejaVu Sans Display), the labels are drawn in another font
(their widths change), the glyphs of no label separate or overlap, no two labels that were apart overlap, and none
leaves the picture.

Needs a built site (``make book``) and fonts besides DejaVu (Debian: fonts-liberation).
"""

from __future__ import annotations

import os
import re
import subprocess
from itertools import combinations

import pytest

from .conftest import find_chromium, notebook_pages

# Hide every DejaVu family (Sans, Sans Mono, Serif and their condensed faces) from Chromium.
FONTS_CONF = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <selectfont>
    <rejectfont>
      <glob>*/DejaVu*</glob>
      <glob>*/dejavu/*</glob>
    </rejectfont>
  </selectfont>
</fontconfig>
"""

# Each <text> of an SVG document: its string and its box in the picture's pixels; and the picture's size.
LABELS_JS = """() => {
  const svg = document.documentElement;
  const texts = [...svg.querySelectorAll("text")].map((t) => {
    const b = t.getBoundingClientRect();
    // glyphs placed one by one (a maths label kept as text): the gaps between them
    const glyphs = [...t.querySelectorAll("tspan[x]")].map((g) => g.getBoundingClientRect());
    const gaps = glyphs.slice(1).map((g, i) => g.x - (glyphs[i].x + glyphs[i].width));
    return { text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height, gaps };
  });
  const box = svg.getBoundingClientRect();
  return { texts, width: box.width, height: box.height };
}"""


def schematic_urls(site) -> list[str]:
    """The site paths of the SVG images the chapters show (relative to the site's root)."""
    found = []
    for page in notebook_pages():
        html = (site / page).read_text(encoding="utf-8")
        for src in re.findall(r'<img[^>]*\bsrc="\.\./(_images/[^"]+\.svg)"', html):
            found.append(src)
    return sorted(set(found))


@pytest.fixture(scope="module")
def browser_without_dejavu(browser, tmp_path_factory):
    conf = tmp_path_factory.mktemp("fonts") / "fonts.conf"
    conf.write_text(FONTS_CONF, encoding="utf-8")
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    families = subprocess.run(["fc-list", ":", "family"], env=env, capture_output=True, text=True, check=True)
    if "DejaVu" in families.stdout:
        pytest.fail("the fontconfig file did not hide DejaVu")
    if not families.stdout.strip():
        pytest.skip("no font besides DejaVu on this machine (Debian: apt-get install fonts-liberation)")
    # A second Chromium from the session's Playwright, with its own fonts.
    b = browser.browser_type.launch(executable_path=find_chromium(), headless=True, args=["--no-sandbox"], env=env)
    try:
        yield b
    finally:
        b.close()


def labels(browser, url: str) -> dict:
    page = browser.new_page()
    try:
        page.goto(url)
        return page.evaluate(LABELS_JS)
    finally:
        page.close()


def overlapping(texts: list[dict], slack: float = 0.5) -> set[tuple[int, int]]:
    """Pairs of labels whose boxes overlap by more than ``slack`` pixels both ways."""
    pairs = set()
    for (i, a), (j, b) in combinations(enumerate(texts), 2):
        dx = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
        dy = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
        if dx > slack and dy > slack:
            pairs.add((i, j))
    return pairs


def test_the_site_shows_the_schematics_as_svg(site):
    assert len(schematic_urls(site)) >= 13


def test_schematics_ask_for_no_font_a_reader_lacks(site):
    for src in schematic_urls(site):
        svg = (site / src).read_text(encoding="utf-8")
        assert "STIX" not in svg and "DejaVu Sans Display" not in svg, src
        for family in re.findall(r"font-family: ([^;\"]+)", svg):
            assert family.rstrip().endswith(("sans-serif", "monospace", "'WenQuanYi Micro Hei'")), (src, family)


def test_schematics_keep_their_labels_apart_without_dejavu(site, server, browser, browser_without_dejavu):
    changed = 0
    for src in schematic_urls(site):
        url = server.url + src
        with_dejavu = labels(browser, url)
        without = labels(browser_without_dejavu, url)
        assert [t["text"] for t in without["texts"]] == [t["text"] for t in with_dejavu["texts"]], src
        changed += any(abs(a["w"] - b["w"]) > 0.5 for a, b in zip(with_dejavu["texts"], without["texts"]))
        for a, b in zip(with_dejavu["texts"], without["texts"]):
            moved = [round(g2 - g1, 1) for g1, g2 in zip(a["gaps"], b["gaps"]) if abs(g2 - g1) > 1]
            assert not moved, (src, a["text"], "its glyphs separate or overlap (px):", moved)
        new = overlapping(without["texts"]) - overlapping(with_dejavu["texts"])
        assert not new, (src, [(without["texts"][i]["text"], without["texts"][j]["text"]) for i, j in new])
        for t in without["texts"]:
            inside = t["x"] >= -0.5 and t["x"] + t["w"] <= without["width"] + 0.5
            assert inside, (src, t["text"], "leaves the picture")
    assert changed >= len(schematic_urls(site)) // 2, "the labels did not change font: was DejaVu hidden?"
