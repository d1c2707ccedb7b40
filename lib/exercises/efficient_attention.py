"""Checkers of the chapter "Efficient attention" (registered in :data:`lib.exercises.EXERCISES` on import)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..cost import peak_tensor_bytes
from ..efficient import linear_attention_quadratic, performer_features, random_projection, sliding_window_mask
from .core import as_array, as_number, call_answer, diagnose, exercise, fmt, observed, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "efficient_attention"


# --------------------------------------------------------------------------------------------
# window_mask(seq_len, window, causal)
# --------------------------------------------------------------------------------------------


def _band(n: int, keep) -> np.ndarray:
    i, j = np.indices((n, n))
    return keep(i, j)


def _window_variants(n: int, w: int, causal: bool) -> dict[str, np.ndarray]:
    past = (lambda i, j: j <= i) if causal else (lambda i, j: np.ones_like(i, dtype=bool))
    return {
        "you used |i − j| < window; the window includes the keys exactly `window` positions away (<=)": _band(
            n, lambda i, j: (np.abs(i - j) < w) & past(i, j)
        ),
        "you treated `window` as the total width of the band; it is the number of positions on *each* side "
        "(2·window + 1 keys in all)": _band(n, lambda i, j: (np.abs(i - j) <= w // 2) & past(i, j)),
        "your band is one-sided (only the past) although causal is False": _band(
            n, lambda i, j: (i - j >= 0) & (i - j <= w)
        ),
        "you forgot the causal part: with causal=True, key j > i (the future) must be masked": _band(
            n, lambda i, j: np.abs(i - j) <= w
        ),
        "you masked the past instead of the future: True means *may attend*, and a causal query sees j <= i": _band(
            n, lambda i, j: (np.abs(i - j) <= w) & (j >= i)
        ),
        (
            "you inverted the mask: in lib True means *may attend* (inside the band), False means masked"
        ): ~sliding_window_mask(n, w, causal=causal).numpy(),
    }


@exercise(
    "ea_window_mask",
    chapter=_CHAPTER,
    summary="window_mask(seq_len, window, causal): the (n, n) bool mask of sliding-window attention",
)
def _check_window_mask(answer: Any) -> str | None:
    """``answer(seq_len, window, causal)`` must equal lib's sliding_window_mask (True = may attend)."""
    require_callable(answer, "window_mask(seq_len, window, causal)")
    for n, w, causal in [
        (8, 3, False),
        (6, 1, False),
        (8, 2, True),
        (5, 1, True),
        (4, 10, False),
        (1, 3, False),
        (9, 4, False),
    ]:
        expected = sliding_window_mask(n, w, causal=causal).numpy()
        raw = call_answer(answer, n, w, causal)
        got = as_array(raw, f"window_mask({n}, {w}, {causal})")
        where = f"window_mask({n}, {w}, causal={causal})"
        if got.shape != expected.shape:
            raise AssertionError(f"{where} has shape {got.shape}; expected ({n}, {n})")
        if not np.isin(got, [0.0, 1.0]).all():
            raise AssertionError(f"{where} holds values other than True/False: {fmt(got[0])}")
        got = got.astype(bool)
        if not np.array_equal(got, expected):
            hint = diagnose(
                got.astype(float), {k: v.astype(float) for k, v in _window_variants(n, w, causal).items()}, atol=0.0
            )
            bad = int(np.argmax((got != expected).any(axis=1)))
            raise AssertionError(
                f"{where}: your row {bad} is {got[bad].astype(int).tolist()}; expected "
                f"{expected[bad].astype(int).tolist()}.{hint}"
            )
    return "Each row has at most 2·window + 1 True entries (window + 1 when causal): O(n·w) pairs, not n²."


# --------------------------------------------------------------------------------------------
# receptive_field(seq_len, window, layers)
# --------------------------------------------------------------------------------------------


def _reach(n: int, w: int, layers: int) -> int:
    """The largest |i − j| with a path j → i through `layers` sliding-window layers: boolean powers of lib's mask."""
    step = sliding_window_mask(n, w).to(torch.int64)
    reach = torch.eye(n, dtype=torch.int64)
    for _ in range(layers):
        reach = ((reach @ step) > 0).to(torch.int64)
    i, j = torch.nonzero(reach, as_tuple=True)
    return int((i - j).abs().max())


