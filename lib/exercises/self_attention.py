"""Checkers of the chapter "Self-attention" (registered in :data:`lib.exercises.EXERCISES` on import)."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch

from ..attention import causal_mask, scaled_dot_product_attention
from .core import as_array, as_number, call_answer, diagnose, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "self_attention"


def _softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax (the row maximum is subtracted first); -inf entries get weight 0."""
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------------------------------
# attention(x_q, x_kv, w_q, w_k, w_v): queries from one sequence, keys and values from another
# --------------------------------------------------------------------------------------------


def _attention_variants(x_q, x_kv, w_q, w_k, w_v) -> dict[str, np.ndarray]:
    """Typical wrong outputs of attention with Q = x_q W^Q, K = x_kv W^K, V = x_kv W^V, keyed by the mistake."""
    q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
    d_k, d_model = w_q.shape[1], x_q.shape[1]
    scores = q @ k.T
    variants = {
        "you forgot to divide the scores by √d_k": _softmax(scores) @ v,
        "you divided the scores by d_k; the paper divides by √d_k": _softmax(scores / d_k) @ v,
        "you divided by √d_model; the scale is √d_k, the width of a query/key": (
            _softmax(scores / math.sqrt(d_model)) @ v
        ),
        "you took the softmax over the queries (axis 0, down the columns); each row — one query — must sum "
        "to 1 over the keys": _softmax(scores / math.sqrt(d_k), axis=0) @ v,
        "you averaged x_kv instead of the values V = x_kv W^V: the weights must multiply V": (
            _softmax(scores / math.sqrt(d_k)) @ x_kv
        ),
        "you returned the attention weights; the output is the weights times V": _softmax(scores / math.sqrt(d_k)),
        "you took the keys and values from x_q: that is self-attention of x_q; keys and values come from x_kv": (
            _softmax((q @ (x_q @ w_k).T) / math.sqrt(d_k)) @ (x_q @ w_v)
        ),
        "you took the queries from x_kv; the queries come from x_q (one output row per query)": (
            _softmax(((x_kv @ w_q) @ k.T) / math.sqrt(d_k)) @ v
        ),
    }
    if scores.shape[0] == scores.shape[1]:
        variants["you computed K Qᵀ, the transposed score matrix: S[i, j] must compare query i with key j (Q Kᵀ)"] = (
            _softmax(scores.T / math.sqrt(d_k)) @ v
        )
    return variants


@exercise(
    "sa_cross_attention",
    chapter=_CHAPTER,
    summary="attention(x_q, x_kv, w_q, w_k, w_v): queries from x_q, keys and values from x_kv; output (seq_q, d_v)",
)
def _check_cross_attention(answer: Any) -> str | None:
    """``answer(x_q, x_kv, w_q, w_k, w_v)`` must equal scaled_dot_product_attention(x_q W^Q, x_kv W^K, x_kv W^V)."""
    require_callable(answer, "attention(x_q, x_kv, w_q, w_k, w_v)")
    rng = np.random.default_rng(0)
    # self-attention first (x_q = x_kv: the chapter's 4 tokens, d_model = d_k = d_v = 4), then two sequences
    # of different lengths with d_model, d_k and d_v all different, then a single query
    for seq_q, seq_k, d_model, d_k, d_v, same in [
        (4, 4, 4, 4, 4, True),
        (5, 3, 6, 4, 3, False),
        (2, 7, 8, 2, 5, False),
        (1, 4, 3, 3, 3, False),
        (6, 6, 4, 8, 2, False),
    ]:
        x_q = rng.standard_normal((seq_q, d_model))
        x_kv = x_q.copy() if same else rng.standard_normal((seq_k, d_model))
        w_q, w_k, w_v = (rng.standard_normal((d_model, d)) / math.sqrt(d_model) for d in (d_k, d_k, d_v))
        q, k, v = (torch.from_numpy(x @ w) for x, w in ((x_q, w_q), (x_kv, w_k), (x_kv, w_v)))
        expected = scaled_dot_product_attention(q, k, v)[0].numpy()
        got = as_array(
            call_answer(answer, x_q.copy(), x_kv.copy(), w_q.copy(), w_k.copy(), w_v.copy()),
            "attention(x_q, x_kv, w_q, w_k, w_v)",
        )
        where = f"for x_q of shape {x_q.shape}, x_kv of shape {x_kv.shape} (seq, d_model), d_k = {d_k}, d_v = {d_v}"
        variants = _attention_variants(x_q, x_kv, w_q, w_k, w_v)
        if got.shape != expected.shape:
            hint = diagnose(got, variants, atol=1e-6)
            if not hint and got.shape == (seq_q, seq_k):
                hint = " That is (seq_q, seq_k), the shape of the weights: multiply them by V."
            raise AssertionError(
                f"{where} your output has shape {got.shape}; expected (seq_q, d_v) = {expected.shape}.{hint}"
            )
        if not np.allclose(got, expected, atol=1e-6, rtol=1e-6):
            hint = diagnose(got, variants, atol=1e-6)
            raise AssertionError(f"{where} your row 0 is {fmt(got[0])}; expected {fmt(expected[0])}.{hint}")
    return (
        "Self-attention is the case x_q = x_kv; with x_q from the decoder and x_kv from the encoder it is "
        "the Transformer's cross-attention."
    )


