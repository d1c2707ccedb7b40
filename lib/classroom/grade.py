"""Grade a class: run each submitted student notebook in a fresh kernel and record every exercise's verdict.

    python -m lib.grade submissions/ --chapter preliminaries --out grades.csv

(``lib/grade.py`` is that command: it only runs :func:`main` here; ``python -m lib.classroom.grade`` does the same.)

Each submission (a ``.ipynb`` file, or every ``.ipynb`` under a folder) is read, its chapter detected and its
cells executed top to bottom in a fresh Jupyter kernel inside its own bubblewrap sandbox (:mod:`lib.classroom.sandbox`:
a private copy of its notebook, read-only views of the library and the data, no network, its own process namespace,
limits on memory, processes and CPU time), with a time limit per cell (``--cell-timeout``), per notebook
(``--timeout``) and per call of the student's function by a checker (``--call-timeout``). Before the student's first
cell the sandbox runs one hidden cell (:func:`lib.classroom.answers.start_recording`) that wraps
:func:`lib.exercises.check`: every ``check(name, answer)`` the notebook calls runs the checker as usual (the student
sees the line) and records, as plain data on a tape, what the student's function returned on each of the checker's
inputs. The verdict is made here, outside the sandbox: the grader runs the book's checker again on the recorded values
(:func:`lib.classroom.answers.replay`). So a printed ✅, a patched ``numpy.allclose``, checker registry or verdict
function inside the kernel changes nothing, and there is no secret in the kernel to steal (the threat model is on
the instructor page, "Grading a class").

The CSV (``--out``, default ``grades.csv``) has one row per student and exercise (:data:`COLUMNS`), with the
verdict one of :data:`VERDICTS`:

- ``✅`` the checker accepted the answer; ``❌`` it did not (the message is the checker's hint, or "your function
  raised ...");
- ``⏳`` not solved yet: the starter's ``...`` is still there, or no cell calls ``check`` for the exercise (the
  message says which);
- ``time-out`` the student's function ran past ``--call-timeout``, the cell past ``--cell-timeout`` (an endless
  loop at the top of a cell), or the notebook past ``--timeout`` before reaching the exercise;
- ``error`` the exercise could not be graded: its cell raised (a syntax error, ``sys.exit()``, a NameError), the
  kernel died or its sandbox was killed inside the exercise ("crashed in this exercise", even after an earlier
  blank check), the checker itself could not run (⚠, an installation problem), or the whole submission could not
  be graded (not a notebook, another chapter, the book's own notebook with its solutions): then every exercise of
  the chapter gets a row that says why, and grading goes on with the next submission.

Then it prints a summary per exercise (how many solved, the most common wrong-answer messages) and saves it as a
figure beside the CSV (``grades.png``, :func:`lib.classroom.chart.plot_grade_summary`). Both files are written
atomically.

The student's name is the notebook's file name without ``.ipynb`` (or, for a file named after its chapter,
``alice/preliminaries.ipynb``, its folder's name); a ``"student"`` entry in the notebook's ``student_edition``
metadata (:mod:`lib.classroom.edition`) that disagrees is reported in the ``note`` column, never trusted. The
chapter is read from that metadata (:mod:`lib.classroom.student` writes it), else from the exercises the notebook's
``check`` calls name; ``--chapter`` sets the chapter being graded, and a notebook of another chapter gets error rows
that say so.

What the isolation covers: a submission sees neither the submissions folder, the CSV nor the teacher's files; its
processes die with its sandbox; the grader reads the submission into memory before running it, keeps each
submission's rows as soon as they are known (``--out`` with the suffix ``.results``) and builds the CSV from them.
Where bubblewrap is missing, the command refuses in one line unless told ``--unsandboxed`` (a child process with the
same limits and a guard that refuses network connections; every row's note says so). Before the first submission it
starts one empty sandbox (:func:`lib.classroom.sandbox.probe`): where that fails (a path bound into it that is
missing, a flag the kernel refuses), it says why in one line and grades nothing. A submission whose sandbox stopped
before its runner wrote anything is checked the same way: where a fresh empty sandbox fails too, the sandbox is to
blame, not the submission, and the command stops there (the rows kept so far stay in ``--out``'s ``.results``).

Source: the approach of nbgrader and otter-grader (execute each submission, collect per-question results),
with the book's own checkers (:mod:`lib.exercises`) in place of an authoring format.
"""

from __future__ import annotations

import argparse
import collections
import csv
import io
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import exercises
from ..exercises import core
from ..files import atomic_write, atomic_write_text
from . import answers, sandbox
from .chart import plot_grade_summary
from .edition import read_edition
from .execute import _error_of, _first_line, _Run

__all__ = [
    "COLUMNS",
    "VERDICTS",
    "Row",
    "find_submissions",
    "skipped_files",
    "detect_chapter",
    "student_name",
    "grade_submission",
    "grade",
    "summarize",
    "format_summary",
    "summary_figure",
    "write_csv",
    "read_csv",
    "main",
]

