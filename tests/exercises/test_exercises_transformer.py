"""Tests of the chapter "The Transformer"'s exercises (lib/exercises/transformer.py).

Correct answers are written with ``lib`` or torch (not copied from the chapter); the wrong answers are the mistakes
readers make (unbiased variance, normalising over the batch, a tied matrix counted three times, the transposed
causal mask, ...), and each must give ❌ with a message naming the mistake, never a traceback.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from lib.attention import causal_mask
from lib.exercises import check, list_exercises
from lib.training import TrainConfig, noam_lr
from lib.transformer import Transformer, TransformerConfig

# --- answers, correct and wrong -------------------------------------------------------------------


def layer_norm_correct(x):
    return F.layer_norm(x, x.shape[-1:])


def layer_norm_unbiased(x):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)


def layer_norm_no_eps(x):
    return (x - x.mean(-1, keepdim=True)) / x.std(-1, unbiased=False, keepdim=True)


def layer_norm_batch_axis(x):
    return (x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, unbiased=False, keepdim=True) + 1e-5)


def layer_norm_no_mean(x):
    return x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)


def embedding_params_correct(vocab_size, d_model, shared):
    config = TransformerConfig(
        vocab_size,
        vocab_size,
        d_model=d_model,
        num_heads=1,
        num_encoder_layers=0,
        num_decoder_layers=1,
        d_ff=1,
        share_embeddings=shared,
    )
    model = Transformer(config)
    embed_and_output = {id(p): p for m in (model.src_embed, model.tgt_embed, model.output) for p in m.parameters()}
    return sum(p.numel() for p in embed_and_output.values())


def noam_peak_correct(d_model, warmup):
    return noam_lr(warmup, d_model, warmup)


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "layer_norm_last_axis": (
        layer_norm_correct,
        [
            (layer_norm_unbiased, "unbiased variance"),
            (layer_norm_no_eps, "forgot ε"),
            (layer_norm_batch_axis, "as BatchNorm does"),
            (layer_norm_no_mean, "forgot to subtract the mean"),
            (lambda x: F.layer_norm(x, x.shape[-1:])[..., :-1], "LayerNorm keeps the shape"),
            (lambda x: F.layer_norm(x, x.shape[-1:]) * 2, "expected [-1.41421"),  # no known mistake
            (3.0, "expected a function"),
        ],
    ),
    "tied_embedding_params": (
        embedding_params_correct,
        [
            (lambda v, d, shared: 3 * v * d, "count once"),
            (lambda v, d, shared: v * d if shared else 2 * v * d, "there are three"),
            (lambda v, d, shared: v * d + v if shared else 3 * v * d, "no bias"),
            (lambda v, d, shared: 2 * v * d if shared else 3 * v * d, "shared matrix twice"),
            (lambda v, d, shared: v * d, "three separate"),
            (lambda v, d, shared: 42, "Hint"),
        ],
    ),
    "noam_peak": (
        noam_peak_correct,
        [
            (lambda d, w: w**-0.5, "forgot the factor d_model^-0.5"),
            (lambda d, w: d**-0.5 * w**-1.5, "at step 1"),
            (lambda d, w: (d * w) ** 0.5, "inverse of the peak"),
            (lambda d, w: 0.001, "Hint"),
        ],
    ),
    "decoder_causal_mask": (
        causal_mask,
        [
            (lambda n: ~causal_mask(n), "inverted the meaning"),
            (lambda n: causal_mask(n).T, "transpose"),
            (lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1), "attend to itself"),
            (lambda n: torch.zeros(n, n).masked_fill(~causal_mask(n), float("-inf")), "additive mask"),
            (lambda n: causal_mask(n + 1), "expected (4, 4)"),
            (lambda n: causal_mask(n).int() * 2, "values other than True/False"),
        ],
    ),
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


def test_registry_lists_the_chapter_exercises():
    names = [ex.name for ex in list_exercises("transformer")]
    assert names == ["layer_norm_last_axis", "tied_embedding_params", "noam_peak", "decoder_causal_mask"]


def test_answers_in_other_forms_are_accepted(capsys):
    assert check("layer_norm_last_axis", lambda x: F.layer_norm(x, x.shape[-1:]).numpy())
    assert check("decoder_causal_mask", lambda n: np.tril(np.ones((n, n), dtype=int)))
    assert check("noam_peak", lambda d, w: torch.tensor((d * w) ** -0.5))
    assert check("tied_embedding_params", lambda v, d, shared: np.int64(v * d * (1 if shared else 3)))


def test_seed_numbers_behind_the_checkers():
    # seed 001: the output layer 512 × 10,000; the capstone's schedule peaks at TrainConfig.peak_lr.
    assert embedding_params_correct(10000, 512, True) == 5_120_000
    assert embedding_params_correct(10000, 512, False) == 15_360_000
    recipe = TrainConfig(max_steps=1)
    assert math.isclose(noam_lr(recipe.warmup, 128, recipe.warmup, recipe.lr_factor(128)), recipe.peak_lr)
    assert torch.allclose(
        layer_norm_correct(torch.tensor([1.0, 3.0, 3.0, 5.0])), torch.tensor([-1.41421, 0.0, 0.0, 1.41421]), atol=1e-4
    )
