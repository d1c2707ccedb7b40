"""How many bytes a reader's browser fetches to open each page of the built site, cold, by type.

Every page of ``_build/html`` is opened in headless Chromium in a fresh browser context (an empty cache), served
from a loopback server with the network cut off, and left until its requests have stopped (MathJax fetches its
fonts while it typesets). Each response's body is counted under its type: ``html``, ``script``, ``css``,
``font``, ``figure`` (images: the page's own figures and pictures), ``wasm`` and ``data`` (what a script fetched:
the live page's model and tokenizer). Two totals: the bytes as served without compression (Python's
``http.server``, ``file://``) and as a server that gzips text would send them (each compressible body gzipped at
level 6: HTML, scripts, CSS, JSON, SVG, WebAssembly, TrueType; woff2 fonts and PNG/JPEG figures are already
compressed). Headers are not counted. "Before figures" is the total less the ``figure`` column.

Usage (after ``make book``; needs ``make browser-deps``)::

    python tools/site_weight.py                  # a Markdown table of every page, then the site's totals
    python tools/site_weight.py --json           # the same as JSON
    python tools/site_weight.py chapters/intro.html chapters/capstone.html   # only these pages
    python tools/site_weight.py --axe           # also axe-core's violations, by rule (make browser-deps first)
    python tools/site_weight.py --site /other/checkout/_build/html               # another build (before/after)

``tests/browser/test_layout.py`` uses :func:`weigh` to hold every chapter page under :data:`LIMIT_BYTES` before
its figures, with and without gzip.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import sys
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
LIMIT_BYTES = 1_500_000  # a chapter page before its figures, cold, with or without gzip (issue 35)
KINDS = ("html", "script", "css", "font", "figure", "wasm", "data")
COMPRESSIBLE = (".html", ".js", ".mjs", ".css", ".json", ".svg", ".wasm", ".ttf", ".onnx", ".txt", ".map")
IDLE_S = 0.75  # the page counts as loaded once no request has started or ended for this long
LIMIT_S = 120  # a guard against a page that never stops fetching, not a timing


def kind_of(url: str, resource_type: str) -> str:
    """The column a response is counted in, from its URL's extension and Chromium's resource type."""
    path = urllib.parse.urlsplit(url).path.lower()
    if path.endswith(".wasm"):
        return "wasm"
    if resource_type == "document":
        return "html"
    if resource_type == "image" or path.endswith((".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg")):
        return "figure"
    if resource_type == "script" or path.endswith((".js", ".mjs")):
        return "script"
    if resource_type == "stylesheet" or path.endswith(".css"):
        return "css"
    if resource_type == "font" or path.endswith((".woff", ".woff2", ".ttf", ".otf")):
        return "font"
    return "data"


def gzipped_size(url: str, body: bytes) -> int:
    """The body's size as a gzip-compressing server sends it: gzip level 6 for compressible types, else as is."""
    if urllib.parse.urlsplit(url).path.lower().endswith(COMPRESSIBLE) or url.endswith("/"):
        return len(gzip.compress(body, compresslevel=6, mtime=0))
    return len(body)


