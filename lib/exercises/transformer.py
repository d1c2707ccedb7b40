"""Checkers of the chapter "The Transformer" (registered in :data:`lib.exercises.EXERCISES` on import)."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..attention import causal_mask
from ..experiments import copy_task_run
from ..special_tokens import BOS_ID, EOS_ID, PAD_ID
from ..training import noam_lr
from ..transformer import Transformer, TransformerConfig
from .core import as_array, as_number, call_answer, checker_setup, diagnose, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

# --------------------------------------------------------------------------------------------
# Chapter: transformer
# --------------------------------------------------------------------------------------------

_CHAPTER = "transformer"


# --- layer_norm -------------------------------------------------------------------------------


def _layer_norm_inputs() -> list[torch.Tensor]:
    """Inputs: the embedded row 0 of the chapter's encoder layer by hand; a constant row (the ε edge); a 3-D tensor."""
    gen = torch.Generator().manual_seed(0)
    return [
        torch.tensor([[1.0, 3.0, 3.0, 5.0]]),
        torch.tensor([[1.0, 3.0, 3.0, 5.0], [2.0, 2.0, 2.0, 2.0], [0.5, -1.0, 4.0, 0.0]]),
        torch.randn(2, 5, 8, generator=gen) * 3 + 1,
    ]


def _layer_norm_variants(x: torch.Tensor) -> dict[str, np.ndarray]:
    """Typical wrong answers, keyed by the mistake that produces them."""
    eps = 1e-5
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    out = {
        "you used the unbiased variance (dividing by d - 1, torch.var's default); LayerNorm divides by d: "
        "use x.var(-1, unbiased=False) or ((x - μ)²).mean(-1)": (x - mean)
        / torch.sqrt(x.var(-1, unbiased=True, keepdim=True) + eps),
        "you divided by the variance σ²; divide by the standard deviation √(σ² + ε)": (x - mean) / (var + eps),
        "you forgot to subtract the mean μ": x / torch.sqrt(var + eps),
    }
    if x.dim() >= 2:  # for a single row this gives zeros: each column is normalised over one value
        m0, v0 = x.mean(0, keepdim=True), x.var(0, unbiased=False, keepdim=True)
        out[
            "you normalised over the first axis (across the batch, as BatchNorm does); LayerNorm normalises "
            "each row over its last axis, the features"
        ] = (x - m0) / torch.sqrt(v0 + eps)
    return {k: v.double().numpy() for k, v in out.items()}


@exercise(
    "layer_norm_last_axis",
    chapter=_CHAPTER,
    summary="layer_norm(x): normalise a tensor over its last axis (mean 0, variance 1, ε = 1e-5)",
)
def _check_layer_norm(answer: Any) -> str | None:
    """``answer(x)`` must equal ``F.layer_norm(x, x.shape[-1:], eps=1e-5)`` (γ = 1, β = 0)."""
    require_callable(answer, "layer_norm(x)")
    for x in _layer_norm_inputs():
        expected = F.layer_norm(x, x.shape[-1:], eps=1e-5).double().numpy()
        got = as_array(call_answer(answer, x.clone()), f"layer_norm(x of shape {tuple(x.shape)})")
        if got.shape != expected.shape:
            raise AssertionError(
                f"for x of shape {tuple(x.shape)} your output has shape {got.shape}; expected {expected.shape} "
                "(LayerNorm keeps the shape)"
            )
        if np.isnan(got).any():
            raise AssertionError(
                f"for x = {fmt(x[1] if x.size(0) > 1 else x[0])}... your output contains NaN. It looks like you "
                "forgot ε: a constant row has σ² = 0, and (x - μ)/√σ² is 0/0; divide by √(σ² + ε) with ε = 1e-5"
            )
        if not np.allclose(got, expected, atol=1e-4, rtol=1e-4):
            hint = diagnose(got, _layer_norm_variants(x), atol=1e-4)
            raise AssertionError(
                f"for x of shape {tuple(x.shape)} your first row is {fmt(got.reshape(-1, x.shape[-1])[0])}; "
                f"expected {fmt(expected.reshape(-1, x.shape[-1])[0])}.{hint}"
            )
    return (
        "The embedded row [1, 3, 3, 5] of the encoder layer computed by hand has μ = 3 and σ² = 2, so it becomes "
        "about [-1.414, 0, 0, 1.414]: each row is normalised on its own, whatever else is in the batch."
    )


