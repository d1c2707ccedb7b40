"""Checkers of the chapter "Decoding: greedy, beam search, sampling and the KV cache" (registered on import).

The expected values come from the library the chapter uses: :func:`lib.decode.filter_top_k`,
:func:`lib.decode.filter_top_p`, :func:`lib.decode.kv_cache_bytes`, and one step of :func:`lib.decode.beam_search`
written out with ``torch.topk`` over the flattened (beam × vocabulary) scores. None needs a model or data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..decode import filter_top_k, filter_top_p, kv_cache_bytes
from .core import as_array, as_number, call_answer, diagnose, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "decoding"


def _logits_cases() -> list[torch.Tensor]:
    """A hand-made row (one clear winner), a flat row, and a (2, 10) batch of random rows."""
    gen = torch.Generator().manual_seed(0)
    return [
        torch.tensor([2.0, 0.5, 1.0, -1.0, 0.0, 3.0]),
        torch.tensor([0.1, 0.0, 0.2, -0.1, 0.05]),
        torch.randn(2, 10, generator=gen) * 2,
    ]


def _filtered(got: Any, logits: torch.Tensor, what: str) -> np.ndarray:
    arr = as_array(got, what)
    if arr.shape != tuple(logits.shape):
        raise AssertionError(f"{what} has shape {arr.shape}; return a tensor shaped like logits, {tuple(logits.shape)}")
    return arr


def _kept_sets(arr: np.ndarray) -> list[list[int]]:
    rows = arr.reshape(-1, arr.shape[-1])
    return [np.flatnonzero(np.isfinite(r)).tolist() for r in rows]


# --- top_k_filter -----------------------------------------------------------------------------------


@exercise(
    "dec_top_k",
    chapter=_CHAPTER,
    summary="top_k_filter(logits, k): the k largest logits of each row unchanged, −inf elsewhere",
)
def _check_top_k(answer: Any) -> str | None:
    """``answer(logits, k)`` must equal :func:`lib.decode.filter_top_k` (rows of the last axis)."""
    require_callable(answer, "top_k_filter(logits, k)")
    for logits in _logits_cases():
        vocab = logits.size(-1)
        for k in (1, 3, vocab):
            expected = filter_top_k(logits, k).double().numpy()
            where = f"for logits {fmt(logits, 2)} and k = {k}"
            got = _filtered(call_answer(answer, logits.clone(), k), logits, f"top_k_filter (k = {k})")
            if np.array_equal(np.isfinite(got), np.isfinite(expected)) and np.allclose(
                got[np.isfinite(got)], expected[np.isfinite(expected)], atol=1e-6
            ):
                continue
            hint = ""
            if np.all(np.isfinite(got)) and np.allclose(np.where(np.isfinite(expected), expected, 0.0), got):
                hint = (
                    " It looks like you set the dropped logits to 0; a logit of 0 still has probability > 0: use −inf."
                )
            elif np.all(np.isfinite(got)) and np.all(got >= 0) and np.allclose(got.sum(-1), 1.0, atol=1e-5):
                hint = (
                    " It looks like you returned probabilities; keep the logits and put −inf where a token is dropped."
                )
            elif [len(s) for s in _kept_sets(got)] == [min(k + 1, vocab)] * len(_kept_sets(got)):
                hint = " You kept k + 1 tokens: compare with the k-th largest value using >=, or use torch.topk."
            elif _kept_sets(got) == _kept_sets(filter_top_k(-logits, k).double().numpy()):
                hint = " You kept the k *smallest* logits."
            elif logits.dim() == 2 and any(len(s) != min(k, vocab) for s in _kept_sets(got)):
                hint = " Each row must keep its own k largest values: work along the last axis (dim=-1)."
            raise AssertionError(f"{where} you return {fmt(got, 3, 10)}; expected {fmt(expected, 3, 10)}.{hint}")
    return "k is fixed: a flat distribution loses as many tokens as a peaked one, which is what top-p changes."


# --- top_p_filter -----------------------------------------------------------------------------------


@exercise(
    "dec_top_p",
    chapter=_CHAPTER,
    summary="top_p_filter(logits, p): keep the smallest set of most probable tokens with mass ≥ p, −inf elsewhere",
)
def _check_top_p(answer: Any) -> str | None:
    """``answer(logits, p)`` must equal :func:`lib.decode.filter_top_p` (the nucleus of Holtzman et al. 2020)."""
    require_callable(answer, "top_p_filter(logits, p)")
    for logits in _logits_cases():
        for p in (0.05, 0.5, 0.9, 1.0):
            expected = filter_top_p(logits, p).double().numpy()
            where = f"for logits {fmt(logits, 2)} and p = {p}"
            got = _filtered(call_answer(answer, logits.clone(), p), logits, f"top_p_filter (p = {p})")
            if np.array_equal(np.isfinite(got), np.isfinite(expected)) and np.allclose(
                got[np.isfinite(got)], expected[np.isfinite(expected)], atol=1e-6
            ):
                continue
            probs, order = torch.softmax(logits.double(), -1).sort(-1, descending=True)
            cum = probs.cumsum(-1)
            plain = torch.softmax(logits.double(), -1)  # in the vocabulary's order

            def keep(
                mask_sorted: torch.Tensor, order: torch.Tensor = order, logits: torch.Tensor = logits
            ) -> np.ndarray:
                m = torch.zeros_like(mask_sorted).scatter(-1, order, mask_sorted)
                return logits.double().masked_fill(~m, float("-inf")).numpy()

            variants = {
                "you kept only the tokens whose cumulative probability is below p; the token that crosses p "
                "belongs to the nucleus too (keep token i while the mass *before* it is < p)": keep(cum < p),
                "you kept the tokens whose own probability is at least p; p is the mass of the whole nucleus, "
                "filled with the most probable tokens until it reaches p": (
                    logits.double().masked_fill(~(plain >= p), float("-inf")).numpy()
                ),
                "you accumulated the probabilities in the vocabulary's order; sort them, most probable first": (
                    logits.double().masked_fill(~(plain.cumsum(-1) - plain < p), float("-inf")).numpy()
                ),
            }
            hint = diagnose(
                np.nan_to_num(got, neginf=-1e9), {k: np.nan_to_num(v, neginf=-1e9) for k, v in variants.items()}, 1e-6
            )
            if not hint and np.all(np.isfinite(got)) and p < 1:
                hint = " Nothing was dropped: set the logits outside the nucleus to −inf."
            raise AssertionError(f"{where} you return {fmt(got, 3, 10)}; expected {fmt(expected, 3, 10)}.{hint}")
    return (
        "the nucleus adapts: a peaked distribution keeps one or two tokens, a flat one many "
        "(Holtzman et al. 2020, §3.1)."
    )


# --- beam_step --------------------------------------------------------------------------------------


def _beam_cases() -> list[tuple[torch.Tensor, torch.Tensor, int]]:
    """(scores (K,), log-probabilities (K, V), K): a worked case where one beam takes two places, then random ones."""
    gen = torch.Generator().manual_seed(1)
    scores = torch.tensor([-1.0, -1.5, -4.0])
    logp = torch.log_softmax(torch.tensor([[3.0, 2.9, 0.0, -1.0], [0.0, 1.0, 2.0, 0.5], [5.0, 0.0, 0.0, 0.0]]), -1)
    cases = [(scores, logp, 3)]
    for k, v in ((2, 6), (4, 9)):
        cases.append(
            (
                -torch.rand(k, generator=gen) * 3,
                torch.log_softmax(torch.randn(k, v, generator=gen) * 2, -1),
                k,
            )
        )
    return cases


def _beam_reference(scores: torch.Tensor, logp: torch.Tensor, k: int) -> tuple[list[int], list[int], np.ndarray]:
    vocab = logp.size(-1)
    top = (scores[:, None] + logp).reshape(-1).topk(k)
    return (top.indices // vocab).tolist(), (top.indices % vocab).tolist(), top.values.double().numpy()


@exercise(
    "dec_beam_step",
    chapter=_CHAPTER,
    summary="beam_step(scores, logp, k) -> (parents, tokens, new_scores): one step of beam search, best first",
)
def _check_beam_step(answer: Any) -> str | None:
    """``answer(scores (K,), logp (K, V), k)`` must return the k best (beam, token) extensions, best first."""
    require_callable(answer, "beam_step(scores, logp, k)")
    for scores, logp, k in _beam_cases():
        parents, tokens, new_scores = _beam_reference(scores, logp, k)
        where = f"for scores {fmt(scores, 3)} and logp of shape {tuple(logp.shape)}"
        got = call_answer(answer, scores.clone(), logp.clone(), k)
        if not (isinstance(got, (tuple, list)) and len(got) == 3):
            raise AssertionError(f"return a triple (parents, tokens, new_scores), got {type(got).__name__}")
        g_par, g_tok = (np.rint(as_array(x, "parents/tokens")).astype(int).ravel().tolist() for x in got[:2])
        g_sc = as_array(got[2], "new_scores").ravel()
        if g_par == parents and g_tok == tokens and np.allclose(g_sc, new_scores, atol=1e-5):
            continue
        vocab = logp.size(-1)
        per_beam = logp.topk(1, dim=-1)  # each beam's own best token: greedy per hypothesis
        hint = ""
        same_scores = np.allclose(g_sc, new_scores, atol=1e-5)
        if g_par == tokens and g_tok == parents:
            hint = " You swapped parents and tokens: the flat index i is beam i // V and token i % V."
        elif g_par == parents and g_tok == tokens and not same_scores:
            hint = " The right extensions, but new_scores should be the summed log-probabilities scores[parent] + logp."
        elif sorted(zip(g_par, g_tok)) == sorted(zip(parents, tokens)):
            hint = " The right extensions in the wrong order: return them best first (torch.topk's order)."
        elif g_par == list(range(k)) and g_tok == per_beam.indices[:, 0].tolist():
            hint = " Each beam kept its own best token; beam search ranks all K · V extensions together."
        elif np.allclose(g_sc, logp.reshape(-1).topk(k).values.double().numpy(), atol=1e-5):
            hint = (
                " You ranked the new tokens' log-probabilities alone: add each beam's score first "
                "(scores[:, None] + logp)."
            )
        raise AssertionError(
            f"{where} you return parents {g_par}, tokens {g_tok}; expected parents {parents}, tokens {tokens} "
            f"(scores {fmt(new_scores, 3)}).{hint} (V = {vocab})"
        )
    return (
        "in the first case beam 0 takes two of the three places and beam 2 drops out although its best token "
        "is the most probable of all: its prefix was too unlikely."
    )


# --- kv_bytes ---------------------------------------------------------------------------------------

_KV_CASES = [  # (num_layers, num_heads, d_model, seq_len, batch, bytes_per_value)
    (3, 4, 128, 100, 1, 4),  # the shipped model, float32
    (6, 8, 512, 50, 5, 4),  # the paper's base model, a beam of 5
    (96, 96, 12288, 2048, 1, 2),  # GPT-3 175B, float16
]


@exercise(
    "dec_kv_bytes",
    chapter=_CHAPTER,
    summary="kv_bytes(num_layers, num_heads, d_model, seq_len, batch, bytes_per_value): the KV cache's bytes",
)
def _check_kv_bytes(answer: Any) -> str | None:
    """``answer(...)`` must equal :func:`lib.decode.kv_cache_bytes` with d_k = d_model / num_heads."""
    require_callable(answer, "kv_bytes(num_layers, num_heads, d_model, seq_len, batch, bytes_per_value)")
    for layers, heads, d_model, t, batch, nbytes in _KV_CASES:
        expected = kv_cache_bytes(layers, heads, d_model // heads, t, batch, nbytes)
        got = as_number(call_answer(answer, layers, heads, d_model, t, batch, nbytes), "kv_bytes(...)")
        if got == expected:
            continue
        where = (
            f"for {layers} layers, {heads} heads, d_model {d_model}, t = {t}, batch {batch}, {nbytes} bytes per value"
        )
        variants = {
            "you left out the factor 2: the cache holds a key AND a value per head and position": expected / 2,
            "you used d_model per head; each head caches d_k = d_model / num_heads numbers": expected * heads,
            "you forgot the batch: every sequence decoded at once has its own cache": expected / batch,
            "you counted bits, not bytes": expected * 8,
            "you forgot the bytes per value (you counted numbers)": expected / nbytes,
        }
        hint = next((f" It looks like {w}." for w, v in variants.items() if got == v), "")
        raise AssertionError(f"{where} you return {got:,.0f} bytes; expected {expected:,} bytes.{hint}")
    gpt3 = kv_cache_bytes(96, 96, 128, 2048, 1, 2)
    return (
        f"GPT-3's cache for one full 2,048-token context is {gpt3 / 1e9:.2f} GB "
        f"(= {gpt3 / 2**30:.1f} GiB, 1 GiB = 2**30 bytes) in float16."
    )
