"""lib.experiments: the synthetic sequence task, accuracy by length, and the cached reversal experiment."""

import pytest
import torch
from torch import nn

import lib.experiments
from lib.data import make_batches
from lib.experiments import accuracy_by_length, reversal_experiment, sequence_task
from lib.seq2seq import Seq2Seq, Seq2SeqConfig
from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID
from lib.training import TrainConfig, evaluate_loss, train, translation_batches


def padded_batch():
    src = torch.tensor([[5, 6, 7, 8, EOS_ID], [6, 7, EOS_ID, PAD_ID, PAD_ID]])
    tgt = torch.tensor([[BOS_ID, 5, 6, 7], [BOS_ID, 8, PAD_ID, PAD_ID]])
    return src, tgt


def test_sequence_task():
    pairs = sequence_task(200, 3, 7, num_symbols=5, kind="reverse", seed=3)
    assert len(pairs) == 200 and pairs == sequence_task(200, 3, 7, num_symbols=5, kind="reverse", seed=3)
    assert all(t == s[::-1] and 3 <= len(s) <= 7 and all(4 <= i < 9 for i in s) for s, t in pairs)
    assert {len(s) for s, _ in pairs} == set(range(3, 8))
    assert all(t == s for s, t in sequence_task(20, 2, 4, kind="copy"))
    for kw, match in [
        ({"min_len": 0}, "min_len"),
        ({"max_len": 1}, "max_len"),
        ({"num_symbols": 1}, "num_symbols"),
        ({"kind": "sort"}, "kind"),
    ]:
        args = {"n": 5, "min_len": 2, "max_len": 4, **kw}
        with pytest.raises(ValueError, match=match):
            sequence_task(**args)


def test_attention_learns_to_reverse_short_sequences():
    # 150 steps of the book's own training loop: the attention model reverses lengths 3–6 almost perfectly
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(16, d_embed=32, d_hidden=64, attention="additive", dropout=0.0, max_len=20))
    pairs = sequence_task(3000, 3, 6, num_symbols=8, seed=0)
    val = make_batches(sequence_task(50, 3, 6, num_symbols=8, seed=1), 2000, PAD_ID, BOS_ID, EOS_ID)
    config = TrainConfig(
        max_tokens=600, peak_lr=3e-3, warmup=50, label_smoothing=0.0, max_steps=150, eval_every_minutes=10
    )
    train(
        model,
        translation_batches(pairs, config.max_tokens),
        config,
        evaluate=lambda m: evaluate_loss(m, val),
        progress=False,
        log=lambda *_: None,
    )
    acc = accuracy_by_length(model, sequence_task(300, 3, 6, num_symbols=8, seed=2))
    assert acc.lengths == list(range(3, 7)) and sum(acc.count) == 300
    assert min(acc.token) > 0.9, acc


def test_accuracy_by_length_counts_missing_tokens_as_wrong(monkeypatch):
    # a stand-in decoder whose output is always [4, 5]: right for ([4, 5] -> [4, 5]), half right for
    # the 4-token target (2 of max(2, 4) positions), wrong for ([9, 9] -> [5, 4])
    monkeypatch.setattr(lib.experiments, "greedy_decode", lambda model, src, max_len=None: [[4, 5]] * src.size(0))
    acc = accuracy_by_length(nn.Identity(), [([4, 5], [4, 5]), ([4, 5, 6, 7], [4, 5, 6, 7]), ([9, 9], [5, 4])])
    assert acc.lengths == [2, 4] and acc.count == [2, 1]
    assert acc.token == [0.5, 0.5] and acc.sequence == [0.5, 0.0]


def test_reversal_experiment_trains_once_then_loads_from_the_cache(tmp_path):
    kw = dict(steps=3, min_len=2, max_len=4, num_symbols=5, d_embed=8, d_hidden=8, cache_dir=tmp_path)
    first = reversal_experiment("dot", **kw)
    assert not first.cached and first.steps == 3 and first.accuracy.lengths == [2, 3, 4]
    again = reversal_experiment("dot", **kw)
    assert again.cached and again.accuracy == first.accuracy and again.history == first.history
    src, tgt = padded_batch()
    src = src.clamp(max=8)
    torch.testing.assert_close(again.model(src, tgt.clamp(max=8)), first.model(src, tgt.clamp(max=8)))
    assert len(list(tmp_path.glob("reversal-dot-*.pt"))) == 1
    assert not reversal_experiment(None, **kw).cached  # other arguments, other file


def test_a_broken_cache_file_is_reported_and_trained_again(tmp_path):
    kw = dict(steps=2, min_len=2, max_len=3, num_symbols=4, d_embed=8, d_hidden=8, cache_dir=tmp_path)
    reversal_experiment("dot", **kw)
    (path,) = tmp_path.glob("reversal-dot-*.pt")
    path.write_bytes(path.read_bytes()[:100])  # truncated
    with pytest.warns(UserWarning, match="could not be read"):
        again = reversal_experiment("dot", **kw)
    assert not again.cached and again.steps == 2
    assert reversal_experiment("dot", **kw).cached  # rewritten, readable again


# --- the modern-Transformer chapter: positions swapped into a Transformer, cached trainings ----------------------


