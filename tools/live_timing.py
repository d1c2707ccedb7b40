"""How long the live translation page takes to give its first translation, in headless Chromium, cold.

The page (``chapters/translate_live.html``) loads onnxruntime-web, the tokenizer and the exported model, then
translates the example sentence already in its box; its status line records, in ``data-first-seconds``, the
seconds from the navigation to that first translation (``performance.now()``). This script opens the page
``--runs`` times, each in a fresh browser context (an empty cache), from a loopback server with the network cut
off, and prints each run and the median. Where the page marks its steps (``performance.mark("live:...")`` in
``tools/explorer/live.js``), it also prints when each was reached, and when the big files finished arriving.

It is a measurement, not a test: the times depend on the machine and on what else runs on it. Chromium is limited
to the CPUs of ``--cpus`` (default ``0,1``: 2 cores, the target of issue 35) with ``taskset`` where it exists.

Usage (after ``make book``; needs ``make browser-deps``)::

    python tools/live_timing.py                        # 5 cold runs of _build/html
    python tools/live_timing.py --runs 9 --site /path/to/other/_build/html   # e.g. another checkout's build
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import shutil
import statistics
import sys
import threading
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = "chapters/translate_live.html"
LIMIT_MS = 120_000  # a guard against a page that never finishes loading, not a timing

STEPS_JS = """() => {
  const status = document.getElementById("live-status");
  const marks = Object.fromEntries(performance.getEntriesByType("mark")
    .filter(m => m.name.startsWith("live:")).map(m => [m.name.slice(5), m.startTime / 1000]));
  const files = Object.fromEntries(performance.getEntriesByType("resource")
    .filter(r => /\\.(wasm|bin|onnx|mjs)$|tokenizer\\.json|live\\.js/.test(new URL(r.name).pathname))
    .map(r => [new URL(r.name).pathname.split("/").pop(), +(r.responseEnd / 1000).toFixed(3)]));
  const nav = performance.getEntriesByType("navigation")[0];
  return {first: +status.dataset.firstSeconds, state: status.dataset.state, text: status.textContent,
          load: nav ? nav.loadEventEnd / 1000 : null, marks, files};
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # (http.server's signature)
        pass


def one_run(browser, base: str) -> dict:
    """Open the page cold and wait for its first translation; return the page's own timings."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    host = urllib.parse.urlsplit(base).netloc
    try:
        page = context.new_page()
        page.route(
            "**/*",
            lambda r: (
                r.continue_()
                if urllib.parse.urlsplit(r.request.url).netloc == host or r.request.url.startswith(("data:", "blob:"))
                else r.abort()
            ),
        )
        page.goto(base + PAGE, wait_until="commit", timeout=LIMIT_MS)
        page.wait_for_function(
            "() => ['done', 'error'].includes(document.getElementById('live-status')?.dataset.state)",
            timeout=LIMIT_MS,
        )
        return page.evaluate(STEPS_JS)
    finally:
        context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built site (_build/html)")
    parser.add_argument("--runs", type=int, default=5, help="cold page loads (default 5)")
    parser.add_argument("--cpus", default="0,1", help="CPUs for Chromium (taskset -c; default 0,1)")
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1:
        sys.exit("tools/live_timing.py: --runs must be at least 1")
    if not (args.site / PAGE).is_file():
        sys.exit(f"tools/live_timing.py: no {PAGE} in {args.site}: run `make book` first")
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from tests.browser.conftest import find_chromium

    chromium = find_chromium()
    if chromium is None:
        sys.exit("tools/live_timing.py: Chromium not found: run `make browser-deps` or set CHROMIUM")
    env = dict(os.environ)
    launcher = shutil.which("taskset")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(args.site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    runs = []
    try:
        with sync_playwright() as p:
            wrapper = ROOT / "_build" / "chromium-taskset.sh"
            executable = chromium
            if launcher and args.cpus:
                wrapper.parent.mkdir(parents=True, exist_ok=True)
                wrapper.write_text(f'#!/bin/sh\nexec {launcher} -c {args.cpus} {chromium} "$@"\n')
                wrapper.chmod(0o755)
                executable = str(wrapper)
            browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"], env=env)
            for i in range(args.runs):
                run = one_run(browser, base)
                runs.append(run)
                if not args.json:
                    marks = " ".join(f"{k} {v:.2f}" for k, v in run["marks"].items())
                    files = " ".join(f"{k} {v:.2f}" for k, v in sorted(run["files"].items(), key=lambda kv: kv[1]))
                    print(
                        f"run {i + 1}: first translation at {run['first']:.2f} s ({run['state']}); load event "
                        f"{run['load']:.2f} s; marks: {marks or '-'}; files done: {files}"
                    )
            browser.close()
    finally:
        httpd.shutdown()
    firsts = [r["first"] for r in runs]
    if args.json:
        print(json.dumps({"runs": runs, "median_first_seconds": statistics.median(firsts)}, indent=1))
    else:
        print(
            f"median first translation: {statistics.median(firsts):.2f} s over {len(runs)} cold runs "
            f"(min {min(firsts):.2f}, max {max(firsts):.2f}); {runs[-1]['text']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
