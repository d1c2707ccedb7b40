"""Tests of the exercises of the chapter "BERT and GPT": a correct answer passes, typical mistakes are named.

``test_exercises.py`` also collects this module's ``CASES``.
"""

import math

import numpy as np
import torch

from lib.exercises import check
from lib.gpt import GPT, GPTConfig


def pair_inputs_correct(a, b, cls_id, sep_id):
    ids = [cls_id, *a, sep_id, *b, sep_id]
    return ids, [0] * (len(a) + 2) + [1] * (len(b) + 1)


def perplexity_correct(log_probs):
    return math.exp(-np.mean(log_probs))


def sample_probs_correct(logits, temperature, k):
    z = torch.as_tensor(logits) / temperature
    z = z.masked_fill(z < z.topk(k).values[-1], float("-inf"))
    return torch.softmax(z, -1)


def sample_probs_no_renorm(logits, temperature, k):
    p = torch.softmax(torch.as_tensor(logits) / temperature, -1)
    return p.masked_fill(p < p.topk(k).values[-1], 0.0)


def gpt_params_correct(vocab_size, d_model, num_layers, d_ff, max_len):
    d = d_model
    return vocab_size * d + max_len * d + num_layers * (4 * d * d + 4 * d + 2 * d * d_ff + d_ff + d + 4 * d)


CASES = {
    "bert_pair_inputs": (
        pair_inputs_correct,
        [
            (lambda a, b, c, s: ([c, *a, s, *b], [0] * (len(a) + 2) + [1] * len(b)), "final [SEP]"),
            (lambda a, b, c, s: ([c, *a, s, *b, s], [0] * (len(a) + len(b) + 3)), "belong to segment 1"),
            (lambda a, b, c, s: ([c, *a, s, *b, s], [0] * (len(a) + 1) + [1] * (len(b) + 2)), "first [SEP] closes"),
            (lambda a, b, c, s: ([c, *a, *b, s], [0] * (len(a) + len(b) + 2)), "between the two sentences"),
        ],
    ),
    "lm_perplexity": (
        perplexity_correct,
        [
            (lambda lp: math.exp(-np.sum(lp)), "summed"),
            (lambda lp: math.exp(np.mean(lp)), "sign is wrong"),
            (lambda lp: 2 ** (-np.mean(lp)), "base 2"),
            (lambda lp: -np.mean(lp), "not its exponential"),
        ],
    ),
    "sample_probs": (
        sample_probs_correct,
        [
            (sample_probs_no_renorm, "did not renormalise"),
            (lambda z, t, k: sample_probs_correct(np.asarray(z) * t * t, t, k), "multiplied the logits by T"),
            (lambda z, t, k: torch.softmax(torch.as_tensor(z) / t, -1), "ignored k"),
            (lambda z, t, k: sample_probs_correct(z, 1.0, k) / t, "after the softmax"),
        ],
    ),
    "gpt_param_count": (
        gpt_params_correct,
        [
            (lambda v, d, n, f, m: gpt_params_correct(v, d, n, f, m) + v * d, "ties it to the token embedding"),
            (lambda v, d, n, f, m: gpt_params_correct(v, d, n, f, m) - m * d, "position embeddings"),
            (lambda v, d, n, f, m: gpt_params_correct(v, d, n, f, m) - n * 4 * d, "LayerNorms"),
            (lambda v, d, n, f, m: v * d, "lib.gpt.GPT has"),
        ],
    ),
}


def test_param_count_matches_lib_and_gpt1(capsys):
    c = GPTConfig(1000, d_model=64, num_heads=4, num_layers=3, d_ff=256, max_len=40, norm_first=False)
    assert GPT(c).num_parameters() == gpt_params_correct(1000, 64, 3, 256, 40)
    assert check("gpt_param_count", gpt_params_correct)
    n = gpt_params_correct(40478, 768, 12, 3072, 512)
    assert 116e6 < n < 118e6 and f"{n:,}" in capsys.readouterr().out
