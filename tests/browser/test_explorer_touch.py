"""The attention explorer by touch and by keyboard, as a reader meets it, in headless Chromium with the network cut off.

- On a 390-px touch phone (a mobile viewport with touch emulation; real taps, ``Input.dispatchTouchEvent`` through
  Playwright's touchscreen), on every page with an explorer (the four chapters and the live page, its embedded
  explorer and the live one): a tap on a cell shows that cell's query token, key token and weight, as the page's
  data has them, and pins it; a tap on another cell moves the pin; a second tap on the pinned cell clears it, so do
  a tap elsewhere on the page and Escape. The page itself does not scroll sideways.
- On a desktop with the keyboard: Tab reaches the map, which shows its first cell; the arrow keys move the cell and
  the readout follows; Escape clears; the focus ring is drawn, on all four sides, around the visible part of the map.

Screenshots (``_build/screenshots/explorer_touch_*.png``, ``explorer_keyboard_*.png``) show the tapped cell and the
focus ring. Needs a built site (``make book``).
"""

from __future__ import annotations

import io
import urllib.parse

import pytest

from .conftest import SCREENSHOTS
from .test_live_translation import EXPLORER, axes, embedded_data, problems, wait_until_ready

PHONE = {  # a 390-px phone (the size of an iPhone 12-15), touch only
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
PROMPT = "Point at or tap a cell or a token"
PAGES = [
    "chapters/bahdanau_attention.html",
    "chapters/capstone.html",
    "chapters/multihead_attention.html",
    "chapters/self_attention.html",
    "chapters/translate_live.html",
]


class Reader:
    """One page open in a context of the given kind, its network cut off, recording console errors."""

    def __init__(self, browser, server, path: str, **context):
        self.context = browser.new_context(service_workers="block", **context)
        self.page = self.context.new_page()
        self.console_errors: list[str] = []
        self.failed_requests: list[str] = []
        host = urllib.parse.urlsplit(server.url).netloc

        def route(r):
            url = urllib.parse.urlsplit(r.request.url)
            if url.scheme in ("data", "blob", "about") or url.netloc == host:
                r.continue_()
            else:
                self.failed_requests.append(f"outside request blocked: {r.request.url}")
                r.abort()

        self.page.route("**/*", route)
        self.page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.console_errors.append(f"uncaught: {e}"))
        self.page.goto(server.url + path, wait_until="load", timeout=120_000)


@pytest.fixture
def reader(browser, server):
    readers = []

    def open_page(path: str, **context) -> Reader:
        r = Reader(browser, server, path, **context)
        readers.append(r)
        return r

    yield open_page
    for r in readers:
        r.context.close()


def first_view(root) -> tuple[str, int, str]:
    values = [root.locator(f"select[data-control={n}]").evaluate("e => e.value") for n in ("kind", "layer", "head")]
    return values[0], int(values[1]), values[2]


def weights_of(sentence: dict, kind: str, layer: int, head: str) -> list[list[float]]:
    heads = sentence["maps"][kind][layer]
    if head != "mean":
        return heads[int(head)]
    rows, cols = len(heads[0]), len(heads[0][0])
    return [[sum(h[q][k] for h in heads) / len(heads) for k in range(cols)] for q in range(rows)]


