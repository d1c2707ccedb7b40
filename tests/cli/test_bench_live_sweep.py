"""bench/live_recipe_sweep.py without training: the runs it starts (every schedule with every ``--extra`` variant)
and its usage errors. ``subprocess.run`` is replaced by a recorder, so nothing is trained or decoded here."""

from __future__ import annotations

import json
import types

import pytest
from bench_scripts import load_bench


@pytest.fixture
def recorded(monkeypatch):
    """The sweep module with ``subprocess.run`` recording each command instead of running it."""
    module = load_bench("live_recipe_sweep")
    calls: list[list[str]] = []

    def fake_run(command, **kwargs):
        calls.append(list(command))
        out = json.dumps({"val_bleu": 12.5, "val_loss": 3.0, "signature": "sig"}) if "-c" in command else ""
        return types.SimpleNamespace(returncode=0, stdout=out, stderr="")

    monkeypatch.setattr(module.subprocess, "run", fake_run)
    return module, calls


def _train_commands(calls):
    return [c for c in calls if "lib.train" in c]


def test_every_schedule_runs_with_every_variant(recorded, tmp_path):
    module, calls = recorded
    records = module.main(
        ["--configs", "200:3e-3,400:1e-3", "--extra", "", "--extra", "--dropout 0", "--out", str(tmp_path / "s.jsonl")]
    )
    train = _train_commands(calls)
    assert len(train) == len(records) == 4
    variants = {(c[c.index("--warmup") + 1], c[c.index("--peak-lr") + 1], "--dropout" in c) for c in train}
    assert variants == {
        ("200", "0.003", False),
        ("200", "0.003", True),
        ("400", "0.001", False),
        ("400", "0.001", True),
    }
    for c in train:  # the variant's arguments come before --out, which stays the sweep's own folder
        if "--dropout" in c:
            assert c[c.index("--dropout") + 1] == "0" and c.index("--dropout") < c.index("--out")
    assert len({c[c.index("--out") + 1] for c in train}) == 4  # one run folder each
    assert [r.get("extra") for r in records].count("--dropout 0") == 2
    assert all(r["val_bleu"] == 12.5 for r in records)
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    assert sorted(json.loads(line).get("extra", "") for line in lines) == ["", "", "--dropout 0", "--dropout 0"]


def test_without_extra_each_schedule_runs_once(recorded, tmp_path):
    module, calls = recorded
    records = module.main(["--configs", "100:2e-3", "--out", str(tmp_path / "s.jsonl")])
    assert len(_train_commands(calls)) == 1 and "extra" not in records[0]


@pytest.mark.parametrize("extra", ["--steps 5", "--out elsewhere", "--peak-lr 1e-3"])
def test_an_extra_that_overrides_the_sweep_is_a_usage_error(recorded, extra, capsys):
    module, calls = recorded
    with pytest.raises(SystemExit) as exc:
        module.main(["--extra", extra])
    assert exc.value.code == 2 and calls == []
    assert "the sweep sets" in capsys.readouterr().err
