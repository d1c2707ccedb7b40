"""Exercises of the chapter "The modern Transformer": correct answers pass, typical wrong ones fail with a hint.

The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these CASES in
test_exercises.py.
"""

import math

import numpy as np
import torch

from lib.exercises import check


def rope_rotate_correct(x, pos, base=10000.0):
    d = x.shape[0]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # θ_i = base^(−2i/d)
    c, s = torch.cos(pos * theta), torch.sin(pos * theta)
    out = x.clone()
    out[0::2] = x[0::2] * c - x[1::2] * s
    out[1::2] = x[0::2] * s + x[1::2] * c
    return out


def rope_rotate_half(x, pos, base=10000.0):
    d = x.shape[0]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    c, s = torch.cos(pos * theta), torch.sin(pos * theta)
    a, b = x[: d // 2], x[d // 2 :]
    return torch.cat([a * c - b * s, a * s + b * c])


def alibi_slopes_correct(n):
    return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]


def rms_norm_correct(x, weight, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def kv_cache_correct(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch, bytes_per_value):
    return 2 * num_layers * num_kv_heads * (d_model // num_heads) * seq_len * batch * bytes_per_value


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "mt_rope_rotate": (
        rope_rotate_correct,
        [
            (rope_rotate_half, "i + d/2"),
            (lambda x, pos, base=1e4: rope_rotate_correct(x, -pos, base), "wrong way"),
            (lambda x, pos, base=1e4: rope_rotate_correct(x, pos, base**0.5), "base^(−i/d)"),
            (lambda x, pos, base=1e4: rope_rotate_correct(x, pos, base**2), "base^(−4i/d)"),
            (lambda x, pos, base=1e4: x, "unrotated"),
            (lambda x, pos, base=1e4: rope_rotate_correct(x, pos, base)[:-1], "shape"),
        ],
    ),
    "mt_alibi_slopes": (
        alibi_slopes_correct,
        [
            (lambda n: [2.0 ** (-8.0 * i / n) for i in range(n)], "starts at 1"),
            (lambda n: alibi_slopes_correct(n)[::-1], "reverse order"),
            (lambda n: [0.5 ** (i + 1) for i in range(n)], "8-head sequence"),
            (lambda n: [(n - i) / n for i in range(n)], "geometric"),
            (lambda n: alibi_slopes_correct(n)[:-1] if n > 1 else [], "one per head"),
        ],
    ),
    "mt_rms_norm": (
        rms_norm_correct,
        [
            (
                lambda x, w, eps: rms_norm_correct(x - x.mean(-1, keepdim=True), w, eps),
                "LayerNorm",
            ),
            (lambda x, w, eps: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * w, "after the square root"),
            (lambda x, w, eps: rms_norm_correct(x, 1.0, eps), "gain"),
            (lambda x, w, eps: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w, "mean* square"),
            (lambda x, w, eps: x / x.std(-1, keepdim=True) * w, "standard deviation"),
            (lambda x, w, eps: rms_norm_correct(x, w, eps)[..., :-1], "shape"),
        ],
    ),
    "mt_kv_cache": (
        kv_cache_correct,
        [
            (lambda L, h, kv, d, t, b, n: kv_cache_correct(L, h, h, d, t, b, n), "num_kv_heads"),
            (lambda L, h, kv, d, t, b, n: kv_cache_correct(L, h, kv, d, t, b, n) // 2, "factor 2"),
            (lambda L, h, kv, d, t, b, n: kv_cache_correct(L, h, kv, d, t, 1, n), "batch"),
            (lambda L, h, kv, d, t, b, n: kv_cache_correct(1, h, kv, d, t, b, n), "layers"),
            (lambda L, h, kv, d, t, b, n: kv_cache_correct(L, h, kv, d, t, b, 1), "bytes_per_value"),
            (lambda L, h, kv, d, t, b, n: kv_cache_correct(L, h, kv, d, t * t, b, n), "t²"),
            (lambda L, h, kv, d, t, b, n: 12345, "Hint"),
        ],
    ),
}


def test_answers_may_be_lists_numpy_or_tensors(capsys):
    assert check("mt_rope_rotate", lambda x, pos, base: rope_rotate_correct(x, pos, base).numpy())
    assert check("mt_alibi_slopes", lambda n: torch.tensor(alibi_slopes_correct(n)))
    assert check("mt_alibi_slopes", lambda n: np.array(alibi_slopes_correct(n)))
    assert check("mt_rms_norm", lambda x, w, eps: rms_norm_correct(x, w, eps).tolist())
    assert check("mt_kv_cache", lambda *a: float(kv_cache_correct(*a)))


def test_the_rope_answer_keeps_lengths_and_the_llama_2_cache_is_1_25_gib(capsys):
    x = torch.randn(8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert math.isclose(rope_rotate_correct(x, 123, 1e4).norm().item(), x.norm().item(), rel_tol=1e-12)
    assert kv_cache_correct(80, 64, 8, 8192, 4096, 1, 2) == 1.25 * 2**30
    assert check("mt_kv_cache", kv_cache_correct)
    assert "1.25 GiB" in capsys.readouterr().out
