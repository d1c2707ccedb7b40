"""Exercises of the chapter "Efficient attention": correct answers pass, typical wrong ones fail with a hint.

The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these CASES in
test_exercises.py.
"""

import math

import numpy as np
import torch

from lib.exercises import check


def window_mask_correct(seq_len, window, causal):
    i, j = np.indices((seq_len, seq_len))
    keep = np.abs(i - j) <= window
    return keep & (j <= i) if causal else keep


def receptive_field_correct(seq_len, window, layers):
    return min(layers * window, seq_len - 1)


def linear_attention_correct(phi_q, phi_k, v):
    kv = phi_k.T @ v  # (m, d_v): Σ_j φ(k_j) v_jᵀ
    z = phi_k.sum(dim=0)  # (m,):     φ(K)ᵀ 1
    return (phi_q @ kv) / (phi_q @ z)[:, None]


def linear_attention_quadratic_order(phi_q, phi_k, v):
    a = phi_q @ phi_k.T  # (n, n): seed 002's order, O(n²)
    return (a @ v) / a.sum(dim=1, keepdim=True)


def positive_features_correct(x, w):
    return torch.exp(x @ w.T - (x * x).sum(-1, keepdim=True) / 2) / math.sqrt(w.shape[0])


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "ea_window_mask": (
        window_mask_correct,
        [
            (lambda n, w, c: window_mask_correct(n, w - 1, c) if w > 1 else np.eye(n, dtype=bool), "(<=)"),
            (lambda n, w, c: window_mask_correct(n, w // 2, c), "total width"),
            (lambda n, w, c: window_mask_correct(n, w, True), "one-sided"),
            (lambda n, w, c: window_mask_correct(n, w, False), "forgot the causal part"),
            (lambda n, w, c: window_mask_correct(n, w, c).T if c else window_mask_correct(n, w, c), "masked the past"),
            (lambda n, w, c: ~window_mask_correct(n, w, c), "inverted the mask"),
            (lambda n, w, c: window_mask_correct(n, w, c)[:-1], "expected ("),
            (lambda n, w, c: 2 * window_mask_correct(n, w, c), "other than True/False"),
        ],
    ),
    "ea_receptive_field": (
        receptive_field_correct,
        [
            (lambda n, w, layers: w**layers, "multiplied the window by itself"),
            (lambda n, w, layers: layers * (2 * w + 1), "counted the positions"),
            (lambda n, w, layers: 2 * w * layers, "counted both sides"),
            (lambda n, w, layers: min(layers * w + 1, n), "counted the token itself"),
            (lambda n, w, layers: layers * w, "the sequence ends"),
            (lambda n, w, layers: 7, "Hint"),
            (lambda n, w, layers: "far", "single number"),
        ],
    ),
    "ea_linear_attention": (
        linear_attention_correct,
        [
            (linear_attention_quadratic_order, "O(n²)"),
            (lambda fq, fk, v: fq @ (fk.T @ v), "forgot the denominator"),
            (lambda fq, fk, v: fq @ (fk.T @ v) / (fq @ fk.sum(0)).sum(), "one number"),
            (lambda fq, fk, v: (fq / fk.sum(0)) @ (fk.T @ v), "elementwise per feature"),
            (lambda fq, fk, v: torch.softmax(fq @ fk.T, dim=-1) @ v, "applied a softmax"),
            (lambda fq, fk, v: linear_attention_correct(fq, fk, v).T, "expected (n_q, d_v)"),
        ],
    ),
    "ea_performer_features": (
        positive_features_correct,
        [
            (lambda x, w: torch.exp(x @ w.T) / math.sqrt(w.shape[0]), "forgot the − ‖x‖²/2"),
            (lambda x, w: torch.exp(x @ w.T - (x * x).sum(-1, keepdim=True) / 2), "forgot to divide by √m"),
            (lambda x, w: torch.exp(x @ w.T - (x * x).sum(-1, keepdim=True) / 2) / w.shape[0], "divided by m"),
            (
                lambda x, w: torch.exp(x @ w.T - (x * x).sum(-1, keepdim=True)) / math.sqrt(w.shape[0]),
                "instead of ‖x‖²/2",
            ),
            (
                lambda x, w: torch.exp(x @ w.T - x.norm(dim=-1, keepdim=True) / 2) / math.sqrt(w.shape[0]),
                "squared length",
            ),
            (lambda x, w: torch.sin(x @ w.T), "negative"),
            (lambda x, w: torch.cat([torch.sin(x @ w.T), torch.cos(x @ w.T)], -1), "shape"),
            (lambda x, w: torch.exp(x @ w), "raised"),
        ],
    ),
}


def test_answers_may_be_lists_numpy_or_tensors(capsys):
    assert check("ea_window_mask", lambda *a: torch.from_numpy(window_mask_correct(*a)))
    assert check("ea_window_mask", lambda *a: window_mask_correct(*a).astype(int).tolist())
    assert check("ea_receptive_field", lambda *a: float(receptive_field_correct(*a)))
    assert check("ea_linear_attention", lambda *a: linear_attention_correct(*a).numpy())
    assert check("ea_performer_features", lambda *a: positive_features_correct(*a).tolist())


def test_linear_attention_quadratic_order_names_the_memory(capsys):
    assert not check("ea_linear_attention", linear_attention_quadratic_order)
    out = capsys.readouterr().out
    assert "at n = 2048 your function held 16.1 MiB" in out and "φ(Q)(φ(K)ᵀ1)" in out
    assert check("ea_linear_attention", linear_attention_correct)
    assert "KiB at its peak" in capsys.readouterr().out