# --------------------------------------------------------------------------------------------
# causal_weights(scores)
# --------------------------------------------------------------------------------------------


def _causal_variants(scores: np.ndarray) -> dict[str, np.ndarray]:
    n = scores.shape[0]
    lower = np.tril(np.ones((n, n), dtype=bool))
    future_only = np.triu(np.ones((n, n), dtype=bool))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return {
            "you set the masked weights to 0 after the softmax without renormalising, so the rows no longer "
            "sum to 1; mask the scores (with -inf) before the softmax": np.where(lower, _softmax(scores), 0.0),
            "you kept the future and masked the past: query i may attend to keys 0 … i (the lower triangle, "
            "np.tril)": _softmax(np.where(future_only, scores, -np.inf)),
            "you replaced the masked scores by 0, but exp(0) = 1 still gives those keys weight; use -inf "
            "(or the 'Genius on the left' post's -1e10)": _softmax(np.where(lower, scores, 0.0)),
            "you forgot the mask: every query still sees the future": _softmax(scores),
        }


@exercise(
    "sa_causal_weights",
    chapter=_CHAPTER,
    summary="causal_weights(scores): softmax of an (n, n) score matrix under the causal mask",
)
def _check_causal_weights(answer: Any) -> str | None:
    """``answer(scores)`` must equal lib's weights with causal_mask(n) (scores given already scaled)."""
    require_callable(answer, "causal_weights(scores)")
    rng = np.random.default_rng(1)
    cases = [
        rng.standard_normal((4, 4)),
        rng.standard_normal((1, 1)),
        3 * rng.standard_normal((6, 6)),
        rng.uniform(90.0, 110.0, size=(5, 5)),
    ]  # the last one overflows exp() unless the maximum is subtracted
    for scores in cases:
        n = scores.shape[0]
        # lib computes softmax(q kᵀ / √d_k): with keys = the identity (d_k = n) and queries = scores · √n,
        # the scaled scores are exactly `scores`.
        eye = torch.eye(n, dtype=torch.float64)
        expected = scaled_dot_product_attention(torch.from_numpy(scores) * math.sqrt(n), eye, eye, mask=causal_mask(n))[
            1
        ].numpy()
        got = as_array(call_answer(answer, scores.copy()), f"causal_weights(scores of shape {scores.shape})")
        where = f"for scores of shape {scores.shape}"
        if got.shape != expected.shape:
            raise AssertionError(f"{where} your weights have shape {got.shape}; expected {expected.shape}")
        if not np.all(np.isfinite(got)):
            row = int(np.argmax(~np.isfinite(got).all(axis=1)))
            hint = (
                " exp() of scores near 100 overflows; subtract each row's maximum before exp() — the softmax "
                "does not change, and torch.softmax does this for you."
                if scores.max() > 80
                else " A row with every key masked gives 0/0: row 0 must still see key 0 (a token may attend "
                "to itself), so the diagonal stays unmasked."
            )
            raise AssertionError(f"{where} your row {row} is {fmt(got[row])}, not finite.{hint}")
        if not np.allclose(got, expected, atol=1e-6, rtol=0.0):
            hint = diagnose(got, _causal_variants(scores), atol=1e-6)
            if not hint and np.allclose(got[0, 0], 0.0):
                hint = " Row 0 puts no weight on key 0: the diagonal (a token attending to itself) is allowed."
            bad = int(np.argmax(np.abs(got - expected).max(axis=1) > 1e-6))
            raise AssertionError(f"{where} your row {bad} is {fmt(got[bad])}; expected {fmt(expected[bad])}.{hint}")
    return "Row 0 can only look at itself (weight 1); every row sums to 1 over the keys it may see."


