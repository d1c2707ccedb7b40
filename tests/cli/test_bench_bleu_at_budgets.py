"""bench/bleu_at_budgets.py without decoding: the snapshots it scores, what it records in results.json (test
figures only), a run stopped before its end (``--like``), and its usage errors. ``evaluate_bleu`` is replaced by a
scorer that reads the loaded weights, so nothing is translated here."""

from __future__ import annotations

import json
import types

import pytest
import torch
from bench_scripts import load_bench

from lib.bpe import train_bpe
from lib.checkpoint import save_run
from lib.training import TrainConfig
from lib.transformer import Transformer, TransformerConfig

TOKENIZER = train_bpe(["ein Hund läuft", "a dog runs", "zwei Männer", "two men"] * 5, vocab_size=40)


def _model(**config) -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig.tiny(TOKENIZER.get_vocab_size(), **config))


def _filled(model: Transformer, value: float) -> dict[str, torch.Tensor]:
    return {name: torch.full_like(t, value) for name, t in model.state_dict().items()}


@pytest.fixture
def run(tmp_path):
    """A finished run (final weights all 9, 40 minutes) with snapshots at 5 and 10 minutes (weights all 5 and 10)."""
    model = _model()
    model.load_state_dict(_filled(model, 9.0))
    folder = save_run(tmp_path / "run", model, TOKENIZER, TrainConfig(max_steps=1), [{"step": 1}], {"minutes": 40.0})
    for minutes in (5, 10):
        torch.save(_filled(model, float(minutes)), folder / f"model_{minutes}min.pt")
    return folder


@pytest.fixture
def scored(monkeypatch):
    """The script with ``evaluate_bleu`` replaced: greedy BLEU is the weights' level (+ 0.5 on validation), beam
    BLEU the level + 1; every call is recorded as (split, beam, level)."""
    module = load_bench("bleu_at_budgets")
    calls: list[tuple[str, int, float]] = []

    def fake_bleu(model, tokenizer, split, beam_size=1, alpha=0.6):
        level = round(next(model.parameters()).float().mean().item(), 3)
        calls.append((split, beam_size, level))
        score = level + (1 if beam_size > 1 else 0) + (0.5 if split == "val" else 0)
        return types.SimpleNamespace(score=score, signature="nrefs:1|fake")

    monkeypatch.setattr(module, "evaluate_bleu", fake_bleu)
    return module, calls


def test_test_bleu_of_each_snapshot_and_the_final_model_is_recorded(run, scored):
    module, calls = scored
    table = module.main(["--run", str(run), "--beam", "5"])
    assert table == {"5": 5.0, "10": 10.0, "40": 9.0}
    assert calls == [("test_2016_flickr", 1, 5.0), ("test_2016_flickr", 1, 10.0), ("test_2016_flickr", 1, 9.0),
                     ("test_2016_flickr", 5, 9.0)]  # fmt: skip
    results = json.loads((run / "results.json").read_text())
    assert results["bleu_at_minutes"] == table
    assert results["test_bleu_greedy"] == 9.0 and results["test_bleu_beam"] == 10.0 and results["beam_size"] == 5


def test_the_validation_split_is_printed_and_not_recorded_as_test_figures(run, scored, capsys):
    module, calls = scored
    before = (run / "results.json").read_text()
    assert module.main(["--run", str(run), "--split", "val", "--beam", "0"]) == {"5": 5.5, "10": 10.5, "40": 9.5}
    assert {c[0] for c in calls} == {"val"}
    assert (run / "results.json").read_text() == before
    assert "printed only" in capsys.readouterr().out


def test_a_stopped_run_is_scored_with_the_architecture_of_a_finished_one(run, scored, tmp_path):
    module, calls = scored
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    torch.save({"model": _filled(_model(), 1.0)}, stopped / "checkpoint.pt")  # what Ctrl-C leaves
    torch.save(_filled(_model(), 3.0), stopped / "model_20min.pt")
    assert module.main(["--run", str(stopped), "--like", str(run), "--split", "val"]) == {"20": 3.5}
    assert calls == [("val", 1, 3.0)] and sorted(p.name for p in stopped.iterdir()) == [
        "checkpoint.pt",
        "model_20min.pt",
    ]


def _usage_error(module, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        module.main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_usage_errors_name_the_problem(run, scored, tmp_path, capsys):
    module, calls = scored
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    assert "no model.pt" in _usage_error(module, ["--run", str(stopped)], capsys)
    assert "neither model.pt nor snapshots" in _usage_error(module, ["--run", str(stopped), "--like", str(run)], capsys)
    assert "invalid choice: 'dev'" in _usage_error(module, ["--run", str(run), "--split", "dev"], capsys)
    torch.save(_filled(_model(d_model=16), 1.0), stopped / "model_20min.pt")  # another architecture
    err = _usage_error(module, ["--run", str(stopped), "--like", str(run)], capsys)
    assert "model_20min.pt does not fit the architecture of --like" in err and "size mismatch" in err
    assert calls == []
