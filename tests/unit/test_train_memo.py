"""lib.training's kept runs (ATTENTION_BOOK_TRAIN_CACHE): a second identical call restores, any change trains."""

import random

import pytest
import torch

from lib.seq2seq import Seq2Seq, Seq2SeqConfig
from lib.training import TRAIN_CACHE_ENV, TrainConfig, evaluate_loss, train, translation_batches
from lib.transformer import Transformer, TransformerConfig


def _examples(seed=0, n=120):
    rng = random.Random(seed)
    return [([rng.randrange(4, 40) for _ in range(rng.randrange(3, 12))],) * 2 for _ in range(n)]


def _model(seed=0):
    torch.manual_seed(seed)
    return Transformer(TransformerConfig.tiny(vocab_size=40, max_len=64, dropout=0.1))


def _train(model, lines, examples=None, **config):
    examples = examples or _examples()
    val = translation_batches(examples[:20], 400, 0)(0)
    cfg = TrainConfig(**{"max_steps": 6, "max_tokens": 400, "warmup": 2, "eval_every_steps": 3, "amp": False} | config)
    return train(
        model,
        translation_batches(examples, cfg.max_tokens, cfg.seed),
        cfg,
        evaluate=lambda m: evaluate_loss(m, val),
        progress=False,
        log=lines.append,
    )


def test_a_second_identical_run_is_restored_with_its_weights_random_state_and_log(tmp_path, monkeypatch):
    monkeypatch.setenv(TRAIN_CACHE_ENV, str(tmp_path))
    first_lines, second_lines = [], []
    first_model = _model()
    first = _train(first_model, first_lines)
    after_first = torch.rand(3)  # the random stream as the training left it
    kept = list(tmp_path.iterdir())
    assert len(kept) == 1 and kept[0].name.startswith("train-")

    second_model = _model()
    torch.manual_seed(123)  # whatever happened in between: the restored run sets the random state it ended with
    second = _train(second_model, second_lines)
    assert torch.equal(torch.rand(3), after_first)
    assert second == first and second.steps == 6 and [h["step"] for h in second.history] == [3, 6]
    assert second_lines == first_lines and len(first_lines) == 2 and first_lines[0].startswith("step")
    assert not second_model.training
    for (name, p), q in zip(first_model.state_dict().items(), second_model.state_dict().values()):
        assert torch.equal(p, q), name
    assert not torch.equal(next(_model().parameters()), next(second_model.parameters()))  # it was trained
    assert list(tmp_path.iterdir()) == kept


@pytest.mark.parametrize(
    "change",
    ["initial weights", "settings", "batches", "evaluate"],
)
def test_any_change_trains_again(tmp_path, monkeypatch, change):
    monkeypatch.setenv(TRAIN_CACHE_ENV, str(tmp_path))
    _train(_model(), [])
    if change == "initial weights":
        _train(_model(seed=1), [])
    elif change == "settings":
        _train(_model(), [], peak_lr=5e-4)
    elif change == "batches":
        _train(_model(), [], examples=_examples(seed=1))
    else:
        examples = _examples()
        cfg = TrainConfig(max_steps=6, max_tokens=400, warmup=2, eval_every_steps=3, amp=False)
        batches = translation_batches(examples, cfg.max_tokens, cfg.seed)
        train(_model(), batches, cfg, evaluate=lambda m: 0.0, progress=False, log=lambda line: None)
    assert len(list(tmp_path.iterdir())) == 2


def test_models_with_equal_weights_but_other_settings_train_apart(tmp_path, monkeypatch):
    """Dot-product and scaled dot-product attention have no weights of their own (and equal dropout rates
    none at all): kept runs must not mix them up, as they once did for the Bahdanau chapter's four scores."""
    monkeypatch.setenv(TRAIN_CACHE_ENV, str(tmp_path))
    results = {}
    for attention in ("dot", "scaled_dot"):
        torch.manual_seed(0)
        model = Seq2Seq(Seq2SeqConfig(40, d_embed=8, d_hidden=16, attention=attention, dropout=0.0, max_len=64))
        results[attention] = (_train(model, []), model.state_dict())
    assert len(list(tmp_path.iterdir())) == 2
    assert results["dot"][0] != results["scaled_dot"][0]
    assert not torch.equal(results["dot"][1]["output.weight"], results["scaled_dot"][1]["output.weight"])
    torch.manual_seed(0)
    _train(Transformer(TransformerConfig.tiny(vocab_size=40, max_len=64, dropout=0.2)), [])  # _model() has 0.1
    _train(_model(), [])
    assert len(list(tmp_path.iterdir())) == 4


