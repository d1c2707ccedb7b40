"""The book's synthetic class: submissions of chapter ``preliminaries`` that show every verdict of ``lib.grade``.

Usage (from the repository root)::

    .venv/bin/python -m lib.classroom.example            # grade the class, write chapters/images/grading_example.*
    .venv/bin/python -m lib.classroom.example --keep DIR  # also keep the submissions and the grades in DIR

It writes the submissions into a temporary folder (:func:`make_class`: the student edition of
:mod:`lib.classroom.student`, answered), grades them with ``python -m lib.grade class --chapter preliminaries`` and
the limits of :data:`LIMITS`, and copies the CSV, the printed summary and the figure to
``chapters/images/grading_example.{csv,txt,png}``, which the instructor page ("Grading a class") shows.
``tests/classroom/test_grade.py`` builds the same class with :func:`make_class` and checks the grades row by row and
against the committed CSV.

The students (each a file in ``class/``):

- ``ada``: every exercise solved (the solutions of the chapter filled into the starter cells);
- ``ben``: nothing solved (the student edition as it is handed out);
- ``cleo``: half solved; ``softmax_t`` divides the probabilities by T (❌), ``one_hot`` left as it is (⏳);
- ``dan``: a syntax error in the ``matvec`` cell, the naive softmax (overflows) and cleo's ``softmax_t`` mistake;
- ``eve``: an endless loop in ``matvec`` (the checker's call limit) and one at the top of the ``softmax`` cell
  (the cell's limit);
- ``finn``: ``matvec`` calls ``sys.exit()``; the ``softmax`` cell calls it at its top;
- ``gus`` (``gus/preliminaries.ipynb``, one folder per student): everything solved but the ``one_hot`` cell deleted;
- ``hana``: the student edition of another chapter (``positional_encoding``);
- ``ivan``: a damaged file (the JSON cut in the middle);
- ``jo_final_v2``: a renamed file of an older edition (metadata without chapter or exercises), all solved;
- ``kim``: the book's own chapter notebook, with its solutions.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..files import atomic_write_text
from .edition import EDITION_KEY, edition_metadata
from .grade import format_summary, read_csv, summarize
from .student import ROOT, book_version, make_student_notebook

__all__ = ["CHAPTER", "EXAMPLE", "LIMITS", "make_class", "grade_command", "run_example", "summary_text", "main"]

#: The chapter the synthetic class hands in.
CHAPTER = "preliminaries"
OTHER_CHAPTER = "positional_encoding"
IMAGES = ROOT / "chapters" / "images"
#: The instructor page's example: ``.csv``, ``.txt`` (the printed summary) and ``.png`` beside this stem.
EXAMPLE = IMAGES / "grading_example"
#: The limits the example is graded with: short, so that the endless loops cost seconds.
LIMITS = {"cell_timeout": 10, "timeout": 300, "call_timeout": 2}

# The students' own code (the wrong answers are the mistakes the checkers' hints name).
NAIVE_SOFTMAX = """def softmax(z):
    e = np.exp(z)
    return e / e.sum()


check("softmax_stable", softmax)
"""
PROBABILITIES_DIVIDED = """def softmax_t(z, T):
    e = np.exp(z - z.max())
    return e / e.sum() / T


check("softmax_temperature", softmax_t)
"""
SYNTAX_ERROR = """def matvec(W, x)
    return [sum(w * v for w, v in zip(row, x)) for row in W]


check("matvec", matvec)
"""
ENDLESS_FUNCTION = """def matvec(W, x):
    result = []
    i = 0
    while i < len(W):
        result.append(sum(w * v for w, v in zip(W[i], x)))
    return result


check("matvec", matvec)
"""
ENDLESS_CELL = """while True:
    pass


def softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


check("softmax_stable", softmax)
"""
EXIT_FUNCTION = """import sys


def matvec(W, x):
    if len(W[0]) != len(x):
        sys.exit("wrong sizes")
    return [sum(w * v for w, v in zip(row, x)) for row in W]


check("matvec", matvec)
"""
EXIT_CELL = """import sys

sys.exit()


def softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