# --- tied_params ------------------------------------------------------------------------------


def _embedding_and_output_params(vocab_size: int, d_model: int, shared: bool) -> int:
    """Parameters of src_embed, tgt_embed and output of a lib Transformer, a tied matrix counted once."""
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
    unique = {id(p): p for m in (model.src_embed, model.tgt_embed, model.output) for p in m.parameters()}
    return sum(p.numel() for p in unique.values())


@exercise(
    "tied_embedding_params",
    chapter=_CHAPTER,
    summary="embedding_params(vocab_size, d_model, shared): parameters of the two embeddings and the "
    "output projection, tied or not",
)
def _check_tied_params(answer: Any) -> str | None:
    """``answer(V, d, shared)`` must count src embedding + tgt embedding + output projection as lib builds them."""
    require_callable(answer, "embedding_params(vocab_size, d_model, shared)")
    for vocab_size, d_model, shared in [
        (10000, 512, True),
        (10000, 512, False),
        (8000, 128, True),
        (8000, 128, False),
        (37000, 512, True),
    ]:
        expected = _embedding_and_output_params(vocab_size, d_model, shared)
        value = as_number(
            call_answer(answer, vocab_size, d_model, shared), f"embedding_params({vocab_size}, {d_model}, {shared})"
        )
        if value == expected:
            continue
        vd = vocab_size * d_model
        wrong = {
            3 * vd: "you counted the shared matrix three times; tied weights are one tensor and count once",
            2 * vd: (
                "you counted two matrices; there are three: the source embedding, the target embedding "
                "and the output projection"
            )
            if not shared
            else "you counted the shared matrix twice; with shared=True all three are one matrix",
            vd + vocab_size: "you added a bias of vocab_size; lib's output projection has no bias (bias=False)",
            3 * vd + vocab_size: "you added a bias of vocab_size; lib's output projection has no bias (bias=False)",
            vd: "with shared=False nothing is tied: three separate vocab_size × d_model matrices",
        }
        why = wrong.get(int(value)) if float(value).is_integer() else None
        hint = f" It looks like {why}." if why else " Hint: each matrix is vocab_size × d_model."
        raise AssertionError(
            f"for vocab_size={vocab_size}, d_model={d_model}, shared={shared} your count is {value:,.0f}; "
            f"expected {expected:,}.{hint}"
        )
    return (
        "An output layer of d_model 512 by a vocabulary of 10,000 alone is 5,120,000 weights; "
        "tying saves two such matrices."
    )


# --- noam_peak --------------------------------------------------------------------------------


@exercise(
    "noam_peak",
    chapter=_CHAPTER,
    summary="noam_peak(d_model, warmup): the largest learning rate of the warm-up schedule (factor 1)",
)
def _check_noam_peak(answer: Any) -> str | None:
    """``answer(d_model, warmup)`` must return max_step noam_lr(step, d_model, warmup) = noam_lr(warmup, ...)."""
    require_callable(answer, "noam_peak(d_model, warmup)")
    for d_model, warmup in [(512, 4000), (128, 400), (1024, 16000), (64, 1)]:
        expected = max(noam_lr(s, d_model, warmup) for s in range(max(1, warmup - 2), warmup + 3))
        value = as_number(call_answer(answer, d_model, warmup), f"noam_peak({d_model}, {warmup})")
        if math.isclose(value, expected, rel_tol=1e-6):
            continue
        wrong = {
            warmup**-0.5: "you forgot the factor d_model^-0.5",
            d_model**-0.5: "you forgot the warm-up term: at step = warmup both branches equal warmup^-0.5",
            d_model**-0.5 * warmup**-1.5: "you evaluated step · warmup^-1.5 at step 1; the peak is at step = warmup",
            d_model**-0.5 * warmup**0.5: "you evaluated warmup^+0.5; the peak is warmup · warmup^-1.5 = warmup^-0.5",
            (d_model * warmup) ** 0.5: "that is the inverse of the peak: (d_model · warmup)^-0.5",
        }
        why = next((w for v, w in wrong.items() if math.isclose(value, v, rel_tol=1e-6)), None)
        hint = f" It looks like {why}." if why else " Hint: the two branches of the min are equal at step = warmup."
        raise AssertionError(
            f"for d_model={d_model}, warmup={warmup} your peak is {value:.6g}; expected {expected:.6g}.{hint}"
        )
    return (
        "The peak is (d_model · warmup)^-0.5: 6.99e-4 for the paper's base model; TrainConfig.lr_factor "
        "rescales it to peak_lr."
    )


