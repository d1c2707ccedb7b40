"""The attention explorer and the live translation page, in headless Chromium with the network cut off.

- The explorer embedded in ``chapters/translate_live.html`` (the ``{attention-explorer}`` directive) draws every
  map of its data (each sentence, kind, layer, head and the mean) with the right tokens and weights; every row
  sums to 1 within rounding; pointing at a cell or moving to it with the keyboard shows its tokens and weight; a
  row's readout gives its sum as the rounding it is (1.00). Tokens are labelled as words (no SentencePiece ``▁``).
  (Taps on a touch phone: ``test_explorer_touch.py``.)
- The live page's text handling (``tools/explorer/text.js`` with ``@huggingface/tokenizers``) gives the ids
  ``lib.translate`` gives, on the whole test set and on awkward strings.
- 20 sentences of the Multi30k test set typed into the live page give exactly what
  ``python -m lib.translate --run models/de-en`` prints; the cross-attention shown for each has one row per
  produced token, rows that sum to 1 and no ``▁`` in its labels. It prints the page weight and the latencies, and
  writes them with the screenshots into ``_build/screenshots/``.
- A blank input gives a prompt, not a translation; a long input (over 150 sub-words) gives column labels that do
  not overlap, in a map that scrolls inside its box (the page does not), and the keyboard scrolls to its cell.
- Opened from ``file://``, the page says why it cannot translate and what to run instead, and the embedded
  explorer still works.

Needs a site built by ``make book`` (which exports the model into ``_static/live/``) and the Multi30k test set.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import urllib.parse

import pytest

from lib.data import load_multi30k
from lib.token_labels import WORD_START, token_label

from .conftest import ROOT, SCREENSHOTS, SITE

PAGE = "chapters/translate_live.html"
N_SENTENCES = 20
FAVICON_404 = "Failed to load resource: the server responded with a status of 404 (File not found)"
EXPLORER = "#attention-explorer-0"


def problems(v, server, log_start: int) -> list[str]:
    """The visit's console errors and failed requests, less the browser's own request for /favicon.ico.

    The site has no favicon, so Chromium's automatic request for one gets a 404 that it logs as a console error;
    a page that stays open (as this one, while it translates) sees it. It is forgiven only where the server's
    log shows that request, once per such 404.
    """
    served = server.log[log_start:]
    console = list(v.console_errors)
    for path, status in served:
        if status == 404 and urllib.parse.urlsplit(path).path == "/favicon.ico" and FAVICON_404 in console:
            console.remove(FAVICON_404)
    errors = [f"HTTP {s}: {p}" for p, s in served if s >= 400 and urllib.parse.urlsplit(p).path != "/favicon.ico"]
    return [f"console: {m}" for m in console] + [f"request: {r}" for r in v.failed_requests] + errors


def wait_until_ready(page) -> None:
    page.wait_for_function(
        "() => ['done', 'error'].includes(document.getElementById('live-status').dataset.state)", timeout=120_000
    )
    state = page.get_attribute("#live-status", "data-state")
    assert state == "done", page.inner_text("#live-status")


def embedded_data(page) -> dict:
    return json.loads(page.locator(f"{EXPLORER}-data").text_content())


VIEW_JS = """root => ({
  rows: [...root.querySelectorAll('text.attn-row-label')].map(t => t.textContent),
  cols: [...root.querySelectorAll('text.attn-col-label')].map(t => t.textContent),
  cells: [...root.querySelectorAll('rect.attn-cell')].map(r => [+r.dataset.row, +r.dataset.col, +r.dataset.w]),
})"""


def drawn_map(view) -> list[list[float]]:
    rows, cols = len(view["rows"]), len(view["cols"])
    grid = [[None] * cols for _ in range(rows)]
    for r, c, w in view["cells"]:
        grid[r][c] = w
    assert all(w is not None for row in grid for w in row), "a cell of the map is missing"
    assert len(view["cells"]) == rows * cols
    return grid


# The explorer labels tokens as lib's figures do (lib/explorer.js tokenLabel = lib.token_labels.token_label, held to
# each other by tests/unit/test_token_labels.py): "▁Hund" -> "Hund", "ing" -> "-ing"; no SentencePiece mark shows.
shown = token_label


def tokens(sentence: dict, kind: str) -> tuple[list[str], list[str]]:
    """The row and column tokens of a kind of map, as the data holds them."""
    if kind == "encoder":
        return sentence["src_tokens"], sentence["src_tokens"]
    if kind == "decoder":
        return sentence["tgt_tokens"], sentence["tgt_input_tokens"]
    return sentence["tgt_tokens"], sentence["src_tokens"]


def axes(sentence: dict, kind: str) -> tuple[list[str], list[str]]:
    """The row and column labels of a kind of map, as the explorer shows them (words, no ``▁``)."""
    metaspace = any(t.startswith(WORD_START) for t in sentence["src_tokens"] + sentence["tgt_tokens"])
    rows, cols = tokens(sentence, kind)
    return [shown(t, metaspace) for t in rows], [shown(t, metaspace) for t in cols]


def test_embedded_data_rows_sum_to_one(visit, server):
    v = visit(PAGE, wait_maths=False)
    data = embedded_data(v.page)
    assert data["format"] == 1 and len(data["sentences"]) == 3
    tolerance = 0.5 * 10 ** -data["decimals"]
    n = 0
    for s in data["sentences"]:
        assert set(s["maps"]) == {"encoder", "decoder", "cross"}
        for kind, layers in s["maps"].items():
            rows, cols = axes(s, kind)
            for layer in layers:
                for head in layer:
                    assert len(head) == len(rows) and all(len(row) == len(cols) for row in head)
                    for row in head:
                        assert abs(sum(row) - 1) <= len(row) * tolerance + 1e-9, (kind, row)
                        n += 1
    assert n > 500


def test_explorer_draws_every_map_of_the_embedded_example(visit, server):
    """Every sentence × kind × layer × (head or mean): the drawn cells are the data's, labelled with its tokens."""
    log_start = len(server.log)
    v = visit(PAGE, wait_maths=False)
    page = v.page
    data = embedded_data(page)
    root = page.locator(EXPLORER)
    decimals = data["decimals"]
    views = 0
    for i, s in enumerate(data["sentences"]):
        page.select_option(f"{EXPLORER} select[data-control=sentence]", str(i))
        for kind, layers in s["maps"].items():
            page.select_option(f"{EXPLORER} select[data-control=kind]", kind)
            rows, cols = axes(s, kind)
            for layer, heads in enumerate(layers):
                page.select_option(f"{EXPLORER} select[data-control=layer]", str(layer))
                for head in [*range(len(heads)), "mean"]:
                    page.select_option(f"{EXPLORER} select[data-control=head]", str(head))
                    view = root.evaluate(VIEW_JS)
                    assert (view["rows"], view["cols"]) == (rows, cols), (i, kind, layer, head)
                    grid = drawn_map(view)
                    if head == "mean":  # drawn rounded to the data's decimals
                        want = [
                            [sum(h[q][k] for h in heads) / len(heads) for k in range(len(cols))]
                            for q in range(len(rows))
                        ]
                        tolerance = 0.5 * 10**-decimals + 1e-9
                    else:
                        want, tolerance = heads[head], 1e-9
                    worst = max(abs(g - w) for gr, wr in zip(grid, want) for g, w in zip(gr, wr))
                    assert worst <= tolerance, (i, kind, layer, head, worst)
                    for row in grid:  # what is drawn sums to 1 too (the mean's rows within twice the rounding)
                        assert abs(sum(row) - 1) <= len(row) * 10**-decimals + 1e-9
                    views += 1
    assert views == sum(len(layers) * (len(layers[0]) + 1) for s in data["sentences"] for layers in s["maps"].values())
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SCREENSHOTS / "explorer_embedded_last_view.png"))
    assert problems(v, server, log_start) == []


