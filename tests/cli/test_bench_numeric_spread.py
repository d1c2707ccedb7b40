"""bench/numeric_spread.py: each run is its own process on its own numeric path, and the paths train different models.

The copy task (two trainings of 200 steps, a few seconds each) on this machine's own path and on torch's kernels
without SIMD: the runs must report the capability they ran with, come out different in their last digits (else the
"other path" would see nothing another machine sees), and stay within the spread the chapter's test allows.
"""

from __future__ import annotations

import json

import pytest
from bench_scripts import load_bench


@pytest.mark.slow
def test_two_paths_train_two_slightly_different_copy_models(tmp_path, capsys):
    spread = load_bench("numeric_spread")
    out = tmp_path / "spread.json"
    assert spread.main(["--claims", "copy_task", "--seeds", "0", "--paths", "native,default", "--json", str(out)]) == 0
    runs = json.loads(out.read_text())
    assert [(r["claim"], r["seed"], r["path"]) for r in runs] == [
        ("copy_task", 0, "native"),
        ("copy_task", 0, "default"),
    ]
    native, default = runs[0], runs[1]
    assert default["capability"] == "DEFAULT"
    if native["capability"] == "DEFAULT":
        pytest.skip("torch has no SIMD kernels on this CPU: both runs took the same path")
    assert native["numbers"] != default["numbers"]
    for name, value in native["numbers"].items():
        assert abs(value - default["numbers"][name]) < 0.03, name  # tests/exercises: _COPY_SPREAD
    printed = capsys.readouterr().out
    assert "== copy_task" in printed and "masked loss" in printed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--claims", "nope"], "unknown ['nope']"),
        (["--paths", "native,sse9"], "unknown ['sse9']"),
        (["--seeds", "a,b"], "seeds must be integers"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(argv, message, capsys):
    spread = load_bench("numeric_spread")
    with pytest.raises(SystemExit) as stop:
        spread.main(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
