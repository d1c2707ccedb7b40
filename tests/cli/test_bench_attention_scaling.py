"""Smoke test of bench/attention_scaling.py: its main function runs with tiny sizes and reports every number.

The timings are not checked (they depend on the machine), only that they are there and positive; the memory of
lib's explicit attention is exact, so it is checked exactly.
"""

from __future__ import annotations

import json

import pytest
import torch
from bench_scripts import load_bench

METHODS = ["full (lib)", "full (torch fused)", "sliding window", "linear (elu+1)", "Performer", "LSH"]


@pytest.fixture
def restore_threads():
    """main(--threads 1) changes torch's global thread count; put it back for the other tests."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_attention_scaling_prints_tables_and_the_crossover_and_writes_json(restore_threads, tmp_path, capsys):
    out = tmp_path / "scaling.json"
    report = load_bench("attention_scaling").main(
        [
            "--min-n",
            "16",
            "--max-n",
            "64",
            "--heads",
            "2",
            "--d-k",
            "8",
            "--window",
            "4",
            "--features",
            "8",
            "--bucket-size",
            "8",
            "--repeats",
            "1",
            "--threads",
            "1",
            "--json",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert "ms per call" in printed and "peak MiB" in printed and "Crossover: linear attention" in printed
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert set(report) == {"machine", "settings", "rows", "crossover"}
    assert report["machine"]["threads"] == 1
    assert report["settings"]["seq_lens"] == [16, 32, 64]
    assert [(r["method"], r["seq_len"]) for r in report["rows"]] == [(m, n) for n in (16, 32, 64) for m in METHODS]
    for r in report["rows"]:
        assert r["ms"] > 0 and r["peak_bytes"] > 0
        if r["method"] == "full (lib)":
            n = r["seq_len"]
            assert r["peak_bytes"] == 2 * n * n * 4 + 2 * n * 8 * 4  # weights (written over the scores) + output
    assert set(report["crossover"]) == {"full (lib)", "full (torch fused)"}
    assert all(c is None or c in (16, 32, 64) for c in report["crossover"].values())


def test_attention_scaling_drops_slow_methods_and_skips_memory(restore_threads, capsys):
    report = load_bench("attention_scaling").main(
        [
            "--min-n",
            "8",
            "--max-n",
            "16",
            "--heads",
            "1",
            "--d-k",
            "4",
            "--window",
            "2",
            "--features",
            "4",
            "--bucket-size",
            "4",
            "--repeats",
            "1",
            "--threads",
            "1",
            "--no-memory",
            "--max-ms",
            "1e-9",
        ]
    )
    rows = report["rows"]
    sizes = [r["seq_len"] for r in rows]
    assert sizes.count(8) == sizes.count(16) >= 1 and set(sizes) == {8, 16}  # every method has a row at each n
    assert all(r["ms"] is not None for r in rows if r["seq_len"] == 8)
    assert all(r["ms"] is None for r in rows if r["seq_len"] == 16)  # every method was "too slow" at n = 8
    assert all(r["peak_bytes"] is None for r in rows)
    printed = capsys.readouterr().out
    assert "peak MiB" not in printed and " - " in printed


@pytest.mark.parametrize(
    "argv",
    [
        ["--max-n", "64", "--min-n", "128"],
        ["--repeats", "0"],
        ["--threads", "0"],
        ["--window", "0"],
        ["--max-ms", "0"],
        ["--min-n", "96", "--max-n", "192"],
    ],
)
def test_attention_scaling_rejects_bad_arguments(argv):
    with pytest.raises(SystemExit):
        load_bench("attention_scaling").main(argv)


def test_crossovers_from_a_report():
    bench = load_bench("attention_scaling")
    report = {
        "settings": {"seq_lens": [256, 512]},
        "rows": [
            {"method": "full (lib)", "seq_len": 256, "ms": 1.0},
            {"method": "linear (elu+1)", "seq_len": 256, "ms": 2.0},
            {"method": "full (torch fused)", "seq_len": 256, "ms": 0.5},
            {"method": "full (lib)", "seq_len": 512, "ms": 4.0},
            {"method": "linear (elu+1)", "seq_len": 512, "ms": 3.0},
            {"method": "full (torch fused)", "seq_len": 512, "ms": 2.0},
        ],
    }
    assert bench.crossovers(report) == {"full (lib)": 512, "full (torch fused)": None}
