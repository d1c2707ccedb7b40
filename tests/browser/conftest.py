"""The built website, served on a loopback port and driven by headless Chromium (Playwright).

These tests look at ``_build/html`` as a reader's browser does, with no network: every request that
leaves the loopback server is aborted and counted as a failure, so a page that needs a CDN fails here.
They run with ``make test-browser`` (after ``make book``; ``.ci/run`` calls both), not with ``make test``.

Needs: a built site (``make book``), Chromium (Debian's ``chromium`` package; ``make browser-deps`` installs
it as root, or set ``CHROMIUM=/path/to/chrome``) and the ``playwright`` Python package (the driver only:
Playwright's own browser download is never used).
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
QUIET_MS = 120_000  # how long a page may take to stop fetching (ms): a guard against hangs, not a timing


def built_pages() -> list[str]:
    """Every HTML page of the built site, as paths relative to ``_build/html`` (e.g. ``chapters/intro.html``)."""
    if not SITE.is_dir():
        return []
    skip = ("_static/", "_sources/", "_images/", "_build/")
    return sorted(
        p.relative_to(SITE).as_posix()
        for p in SITE.rglob("*.html")
        if not p.relative_to(SITE).as_posix().startswith(skip)
    )


def notebook_pages() -> list[str]:
    """Every page built from a notebook (chapters, deeper dives, reference pages), in the order of the files on disk."""
    return [p for p in built_pages() if p.startswith("chapters/") and (ROOT / p).with_suffix(".ipynb").exists()]


def chapter_pages() -> list[str]:
    """The core chapters' pages (listed at the top level of _toc.yml's parts: exercises, sliders, figures)."""
    from tools.textbook_stats import book_pages

    core = {f"{chapter}.html" for chapter, _ in book_pages()}
    return [p for p in notebook_pages() if p in core]


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built website in {SITE}: run `make book` first")
    return SITE


@dataclass
class Server:
    url: str
    log: list[tuple[str, int]] = field(default_factory=list)  # (path, status) of every request served


@pytest.fixture(scope="session")
def server(site: Path):
    """A quiet static file server for ``_build/html`` on 127.0.0.1 and a free port."""
    log: list[tuple[str, int]] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code="-", size="-"):  # record the request instead of printing it
            log.append((self.path, int(code) if str(code).isdigit() else 0))

        def log_message(self, format, *args):  # (http.server's signature) silence errors on stderr too
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(url=f"http://127.0.0.1:{httpd.server_address[1]}/", log=log)
    finally:
        httpd.shutdown()
        httpd.server_close()


def find_chromium() -> str | None:
    """Chromium's executable: ``$CHROMIUM``, else the first of chromium / chromium-browser / google-chrome."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the `playwright` package is missing: run `make browser-deps`")
    executable = find_chromium()
    if executable is None:
        pytest.fail(
            "Chromium not found: run `make browser-deps` (Debian: apt-get install chromium) "
            "or set CHROMIUM=/path/to/chromium"
        )
    with sync_playwright() as p:
        # --no-sandbox: Chromium refuses to start as root (CI containers) with its sandbox on.
        b = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@dataclass
class Visit:
    """One page open in the browser and everything that went wrong while it loaded."""

    page: object
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)

    in_flight: set[str] = field(default_factory=set)
    last_activity: float = field(default_factory=time.monotonic)  # time.monotonic() of the last request event

    def wait_quiet(self, wait, path: str) -> None:
        """Run ``wait`` (a Playwright wait for ``networkidle``); on a timeout, fail naming what was in flight."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            wait()
        except PlaywrightTimeout:
            self._fail_not_quiet(path)

    def wait_idle(self, path: str, idle_s: float = 0.5) -> None:
        """Wait until no request has started or ended for ``idle_s`` seconds and none is in flight.

        Playwright's ``networkidle`` after the navigation, measured from the page's own request events:
        ``page.wait_for_load_state("networkidle")`` once hung here for its whole limit with nothing in flight
        (a known Playwright problem, microsoft/playwright#19835). Fails, naming what is in flight, after
        ``QUIET_MS``.
        """
        deadline = time.monotonic() + QUIET_MS / 1000
        while time.monotonic() < deadline:
            if not self.in_flight and time.monotonic() - self.last_activity >= idle_s:
                return
            self.page.wait_for_timeout(100)  # lets Playwright deliver the page's events meanwhile
        self._fail_not_quiet(path)

    def _fail_not_quiet(self, path: str) -> None:
        pending = sorted(self.in_flight)[:10] or ["none at that moment"]
        pytest.fail(f"{path}: the network did not go quiet in {QUIET_MS // 1000} s; in flight: {pending}")

    def problems(self) -> list[str]:
        return [f"console: {m}" for m in self.console_errors] + [f"request: {r}" for r in self.failed_requests]


@pytest.fixture
def visit(browser, server):
    """``visit(path)`` opens a page of the site with the network cut off, waits for it and for MathJax."""
    contexts = []

    def open_page(path: str, wait_maths: bool = True, **options) -> Visit:
        """``options``: Playwright's context options instead of the 1,280-px desktop (a phone's viewport, touch)."""
        options = {"viewport": {"width": 1280, "height": 900}, **options}
        context = browser.new_context(**options, service_workers="block")
        contexts.append(context)
        page = context.new_page()
        v = Visit(page)
        host = urllib.parse.urlsplit(server.url).netloc

        def route(r):
            url = urllib.parse.urlsplit(r.request.url)
            if url.scheme in ("data", "blob", "about") or url.netloc == host:
                r.continue_()
            else:  # the site must not need the network
                v.failed_requests.append(f"outside request blocked: {r.request.url}")
                r.abort()

        page.route("**/*", route)
        page.on("console", lambda m: v.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: v.console_errors.append(f"uncaught: {e}"))
        # An outside request is already counted by `route` (aborting it also fires requestfailed).
        page.on(
            "requestfailed",
            lambda r: (
                v.failed_requests.append(f"{r.url}: {r.failure}")
                if urllib.parse.urlsplit(r.url).netloc == host
                else None
            ),
        )
        page.on(
            "response", lambda r: v.failed_requests.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None
        )

        # Requests still in flight, named when a wait for the network to go quiet times out.
        def started(r):
            v.in_flight.add(r.url)
            v.last_activity = time.monotonic()

        def ended(r):
            v.in_flight.discard(r.url)
            v.last_activity = time.monotonic()

        page.on("request", started)
        page.on("requestfinished", ended)
        page.on("requestfailed", ended)
        # networkidle: also a page that redirects (index.html -> chapters/intro.html) has arrived.
        # The limit is generous (a busy 2-core CI machine once took over 30 s): it guards against a hang,
        # it does not time the page.
        v.wait_quiet(lambda: page.goto(server.url + path, wait_until="networkidle", timeout=QUIET_MS), path)
        if wait_maths:
            page.evaluate("() => window.MathJax && window.MathJax.startup ? MathJax.startup.promise : null")
            # fonts MathJax fetched while typesetting
            v.wait_idle(path)
        return v

    yield open_page
    for c in contexts:
        c.close()
