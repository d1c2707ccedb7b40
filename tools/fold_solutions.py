"""Fold the chapters' solution code cells in JupyterLab: set ``metadata.jupyter.source_hidden`` on exactly those cells.

A solution written as code is a run of code cells tagged ``solution`` between a ``{solution-start}`` and a
``{solution-end}`` markdown cell (found as the student edition, ``lib.classroom.student``, finds them).
JupyterLab, Notebook 7 and VS Code show a cell whose metadata has ``"jupyter": {"source_hidden": true}`` folded (a
bar the reader clicks to unfold); Jupyter Book and nbval ignore that key, so the website, the stored outputs and
``make test`` are unchanged.
Markdown solutions (``:::{solution}`` with ``:class: dropdown``) need nothing: jupyterlab-myst renders them as a
closed ``<details>``.

The tool only edits cell metadata (no re-execution needed) and writes a notebook only when it changes; it also
unfolds a code cell that is not a solution, so that the folded cells are exactly the solutions. Run it after
adding or moving a solution; ``make lint`` runs ``--check``, which fails while a solution is not folded
(``tests/chapters/test_fold_solutions.py`` tests the tool itself).

Usage: ``python tools/fold_solutions.py [notebook ...]`` (default: ``chapters/*.ipynb``) folds in place;
``--check`` changes nothing, names the cells that are not as they should be and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from anywhere: `import lib` finds this checkout

# The one definition of where a solution starts and ends: the student edition's.
from lib.classroom.student import SOLUTION_END, SOLUTION_START, SOLUTION_TAG  # noqa: E402
from lib.files import atomic_write_text  # noqa: E402


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def solution_code_cells(nb: dict) -> list[int]:
    """Indices of the notebook's solution code cells: tagged ``solution``, or between solution-start and -end."""
    found, inside = [], False
    for i, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") == "markdown":
            if SOLUTION_START.match(_source(cell)):
                inside = True
            elif SOLUTION_END.match(_source(cell)):
                inside = False
        elif cell.get("cell_type") == "code" and (inside or SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])):
            found.append(i)
    return found


def is_folded(cell: dict) -> bool:
    return cell.get("metadata", {}).get("jupyter", {}).get("source_hidden") is True


def fold(nb: dict) -> list[int]:
    """Fold every solution code cell of ``nb`` and unfold every other code cell, in place; return the changed indices.

    Folding appends ``"jupyter": {"source_hidden": true}`` to the cell's metadata (the other keys keep their order);
    unfolding removes ``source_hidden`` (and ``jupyter`` when nothing else is left in it).
    """
    solutions, changed = set(solution_code_cells(nb)), []
    for i, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        meta = cell.setdefault("metadata", {})
        if i in solutions and not is_folded(cell):
            meta.setdefault("jupyter", {})["source_hidden"] = True
            changed.append(i)
        elif i not in solutions and "source_hidden" in meta.get("jupyter", {}):
            del meta["jupyter"]["source_hidden"]
            if not meta["jupyter"]:
                del meta["jupyter"]
            changed.append(i)
    return changed


def render(nb: dict) -> str:
    """The notebook as the repository stores notebooks (indent 1, UTF-8, trailing newline)."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: chapters/*.ipynb)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a cell is not as it should be")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    wrong = []
    for path in paths:
        nb = json.loads(path.read_text(encoding="utf-8"))
        changed = fold(nb)
        if not changed:
            continue
        ids = ", ".join(str(nb["cells"][i].get("id", f"cell {i}")) for i in changed)
        if args.check:
            wrong.append(f"{path.name} ({ids})")
        else:
            atomic_write_text(path, render(nb))
            print(f"fold_solutions: {path.name}: {len(changed)} cell(s) changed ({ids})")
    if wrong:
        print(
            f"fold_solutions: solution code cells not folded (or other cells folded) in {'; '.join(wrong)}: "
            "run `python tools/fold_solutions.py`"
        )
        return 1
    if args.check:
        print(f"fold_solutions: every solution code cell of {len(paths)} notebook(s) is folded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
