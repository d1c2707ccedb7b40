"""Checkers of the chapter "Multi-head attention" (registered in :data:`lib.exercises.EXERCISES` on import)."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch

from ..attention import MultiHeadAttention
from .core import AnswerRaised, as_array, as_number, call_answer, diagnose, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "multihead_attention"


# --------------------------------------------------------------------------------------------
# split_heads
# --------------------------------------------------------------------------------------------


def _split_heads_variants(x: torch.Tensor, num_heads: int) -> dict[str, np.ndarray]:
    """Typical wrong results of split_heads, keyed by the mistake that produces them."""
    batch, seq, d_model = x.shape
    d_k = d_model // num_heads
    return {
        "you reshaped straight to (batch, heads, seq, d_k), which mixes features of different tokens into "
        "one head; split the last axis into (heads, d_k) first, then transpose(1, 2)": x.reshape(
            batch, num_heads, seq, d_k
        )
        .double()
        .numpy(),
        "your heads take every h-th feature (interleaved); head i must own the contiguous block of features "
        "i·d_k … (i+1)·d_k − 1, as in Concat(head_1, …, head_h)": x.reshape(batch, seq, d_k, num_heads)
        .permute(0, 3, 1, 2)
        .double()
        .numpy(),
    }


@exercise(
    "mha_split_heads",
    chapter=_CHAPTER,
    summary="split_heads(x, num_heads): (batch, seq, d_model) → (batch, heads, seq, d_k)",
)
def _check_split_heads(answer: Any) -> str | None:
    """``answer(x, num_heads)`` must equal :meth:`MultiHeadAttention.split_heads`."""
    require_callable(answer, "split_heads(x, num_heads)")
    gen = torch.Generator().manual_seed(0)
    for batch, seq, d_model, heads in [(1, 3, 8, 2), (2, 5, 8, 2), (2, 4, 12, 3), (1, 6, 16, 4), (3, 2, 6, 1)]:
        x = torch.randn(batch, seq, d_model, generator=gen)
        expected = MultiHeadAttention(d_model, heads).split_heads(x).double().numpy()
        got = as_array(call_answer(answer, x.clone(), heads), f"split_heads(x of shape {tuple(x.shape)}, {heads})")
        d_k = d_model // heads
        where = f"for x of shape {(batch, seq, d_model)} and num_heads={heads}"
        if got.shape != expected.shape:
            hint = ""
            if got.shape == (batch, seq, heads, d_k):
                hint = (
                    " That is (batch, seq, heads, d_k): you split the features but forgot to "
                    "transpose(1, 2) to put the heads before the positions."
                )
            raise AssertionError(
                f"{where} your result has shape {got.shape}; expected (batch, heads, seq, d_k) = "
                f"{expected.shape}.{hint}"
            )
        if not np.allclose(got, expected, atol=1e-6, rtol=0.0):
            hint = diagnose(got, _split_heads_variants(x, heads), atol=1e-6)
            raise AssertionError(
                f"{where} your head 0, position 0 is {fmt(got[0, 0, 0])}; expected {fmt(expected[0, 0, 0])}.{hint}"
            )
    return (
        "Head i sees the features i·d_k … (i+1)·d_k − 1 of every token: the columns of W_i^Q inside "
        "the one d_model × d_model projection."
    )


# --------------------------------------------------------------------------------------------
# d_k
# --------------------------------------------------------------------------------------------


@exercise(
    "mha_d_k",
    chapter=_CHAPTER,
    summary="d_k(d_model, num_heads): features per head; ValueError when num_heads does not divide d_model",
)
def _check_d_k(answer: Any) -> str | None:
    """``answer(d_model, num_heads)`` must return d_model / num_heads and raise ValueError if not whole."""
    require_callable(answer, "d_k(d_model, num_heads)")
    # the paper's base model, the chapter's worked example (8, 2), a model of width 4 with 2 heads,
    # the paper's big model, this book's model, a wide variant, one head
    configs = [(512, 8), (8, 2), (4, 2), (1024, 16), (128, 4), (256, 8), (64, 1)]
    values = [as_number(call_answer(answer, d, h), f"d_k({d}, {h})") for d, h in configs]
    expected = [MultiHeadAttention(d, h).d_k for d, h in configs]
    if values != expected:
        wrong = [
            (
                "you divided by h twice (d_model / h²): for d_model = 512 and h = 8 that gives 8, but each "
                "head gets 512 / 8 = 64 features",
                lambda d, h: d / h**2,
            ),
            ("that is the number of heads h, not the features per head", lambda d, h: float(h)),
            ("you multiplied; each head gets d_model / h features", lambda d, h: float(d * h)),
            ("that is d_model, the width of all heads together", lambda d, h: float(d)),
        ]
        why = next((w for w, f in wrong if all(math.isclose(v, f(d, h)) for v, (d, h) in zip(values, configs))), None)
        i = next(i for i, (v, e) in enumerate(zip(values, expected)) if v != e)
        d, h = configs[i]
        hint = f" It looks like {why}." if why else ""
        raise AssertionError(f"d_k({d}, {h}) is {values[i]:g}; expected {expected[i]}.{hint}")
    for d_model, heads in [(512, 6), (10, 4)]:
        try:
            value = call_answer(answer, d_model, heads)
        except AnswerRaised as err:
            if isinstance(err.original, ValueError):
                continue
            raise AssertionError(
                f"d_k({d_model}, {heads}) raised {type(err.original).__name__}; expected a ValueError "
                f"saying that num_heads must divide d_model"
            ) from None
        raise AssertionError(
            f"d_k({d_model}, {heads}) returned {value!r}; it should raise ValueError, because {heads} heads "
            f"cannot split {d_model} features evenly (lib's MultiHeadAttention refuses too)"
        )
    return "The paper's base model: 512 / 8 = 64 features per head (8 is the number of heads, not d_k)."


# --------------------------------------------------------------------------------------------
# Parameter count
# --------------------------------------------------------------------------------------------


@exercise(
    "mha_num_parameters",
    chapter=_CHAPTER,
    summary="num_parameters(d_model, num_heads, bias): parameters of one multi-head attention layer",
)
def _check_num_parameters(answer: Any) -> str | None:
    """``answer(d_model, num_heads, bias)`` must equal the parameter count of lib's MultiHeadAttention."""
    require_callable(answer, "num_parameters(d_model, num_heads, bias)")
    configs = [(512, 8, True), (512, 8, False), (8, 2, True), (128, 4, True), (64, 1, True), (96, 12, False)]
    values = [as_number(call_answer(answer, d, h, b), f"num_parameters({d}, {h}, {b})") for d, h, b in configs]
    expected = [sum(p.numel() for p in MultiHeadAttention(d, h, bias=b).parameters()) for d, h, b in configs]
    if values == expected:
        return (
            "4·d_model² + 4·d_model (1,050,624 for d_model = 512), whatever the number of heads: "
            "more heads means narrower heads, not more weights."
        )
    wrong = [
        ("you forgot the biases (one vector of d_model per projection)", lambda d, h, b: 4 * d * d),
        ("you counted biases even when bias=False", lambda d, h, b: 4 * d * d + 4 * d),
        ("you forgot the output projection W^O", lambda d, h, b: 3 * d * d + 3 * d * b),
        (
            "you gave every head full d_model × d_model matrices; head i's W_i^Q is d_model × d_k, and the h of "
            "them side by side make one d_model × d_model matrix",
            lambda d, h, b: h * (4 * d * d + 4 * d * b),
        ),
        ("you counted one head only", lambda d, h, b: 4 * d * (d // h) + 4 * (d // h) * b),
    ]
    why = next((w for w, f in wrong if all(v == f(*c) for v, c in zip(values, configs))), None)
    i = next(i for i, (v, e) in enumerate(zip(values, expected)) if v != e)
    d, h, b = configs[i]
    hint = f" It looks like {why}." if why else " Hint: four projections W^Q, W^K, W^V, W^O."
    raise AssertionError(f"num_parameters({d}, {h}, bias={b}) is {values[i]:,.0f}; expected {expected[i]:,}.{hint}")


# --------------------------------------------------------------------------------------------
# einsum multi-head attention
# --------------------------------------------------------------------------------------------


def _mha_reference(x, w_q, w_k, w_v, w_o, heads):
    d_model = x.size(-1)
    mha = MultiHeadAttention(d_model, heads, bias=False).double()
    with torch.no_grad():
        for lin, w in ((mha.w_q, w_q), (mha.w_k, w_k), (mha.w_v, w_v), (mha.w_o, w_o)):
            lin.weight.copy_(w.T)  # nn.Linear computes x @ weight.T
        out, _ = mha(x[None], x[None], x[None])
    return out[0]


def _mha_variants(x, w_q, w_k, w_v, w_o, heads) -> dict[str, np.ndarray]:
    seq, d_model = x.shape
    d_k = d_model // heads

    def per_head(scale, softmax_dim=-1):
        q = (x @ w_q).view(seq, heads, d_k).transpose(0, 1)
        k = (x @ w_k).view(seq, heads, d_k).transpose(0, 1)
        v = (x @ w_v).view(seq, heads, d_k).transpose(0, 1)
        a = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=softmax_dim)
        return (a @ v).transpose(0, 1).reshape(seq, d_model)

    one_head = torch.softmax((x @ w_q) @ (x @ w_k).T / math.sqrt(d_model), -1) @ (x @ w_v) @ w_o
    return {
        "you forgot to divide the scores by √d_k": (per_head(1.0) @ w_o).numpy(),
        "you divided by √d_model; each head's scores use its own d_k = d_model / h": (
            per_head(math.sqrt(d_model)) @ w_o
        ).numpy(),
        "you applied the softmax over the queries; each query's row (the last axis, the keys) must sum to 1": (
            per_head(math.sqrt(d_k), softmax_dim=-2) @ w_o
        ).numpy(),
        "you forgot the output projection W^O": per_head(math.sqrt(d_k)).numpy(),
        "you computed one head over all d_model features; split Q, K and V into h heads first": one_head.numpy(),
    }


@exercise(
    "mha_einsum",
    chapter=_CHAPTER,
    summary="multihead(x, w_q, w_k, w_v, w_o, num_heads): multi-head self-attention with torch.einsum",
)
def _check_mha_einsum(answer: Any) -> str | None:
    """``answer(x (seq, d_model), w_q, w_k, w_v, w_o (d_model, d_model), num_heads)`` → (seq, d_model)."""
    require_callable(answer, "multihead(x, w_q, w_k, w_v, w_o, num_heads)")
    gen = torch.Generator().manual_seed(1)
    for seq, d_model, heads in [(3, 8, 2), (5, 16, 4), (4, 12, 3), (6, 8, 1), (2, 8, 8)]:
        x = torch.randn(seq, d_model, generator=gen, dtype=torch.float64)
        ws = [torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) / math.sqrt(d_model) for _ in range(4)]
        expected = _mha_reference(x, *ws, heads).numpy()
        got = as_array(
            call_answer(answer, x.clone(), *[w.clone() for w in ws], heads),
            f"multihead(x of shape {(seq, d_model)}, ..., {heads})",
        )
        where = f"for seq={seq}, d_model={d_model}, num_heads={heads}"
        if got.shape != expected.shape:
            raise AssertionError(
                f"{where} your output has shape {got.shape}; expected (seq, d_model) = {expected.shape}"
            )
        if not np.allclose(got, expected, atol=1e-5, rtol=1e-5):
            variants = _mha_variants(x, *ws, heads)
            if heads == 1:  # one head: a missing split is not a mistake there
                variants.pop("you computed one head over all d_model features; split Q, K and V into h heads first")
            hint = diagnose(got, variants, atol=1e-5)
            raise AssertionError(f"{where} your row 0 is {fmt(got[0])}; expected {fmt(expected[0])}.{hint}")
    return (
        "Your einsum version equals lib's MultiHeadAttention: the concatenation followed by W^O is a sum "
        "over heads of head_i · W^O_i."
    )