def test_hover_and_keyboard_show_the_token_pair_and_weight(visit, server):
    log_start = len(server.log)
    v = visit(PAGE)  # MathJax typeset first: it moves the map under the pointer
    page = v.page
    s = embedded_data(page)["sentences"][0]
    page.select_option(f"{EXPLORER} select[data-control=kind]", "cross")
    page.select_option(f"{EXPLORER} select[data-control=layer]", "1")
    page.select_option(f"{EXPLORER} select[data-control=head]", "2")
    weights = s["maps"]["cross"][1][2]
    tgt, src = axes(s, "cross")  # the labels: words, without SentencePiece's ▁
    assert not any(WORD_START in t for t in tgt + src) and any(t.startswith("-") for t in tgt + src)
    readout = page.locator(f"{EXPLORER} .attn-readout")
    for r, c in [(0, 0), (1, 2), (len(tgt) - 1, len(src) - 1), (2, 1)]:
        page.locator(f"{EXPLORER} rect.attn-cell[data-row='{r}'][data-col='{c}']").hover()
        assert readout.inner_text() == f"query predicting “{tgt[r]}” → key “{src[c]}”: {weights[r][c]:.3f}"
        active = page.locator(f"{EXPLORER} text.attn-active").all_text_contents()
        assert active == [tgt[r], src[c]]  # the row's and the column's token are highlighted
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "explorer_hover.png"))  # the cell (2, 1) pointed at
    # a row's token: the row's sum, shown as the rounding it is (the weights are rounded), and its largest weight
    page.locator(f"{EXPLORER} text.attn-row-label[data-row='1']").hover()
    best = max(range(len(src)), key=lambda k: (weights[1][k], -k))
    assert f"{sum(weights[1]):.2f}" == "1.00"
    assert readout.inner_text() == (
        f"query predicting “{tgt[1]}”: its weights sum to 1.00 (each shown rounded to 3 decimals); the largest, "
        f"{weights[1][best]:.3f}, is on key “{src[best]}”"
    )
    # the keyboard: focusing the map shows the cell last pointed at, (2, 1); then right, right, down
    page.mouse.move(0, 0)
    page.locator(f"{EXPLORER} svg").focus()
    assert readout.inner_text() == f"query predicting “{tgt[2]}” → key “{src[1]}”: {weights[2][1]:.3f}"
    for key in ("ArrowRight", "ArrowRight", "ArrowDown"):
        page.keyboard.press(key)
    assert readout.inner_text() == f"query predicting “{tgt[3]}” → key “{src[3]}”: {weights[3][3]:.3f}"
    # a new view starts the keyboard at the first cell
    page.select_option(f"{EXPLORER} select[data-control=head]", "mean")
    page.locator(f"{EXPLORER} svg").focus()
    page.keyboard.press("ArrowRight")
    mean = sum(h[0][1] for h in s["maps"]["cross"][1]) / len(s["maps"]["cross"][1])
    assert readout.get_attribute("data-row") == "0" and readout.get_attribute("data-col") == "1"
    assert abs(float(readout.get_attribute("data-weight")) - mean) <= 0.5e-3 + 1e-9
    # every control has a label and is reachable with the keyboard
    labels = page.locator(f"{EXPLORER} select").evaluate_all(
        "els => els.map(e => e.labels[0].firstChild.textContent.trim())"
    )
    assert labels == ["Sentence", "Attention", "Layer", "Head"]
    assert problems(v, server, log_start) == []


