"""Smoke test of bench/attention_cost.py: its main function runs with the smallest settings and reports numbers.

The timings themselves are not checked (they depend on the machine), only that they are there and positive;
the computed and measured memory figures are exact, so they are checked exactly.
"""

from __future__ import annotations

import json

import pytest
import torch
from bench_scripts import load_bench


@pytest.fixture
def restore_threads():
    """main(--threads 1) changes torch's global thread count; put it back for the other tests."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_attention_cost_prints_a_table_and_writes_json(restore_threads, tmp_path, capsys):
    out = tmp_path / "cost.json"
    report = load_bench("attention_cost").main(
        [
            "--min-n",
            "16",
            "--max-n",
            "64",
            "--heads",
            "2",
            "--d-k",
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
    assert "lib ms" in printed and "torch ms" in printed and "weight MiB" in printed and "peak MiB" in printed
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert set(report) == {"machine", "settings", "rows"}
    assert report["machine"]["threads"] == 1
    assert [r["seq_len"] for r in report["rows"]] == [16, 32, 64] == report["settings"]["seq_lens"]
    for r in report["rows"]:
        n = r["seq_len"]
        assert r["lib_ms"] > 0 and r["torch_ms"] > 0
        assert r["weight_bytes"] == 1 * 2 * n * n * 4
        assert r["flops"] == 4 * 1 * 2 * n * n * 8
        assert r["lib_peak_bytes"] == r["weight_bytes"] + 1 * 2 * n * 8 * 4  # weights over the scores + output
        assert 0 < r["torch_peak_bytes"] < r["lib_peak_bytes"]


def test_attention_cost_without_memory(restore_threads, capsys):
    report = load_bench("attention_cost").main(
        ["--min-n", "8", "--max-n", "8", "--repeats", "1", "--threads", "1", "--no-memory"]
    )
    (row,) = report["rows"]
    assert row["lib_peak_bytes"] is None and "peak MiB" not in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--max-n", "64", "--min-n", "128"], ["--repeats", "0"], ["--threads", "0"]])
def test_attention_cost_rejects_bad_arguments(argv):
    with pytest.raises(SystemExit):
        load_bench("attention_cost").main(argv)


def test_seq_lengths_double_from_min_to_max():
    bench = load_bench("attention_cost")
    assert bench.seq_lengths(128, 4096) == [128, 256, 512, 1024, 2048, 4096]
    assert bench.seq_lengths(100, 500) == [100, 200, 400]