@exercise(
    "ea_receptive_field",
    chapter=_CHAPTER,
    summary="receptive_field(seq_len, window, layers): farthest distance information travels through the layers",
)
def _check_receptive_field(answer: Any) -> str | None:
    """``answer(seq_len, window, layers)`` = the largest |i − j| such that token j can affect token i's output."""
    require_callable(answer, "receptive_field(seq_len, window, layers)")
    for n, w, layers in [(64, 2, 1), (64, 2, 3), (64, 4, 6), (100, 3, 12), (10, 4, 5), (40, 1, 39), (12, 20, 1)]:
        expected = _reach(n, w, layers)
        value = as_number(call_answer(answer, n, w, layers), f"receptive_field({n}, {w}, {layers})")
        if value == expected:
            continue
        wrong = [
            (
                "you multiplied the window by itself; the reaches add up: each layer moves information at most "
                "`window` positions further",
                w**layers,
            ),
            (
                "you counted the positions of the band (2·window + 1 per layer); the question is the distance |i − j|",
                layers * (2 * w + 1),
            ),
            (
                "you counted both sides (2·window per layer); the distance |i − j| grows by `window` per layer",
                2 * w * layers,
            ),
            ("you counted the token itself (+1); the distance from a token to itself is 0", layers * w + 1),
            ("you forgot that the sequence ends: no distance exceeds seq_len − 1", layers * w),
        ]
        why = next((m for m, v in wrong if v == value), None)
        hint = (
            f" It looks like {why}."
            if why
            else (
                " Hint: after one layer token i has seen tokens i − w … i + w; in the next layer each of those has "
                "seen w further."
            )
        )
        raise AssertionError(f"receptive_field({n}, {w}, {layers}) is {value:g}; expected {expected}.{hint}")
    return (
        "Longformer's argument: l layers of window w see l·w tokens each way, so stacking restores long range "
        "while each layer stays O(n·w)."
    )


# --------------------------------------------------------------------------------------------
# linear_attention_head(phi_q, phi_k, v): associativity, with the O(n) denominator
# --------------------------------------------------------------------------------------------


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