def tap(page, locator) -> None:
    """A finger's tap on the middle of what `locator` finds (scrolled into view first), as the phone sends it."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def check_readout(root, sentence: dict, view: tuple[str, int, str], r: int, c: int) -> None:
    """The readout shows cell (r, c): its tokens as labelled and its weight as the data has it, pinned."""
    kind = view[0]
    rows, cols = axes(sentence, kind)
    weight = weights_of(sentence, *view)[r][c]
    readout = root.locator(".attn-readout")
    row_name = "query" if kind == "encoder" else "query predicting"
    text = readout.inner_text()
    prefix = f"{row_name} “{rows[r]}” → key “{cols[c]}”: "
    assert text.startswith(prefix), (text, prefix)
    tolerance = 1e-9 if view[2] != "mean" else 0.5e-3 + 1e-9  # the mean of the rounded heads, rounded again
    assert abs(float(text[len(prefix) :]) - weight) <= tolerance, (text, weight)
    data = readout.evaluate("e => ({...e.dataset})")
    assert (data["row"], data["col"], data["pinned"]) == (str(r), str(c), "true"), data
    assert root.locator("text.attn-active").all_text_contents() == [rows[r], cols[c]]


def check_cleared(root) -> None:
    readout = root.locator(".attn-readout")
    assert readout.inner_text().startswith(PROMPT), readout.inner_text()
    assert readout.get_attribute("data-row") == "" and readout.get_attribute("data-pinned") == "false"
    assert root.locator("text.attn-active").count() == 0


def tap_through(page, root, sentence: dict, name: str) -> None:
    """Tap a cell, another, the second again, then a cell and elsewhere, then a cell and Escape."""
    view = first_view(root)
    rows, cols = axes(sentence, view[0])
    assert len(rows) > 3 and len(cols) > 3
    cell = lambda r, c: root.locator(f"rect.attn-cell[data-row='{r}'][data-col='{c}']")  # noqa: E731
    first, second = (2, 3), (len(rows) - 2, 1)
    tap(page, cell(*first))  # not the first cell, which a focus without a tap would show
    check_readout(root, sentence, view, *first)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"explorer_touch_{name}.png"))
    tap(page, cell(*second))
    check_readout(root, sentence, view, *second)
    tap(page, cell(*second))  # the same cell again: cleared
    check_cleared(root)
    tap(page, cell(*first))
    check_readout(root, sentence, view, *first)
    # a tap elsewhere on the page: the explorer's own caption or readout is outside the map
    tap(page, root.locator(".attn-readout"))
    check_cleared(root)
    tap(page, cell(*first))
    check_readout(root, sentence, view, *first)
    assert page.evaluate("() => document.activeElement.tagName") == "svg"  # the tap focused the map
    page.keyboard.press("Escape")
    check_cleared(root)
    # a tap on a query token pins its row
    tap(page, root.locator(f"text.attn-row-label[data-row='{first[0]}']"))
    readout = root.locator(".attn-readout")
    row_name = "query" if view[0] == "encoder" else "query predicting"
    assert readout.inner_text().startswith(f"{row_name} “{rows[first[0]]}”: its weights sum to 1.00 ")
    assert (readout.get_attribute("data-row"), readout.get_attribute("data-pinned")) == (str(first[0]), "true")


@pytest.mark.parametrize("path", PAGES)
def test_a_tap_shows_and_pins_the_tapped_cell_on_a_phone(reader, server, path):
    log_start = len(server.log)
    r = reader(path, **PHONE)
    page = r.page
    assert page.evaluate("() => matchMedia('(pointer: coarse)').matches && navigator.maxTouchPoints > 0")
    page.wait_for_selector(f"{EXPLORER} rect.attn-cell")
    data = embedded_data(page)
    root = page.locator(EXPLORER)
    name = path.split("/")[-1].removesuffix(".html")
    tap_through(page, root, data["sentences"][0], name)
    if path.endswith("translate_live.html"):  # the live explorer too, on the model's own translation
        wait_until_ready(page)
        live = page.locator("#live-explorer")
        drawn = live.evaluate(
            """root => ({ src: [...root.querySelectorAll('text.attn-col-label')].map(t => t.dataset.token),
                         tgt: [...root.querySelectorAll('text.attn-row-label')].map(t => t.dataset.token),
                         cells: [...root.querySelectorAll('rect.attn-cell')].map(r => +r.dataset.w) })"""
        )
        n_cols = len(drawn["src"])
        grid = [drawn["cells"][q * n_cols : (q + 1) * n_cols] for q in range(len(drawn["tgt"]))]
        kind, layer, head = first_view(live)
        assert (kind, head) == ("cross", "mean")
        # the weights drawn (test_live_translation checks them against the model) as the one head of its layer
        maps = [[grid]] * (layer + 1)
        sentence = {"src_tokens": drawn["src"], "tgt_tokens": drawn["tgt"], "maps": {"cross": maps}}
        tap_through(page, live, sentence, "live")
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways on a phone: {width}"
    assert problems(r, server, log_start) == []


@pytest.mark.parametrize("path", ["chapters/self_attention.html", "chapters/translate_live.html"])
def test_keyboard_reaches_the_map_moves_and_shows_its_focus_ring(reader, server, path):
    from PIL import Image

    log_start = len(server.log)
    r = reader(path, viewport={"width": 1280, "height": 900})
    page = r.page
    page.wait_for_selector(f"{EXPLORER} rect.attn-cell")
    data = embedded_data(page)
    root = page.locator(EXPLORER)
    sentence = data["sentences"][0]
    view = first_view(root)
    # Tab from the explorer's last control reaches the map
    root.locator("select:visible").last.focus()
    page.keyboard.press("Tab")
    assert page.evaluate(f"() => document.activeElement === document.querySelector('{EXPLORER} svg')")
    check_readout(root, sentence, view, 0, 0)
    for key in ("ArrowRight", "ArrowRight", "ArrowDown", "ArrowLeft"):
        page.keyboard.press(key)
    check_readout(root, sentence, view, 1, 1)
    page.keyboard.press("End")
    _, cols = axes(sentence, view[0])
    check_readout(root, sentence, view, 1, len(cols) - 1)
    page.keyboard.press("Home")
    page.keyboard.press("ArrowDown")
    check_readout(root, sentence, view, 2, 0)
    # the focus ring: orange on all four sides of the map's visible box, not clipped by its scrolling
    figure = root.locator(".attn-figure")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = path.split("/")[-1].removesuffix(".html")
    shot = figure.screenshot(path=str(SCREENSHOTS / f"explorer_keyboard_{name}.png"))
    image = Image.open(io.BytesIO(shot)).convert("RGB")
    w, h = image.size

    def orange(x, y):
        red, green, blue = image.getpixel((x, y))
        return red > 200 and 120 < green < 190 and blue < 80  # #f59e0b

    sides = {
        "left": any(orange(x, h // 2) for x in range(0, 4)),
        "right": any(orange(x, h // 2) for x in range(w - 4, w)),
        "top": any(orange(w // 2, y) for y in range(0, 4)),
        "bottom": any(orange(w // 2, y) for y in range(h - 4, h)),
    }
    assert all(sides.values()), sides
    page.keyboard.press("Escape")
    check_cleared(root)
    # the mouse previews without pinning, and leaving the map shows the pinned cell again
    page.keyboard.press("ArrowDown")  # pins (3, 0)
    check_readout(root, sentence, view, 3, 0)
    root.locator("rect.attn-cell[data-row='1'][data-col='2']").hover()
    assert root.locator(".attn-readout").get_attribute("data-pinned") == "false"
    assert root.locator(".attn-readout").get_attribute("data-row") == "1"
    page.mouse.move(5, 5)
    check_readout(root, sentence, view, 3, 0)
    # a click pins, a second click on the same cell unpins
    root.locator("rect.attn-cell[data-row='1'][data-col='2']").click()
    check_readout(root, sentence, view, 1, 2)
    root.locator("rect.attn-cell[data-row='1'][data-col='2']").click()
    assert root.locator(".attn-readout").get_attribute("data-pinned") == "false"
    page.mouse.move(5, 5)
    check_cleared(root)
    assert problems(r, server, log_start) == []