# --- causal_mask ------------------------------------------------------------------------------


@exercise(
    "decoder_causal_mask",
    chapter=_CHAPTER,
    summary="causal(n): the (n, n) bool mask, True = may attend, with which a decoder cannot see the future",
)
def _check_causal_mask(answer: Any) -> str | None:
    """``answer(n)`` must equal ``lib.attention.causal_mask(n)`` (bool or 0/1 values)."""
    require_callable(answer, "causal(n)")
    for n in (4, 1, 7):
        expected = causal_mask(n).numpy()
        raw = call_answer(answer, n)
        got = as_array(raw, f"causal({n})")
        if got.shape != expected.shape:
            raise AssertionError(f"for n={n} your mask has shape {got.shape}; expected ({n}, {n})")
        if np.isinf(got).any() or (got < 0).any():
            raise AssertionError(
                f"for n={n} your mask holds {fmt(np.unique(got))}: that is an additive mask "
                "(0 and -inf, or a very negative number such as -1e10, added to the scores before the softmax); "
                "lib's masks are booleans with True = may attend"
            )
        if not np.isin(got, [0.0, 1.0]).all():
            raise AssertionError(f"for n={n} your mask holds values other than True/False: {fmt(np.unique(got))}")
        got = got.astype(bool)
        if (got == expected).all():
            continue
        variants = {
            "you inverted the meaning: in lib True = may attend, False = masked": ~expected,
            "your mask is the transpose: row t is the query and may see the columns 0..t, not t..n-1": expected.T,
            "a position may also attend to itself: keep the diagonal (torch.tril, not tril(-1))": np.tril(expected, -1),
            "you masked the past instead of the future; row t may see the columns 0..t": np.triu(
                np.ones((n, n), bool), 1
            ),
        }
        hint = next((f" It looks like {m}." for m, v in variants.items() if (v == got).all()), "")
        raise AssertionError(
            f"for n={n} your row 0 is {got[0].astype(int).tolist()} and row {n - 1} is {got[-1].astype(int).tolist()}; "
            f"expected {expected[0].astype(int).tolist()} and {expected[-1].astype(int).tolist()}.{hint}"
        )
    return "Row t is True for columns 0..t: token t sees itself and the past, never the future."


# --- break it: the causal mask ----------------------------------------------------------------
# The reference is the chapter's own experiment, lib.experiments.copy_task_run, with and without the mask.