# --------------------------------------------------------------------------------------------
# score_std(d_k, sigma_q, sigma_k, scaled)
# --------------------------------------------------------------------------------------------


@exercise(
    "sa_score_std",
    chapter=_CHAPTER,
    summary="score_std(d_k, sigma_q, sigma_k, scaled): standard deviation of one score q·k (÷ √d_k if scaled)",
)
def _check_score_std(answer: Any) -> str | None:
    """``answer(d_k, sigma_q, sigma_k, scaled)`` must return σ_q σ_k √d_k, or σ_q σ_k when scaled."""
    require_callable(answer, "score_std(d_k, sigma_q, sigma_k, scaled)")
    cases = [
        (64, 1.0, 1.0, False),
        (64, 1.0, 1.0, True),
        (16, 2.0, 0.5, False),
        (16, 2.0, 0.5, True),
        (512, 1.0, 1.0, False),
        (1, 3.0, 1.0, False),
        (100, 0.1, 0.2, True),
        (100, 0.1, 0.2, False),
    ]
    for d_k, sq, sk, scaled in cases:
        expected = sq * sk * (1.0 if scaled else math.sqrt(d_k))
        value = as_number(call_answer(answer, d_k, sq, sk, scaled), f"score_std({d_k}, {sq}, {sk}, {scaled})")
        if math.isclose(value, expected, rel_tol=1e-6):
            continue
        sqrt = math.sqrt(d_k)
        wrong = [
            (
                "that is the variance; the standard deviation is its square root",
                (sq * sk) ** 2 * (1.0 if scaled else d_k),
            ),
            (
                "you divided by d_k instead of √d_k: Var(q·k / c) = Var(q·k) / c², "
                "so c = √d_k brings it back to σ_q² σ_k²",
                sq * sk / sqrt if scaled else None,
            ),
            (
                "you ignored the scaling: divided by √d_k, the standard deviation no longer grows with d_k",
                sq * sk * sqrt if scaled else None,
            ),
            ("you scaled although scaled is False", sq * sk if not scaled else None),
            ("you left out σ_q and σ_k: each product q_i k_i has variance σ_q² σ_k²", 1.0 if scaled else sqrt),
            (
                "you added σ_q and σ_k; the variances multiply: Var(q_i k_i) = σ_q² σ_k²",
                (sq + sk) * (1.0 if scaled else sqrt),
            ),
        ]
        why = next((w for w, v in wrong if v is not None and math.isclose(value, v, rel_tol=1e-6)), None)
        hint = (
            f" It looks like {why}."
            if why
            else (" Hint: q·k is a sum of d_k independent products q_i k_i, each with mean 0 and variance σ_q² σ_k².")
        )
        raise AssertionError(
            f"score_std({d_k}, {sq}, {sk}, scaled={scaled}) is {value:g}; expected {expected:g}.{hint}"
        )
    return "For d_k = 64 and unit variances: 8 without the scale, 1 with it — whatever d_k is."


# --------------------------------------------------------------------------------------------
# max_seq_len(memory_bytes, batch, heads, bytes_per_element)
# --------------------------------------------------------------------------------------------


