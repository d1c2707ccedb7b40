"""Tests of the exercises of the chapter "Self-attention": a correct answer passes, typical mistakes are named.

The correct answers are written with ``lib``; ``test_exercises.py`` also collects this module's ``CASES``
(every registered exercise must have test cases).
"""

import math

import numpy as np
import torch

from lib.attention import causal_mask, scaled_dot_product_attention
from lib.cost import attention_weight_bytes
from lib.exercises import check

# --- answers, correct and wrong ---------------------------------------------------------------------------


def _softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention_correct(x_q, x_kv, w_q, w_k, w_v):
    q, k, v = (torch.from_numpy(x @ w) for x, w in ((x_q, w_q), (x_kv, w_k), (x_kv, w_v)))
    return scaled_dot_product_attention(q, k, v)[0]


def _attention(x_q, x_kv, w_q, w_k, w_v, scale=None, axis=-1, transpose=False, values=None, kv_from=None):
    kv = x_kv if kv_from is None else kv_from
    q, k, v = x_q @ w_q, kv @ w_k, kv @ w_v
    s = q @ k.T
    s = s.T if transpose else s
    a = _softmax(s / (math.sqrt(w_q.shape[1]) if scale is None else scale), axis=axis)
    return a @ (v if values is None else values)


def attention_unscaled(x_q, x_kv, w_q, w_k, w_v):
    return _attention(x_q, x_kv, w_q, w_k, w_v, scale=1.0)


def attention_by_d_k(x_q, x_kv, w_q, w_k, w_v):
    return _attention(x_q, x_kv, w_q, w_k, w_v, scale=w_q.shape[1])


def attention_by_sqrt_d_model(x_q, x_kv, w_q, w_k, w_v):
    return _attention(x_q, x_kv, w_q, w_k, w_v, scale=math.sqrt(x_q.shape[1]))


def attention_softmax_over_queries(x_q, x_kv, w_q, w_k, w_v):
    return _attention(x_q, x_kv, w_q, w_k, w_v, axis=0)


def attention_kv_from_queries(x_q, x_kv, w_q, w_k, w_v):
    return _attention(x_q, x_kv, w_q, w_k, w_v, kv_from=x_q)


def attention_transposed_scores(x_q, x_kv, w_q, w_k, w_v):  # seed 001's q_j · k_i; breaks on non-square
    return _attention(x_q, x_kv, w_q, w_k, w_v, transpose=True)


def attention_values_are_x(x_q, x_kv, w_q, w_k, w_v):
    return _attention(x_q, x_kv, w_q, w_k, w_v, values=x_kv)


def attention_queries_from_kv(x_q, x_kv, w_q, w_k, w_v):
    return _attention(x_kv, x_kv, w_q, w_k, w_v)


def causal_correct(scores):
    n = scores.shape[0]
    eye = torch.eye(n, dtype=torch.float64)
    return scaled_dot_product_attention(torch.from_numpy(scores) * math.sqrt(n), eye, eye, causal_mask(n))[1]


def causal_mask_after_softmax(scores):
    return np.tril(_softmax(scores))


def causal_future(scores):
    return _softmax(np.where(np.triu(np.ones(scores.shape, bool)), scores, -np.inf))


def causal_zero_fill(scores):
    return _softmax(np.where(np.tril(np.ones(scores.shape, bool)), scores, 0.0))


def causal_strict(scores):  # the diagonal masked too: row 0 has no key left
    with np.errstate(invalid="ignore"):
        return _softmax(np.where(np.tril(np.ones(scores.shape, bool), -1), scores, -np.inf))


def causal_naive_exp(scores):  # no maximum subtracted: exp(100) overflows to inf in float32
    s = np.where(np.tril(np.ones(scores.shape, bool)), scores, -np.inf).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(s)
        return e / e.sum(axis=1, keepdims=True)


def score_std_correct(d_k, sigma_q, sigma_k, scaled):
    q = torch.full((d_k,), sigma_q)
    k = torch.full((d_k,), sigma_k)
    var = float((q**2 * k**2).sum())  # Var(q·k) = Σ Var(q_i k_i) = d_k σ_q² σ_k²
    return math.sqrt(var / d_k) if scaled else math.sqrt(var)


