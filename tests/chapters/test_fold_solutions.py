"""tools/fold_solutions.py: it folds exactly the solution code cells, --check changes nothing, and usage errors.

Whether the chapters themselves are folded is `make lint`'s check (`tools/fold_solutions.py --check`), not repeated
here.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("fold_solutions_tool", ROOT / "tools" / "fold_solutions.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fold_solutions = _load()


def _md(text: str) -> dict:
    return {"cell_type": "markdown", "id": text[:8].strip(":{}") or "md", "metadata": {}, "source": text}


def _code(cell_id: str, tags: list[str] | None = None, hidden: bool = False) -> dict:
    meta: dict = {"tags": tags} if tags else {}
    if hidden:
        meta["jupyter"] = {"source_hidden": True}
    return {"cell_type": "code", "id": cell_id, "metadata": meta, "outputs": [], "source": "x = 1"}


def _notebook() -> dict:
    return {
        "cells": [
            _code("setup"),
            _md(":::{exercise}\n:label: ex-a\nDo it.\n:::"),
            _md(":::{solution-start} ex-a\n:::"),
            _code("sol-a1", ["solution"]),
            _code("sol-a2"),  # inside the markers, untagged: still a solution
            _md(":::{solution-end}\n:::"),
            _code("loose", ["solution"]),  # tagged, outside any markers
            _code("wrongly-folded", hidden=True),
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_fold_folds_exactly_the_solution_cells_and_is_idempotent():
    nb = _notebook()
    assert fold_solutions.solution_code_cells(nb) == [3, 4, 6]
    assert fold_solutions.fold(nb) == [3, 4, 6, 7]
    folded = [c["id"] for c in nb["cells"] if fold_solutions.is_folded(c)]
    assert folded == ["sol-a1", "sol-a2", "loose"]
    assert nb["cells"][7]["metadata"] == {}, "an unfolded cell keeps no empty 'jupyter' key"
    assert list(nb["cells"][3]["metadata"]) == ["tags", "jupyter"], "folding appends, the other keys keep their order"
    again = copy.deepcopy(nb)
    assert fold_solutions.fold(again) == [] and again == nb


def test_check_reports_and_changes_nothing_then_fold_fixes_it(tmp_path, capsys):
    path = tmp_path / "chapter.ipynb"
    text = json.dumps(_notebook(), indent=1) + "\n"
    path.write_text(text, encoding="utf-8")
    assert fold_solutions.main(["--check", str(path)]) == 1
    assert "sol-a1" in capsys.readouterr().out and path.read_text(encoding="utf-8") == text
    assert fold_solutions.main([str(path)]) == 0
    assert fold_solutions.main(["--check", str(path)]) == 0


def test_a_missing_notebook_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        fold_solutions.main([str(tmp_path / "nope.ipynb")])
    assert exit_info.value.code == 2
