"""lib.training.train(prefetch=True): the next epoch built in a background thread gives the same run."""

import random

import torch

from lib.training import TrainConfig, train, translation_batches
from lib.transformer import Transformer, TransformerConfig


def test_building_the_next_epoch_ahead_changes_nothing(monkeypatch):
    monkeypatch.delenv("ATTENTION_BOOK_TRAIN_CACHE", raising=False)
    rng = random.Random(0)
    examples = [([rng.randrange(4, 40) for _ in range(rng.randrange(3, 12))],) * 2 for _ in range(60)]
    built = []

    def batches(epoch):
        built.append(epoch)
        return translation_batches(examples, 300, 0)(epoch)

    # 60 short pairs in batches of 300 tokens: a few batches per epoch, so 12 steps cross several epochs
    assert 2 <= len(batches(0)) <= 5
    runs = {}
    for ahead in (False, True):
        built.clear()
        torch.manual_seed(0)
        model = Transformer(TransformerConfig.tiny(vocab_size=40, max_len=64, dropout=0.1))
        cfg = TrainConfig(max_steps=12, max_tokens=300, warmup=2, eval_every_steps=4, amp=False)
        result = train(model, batches, cfg, progress=False, log=lambda line: None, prefetch=ahead)
        runs[ahead] = (result, model.state_dict(), list(built))
    (plain, plain_w, plain_built), (ahead, ahead_w, ahead_built) = runs[False], runs[True]
    assert [h["train_loss"] for h in plain.history] == [h["train_loss"] for h in ahead.history]
    for name in plain_w:
        assert torch.equal(plain_w[name], ahead_w[name]), name
    epochs = plain_built[-1] + 1
    assert plain_built == list(range(epochs)) and epochs >= 3
    # with prefetching every epoch is built once, in order (the one built ahead of the last may still be running)
    assert ahead_built[:epochs] == plain_built and len(ahead_built) <= epochs + 1
