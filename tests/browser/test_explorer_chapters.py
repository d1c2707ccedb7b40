"""The attention explorer in the chapters, in headless Chromium with the network cut off.

Four chapter pages embed the explorer with the ``{attention-explorer}`` directive (maps computed at build time by
``lib.explorer``): Bahdanau attention (the recurrent model's cross-attention), self-attention and multi-head
attention (the shipped Transformer's encoder self-attention, opening on the head the chapter discusses) and the
capstone (every kind of map). On each page: the embedded data holds the kinds the chapter asks for; the first view
is the one the directive names; every sentence × kind × layer × head drawn is the data's map with the data's tokens
(labelled as words: no SentencePiece ``▁``), and switching a control changes the map; pointing at a cell shows its
token pair and weight, as the data has them, and pointing at a token its row's sum as the rounding it is (1.00);
no console error, no failed request. Taps on a phone and the keyboard: ``test_explorer_touch.py``.

Needs a built site (``make book``, or a build of these pages).
"""

from __future__ import annotations

import json

import pytest

from .test_live_translation import VIEW_JS, WORD_START, axes, drawn_map, embedded_data, problems

EXPLORER = "#attention-explorer-0"

# page -> (the kinds embedded, the first view: kind, layer (None: the last), head)
PAGES = {
    "chapters/bahdanau_attention.html": (["cross"], ("cross", None, "mean")),
    "chapters/self_attention.html": (["encoder"], ("encoder", 0, 2)),
    "chapters/multihead_attention.html": (["encoder"], ("encoder", 1, 2)),
    "chapters/capstone.html": (["encoder", "decoder", "cross"], ("cross", None, "mean")),
}


def control(page, name: str) -> str:
    return f"{EXPLORER} select[data-control={name}]"


def current_view(page) -> tuple[str, int, str]:
    """(kind, layer, head) the controls show; a hidden control (one kind, one layer or head) still holds its value."""
    values = [page.eval_on_selector(control(page, n), "e => e.value") for n in ("kind", "layer", "head")]
    return values[0], int(values[1]), values[2]


MAP_TOP_JS = "e => e.getBoundingClientRect().top + window.scrollY"


def map_top_on_page(page) -> float:
    """Where the map's top edge is on the page: the readout above it must not move it as its text changes."""
    return page.locator(f"{EXPLORER} svg").evaluate(MAP_TOP_JS)


def want_map(sentence: dict, kind: str, layer: int, head: str) -> tuple[list[list[float]], float]:
    heads = sentence["maps"][kind][layer]
    if head == "mean":
        rows, cols = len(heads[0]), len(heads[0][0])
        return [[sum(h[q][k] for h in heads) / len(heads) for k in range(cols)] for q in range(rows)], 0.5e-3 + 1e-9
    return heads[int(head)], 1e-9


def assert_drawn(page, sentence: dict, kind: str, layer: int, head: str, where) -> list[list[float]]:
    view = page.locator(EXPLORER).evaluate(VIEW_JS)
    assert (view["rows"], view["cols"]) == axes(sentence, kind), where
    assert not [t for t in view["rows"] + view["cols"] if WORD_START in t], where
    grid = drawn_map(view)
    want, tolerance = want_map(sentence, kind, layer, head)
    worst = max(abs(g - w) for gr, wr in zip(grid, want) for g, w in zip(gr, wr))
    assert worst <= tolerance, (where, worst)
    return grid


@pytest.mark.parametrize("path", sorted(PAGES))
def test_chapter_explorer_draws_its_data_and_controls_change_the_map(visit, server, path):
    kinds, (first_kind, first_layer, first_head) = PAGES[path]
    log_start = len(server.log)
    v = visit(path, wait_maths=False)
    page = v.page
    page.wait_for_selector(f"{EXPLORER} rect.attn-cell")
    data = embedded_data(page)
    assert data["format"] == 1 and 2 <= len(data["sentences"]) <= 4
    for s in data["sentences"]:
        assert list(s["maps"]) == kinds
    # the first view is the one the directive names
    layers = len(data["sentences"][0]["maps"][first_kind])
    expected_first = (first_kind, layers - 1 if first_layer is None else first_layer, str(first_head))
    assert current_view(page) == expected_first
    assert_drawn(page, data["sentences"][0], *expected_first, where="first view")
    # layers and heads are counted from 0, as the chapters count them
    heads = len(data["sentences"][0]["maps"][first_kind][0])
    if layers > 1:
        labels = page.eval_on_selector_all(f"{control(page, 'layer')} option", "os => os.map(o => o.textContent)")
        assert labels == [*map(str, range(layers - 1)), f"{layers - 1} (last)"]
    if heads > 1:
        labels = page.eval_on_selector_all(f"{control(page, 'head')} option", "os => os.map(o => o.textContent)")
        assert labels == [f"mean of {heads} heads", *(f"head {h}" for h in range(heads))]
    # every view: the data's map; each switch of a control changes what is drawn
    views, previous = 0, None
    for i, s in enumerate(data["sentences"]):
        if len(data["sentences"]) > 1:
            page.select_option(control(page, "sentence"), str(i))
        for kind, maps in s["maps"].items():
            if len(kinds) > 1:
                page.select_option(control(page, "kind"), kind)
            for layer, layer_heads in enumerate(maps):
                if len(maps) > 1:
                    page.select_option(control(page, "layer"), str(layer))
                for head in [*map(str, range(len(layer_heads))), "mean"] if len(layer_heads) > 1 else ["mean"]:
                    if len(layer_heads) > 1:
                        page.select_option(control(page, "head"), head)
                    assert current_view(page) == (kind, layer, head)
                    grid = assert_drawn(page, s, kind, layer, head, where=(path, i, kind, layer, head))
                    assert grid != previous, f"{path}: switching to {(i, kind, layer, head)} left the map as it was"
                    previous = grid
                    views += 1
    every = [maps for s in data["sentences"] for maps in s["maps"].values()]  # per sentence and kind: [layer][head]
    assert views == sum(len(maps) * (len(maps[0]) + 1 if len(maps[0]) > 1 else 1) for maps in every)
    assert problems(v, server, log_start) == []


