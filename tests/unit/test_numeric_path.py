"""`make test` re-runs the chapters on a numeric path other than this machine's own: another machine, seen here.

The stored outputs are made by `make execute` on the author's machine; `make test` runs every chapter (nbval, then
the student edition, which restores nbval's kept trainings) with ``ATEN_CPU_CAPABILITY`` set by
``tools/numeric_path.py``: ``default``, torch's kernels without SIMD, wherever torch has others. These tests check that
the Makefile passes that path to both, that the tool picks a path other than the native one, and that the path
really changes torch's arithmetic here: a float32 sum comes out in another order, as on a CPU with other vector
units.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import torch; x = torch.randn(256, 1000, generator=torch.Generator().manual_seed(0)); "
    "print(torch.backends.cpu.get_cpu_capability(), x.sum().item())"
)


def _probe(assignments: str) -> tuple[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    env.update(a.split("=", 1) for a in assignments.split())
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    capability, total = done.stdout.split()
    return capability, float(total)


def _recipe_lines(marker: str) -> list[str]:
    recipe = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    return [line for line in recipe.splitlines() if marker in line and not line.lstrip().startswith("#")]


def test_nbval_and_the_student_edition_run_on_the_same_numeric_path():
    makefile = (ROOT / "Makefile").read_text()
    assert "\nNBVAL_NUMERIC ?= $(shell $(BIN)/python tools/numeric_path.py)\n" in makefile
    nbval = _recipe_lines("-m pytest --nbval")
    assert len(nbval) == 1 and "$(NBVAL_NUMERIC)" in nbval[0].split("-m pytest --nbval")[0].rsplit(";", 1)[-1], nbval
    student = _recipe_lines("-m pytest -m student_execution")
    assert len(student) == 1 and "$(NBVAL_NUMERIC)" in student[0].split("-m pytest")[0], student
    assert "ATTENTION_BOOK_TRAIN_CACHE" in nbval[0] and "ATTENTION_BOOK_TRAIN_CACHE" in student[0]


def _tool(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"} | (env or {})
    tool = [sys.executable, str(ROOT / "tools" / "numeric_path.py")]
    return subprocess.run(tool, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(
    ("native", "other"),
    [("AVX512", "default"), ("AVX2", "default"), ("SVE256", "default"), ("ZVECTOR", "default"), ("DEFAULT", "")],
)
def test_the_tool_picks_another_path_than_the_native_one(native, other):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from numeric_path import other_path
    finally:
        sys.path.remove(str(ROOT / "tools"))
    assert other_path(native) == other


def test_a_path_the_user_set_stands():
    done = _tool({"ATEN_CPU_CAPABILITY": "avx2"})
    assert done.returncode == 0 and done.stdout == "" and "ATEN_CPU_CAPABILITY=avx2 is set" in done.stderr


def test_the_other_path_changes_torchs_sums_here():
    native_capability, native_sum = _probe("")
    done = _tool()
    assert done.returncode == 0, done.stderr
    chosen = done.stdout.strip()
    if native_capability == "DEFAULT":
        assert chosen == "" and "no other CPU path" in done.stderr
        pytest.skip("torch has no SIMD kernels on this CPU: its own path is the only one")
    capability, other_sum = _probe(chosen)
    assert chosen.startswith("ATEN_CPU_CAPABILITY=") and capability == chosen.split("=")[1].upper() != native_capability
    assert other_sum != native_sum  # the same 256,000 numbers, summed in another order
    assert abs(other_sum - native_sum) < 0.05  # ... and only the last bits differ
