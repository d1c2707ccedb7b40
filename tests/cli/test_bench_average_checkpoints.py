"""bench/average_checkpoints.py without decoding: which weights it averages, that it chooses the averaging and the
length penalty on the validation set before it decodes the test set once, what ``--ship`` writes, and its usage
errors. ``evaluate_bleu`` is replaced by a scorer that reads the loaded weights, so nothing is translated here."""

from __future__ import annotations

import json
import types

import pytest
import torch
from bench_scripts import load_bench

from lib.bpe import train_bpe
from lib.checkpoint import load_run, save_run
from lib.training import TrainConfig
from lib.transformer import Transformer, TransformerConfig

TOKENIZER = train_bpe(["ein Hund läuft", "a dog runs", "zwei Männer", "two men"] * 5, vocab_size=40)
# every weight of snapshot 1, 2, 3 and of the final checkpoint is this constant
LEVELS = {"model_1min.pt": 1.0, "model_2min.pt": 2.0, "model_3min.pt": 3.0, "checkpoint.pt": 4.0}


def _filled(model: Transformer, value: float) -> dict[str, torch.Tensor]:
    return {name: torch.full_like(t, value) for name, t in model.state_dict().items()}


@pytest.fixture
def run(tmp_path):
    """A run folder whose snapshots and final checkpoint hold the constant weights of ``LEVELS``."""
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(TOKENIZER.get_vocab_size()))
    folder = save_run(tmp_path / "run", model, TOKENIZER, TrainConfig(max_steps=1), [{"step": 1}], {"steps": 1})
    for name, value in LEVELS.items():
        state = _filled(model, value)
        torch.save({"model": state} if name == "checkpoint.pt" else state, folder / name)
    return folder


@pytest.fixture
def scored(monkeypatch):
    """The script with ``evaluate_bleu`` replaced: validation greedy BLEU is best for the weights at level 3 (the
    average of the last 3: snapshots 2 and 3 and the final 4), beam BLEU best at α 1.0; every call is recorded as
    (split, beam, alpha, weight level)."""
    module = load_bench("average_checkpoints")
    calls: list[tuple[str, int, float, float]] = []

    def fake_bleu(model, tokenizer, split, beam_size=1, alpha=0.6):
        level = round(next(model.parameters()).float().mean().item(), 3)
        calls.append((split, beam_size, alpha, level))
        score = 30 - abs(level - 3.0) if beam_size == 1 else 40 - abs(alpha - 1.0)
        return types.SimpleNamespace(score=score, signature="nrefs:1|fake")

    monkeypatch.setattr(module, "evaluate_bleu", fake_bleu)
    return module, calls


def test_averages_the_last_k_chooses_on_validation_and_then_decodes_the_test_set(run, scored, tmp_path):
    module, calls = scored
    report = module.main(
        ["--run", str(run), "--last", "2,3,4", "--alphas", "0.6,1.0,1.5", "--json", str(tmp_path / "l.json")]
    )
    assert report["checkpoints"] == list(LEVELS)
    # the averages of the last k of the levels 1, 2, 3, 4 and the final weights alone
    greedy_val = [c[3] for c in calls if c[:2] == ("val", 1)]
    assert greedy_val == [4.0, 3.5, 3.0, 2.5]
    assert report["chosen"] == {"weights": "last 3", "alpha": 1.0}
    assert [(c[1], c[2]) for c in calls if c[0] == "val" and c[1] == 5] == [(5, 0.6), (5, 1.0), (5, 1.5)]
    # the test set only after every validation decode, and only for the final weights and the choice
    first_test = next(i for i, c in enumerate(calls) if c[0] == "test_2016_flickr")
    assert all(c[0] == "val" for c in calls[:first_test]) and all(c[0] != "val" for c in calls[first_test:])
    assert calls[first_test:] == [
        ("test_2016_flickr", 1, 0.6, 4.0),
        ("test_2016_flickr", 5, 0.6, 4.0),
        ("test_2016_flickr", 1, 0.6, 3.0),
        ("test_2016_flickr", 5, 1.0, 3.0),
    ]
    assert json.loads((tmp_path / "l.json").read_text()) == report


def test_ship_writes_the_chosen_average_in_float16_with_its_choice_and_test_bleu(run, scored, tmp_path):
    module, _ = scored
    out = tmp_path / "shipped"
    module.main(["--run", str(run), "--last", "2,3", "--alphas", "1.0,2.0", "--ship", str(out)])
    shipped = load_run(out)
    assert all(torch.equal(t, torch.full_like(t, 3.0)) for t in shipped.model.state_dict().values())
    assert {t.dtype for t in torch.load(out / "model.pt", weights_only=True).values()} == {torch.float16}
    results = shipped.results
    assert results["averaged_checkpoints"] == ["model_2min.pt", "model_3min.pt", "checkpoint.pt"]
    assert results["beam_alpha"] == 1.0 and results["beam_size"] == 5 and results["steps"] == 1
    assert results["test_bleu_greedy"] == 30.0 and results["test_bleu_beam"] == 40.0
    assert results["levers"]["chosen"] == {"weights": "last 3", "alpha": 1.0}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--last", "2,9"], "--last 9: the run has only 4 checkpoints"),
        (["--last", "two"], "--last takes integers"),
        (["--ship", "{run}"], "exists already"),
    ],
)
def test_usage_errors_name_the_problem(run, scored, capsys, argv, message):
    module, calls = scored
    with pytest.raises(SystemExit) as exit_:
        module.main(["--run", str(run), *(a.format(run=run) for a in argv)])
    assert exit_.value.code == 2 and message in capsys.readouterr().err and calls == []


def test_a_folder_without_the_final_checkpoint_is_refused(run, scored, capsys):
    module, _ = scored
    (run / "checkpoint.pt").unlink()
    with pytest.raises(SystemExit):
        module.main(["--run", str(run)])
    assert "no checkpoint.pt" in capsys.readouterr().err
