"""Show a definition of ``lib`` in a chapter: its source without the docstring, highlighted as Python.

The chapters display the library's code through this one helper, so that a reader sees the code under the
equation it implements, not the argument documentation, and a chapter never slices source text by hand.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from IPython.display import Code

__all__ = ["source_without_docstring", "show"]


def source_without_docstring(obj: object) -> str:
    """The source of a public function, method or class, with the docstrings of its definitions removed.

    Args:
        obj: a function, method or class whose name (``__qualname__``) has no private part.

    Returns:
        The dedented source; decorators, signature, comments and code are kept as written.

    Raises:
        ValueError: ``obj`` is private (a name part starting with ``_``, ``__init__`` excepted); a chapter shows
            public names only.
    """
    qualname = getattr(obj, "__qualname__", "")
    if any(part.startswith("_") and part != "__init__" for part in qualname.split(".")):
        raise ValueError(f"{qualname} is private: a chapter shows public names only")
    source = textwrap.dedent(inspect.getsource(obj))
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                drop.update(range(first.lineno - 1, first.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def show(obj: object) -> Code:
    """The definition of ``obj`` without its docstring, as a highlighted code block (the cell's output).

    Args:
        obj: a public function, method or class of ``lib``.

    Returns:
        An ``IPython.display.Code`` that Jupyter and the website render as Python.

    Raises:
        ValueError: as :func:`source_without_docstring`.
    """
    return Code(source_without_docstring(obj), language="python")