#: The columns of the CSV, in order. ``note`` says something about the whole submission (an older edition, no
#: edition metadata); ``file`` is the submitted file's path as given or found.
COLUMNS = ("student", "chapter", "exercise", "verdict", "message", "note", "file")
#: The verdicts, in the order the summary lists them.
VERDICTS = ("✅", "❌", "⏳", "time-out", "error")

_CHECK_CALL = re.compile(r"""\bcheck\(\s*(['"])(\w+)\1""")
_SOLUTION_MARKER = re.compile(r"^\s*(`{3,}|:{3,})\{solution(-start)?\}", re.M)


@dataclass(frozen=True)
class Row:
    """One row of the CSV: the verdict of one exercise of one student.

    Attributes:
        student: the student's name (see :func:`student_name`).
        chapter: the chapter graded (a file stem such as ``"preliminaries"``; empty when unknown).
        exercise: the exercise's name (empty for a submission whose chapter is unknown).
        verdict: one of :data:`VERDICTS`.
        message: the checker's line without its mark and name, or why the exercise could not be graded.
        note: a remark on the whole submission (an older edition, ...), or empty.
        file: the submitted file.
    """

    student: str
    chapter: str
    exercise: str
    verdict: str
    message: str
    note: str = ""
    file: str = ""


# --------------------------------------------------------------------------------------------
# Finding and reading submissions
# --------------------------------------------------------------------------------------------


