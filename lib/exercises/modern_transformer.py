"""Checkers of the chapter "The modern Transformer" (registered in :data:`lib.exercises.EXERCISES` on import)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..decode import kv_cache_bytes
from ..positional import alibi_slopes, apply_rotary
from .core import as_array, as_number, call_answer, diagnose, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "modern_transformer"


# --------------------------------------------------------------------------------------------
# rope_rotate(x, pos, base): one vector rotated to its position
# --------------------------------------------------------------------------------------------


def _rotate_pairs(x: np.ndarray, angle: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    out = x.copy()
    c, s = np.cos(angle), np.sin(angle)
    out[first] = x[first] * c - x[second] * s
    out[second] = x[first] * s + x[second] * c
    return out


def _rope_variants(x: np.ndarray, pos: int, base: float) -> dict[str, np.ndarray]:
    d = x.shape[0]
    i = np.arange(d // 2)
    theta = base ** (-2.0 * i / d)
    even, odd = 2 * i, 2 * i + 1
    return {
        "you paired feature i with feature i + d/2 (the layout of GPT-NeoX and Llama's Hugging Face port); the "
        "RoFormer paper and lib rotate neighbouring features, the pairs (2i, 2i+1)": _rotate_pairs(
            x, pos * theta, i, i + d // 2
        ),
        "you rotated the wrong way (by −m·θ_i): x_2i becomes x_2i·cos − x_2i+1·sin and x_2i+1 becomes "
        "x_2i·sin + x_2i+1·cos": _rotate_pairs(x, -pos * theta, even, odd),
        "your frequencies are base^(−i/d); the paper's are θ_i = base^(−2i/d) for pair i": _rotate_pairs(
            x, pos * base ** (-1.0 * i / d), even, odd
        ),
        "your frequencies are base^(−4i/d): with i already counting pairs, θ_i = base^(−2i/d) (or use the "
        "even feature index 2i and divide by d)": _rotate_pairs(x, pos * base ** (-4.0 * i / d), even, odd),
        "you returned x unrotated": x,
    }


@exercise(
    "mt_rope_rotate",
    chapter=_CHAPTER,
    summary="rope_rotate(x, pos, base): rotate each feature pair (2i, 2i+1) of x by pos · base^(−2i/d)",
)
def _check_rope_rotate(answer: Any) -> str | None:
    """``answer(x, pos, base)`` for one vector ``x (d,)`` must equal lib's apply_rotary at that position."""
    require_callable(answer, "rope_rotate(x, pos, base)")
    gen = torch.Generator().manual_seed(0)
    for d, pos, base in [
        (2, 1, 10000.0),
        (4, 3, 10000.0),
        (8, 7, 10000.0),
        (8, 100, 10000.0),
        (6, 5, 10.0),
        (8, 0, 1e4),
    ]:
        x = torch.randn(d, generator=gen, dtype=torch.float64)
        expected = apply_rotary(x[None], torch.tensor([pos]), base)[0].numpy()
        got = as_array(call_answer(answer, x.clone(), pos, base), f"rope_rotate(x, {pos}, {base:g})")
        where = f"for d = {d}, pos = {pos}, base = {base:g}"
        if got.shape != expected.shape:
            raise AssertionError(f"{where} your output has shape {got.shape}; expected ({d},)")
        if not np.allclose(got, expected, atol=1e-5, rtol=1e-5):
            hint = diagnose(got, _rope_variants(x.numpy(), pos, base), atol=1e-5)
            raise AssertionError(f"{where} you returned {fmt(got)}; expected {fmt(expected)}.{hint}")
    return "Every pair turns by its own angle and keeps its length: ‖rope_rotate(x, m)‖ = ‖x‖ at every position."


# --------------------------------------------------------------------------------------------
# alibi_slopes(n): the head slopes for n a power of two
# --------------------------------------------------------------------------------------------


