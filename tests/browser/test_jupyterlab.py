"""The chapters in a real JupyterLab (what ``make lab`` opens), driven by headless Chromium with the network cut off.

A JupyterLab server with jupyterlab-myst (``requirements-lab.txt``) is started on a free loopback port with a
token, on a temporary copy of ``chapters/`` (JupyterLab autosaves: the committed notebooks must not change) and
of one student-edition chapter. The kernel is this venv's ``python3``, with ``lib`` importable and MULTI30K_DIR
passed on. For each chapter the test restarts the kernel and runs all cells through JupyterLab's own command
(``notebook:restart-run-all``, its confirmation dialog accepted), then checks: every code cell ran, none raised,
no MyST markup is shown raw (``:::{``, ```` ```{ ````, ``{cite``) and exercises render as MyST exercises; in the
chapters of ``WIDGETS`` a live ipywidgets slider is moved and the figure it draws changes. Screenshots go to
``_build/screenshots/jupyterlab-<chapter>.png``. Every chapter run also checks what ``make lab`` adds to
jupyterlab-myst (its server runs with ``tools/lab_config.py``): a citation reads as author-year (not its key),
solutions are folded (markdown dropdowns closed, solution code cells folded) and unfold on a click, and a save
from JupyterLab leaves the chapter's markdown as it was (``-citation``, ``-folded``, ``-unfolded`` screenshots).
The student edition's starter cells print ⏳ and show no value under it.

The attention explorer (``lib.explorer.explorer_widget``, an anywidget) is checked in a throw-away notebook of its
own (none of the default chapters has one): the widget renders from anywidget's installed labextension (no CDN),
pointing at a cell shows its token pair and the weight the widget's data holds; and the website's
``{attention-explorer}`` directive in a markdown cell shows as a note with the code that draws it live, not as an
"Unknown Directive", and is saved back as the directive (``jupyterlab-explorer-*`` screenshots).

Budget: by default only ``DEFAULT_CHAPTERS``, three quick chapters with a live widget (a fixed list, so that
what CI runs does not depend on how busy the machine was when a chapter was last executed); ``JUPYTERLAB_ALL=1``
runs every chapter (the capstone and BERT/GPT take minutes each). nbval (``make test``) executes every chapter anyway.
Needs ``make browser-deps`` (Chromium, playwright, requirements-lab.txt).
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT, SCREENSHOTS
from .test_live_translation import axes

CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
DEFAULT_CHAPTERS = ("preliminaries", "positional_encoding", "seq2seq_bottleneck")  # each under 30 s of stored run time
RUN_ALL = os.environ.get("JUPYTERLAB_ALL") == "1"
STUDENT_CHAPTER = "preliminaries"  # the fastest chapter, with four starter cells

# Chapter -> (slider description, arrow-key presses, button): the live widget moved in that chapter.
# Every one is an `interact_manual` view: the button draws the figure for the sliders' values.
WIDGETS = {
    "preliminaries": ("T", 10, "Draw"),  # temperature 1 -> 10**0.5
    "positional_encoding": ("d_model", 25, "Draw"),  # 64 -> 264
    "efficient_attention": ("window w", 3, "Draw"),
    "seq2seq_bottleneck": ("length", 6, "Draw"),
    "multihead_attention": ("head", 1, "Draw"),
    "transformer": ("warm-up", 20, "Draw"),  # 4000 -> 6000 steps
    "bahdanau_attention": ("sentence", 1, "Draw"),
    "self_attention": ("head", 1, "Draw"),
}

SERVER_START_TIMEOUT_S = 90
OPEN_TIMEOUT_MS = 120_000  # page load, kernel start
DIALOG_TIMEOUT_MS = 30_000
DRAW_TIMEOUT_MS = 90_000


def stored_seconds(chapter: str) -> float:
    """Seconds the chapter's code cells took when it was last executed (0 when no cell has timing metadata)."""
    nb = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    total = 0.0
    for cell in nb["cells"]:
        ex = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in ex and "shell.execute_reply" in ex:
            start = datetime.datetime.fromisoformat(ex["iopub.execute_input"])
            total += (datetime.datetime.fromisoformat(ex["shell.execute_reply"]) - start).total_seconds()
    return total