def test_the_restored_model_holds_the_last_steps_gradients(tmp_path, monkeypatch):
    monkeypatch.setenv(TRAIN_CACHE_ENV, str(tmp_path))
    first, second = _model(), _model()
    _train(first, [])
    _train(second, [])
    for (name, p), q in zip(first.named_parameters(), second.parameters()):
        assert p.grad is not None and torch.equal(p.grad, q.grad), name


def test_a_run_that_changes_what_its_loss_reaches_is_not_kept(tmp_path, monkeypatch):
    """A loss that records into a list has an effect that restoring the weights would not repeat."""
    monkeypatch.setenv(TRAIN_CACHE_ENV, str(tmp_path))
    from lib.training import seq2seq_loss

    examples = _examples()
    cfg = TrainConfig(max_steps=4, max_tokens=400, warmup=2, eval_every_steps=4, amp=False)
    recorded = []
    for _ in range(2):
        losses = []

        def loss_fn(m, b, losses=losses):
            loss = seq2seq_loss(m, b, 0.1)
            losses.append(loss.item())
            return loss

        train(_model(), translation_batches(examples, 400, 0), cfg, loss_fn=loss_fn, progress=False, log=lambda _: 0)
        recorded.append(losses)
    assert recorded[0] == recorded[1] and len(recorded[0]) == 4
    assert list(tmp_path.iterdir()) == []


def test_closures_over_different_data_train_apart(tmp_path, monkeypatch):
    monkeypatch.setenv(TRAIN_CACHE_ENV, str(tmp_path))
    examples = _examples()
    cfg = TrainConfig(max_steps=4, max_tokens=400, warmup=2, eval_every_steps=4, amp=False)
    vals = []
    for seed in (1, 2):  # the same code, each evaluating on its own validation batches
        val = translation_batches(_examples(seed=seed)[:20], 400, 0)(0)
        result = train(
            _model(),
            translation_batches(examples, 400, 0),
            cfg,
            evaluate=lambda m, val=val: evaluate_loss(m, val),
            progress=False,
            log=lambda _: 0,
        )
        vals.append(result.history[-1]["val_loss"])
    assert len(list(tmp_path.iterdir())) == 2 and vals[0] != vals[1]


def test_nothing_is_kept_without_the_variable_with_a_minutes_budget_or_with_a_run_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(TRAIN_CACHE_ENV, raising=False)
    _train(_model(), [])
    monkeypatch.setenv(TRAIN_CACHE_ENV, str(tmp_path / "kept"))
    _train(_model(), [], max_steps=None, minutes=0.001)
    examples = _examples()
    cfg = TrainConfig(max_steps=2, max_tokens=400, warmup=2, amp=False)
    train(_model(), translation_batches(examples, 400, 0), cfg, out_dir=tmp_path / "run", progress=False, log=print)
    assert not (tmp_path / "kept").exists()


def test_a_damaged_kept_run_is_named_and_trained_again(tmp_path, monkeypatch):
    monkeypatch.setenv(TRAIN_CACHE_ENV, str(tmp_path))
    lines = []
    first = _train(_model(), lines)
    (kept,) = tmp_path.iterdir()
    kept.write_bytes(b"not a checkpoint")
    with pytest.warns(UserWarning, match="could not be read"):
        again = _train(_model(), [])
    # trained again (the same seeds: the same losses; the minutes differ) and kept anew
    assert [h["train_loss"] for h in again.history] == [h["train_loss"] for h in first.history]
    assert kept.stat().st_size > 1000