def max_seq_len_correct(memory_bytes, batch, heads, bytes_per_element):
    dtype = {2: torch.float16, 4: torch.float32, 8: torch.float64}[bytes_per_element]
    n = math.isqrt(memory_bytes // (batch * heads * bytes_per_element))
    assert n == 0 or attention_weight_bytes(batch, heads, n, dtype=dtype) <= memory_bytes
    assert attention_weight_bytes(batch, heads, n + 1, dtype=dtype) > memory_bytes
    return n


def lookup_scale_correct(n, p):
    # solve weight(β) = p by bisection on lib's own attention: one-hot query β·e_0 over n one-hot keys
    keys = torch.eye(n, dtype=torch.float64) * math.sqrt(n)  # × √n undoes lib's division by √d_k = √n
    lo, hi = 0.0, 50.0
    for _ in range(200):
        beta = (lo + hi) / 2
        query = torch.zeros(1, n, dtype=torch.float64)
        query[0, 0] = beta
        w = scaled_dot_product_attention(query, keys, keys)[1][0, 0].item()
        lo, hi = (beta, hi) if w < p else (lo, beta)
    return (lo + hi) / 2


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "sa_cross_attention": (
        attention_correct,
        [
            (attention_unscaled, "forgot to divide the scores by √d_k"),
            (attention_by_d_k, "divided the scores by d_k"),
            (attention_by_sqrt_d_model, "divided by √d_model"),
            (attention_softmax_over_queries, "softmax over the queries"),
            (attention_kv_from_queries, "keys and values from x_q"),
            (attention_transposed_scores, "transposed score matrix"),
            (attention_values_are_x, "instead of the values"),
            (attention_queries_from_kv, "queries from x_kv"),
            (lambda *args: attention_correct(*args)[:, :-1], "expected (seq_q, d_v)"),
            (lambda *args: 2 * attention_correct(*args), "your row 0 is"),
        ],
    ),
    "sa_causal_weights": (
        causal_correct,
        [
            (causal_mask_after_softmax, "without renormalising"),
            (causal_future, "masked the past"),
            (causal_zero_fill, "exp(0) = 1"),
            (causal_strict, "attend to itself"),
            (causal_naive_exp, "subtract each row's maximum"),
            (_softmax, "forgot the mask"),
            (lambda s: causal_correct(s)[:-1], "expected"),
        ],
    ),
    "sa_score_std": (
        score_std_correct,
        [
            (lambda d, sq, sk, scaled: (sq * sk) ** 2 * (1 if scaled else d), "that is the variance"),
            (lambda d, sq, sk, scaled: sq * sk / (math.sqrt(d) if scaled else 1 / math.sqrt(d)), "divided by d_k"),
            (lambda d, sq, sk, scaled: sq * sk * math.sqrt(d), "ignored the scaling"),
            (lambda d, sq, sk, scaled: 1.0 if scaled else math.sqrt(d), "left out σ_q and σ_k"),
            (lambda d, sq, sk, scaled: (sq + sk) * (1 if scaled else math.sqrt(d)), "variances multiply"),
            (lambda d, sq, sk, scaled: 3.0, "Hint"),
            (8, "expected a function"),
        ],
    ),
    "sa_max_seq_len": (
        max_seq_len_correct,
        [
            (lambda m, b, h, e: math.isqrt(m // (b * e)), "forgot the heads"),
            (lambda m, b, h, e: math.isqrt(m // (b * h)), "bytes per element"),
            (lambda m, b, h, e: math.isqrt(m // (h * e)), "forgot the batch"),
            (lambda m, b, h, e: m // (b * h * e), "not the sequence length"),
            (lambda m, b, h, e: math.ceil(math.sqrt(m / (b * h * e))), "rounded down"),
            (lambda m, b, h, e: math.sqrt(m / (b * h * e)), "fraction"),
            (lambda m, b, h, e: 12345, "Hint"),
        ],
    ),
    "sa_lookup_scale": (
        lookup_scale_correct,
        [
            (lambda n, p: math.log(p * n / (1 - p)), "counted the matching key"),
            (lambda n, p: math.log(p / (1 - p)), "forgot the n − 1 other keys"),
            (lambda n, p: math.sqrt(n) * math.log(p * (n - 1) / (1 - p)), "divided the scores by √d_k"),
            (lambda n, p: math.log((n - 1) / (1 - p)), "forgot the factor p"),
            (lambda n, p: 1.0, "Hint: solve"),
        ],
    ),
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


def test_answers_may_be_lists_numpy_or_tensors(capsys):
    assert check("sa_cross_attention", lambda *a: attention_correct(*a).numpy())
    assert check("sa_cross_attention", lambda *a: attention_correct(*a).tolist())
    assert check("sa_causal_weights", lambda s: causal_correct(s).float())
    assert check("sa_score_std", lambda *a: torch.tensor(score_std_correct(*a)))
    assert check("sa_max_seq_len", lambda *a: float(max_seq_len_correct(*a)))
    assert check("sa_lookup_scale", lambda n, p: np.float64(math.log(p * (n - 1) / (1 - p))))


def test_max_seq_len_message_names_the_16_gib_case(capsys):
    check("sa_max_seq_len", lambda m, b, h, e: math.isqrt(m // (b * e)))
    assert "max_seq_len(17179869184, 1, 8, 4) is 65536; expected 23170" in capsys.readouterr().out


# --- break it: the 1/√d_k scale, and one projection for queries and keys ---------------------------------


def _scale_measurement(reduce="median", inverted=False, divisor=None):
    """The exercise's experiment, written with the chapter's random_scores (not the checker's draw through lib)."""
    from lib.book.self_attention import random_scores

    scores = random_scores(512, 2000, 32, generator=torch.Generator().manual_seed(0))  # (2000, 32), unscaled
    stats = {}
    for name, s in (("scaled", scores / math.sqrt(512)), ("broken", scores if divisor is None else scores / divisor)):
        w = torch.softmax(s, dim=-1)
        jac = (torch.diag_embed(w) - w[:, :, None] * w[:, None, :]).flatten(1).norm(dim=-1)
        pick = (lambda t: t.median()) if reduce == "median" else (lambda t: t.mean())
        stats[name] = (pick(w.max(-1).values).item(), pick(jac).item())
    ratio = stats["broken"][1] / stats["scaled"][1]
    return stats["broken"][0], 1 / ratio if inverted else ratio


BREAK_SCALE = _scale_measurement()


def _tied_measurement(tie="k_is_q", weights_asym=False, argmax=False, all_mean=False):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64))
    w_q, w_k, _ = (rng.standard_normal((64, 64)) / 8 for _ in range(3))
    if tie == "k_is_q":
        w_k = w_q
    elif tie == "q_is_k":
        w_q = w_k
    s = (x @ w_q) @ (x @ w_k).T / 8
    a = _softmax(s)
    asym = np.abs(a - a.T).max() if weights_asym else np.abs(s - s.T).max()
    own = (a.argmax(1) == np.arange(16)).mean() if argmax else (a.mean() if all_mean else np.diag(a).mean())
    return asym, own


CASES.update(
    {
        "sa_break_scale": (
            BREAK_SCALE,
            [
                (_scale_measurement(divisor=math.sqrt(512)), "not saturated"),
                (_scale_measurement(divisor=512), "divided by d_k"),
                (_scale_measurement(reduce="mean"), "mean over the queries"),
                ((BREAK_SCALE[0], 1 / BREAK_SCALE[1]), "unscaled / scaled"),
                ((BREAK_SCALE[0], _scale_measurement(reduce="mean")[1]), "ratio of the means"),
                ((BREAK_SCALE[0], 1.0), "same"),
                ((1.5, 0.01), "impossible"),
                ((BREAK_SCALE[0], -0.1), "impossible"),
                ((0.9, 0.01), "expected a largest weight of about 0.99"),
                ((0.9988,), "two numbers"),
                ("0.99", "numbers"),
            ],
        ),
        "sa_break_tied_qk": (
            _tied_measurement(),
            [
                (_tied_measurement(tie=None), "two different projections"),
                (_tied_measurement(weights_asym=True), "weights A with Aᵀ"),
                ((0.0, _tied_measurement(tie=None)[1]), "untied layer"),
                (_tied_measurement(argmax=True), "LARGEST weight"),
                (_tied_measurement(all_mean=True), "diagonal A[i, i] only"),
                ((0.0, 0.5), "expected max |S − Sᵀ| ≈ 0"),
                ([0.0, 0.96, 1.0], "two numbers"),
            ],
        ),
    }
)


def test_break_scale_accepts_either_tie_and_any_container(capsys):
    assert check("sa_break_scale", list(BREAK_SCALE))
    assert check("sa_break_scale", torch.tensor(BREAK_SCALE))
    assert check("sa_break_tied_qk", _tied_measurement(tie="q_is_k"))
    assert check("sa_break_tied_qk", np.array(_tied_measurement()))


def test_break_it_checkers_never_call_a_function_answer(capsys):
    # A break-it answer is a measurement: a function (one that raises, one that never returns) is not called.
    def boom():
        raise RuntimeError("should not run")

    def spin():
        while True:
            pass

    for name in ("sa_break_scale", "sa_break_tied_qk"):
        for answer in (boom, spin):
            assert check(name, answer) is False
            out = capsys.readouterr().out
            assert out.startswith(f"❌ {name}: ") and "should be numbers" in out


def test_break_scale_matches_the_checkers_reference():
    from lib.exercises.self_attention import _scale_reference

    ref = _scale_reference()
    assert abs(ref["top_unscaled"] - BREAK_SCALE[0]) < 1e-6
    assert abs(ref["grad_unscaled"] / ref["grad_scaled"] - BREAK_SCALE[1]) < 1e-6
    assert BREAK_SCALE[0] > 0.99 and BREAK_SCALE[1] < 0.02  # saturated, and two orders of magnitude less gradient