@pytest.mark.parametrize("path", sorted(PAGES))
def test_chapter_explorer_hover_shows_the_token_pair_and_weight(visit, server, path):
    log_start = len(server.log)
    v = visit(path)  # MathJax typeset first: it moves the map under the pointer
    page = v.page
    page.wait_for_selector(f"{EXPLORER} rect.attn-cell")
    data = embedded_data(page)
    s = data["sentences"][-1]
    if len(data["sentences"]) > 1:
        page.select_option(control(page, "sentence"), str(len(data["sentences"]) - 1))
    kind = next(iter(s["maps"]))
    if len(s["maps"]) > 1:
        page.select_option(control(page, "kind"), kind)
    layer = len(s["maps"][kind]) - 1
    head = "0" if len(s["maps"][kind][layer]) > 1 else "mean"
    if head != "mean":
        page.select_option(control(page, "head"), head)
    weights, _ = want_map(s, kind, layer, head)
    rows, cols = axes(s, kind)
    row_name = "query" if kind == "encoder" else "query predicting"
    readout = page.locator(f"{EXPLORER} .attn-readout")
    map_top = map_top_on_page(page)
    for r, c in [(0, 0), (1, len(cols) - 1), (len(rows) - 1, 1), (len(rows) // 2, len(cols) // 2)]:
        page.locator(f"{EXPLORER} rect.attn-cell[data-row='{r}'][data-col='{c}']").hover()
        assert map_top_on_page(page) == map_top, ("the map moved under the pointer", r, c)
        assert readout.inner_text() == f"{row_name} “{rows[r]}” → key “{cols[c]}”: {weights[r][c]:.3f}", (r, c)
        assert page.locator(f"{EXPLORER} text.attn-active").all_text_contents() == [rows[r], cols[c]]
        assert (readout.get_attribute("data-row"), readout.get_attribute("data-col")) == (str(r), str(c))
    # a query token: its row's sum, to one decimal fewer than the rounded weights it adds up
    r = len(rows) // 2
    page.locator(f"{EXPLORER} text.attn-row-label[data-row='{r}']").hover()
    total = sum(weights[r])  # what the explorer adds: the weights as drawn
    assert abs(total - 1) < 0.005, total
    assert readout.inner_text().startswith(
        f"{row_name} “{rows[r]}”: its weights sum to {total:.2f} (each shown rounded to 3 decimals); the largest, "
    )
    assert problems(v, server, log_start) == []


@pytest.mark.parametrize("width", [1280, 768, 390])
def test_pointing_at_a_cell_or_a_token_never_moves_the_map(visit, width):
    """The readout above the map changes from one line to three as the pointer moves from a cell to a token: its
    box keeps the height of the longest text it can show, so the map stays where the pointer found it (a map that
    moved by more than half a cell put the pointer on the row above)."""
    v = visit("chapters/self_attention.html", viewport={"width": width, "height": 900})
    page = v.page
    page.wait_for_selector(f"{EXPLORER} rect.attn-cell")
    top = map_top_on_page(page)
    targets = [
        "rect.attn-cell[data-row='1'][data-col='2']",
        "text.attn-row-label[data-row='2']",
        "text.attn-col-label[data-col='3']",
        "rect.attn-cell[data-row='0'][data-col='0']",
    ]
    readouts = []
    for target in targets:
        page.locator(f"{EXPLORER} {target}").hover()
        assert map_top_on_page(page) == top, (width, target)
        readouts.append(page.locator(f"{EXPLORER} .attn-readout").inner_text())
    page.mouse.move(0, 0)  # off the map: the readout's first text again
    assert map_top_on_page(page) == top, (width, "cleared")
    assert len(set(readouts)) == len(targets)  # each target gave its own text


def test_chapter_explorers_page_weight(visit, server):
    """The embedded data of each page, in bytes (printed: the numbers of the issue's closing note)."""
    sizes = {}
    for path in sorted(PAGES):
        v = visit(path, wait_maths=False)
        text = v.page.locator(f"{EXPLORER}-data").text_content()
        sizes[path] = len(text.encode("utf-8"))
        assert json.loads(text)["sentences"]
    print(json.dumps(sizes, indent=1))
    assert all(size < 150_000 for size in sizes.values()), sizes
