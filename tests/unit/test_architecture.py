"""The layers of ``lib/`` (CONTRIBUTING.md): no import cycles, no import of the book's tools.

The import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``: models import only torch, the standard
library, each other and the leaves; data and the tokenizer import no model; ...) are checked by ``make lint``
(``lint-imports``), which ``make test`` runs first; they are not run a second time here. This file adds:

- No import cycle among lib's modules. A package and its submodules are separate nodes, so a package's
  ``__init__`` that imports a submodule which imports back from the ``__init__`` is a cycle too.
- Nothing in ``lib/`` imports ``chapters``, ``tools`` or ``bench`` (those import lib, never the reverse).

grimp (which import-linter uses) reads every import statement, those inside functions included, so a lazy import
does not hide a dependency. Failures name each offending import with its file and line.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
from collections.abc import Iterable
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"
PACKAGE = "lib"
# Top-level folders of the repository that import lib; lib must never import them.
NOT_IMPORTABLE_FROM_LIB = ("chapters", "tools", "bench")


def _is_lib_module(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def lib_import_graph(package: str = PACKAGE) -> tuple[dict[str, set[str]], grimp.ImportGraph]:
    """``({module: modules of the package it imports directly}, grimp's graph)`` for every module of ``package``.

    Built by grimp, which counts every import statement (at module level, in functions, under TYPE_CHECKING).
    """
    graph = grimp.build_graph(package, cache_dir=None)
    return {
        module: {m for m in graph.find_modules_directly_imported_by(module) if _is_lib_module(m)}
        for module in sorted(graph.modules)
        if _is_lib_module(module)
    }, graph


def strongly_connected_components(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit); each component sorted, components in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return sorted(components)


def _shortest_cycle_through(start: str, edges: dict[str, set[str]], members: set[str]) -> list[str]:
    """The shortest cycle ``[start, ..., start]`` inside ``members`` (breadth-first search)."""
    previous: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges.get(node, ())):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1] + [start]
                if child not in seen:
                    seen.add(child)
                    previous[child] = node
                    following.append(child)
        frontier = following
    return []


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Cycles that show each strongly connected component of more than one module.

    For each module of such a component (in name order), the shortest cycle through it, without the rotations
    of a cycle already listed. Each cycle is ``[a, b, ..., a]``.
    """
    cycles: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for component in strongly_connected_components(edges):
        if len(component) < 2:
            continue
        members = set(component)
        for module in component:
            cycle = _shortest_cycle_through(module, edges, members)
            ring = cycle[:-1]
            key = min(tuple(ring[i:] + ring[:i]) for i in range(len(ring)))
            if key not in seen:
                seen.add(key)
                cycles.append(cycle)
    return cycles


def describe_chain(chain: list[str], graph) -> str:
    """``a -> b (l. 12) -> c (l. 40, 41)``: each arrow with the line numbers of the imports in its importer."""
    parts = [chain[0]]
    for importer, imported in itertools.pairwise(chain):
        details = graph.get_import_details(importer=importer, imported=imported)
        lines = ", ".join(str(d["line_number"]) for d in sorted(details, key=lambda d: d["line_number"]))
        parts.append(f"{imported} ({importer} l. {lines})")
    return " -> ".join(parts)


def _check_lib_resolves_here() -> None:
    spec = importlib.util.find_spec(PACKAGE)
    origin = Path(spec.origin).resolve() if spec and spec.origin else None
    assert origin == LIB / "__init__.py", (
        f"`import {PACKAGE}` resolves to {origin}, not to this checkout's {LIB}; run pytest from {ROOT} "
        f"(`python -m pytest` puts the current folder first on sys.path)"
    )


def test_no_import_cycles_in_lib():
    _check_lib_resolves_here()
    edges, graph = lib_import_graph()
    assert "lib.attention" in edges, "grimp found no module lib.attention: is this the book's lib?"
    cycles = import_cycles(edges)
    assert not cycles, (
        f"{len(cycles)} import cycle(s) among lib's modules (imports inside functions count; a package and its "
        "submodules are separate modules):\n" + "\n".join("  " + describe_chain(c, graph) for c in cycles)
    )


def _imported_names(tree: ast.AST) -> Iterable[tuple[int, str]]:
    """(line, absolute module name) for every import statement and constant-string import_module/__import__."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
            )
        ):
            yield node.lineno, node.args[0].value


def test_lib_does_not_import_chapters_tools_or_bench():
    offending = []
    files = sorted(LIB.rglob("*.py"))
    assert files, f"no Python files under {LIB}"
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in _imported_names(tree):
            if name.split(".")[0] in NOT_IMPORTABLE_FROM_LIB:
                offending.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
    assert not offending, (
        f"lib/ must not import {', '.join(NOT_IMPORTABLE_FROM_LIB)} (they import lib, not the reverse):\n"
        + "\n".join(offending)
    )


def test_the_cycle_finder_reports_a_cycle_and_a_package_importing_back_from_its_submodule():
    edges = {
        "lib.a": {"lib.b"},
        "lib.b": {"lib.c"},
        "lib.c": {"lib.a", "lib.d"},
        "lib.d": set(),
        "lib.pkg": {"lib.pkg.sub"},
        "lib.pkg.sub": {"lib.pkg"},
    }
    assert strongly_connected_components(edges) == [["lib.a", "lib.b", "lib.c"], ["lib.d"], ["lib.pkg", "lib.pkg.sub"]]
    assert import_cycles(edges) == [["lib.a", "lib.b", "lib.c", "lib.a"], ["lib.pkg", "lib.pkg.sub", "lib.pkg"]]
    assert import_cycles({"lib.a": {"lib.b"}, "lib.b": set()}) == []