def default_chapters() -> list[str]:
    return [c for c in CHAPTERS if c in DEFAULT_CHAPTERS]


def run_all_timeout_s(chapter: str) -> float:
    """A hard limit on one run-all: 10x the stored time (a shared machine may be that much slower), at least 5 min."""
    return max(300.0, 10 * stored_seconds(chapter))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyter_lab(root_dir: Path, work: Path) -> Iterator[tuple[str, str]]:
    """Run ``jupyter lab`` on ``root_dir`` (its settings, workspaces, runtime files in ``work``); yield (URL, token)."""
    settings = work / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # Every cell in the page (no virtual scrolling), so that the whole notebook can be read from the DOM.
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}', encoding="utf-8")
    # No "get notified about Jupyter news?" toast over the notebook (and no request for the news feed).
    news = work / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}', encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "JUPYTER_PREFER_ENV_PATH": "1",  # the venv's python3 kernel, not one from ~/.local
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "JUPYTERLAB_SETTINGS_DIR": str(work / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(work / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
    }
    args = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
        "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run JupyterLab's commands, read its models
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly",
        f"--config={ROOT / 'tools' / 'lab_config.py'}",  # as `make lab`: citations shown as author-year
    ]  # fmt: skip
    if os.geteuid() == 0:
        args.append("--allow-root")
    log_path = work / "server.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while True:
                try:
                    urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                    break
                except OSError:
                    if server.poll() is not None:
                        pytest.fail(f"jupyter lab exited ({server.returncode}): {log_path.read_text()[-2000:]}")
                    if time.monotonic() > deadline:
                        pytest.fail(f"jupyter lab did not answer within {SERVER_START_TIMEOUT_S} s")
                    time.sleep(0.5)
            yield base, token
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a copy of chapters/ and of one student-edition chapter (student/); yields (URL, token)."""
    pytest.importorskip("jupyterlab", reason="JupyterLab is missing: `make browser-deps` installs requirements-lab.txt")
    pytest.importorskip(
        "jupyterlab_myst", reason="jupyterlab-myst is missing: `make browser-deps` installs requirements-lab.txt"
    )
    work = tmp_path_factory.mktemp("lab")
    root = work / "book"
    shutil.copytree(ROOT / "chapters", root / "chapters")
    subprocess.run(
        [sys.executable, "-m", "lib.classroom.student", "--out", str(root / "student"), STUDENT_CHAPTER],
        check=True, cwd=ROOT, timeout=300, capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    with jupyter_lab(root, work) as server:
        yield (*server, root)


@pytest.fixture
def lab_root(lab) -> Path:
    """The folder the lab server serves (its copy of chapters/ and student/)."""
    return lab[2]


def _delete_sessions(base: str, token: str) -> None:
    """Shut down every kernel the server runs (the next chapter gets the CPU to itself)."""
    headers = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{base}/api/sessions", headers=headers), timeout=30) as r:
        sessions = json.load(r)
    for s in sessions:
        req = urllib.request.Request(f"{base}/api/sessions/{s['id']}", headers=headers, method="DELETE")
        urllib.request.urlopen(req, timeout=60).close()


@pytest.fixture
def lab_page(lab, browser):
    """``open(path)``: a notebook of the lab server in a fresh page with the network cut off but for the server."""
    base, token, _ = lab
    host = urllib.parse.urlsplit(base).netloc
    outside: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    page = context.new_page()
    page.set_default_timeout(60_000)  # no Playwright call may wait longer unless it says so

    def route(r):
        url = urllib.parse.urlsplit(r.request.url)
        if url.scheme in ("data", "blob", "about") or url.netloc == host:
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)

    def open_notebook(path: str):
        # ?reset: a clean workspace (no notebook of an earlier test reopened beside this one).
        page.goto(f"{base}/lab/tree/{path}?reset&token={token}", wait_until="domcontentloaded", timeout=OPEN_TIMEOUT_MS)
        page.wait_for_function(
            f"() => {{ const s = ({STATE})(); return s && s.path === {json.dumps(path)} && s.status === 'idle'; }}",
            timeout=OPEN_TIMEOUT_MS,
            polling=500,
        )
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # the notebook full width in screenshots
        return page

    try:
        yield open_notebook
        assert not outside, f"JupyterLab asked the network for: {outside[:5]}"
    finally:
        context.close()
        _delete_sessions(base, token)


# The open notebook as JupyterLab's models see it: kernel status, and for each code cell its execution count,
# errors (error outputs, and tracebacks written to stderr), stream text, tags and whether it is running now.
STATE = """() => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  const panel = app.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.model || !panel.sessionContext) return null;
  const cells = panel.content.model.cells, code = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    const outputs = c.outputs.toJSON();
    const errors = outputs.filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`)
      .concat(outputs.filter(o => o.output_type === 'stream' && o.name === 'stderr'
                              && [].concat(o.text).join('').includes('Traceback'))
                     .map(o => [].concat(o.text).join('').slice(-300)));
    const stream = outputs.filter(o => o.output_type === 'stream').map(o => [].concat(o.text).join('')).join('');
    const results = outputs.filter(o => o.output_type === 'execute_result')
      .map(o => [].concat((o.data || {})['text/plain'] || []).join(''));
    code.push({index: i, n: c.executionCount, errors, stream, results, tags: c.getMetadata('tags') || [],
               running: c.executionState === 'running'});
  }
  const prompts = Array.from(panel.node.querySelectorAll('.jp-InputPrompt')).map(e => e.textContent);
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return {path: panel.context.path, status: kernel ? kernel.status : 'none', code,
          busyPrompts: prompts.filter(t => t.includes('*')).length};
}"""

# Finished: the kernel is idle, no cell is queued or running, and every code cell ran or one raised
# (JupyterLab stops a run-all at the first error).
DONE = f"""() => {{
  const s = ({STATE})();
  if (!s || s.status !== 'idle' || s.busyPrompts || s.code.some(c => c.running)) return false;
  return s.code.every(c => c.n !== null) || s.code.some(c => c.errors.length > 0);
}}"""


def restart_and_run_all(page, timeout_s: float) -> tuple[float, dict]:
    """Clear the outputs, restart the kernel and run every cell (JupyterLab's commands); return (seconds, state)."""
    # Not awaited (no `return`): the command's promise resolves only after the dialog is answered.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs'); }")
    page.wait_for_function(f"() => ({STATE})().code.every(c => c.n === null)", timeout=30_000)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:restart-run-all'); }")
    dialog = page.locator(".jp-Dialog")
    dialog.locator("button.jp-mod-accept", has_text="Restart").click(timeout=DIALOG_TIMEOUT_MS)
    start = time.monotonic()
    dialog.wait_for(state="detached", timeout=DIALOG_TIMEOUT_MS)
    try:
        page.wait_for_function(DONE, timeout=timeout_s * 1000, polling=500)
    except Exception as err:  # playwright's TimeoutError: say how far the run got
        state = page.evaluate(STATE) or {"status": "unknown", "code": []}
        ran = sum(c["n"] is not None for c in state["code"])
        running = [c["index"] for c in state["code"] if c["running"]]
        pytest.fail(
            f"run-all not finished after {timeout_s:.0f} s: {ran} of {len(state['code'])} code cells ran, "
            f"running now: cell {running}, kernel {state['status']} ({type(err).__name__})"
        )
    return time.monotonic() - start, page.evaluate(STATE)


def assert_ran_cleanly(name: str, state: dict) -> None:
    errors = [f"cell {c['index']}: {e}" for c in state["code"] for e in c["errors"]]
    assert not errors, f"{name}: cells raised in JupyterLab: {errors[:5]}"
    not_run = [c["index"] for c in state["code"] if c["n"] is None]
    assert not not_run, f"{name}: code cells did not run: {not_run[:10]}"


def assert_myst_rendered(page, name: str) -> None:
    """jupyterlab-myst rendered every markdown cell: no directive or role as text, exercises as exercises."""
    texts = page.evaluate("() => Array.from(document.querySelectorAll('.jp-MarkdownCell .myst')).map(e => e.innerText)")
    assert texts, f"{name}: no rendered markdown cell found"
    raw = [t[:120] for t in texts if ":::{" in t or "```{" in t or "{cite" in t or "{ref}" in t]
    assert not raw, f"{name}: MyST markup shown raw in JupyterLab: {raw[:3]}"
    counts = page.evaluate(
        "() => ({exercises: document.querySelectorAll('.jp-MarkdownCell .myst-exercise').length,"
        " admonitions: document.querySelectorAll('.jp-MarkdownCell [class*=myst-admonition]').length,"
        " maths: document.querySelectorAll('.jp-MarkdownCell .myst .katex').length})"
    )
    print(f"{name}: rendered by jupyterlab-myst: {counts}")
    assert counts["exercises"] > 0, f"{name}: no exercise rendered by jupyterlab-myst (.myst-exercise)"
    # Solutions are folded: a <details> exercise block (MyST `:class: dropdown`), closed.
    page.locator(".jp-MarkdownCell .myst-exercise").first.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"jupyterlab-{name}-exercises.png"))