# --------------------------------------------------------------------------------------------
# Break it: one head's W^Q, W^K, W^V shared by every head
# --------------------------------------------------------------------------------------------


def _break_it_layer(seq: int) -> tuple[MultiHeadAttention, torch.Tensor]:
    """The break-it exercises' layer and input, drawn as the chapter draws them: seed 0, d_model 64, 4 heads, no biases.

    The chapter seeds torch's global generator; the checker does it in a fork, so the reader's next draws do not change.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        layer = MultiHeadAttention(64, 4, bias=False).eval()
        return layer, torch.randn(1, seq, 64)


@functools.cache
def _shared_reference() -> dict[str, float]:
    """Spread of the heads' maps and rank of the output: intact, heads sharing all three, or only W^Q and W^K."""
    ref: dict[str, float] = {}
    for name, shared in (("intact", ()), ("shared", ("w_q", "w_k", "w_v")), ("qk_only", ("w_q", "w_k"))):
        layer, x = _break_it_layer(80)
        d_k, h = layer.d_k, layer.num_heads
        with torch.no_grad():
            for proj in shared:
                w = getattr(layer, proj).weight  # (d_model, d_model): head i's rows are i·d_k … (i+1)·d_k − 1
                w.copy_(w[:d_k].repeat(h, 1))
            out, weights = layer(x, x, x)
        ref[f"diff_{name}"] = (weights - weights[:, :1]).abs().max().item()
        ref[f"rank_{name}"] = int(torch.linalg.matrix_rank(out[0]))  # float32: rounding is not rank
    return ref