def test_browser_tokenizer_gives_lib_translates_ids(visit, server):
    """text.js + @huggingface/tokenizers on tokenizer.json = lib.translate's clean_text and _text_ids (text_pieces)."""
    from tokenizers import Tokenizer

    from lib.translate import clean_text, plain_text_tokenizer, text_pieces

    plain = plain_text_tokenizer(Tokenizer.from_file(str(ROOT / "models" / "de-en" / "tokenizer.json")))
    test = [de for de, _ in load_multi30k("test_2016_flickr")]
    texts = test + [
        "\ufeff  Ein Hund </s> läuft <unk> über <pad> die <s> Wiese.\r",
        "e\u0301tude Cafe\u0301 ﬁ ① ＡＢＣ 日本語 🙂 ẞ",
        "\x1c\u2028 a\u00a0b\u3000",
        "\u200b \u200d\u2060",
        "\u00ad",
        "„Ja“, sagte er. (Nein!) [vielleicht?] 1.000,50 €",
        " ".join(test[:30]),  # longer than the model's limit: split at sentence ends
        "Wort" * 400,  # one word longer than the limit: cut at the limit
    ]
    want = [text_pieces(plain, clean_text(t), 255) for t in texts]
    log_start = len(server.log)
    v = visit(PAGE, wait_maths=False)
    got = v.page.evaluate(
        """async texts => {
          const base = document.documentElement.dataset.content_root + '_static/';
          const text = await import(base + 'explorer/text.js');
          const { Tokenizer } = await import(base + 'tokenizers/dist/tokenizers.min.mjs');
          const json = await (await fetch(base + 'live/tokenizer.json')).json();
          const plain = new Tokenizer(text.plainTokenizerJSON(json), {});
          const special = {'<pad>': 0, '<s>': 1, '</s>': 2, '<unk>': 3};
          return texts.map(t => text.pieces(plain, text.clean(t), 255, special));
        }""",
        texts,
    )
    mismatches = [(t[:60], g, w[0]) for t, g, w in zip(texts, got, want) if g != w[0]]
    assert not mismatches, mismatches[:3]
    assert len(want[-2][0]) > 1 and len(want[-1][0]) > 1  # the long texts were split
    assert problems(v, server, log_start) == []


