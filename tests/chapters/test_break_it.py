"""The break-it exercises: at least two per core chapter from the bottleneck to the Transformer.

A break-it exercise is an ``{exercise}`` directive with ``:class: break-it``: the reader predicts, removes or
changes one piece, measures what breaks and hands the measurement to ``check``. Each one here must ask for a
prediction, name a registered checker, and have a folded solution that ran, passed its check and explains why.
"""

import json
import re

import pytest

from lib.exercises import EXERCISES
from tools.textbook_stats import ROOT

CHAPTERS = [
    "seq2seq_bottleneck",
    "bahdanau_attention",
    "self_attention",
    "multihead_attention",
    "positional_encoding",
    "transformer",
]
LABEL = re.compile(r":label: (\S+)")
CHECK = re.compile(r"""check\(["'](\w+)["']""")


def _break_its(chapter):
    """(label, exercise text, solution cells) for each break-it exercise of a chapter, in order."""
    cells = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8"))["cells"]
    found = []
    for i, cell in enumerate(cells):
        text = "".join(cell["source"])
        if cell["cell_type"] != "markdown" or not text.startswith(":::{exercise}") or ":class: break-it" not in text:
            continue
        label = LABEL.search(text).group(1)
        start = next(
            j for j in range(i + 1, len(cells)) if f"{{solution-start}} {label}" in "".join(cells[j]["source"])
        )
        end = next(j for j in range(start, len(cells)) if "{solution-end}" in "".join(cells[j]["source"]))
        found.append((label, text, cells[start + 1 : end]))
    return found


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_core_chapter_has_at_least_two_break_it_exercises(chapter):
    assert len(_break_its(chapter)) >= 2, f"{chapter}: {[label for label, _, _ in _break_its(chapter)]}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_break_it_asks_for_a_prediction_and_is_checked_by_a_registered_checker(chapter):
    for label, text, solution in _break_its(chapter):
        assert "predict" in text.lower(), f"{chapter}/{label}: the exercise never asks the reader to predict"
        names = CHECK.findall(text)
        assert names and all(name in EXERCISES for name in names), f"{chapter}/{label}: check names {names}"
        assert EXERCISES[names[-1]].chapter == chapter, f"{chapter}/{label}: {names[-1]} belongs to another chapter"
        code = [c for c in solution if c["cell_type"] == "code"]
        assert code, f"{chapter}/{label}: no solution code"
        ran = "".join("".join(c["source"]) for c in code)
        assert f'check("{names[-1]}"' in ran, f"{chapter}/{label}: the solution does not call check"
        outputs = "".join(
            "".join(o.get("text", "")) for c in code for o in c.get("outputs", []) if o.get("output_type") == "stream"
        )
        assert f"✅ {names[-1]}" in outputs, f"{chapter}/{label}: the stored solution did not pass its check"
        why = [c for c in solution if c["cell_type"] == "markdown"]
        assert why and len("".join(why[-1]["source"]).split()) >= 30, f"{chapter}/{label}: no explanation of why"