def _lab_server_tool():
    spec = importlib.util.spec_from_file_location("lab_server_tool", ROOT / "tools" / "lab_server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def expected_citation(chapter: str) -> tuple[str, str]:
    """(role, author-year text) of the chapter's first one-key citation in prose (``{cite:t}`` if any), from the bib.

    Prose: a markdown cell that is not a directive (``:::{exercise}``, a fenced ``{solution-start}``, ...). Inside
    an exercise jupyterlab-myst draws the link's text but not as an ``<a>``, so the check looks at prose.
    """
    tool = _lab_server_tool()
    nb = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    prose = [
        "".join(cell["source"])
        for cell in nb["cells"]
        if cell["cell_type"] == "markdown" and not re.match(r"\s*(:::|```)\s*\{", "".join(cell["source"]))
    ]
    for pattern in (r"\{(cite:t)\}`([\w-]+)`", r"\{(cite(?::p)?)\}`([\w-]+)`"):  # the capstone's prose has no cite:t
        for source in prose:
            match = re.search(pattern, source)
            if match:
                text = tool._portable_tool.format_cite(match.group(1), match.group(2), tool.bibliography(), [])
                return match.group(0), text
    pytest.fail(f"{chapter}: no citation in prose to look for")


def assert_citations_read_as_author_year(page, name: str) -> None:
    """Every citation reads as author-year (a link to the bibliography page), none as its bare key."""
    role, text = expected_citation(name)
    not_found = page.locator(".jp-MarkdownCell .myst [title='Citation Not Found']").count()
    assert not_found == 0, f"{name}: {not_found} citations shown as bare keys (jupyterlab-myst: Citation Not Found)"
    link = page.locator(".jp-MarkdownCell .myst a", has_text=text).first
    link.wait_for(timeout=30_000)
    assert link.inner_text().strip() == text, f"{name}: {role} reads {link.inner_text()!r}, expected {text!r}"
    assert "bibliography.md" in (link.get_attribute("href") or ""), f"{name}: {text} does not link the bibliography"
    link.evaluate("e => e.scrollIntoView({block: 'center'})")
    page.screenshot(path=str(SCREENSHOTS / f"jupyterlab-{name}-citation.png"))
    print(f"{name}: {role} reads {text!r}")


def assert_solutions_folded(page, name: str) -> None:
    """Markdown solutions are closed <details>; solution code cells are folded and unfold on a click."""
    details = page.locator(".jp-MarkdownCell details.myst-exercise")
    if details.count():
        closed = details.evaluate_all("ds => ds.filter(d => !d.open).length")
        assert closed == details.count(), f"{name}: {details.count() - closed} markdown solutions open"
    hidden = page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.widgets"
        ".map((w, i) => [i, w.model.type, w.inputHidden, w.model.getMetadata('tags') || []])"
        ".filter(([i, type, hidden, tags]) => type === 'code' && tags.includes('solution'))"
    )
    assert hidden, f"{name}: no solution code cell"
    shown = [i for i, _, is_hidden, _ in hidden if not is_hidden]
    assert not shown, f"{name}: solution code cells not folded in JupyterLab: {shown}"
    cell = page.locator(".jp-Notebook .jp-Cell").nth(hidden[0][0])  # the first solution code cell
    assert cell.locator(".jp-InputPlaceholder").first.is_visible(), f"{name}: no fold bar on a solution cell"
    cell.scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / f"jupyterlab-{name}-folded.png"))
    assert not cell.locator(".jp-InputArea .cm-content").first.is_visible(), f"{name}: a folded cell shows its code"
    cell.locator(".jp-InputPlaceholder .jp-Placeholder-content").first.click()
    cell.locator(".jp-InputArea .cm-content").first.wait_for(state="visible", timeout=10_000)
    assert "check(" in cell.locator(".jp-InputArea .cm-content").first.inner_text(), f"{name}: unfolded, no solution"
    page.screenshot(path=str(SCREENSHOTS / f"jupyterlab-{name}-unfolded.png"))
    if details.count():
        first = details.first
        first.locator("summary").first.click()
        assert first.evaluate("d => d.open"), f"{name}: a markdown solution did not open on a click"
    print(f"{name}: {len(hidden)} solution code cells folded; {details.count()} markdown solutions closed")