AXE = ROOT / ".cache" / "vendor" / "tests" / "axe-core" / "axe.min.js"  # tools/vendor_js.py --tests
AXE_JS = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
  .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length}))"""


def _evaluate(page, script: str):
    """``page.evaluate`` that waits out a redirect (index.html sends the reader on to chapters/intro.html)."""
    from playwright.sync_api import Error as PlaywrightError

    for _ in range(3):
        try:
            return page.evaluate(script)
        except PlaywrightError as err:
            if "Execution context was destroyed" not in str(err):
                raise
            page.wait_for_load_state("load")
    return page.evaluate(script)


def weigh(browser, base_url: str, path: str, viewport: dict | None = None, axe: bool = False) -> dict:
    """Open ``base_url + path`` cold (a new context) and return its bytes by kind, raw and gzipped.

    Returns:
        ``{"raw": {kind: bytes}, "gzip": {kind: bytes}, "requests": n, "files": [(url, kind, bytes)],
        "raw_before_figures": bytes, "gzip_before_figures": bytes}``; requests leaving ``base_url``'s host are
        aborted (and listed under ``"outside"``). With ``axe``, also ``"axe"``: axe-core's violations once the
        page has loaded, ``[{"id", "impact", "nodes"}]``.
    """
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900}, service_workers="block")
    host = urllib.parse.urlsplit(base_url).netloc
    raw = dict.fromkeys(KINDS, 0)
    zipped = dict.fromkeys(KINDS, 0)
    files, outside, in_flight = [], [], set()
    last = [time.monotonic()]

    def route(r):
        url = urllib.parse.urlsplit(r.request.url)
        if url.scheme in ("data", "blob", "about") or url.netloc == host:
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    def started(request):
        in_flight.add(request)
        last[0] = time.monotonic()

    def ended(request):
        in_flight.discard(request)
        last[0] = time.monotonic()

    def finished(request):
        response = request.response()
        if response is not None and urllib.parse.urlsplit(request.url).scheme in ("http", "https"):
            try:
                body = response.body()
            except Exception:  # a redirect has no body
                body = b""
            kind = kind_of(request.url, request.resource_type)
            raw[kind] += len(body)
            zipped[kind] += gzipped_size(request.url, body)
            files.append((request.url, kind, len(body)))
        ended(request)

    try:
        page = context.new_page()
        page.route("**/*", route)
        page.on("request", started)
        page.on("requestfinished", finished)
        page.on("requestfailed", ended)
        page.goto(base_url + path, wait_until="load", timeout=LIMIT_S * 1000)
        _evaluate(page, "() => window.MathJax && window.MathJax.startup ? MathJax.startup.promise : null")
        deadline = time.monotonic() + LIMIT_S
        while time.monotonic() < deadline and (in_flight or time.monotonic() - last[0] < IDLE_S):
            page.wait_for_timeout(100)
        violations = None
        if axe:
            page.add_script_tag(path=str(AXE))
            violations = _evaluate(page, AXE_JS)
    finally:
        context.close()
    return {
        "raw": raw,
        "gzip": zipped,
        "requests": len(files),
        "files": files,
        "outside": outside,
        "raw_before_figures": sum(raw.values()) - raw["figure"],
        "gzip_before_figures": sum(zipped.values()) - zipped["figure"],
        "axe": violations,
    }


def built_pages(site: Path = SITE) -> list[str]:
    """Every HTML page of the built site, relative to it (the same list as the browser tests')."""
    skip = ("_static/", "_sources/", "_images/", "_build/")
    pages = (p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    return sorted(p for p in pages if not p.startswith(skip))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # (http.server's signature)
        pass


def _table(rows: dict[str, dict]) -> str:
    mb = lambda n: f"{n / 1e6:.2f}"  # noqa: E731
    head = "| page | " + " | ".join(KINDS) + " | before figures | gzip: before figures | requests |"
    lines = [head, "|" + "---|" * (len(KINDS) + 4)]
    for path, w in rows.items():
        cells = " | ".join(mb(w["raw"][k]) for k in KINDS)
        lines.append(
            f"| {path} | {cells} | {mb(w['raw_before_figures'])} | {mb(w['gzip_before_figures'])} | {w['requests']} |"
        )
    total = sum(sum(w["raw"].values()) for w in rows.values())
    total_gz = sum(sum(w["gzip"].values()) for w in rows.values())
    lines.append("")
    lines.append(f"MB, response bodies, cold load at 1,280 px. One cold visit of every page: {mb(total)} MB")
    lines.append(f"({mb(total_gz)} MB gzipped). Limit for a chapter page before its figures: {mb(LIMIT_BYTES)} MB.")
    return "\n".join(lines)


def _axe_table(rows: dict[str, dict]) -> str:
    rules: dict[tuple[str, str], list] = {}
    for path, w in rows.items():
        for v in w["axe"] or []:
            rules.setdefault((v["id"], v["impact"]), []).append((path, v["nodes"]))
    order = {"critical": 0, "serious": 1, "moderate": 2, "minor": 3}
    lines = ["| axe-core rule | impact | pages | nodes |", "|---|---|---|---|"]
    for (rule, impact), hits in sorted(rules.items(), key=lambda kv: (order.get(kv[0][1], 9), kv[0][0])):
        lines.append(f"| {rule} | {impact} | {len(hits)} | {sum(n for _, n in hits)} |")
    by_impact = {i: sum(n for (_, imp), hits in rules.items() if imp == i for _, n in hits) for i in order}
    lines.append("")
    counts = ", ".join(f"{k} {v}" for k, v in by_impact.items())
    lines.append(f"{len(rows)} pages at 1,280 px; nodes by impact: {counts}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", help="pages relative to _build/html (default: every page)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--axe", action="store_true", help="also run axe-core on each page and print its violations")
    parser.add_argument("--site", type=Path, default=SITE, help="the built site (default: _build/html)")
    args = parser.parse_args(argv)
    site = args.site
    if not (site / "index.html").is_file():
        sys.exit(f"tools/site_weight.py: no built site in {site}: run `make book` first")
    if args.axe and not AXE.is_file():
        sys.exit(f"tools/site_weight.py: axe-core is missing ({AXE}): run `python tools/vendor_js.py --tests`")
    pages = args.pages or built_pages(site)
    missing = [p for p in pages if not (site / p).is_file()]
    if missing:
        sys.exit(f"tools/site_weight.py: no such page in {site}: {', '.join(missing)}")
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from tests.browser.conftest import find_chromium

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    rows = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=find_chromium(), headless=True, args=["--no-sandbox"])
            for path in pages:
                rows[path] = weigh(browser, base, path, axe=args.axe)
            browser.close()
    finally:
        httpd.shutdown()
    if args.json:
        print(json.dumps({p: {k: v for k, v in w.items() if k != "files"} for p, w in rows.items()}, indent=1))
    else:
        print(_table(rows))
        if args.axe:
            print()
            print(_axe_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
