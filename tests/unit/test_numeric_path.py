"""`make test NBVAL_NUMERIC=...` re-runs the chapters on a numeric path other than this machine's own.

The stored outputs are made by `make execute` on the author's machine; ``make test
NBVAL_NUMERIC=ATEN_CPU_CAPABILITY=default`` runs every chapter with torch's CPU kernels without SIMD, another
machine seen from this one. These tests check that the Makefile passes ``NBVAL_NUMERIC`` to nbval and to the
student edition (whose kept trainings nbval made: restored on another path, they would not match the cells that
recompute them), and that this path really changes torch's arithmetic here: a float32 sum comes out in another
order, as on a CPU with other vector units.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OTHER_PATH = "ATEN_CPU_CAPABILITY=default"  # the Makefile's NBVAL_NUMERIC
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
    assert "\nNBVAL_NUMERIC ?=\n" in makefile  # this machine's own by default; the other path is a developer's run
    nbval = _recipe_lines("-m pytest --nbval")
    assert len(nbval) == 1 and "$(NBVAL_NUMERIC)" in nbval[0].split("-m pytest --nbval")[0].rsplit(";", 1)[-1], nbval
    student = _recipe_lines("-m pytest -m student_execution")
    assert len(student) == 1 and "$(NBVAL_NUMERIC)" in student[0].split("-m pytest")[0], student
    assert "ATTENTION_BOOK_TRAIN_CACHE" in nbval[0] and "ATTENTION_BOOK_TRAIN_CACHE" in student[0]


def test_the_other_path_changes_torchs_sums_here():
    native_capability, native_sum = _probe("")
    if native_capability == "DEFAULT":
        pytest.skip("torch has no SIMD kernels on this CPU: its own path is already the one nbval runs")
    capability, other_sum = _probe(OTHER_PATH)
    assert capability == "DEFAULT"
    assert other_sum != native_sum  # the same 256,000 numbers, summed in another order
    assert abs(other_sum - native_sum) < 0.05  # ... and only the last bits differ