def assert_saved_file_keeps_its_myst(page, name: str, root: Path) -> None:
    """Saved from JupyterLab, the notebook's markdown is the chapter's, its citations roles again."""
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    saved = json.loads((root / "chapters" / f"{name}.ipynb").read_text(encoding="utf-8"))
    chapter = json.loads((ROOT / "chapters" / f"{name}.ipynb").read_text(encoding="utf-8"))

    def markdown(nb: dict) -> list[str]:
        return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]

    assert markdown(saved) == markdown(chapter), f"{name}: saving from JupyterLab changed the chapter's markdown"


def move_widget(page, name: str, description: str, presses: int, button: str) -> None:
    """Draw the live view, move its slider by ``presses`` steps, draw again: the figure must change."""
    slider = page.locator(".widget-slider", has=page.locator(f".widget-label:text-is('{description}')")).first
    cell = page.locator(".jp-CodeCell", has=slider).first
    cell.scroll_into_view_if_needed()
    draw = cell.locator("button", has_text=button).first
    draw.click()
    figure = cell.locator(".jp-OutputArea-output img").first
    figure.wait_for(timeout=DRAW_TIMEOUT_MS)
    before = figure.get_attribute("src")
    readout = slider.locator(".widget-readout")
    value = readout.inner_text()
    slider.locator(".noUi-handle").first.focus()
    for _ in range(presses):
        page.keyboard.press("ArrowRight")
    if readout.inner_text() == value:  # the slider starts at its maximum: move it the other way
        for _ in range(presses):
            page.keyboard.press("ArrowLeft")
    moved = readout.inner_text()
    assert moved != value, f"{name}: the {description} slider did not move ({value!r})"
    draw.click()
    page.wait_for_function(
        "([cell, old]) => { const img = cell.querySelector('.jp-OutputArea-output img');"
        " return img && img.src !== old && img.complete && img.naturalWidth > 0; }",
        arg=[cell.element_handle(), before],
        timeout=DRAW_TIMEOUT_MS,
    )
    page.wait_for_function(DONE, timeout=DRAW_TIMEOUT_MS, polling=500)  # every figure of the view drawn
    # The widget at the top of the screenshot, its figure below it.
    cell.locator(".jp-OutputArea").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    print(f"{name}: {description} {value} -> {moved}, figure redrawn")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_in_jupyterlab(lab_page, lab_root, chapter):
    if not RUN_ALL and chapter not in default_chapters():
        pytest.skip(
            f"{chapter} is not among the default chapters {DEFAULT_CHAPTERS} (it took {stored_seconds(chapter):.0f} s "
            "when last executed): set JUPYTERLAB_ALL=1 to run it"
        )
    page = lab_page(f"chapters/{chapter}.ipynb")
    seconds, state = restart_and_run_all(page, run_all_timeout_s(chapter))
    print(f"\n{chapter}: restart and run all in JupyterLab: {seconds:.1f} s ({len(state['code'])} code cells)")
    assert_ran_cleanly(chapter, state)
    assert_myst_rendered(page, chapter)
    assert_citations_read_as_author_year(page, chapter)
    assert_solutions_folded(page, chapter)
    assert_saved_file_keeps_its_myst(page, chapter, lab_root)
    if chapter in WIDGETS:
        move_widget(page, chapter, *WIDGETS[chapter])
    page.screenshot(path=str(SCREENSHOTS / f"jupyterlab-{chapter}.png"))


