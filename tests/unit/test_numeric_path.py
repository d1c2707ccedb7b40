"""`make test` re-runs the chapters on a numeric path other than this machine's own: another machine, seen here.

The stored outputs are made by `make execute` on the author's machine; `make test` runs every chapter with
``NBVAL_NUMERIC=ATEN_CPU_CAPABILITY=default``, torch's CPU kernels without SIMD. These tests
check that the Makefile passes ``NBVAL_NUMERIC`` to nbval, and that this path really changes torch's arithmetic
here: a float32 sum comes out in another order, as on a CPU with other vector units.
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


def test_make_test_passes_the_numeric_path_to_nbval():
    assert f"NBVAL_NUMERIC ?= {OTHER_PATH}\n" in (ROOT / "Makefile").read_text()  # the default: not this machine's
    recipe = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    nbval = [line for line in recipe.splitlines() if "-m pytest --nbval" in line and not line.lstrip().startswith("#")]
    assert len(nbval) == 1 and "$(NBVAL_NUMERIC)" in nbval[0].split("-m pytest --nbval")[0].rsplit(";", 1)[-1], nbval


def test_the_other_path_changes_torchs_sums_here():
    native_capability, native_sum = _probe("")
    if native_capability == "DEFAULT":
        pytest.skip("torch has no SIMD kernels on this CPU: its own path is already the one nbval runs")
    capability, other_sum = _probe(OTHER_PATH)
    assert capability == "DEFAULT"
    assert other_sum != native_sum  # the same 256,000 numbers, summed in another order
    assert abs(other_sum - native_sum) < 0.05  # ... and only the last bits differ
