"""Write the student edition of the book: every chapter notebook without its solutions, with starter cells.

Usage (from the repository root; ``make student`` calls it)::

    .venv/bin/python -m lib.classroom.student [--out student] [chapter ...]

``chapter`` is a notebook's stem (``positional_encoding``) or path (``chapters/positional_encoding.ipynb``);
without any, every chapter of ``_toc.yml`` that has exercises is written (deeper dives and reference pages
have none: students read them on the website). For each one, ``<out>/<chapter>.ipynb``:

1. loses every solution: the cells tagged ``solution``, every cell from a ``{solution-start}`` marker through
   its ``{solution-end}`` (markers included), and every ``{solution}`` directive block inside a markdown cell
   (a cell that held nothing else is dropped);
2. gets, in place of each removed solution that has code, ONE starter code cell tagged ``exercise-starter``,
   derived from the solution's code with :mod:`ast` (:func:`starter_from_solution`): the solution's top-level
   imports, the signature and docstring of each top-level ``def`` with the body replaced by
   ``...  # your code here``, ``name = ...  # your answer here`` for each other name that the solution's last
   ``check(...)`` call uses, and that call without ``assert``. No line of the solution's body, and none of its
   comments, is copied. Run as it is, the cell prints ``⏳ <name>: not solved yet ...`` (see
   :func:`lib.exercises.check`) and the notebook runs on;
3. gets a short markdown note after its title cell that says this is the student edition;
4. has no outputs, no execution counts and no widget state: students run it themselves.
5. carries ``metadata["student_edition"]`` (:func:`lib.classroom.edition.edition_metadata`): its chapter, source,
   the book's version and the names of its exercises, which ``python -m lib.grade`` reads to recognise a renamed
   file or an older edition.

The student notebooks need nothing copied beside them: ``lib`` is installed into the environment
(``pip install -e .``), the shipped models are found from ``lib``'s own location (``lib.checkpoint``) and
Multi30k through ``MULTI30K_DIR`` or the user cache (``lib.data``), so ``<out>/`` runs like ``chapters/``.

The tool also reports names that a solution defines and a later, non-solution code cell of the same chapter
uses: in the student edition those cells would see the starter's ``...`` instead of the solution.
"""

from __future__ import annotations

import argparse
import ast
import copy
import io
import json
import re
import symtable
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from .edition import EDITION_KEY, edition_metadata

__all__ = [
    "STARTER_TAG",
    "SOLUTION_TAG",
    "SOLUTION_START",
    "SOLUTION_END",
    "STUDENT_NOTE",
    "BODY_PLACEHOLDER",
    "ANSWER_PLACEHOLDER",
    "starter_from_solution",
    "exercise_name",
    "strip_solution_directives",
    "Solution",
    "Report",
    "make_student_notebook",
    "toc_notebooks",
    "book_version",
    "write_student_edition",
    "main",
]

#: The repository's root: the chapters, ``_toc.yml`` and ``pyproject.toml`` of this checkout.
ROOT = Path(__file__).resolve().parents[2]

#: The tag of the starter code cell that replaces a solution.
STARTER_TAG = "exercise-starter"
#: The tag of a chapter's solution cells.
SOLUTION_TAG = "solution"

#: The markdown cell put after the title of every student notebook.
STUDENT_NOTE = (
    "> **Student edition.** The solutions of this chapter's exercises are removed. Each exercise at the end is\n"
    "> followed by a starter code cell: replace every `...` with your own code and run the cell. It prints\n"
    "> ⏳ while the exercise is not solved yet, ✅ when your answer is correct, and ❌ with a hint when it is not\n"
    "> right yet. Run the chapter's cells from the top first: the exercises use its imports and variables."
)

#: What replaces the body of a solution's function in its starter cell.
BODY_PLACEHOLDER = "...  # your code here"
#: What replaces the value of an answer in its starter cell.
ANSWER_PLACEHOLDER = "...  # your answer here"
_PROG = "python -m lib.classroom.student"

