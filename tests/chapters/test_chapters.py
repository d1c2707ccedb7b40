"""Static checks of every chapter notebook listed in _toc.yml: what a reader of the website would meet.

nbval (``make test``) re-executes the notebooks; these checks read the stored outputs that the website shows.
"""

import json
import re
from pathlib import Path

import pytest

from tools.textbook_stats import book_pages

ROOT = Path(__file__).resolve().parents[2]
TOC = (ROOT / "_toc.yml").read_text()
NOTEBOOKS = [ROOT / f"{name}.ipynb" for name in re.findall(r"file:\s*(\S+)", TOC) if (ROOT / f"{name}.ipynb").exists()]
# The core chapters (their exercises, widgets and Summary) and the deeper dives listed under them in _toc.yml.
CHAPTERS = [ROOT / f"{chapter}.ipynb" for chapter, _ in book_pages()]
DEEPER_DIVES = [ROOT / f"{dive}.ipynb" for _, dives in book_pages() for dive in dives]


def test_every_toc_entry_exists():
    for name in re.findall(r"file:\s*(\S+)", TOC):
        assert (ROOT / f"{name}.ipynb").exists() or (ROOT / f"{name}.md").exists(), name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_ready_for_the_website(path):
    assert path.stat().st_size < 2 * 1024 * 1024, "keep notebooks under 2 MB (lower the figure size/DPI)"
    nb = json.loads(path.read_text())
    # The Colab set-up cell (tools/colab_cell.py, hidden on the website) comes first and may be unexecuted:
    # outside Colab it does nothing.
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and c.get("id") != "colab-setup"]
    assert "".join(code[0]["source"]).startswith("%matplotlib inline"), "figures need the inline backend"
    assert all(c.get("execution_count") for c in code), "every code cell has run (make execute)"
    counts = [c["execution_count"] for c in code]
    assert counts == sorted(counts), "cells were executed top to bottom"
    images = 0
    for cell in code:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"stored error in {path.name}: {out.get('evalue')}"
            stderr = "".join(out.get("text", "")) if out.get("name") == "stderr" else ""
            assert not stderr, f"{path.name} stored a warning or other stderr output: {stderr[:200]}"
            data = out.get("data", {})
            text = "".join(data.get("text/plain", ""))
            assert not text.startswith("<torch._C.Generator"), f"{path.name}: a seed's Generator is printed (`_ =`)"
            if text.startswith("<Figure size"):
                assert any(k.startswith("image/") for k in data), "a figure stored as text, not as an image"
            images += any(k.startswith("image/") for k in data)
    if path not in CHAPTERS:
        return  # a deeper dive or a reference page: no exercises or Summary of its own
    assert images >= 2, "every chapter shows figures"
    markdown = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert markdown.count("{exercise}") >= 3, "every chapter ends with at least 3 exercises"
    headings = [
        line
        for c in nb["cells"]
        if c["cell_type"] == "markdown"
        for line in "".join(c["source"]).splitlines()
        if line.startswith("## ")
    ]
    assert "## Summary" in headings and "## Exercises" in headings, headings
    after = headings[headings.index("## Summary") :]
    assert after in (["## Summary", "## Exercises"], ["## Summary", "## Exercises", "## References"]), (
        f"{path.name}: the chapter ends with Summary, Exercises (and References), not {after}"
    )


def test_timings_are_ignored_by_nbval():
    # a measured time differs on every run: nbval must not compare the cell's output
    timed = 0
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and ("perf_counter" in source or "attention_cost(" in source):
                assert "nbval-ignore-output" in _tags(cell), (
                    f"{path.name}, cell {cell.get('id')}: a timed cell whose output nbval compares"
                )
                timed += 1
    assert timed >= 1, "no timed cell found: the pattern (perf_counter, attention_cost) checked nothing"


# --- the exercise, widget and output mechanics every chapter follows ---------------------------------