@exercise(
    "mha_break_shared_heads",
    chapter=_CHAPTER,
    summary="break it: (max difference between the heads' maps, output rank) when all heads share the first's weights",
)
def _check_break_shared_heads(answer: Any) -> str | None:
    """Heads that share W^Q, W^K and W^V give identical maps, and the output's rank falls from d_model to d_k."""
    values = as_array(answer, "your measurement (max difference between heads, rank)").ravel()
    if values.size != 2:
        raise AssertionError(f"your measurement should be two numbers, (difference, rank); got {values.size} values")
    diff, rank = float(values[0]), float(values[1])
    ref = _shared_reference()
    want = f"expected a difference of 0 (rounding only) and rank {ref['rank_shared']} (intact: {ref['rank_intact']})"
    if diff > 1e-5:
        hint = (
            " Your heads still have maps of their own: copy the first head's rows 0 … d_k − 1 of w_q.weight and "
            "w_k.weight into the rows of every other head (w.weight[:d_k].repeat(heads, 1))."
        )
        if abs(rank - ref["rank_intact"]) < 0.5 and abs(diff - ref["diff_intact"]) < 1e-3:
            hint = " That is the intact layer: nothing is shared yet." + hint
        raise AssertionError(f"your heads' maps differ by {diff:.4g}; {want}.{hint}")
    if rank != ref["rank_shared"]:
        if rank == ref["rank_shared"] + 1:
            hint = " One more than d_k: a bias adds a constant row; build the layer with bias=False."
        elif rank == 80:
            hint = " 80 is the number of tokens: take the rank of the (80, 64) output, not of an (80, 80) map."
        elif rank > ref["rank_shared"]:
            hint = (
                " Your maps are identical but the rank is larger: did you share W^Q and W^K but not W^V? Then "
                "each head averages its own values, and the heads still add different features."
            )
        else:
            hint = ""
        raise AssertionError(f"your rank is {rank:g}; {want}.{hint}")
    return (
        f"Four identical heads write the same {ref['rank_shared']} features four times: the layer is one head of "
        f"d_k = 16 with a wider W^O, and its output has rank {ref['rank_shared']} instead of {ref['rank_intact']}."
    )


