"""The instructor page (chapters/instructor.md) states facts about the book: keep them true."""

from __future__ import annotations

import re
from pathlib import Path

from lib.exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "chapters" / "instructor.md").read_text(encoding="utf-8")


def _labs() -> dict[str, list[tuple[str, str, int]]]:
    """Lab title -> [(exercise name, chapter, minutes)] from the page's lab tables."""
    labs: dict[str, list[tuple[str, str, int]]] = {}
    current = None
    for line in PAGE.splitlines():
        title = re.match(r"\*\*(Lab [A-Z][^*]*)\*\*", line)
        if title:
            current = title.group(1)
            labs[current] = []
            continue
        row = re.match(r"\|.*\(`(\w+)`\)\s*\|\s*\{doc\}`(\w+)`\s*\|\s*(\d+)\s*\|", line)
        if row and current:
            labs[current].append((row.group(1), row.group(2), int(row.group(3))))
    return labs


def test_every_lab_exercise_exists_in_the_chapter_named_and_fits_90_minutes():
    labs = _labs()
    assert len(labs) >= 3
    for title, rows in labs.items():
        assert len(rows) >= 3, f"{title}: {rows}"  # three, where one is a 45-minute assembly
        for name, chapter, _ in rows:
            assert name in EXERCISES, f"{title}: no exercise {name!r}"
            assert EXERCISES[name].chapter == chapter, f"{title}: {name} is in {EXERCISES[name].chapter}, not {chapter}"
        total = sum(m for _, _, m in rows)
        assert 60 <= total <= 80, f"{title}: {total} minutes leaves no time to discuss, or is too short"


def test_the_labs_cover_every_chapter_with_exercises():
    covered = {chapter for rows in _labs().values() for _, chapter, _ in rows}
    assert covered == {ex.chapter for ex in EXERCISES.values()}


def test_the_run_time_table_names_every_chapter():
    chapters = {ex.chapter for ex in EXERCISES.values()}
    table = [line for line in PAGE.splitlines() if line.startswith("|") and "{doc}" in line and "min" in line]
    named = {m for line in table for m in re.findall(r"\{doc\}`(\w+)`", line)}
    assert chapters <= named, f"chapters missing from the run-time table: {chapters - named}"


def test_the_reading_times_are_the_core_paths_at_200_words_a_minute():
    from tools.textbook_stats import book_pages, measure

    for chapter, _ in book_pages():
        name = Path(chapter).name
        row = re.search(rf"\| \{{doc\}}`{name}` \| (\d+) min \|", PAGE)
        assert row, f"{name}: no reading time in the run-time table"
        words = measure(ROOT / f"{chapter}.ipynb")["words"]
        assert int(row.group(1)) == round(words / 200), f"{name}: {words} words read in {round(words / 200)} min"


def test_the_capstones_training_time_is_the_one_its_stored_run_printed():
    import json

    outputs = "".join(
        "".join(out.get("text", ""))
        for cell in json.loads((ROOT / "chapters" / "capstone.ipynb").read_text(encoding="utf-8"))["cells"]
        if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
    )
    stored = re.search(r"650 steps, ([\d.]+) minutes of training", outputs)
    stated = re.search(r"650 by default: ([\d.]+) minutes of training", PAGE)
    assert stored and stated and stored.group(1) == stated.group(1), (stored, stated)
