"""The Makefile from a checkout whose path has spaces and non-ASCII letters.

make's word functions (``dir``, ``abspath``, ``wildcard``) split a path at its spaces: from "My Bücher/attention"
the Makefile lost the shared Multi30k copy beside the checkout, so ``make test``, ``make lab`` and ``make execute``
would have downloaded it (or failed offline).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"
SHOW = 'h34-show: ; @printf "%s\\n" "$${MULTI30K_DIR-}"'  # a target added for the test: what the recipes see

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


def _make_in(repo: Path, env: dict) -> str:
    done = subprocess.run(
        ["make", "-s", "-C", str(repo), "--eval", SHOW, "h34-show"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("name", ["My Bücher ü", "two  spaces", "naïve"])
def test_multi30k_dir_resolves_to_the_shared_copy_from_any_path(tmp_path, name):
    repo = tmp_path / name / "attention book"
    shared = tmp_path / name / "shared" / "data" / "multi30k"
    repo.mkdir(parents=True)
    shared.mkdir(parents=True)
    shutil.copy(MAKEFILE, repo / "Makefile")
    env = {k: v for k, v in os.environ.items() if k != "MULTI30K_DIR"}
    assert _make_in(repo, env) == str(shared)
    assert _make_in(repo, {**env, "MULTI30K_DIR": "/elsewhere"}) == "/elsewhere"  # the caller's choice wins
    shutil.rmtree(tmp_path / name / "shared")
    assert _make_in(repo, env) == ""  # no shared copy: lib.data downloads it