def find_submissions(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The notebooks to grade: each file given (whatever its name), and every ``*.ipynb`` under each folder given.

    Hidden files and folders (``.ipynb_checkpoints``) are skipped; the result is sorted and has no duplicates.

    Args:
        paths: files and folders.

    Returns:
        The files, as paths.

    Raises:
        FileNotFoundError: a path does not exist (the message names it).
        ValueError: ``paths`` is empty.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no submissions given: pass notebook files or folders that hold them")
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            for nb in sorted(path.rglob("*.ipynb")):
                if nb.is_file() and not any(part.startswith(".") for part in nb.relative_to(path).parts):
                    found.append(nb)
        elif path.is_file():
            found.append(path)
        else:
            raise FileNotFoundError(f"submission {str(path)!r} does not exist (expected a notebook or a folder)")
    return sorted(dict.fromkeys(found))


def skipped_files(paths: Iterable[str | os.PathLike]) -> list[tuple[Path, str]]:
    """What :func:`find_submissions` leaves out of the folders given, each with its reason (every file accounted for).

    Args:
        paths: files and folders (as given to :func:`find_submissions`).

    Returns:
        ``[(path, reason), ...]``: hidden files and folders (a folder counts once), folders named ``*.ipynb``, files
        that are not ``.ipynb``.
    """
    skipped: list[tuple[Path, str]] = []
    for top in (Path(p) for p in paths):
        if not top.is_dir():
            continue
        for folder, dirs, files in os.walk(top):
            here = Path(folder)
            for d in sorted(dirs):
                if d.startswith("."):
                    n = sum(len(f) for _, _, f in os.walk(here / d))
                    skipped.append((here / d, f"not graded: a hidden folder (its name starts with a dot; {n} file(s))"))
                elif d.endswith(".ipynb"):
                    skipped.append((here / d, "not graded: a folder named like a notebook, not a notebook file"))
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for f in sorted(files):
                if f.startswith("."):
                    skipped.append((here / f, "not graded: a hidden file (its name starts with a dot)"))
                elif not f.endswith(".ipynb"):
                    skipped.append((here / f, "not graded: not a .ipynb file"))
    return skipped


def _read(path: Path) -> tuple[dict | None, str | None]:
    """``(notebook, None)`` for a readable notebook, ``(None, why not)`` otherwise. Never raises."""
    import nbformat

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None, "not a notebook: the file is not UTF-8 text"
    except OSError as err:
        return None, f"could not read the file ({err.strerror or err})"
    try:
        raw = json.loads(text)
    except ValueError as err:
        return None, f"not a notebook: invalid JSON ({err})"
    version = raw.get("nbformat") if isinstance(raw, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        return None, "not a notebook: the JSON has no 'nbformat' version"
    if version < 3 or version > 4:
        return None, f"nbformat {version} notebooks cannot be graded (only 3, upgraded, and 4)"
    if version == 4 and not isinstance(raw.get("cells"), list):
        return None, "not a notebook: the JSON has no 'cells' list"
    if version == 3 and not isinstance(raw.get("worksheets"), list):
        return None, "not a notebook: an nbformat 3 notebook without 'worksheets'"
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # broad on purpose: nbformat raises several kinds for a damaged notebook
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return None, f"not a valid notebook ({first[:200]})"
    return nb, None


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _chapters_with_exercises() -> list[str]:
    return list(dict.fromkeys(ex.chapter for ex in exercises.EXERCISES.values()))


def detect_chapter(nb: dict) -> tuple[str | None, str]:
    """The chapter a notebook belongs to, and how that was found.

    First the ``student_edition`` metadata that :mod:`lib.classroom.student` writes (its ``chapter``, or the stem
    of its ``source``: :func:`lib.classroom.edition.read_edition`), then the exercises that the notebook's
    ``check("name", ...)`` calls name (the chapter most of them belong to).

    Args:
        nb: the notebook (a dict, as read by ``json`` or ``nbformat``).

    Returns:
        ``(chapter, how)``: a chapter's file stem (None when neither says) and ``"metadata"``, ``"content"`` or
        ``"unknown"``.
    """
    edition = read_edition(nb)
    if edition is not None and edition.chapter is not None:
        return edition.chapter, "metadata"
    votes = collections.Counter(
        exercises.EXERCISES[name].chapter
        for cell in nb.get("cells", [])
        if cell.get("cell_type") == "code"
        for _, name in _CHECK_CALL.findall(_source(cell))
        if name in exercises.EXERCISES
    )
    if votes:
        return votes.most_common(1)[0][0], "content"
    return None, "unknown"


def student_name(path: str | os.PathLike, nb: dict | None = None, chapter: str | None = None) -> str:
    """The student's name: the file's stem (a ``"student"`` entry of the metadata is reported, never trusted).

    A file named after its chapter (``alice/preliminaries.ipynb``, one folder per student) is named after its
    folder.

    Args:
        path: the submitted file.
        nb: the notebook, when it could be read.
        chapter: the notebook's chapter, when known.

    Returns:
        The name (never empty).
    """
    path = Path(path)
    stem = path.name[: -len(".ipynb")] if path.name.endswith(".ipynb") else path.stem
    if stem in ({chapter} | set(_chapters_with_exercises())) and path.parent.name:
        return path.parent.name
    return stem or path.name


def _edition(nb: dict, chapter: str) -> tuple[str | None, str]:
    """``(problem, note)``: a problem stops grading (the book's own notebook); a note is kept on every row."""
    edition = read_edition(nb)
    if edition is None:
        has_solutions = any(
            "solution" in cell.get("metadata", {}).get("tags", [])
            or (cell.get("cell_type") == "markdown" and _SOLUTION_MARKER.search(_source(cell)))
            for cell in nb.get("cells", [])
        )
        if has_solutions:
            return (
                "this is the book's own notebook with its solutions, not the student edition (make student)",
                "",
            )
        return None, "no student-edition metadata (a notebook made by hand, or a very old edition)"
    notes = []
    current = [ex.name for ex in exercises.list_exercises(chapter)]
    if edition.exercises is not None:
        added = [n for n in current if n not in edition.exercises]
        if added:
            notes.append(f"older edition: it has no cell for {', '.join(added)}")
    elif not edition.records_chapter:
        notes.append("older edition (made before the edition recorded its chapter and exercises)")
    version = edition.book_version
    if version is not None and version != _book_version():
        notes.append(f"made from book version {version}, graded with {_book_version()}")
    return None, "; ".join(notes)


def _book_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("attention-book")
    except metadata.PackageNotFoundError:
        return "unknown"


# --------------------------------------------------------------------------------------------
# Inside the kernel
# --------------------------------------------------------------------------------------------


def _refuse_network() -> None:
    """Make ``socket.connect`` refuse addresses other than this machine's (a guard, not a sandbox)."""
    import ipaddress
    import socket

    def allowed(sock: socket.socket, address: Any) -> bool:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return True  # Unix sockets
        host = address[0] if isinstance(address, tuple) and address else address
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
        except ValueError:
            return False

    def guard(method: Any) -> Any:
        def call(self: socket.socket, address: Any) -> Any:
            if not allowed(self, address):
                raise OSError(f"network access is off while grading (lib.grade): cannot connect to {address!r}")
            return method(self, address)

        return call

    socket.socket.connect = guard(socket.socket.connect)
    socket.socket.connect_ex = guard(socket.socket.connect_ex)


# --------------------------------------------------------------------------------------------
# Executing one notebook
# --------------------------------------------------------------------------------------------


def _describe(index: int, cell: Any) -> str:
    first = next((ln.strip() for ln in _source(cell).splitlines() if ln.strip()), "")
    return f"cell {index + 1} ({_first_line(first, 50)!r})" if first else f"cell {index + 1}"


def _verdict_of_line(line: str, name: str) -> tuple[str, str]:
    """(verdict, message) from the line :func:`lib.exercises.check` printed."""
    mark, _, rest = line.partition(" ")
    prefix = f"{name}: "
    message = rest[len(prefix) :] if rest.startswith(prefix) else rest
    if mark == "✅":
        return "✅", message
    if mark == "⏳":
        return "⏳", message
    if mark == "❌":
        return ("time-out" if message.startswith("⏱") else "❌"), message
    return "error", message  # ⚠: the checker could not run


def _outcome(run: _Run, name: str, cell_timeout: float) -> tuple[str, str]:
    """(verdict, message) of exercise ``name`` after ``run``."""
    call = f'check("{name}", ...)'
    if run.setup_error:
        return "error", f"the grader could not prepare the kernel: {run.setup_error}"
    mine = [(i, r) for i, r in run.records if r.get("exercise") == name]
    starts = [k for k, (_, r) in enumerate(mine) if r.get("event") == "start"]
    if starts:
        index, start = mine[starts[-1]]
        end = next((r for _, r in mine[starts[-1] + 1 :] if r.get("event") == "end"), None)
        if end is not None:
            verdict, message = _verdict_of_line(answers.replay(name, start, end), name)
            later = [i for i in _calling(run, name) if index is not None and i > index and i not in run.ran]
            if run.stopped and run.stopped_at is not None and later and run.stopped_at <= later[0]:
                # the exercise's last check never ran: the run stopped after an earlier one (its verdict is no answer)
                where, last = (
                    _describe(run.stopped_at, run.cells[run.stopped_at]),
                    _describe(later[0], run.cells[later[0]]),
                )
                earlier = f"its earlier check in {_describe(index, run.cells[index])} gave {verdict}"
                if run.stopped.startswith("the notebook ran past"):
                    return "time-out", f"not reached: {run.stopped} at {where}, before {call} in {last} ({earlier})"
                return (
                    "error",
                    f"crashed in this exercise: {run.stopped} in {where}, before {call} in {last} ran ({earlier})",
                )
            return verdict, message
        if index is None:  # the sandbox stopped before it said which cell ran
            return "error", f"crashed in this exercise: {run.stopped} during {call}"
        where = _describe(index, run.cells[index])
        err = _error_of(run.cells[index])
        if err is not None and err.get("ename") == "KeyboardInterrupt":
            return "time-out", f"{call} in {where} ran past {_limit(run, index, cell_timeout)}"
        if run.stopped_at == index:
            return "error", f"crashed in this exercise: {run.stopped} during {call} in {where}"
        return "error", f"crashed in this exercise: {call} in {where} did not finish"
    calling = _calling(run, name)
    if not calling:
        return "⏳", f"no cell calls {call}: the exercise's cell was deleted or changed"
    for i in calling:
        err = _error_of(run.cells[i])
        if i in run.ran and err is not None:
            if err.get("ename") == "KeyboardInterrupt":
                return "time-out", f"{_describe(i, run.cells[i])} ran past {_limit(run, i, cell_timeout)}"
            # IPython names a cell's code after a hash ("1207717415.py, line 1"): keep only the line
            evalue = re.sub(r"\(\d+\.py, line (\d+)\)", r"(line \1)", _first_line(str(err.get("evalue", ""))))
            return "error", f"{_describe(i, run.cells[i])} raised {err.get('ename')}" + (
                f": {evalue}" if evalue else ""
            )
    first = calling[0]
    if run.stopped_at in calling and run.stopped_at in run.ran:
        where = _describe(run.stopped_at, run.cells[run.stopped_at])
        return "error", f"crashed in this exercise: {run.stopped} in {where}, before its check"
    if run.stopped_at is None and run.stopped:  # the sandbox stopped before it said where
        return "error", f"not reached: {run.stopped}"
    if run.stopped_at is not None and first >= run.stopped_at and first not in run.ran:
        verdict = "time-out" if run.stopped.startswith("the notebook ran past") else "error"
        return verdict, f"not reached: {run.stopped} at {_describe(run.stopped_at, run.cells[run.stopped_at])}"
    return "⏳", f"{call} in {_describe(first, run.cells[first])} did not run"


def _limit(run: _Run, index: int, cell_timeout: float) -> str:
    """The limit that interrupted cell ``index``: the cell's own, or the time the notebook had left."""
    if index in run.cut_by_deadline:
        return f"the notebook's limit of {run.timeout:g} s"
    return f"the cell's limit of {cell_timeout:g} s"


def _calling(run: _Run, name: str) -> list[int]:
    """The code cells that call ``check(name, ...)``, in order."""
    return [i for i, c in enumerate(run.cells) if c.get("cell_type") == "code" and name in _called(c)]


def _called(cell: Any) -> set[str]:
    return {name for _, name in _CHECK_CALL.findall(_source(cell))}


# --------------------------------------------------------------------------------------------
# Grading
# --------------------------------------------------------------------------------------------


def grade_submission(
    path: str | os.PathLike,
    chapter: str | None = None,
    *,
    cell_timeout: float = 120.0,
    timeout: float = 900.0,
    call_timeout: float | None = None,
    network: bool = False,
    kernel: str = "python3",
    sandboxed: bool = True,
) -> tuple[list[Row], float]:
    """Grade one submitted notebook: one :class:`Row` per exercise of its chapter (see the module docstring).

    Never raises for a bad submission: a file that is not a notebook, a notebook of another chapter or the book's
    own notebook gets rows with verdict ``"error"`` that say so, without running it.

    Args:
        path: the notebook.
        chapter: the chapter being graded; None: the notebook's own (:func:`detect_chapter`).
        cell_timeout: seconds one cell may run before it is interrupted.
        timeout: seconds the whole notebook may run; the cells after that are not run.
        call_timeout: seconds one call of the student's function by a checker may run; default
            ``min(lib.exercises.core.TIME_LIMIT_S, cell_timeout / 2)``.
        network: allow network connections from the kernel (only without the sandbox, which has no network).
        kernel: the Jupyter kernel's name.
        sandboxed: run it in bubblewrap (:mod:`lib.classroom.sandbox`); False: in a child process without it
            (every row's note says so).

    Returns:
        ``(rows, seconds)``: the rows in the registry's order of exercises, and the time the kernel ran (0 when
        the notebook was not run).

    Raises:
        ValueError: ``chapter`` has no exercises, or a time limit is not positive.
        lib.classroom.sandbox.SandboxError: the sandbox stopped before its runner wrote anything, and an empty
            sandbox cannot start either (the sandbox's fault, not the submission's).
    """
    chapters = _chapters_with_exercises()
    if chapter is not None and chapter not in chapters:
        raise ValueError(f"chapter must be one with exercises ({', '.join(chapters)}), got {chapter!r}")
    if cell_timeout <= 0 or timeout <= 0 or (call_timeout is not None and call_timeout <= 0):
        raise ValueError(
            f"time limits must be positive seconds, got cell_timeout={cell_timeout}, timeout={timeout}, "
            f"call_timeout={call_timeout}"
        )
    if call_timeout is None:
        call_timeout = min(core.TIME_LIMIT_S or cell_timeout / 2, cell_timeout / 2)
    path = Path(path)
    nb, problem = _read(path)
    upgraded = ""
    if nb is not None and nb.get("metadata", {}).get("orig_nbformat", 4) < 4:
        upgraded = f"upgraded from nbformat {nb.metadata.orig_nbformat} with nbformat's converter"
    found, how = detect_chapter(nb) if nb is not None else (None, "unknown")
    graded = chapter or found
    name = student_name(path, nb, graded)
    claimed = (read_edition(nb) if nb is not None else None) or None
    claim = (
        f"the notebook's metadata names the student {claimed.student[:60]!r}, not {name!r}"
        if claimed is not None and claimed.student is not None and claimed.student != name
        else ""
    )

    def rows(outcome: tuple[str, str] | dict[str, tuple[str, str]], note: str = "") -> list[Row]:
        """One row per exercise of the graded chapter (one row in all when the chapter is unknown)."""
        note = "; ".join(filter(None, [note, claim, upgraded]))
        if graded is None or graded not in chapters:
            return [Row(name, graded or "", "", *outcome, note, str(path))]  # type: ignore[arg-type]
        return [
            Row(name, graded, ex.name, *(outcome[ex.name] if isinstance(outcome, dict) else outcome), note, str(path))
            for ex in exercises.list_exercises(graded)
        ]

    if problem is not None:
        return rows(("error", problem)), 0.0
    if graded is None:
        why = "could not tell which chapter this notebook is (no edition metadata, no check calls): pass --chapter"
        return rows(("error", why)), 0.0
    if graded not in chapters:
        return rows(("error", f"the notebook's chapter {graded!r} has no exercises")), 0.0
    if found is not None and found != graded:
        return rows(("error", f"this is the notebook of chapter {found!r} (from its {how}), not {graded!r}")), 0.0
    problem, note = _edition(nb, graded)
    if problem is not None:
        return rows(("error", problem)), 0.0
    if not sandboxed:
        note = "; ".join(filter(None, [UNSANDBOXED, note]))
    limits = sandbox.Limits(cell_timeout=cell_timeout, timeout=timeout, call_timeout=call_timeout)
    result = sandbox.run_notebook(nb, limits, sandboxed=sandboxed, kernel=kernel, network=network)
    if result["run"] is None:  # the notebook killed its runner before the first cell ended, or no sandbox started
        why = sandbox.probe(sandboxed=sandboxed)
        if why is not None:
            result["cleanup"]()
            raise sandbox.SandboxError(f"{_runner(sandboxed)} stopped starting while grading {path}: {why}")
    try:
        run = _run_from_sandbox(nb, result, timeout)
    finally:
        result["cleanup"]()
    outcomes = {ex.name: _outcome(run, ex.name, cell_timeout) for ex in exercises.list_exercises(graded)}
    return rows(outcomes, note), run.seconds


#: The note on every row of a submission graded without the sandbox (``--unsandboxed``).
UNSANDBOXED = "graded without the sandbox (--unsandboxed)"


def _runner(sandboxed: bool) -> str:
    return "the sandbox" if sandboxed else "the runner (--unsandboxed)"


def _run_from_sandbox(nb: Any, result: dict[str, Any], timeout: float) -> _Run:
    """The :class:`_Run` of a sandboxed execution: its ``run.json`` (untrusted, read defensively) and its tape."""
    cells = [dict(c) for c in nb.cells]
    for c in cells:
        c["outputs"] = []
    summary = result["run"] or {}
    tape = answers.read_tape(result["tape"])

    def ints(key: str) -> set[int]:
        values = summary.get(key)
        return {v for v in values if isinstance(v, int) and 0 <= v < len(cells)} if isinstance(values, list) else set()

    code = result["exit"]
    why = "ran past its time limit and was stopped" if code is None else f"exited with status {code}"
    sandbox_stopped = (
        f"the submission's sandbox stopped before its run finished (it {why}: a notebook that killed its "
        "runner, ran out of memory or processes)"
    )
    if not summary:
        records = [(None, r) for _, r in tape]
        return _Run(cells, set(), sandbox_stopped, None, set(), records, None, result["seconds"], timeout)
    errors = summary.get("errors") if isinstance(summary.get("errors"), dict) else {}
    for key, err in errors.items():
        if key.isdigit() and int(key) < len(cells) and isinstance(err, dict):
            cells[int(key)]["outputs"] = [
                {"output_type": "error", "ename": str(err.get("ename", "")), "evalue": str(err.get("evalue", ""))}
            ]
    bounds = [
        (i, n)
        for i, n in (summary.get("tape_lines") or [])
        if isinstance(i, int) and isinstance(n, int) and 0 <= i < len(cells)
    ]
    records = []
    for line, record in tape:
        cell = next((i for i, n in bounds if line < n), None)
        records.append((cell, record))
    stopped_at = summary.get("stopped_at")
    stopped = summary.get("stopped")
    setup_error = summary.get("setup_error")
    if summary.get("finished") is not True:  # the progress written after each cell: the sandbox died in the next
        ran = ints("ran")
        stopped = sandbox_stopped
        stopped_at = next(
            (i for i, c in enumerate(cells) if i > max(ran, default=-1) and c.get("cell_type") == "code"), None
        )
        records = [(stopped_at if cell is None else cell, record) for cell, record in records]  # the dying cell's
    return _Run(
        cells,
        ints("ran"),
        str(stopped) if stopped else None,
        stopped_at if isinstance(stopped_at, int) and 0 <= stopped_at < len(cells) else None,
        ints("cut_by_deadline"),
        records,
        str(setup_error) if setup_error else None,
        result["seconds"],
        timeout,
    )


def grade(
    submissions: Iterable[str | os.PathLike],
    chapter: str | None = None,
    *,
    log: Any = None,
    results: str | os.PathLike | None = None,
    **limits: Any,
) -> list[Row]:
    """Grade every submission (:func:`find_submissions`) and return all rows, sorted by student.

    Two files that give the same student name are told apart by their folder (``groupA/alice``).

    Args:
        submissions: files and folders.
        chapter: the chapter being graded; None: each notebook's own.
        log: a text stream for one line per submission (name, time, verdict counts); None: silent.
        results: a folder that keeps each submission's rows as soon as they are known (one JSON file per
            submission, named after a digest of its bytes and the grading settings, written atomically and never
            changed); a rerun takes them from there and grades only the others. None: keep nothing.
        **limits: ``cell_timeout``, ``timeout``, ``call_timeout``, ``network``, ``kernel`` of
            :func:`grade_submission`.

    Returns:
        The rows, sorted by student, then file; within a submission in the registry's order of exercises.

    Raises:
        FileNotFoundError: a submission path does not exist.
        ValueError: no submissions, or a bad ``chapter`` or limit (see :func:`grade_submission`).
        lib.classroom.sandbox.SandboxError: the sandbox stopped starting (see :func:`grade_submission`); the rows
            of the submissions before are kept in ``results``.
    """
    paths = find_submissions(submissions)
    graded: list[list[Row]] = []
    for path, why in skipped_files(submissions):
        graded.append([Row(path.name, chapter or "", "", "error", why, "", str(path))])
    if results is not None:
        Path(results).mkdir(exist_ok=True)
    for path in paths:
        kept = _kept(results, path, chapter, limits)
        if kept is not None:
            rows, seconds = kept
        else:
            rows, seconds = grade_submission(path, chapter, **limits)
            _keep(results, path, chapter, limits, rows, seconds)
        graded.append(rows)
        if log is not None:
            counts = collections.Counter(r.verdict for r in rows)
            summary = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
            ran = "kept from an earlier run" if kept else (f"{seconds:.1f} s" if seconds else "not run")
            print(f"{rows[0].student}: {path} ({ran}): {summary}", file=log, flush=True)
    names = collections.Counter(rows[0].student for rows in graded)
    result = []
    for rows in graded:
        if names[rows[0].student] > 1:
            path = Path(rows[0].file)
            label = f"{path.parent.name}/{rows[0].student}" if path.parent.name else rows[0].student
            rows = [Row(**{**r.__dict__, "student": label}) for r in rows]
        result += rows
    order = {ex.name: k for k, ex in enumerate(exercises.EXERCISES.values())}
    return sorted(result, key=lambda r: (r.student, r.file, order.get(r.exercise, -1)))


def _result_file(results: Any, path: Path, chapter: str | None, limits: dict) -> Path | None:
    if results is None:
        return None
    import hashlib

    try:
        data = path.read_bytes()
    except OSError:
        return None
    settings = json.dumps([str(path), chapter, sorted((k, repr(v)) for k, v in limits.items())])
    key = hashlib.sha256(data + b"\0" + settings.encode()).hexdigest()[:32]
    return Path(results) / f"{key}.json"


def _kept(results: Any, path: Path, chapter: str | None, limits: dict) -> tuple[list[Row], float] | None:
    file = _result_file(results, path, chapter, limits)
    if file is None or not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        return [Row(*r) for r in data["rows"]], float(data["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep(results: Any, path: Path, chapter: str | None, limits: dict, rows: list[Row], seconds: float) -> None:
    file = _result_file(results, path, chapter, limits)
    if file is not None:
        rows_ = [[getattr(r, c) for c in Row.__dataclass_fields__] for r in rows]
        atomic_write_text(file, json.dumps({"rows": rows_, "seconds": seconds}, ensure_ascii=False))


# --------------------------------------------------------------------------------------------
# Output: CSV, summary, figure
# --------------------------------------------------------------------------------------------


def write_csv(rows: Sequence[Row], path: str | os.PathLike) -> Path:
    """Write the rows as CSV (a header of :data:`COLUMNS`, UTF-8), atomically.

    Args:
        rows: the rows.
        path: the CSV file; its folder must exist.

    Returns:
        ``path`` as a ``Path``.

    Raises:
        OSError: the folder is missing or not writable.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in rows:
        writer.writerow([_neutral(getattr(r, c)) for c in COLUMNS])
    return atomic_write_text(path, buf.getvalue())


def _neutral(cell: str) -> str:
    """A cell that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, a tab, a return) gets a ``'``."""
    return "'" + cell if cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


def read_csv(path: str | os.PathLike) -> list[Row]:
    """Read a CSV that :func:`write_csv` wrote.

    Args:
        path: the CSV file.

    Returns:
        Its rows.

    Raises:
        FileNotFoundError: there is no such file.
        ValueError: its header is not :data:`COLUMNS`.
    """
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = tuple(next(reader, ()))
        if header != COLUMNS:
            raise ValueError(f"{path}: the header must be {','.join(COLUMNS)}, got {','.join(header)}")
        return [Row(*line) for line in reader]


def summarize(rows: Sequence[Row], top: int = 3) -> list[dict[str, Any]]:
    """Per exercise: how many students got each verdict, and the most common wrong-answer messages.

    Rows without an exercise (a submission whose chapter is unknown) are left out.

    Args:
        rows: the rows of :func:`grade`.
        top: how many wrong-answer messages to keep per exercise.

    Returns:
        One dict per exercise, in the registry's order: ``{"chapter", "exercise", "students", "counts":
        {verdict: n for every verdict of VERDICTS}, "wrong": [(message, n), ...]}`` (most common first, ties in
        alphabetical order).
    """
    order = {ex.name: k for k, ex in enumerate(exercises.EXERCISES.values())}
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        if r.exercise:
            groups.setdefault((r.chapter, r.exercise), []).append(r)
    summary = []
    for (chapter, name), group in sorted(groups.items(), key=lambda kv: (order.get(kv[0][1], len(order)), kv[0])):
        counts = collections.Counter(r.verdict for r in group)
        wrong = collections.Counter(r.message for r in group if r.verdict == "❌")
        summary.append(
            {
                "chapter": chapter,
                "exercise": name,
                "students": len(group),
                "counts": {v: counts.get(v, 0) for v in VERDICTS},
                "wrong": sorted(wrong.items(), key=lambda kv: (-kv[1], kv[0]))[:top],
            }
        )
    return summary


def format_summary(summary: Sequence[dict[str, Any]], width: int = 100) -> str:
    """The summary of :func:`summarize` as a plain-text table, then the most common wrong answers.

    Args:
        summary: the output of :func:`summarize`.
        width: wrong-answer messages are cut to this many characters.

    Returns:
        The text (ends with a newline).
    """
    if not summary:
        return "no exercise graded\n"
    heads = ["exercise", "solved", "❌ wrong", "⏳ not yet", "time-out", "error"]
    table = [
        [
            s["exercise"],
            f"{s['counts']['✅']}/{s['students']}",
            *(str(s["counts"][v]) for v in ("❌", "⏳", "time-out", "error")),
        ]
        for s in summary
    ]
    widths = [max(len(h), *(len(row[k]) for row in table)) for k, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) if k == 0 else h.rjust(w) for k, (h, w) in enumerate(zip(heads, widths))).rstrip()]
    lines += [
        "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths))).rstrip()
        for row in table
    ]
    wrong = [s for s in summary if s["wrong"]]
    if wrong:
        lines += ["", "most common wrong answers:"]
        for s in wrong:
            for message, n in s["wrong"]:
                cut = message if len(message) <= width else message[: width - 1] + "…"
                lines.append(f"  {s['exercise']} ({n}×): {cut}")
    return "\n".join(lines) + "\n"


#: The words the figure uses for the verdicts (the default font has no ✅).
VERDICT_LABELS = {"✅": "solved", "❌": "wrong", "⏳": "not solved yet", "time-out": "time-out", "error": "error"}


def summary_figure(summary: Sequence[dict[str, Any]], title: str | None = None) -> Any:
    """The summary as a stacked bar chart (:func:`lib.classroom.chart.plot_grade_summary`), one bar per exercise.

    Args:
        summary: the output of :func:`summarize` (at least one exercise).
        title: the figure's title.

    Returns:
        A matplotlib Figure.

    Raises:
        ValueError: ``summary`` is empty.
    """
    if not summary:
        raise ValueError("summary is empty: no exercise was graded")
    return plot_grade_summary(
        [s["exercise"] for s in summary],
        {VERDICT_LABELS[v]: [s["counts"][v] for s in summary] for v in VERDICTS},
        title=title,
    )


def _save_figure(fig: Any, path: Path) -> Path:
    def write(f: Any) -> None:
        fig.savefig(f, format="png", dpi=100, metadata={"Software": None})

    return atomic_write(path, write)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m lib.grade",
        description="Grade submitted student notebooks: run each in a fresh kernel and write every exercise's "
        "verdict (✅ ❌ ⏳ time-out error) as CSV, a summary table and a figure. A bad submission gets rows that "
        "say why; grading goes on.",
    )
    p.add_argument("submissions", nargs="+", help="notebook files, or folders holding them (searched recursively)")
    p.add_argument("--chapter", help="the chapter graded (default: each notebook's own, from its metadata)")
    p.add_argument(
        "--out",
        default="grades.csv",
        help="the CSV to write (default grades.csv); the figure goes beside it with the suffix .png",
    )
    p.add_argument("--cell-timeout", type=_positive, default=120.0, help="seconds per cell (default 120)")
    p.add_argument("--timeout", type=_positive, default=900.0, help="seconds per notebook (default 900)")
    p.add_argument(
        "--call-timeout",
        type=_positive,
        default=None,
        help="seconds per call of a student's function by a checker (default: 20, at most half of --cell-timeout)",
    )
    p.add_argument(
        "--network",
        action="store_true",
        help="with --unsandboxed, allow the notebooks network connections (the sandbox never has a network)",
    )
    p.add_argument("--kernel", default="python3", help="the Jupyter kernel (default python3)")
    p.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run the notebooks without the bubblewrap sandbox (where bwrap is missing; only for notebooks you "
        "trust: a notebook can then read and change your files). Every row says so.",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Grade the submissions given on the command line (see the module docstring).

    Exit status: 0 when every submission got its rows (whatever their verdicts); 2 for a usage error (a missing
    path, an unknown chapter, a bad time limit, an output folder that does not exist), before anything runs, and
    for a sandbox that cannot start (bubblewrap missing, or an empty sandbox that fails: before the first
    submission, or after a submission whose sandbox stopped before its runner wrote anything).

    Args:
        argv: the command-line arguments (default ``sys.argv[1:]``).

    Returns:
        0.

    Raises:
        SystemExit: 2 for a usage error.
    """
    p = _parser()
    args = p.parse_args(argv)
    chapters = _chapters_with_exercises()
    if args.chapter is not None and args.chapter not in chapters:
        p.error(f"--chapter must be one of {', '.join(chapters)}, got {args.chapter!r}")
    out = Path(args.out)
    if out.suffix.lower() != ".csv":
        p.error(f"--out must name a .csv file, got {args.out!r}")
    if not out.parent.is_dir():
        p.error(f"--out: the folder {str(out.parent)!r} does not exist")
    try:
        paths = find_submissions(args.submissions)
    except FileNotFoundError as err:
        p.error(str(err))
    if not paths:
        p.error(f"no .ipynb files found in {', '.join(args.submissions)}")
    if not args.unsandboxed and sandbox.bwrap_path() is None:
        p.error(sandbox.MISSING)
    why = sandbox.probe(sandboxed=not args.unsandboxed)
    if why is not None:
        p.error(f"{_runner(not args.unsandboxed)} cannot start, so no submission was graded: {why}")
    os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")  # the kernel of this environment, not a user's
    try:
        rows = grade(
            args.submissions,
            args.chapter,
            log=sys.stderr,
            cell_timeout=args.cell_timeout,
            timeout=args.timeout,
            call_timeout=args.call_timeout,
            network=args.network,
            kernel=args.kernel,
            sandboxed=not args.unsandboxed,
            results=out.with_suffix(".results"),
        )
    except sandbox.SandboxError as err:
        p.error(f"{err}; the submissions graded before it are kept: run the command again to go on")
    write_csv(rows, out)
    summary = summarize(rows)
    print(format_summary(summary), end="")
    print(f"\n{len(paths)} submission(s), {len(rows)} row(s): {out}")
    if summary:
        chapters_graded = sorted({s["chapter"] for s in summary})
        figure = _save_figure(summary_figure(summary, title=", ".join(chapters_graded)), out.with_suffix(".png"))
        print(f"figure: {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
