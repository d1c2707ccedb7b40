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
