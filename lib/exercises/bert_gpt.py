"""Checkers of the chapter "BERT and GPT" (registered in :data:`lib.exercises.EXERCISES` on import)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..bert import BertVocab, pack_pair
from ..gpt import GPT, GPTConfig
from .core import as_array, as_number, call_answer, diagnose, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "bert_gpt"


# --- bert_pair_inputs -----------------------------------------------------------------------------


@exercise(
    "bert_pair_inputs",
    chapter=_CHAPTER,
    summary="pair_inputs(a, b, cls_id, sep_id) -> (ids, segment_ids) for [CLS] A [SEP] B [SEP]",
)
def _check_pair_inputs(answer: Any) -> str | None:
    """``answer(a, b, cls_id, sep_id)`` must equal :func:`lib.bert.pack_pair` without truncation."""
    require_callable(answer, "pair_inputs(a, b, cls_id, sep_id)")
    for a, b, base in [([11, 12, 13], [21, 22], 100), ([7], [8, 9, 10, 11], 8000)]:
        vocab = BertVocab(base)
        ids_ok, seg_ok = pack_pair(a, b, vocab, 10**6)
        got = call_answer(answer, list(a), list(b), vocab.cls_id, vocab.sep_id)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise AssertionError(f"return a pair (ids, segment_ids), got {type(got).__name__}")
        ids, seg = (np.asarray(as_array(x, "ids/segment_ids")).astype(int).tolist() for x in got)
        where = f"for a = {a}, b = {b}, cls_id = {vocab.cls_id}, sep_id = {vocab.sep_id}"
        if ids != ids_ok:
            hint = ""
            if ids == ids_ok[:-1]:
                hint = " It looks like the final [SEP] after sentence B is missing."
            elif ids == [vocab.cls_id, *a, *b, vocab.sep_id]:
                hint = " It looks like the [SEP] between the two sentences is missing."
            raise AssertionError(f"{where} your ids are {ids}; expected {ids_ok}.{hint}")
        if seg != seg_ok:
            hint = ""
            if seg == [0] * len(seg_ok):
                hint = " Every token got segment 0: sentence B and its [SEP] belong to segment 1."
            elif seg == [0] * (len(a) + 1) + [1] * (len(b) + 2):
                hint = " The first [SEP] closes sentence A, so it belongs to segment 0."
            raise AssertionError(f"{where} your segment_ids are {seg}; expected {seg_ok}.{hint}")
    return (
        "[CLS] and sentence A with its [SEP] are segment 0; sentence B with its [SEP] is segment 1 "
        "(Devlin et al. 2019, Fig. 2)."
    )


# --- lm_perplexity ----------------------------------------------------------------------------------


@exercise(
    "lm_perplexity",
    chapter=_CHAPTER,
    summary="perplexity(log_probs): exp of the mean negative log-probability (natural log) per token",
)
def _check_perplexity(answer: Any) -> str | None:
    require_callable(answer, "perplexity(log_probs)")
    cases = [np.log([0.25, 0.25, 0.25, 0.25]), np.log([0.5, 0.1, 0.2]), np.array([-2.3, -0.1, -4.0, -1.5, -0.7])]
    for lp in cases:
        got = as_number(call_answer(answer, lp.copy()), "perplexity(log_probs)")
        expected = math.exp(-lp.mean())
        if not math.isclose(got, expected, rel_tol=1e-6):
            variants = {
                "you summed the log-probabilities instead of averaging them (perplexity is per token)": math.exp(
                    -lp.sum()
                ),
                "the sign is wrong: perplexity is exp(−mean log p), at least 1": math.exp(lp.mean()),
                "you used base 2 for the exponent with natural-log probabilities; use exp": 2 ** (-lp.mean()),
                "you returned the mean negative log-probability (the loss), not its exponential": -lp.mean(),
            }
            hint = next((f" It looks like {k}." for k, v in variants.items() if math.isclose(got, v, rel_tol=1e-6)), "")
            raise AssertionError(f"for log_probs = {fmt(lp, 3)} you return {got:.5f}; expected {expected:.5f}.{hint}")
    return "four equally likely tokens give perplexity 4: a model with perplexity P is as unsure as a fair P-sided die."


# --- sample_probs -------------------------------------------------------------------------------------


def _reference_probs(logits: np.ndarray, temperature: float, k: int) -> np.ndarray:
    z = logits / temperature
    kth = np.sort(z)[-k]
    z = np.where(z >= kth, z, -np.inf)
    e = np.exp(z - z.max())
    return e / e.sum()


@exercise(
    "sample_probs",
    chapter=_CHAPTER,
    summary="sample_probs(logits, temperature, k): the distribution generate() samples from (T > 0, top-k)",
)
def _check_sample_probs(answer: Any) -> str | None:
    require_callable(answer, "sample_probs(logits, temperature, k)")
    for logits, t, k in [
        ([2.0, 1.0, 0.5, -1.0, 0.0], 0.5, 3),
        ([2.0, 1.0, 0.5, -1.0, 0.0], 2.0, 5),
        ([0.1, 3.0, -2.0, 2.5], 1.0, 2),
    ]:
        z = np.asarray(logits)
        expected = _reference_probs(z, t, k)
        got = as_array(call_answer(answer, z.copy(), t, k), "sample_probs(...)").ravel()
        if got.shape != expected.shape or not np.allclose(got, expected, atol=1e-6):
            e_all = np.exp(z / t - (z / t).max())
            p_all = e_all / e_all.sum()
            not_renorm = np.where(z >= np.sort(z)[-k], p_all, 0.0)
            e_mul = np.exp(z * t - (z * t).max())
            wrong_t = _reference_probs(z * t * t, t, k)  # softmax(z · T) with top-k
            after = _reference_probs(z, 1.0, k) / t
            variants = {
                (
                    "you zeroed the tokens outside the top k but did not renormalise: "
                    "the kept probabilities must sum to 1"
                ): not_renorm,
                "you multiplied the logits by T; divide them by T (T < 1 sharpens)": wrong_t,
                "you ignored k: only the k largest logits may keep probability": p_all,
                "you divided the probabilities by T after the softmax; divide the logits before it": after,
                "you multiplied by T and ignored k": e_mul / e_mul.sum(),
            }
            hint = diagnose(got, variants, 1e-6) if got.shape == expected.shape else ""
            raise AssertionError(
                f"for logits = {fmt(z, 2)}, T = {t}, k = {k} you return {fmt(got, 4)}; "
                f"expected {fmt(expected, 4)}.{hint}"
            )
    return "divide by T, keep the k largest, softmax: exactly what lib.gpt.generate samples from."


# --- gpt_param_count ----------------------------------------------------------------------------------

_PARAM_CASES = [
    dict(vocab_size=100, d_model=16, num_layers=1, d_ff=32, max_len=8),
    dict(vocab_size=1000, d_model=64, num_layers=3, d_ff=256, max_len=40),
    dict(vocab_size=40478, d_model=768, num_layers=12, d_ff=3072, max_len=512),
]


def _lib_count(c: dict) -> int:
    # counted without building GPT-1 (117 M parameters): embeddings + per layer (attention, FFN, two LayerNorms)
    d, f = c["d_model"], c["d_ff"]
    per_layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d
    return c["vocab_size"] * d + c["max_len"] * d + c["num_layers"] * per_layer


@exercise(
    "gpt_param_count",
    chapter=_CHAPTER,
    summary="gpt_params(vocab_size, d_model, num_layers, d_ff, max_len): parameters of a post-LN GPT with tied output",
)
def _check_param_count(answer: Any) -> str | None:
    require_callable(answer, "gpt_params(vocab_size, d_model, num_layers, d_ff, max_len)")
    small = GPT(GPTConfig(100, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8, norm_first=False))
    if small.num_parameters() != _lib_count(_PARAM_CASES[0]):  # keeps the formula honest against lib
        raise RuntimeError("the checker's formula disagrees with lib.gpt.GPT")
    for c in _PARAM_CASES:
        got = as_number(call_answer(answer, *c.values()), "gpt_params(...)")
        expected = _lib_count(c)
        if got != expected:
            d, v = c["d_model"], c["vocab_size"]
            hints = {
                expected + v * d: "you counted the output matrix separately; GPT ties it to the token embedding W_e",
                expected - c["max_len"] * d: "you forgot the learned position embeddings W_p (max_len × d_model)",
                expected - c["num_layers"] * 4 * d: "you forgot the LayerNorms (γ and β, 2 per layer)",
                expected - c["num_layers"] * (4 * d + c["d_ff"] + d): "you forgot the biases",
            }
            hint = f" It looks like {hints[got]}." if got in hints else ""
            raise AssertionError(f"for {c} you count {got:,.0f}; lib.gpt.GPT has {expected:,}.{hint}")
    return f"GPT-1's sizes give {_lib_count(_PARAM_CASES[2]):,} parameters, the paper's 117 M."