def _slope_variants(n: int) -> dict[str, np.ndarray]:
    start = 2.0 ** (-8.0 / n)
    right = np.array([start ** (i + 1) for i in range(n)])
    return {
        "your sequence starts at 1 (exponent i instead of i + 1); the first head's slope is 2^(−8/n)": np.array(
            [start**i for i in range(n)]
        ),
        "your slopes are in reverse order: head 0 gets the largest slope, 2^(−8/n), the last head 2^(−8)": right[
            ::-1
        ].copy(),
        "you used 1/2, 1/4, … (the 8-head sequence) for every n; the ratio is 2^(−8/n), so the last head always "
        "gets 2^(−8)": np.array([0.5 ** (i + 1) for i in range(n)]),
        "your slopes fall linearly; the paper's are a geometric sequence, each 2^(−8/n) times the one before": np.array(
            [(n - i) / n for i in range(n)]
        ),
    }


@exercise(
    "mt_alibi_slopes",
    chapter=_CHAPTER,
    summary="alibi_slopes(n): ALiBi's head slopes 2^(−8/n), 2^(−16/n), …, 2^(−8) for n a power of two",
)
def _check_alibi_slopes(answer: Any) -> str | None:
    """``answer(n)`` for n = 1, 2, 4, 8, 16 must equal lib's alibi_slopes(n)."""
    require_callable(answer, "alibi_slopes(n)")
    for n in (8, 1, 2, 4, 16):
        expected = alibi_slopes(n).double().numpy()
        got = as_array(call_answer(answer, n), f"alibi_slopes({n})").reshape(-1)
        if got.shape != expected.shape:
            raise AssertionError(f"alibi_slopes({n}) has {got.size} slopes; expected one per head, {n}")
        if not np.allclose(got, expected, rtol=1e-5, atol=0):
            hint = diagnose(got, _slope_variants(n), atol=1e-6)
            raise AssertionError(f"alibi_slopes({n}) is {fmt(got)}; expected {fmt(expected)}.{hint}")
    return "With 8 heads: 1/2, 1/4, …, 1/256 — head 0 looks only at its neighbours, the last head almost everywhere."


# --------------------------------------------------------------------------------------------
# rms_norm(x, weight, eps)
# --------------------------------------------------------------------------------------------


def _rms_variants(x: torch.Tensor, w: torch.Tensor, eps: float) -> dict[str, np.ndarray]:
    ms = x.pow(2).mean(-1, keepdim=True)
    centred = x - x.mean(-1, keepdim=True)
    return {
        "you subtracted the mean (that is LayerNorm); RMSNorm only divides by the root mean square": (
            centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps) * w
        ).numpy(),
        "you added ε after the square root; the paper and torch.nn.RMSNorm add it to the mean square, "
        "√(mean(x²) + ε)": (x / (torch.sqrt(ms) + eps) * w).numpy(),
        "you forgot the gain: multiply by `weight` (g) at the end": (x / torch.sqrt(ms + eps)).numpy(),
        "you divided by the length √(Σ x²); RMS is the root of the *mean* square, √(Σ x² / d)": (
            x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w
        ).numpy(),
        "you divided by the standard deviation": (x / x.std(-1, keepdim=True) * w).numpy(),
    }