CHECKED = CHAPTERS  # every core chapter: exercises with checkers, a widget, a kernel-free slider


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _text_outputs(cell):
    for out in cell.get("outputs", []):
        if "text" in out:
            yield "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
        plain = out.get("data", {}).get("text/plain")
        if plain is not None:
            yield "".join(plain) if isinstance(plain, list) else plain


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: p.stem)
def test_checks_name_registered_exercises_of_this_chapter(path):
    from lib.exercises import EXERCISES, list_exercises

    used = []  # in the order of their first check in the notebook
    for cell in _cells(path):
        used += [name for name in re.findall(r'check\("([^"]+)"', _source(cell)) if name not in used]
    chapter_names = [ex.name for ex in list_exercises(path.stem)]
    assert set(used) <= set(EXERCISES), f"unknown exercises: {set(used) - set(EXERCISES)}"
    assert used == chapter_names, "the chapter checks its registered exercises, in the order they are registered"
    assert len(chapter_names) >= 3


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: p.stem)
def test_solutions_are_gated_dropdowns_whose_code_passes(path):
    cells = _cells(path)
    solutions = [i for i, c in enumerate(cells) if "solution" in _tags(c)]
    assert len(solutions) >= 3
    for i in solutions:
        before, cell = _source(cells[i - 1]), cells[i]
        assert cells[i - 1]["cell_type"] == "markdown" and before.startswith("```{solution-start}")
        assert ":class: dropdown" in before
        # the solution's code, then at most one markdown cell (a break-it's "why it broke"), then the gate's end
        end = i + 1 if _source(cells[i + 1]).startswith("```{solution-end}") else i + 2
        assert all(c["cell_type"] == "markdown" for c in cells[i + 1 : end + 1])
        assert _source(cells[end]).startswith("```{solution-end}"), f"solution at cell {i}: no solution-end after it"
        label = before.split()[1]
        assert any(f":label: {label}" in _source(c) for c in cells[:i] if c["cell_type"] == "markdown")
        assert any("✅" in t for t in _text_outputs(cell)), f"solution {label} has no stored ✅"
        assert _source(cell).rstrip().splitlines()[-1].startswith("assert check("), (
            f"solution {label} ends without check"
        )


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: p.stem)
def test_widgets_come_after_a_static_figure_and_are_ignored_by_nbval(path):
    cells = _cells(path)
    widgets = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and "ipywidgets" in _source(c)]
    assert widgets, "every chapter has a widget"
    for w in widgets:
        assert {"nbval-ignore-output", "remove-output"} <= set(_tags(cells[w]))
        assert "interact_manual" in _source(cells[w]), "interact_manual: plain interact stores figures as text"
        # the static figure of the widget's default value comes earlier in the same section
        start = max(i for i in range(w) if cells[i]["cell_type"] == "markdown" and _source(cells[i]).startswith("#"))
        before = [c for c in cells[start:w] if c["cell_type"] == "code"]
        assert any("image/png" in out.get("data", {}) for c in before for out in c.get("outputs", [])), (
            f"no static figure before the widget in code cell {w}"
        )


# --- the website has no kernel: every live widget has a kernel-free slider before it ---------------------

WIDGET_CALL = re.compile(r"\binteract(_manual)?\b")
SLIDER_BYTES = 800 * 1024


def _widget_cells(cells):
    return [i for i, c in enumerate(cells) if c["cell_type"] == "code" and WIDGET_CALL.search(_source(c))]


def _slider_frames(cell):
    """The frames (data URLs) of a figure_slider cell's stored HTML output, or None without one."""
    for out in cell.get("outputs", []):
        page = out.get("data", {}).get("text/html")
        if page is None:
            continue
        page = "".join(page) if isinstance(page, list) else page
        if 'class="figure-slider"' not in page:
            continue
        data = json.loads(page.split('class="figure-slider-data">')[1].split("</script>")[0])
        assert len(data["frames"]) == len(data["labels"]) == len(data["alts"])
        return data["frames"]
    return None


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: p.stem)
def test_every_widget_has_a_kernel_free_slider_before_it(path):
    # The live ipywidgets view shows nothing on the static website; lib.plots.figure_slider pre-renders a
    # few of its figures and swaps them with a range input, which works in Jupyter, Colab and the website.
    cells = _cells(path)
    widgets = _widget_cells(cells)
    assert widgets, "every chapter has an interact/interact_manual widget"
    for w in widgets:
        start = max(i for i in range(w) if cells[i]["cell_type"] == "markdown" and _source(cells[i]).startswith("#"))
        sliders = [
            i for i in range(start, w) if cells[i]["cell_type"] == "code" and "figure_slider(" in _source(cells[i])
        ]
        assert sliders, f"no figure_slider cell before the widget in cell {w} (same section)"
        for s in sliders:
            cell = cells[s]
            assert "nbval-ignore-output" in _tags(cell), "PNG bytes differ between machines"
            assert "remove-output" not in _tags(cell), "the slider is what the website shows"
            frames = _slider_frames(cell)
            assert frames is not None, f"cell {s}: no stored figure-slider HTML output (make execute)"
            assert len(frames) >= 2 and all(f.startswith("data:image/png;base64,") for f in frames)
            size = len(json.dumps(cell["outputs"], ensure_ascii=False))
            assert size < SLIDER_BYTES, (
                f"cell {s}: the slider's output is {size / 1024:.0f} kB (fewer frames, lower dpi)"
            )
            for out in cell["outputs"]:
                plain = out.get("data", {}).get("text/plain", "")
                plain = "".join(plain) if isinstance(plain, list) else plain
                assert len(plain) < 2000, f"cell {s}: the text/plain output holds the frames"
        # static figure -> kernel-free slider -> live widget
        first = sliders[0]
        assert any(
            "image/png" in out.get("data", {})
            for c in cells[start:first]
            if c["cell_type"] == "code"
            for out in c.get("outputs", [])
        ), f"no static figure before the slider in cell {first}"


def test_every_chapter_starts_with_the_colab_set_up_cell():
    """The Colab launch button needs it (tools/colab_cell.py writes it from _config.yml's repository.url)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "colab_cell.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for path in NOTEBOOKS:
        cell = json.loads(path.read_text(encoding="utf-8"))["cells"][1]
        source = "".join(cell["source"])
        assert cell["metadata"].get("tags") == ["remove-cell"] and 'if "google.colab" in sys.modules:' in source
        assert cell.get("outputs") in ([], None), f"{path.name}: the set-up cell printed something outside Colab"
