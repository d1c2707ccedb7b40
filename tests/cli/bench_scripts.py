"""Import a script of ``bench/`` as a module, for the tests of its ``main`` (``bench/`` is a folder of scripts, not a
package)."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench(name: str) -> types.ModuleType:
    """A fresh module object of ``bench/<name>.py`` (its ``main`` not run)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