#: A markdown cell that opens a solution written as cells (its label in the group ``label``); the one definition of
#: where a solution starts, which ``tools/fold_solutions.py`` shares.
SOLUTION_START = re.compile(r"^\s*(`{3,}|:{3,})\{solution-start\}[ \t]*(?P<label>\S*)")
#: The markdown cell that closes it.
SOLUTION_END = re.compile(r"^\s*(`{3,}|:{3,})\{solution-end\}")
_SOLUTION_DIRECTIVE = re.compile(r"^[ \t]*(?P<fence>`{3,}|:{3,})\{solution\}")
_HAS_SOLUTION_DIRECTIVE = re.compile(r"^[ \t]*(`{3,}|:{3,})\{solution\}", re.M)


# --------------------------------------------------------------------------------------------
# The starter cell of one solution
# --------------------------------------------------------------------------------------------


def _to_python(code: str) -> str:
    """The cell's code as plain Python: IPython magics (``%time``, ``!ls``) become function calls."""
    try:
        ast.parse(code)
        return code
    except SyntaxError:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(code)


def _offset(lines: list[str], lineno: int, col: int) -> int:
    """Character offset of (1-based line, 0-based UTF-8 byte column) in the source split into ``lines``."""
    line = lines[lineno - 1]
    return sum(len(x) for x in lines[: lineno - 1]) + len(line.encode("utf-8")[:col].decode("utf-8"))


def _header(source: str, node: ast.AST) -> str:
    """The decorators and the ``def``/``class`` line(s) of ``node``, verbatim up to the colon that ends them.

    The text starts at the node's column, so that a multi-line signature keeps its own indentation.
    """
    lines = source.splitlines(keepends=True)
    first = node.decorator_list[0] if node.decorator_list else node
    text = source[_offset(lines, first.lineno, node.col_offset) :]  # a decorator's '@' is at the def's column
    depth, seen_keyword = 0, False
    readline = io.StringIO(text).readline
    for tok in tokenize.generate_tokens(readline):
        if tok.type == tokenize.NAME and tok.string in ("def", "class"):
            seen_keyword = True
        elif tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.OP and tok.string == ":" and depth == 0 and seen_keyword:
            end_row, end_col = tok.end
            text_lines = text.splitlines(keepends=True)
            return "".join(text_lines[: end_row - 1]) + text_lines[end_row - 1][:end_col]
    raise ValueError(f"could not find the end of the header of {getattr(node, 'name', node)!r}")


def _docstring(source: str, node: ast.AST) -> str | None:
    """The docstring statement of a def/class, verbatim and indented as in the source, or None."""
    if ast.get_docstring(node, clean=False) is None:
        return None
    statement = node.body[0]
    return " " * statement.col_offset + ast.get_source_segment(source, statement)


def _stub(source: str, node: ast.AST) -> str:
    """A def or class with its header (and docstring) kept and its body replaced by the placeholder."""
    indent = " " * node.body[0].col_offset if node.body[0].lineno > node.lineno else " " * (node.col_offset + 4)
    parts = [" " * node.col_offset + _header(source, node)]
    doc = _docstring(source, node)
    if doc is not None:
        parts.append(doc)
    if isinstance(node, ast.ClassDef):
        methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        parts += [_stub(source, m) for m in methods]
        if not methods and doc is None:
            parts.append(indent + BODY_PLACEHOLDER)
    else:
        parts.append(indent + BODY_PLACEHOLDER)
    return "\n".join(parts)


def _is_check_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "check") or (
        isinstance(func, ast.Attribute) and func.attr == "check"
    )


def _last_check_call(tree: ast.Module) -> ast.Call | None:
    calls = [n for n in ast.walk(tree) if _is_check_call(n)]
    return max(calls, key=lambda n: (n.lineno, n.col_offset)) if calls else None


def exercise_name(call: ast.Call) -> str | None:
    """The exercise name of a ``check("name", answer)`` call.

    Args:
        call: the call's node, as :mod:`ast` parses it.

    Returns:
        The name, or None when the first argument is not a string literal.
    """
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def _bound_names(node: ast.AST) -> list[str]:
    """Names a top-level statement binds (assignment, for, with, walrus, ...), in source order."""
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id not in names:
            names.append(sub.id)
    return names


