"""`python -m lib.train` end to end: a few steps on real Multi30k, then the run folder loads and translates."""

import json
import subprocess
import sys

from lib.checkpoint import load_run
from lib.translate import translate


def test_train_command_line_writes_a_loadable_run(multi30k_dir, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lib.train",
            "--preset",
            "tiny",
            "--steps",
            "8",
            "--max-tokens",
            "1000",
            "--eval-every",
            "100",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 8 and results["stopped_by"] == "max_steps"
    assert (out / "checkpoint.pt").is_file()
    run = load_run(out)
    assert len(translate(run.model, run.tokenizer, ["Ein Mann."])) == 1


def test_train_command_line_needs_a_budget(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "lib.train", "--out", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "budget" in proc.stderr
