"""`make test` re-runs the chapters on a numeric path other than this machine's own: another machine, seen here.

The stored outputs are made by `make execute` on the author's machine; `make test` runs every chapter (nbval, then
the student edition, which restores nbval's kept trainings) with ``ATEN_CPU_CAPABILITY`` set by
``tools/numeric_path.py``: ``avx2`` on a CPU with AVX-512, ``default`` (no SIMD) on others. These tests check that
the Makefile passes that path to both, that the tool picks a path other than the native one, and that the path
really changes torch's arithmetic here: a float32 softmax comes out in other last bits, as on a CPU with other vector
units.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
# Attention's softmax over 256 rows of 1,000 scores: its float32 bits, and how far they may move.
PROBE = (
    "import torch; x = torch.randn(256, 1000, generator=torch.Generator().manual_seed(0)); "
    "p = torch.softmax(x, -1); print(torch.backends.cpu.get_cpu_capability(), p.numpy().tobytes().hex())"
)


def _probe(assignments: str) -> tuple[str, torch.Tensor]:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    env.update(a.split("=", 1) for a in assignments.split())
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    capability, data = done.stdout.split()
    return capability, torch.frombuffer(bytearray(bytes.fromhex(data)), dtype=torch.float32)


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
    [("AVX512", "avx2"), ("AVX2", "default"), ("SVE256", "default"), ("ZVECTOR", "default"), ("DEFAULT", "")],
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


def test_the_other_path_changes_torchs_softmax_here():
    native_capability, native_probs = _probe("")
    done = _tool()
    assert done.returncode == 0, done.stderr
    chosen = done.stdout.strip()
    if native_capability == "DEFAULT":
        assert chosen == "" and "no other CPU path" in done.stderr
        pytest.skip("torch has no SIMD kernels on this CPU: its own path is the only one")
    capability, other_probs = _probe(chosen)
    assert chosen.startswith("ATEN_CPU_CAPABILITY=") and capability == chosen.split("=")[1].upper() != native_capability
    assert not torch.equal(other_probs, native_probs)  # the same softmax, computed in another order
    assert torch.allclose(other_probs, native_probs, rtol=1e-5, atol=1e-9)  # ... and only the last bits differ