check("softmax_stable", softmax)
"""


def _edition(chapter: str) -> tuple[dict, dict[str, str]]:
    """The student notebook of ``chapter`` and ``{exercise: its solution's code}``, from ``chapters/``."""
    source = ROOT / "chapters" / f"{chapter}.ipynb"
    nb = json.loads(source.read_text(encoding="utf-8"))
    edition, report = make_student_notebook(nb)
    edition["metadata"][EDITION_KEY] = edition_metadata(
        chapter, f"chapters/{chapter}.ipynb", book_version(ROOT), report.exercises
    )
    solutions = {s.name: "\n\n".join(s.code) for s in report.starters if s.name}
    return edition, solutions


def _starter_index(nb: dict, name: str) -> int:
    for i, cell in enumerate(nb["cells"]):
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if "exercise-starter" in cell.get("metadata", {}).get("tags", []) and f'check("{name}"' in src:
            return i
    raise ValueError(f"no starter cell for {name!r}")


def _answer(nb: dict, answers: dict[str, str | None]) -> dict:
    """A copy of ``nb`` with the starter cell of each exercise replaced by ``answers[name]`` (None: deleted)."""
    nb = copy.deepcopy(nb)
    for name, code in answers.items():
        i = _starter_index(nb, name)
        if code is None:
            del nb["cells"][i]
        else:
            nb["cells"][i]["source"] = code
    return nb


def _write(path: Path, nb: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def make_class(folder: str | os.PathLike) -> list[Path]:
    """Write the synthetic class's submissions into ``folder`` (see the module docstring).

    Args:
        folder: where to write them (made if missing).

    Returns:
        The paths of the eleven submissions, sorted.
    """
    folder = Path(folder)
    edition, sol = _edition(CHAPTER)
    other, _ = _edition(OTHER_CHAPTER)
    names = list(sol)  # matvec, softmax_stable, softmax_temperature, one_hot
    older = _answer(edition, sol)
    older["metadata"][EDITION_KEY] = {"source": f"chapters/{CHAPTER}.ipynb"}  # what the first editions wrote
    notebooks = {
        "ada.ipynb": _answer(edition, sol),
        "ben.ipynb": edition,
        "cleo.ipynb": _answer(
            edition,
            {names[0]: sol[names[0]], names[1]: sol[names[1]], "softmax_temperature": PROBABILITIES_DIVIDED},
        ),
        "dan.ipynb": _answer(
            edition,
            {
                "matvec": SYNTAX_ERROR,
                "softmax_stable": NAIVE_SOFTMAX,
                "softmax_temperature": PROBABILITIES_DIVIDED,
                "one_hot": sol["one_hot"],
            },
        ),
        "eve.ipynb": _answer(edition, {**sol, "matvec": ENDLESS_FUNCTION, "softmax_stable": ENDLESS_CELL}),
        "finn.ipynb": _answer(edition, {**sol, "matvec": EXIT_FUNCTION, "softmax_stable": EXIT_CELL}),
        "gus/preliminaries.ipynb": _answer(edition, {**sol, "one_hot": None}),
        "hana.ipynb": other,
        "jo_final_v2.ipynb": older,
        "kim.ipynb": json.loads((ROOT / "chapters" / f"{CHAPTER}.ipynb").read_text(encoding="utf-8")),
    }
    paths = []
    for name, nb in notebooks.items():
        _write(folder / name, nb)
        paths.append(folder / name)
    damaged = folder / "ivan.ipynb"
    text = json.dumps(_answer(edition, sol), indent=1, ensure_ascii=False)
    damaged.write_text(text[: len(text) // 2], encoding="utf-8")
    paths.append(damaged)
    return sorted(paths)


def grade_command(out_csv: str, submissions: str = "class") -> list[str]:
    """The command that grades the class: ``python -m lib.grade`` with the limits of :data:`LIMITS`.

    Args:
        out_csv: the CSV the grader writes (the figure goes beside it).
        submissions: the folder of submissions, relative to where the command runs.

    Returns:
        The command as an argument list, to run in the folder that holds ``submissions``.
    """
    return [
        sys.executable,
        "-m",
        "lib.grade",
        submissions,
        "--chapter",
        CHAPTER,
        "--out",
        out_csv,
        "--cell-timeout",
        str(LIMITS["cell_timeout"]),
        "--timeout",
        str(LIMITS["timeout"]),
        "--call-timeout",
        str(LIMITS["call_timeout"]),
    ]


def run_example(workdir: str | os.PathLike) -> subprocess.CompletedProcess:
    """Make the class in ``workdir/class`` and grade it into ``workdir/grades.csv`` (and ``.png``).

    Args:
        workdir: an existing folder.

    Returns:
        The finished grading command, its output captured as text.
    """
    workdir = Path(workdir)
    make_class(workdir / "class")
    env = dict(os.environ, JUPYTER_PREFER_ENV_PATH="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        grade_command("grades.csv"), cwd=workdir, env=env, capture_output=True, text=True, encoding="utf-8"
    )


def summary_text(csv_path: str | os.PathLike) -> str:
    """The summary that ``python -m lib.grade`` prints, computed again from its CSV.

    Args:
        csv_path: the CSV the grader wrote.

    Returns:
        The summary's text.
    """
    return format_summary(summarize(read_csv(csv_path)))


def main(argv: list[str] | None = None) -> int:
    """Grade the synthetic class and write the instructor page's example (see the module docstring).

    Args:
        argv: the command-line arguments (default ``sys.argv[1:]``).

    Returns:
        0, or 1 when the grader failed (its output is printed).
    """
    parser = argparse.ArgumentParser(prog="python -m lib.classroom.example", description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="a folder to keep the submissions and grades in (default: a temporary one)")
    args = parser.parse_args(argv)
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="grading-example-"))
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    result = run_example(workdir)
    print(result.stderr, file=sys.stderr, end="")
    print(result.stdout, end="")
    if result.returncode != 0:
        print(f"lib.classroom.example: lib.grade failed with exit status {result.returncode}", file=sys.stderr)
        return 1
    IMAGES.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(workdir / "grades.csv", EXAMPLE.with_suffix(".csv"))
    shutil.copyfile(workdir / "grades.png", EXAMPLE.with_suffix(".png"))
    atomic_write_text(EXAMPLE.with_suffix(".txt"), summary_text(EXAMPLE.with_suffix(".csv")))
    print(f"wrote {EXAMPLE}.csv, .txt and .png in {time.perf_counter() - start:.0f} s")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