# --------------------------------------------------------------------------------------------
# Break it: no W^O
# --------------------------------------------------------------------------------------------


@functools.cache
def _no_wo_reference() -> tuple[int, int]:
    """How many of the 64 output features change when the third head is switched off: with W^O, and with W^O = I."""
    counts = []
    for keep_wo in (True, False):
        layer, x = _break_it_layer(10)
        if not keep_wo:
            layer.w_o = torch.nn.Identity()
        with torch.no_grad():
            before = layer(x, x, x)[0]
            d_k = layer.d_k
            layer.w_v.weight[2 * d_k : 3 * d_k] = 0.0  # the third head's values: it now adds nothing
            after = layer(x, x, x)[0]
        counts.append(int(((after - before).abs().amax(dim=(0, 1)) > 1e-6).sum()))
    return counts[0], counts[1]


@exercise(
    "mha_break_no_wo",
    chapter=_CHAPTER,
    summary="break it: (output features that change when the third head is switched off) with W^O and without it",
)
def _check_break_no_wo(answer: Any) -> str | None:
    """With W^O every output feature hears the third head; without it only that head's own d_k features do."""
    values = as_array(answer, "your measurement (features changed with W^O, without W^O)").ravel()
    if values.size != 2:
        raise AssertionError(f"your measurement should be two counts, (with W^O, without); got {values.size} values")
    with_wo, without = float(values[0]), float(values[1])
    expected = _no_wo_reference()
    if (with_wo, without) == expected:
        return (
            f"With W^O, switching off one head moves all {expected[0]} features; without it, only that head's own "
            f"{expected[1]}: the heads sit side by side and never mix."
        )
    hints = {
        expected[::-1]: "you swapped the two counts: the first is with W^O, the second without",
        (expected[0], expected[0]): "both counts are the full width: is W^O still in the second layer? Replace "
        "layer.w_o with torch.nn.Identity()",
        (64 - expected[0], 64 - expected[1]): "you counted the features that did NOT change",
        (expected[1], expected[1]): "both counts are d_k: did you remove W^O from both layers?",
    }
    hint = hints.get((with_wo, without))
    if hint is None and with_wo == without == 0:
        hint = (
            "nothing changed: switch the third head off (w_v.weight[32:48] = 0) and compare with the output from before"
        )
    raise AssertionError(
        f"your counts are ({with_wo:g}, {without:g}); expected {expected}."
        + (f" It looks like {hint}." if hint else "")
    )