def test_at_least_three_default_chapters_move_a_widget():
    moved = [c for c in default_chapters() if c in WIDGETS]
    assert len(moved) >= 3, f"only {moved} of the chapters run by default have a live widget to move"


def test_student_edition_starters_print_not_solved_yet(lab_page):
    page = lab_page(f"student/{STUDENT_CHAPTER}.ipynb")
    seconds, state = restart_and_run_all(page, run_all_timeout_s(STUDENT_CHAPTER))
    print(f"\nstudent/{STUDENT_CHAPTER}: restart and run all in JupyterLab: {seconds:.1f} s")
    assert_ran_cleanly(f"student/{STUDENT_CHAPTER}", state)
    starters = [c for c in state["code"] if "exercise-starter" in c["tags"]]
    assert starters, "the student edition has no starter cell (tag exercise-starter)"
    silent = [c["index"] for c in starters if "⏳" not in c["stream"]]
    assert not silent, f"starter cells that do not print ⏳: {silent}"
    shown = {c["index"]: c["results"] for c in starters if c["results"]}
    assert not shown, f"starter cells that show a value under ⏳ (the check call needs its ';'): {shown}"
    first = page.locator(".jp-CodeCell", has=page.locator(".jp-OutputArea-output", has_text="⏳")).first
    first.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"jupyterlab-student-{STUDENT_CHAPTER}.png"))