def _linear_variants(fq: np.ndarray, fk: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
    kv = fk.T @ v
    return {
        "you forgot the denominator: divide each row by φ(q_i)·(φ(K)ᵀ1), the sum of its kernel weights": fq @ kv,
        "you divided by the sum over *all* queries and keys (one number); each query i has its own "
        "denominator φ(q_i)·Σ_j φ(k_j)": fq @ kv / (fq @ fk.sum(0)).sum(),
        "you divided by Σ_j φ(k_j) elementwise per feature; the denominator is a dot product, "
        "φ(q_i)·Σ_j φ(k_j), one number per query": (fq / fk.sum(0)) @ kv,
        "you applied a softmax; linear attention replaces exp(q·k) by the kernel φ(q)·φ(k), then only "
        "normalises": _softmax(fq @ fk.T) @ v,
    }


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@exercise(
    "ea_linear_attention",
    chapter=_CHAPTER,
    summary="linear_attention_head(phi_q, phi_k, v): φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1) without any n × n matrix",
)
def _check_linear_attention(answer: Any) -> str | None:
    """Values against lib's quadratic form; then the peak tensor memory at n = 2048 must stay far below n²."""
    require_callable(answer, "linear_attention_head(phi_q, phi_k, v)")
    gen = torch.Generator().manual_seed(0)
    for n_q, n_k, m, d_v in [(5, 5, 4, 3), (7, 3, 6, 2), (1, 9, 3, 4), (12, 12, 8, 8)]:
        fq = torch.rand(n_q, m, generator=gen, dtype=torch.float64) + 0.1  # positive features
        fk = torch.rand(n_k, m, generator=gen, dtype=torch.float64) + 0.1
        v = torch.randn(n_k, d_v, generator=gen, dtype=torch.float64)
        expected = linear_attention_quadratic(fq, fk, v, feature_map=_identity)[0].numpy()
        got = as_array(call_answer(answer, fq.clone(), fk.clone(), v.clone()), "linear_attention_head(phi_q, phi_k, v)")
        where = f"for phi_q {tuple(fq.shape)}, phi_k {tuple(fk.shape)}, v {tuple(v.shape)}"
        if got.shape != expected.shape:
            raise AssertionError(f"{where} your output has shape {got.shape}; expected (n_q, d_v) = {expected.shape}")
        if not np.allclose(got, expected, rtol=1e-6, atol=1e-9):
            hint = diagnose(got, _linear_variants(fq.numpy(), fk.numpy(), v.numpy()), atol=1e-9)
            raise AssertionError(f"{where} your row 0 is {fmt(got[0])}; expected {fmt(expected[0])}.{hint}")
    n, m = 2048, 8
    fq = torch.rand(n, m, generator=gen) + 0.1
    fk = torch.rand(n, m, generator=gen) + 0.1
    v = torch.randn(n, m, generator=gen)
    with torch.no_grad():
        # fq, fk, v serve this one call: not copied, so that the measured peak is the answer's own tensors
        peak = observed(
            "peak tensor bytes", lambda: peak_tensor_bytes(lambda: call_answer(answer, fq, fk, v, copy_args=False))
        )
    square = n * n * 4
    if peak >= square / 4:
        raise AssertionError(
            f"the values are right, but at n = {n} your function held {peak / 2**20:.1f} MiB of tensors at once, "
            f"as much as an n × n matrix ({square / 2**20:.0f} MiB): it computed φ(Q) φ(K)ᵀ. "
            "That is the denominator φ(Q)φ(K)ᵀ1 read left to right, and it is O(n²); "
            "compute φ(K)ᵀ1 (a vector of m numbers) "
            "first, then φ(Q)(φ(K)ᵀ1)"
        )
    return (
        f"At n = {n} your function held {peak / 2**10:.0f} KiB at its peak; one n × n matrix would be "
        f"{square / 2**20:.0f} MiB."
    )


# --------------------------------------------------------------------------------------------
# positive_features(x, w): FAVOR+
# --------------------------------------------------------------------------------------------


def _feature_variants(x: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    m = w.shape[0]
    wx = x @ w.T
    sq = (x * x).sum(-1, keepdims=True)
    return {
        "you forgot the − ‖x‖²/2 in the exponent: without it φ(x)·φ(y) estimates exp(xᵀy + ‖x‖²/2 + ‖y‖²/2)": np.exp(wx)
        / math.sqrt(m),
        "you forgot to divide by √m (with it, φ(x)·φ(y) averages the m products instead of summing them)": np.exp(
            wx - sq / 2
        ),
        "you divided by m; it is √m, because both φ(x) and φ(y) carry the factor": np.exp(wx - sq / 2) / m,
        "you subtracted ‖x‖² instead of ‖x‖²/2": np.exp(wx - sq) / math.sqrt(m),
        "you subtracted ‖x‖/2, not ‖x‖²/2 (the squared length)": np.exp(wx - np.sqrt(sq) / 2) / math.sqrt(m),
    }


@exercise(
    "ea_performer_features",
    chapter=_CHAPTER,
    summary="positive_features(x, w): FAVOR+ features exp(W x − ‖x‖²/2) / √m of the rows of x",
)
def _check_performer_features(answer: Any) -> str | None:
    """``answer(x, w)`` with x ``(n, d)`` and w ``(m, d)`` must equal lib's performer_features."""
    require_callable(answer, "positive_features(x, w)")
    gen = torch.Generator().manual_seed(1)
    for n, d, m in [(3, 4, 8), (5, 2, 16), (1, 8, 3), (6, 3, 64)]:
        x = 0.5 * torch.randn(n, d, generator=gen, dtype=torch.float64)
        w = random_projection(m, d, seed=n + m, dtype=torch.float64)
        expected = performer_features(x, w).numpy()
        got = as_array(call_answer(answer, x.clone(), w.clone()), "positive_features(x, w)")
        where = f"for x of shape {tuple(x.shape)} and w of shape {tuple(w.shape)}"
        if got.shape != expected.shape:
            raise AssertionError(
                f"{where} your features have shape {got.shape}; expected (n, m) = "
                f"{expected.shape}: one feature per row ω_r of w, so the product is x @ w.T"
            )
        if not np.allclose(got, expected, rtol=1e-6, atol=1e-12):
            if (got < 0).any():
                raise AssertionError(
                    f"{where} some of your features are negative ({fmt(got[0])}): FAVOR+ features "
                    "are exponentials, always positive — that is what keeps the denominators safe "
                    "(sin/cos features are not)."
                )
            hint = diagnose(got, _feature_variants(x.numpy(), w.numpy()), atol=1e-12)
            raise AssertionError(f"{where} your row 0 is {fmt(got[0])}; expected {fmt(expected[0])}.{hint}")
    return "φ(x)·φ(y) is now an unbiased estimate of exp(xᵀy), and every feature is positive."