def starter_from_solution(code: str, label: str | None = None) -> str | None:
    """The starter cell for a solution's code: what to fill in, and the solution's check call without ``assert``.

    Kept: top-level ``import`` statements; each top-level ``def`` (and ``class``) with its decorators, signature
    and docstring, its body replaced by ``...  # your code here``; ``name = ...  # your answer here`` for every
    other name the last ``check(...)`` call uses and the solution binds; the check call itself, ending in ``;``
    (Jupyter shows no ``False`` under the ⏳ line). When the call's
    answer is an expression rather than a name, it becomes ``answer = ...`` and ``check("<name>", answer)``,
    so that the expression does not give the answer away. Everything else (the bodies, helper statements,
    prints, asserts, comments) is dropped.

    Args:
        code: the solution's code (one or several cells joined by blank lines); IPython magics are allowed.
        label: the exercise's label, named in the starter's first comment line (optional).

    Returns:
        The starter's source, or None when the solution has neither a ``def`` nor a ``check`` call.

    Raises:
        SyntaxError: the code is not valid Python.
    """
    source = _to_python(code)
    tree = ast.parse(source)
    call = _last_check_call(tree)
    answer_names: set[str] = set()
    check_line = None
    if call is not None:
        answer_args = list(call.args[1:]) + [kw.value for kw in call.keywords]
        if all(isinstance(a, (ast.Name, ast.Constant)) for a in answer_args):
            check_line = ast.get_source_segment(source, call)
            answer_names = {a.id for a in answer_args if isinstance(a, ast.Name)}
        else:  # check("x", f(3)): the expression would show the answer
            name_arg = ast.get_source_segment(source, call.args[0]) if call.args else '""'
            check_line = f"{ast.get_source_segment(source, call.func)}({name_arg}, answer)"
            answer_names = {"answer"}

    imports, blocks, emitted = [], [], set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(ast.get_source_segment(source, node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            blocks.append(_stub(source, node))
            emitted.add(node.name)
        else:
            for name in _bound_names(node):
                if name in answer_names and name not in emitted:
                    blocks.append(f"{name} = {ANSWER_PLACEHOLDER}")
                    emitted.add(name)
    if "answer" in answer_names and "answer" not in emitted and check_line and check_line.endswith(", answer)"):
        blocks.append(f"answer = {ANSWER_PLACEHOLDER}")
        emitted.add("answer")
    if not blocks and check_line is None:
        return None

    # Layout as in PEP 8: two blank lines around defs and classes, none between plain assignments.
    what = f"Exercise {label}" if label else "Exercise"
    pieces = [(f"# {what}: replace each ... with your code, then run this cell.", False)]
    pieces += [(line, False) for line in imports]
    pieces += [(block, not block.startswith(tuple(f"{name} = " for name in emitted))) for block in blocks]
    if check_line is not None:
        pieces.append((check_line + ";", False))  # `;`: the cell shows ⏳, not also check's return value (False)
    text, previous = pieces[0][0], False
    for k, (piece, is_def) in enumerate(pieces[1:], start=1):
        after_imports = bool(imports) and k == len(imports) + 1
        text += ("\n\n\n" if k > 1 and (is_def or previous or after_imports) else "\n") + piece
        previous = is_def
    return text + "\n"


# --------------------------------------------------------------------------------------------
# Markdown: {solution} directive blocks
# --------------------------------------------------------------------------------------------


def strip_solution_directives(markdown: str) -> str:
    """``markdown`` without its ``{solution}`` directive blocks (colon or backtick fenced).

    A block ends at the first line made only of its fence character, at least as long as its opening fence;
    code fences of the other character inside it are skipped over. Runs of blank lines left behind shrink to one.

    Args:
        markdown: the text of a markdown cell.

    Returns:
        The text without the blocks ("" when nothing else is left).

    Raises:
        ValueError: a ``{solution}`` block is never closed.
    """
    lines = markdown.splitlines(keepends=True)
    kept, i = [], 0
    while i < len(lines):
        match = _SOLUTION_DIRECTIVE.match(lines[i])
        if not match:
            kept.append(lines[i])
            i += 1
            continue
        fence = match.group("fence")
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                break
            j += 1
        else:
            raise ValueError(f"a {{solution}} block opened with {fence!r} is never closed: {lines[i].strip()!r}")
        i = j + 1
    text = re.sub(r"\n[ \t]*(\n[ \t]*)+\n", "\n\n", "".join(kept))
    return text.strip("\n") if text.strip() else ""


# --------------------------------------------------------------------------------------------
# One notebook
# --------------------------------------------------------------------------------------------


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


@dataclass
class Solution:
    """One removed solution.

    Attributes:
        label: its label (the text after ``{solution-start}``); None for tagged cells outside a marker block.
        code: the source of its code cells, in order.
        starter: the starter cell made from the code (:func:`starter_from_solution`), or None.
        name: the exercise name of its last ``check`` call, or None.
    """

    label: str | None
    code: list[str] = field(default_factory=list)
    starter: str | None = None
    name: str | None = None


@dataclass
class Report:
    """What :func:`make_student_notebook` did to one notebook.

    Attributes:
        solutions: the removed solutions, in order.
        removed_cells: how many cells were removed (solution cells and their markers).
        stripped_directives: how many markdown cells lost a ``{solution}`` directive block.
        later_uses: ``(source cell index, names)`` for each non-solution code cell that uses names only a solution
            binds (in the student edition it sees the starter's placeholder).
    """

    solutions: list[Solution] = field(default_factory=list)
    removed_cells: int = 0
    stripped_directives: int = 0
    later_uses: list[tuple[int, list[str]]] = field(default_factory=list)

    @property
    def starters(self) -> list[Solution]:
        """The solutions that got a starter cell.

        Returns:
            Those of :attr:`solutions` whose ``starter`` is not None, in order.
        """
        return [s for s in self.solutions if s.starter is not None]

    @property
    def exercises(self) -> list[str]:
        """The names of the exercises that have a starter cell (what the edition metadata records).

        Returns:
            The names, in the notebook's order.
        """
        return [s.name for s in self.starters if s.name]


def _code_cell(source: str, cell_id: str, tags: list[str]) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cell_id,
        "metadata": {"tags": tags},
        "outputs": [],
        "source": source,
    }


def _markdown_cell(source: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {"tags": ["student-edition"]}, "source": source}


def _unique_id(wanted: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]", "-", wanted)[:56] or "cell"
    cell_id, n = base, 1
    while cell_id in used:
        n += 1
        cell_id = f"{base}-{n}"
    used.add(cell_id)
    return cell_id


def _names_bound_at_top(code: str) -> set[str]:
    """Names a cell binds at module level (defs, classes, assignments, loops, imports)."""
    try:
        tree = ast.parse(_to_python(code))
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            names |= set(_bound_names(node))
    return names


def _globals_read(code: str) -> set[str]:
    """Module-level names a cell reads without binding them itself (found with :mod:`symtable`)."""
    try:
        top = symtable.symtable(_to_python(code), "<cell>", "exec")
    except SyntaxError:
        return set()
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    read = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    tables = list(top.get_children())
    while tables:
        table = tables.pop()
        read |= {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
        tables += table.get_children()
    return read - bound


def _later_uses(cells: list[dict], solution_cells: dict[int, int]) -> list[tuple[int, list[str]]]:
    """Non-solution code cells that use a name only a solution binds: (cell index in the source, names).

    ``solution_cells`` maps the index of each removed code cell to its solution number. Imports of a solution
    stay in the starter and do not count; names that a non-solution cell binds first do not count either.
    """
    from_solutions: dict[str, int] = {}
    bound_outside: set[str] = set()
    found = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        code = _source(cell)
        if i in solution_cells:
            try:
                tree = ast.parse(_to_python(code))
            except SyntaxError:
                continue
            imported = {
                (a.asname or a.name).split(".")[0]
                for n in tree.body
                if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names
            }
            for name in _names_bound_at_top(code) - imported:
                from_solutions.setdefault(name, i)
            continue
        used = sorted(n for n in _globals_read(code) if n in from_solutions and n not in bound_outside)
        if used:
            found.append((i, used))
        bound_outside |= _names_bound_at_top(code)
    return found


def make_student_notebook(nb: dict) -> tuple[dict, Report]:
    """The student edition of a notebook (a new dict) and a :class:`Report` of what was removed and added.

    Args:
        nb: the chapter's notebook (a dict, as read by ``json``); not changed.

    Returns:
        ``(student notebook, report)``; the notebook has no edition metadata yet (:func:`write_student_edition`
        adds it).

    Raises:
        ValueError: a ``{solution-start}`` without its ``{solution-end}`` (or the reverse), or an unclosed
            ``{solution}`` directive.
    """
    cells = nb["cells"]
    report = Report()
    used_ids = {c["id"] for c in cells if "id" in c}
    out: list[dict] = []
    solution_code_cells: dict[int, int] = {}

    def finish(solution: Solution) -> None:
        if solution.code:
            joined = "\n\n".join(solution.code)
            try:
                solution.starter = starter_from_solution(joined, solution.label)
                call = _last_check_call(ast.parse(_to_python(joined)))
            except SyntaxError as err:
                raise ValueError(
                    f"the solution {solution.label or '(tagged cells)'} is not valid Python: {err}"
                ) from err
            solution.name = exercise_name(call) if call is not None else None
        report.solutions.append(solution)
        if solution.starter is not None:
            wanted = f"starter-{solution.label or solution.name or len(report.solutions)}"
            out.append(_code_cell(solution.starter, _unique_id(wanted, used_ids), [STARTER_TAG]))

    block: Solution | None = None  # inside a solution-start ... solution-end block
    loose: Solution | None = None  # a run of tagged solution cells outside a block
    for i, cell in enumerate(cells):
        src = _source(cell)
        is_md = cell.get("cell_type") == "markdown"
        start = SOLUTION_START.match(src) if is_md else None
        end = SOLUTION_END.match(src) if is_md else None
        if block is not None:
            report.removed_cells += 1
            if end:
                finish(block)
                block = None
            elif start:
                raise ValueError(
                    f"cell {i}: solution-start {start.group('label')!r} inside the solution block "
                    f"{block.label!r}, which has no solution-end"
                )
            elif cell.get("cell_type") == "code":
                block.code.append(src)
                solution_code_cells[i] = len(report.solutions)
            continue
        if end:
            raise ValueError(f"cell {i}: a solution-end without its solution-start")
        if SOLUTION_TAG in _tags(cell):
            report.removed_cells += 1
            if loose is None:
                loose = Solution(label=None)
            if cell.get("cell_type") == "code":
                loose.code.append(src)
                solution_code_cells[i] = len(report.solutions)
            continue
        if loose is not None:
            finish(loose)
            loose = None
        if start:
            block = Solution(label=start.group("label") or None)
            report.removed_cells += 1
            continue
        cell = copy.deepcopy(cell)
        if is_md and _HAS_SOLUTION_DIRECTIVE.search(src):
            stripped = strip_solution_directives(src)
            report.stripped_directives += 1
            if not stripped:
                report.removed_cells += 1
                continue
            cell["source"] = stripped
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
        out.append(cell)
    if block is not None:
        raise ValueError(f"solution-start {block.label!r} has no solution-end")
    if loose is not None:
        finish(loose)

    report.later_uses = _later_uses(cells, solution_code_cells)

    title = next(
        (k for k, c in enumerate(out) if c.get("cell_type") == "markdown" and _source(c).lstrip().startswith("# ")), -1
    )
    out.insert(title + 1, _markdown_cell(STUDENT_NOTE, _unique_id("student-edition-note", used_ids)))

    student = {k: copy.deepcopy(v) for k, v in nb.items() if k != "cells"}
    student["cells"] = out
    metadata = student.setdefault("metadata", {})
    metadata.pop("widgets", None)
    return student, report


# --------------------------------------------------------------------------------------------
# The book
# --------------------------------------------------------------------------------------------


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """The chapters of the student edition: the notebooks listed in ``_toc.yml`` that hold exercises.

    A deeper dive or a reference page (no ``{exercise}`` of its own) has nothing to hide from a student and is
    read on the website.

    Args:
        root: the repository's root, which holds ``_toc.yml``.

    Returns:
        The paths of the entries (``root`` and every ``file``) that are notebooks with at least one exercise, in
        the book's order, without duplicates.
    """
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    entries: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    entries.append(node[key])
            for value in node.values():
                if isinstance(value, (dict, list)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    paths = []
    for entry in entries:
        path = root / (entry if entry.endswith(".ipynb") else f"{entry}.ipynb")
        if path.is_file() and path not in paths and "{exercise}" in path.read_text(encoding="utf-8"):
            paths.append(path)
    return paths


def _select(chapters: list[str], root: Path) -> list[Path]:
    available = toc_notebooks(root)
    if not chapters:
        return available
    chosen = []
    for chapter in chapters:
        stem = Path(chapter).stem
        matches = [p for p in available if p.stem == stem]
        if not matches:
            known = ", ".join(p.stem for p in available)
            raise SystemExit(f"{_PROG}: {chapter!r} is not a notebook with exercises in _toc.yml (known: {known})")
        chosen += matches
    return chosen


def book_version(root: Path = ROOT) -> str:
    """The book's version: ``version`` in the ``[project]`` table of ``root/pyproject.toml``.

    Args:
        root: the repository's root.

    Returns:
        The version, or ``"unknown"`` when the file or the key is missing.
    """
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    match = re.search(r'(?ms)^\[project\].*?^version\s*=\s*"([^"]+)"', text)
    return match.group(1) if match else "unknown"


def write_student_edition(
    out_dir: Path, chapters: list[str] | None = None, root: Path = ROOT, quiet: bool = False
) -> dict[str, Report]:
    """Write ``out_dir/<chapter>.ipynb`` for the chosen chapters (all of ``_toc.yml`` by default).

    When every chapter is written, student notebooks in ``out_dir`` that no longer belong to the book (a
    notebook that this tool wrote, recognised by its metadata) are removed. Each notebook gets the edition
    metadata of :mod:`lib.classroom.edition`.

    Args:
        out_dir: the folder to write into (made if missing).
        chapters: chapter stems or paths; None or empty: every notebook of ``_toc.yml``.
        root: the repository's root.
        quiet: print nothing (default: one line per notebook, and warnings).

    Returns:
        ``{chapter stem: Report}``.

    Raises:
        ValueError: a chapter's solution markers do not match, or a solution is not valid Python (the message
            names the notebook).
        SystemExit: a chapter is not a notebook with exercises in ``_toc.yml``.
    """
    import nbformat

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = _select(list(chapters or []), root)
    reports = {}
    for path in paths:
        nb = json.loads(path.read_text(encoding="utf-8"))
        try:
            student, report = make_student_notebook(nb)
        except ValueError as err:
            raise ValueError(f"{path.name}: {err}") from err
        try:
            source = str(path.relative_to(root))
        except ValueError:
            source = str(path)
        student["metadata"][EDITION_KEY] = edition_metadata(path.stem, source, book_version(root), report.exercises)
        node = nbformat.from_dict(student)
        nbformat.validate(node)
        nbformat.write(node, str(out_dir / path.name))
        reports[path.stem] = report
        if not quiet:
            _print_report(out_dir / path.name, report, nb["cells"])
    if not chapters:
        wanted = {p.name for p in paths}
        for old in sorted(out_dir.glob("*.ipynb")):
            if old.name in wanted:
                continue
            try:
                meta = json.loads(old.read_text(encoding="utf-8")).get("metadata", {})
            except (OSError, ValueError):
                continue
            if EDITION_KEY in meta:
                old.unlink()
                if not quiet:
                    print(f"removed {old} (no longer in _toc.yml)")
    return reports


def _print_report(target: Path, report: Report, cells: list[dict]) -> None:
    names = [s.name or "?" for s in report.starters]
    print(
        f"{target}: {len(report.starters)} starter cell(s) ({', '.join(names) or 'none'}); "
        f"{report.removed_cells} solution cell(s) removed, {report.stripped_directives} {{solution}} "
        f"directive cell(s) stripped"
    )
    for solution in report.solutions:
        if solution.code and solution.name is None:
            print(f"  note: the solution {solution.label or '(tagged cells)'} has code but no check(...) call")
    for index, used in report.later_uses:
        print(
            f"  WARNING: code cell {index} of the chapter uses {', '.join(used)}, defined only in a solution: "
            f"in the student edition it sees the starter's placeholder (or nothing)"
        )


def main(argv: list[str] | None = None) -> int:
    """Write the student edition of the chapters given on the command line (see the module docstring).

    Args:
        argv: the command-line arguments (default ``sys.argv[1:]``).

    Returns:
        0, or 1 when a chapter's solutions cannot be removed (the message is printed).

    Raises:
        SystemExit: a usage error, or a chapter that is not in ``_toc.yml``.
    """
    parser = argparse.ArgumentParser(prog=_PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter stems or paths (default: every notebook in _toc.yml)")
    parser.add_argument("--out", default="student", help="output folder (default: student)")
    args = parser.parse_args(argv)
    try:
        write_student_edition(Path(args.out), args.chapters)
    except ValueError as err:
        print(f"{_PROG}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