def _max_n(memory: int, batch: int, heads: int, itemsize: int) -> int:
    return math.isqrt(memory // (batch * heads * itemsize))


@exercise(
    "sa_max_seq_len",
    chapter=_CHAPTER,
    summary="max_seq_len(memory_bytes, batch, heads, bytes_per_element): longest n whose weights fit",
)
def _check_max_seq_len(answer: Any) -> str | None:
    """``answer(memory_bytes, batch, heads, bytes_per_element)`` = the largest n with batch·heads·n²·bytes ≤ memory."""
    require_callable(answer, "max_seq_len(memory_bytes, batch, heads, bytes_per_element)")
    cases = [
        (16 * 2**30, 1, 8, 4),
        (2**30, 1, 4, 4),
        (80 * 10**9, 4, 16, 2),
        (100, 1, 1, 4),
        (3, 1, 1, 4),
        (2**20, 2, 2, 4),
        (10**6, 3, 5, 8),
    ]
    for memory, batch, heads, itemsize in cases:
        expected = _max_n(memory, batch, heads, itemsize)
        call = f"max_seq_len({memory}, {batch}, {heads}, {itemsize})"
        value = as_number(call_answer(answer, memory, batch, heads, itemsize), call)
        if value == expected:
            continue
        wrong = [
            ("you forgot the heads: every head has its own n × n weights", _max_n(memory, batch, 1, itemsize)),
            ("you forgot the bytes per element (float32 = 4 bytes)", _max_n(memory, batch, heads, 1)),
            ("you forgot the batch: every sequence has its own weights", _max_n(memory, 1, heads, itemsize)),
            (
                "that is the number of weights n², not the sequence length n; take the square root",
                memory // (batch * heads * itemsize),
            ),
            (
                "you rounded up (or to the nearest integer): n must be rounded down so that the weights fit",
                math.ceil(math.sqrt(memory / (batch * heads * itemsize))),
            ),
        ]
        why = next((w for w, v in wrong if value == v), None)
        if why is None and not float(value).is_integer():
            why = "you returned a fraction; a sequence length is a whole number of tokens (round down)"
        hint = (
            f" It looks like {why}."
            if why
            else " Hint: solve batch · heads · n² · bytes_per_element ≤ memory_bytes for n."
        )
        raise AssertionError(f"{call} is {value:g}; expected {expected}.{hint}")
    return (
        "A 16 GiB budget holds the float32 weights of 8 heads up to n = 23,170 tokens; in training, lib's explicit "
        "path also keeps the scaled scores for the backward pass, so its limit there is about n / √2."
    )


# --------------------------------------------------------------------------------------------
# lookup_scale(n, p)
# --------------------------------------------------------------------------------------------


@exercise(
    "sa_lookup_scale",
    chapter=_CHAPTER,
    summary="lookup_scale(n, p): the smallest β for which a soft look-up puts weight p on the matching key",
)
def _check_lookup_scale(answer: Any) -> str | None:
    """``answer(n, p)`` = ln(p (n − 1) / (1 − p)): the weight e^β / (e^β + n − 1) then equals p."""
    require_callable(answer, "lookup_scale(n, p)")
    for n, p in [(4, 0.99), (32, 0.5), (2, 0.9), (1000, 0.999), (8, 0.75)]:
        expected = math.log(p * (n - 1) / (1 - p))
        value = as_number(call_answer(answer, n, p), f"lookup_scale({n}, {p})")
        if math.isclose(value, expected, rel_tol=1e-6, abs_tol=1e-9):
            continue
        weight = math.exp(value) / (math.exp(value) + n - 1) if value < 700 else 1.0
        wrong = [
            (
                "you counted the matching key among the others: there are n − 1 non-matching keys",
                math.log(p * n / (1 - p)),
            ),
            ("you forgot the n − 1 other keys, each with weight e^0 = 1", math.log(p / (1 - p))),
            (
                "you divided the scores by √d_k (with d_k = n); this exercise uses plain dot products β·(e_j · e_m)",
                math.sqrt(n) * math.log(p * (n - 1) / (1 - p)),
            ),
            (
                "you forgot the factor p: e^β / (e^β + n − 1) = p gives e^β = p (n − 1) / (1 − p)",
                math.log((n - 1) / (1 - p)),
            ),
        ]
        why = next((w for w, v in wrong if math.isclose(value, v, rel_tol=1e-6)), None)
        hint = f" It looks like {why}." if why else " Hint: solve e^β / (e^β + n − 1) = p for β."
        raise AssertionError(
            f"lookup_scale({n}, {p}) is {value:.6g}, which gives the matching key weight "
            f"{weight:.6g}; expected β = {expected:.6g} (weight {p}).{hint}"
        )
    return (
        "β grows only like ln(n): a soft look-up over 1,000 keys needs β ≈ 13.8 for 99.9 % on the match, "
        "and the larger β, the closer it comes to a hard dictionary look-up."
    )


# --------------------------------------------------------------------------------------------
# Break it: the softmax without the 1/√d_k scale
# --------------------------------------------------------------------------------------------


def _two_numbers(answer: Any, what: str) -> tuple[float, float]:
    """The reader's measurement as two floats, from a pair (tuple, list, array or tensor of two numbers)."""
    values = as_array(answer, what).ravel()
    if values.size != 2:
        raise AssertionError(f"{what} should be two numbers, a pair like (0.5, 0.1); got {values.size} values")
    return float(values[0]), float(values[1])


def _jacobian_norms(weights: torch.Tensor) -> torch.Tensor:
    """‖diag(α) − α αᵀ‖_F of each row α of ``weights`` (rows, n): how much gradient the softmax passes back."""
    sq = (weights**2).sum(-1)
    return (sq - 2 * (weights**3).sum(-1) + sq**2).clamp_min(0.0).sqrt()


@functools.cache
def _scale_reference(d_k: int = 512, rows: int = 2000, n_keys: int = 32) -> dict[str, float]:
    """The §4 experiment at one width, through lib's core: medians (and means) of the largest weight and of ‖J‖_F.

    Queries and keys are drawn as the chapter's ``random_scores`` draws them (seed 0, 250 queries at a time),
    so a reader who follows the exercise gets the same numbers.
    """
    g = torch.Generator().manual_seed(0)
    weights: dict[str, list[torch.Tensor]] = {"scaled": [], "unscaled": [], "by_d_k": []}
    for start in range(0, rows, 250):
        m = min(250, rows - start)
        q = torch.randn(m, 1, d_k, generator=g, dtype=torch.float64)
        k = torch.randn(m, n_keys, d_k, generator=g, dtype=torch.float64)
        # lib divides by √d_k: × √d_k undoes it (the unscaled softmax), ÷ √d_k divides by d_k in all
        for name, factor in (("scaled", 1.0), ("unscaled", math.sqrt(d_k)), ("by_d_k", 1 / math.sqrt(d_k))):
            weights[name].append(scaled_dot_product_attention(q * factor, k, k)[1][:, 0])  # (m, n_keys)
    ref: dict[str, float] = {}
    for name, parts in weights.items():
        w = torch.cat(parts)
        top, grad = w.max(-1).values, _jacobian_norms(w)
        ref[f"top_{name}"], ref[f"top_mean_{name}"] = top.median().item(), top.mean().item()
        ref[f"grad_{name}"], ref[f"grad_mean_{name}"] = grad.median().item(), grad.mean().item()
    return ref


@exercise(
    "sa_break_scale",
    chapter=_CHAPTER,
    summary="break it: (median largest weight, median gradient ratio) at d_k = 512 without the 1/√d_k scale",
)
def _check_break_scale(answer: Any) -> str | None:
    """The pair (median largest weight without the scale, median ‖J‖ without / with) must match lib's experiment."""
    top, ratio = _two_numbers(answer, "your measurement (largest weight, gradient ratio)")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a busy CPU, threads waiting for each other make this slower, not faster
    try:
        ref = _scale_reference()
    finally:
        torch.set_num_threads(threads)
    expected_top, expected_ratio = ref["top_unscaled"], ref["grad_unscaled"] / ref["grad_scaled"]
    want = f"expected a largest weight of about {expected_top:.4f} and a gradient ratio of about {expected_ratio:.3f}"
    if not 1 / 32 - 1e-9 <= top <= 1 + 1e-9:
        raise AssertionError(
            f"a largest weight of {top:g} is impossible: 32 weights that sum to 1 have their largest "
            f"between 1/32 and 1; {want}."
        )
    if abs(top - expected_top) > 0.003:
        wrong = [
            (
                ref["top_scaled"],
                0.02,
                "your weights are not saturated: that is the median WITH the 1/√d_k scale "
                "(about 0.15). Did you remove the division from the scores, not from somewhere else?",
            ),
            (
                ref["top_by_d_k"],
                0.005,
                "your weights are almost uniform (1/32 ≈ 0.031): you divided by d_k, "
                "which flattens the softmax instead of sharpening it; remove the division altogether",
            ),
            (
                ref["top_mean_unscaled"],
                0.01,
                "that is the mean over the queries, not the median: the few queries "
                "that are not saturated pull the mean down",
            ),
        ]
        why = next((w for v, tol, w in wrong if abs(top - v) < tol), None)
        raise AssertionError(f"your median largest weight is {top:.4f}; {want}." + (f" {why}" if why else ""))
    if ratio <= 0:
        raise AssertionError(f"a gradient ratio of {ratio:g} is impossible: both gradient sizes are positive; {want}.")
    if abs(math.log(ratio / expected_ratio)) > math.log(2):
        mean_ratio = ref["grad_mean_unscaled"] / ref["grad_mean_scaled"]
        wrong = [
            (
                1 / expected_ratio,
                "you divided the gradient size WITH the scale by the one without: the ratio asked "
                "for is unscaled / scaled, below 1",
            ),
            (
                mean_ratio,
                "that is the ratio of the means, not of the medians: a minority of queries that are not "
                "saturated still pass gradient back and dominate the mean",
            ),
            (1.0, "both gradient sizes are the same: did you compute the second one from the same weights?"),
        ]
        why = next((w for v, w in wrong if abs(math.log(ratio / v)) < math.log(1.3)), None)
        raise AssertionError(f"your gradient ratio is {ratio:.4g}; {want}." + (f" It looks like {why}." if why else ""))
    return (
        f"Without the scale the typical query puts {expected_top:.4f} of its weight on one key, and its softmax passes "
        f"back {100 * expected_ratio:.1f} % of the gradient it passes with the scale."
    )


# --------------------------------------------------------------------------------------------
# Break it: one projection for queries and keys (W^K = W^Q)
# --------------------------------------------------------------------------------------------


@functools.cache
def _tied_reference(n: int = 16, d: int = 64) -> dict[str, float]:
    """The exercise's draw (numpy seed 0): asymmetry of the scores and mean self-weight, tied both ways and untied."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d))
    w_q, w_k = (rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(2))
    ref: dict[str, float] = {}
    for name, (a, b) in {"untied": (w_q, w_k), "k_is_q": (w_q, w_q), "q_is_k": (w_k, w_k)}.items():
        q, k = torch.from_numpy(x @ a), torch.from_numpy(x @ b)
        weights = scaled_dot_product_attention(q, k, k)[1]  # (n, n), lib's softmax(q kᵀ / √d_k)
        scores = q @ k.T / math.sqrt(d)
        ref[f"asym_{name}"] = (scores - scores.T).abs().max().item()
        ref[f"asym_weights_{name}"] = (weights - weights.T).abs().max().item()
        ref[f"self_{name}"] = weights.diagonal().mean().item()
        ref[f"argmax_{name}"] = (weights.argmax(-1) == torch.arange(n)).double().mean().item()
    return ref


@exercise(
    "sa_break_tied_qk",
    chapter=_CHAPTER,
    summary="break it: (max |S − Sᵀ|, mean weight of a token on itself) when W^K is W^Q",
)
def _check_break_tied_qk(answer: Any) -> str | None:
    """With one projection for queries and keys the scores are symmetric and each token attends mostly to itself."""
    asym, own = _two_numbers(answer, "your measurement (max |S − Sᵀ|, mean self-weight)")
    ref = _tied_reference()
    tied = [ref["self_k_is_q"], ref["self_q_is_k"]]
    want = (
        f"expected max |S − Sᵀ| ≈ 0 (rounding only) and a mean self-weight of about {tied[0]:.3f} "
        f"(W^K = W^Q) or {tied[1]:.3f} (W^Q = W^K)"
    )
    if asym > 1e-6:
        wrong = [
            (
                ref["asym_untied"],
                "your scores come from two different projections: pass W_Q as the keys' "
                "projection too (or W_K as the queries')",
            ),
            (
                ref["asym_weights_k_is_q"],
                "you compared the weights A with Aᵀ: the scores are symmetric, but each "
                "row of weights is divided by its own sum, so the weights are not",
            ),
            (
                ref["asym_weights_q_is_k"],
                "you compared the weights A with Aᵀ: the scores are symmetric, but each "
                "row of weights is divided by its own sum, so the weights are not",
            ),
        ]
        why = next((w for v, w in wrong if abs(asym - v) < 1e-3 * max(1.0, v)), None)
        raise AssertionError(f"your max |S − Sᵀ| is {asym:.4g}; {want}." + (f" It looks like {why}." if why else ""))
    if min(abs(own - t) for t in tied) > 0.01:
        wrong = [
            (ref["self_untied"], "that is the untied layer's value: the keys still use their own W^K"),
            (
                ref["argmax_k_is_q"],
                "that is the share of tokens whose LARGEST weight is on themselves; the "
                "exercise asks for the mean of the diagonal weights A[i, i]",
            ),
            (
                ref["argmax_q_is_k"],
                "that is the share of tokens whose LARGEST weight is on themselves; the "
                "exercise asks for the mean of the diagonal weights A[i, i]",
            ),
            (1 / 16, "every row sums to 1, so the mean of all the weights is 1/16: take the diagonal A[i, i] only"),
        ]
        why = next((w for v, w in wrong if abs(own - v) < 0.005), None)
        raise AssertionError(f"your mean self-weight is {own:.4f}; {want}." + (f" It looks like {why}." if why else ""))
    return (
        f"Tied, every token keeps about {tied[0]:.2f} of its attention for itself (untied: {ref['self_untied']:.2f}): "
        "q_i · k_i = ‖x_i W‖² is the largest score of its row."
    )
