"""Smoke test of bench/train_speed.py: its main function runs with the smallest settings and reports numbers.

Needs the Multi30k files (found through ``lib.data.data_dir()``; set ``MULTI30K_DIR``); skipped with that reason
when they are absent. The numbers themselves are not checked, only that they are there and positive.
"""

from __future__ import annotations

import json

import pytest
import torch
from bench_scripts import load_bench


@pytest.fixture
def multi30k(multi30k_dir):
    return multi30k_dir


@pytest.fixture
def restore_threads():
    """main(--threads 1) changes torch's global thread count; put it back for the other tests."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_train_speed_reports_positive_numbers(multi30k, restore_threads, tmp_path):
    bench = load_bench("train_speed")
    out = tmp_path / "speed.json"
    report = bench.main(
        [
            "--presets",
            "tiny",
            "--steps",
            "2",
            "--warmup-steps",
            "1",
            "--repeats",
            "1",
            "--threads",
            "1",
            "--device",
            "cpu",
            "--seq-len",
            "64",
            "--attn-d-models",
            "64",
            "--attn-repeats",
            "2",
            "--json",
            str(out),
        ]
    )
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert set(report) == {"machine", "settings", "training", "attention"}
    assert {"cpu", "torch", "threads", "device"} <= set(report["machine"])
    assert report["machine"]["threads"] == 1

    tiny = report["training"]["tiny"]
    assert tiny["epoch_target_tokens"] > 0 and tiny["lib_over_torch_fp32"] > 0
    assert {"lib fp32", "torch fp32"} <= set(tiny["runs"])
    if bench.cpu_has_bf16():
        assert "lib bf16" in tiny["runs"]
    for run in tiny["runs"].values():
        assert run["tokens_per_s"] > 0 and run["seconds_per_step"] > 0 and run["minutes_per_epoch"] > 0

    (attention,) = report["attention"]
    assert attention["d_model"] == 64 and attention["seq_len"] == 64
    for case in ("weights", "fused"):
        numbers = attention[case]
        assert numbers["lib_ms"] > 0 and numbers["torch_ms"] > 0 and numbers["torch_over_lib"] > 0
        assert numbers["max_abs_diff"] < 1e-4  # both modules compute the same attention


def test_train_speed_rejects_an_unknown_preset(restore_threads):
    with pytest.raises(SystemExit):
        load_bench("train_speed").main(["--presets", "huge"])


def test_every_bench_script_writes_json_through_strict_json():
    # json.dumps wrote bare NaN into the benchmark reports; strict_json writes null and warns naming where
    import ast
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench"
    calls = {}
    for script in sorted(bench.glob("*.py")):
        tree = ast.parse(script.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("dump", "dumps")
                )
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "json"
            ):
                calls.setdefault(script.name, []).append(node.lineno)
    assert calls == {}, f"json.dump(s) in bench/ (use lib.files.strict_json): {calls}"
    assert any("strict_json" in s.read_text(encoding="utf-8") for s in bench.glob("*.py"))