@pytest.fixture(scope="module")
def expected_translations() -> tuple[list[str], list[str]]:
    """The first 20 test sentences and what ``python -m lib.translate --run models/de-en`` prints for them."""
    sentences = [de for de, _ in load_multi30k("test_2016_flickr")[:N_SENTENCES]]
    done = subprocess.run(
        [sys.executable, "-m", "lib.translate", "--run", "models/de-en"],
        input="\n".join(sentences) + "\n",
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        check=True,
    )
    lines = done.stdout.split("\n")[:-1]
    assert len(lines) == N_SENTENCES
    return sentences, lines


def test_live_page_translates_test_sentences_as_lib_translate(visit, server, expected_translations):
    sentences, expected = expected_translations
    log_start = len(server.log)
    v = visit(PAGE, wait_maths=False)
    page = v.page
    wait_until_ready(page)
    first_seconds = float(page.get_attribute("#live-status", "data-first-seconds"))
    first_ms = float(page.get_attribute("#live-output", "data-ms"))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "translate_live_loaded.png"), full_page=True)
    got, times = [], []
    for sentence in sentences:
        count = int(page.get_attribute("#live-output", "data-count"))
        page.fill("#live-input", sentence)
        page.press("#live-input", "Enter")
        page.wait_for_function(f"() => +document.getElementById('live-output').dataset.count > {count}")
        got.append(page.inner_text("#live-output"))
        times.append(float(page.get_attribute("#live-output", "data-ms")))
        # the explorer shows this sentence's cross-attention: a row per produced token, each summing to 1
        view = page.locator("#live-explorer").evaluate(VIEW_JS)
        grid = drawn_map(view)
        assert view["cols"][-1] == "</s>" and len(view["rows"]) >= 1
        assert all(abs(sum(row) - 1) <= len(row) * 0.5e-3 + 1e-9 for row in grid)
        assert not [t for t in view["rows"] + view["cols"] if WORD_START in t], (sentence, view["rows"], view["cols"])
    page.locator("#live-explorer rect.attn-cell[data-row='1'][data-col='1']").hover()
    page.screenshot(path=str(SCREENSHOTS / "translate_live_after_20.png"), full_page=True)
    agree = sum(g == e for g, e in zip(got, expected))
    weights = page.evaluate(
        """() => performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))
             .map(e => [e.name, e.encodedBodySize])"""
    )
    total = sum(size for _, size in weights)
    metrics = {
        "sentences": N_SENTENCES,
        "agree": agree,
        "first_translation_seconds_from_navigation": first_seconds,
        "first_translation_ms": first_ms,
        "per_sentence_ms_mean": sum(times) / len(times),
        "per_sentence_ms_max": max(times),
        "page_weight_bytes": total,
        "largest": sorted(weights, key=lambda w: -w[1])[:6],
    }
    (SCREENSHOTS / "translate_live_metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(json.dumps(metrics, indent=1))
    assert got == expected, [(s, g, e) for s, g, e in zip(sentences, got, expected) if g != e]
    assert problems(v, server, log_start) == []


def test_blank_and_special_text(visit, server):
    """A blank input gives a prompt (no model run, no map, no "Translated in 0 ms"); </s> typed in the text is text."""
    log_start = len(server.log)
    v = visit(PAGE, wait_maths=False)
    page = v.page
    wait_until_ready(page)
    count = int(page.get_attribute("#live-output", "data-count"))
    for blank in ("", "   "):
        page.fill("#live-input", blank)
        page.press("#live-input", "Enter")
        page.wait_for_function("() => document.getElementById('live-status').dataset.state === 'empty'")
        status = page.inner_text("#live-status")
        assert status == "Type a German sentence in the box above, then press Enter or Translate.", status
        assert page.inner_text("#live-output") == ""
        assert page.locator("#live-explorer rect.attn-cell").count() == 0
        assert int(page.get_attribute("#live-output", "data-count")) == count  # nothing was translated
        page.fill("#live-input", "Ein Hund rennt.")  # leave the prompt before the next blank
        page.press("#live-input", "Enter")
        count += 1
        page.wait_for_function(f"() => +document.getElementById('live-output').dataset.count >= {count}")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.fill("#live-input", "")
    page.click("#live-go")
    page.wait_for_function("() => document.getElementById('live-status').dataset.state === 'empty'")
    page.locator("#live-translate").screenshot(path=str(SCREENSHOTS / "translate_live_empty.png"))
    page.fill("#live-input", "Ein Hund </s> rennt.")
    page.press("#live-input", "Enter")
    page.wait_for_function(f"() => +document.getElementById('live-output').dataset.count > {count}")
    cols = page.locator("#live-explorer text.attn-col-label").all_text_contents()
    assert cols.count("</s>") == 1 and cols[-1] == "</s>"
    assert problems(v, server, log_start) == []


def test_long_input_gives_readable_labels_in_a_scrolling_map(visit, server):
    """A long sentence: no two column labels overlap, the map scrolls in its box, the page does not scroll."""
    test = [de for de, _ in load_multi30k("test_2016_flickr")]
    # twelve captions joined by commas into one sentence (a paragraph is split, and the map shows one sentence)
    paragraph = ", ".join(line.rstrip(" .") for line in test[:12]) + "."
    log_start = len(server.log)
    v = visit(PAGE, wait_maths=False)
    page = v.page
    wait_until_ready(page)
    count = int(page.get_attribute("#live-output", "data-count"))
    page.fill("#live-input", paragraph)
    page.press("#live-input", "Enter")
    page.wait_for_function(f"() => +document.getElementById('live-output').dataset.count > {count}", timeout=60_000)
    assert page.get_attribute("#live-status", "data-state") == "done"
    labels = page.locator("#live-explorer text.attn-col-label")
    n = labels.count()
    assert n > 150, f"the paragraph gave only {n} sub-words"  # one piece: more than 150 columns, under 255
    assert not [t for t in labels.all_text_contents() if WORD_START in t]
    boxes = labels.evaluate_all(
        "ts => ts.map(t => { const b = t.getBoundingClientRect(); return [b.left, b.right, b.top, b.bottom]; })"
    )
    overlaps = [
        i for i, (a, b) in enumerate(itertools.pairwise(boxes)) if a[1] > b[0] + 0.5 and a[3] > b[2] and b[3] > a[2]
    ]
    assert not overlaps, f"{len(overlaps)} column labels overlap their neighbour, e.g. at column {overlaps[0]}"
    sizes = page.evaluate(
        """() => { const f = document.querySelector('#live-explorer .attn-figure');
          return { box: f.clientWidth, map: f.scrollWidth, page: document.documentElement.scrollWidth,
                   window: window.innerWidth }; }"""
    )
    assert sizes["map"] > sizes["box"] and sizes["page"] <= sizes["window"], sizes
    # the keyboard's cell stays in view: End scrolls the box to the last column
    page.locator("#live-explorer svg").focus()
    page.keyboard.press("End")
    readout = page.locator("#live-explorer .attn-readout")
    assert readout.get_attribute("data-col") == str(n - 1) and readout.get_attribute("data-pinned") == "true"
    seen = page.evaluate(
        """() => { const f = document.querySelector('#live-explorer .attn-figure').getBoundingClientRect();
          const c = document.querySelector('#live-explorer .attn-cursor').getBoundingClientRect();
          return c.left >= f.left - 1 && c.right <= f.right + 1; }"""
    )
    assert seen, "End moved the cursor out of the map's visible part"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#live-translate").screenshot(path=str(SCREENSHOTS / "translate_live_long.png"))
    assert problems(v, server, log_start) == []


def test_from_file_url_the_page_says_what_to_run(browser):
    """From file:// the module and WebAssembly fetches are blocked: the page says so, the explorer still works."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        errors, outside = [], []

        def route(r):
            if urllib.parse.urlsplit(r.request.url).scheme in ("file", "data", "blob", "about"):
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((SITE / PAGE).as_uri(), wait_until="load")
        status = page.locator("#live-status")
        assert status.get_attribute("data-state") == "unavailable"
        text = status.inner_text()
        assert "file://" in text and "python -m http.server -d _build/html" in text
        page.wait_for_selector(f"{EXPLORER} rect.attn-cell")  # the inline explorer needs no fetch
        page.screenshot(path=str(SCREENSHOTS / "translate_live_file_url.png"))
        assert errors == [] and outside == []
    finally:
        context.close()


def test_the_loading_line_counts_everything_the_page_fetches():
    """The status line a reader sees while the page loads names the sizes of the files it fetches (to 0.05 MB) and
    their total (to 1 MB): on a phone, 20 MB is what a reader needs to know before waiting."""
    import re

    source = (ROOT / "tools" / "explorer" / "live.js").read_text(encoding="utf-8")
    line = re.search(r'"Loading the translator, about (\d+) MB[^;]*?…"', source, re.S)
    assert line, "live.js: no loading line"
    text = re.sub(r'"\s*\+\s*"', "", line.group(0))
    stated = {kind: float(mb) for mb, kind in re.findall(r"([\d.]+) MB of (WebAssembly|weights|tokenizer)", text)}
    static = SITE / "_static"
    files = {
        "WebAssembly": static / "onnxruntime-web" / "dist" / "ort-wasm-simd-threaded.wasm",
        "weights": static / "live" / "weights.bin",
        "tokenizer": static / "live" / "tokenizer.json",
    }
    actual = {kind: path.stat().st_size / 1e6 for kind, path in files.items()}
    assert stated.keys() == actual.keys(), stated
    assert all(abs(stated[k] - actual[k]) <= 0.05 for k in actual), (stated, actual)
    rest = sum(p.stat().st_size for p in (static / "live").iterdir() if p not in files.values())
    rest += (static / "onnxruntime-web" / "dist" / "ort.wasm.bundle.min.mjs").stat().st_size
    total = (sum(actual.values()) * 1e6 + rest) / 1e6
    assert abs(int(line.group(1)) - total) <= 1, (line.group(1), total)