@exercise(
    "mt_rms_norm",
    chapter=_CHAPTER,
    summary="rms_norm(x, weight, eps): x / √(mean(x²) + ε) · g over the last axis, as torch.nn.RMSNorm",
)
def _check_rms_norm(answer: Any) -> str | None:
    """``answer(x, weight, eps)`` must equal torch's ``F.rms_norm`` over the last dimension."""
    require_callable(answer, "rms_norm(x, weight, eps)")
    gen = torch.Generator().manual_seed(0)
    for shape, scale, eps in [((4,), 1.0, 1e-6), ((3, 8), 2.0, 1e-6), ((2, 3, 6), 1.0, 1e-5), ((2, 4), 0.01, 1e-2)]:
        x = torch.randn(*shape, generator=gen, dtype=torch.float64) * scale + 0.5 * scale
        w = torch.rand(shape[-1], generator=gen, dtype=torch.float64) + 0.5
        expected = F.rms_norm(x, (shape[-1],), w, eps).numpy()
        got = as_array(call_answer(answer, x.clone(), w.clone(), eps), f"rms_norm(x of shape {shape}, weight, {eps:g})")
        where = f"for x of shape {shape} (entries about {scale:g}), eps = {eps:g}"
        if got.shape != expected.shape:
            raise AssertionError(f"{where} your output has shape {got.shape}; expected {expected.shape}")
        if not np.allclose(got, expected, rtol=1e-6, atol=1e-8):
            hint = diagnose(got, _rms_variants(x, w, eps), atol=1e-8)
            flat_got, flat_exp = got.reshape(-1, shape[-1]), expected.reshape(-1, shape[-1])
            raise AssertionError(f"{where} your first row is {fmt(flat_got[0])}; expected {fmt(flat_exp[0])}.{hint}")
    return "No mean, no bias: one statistic per position instead of two, the same result as torch.nn.RMSNorm."


# --------------------------------------------------------------------------------------------
# kv_cache_size(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch, bytes_per_value)
# --------------------------------------------------------------------------------------------


@exercise(
    "mt_kv_cache",
    chapter=_CHAPTER,
    summary="kv_cache_size(...): bytes of a decoder's key/value cache with num_kv_heads key/value heads",
)
def _check_kv_cache(answer: Any) -> str | None:
    """``answer(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch, bytes_per_value)`` in bytes."""
    require_callable(
        answer, "kv_cache_size(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch, bytes_per_value)"
    )
    cases = [
        (3, 8, 2, 128, 50, 5, 4),  # every factor different, so that a wrong answer shows which one it missed
        (80, 64, 8, 8192, 4096, 1, 2),  # Llama 2 70B, float16
        (2, 4, 2, 128, 48, 1, 4),  # the chapter's decoder, float32
        (32, 32, 32, 4096, 2048, 4, 2),  # multi-head attention (every head keeps its keys and values)
        (24, 16, 1, 2048, 1000, 3, 2),  # multi-query attention
    ]
    for layers, heads, kv_heads, d_model, t, batch, nbytes in cases:
        d_k = d_model // heads
        expected = kv_cache_bytes(layers, kv_heads, d_k, t, batch, nbytes)
        args = (layers, heads, kv_heads, d_model, t, batch, nbytes)
        value = as_number(call_answer(answer, *args), f"kv_cache_size{args}")
        if math.isclose(value, expected, rel_tol=1e-9):
            continue
        wrong = [
            (
                "you cached every query head (num_heads); grouped-query attention keeps only num_kv_heads key/value "
                "heads",
                kv_cache_bytes(layers, heads, d_k, t, batch, nbytes),
            ),
            ("you forgot the factor 2: the cache holds a key *and* a value vector", expected // 2),
            ("you forgot the batch: every sequence decoded keeps its own cache", expected // batch),
            ("you forgot the layers: every layer keeps its own keys and values", expected // layers),
            ("you counted values, not bytes: multiply by bytes_per_value", expected // nbytes),
            ("the cache grows linearly with t, not with t² (that is the attention matrix)", expected * t),
        ]
        why = next((m for m, v in wrong if math.isclose(value, v, rel_tol=1e-9) and v != expected), None)
        hint = f" It looks like {why}." if why else " Hint: 2 · layers · kv heads · d_k · t · batch · bytes."
        raise AssertionError(f"kv_cache_size{args} is {value:,.0f}; expected {expected:,}.{hint}")
    return "Llama 2 70B: 1.25 GiB per 4,096-token sequence with 8 key/value heads, 10 GiB with all 64."