EXPLORER_SENTENCE = "Ein Hund rennt im Schnee."  # one short sentence: the widget's cell runs in a few seconds
EXPLORER_DIRECTIVE = f"```{{attention-explorer}}\n:kinds: cross\n{EXPLORER_SENTENCE}\n```"
EXPLORER_CODE = f"""from pathlib import Path

from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.explorer import explorer_widget

run = load_run(SHIPPED_MODEL)
widget = explorer_widget(run.model, run.tokenizer, [{EXPLORER_SENTENCE!r}])
Path("explorer-data.json").write_text(widget.data_json, encoding="utf-8")  # what the widget holds, for the test
widget"""


def test_attention_explorer_widget_and_directive_in_jupyterlab(lab_page, lab_root):
    """The explorer widget draws its data in JupyterLab and hover reads it; the website's directive shows as a note."""
    folder = lab_root / "scratch"
    folder.mkdir(exist_ok=True)
    cells = [
        {"cell_type": "markdown", "id": "directive", "metadata": {}, "source": f"An explorer:\n\n{EXPLORER_DIRECTIVE}"},
        {"cell_type": "code", "id": "widget", "metadata": {}, "source": EXPLORER_CODE, "outputs": [],
         "execution_count": None},
    ]  # fmt: skip
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    notebook = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    (folder / "explorer.ipynb").write_text(json.dumps(notebook, indent=1, ensure_ascii=False), encoding="utf-8")
    page = lab_page("scratch/explorer.ipynb")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    # Problem 1: the directive is a note (tools/lab_server.py) with the code that draws the explorer live.
    markdown = page.locator(".jp-MarkdownCell .myst", has_text="An explorer:").first
    markdown.wait_for(timeout=30_000)
    shown = markdown.inner_text()
    assert "Unknown Directive" not in shown and "{attention-explorer}" not in shown, shown[:300]
    note = markdown.locator("[class*=myst-admonition]", has_text="Attention explorer")  # the note and its parts
    assert note.count(), f"the directive is not shown as a note: {shown[:300]!r}"
    note = note.first
    assert "explorer_widget(run.model, run.tokenizer, [" in note.inner_text() and EXPLORER_SENTENCE in shown
    assert "tools/lab_server.py" not in shown, "the directive's MyST comments are shown"
    note.scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "jupyterlab-explorer-note.png"))

    # Problem 2: the widget, run by JupyterLab, draws the explorer from anywidget's installed labextension.
    seconds, state = restart_and_run_all(page, 300)
    assert_ran_cleanly("scratch/explorer", state)
    explorer = page.locator(".jp-OutputArea-output .attn-explorer").first
    explorer.locator("rect.attn-cell").first.wait_for(timeout=DRAW_TIMEOUT_MS)
    loaded = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    assert any("/lab/extensions/anywidget/static/" in url for url in loaded), "anywidget's JS is not the labextension's"
    data = json.loads((folder / "explorer-data.json").read_text(encoding="utf-8"))
    (sentence,) = data["sentences"]
    assert sentence["source"] == EXPLORER_SENTENCE
    kind, layer = "cross", len(sentence["maps"]["cross"]) - 1  # the first view: cross-attention, the last layer
    value = "e => e.value"
    assert explorer.locator("select[data-control=kind]").evaluate(value) == kind
    assert explorer.locator("select[data-control=layer]").evaluate(value) == str(layer)
    explorer.locator("select[data-control=head]").select_option("0")  # one head: the weights the data holds
    weights, (rows, cols) = sentence["maps"][kind][layer][0], axes(sentence, kind)
    drawn = explorer.locator("rect.attn-cell").count()
    assert drawn == len(rows) * len(cols), f"{drawn} cells drawn for a {len(rows)} x {len(cols)} map"
    readout = explorer.locator(".attn-readout")
    middle = len(rows) // 2
    strongest = (middle, weights[middle].index(max(weights[middle])))  # a weight far from 0 (last: the screenshot)
    for r, c in [(0, 0), (len(rows) - 1, len(cols) - 1), strongest]:
        explorer.locator(f"rect.attn-cell[data-row='{r}'][data-col='{c}']").hover()
        want = f"query predicting “{rows[r]}” → key “{cols[c]}”: {weights[r][c]:.{data['decimals']}f}"
        assert readout.inner_text() == want, (r, c)
    assert weights[strongest[0]][strongest[1]] > 0.2
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SCREENSHOTS / "jupyterlab-explorer-widget.png"))
    print(f"\nexplorer widget: run in {seconds:.1f} s, {len(rows)} x {len(cols)} map, hover: {readout.inner_text()!r}")

    # Saved from JupyterLab, the markdown cell holds the directive again.
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    saved = json.loads((folder / "explorer.ipynb").read_text(encoding="utf-8"))
    assert "".join(saved["cells"][0]["source"]) == cells[0]["source"]