def _no_mask_forward(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    """Transformer.forward with the decoder's causal mask removed (self_mask=None)."""
    memory, src_mask = model.encode(src)
    return model.output(model.decoder(model.embed(tgt_in, model.tgt_embed), memory, None, src_mask)[0])


@functools.lru_cache(maxsize=1)
def _copy_reference() -> dict[str, dict[str, float]]:
    """The two reference runs (about 3 s on two cores), computed once per session."""
    return {"masked": copy_task_run(), "unmasked": copy_task_run(_no_mask_forward)}


def _run_numbers(answer: Any, key: str) -> dict[str, float]:
    """The reader's ``answer[key]`` as {"loss": float, "greedy": float}."""
    if not isinstance(answer, dict) or set(answer) != {"masked", "unmasked"}:
        got = sorted(answer) if isinstance(answer, dict) else type(answer).__name__
        raise AssertionError(
            f'expected a dict {{"masked": copy_task_run(), "unmasked": copy_task_run(forward_no_mask)}}, got {got}'
        )
    run = answer[key]
    if not isinstance(run, dict) or not {"loss", "greedy"} <= set(run):
        raise AssertionError(f'answer["{key}"] should be the dict copy_task_run returns, with "loss" and "greedy"')
    return {k: as_number(run[k], f'answer["{key}"]["{k}"]') for k in ("loss", "greedy")}


def _same_run(a: dict[str, float], b: dict[str, float]) -> bool:
    """Two runs agree: the loss within 10 % (and 0.05), the greedy accuracy within 0.05 (other threads, other sums)."""
    return abs(a["loss"] - b["loss"]) <= max(0.05, 0.1 * b["loss"]) and abs(a["greedy"] - b["greedy"]) <= 0.05


@exercise(
    "tr_break_causal",
    chapter=_CHAPTER,
    summary='break it: {"masked": ..., "unmasked": ...}, the training loss and greedy accuracy of the copy task '
    "with and without the causal mask",
)
def _check_break_causal(answer: Any) -> str | None:
    """The reader's two runs must match the checker's own: without the mask, lower loss and near-chance decoding."""
    masked, unmasked = _run_numbers(answer, "masked"), _run_numbers(answer, "unmasked")
    with checker_setup("training the two reference models of the copy task", "torch must be installed"):
        ref = _copy_reference()
    shown = {k: f"loss {v['loss']:.2f}, greedy {v['greedy']:.2f}" for k, v in ref.items()}
    if _same_run(masked, ref["unmasked"]) and _same_run(unmasked, ref["masked"]):
        raise AssertionError(
            "you swapped the two runs: the model trained without the mask is the one with the lower loss "
            f"({shown['unmasked']}); the masked one has {shown['masked']}"
        )
    if _same_run(unmasked, ref["masked"]):
        raise AssertionError(
            f"your run without the mask gives {unmasked['loss']:.2f} and {unmasked['greedy']:.2f}, the numbers of "
            "the masked model: the mask is still there. model(src, tgt_in) and model.decode build the causal mask "
            "themselves; call model.decoder(x, memory, None, src_mask) yourself, with self_mask=None"
        )
    if not _same_run(masked, ref["masked"]):
        raise AssertionError(
            f"your masked run gives loss {masked['loss']:.2f}, greedy {masked['greedy']:.2f}; the reference gives "
            f"{shown['masked']}. Run copy_task_run() with its defaults (200 steps, seed 0) and the model's own forward"
        )
    if not _same_run(unmasked, ref["unmasked"]):
        low = unmasked["loss"] < masked["loss"]
        why = (
            "the loss fell, but not as the reference's did: did you remove the mask from the decoder's "
            "self-attention only, and keep the source padding mask and the √d_model scale (model.embed)?"
            if low
            else "your loss did not fall below the masked model's: the mask may still be there, or another piece "
            "changed too; remove only the decoder's causal mask (self_mask=None)"
        )
        raise AssertionError(
            f"your run without the mask gives loss {unmasked['loss']:.2f}, greedy {unmasked['greedy']:.2f}; the "
            f"reference gives {shown['unmasked']}: {why}"
        )
    return (
        f"Without the mask the training loss fell to {ref['unmasked']['loss']:.2f} (masked: "
        f"{ref['masked']['loss']:.2f}, held up by noise no model can predict), yet greedy decoding got "
        f"{ref['unmasked']['greedy']:.0%} of the tokens right (masked: {ref['masked']['greedy']:.0%}; chance: 8 %): "
        "in training the model read the next token from its own input."
    )


# --- break it: the √d_model scale -------------------------------------------------------------

# §1's test pair (Multi30k test_2016_flickr, pair 14), written out so the checker needs no data set.
_WALK_PAIR = ("Drei Leute sitzen in einer Höhle.", "Three people sit in a cave.")


@functools.lru_cache(maxsize=1)
def _shipped():
    """The shipped run (model in eval mode and tokenizer), loaded once."""
    from ..checkpoint import SHIPPED_MODEL, load_run

    return load_run(SHIPPED_MODEL)


@functools.lru_cache(maxsize=1)
def _scale_reference() -> dict[str, float]:
    """§1's pair through the shipped model with and without √d_model: the PE/token length ratios and the losses."""
    from ..data import collate, encode_pairs

    run = _shipped()
    model = run.model
    batch = collate(encode_pairs([_WALK_PAIR], run.tokenizer), PAD_ID, BOS_ID, EOS_ID)
    src, tgt_in, tgt_out = batch.src, batch.tgt_in, batch.tgt_out
    root_d = math.sqrt(model.config.d_model)

    def loss(src_scale: float, tgt_scale: float) -> float:
        mask = model.source_mask(src)
        memory = model.encoder(model.positional(model.src_embed(src) * src_scale), mask)[0]
        y = model.positional(model.tgt_embed(tgt_in) * tgt_scale)
        logits = model.output(model.decoder(y, memory, causal_mask(tgt_in.size(1)), mask)[0])
        return F.cross_entropy(logits[0], tgt_out[0]).item()

    with torch.no_grad():
        token = model.src_embed(src)[0].norm(dim=-1)  # (seq_s,)
        pe = model.positional(torch.zeros(1, src.size(1), model.config.d_model))[0].norm(dim=-1)
        return {
            "ratio": (pe / token).mean().item(),
            "ratio_scaled": (pe / (token * root_d)).mean().item(),
            "loss": loss(1.0, 1.0),
            "loss_intact": loss(root_d, root_d),
            "loss_src_only": loss(1.0, root_d),
            "loss_tgt_only": loss(root_d, 1.0),
            "tokens": tgt_out.size(1),
        }


@exercise(
    "tr_break_scale",
    chapter=_CHAPTER,
    summary='break it: {"pe_to_token": ..., "loss": ...}, the shipped model without the √d_model embedding scale',
)
def _check_break_scale(answer: Any) -> str | None:
    """``pe_to_token`` and ``loss`` must be the shipped model's, on §1's pair, with the √d_model scale removed."""
    if not isinstance(answer, dict) or set(answer) != {"pe_to_token", "loss"}:
        got = sorted(answer) if isinstance(answer, dict) else type(answer).__name__
        raise AssertionError(f'expected a dict {{"pe_to_token": ..., "loss": ...}}, got {got}')
    ratio = as_number(answer["pe_to_token"], 'answer["pe_to_token"]')
    loss = as_number(answer["loss"], 'answer["loss"]')
    with checker_setup("loading the shipped model (models/de-en)", "the book's models/de-en folder must be there"):
        ref = _scale_reference()
    if not math.isclose(ratio, ref["ratio"], rel_tol=0.02):
        wrong = {
            ref["ratio_scaled"]: "that is the ratio with the scale: divide by the length of the embedding row "
            "itself, without × √d_model",
            1 / ref["ratio"]: "you divided the token's length by the encoding's; measure ‖PE‖ / ‖embedding‖",
        }
        why = next((w for v, w in wrong.items() if math.isclose(ratio, v, rel_tol=0.02)), None)
        hint = f" It looks like {why}." if why else " Hint: ‖PE_t‖ / ‖E[x_t]‖ for each source token t, then the mean."
        raise AssertionError(f"your pe_to_token is {ratio:.3f}; expected {ref['ratio']:.3f}.{hint}")
    if not math.isclose(loss, ref["loss"], abs_tol=0.02):
        wrong = {
            ref["loss_intact"]: "that is the intact model's loss: model(src, tgt_in) and model.embed multiply by "
            "√d_model; build the embeddings yourself, without it",
            ref["loss"] * ref["tokens"]: f"you summed over the {ref['tokens']} target tokens; give the mean per token",
            ref["loss_src_only"]: "you dropped the scale in the encoder only; the decoder's embedding is scaled too",
            ref["loss_tgt_only"]: "you dropped the scale in the decoder only; the encoder's embedding is scaled too",
        }
        why = next((w for v, w in wrong.items() if math.isclose(loss, v, abs_tol=0.02)), None)
        hint = f" It looks like {why}." if why else " Hint: the mean cross-entropy over the target tokens, in nats."
        raise AssertionError(f"your loss is {loss:.4f}; expected {ref['loss']:.4f}.{hint}")
    return (
        f"Without √d_model the encoding is {ref['ratio']:.1f} times longer than the token's embedding (with it, "
        f"{ref['ratio_scaled']:.2f}), and the loss per token jumps from {ref['loss_intact']:.2f} to {ref['loss']:.2f}."
    )