def test_transformer_with_positions_swaps_only_the_positions():
    from lib.attention import MultiHeadAttention
    from lib.experiments import POSITION_KINDS, transformer_with_positions
    from lib.positional import LearnedPositionalEncoding, NoPositionalEncoding, PositionalEncoding
    from lib.positional_attention import ALiBiMultiHeadAttention, RotaryMultiHeadAttention
    from lib.transformer import TransformerConfig

    config = TransformerConfig.tiny(40, max_len=16)
    models = {kind: transformer_with_positions(config, kind, seed=3) for kind in POSITION_KINDS}
    assert type(models["sinusoidal"].positional) is PositionalEncoding
    assert type(models["learned"].positional) is LearnedPositionalEncoding
    for kind, cls in (("rope", RotaryMultiHeadAttention), ("alibi", ALiBiMultiHeadAttention)):
        model = models[kind]
        assert type(model.positional) is NoPositionalEncoding
        assert all(type(layer.self_attn) is cls for layer in [*model.encoder.layers, *model.decoder.layers])
        assert all(type(layer.cross_attn) is MultiHeadAttention for layer in model.decoder.layers)
    # the same initial weights in every kind (the learned table aside): only the positions differ
    reference = models["sinusoidal"].state_dict()
    for kind, model in models.items():
        state = {k: v for k, v in model.state_dict().items() if k != "positional.table"}
        assert state.keys() == reference.keys(), kind
        assert all(torch.equal(state[k], reference[k]) for k in state), kind
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    outputs = [m.eval()(src, tgt) for m in models.values()]
    assert all(not torch.allclose(outputs[0], o) for o in outputs[1:])  # ... and the positions do change the model


def test_modern_experiment_arguments_are_checked_before_any_training(tmp_path):
    from lib.experiments import extrapolation_run, language_model_run, load_modern_results, transformer_with_positions
    from lib.transformer import TransformerConfig

    with pytest.raises(ValueError, match="kind must be one of"):
        transformer_with_positions(TransformerConfig.tiny(40), "relative")
    with pytest.raises(TypeError, match="TransformerConfig"):
        transformer_with_positions({"d_model": 32}, "rope")
    with pytest.raises(ValueError, match="kind"):
        extrapolation_run("absolute")
    with pytest.raises(ValueError, match="steps"):
        extrapolation_run("rope", steps=0)
    with pytest.raises(ValueError, match="edges"):
        extrapolation_run("rope", edges=(1, 20, 10))
    with pytest.raises(ValueError, match="kind"):
        language_model_run("bert")
    with pytest.raises(ValueError, match="batch_size"):
        language_model_run("gpt", batch_size=0)
    with pytest.raises(FileNotFoundError, match=r"bench/modern_transformer\.py"):
        load_modern_results(tmp_path / "missing.json")
    (tmp_path / "old.json").write_text('{"version": 0}')
    with pytest.raises(ValueError, match="version"):
        load_modern_results(tmp_path / "old.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_modern_results(tmp_path / "broken.json")


def test_modern_results_round_trip(tmp_path):
    from lib.experiments import load_modern_results, save_modern_results

    path = save_modern_results({"rope": {"step_losses": [9.1]}}, {"gpt": {"parameters": 3}}, tmp_path / "r.json", x=1)
    data = load_modern_results(path)
    assert data["extrapolation"]["rope"]["step_losses"] == [9.1] and data["language_models"]["gpt"]["parameters"] == 3
    assert data["x"] == 1


def test_the_committed_modern_results_are_complete_and_consistent():
    """models/modern/results.json, written by bench/modern_transformer.py: what the chapter reads."""
    from lib.experiments import POSITION_KINDS, load_modern_results

    data = load_modern_results()
    runs, lms = data["extrapolation"], data["language_models"]
    assert list(runs) == list(POSITION_KINDS) and sorted(lms) == ["gpt", "modern"]
    for run in runs.values():
        assert len(run["step_losses"]) == run["settings"]["steps"] == 300
        assert [b["low"] for b in run["buckets"]] == run["settings"]["edges"]
        assert sum(b["pairs"] for b in run["buckets"]) == 2014  # every validation and test pair, once
        table = 64 * 64 if run["kind"] == "learned" else 0  # a learned table: 64 positions × d_model 64 more
        assert run["history"][-1]["step"] == 300 and run["parameters"] == runs["sinusoidal"]["parameters"] + table
        # learning happened: the final loss is far below the first (ln 8000 ≈ 9.0 nats at the start)
        assert run["step_losses"][0] > 8.5 and run["history"][-1]["val_loss"] < 6.0
    # the same first batch and the same initial weights: only the positions make the first losses differ
    assert len({round(r["step_losses"][0], 1) for r in runs.values()}) <= 2
    assert [lms[k]["parameters"] for k in ("gpt", "modern")] == [1_426_944, 1_427_072]
    assert all(len(lm["step_losses"]) == 300 and lm["history"][-1]["step"] == 300 for lm in lms.values())


def test_modern_results_with_a_nan_are_refused_not_written_as_bare_nan(tmp_path):
    # json.dumps wrote a bare NaN, which is not JSON (browsers and jq refuse the file)
    from lib.experiments import save_modern_results

    with pytest.raises(ValueError, match=r"NaN or infinite .* at \$.extrapolation.rope.step_losses\[1\]"):
        save_modern_results({"rope": {"step_losses": [9.1, float("nan")]}}, {}, tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()
