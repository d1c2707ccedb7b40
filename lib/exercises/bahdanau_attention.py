"""Checkers of the chapter "Bahdanau attention" (registered in :data:`lib.exercises.EXERCISES` on import).

The expected values come from ``lib.seq2seq``: :class:`~lib.seq2seq.AdditiveScore` with the reader's weights
copied in, and :func:`~lib.seq2seq.attend`, both in float64. The break-it checkers measure the chapter's own
reversal model with attention (``lib.experiments.reversal_experiment("additive")``, cached on disk) on its test
set, teacher-forced, with the same replacement of ``lib.seq2seq.attend`` that the reader makes.
"""

from __future__ import annotations

import functools
from typing import Any
from unittest import mock

import numpy as np
import torch
from torch import Tensor

from .. import seq2seq as _seq2seq
from ..experiments import reversal_experiment, sequence_task
from ..seq2seq import AdditiveScore, Seq2Seq, attend
from ..special_tokens import BOS_ID, EOS_ID
from .core import as_array, as_number, call_answer, checker_setup, diagnose, exercise, fmt, require_callable
from .core import one_thread as _one_thread

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "bahdanau_attention"


def _softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax; -inf entries get weight 0."""
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------------------------------
# additive_score(s, H, W_q, W_k, v): e_j = vᵀ tanh(W_q s + W_k h_j)
# --------------------------------------------------------------------------------------------


def _additive_reference(s, H, W_q, W_k, v) -> np.ndarray:
    """lib's AdditiveScore with the given weights (and a zero bias) in float64: (seq_s,) scores."""
    d_a, d_q = W_q.shape
    score = AdditiveScore(d_q, W_k.shape[1], d_a).double()
    with torch.no_grad():
        score.w_q.weight.copy_(torch.from_numpy(W_q))
        score.w_k.weight.copy_(torch.from_numpy(W_k))
        score.w_k.bias.zero_()
        score.v.weight.copy_(torch.from_numpy(v)[None])
        keys = torch.from_numpy(H)[None]
        return score(torch.from_numpy(s)[None], score.prepare(keys))[0].numpy()


def _additive_variants(s, H, W_q, W_k, v) -> dict[str, np.ndarray]:
    hidden = np.tanh(W_q @ s + H @ W_k.T)  # (seq_s, d_attention)
    scores = hidden @ v
    variants = {
        "you summed the hidden layer tanh(W_q s + W_k h_j) over its entries, which is v = (1, …, 1); v is a "
        "given (learned) vector: e_j = vᵀ tanh(W_q s + W_k h_j)": hidden.sum(-1),
        "you left out the tanh: without it the score is linear, vᵀ W_q s + vᵀ W_k h_j, and the part that "
        "depends on s is the same for every j, so the softmax ignores the query": (W_q @ s + H @ W_k.T) @ v,
        "you returned the weights softmax(e); the exercise asks for the scores e_j before the softmax": _softmax(
            scores
        ),
        "you put tanh around the product with v: the tanh acts on the hidden layer, v comes after it": np.tanh(scores),
    }
    if W_q.shape[0] == s.shape[0]:
        variants[
            "you used the query s where v belongs, as the lecture notes print it (h'ᵀ tanh(…)); Bahdanau et al. "
            "use a separate learned vector v"
        ] = hidden @ s
    return variants


@exercise(
    "ba_additive_score",
    chapter=_CHAPTER,
    summary="additive_score(s, H, W_q, W_k, v): the additive scores e_j = vᵀ tanh(W_q s + W_k h_j), shape (seq_s,)",
)
def _check_additive_score(answer: Any) -> str | None:
    """``answer(s, H, W_q, W_k, v)`` must equal lib's AdditiveScore (with a zero bias) on the same weights."""
    require_callable(answer, "additive_score(s, H, W_q, W_k, v)")
    rng = np.random.default_rng(0)
    # (seq_s, d_query, d_key, d_attention): first all sizes equal (where the lecture notes' h'ᵀ fits the shapes), then
    # all different (where it cannot even be computed), a single source position, a wide hidden layer
    for seq_s, d_q, d_k, d_a in [(4, 3, 3, 3), (5, 4, 6, 2), (1, 3, 2, 5), (7, 2, 4, 8)]:
        s = rng.standard_normal(d_q)
        H = rng.standard_normal((seq_s, d_k))
        W_q = rng.standard_normal((d_a, d_q))
        W_k = rng.standard_normal((d_a, d_k))
        v = rng.standard_normal(d_a)
        expected = _additive_reference(s, H, W_q, W_k, v)
        where = (
            f"for s of shape {s.shape}, H of shape {H.shape}, W_q of shape {W_q.shape}, W_k of shape "
            f"{W_k.shape} and v of shape {v.shape}"
        )
        got = as_array(
            call_answer(answer, s.copy(), H.copy(), W_q.copy(), W_k.copy(), v.copy()),
            "additive_score(s, H, W_q, W_k, v)",
        )
        variants = _additive_variants(s, H, W_q, W_k, v)
        if got.shape != expected.shape:
            hint = diagnose(got, variants, atol=1e-8)
            if not hint and got.shape == (seq_s, d_a):
                hint = (
                    " That is (seq_s, d_attention): the hidden layer tanh(W_q s + W_k h_j) of every source "
                    "position, a vector each, not a score. Multiply it by v to get one number per position."
                )
            elif not hint and got.size == seq_s:
                hint = " Return one score per source position as a 1-D array of shape (seq_s,)."
            raise AssertionError(
                f"{where} your scores have shape {got.shape}; expected (seq_s,) = {expected.shape}.{hint}"
            )
        if not np.allclose(got, expected, atol=1e-8, rtol=1e-8):
            hint = diagnose(got, variants, atol=1e-8)
            raise AssertionError(f"{where} your scores are {fmt(got)}; expected {fmt(expected)}.{hint}")
    return (
        "tanh(W_q s + W_k h_j) is a vector of d_attention numbers (a hidden layer); only vᵀ turns it into "
        "one score per source position."
    )


# --------------------------------------------------------------------------------------------
# attend(scores, values, mask): softmax over the source with padding masked, then the weighted sum
# --------------------------------------------------------------------------------------------


def _attend_variants(scores: np.ndarray, values: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """Typical wrong weights, keyed by the mistake."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        masked = np.where(mask, scores, -np.inf)
        plain = _softmax(scores)
        return {
            "you took the softmax over the batch (axis 0); each sentence's weights must sum to 1 over its "
            "own source positions (the last axis)": _softmax(masked, axis=0),
            "you forgot the mask: padded source positions get weight": plain,
            "you replaced the masked scores by 0, but exp(0) = 1 still gives the padding weight; fill them "
            "with -inf": _softmax(np.where(mask, scores, 0.0)),
            "you set the padded weights to 0 after the softmax without renormalising, so the rows no longer "
            "sum to 1; mask the scores (with -inf) before the softmax": np.where(mask, plain, 0.0),
            (
                "you inverted the mask: in lib, True marks a real token that may be attended to, False the padding"
            ): _softmax(np.where(~mask, scores, -np.inf)),
        }


@exercise(
    "ba_attend",
    chapter=_CHAPTER,
    summary="attend(scores, values, mask) -> (context, weights): softmax over the source without the "
    "padding, then the weighted sum of the values",
)
def _check_attend(answer: Any) -> str | None:
    """``answer(scores, values, mask)`` must return lib's ``attend``: (context (batch, d), weights (batch, seq_s)).

    lib takes the softmax in float32, so answers are compared to within 1e-6.
    """
    require_callable(answer, "attend(scores, values, mask)")
    rng = np.random.default_rng(1)
    # (lengths of the sentences in the batch, seq_s, d): padding in some rows; one unpadded sentence;
    # a padded batch where a masked score is the largest of its row
    for lengths, seq_s, d in [((4, 2, 3), 4, 3), ((5,), 5, 2), ((3, 1), 3, 4), ((6, 4), 6, 3)]:
        batch = len(lengths)
        scores = 2.0 * rng.standard_normal((batch, seq_s))
        values = rng.standard_normal((batch, seq_s, d))
        mask = np.arange(seq_s)[None, :] < np.array(lengths)[:, None]
        scores[~mask] += 5.0  # padding scores that would win if not masked
        values[~mask] = 0.0  # padded encoder states are zero in lib (packed GRU)
        exp_context, exp_weights = (
            t.numpy() for t in attend(torch.from_numpy(scores), torch.from_numpy(values), torch.from_numpy(mask))
        )
        where = f"for a batch of {batch} with source lengths {list(lengths)} padded to seq_s = {seq_s}"
        result = call_answer(answer, scores.copy(), values.copy(), mask.copy())
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise AssertionError(
                f"{where} your function returned {type(result).__name__}; expected a pair "
                f"(context, weights), as lib's attend returns"
            )
        context = as_array(result[0], "context")
        weights = as_array(result[1], "weights")
        if weights.shape != exp_weights.shape:
            hint = ""
            if weights.shape == exp_context.shape and context.shape == exp_weights.shape:
                hint = " It looks like you returned (weights, context); return (context, weights)."
            raise AssertionError(
                f"{where} your weights have shape {weights.shape}; expected (batch, seq_s) = {exp_weights.shape}.{hint}"
            )
        if not np.allclose(weights, exp_weights, atol=1e-6, rtol=0.0):
            hint = next(
                (
                    f" It looks like {mistake}."
                    for mistake, wrong in _attend_variants(scores, values, mask).items()
                    if wrong.shape == weights.shape and np.allclose(weights, wrong, atol=1e-6, equal_nan=True)
                ),
                "",
            )
            bad = int(np.argmax(np.abs(np.nan_to_num(weights, nan=9.0) - exp_weights).max(axis=1)))
            raise AssertionError(
                f"{where} your weights for sentence {bad} are {fmt(weights[bad])}; expected "
                f"{fmt(exp_weights[bad])}.{hint}"
            )
        if context.shape != exp_context.shape:
            raise AssertionError(
                f"{where} your context has shape {context.shape}; expected (batch, d) = "
                f"{exp_context.shape}: one weighted sum of the values per sentence"
            )
        if not np.allclose(context, exp_context, atol=1e-6, rtol=0.0):
            hint = ""
            if np.allclose(context, values.mean(axis=1), atol=1e-6):
                hint = " That is the plain mean of the values; weight each h_j by α_j."
            raise AssertionError(
                f"{where} your context for sentence 0 is {fmt(context[0])}; expected "
                f"{fmt(exp_context[0])}: c = Σ_j α_j h_j.{hint}"
            )
    return "Padded positions get weight exactly 0, and each sentence's weights sum to 1 over its real tokens."


# --------------------------------------------------------------------------------------------
# crossings(weights): how far an alignment is from monotonic
# --------------------------------------------------------------------------------------------


def _crossings(path: np.ndarray, strict: bool = True, adjacent: bool = False) -> int:
    n = len(path)
    pairs = [(i, i + 1) for i in range(n - 1)] if adjacent else [(i, k) for i in range(n) for k in range(i + 1, n)]
    return sum(1 for i, k in pairs if (path[i] > path[k] if strict else path[i] >= path[k]))


@exercise(
    "ba_crossings",
    chapter=_CHAPTER,
    summary="crossings(weights): pairs of target rows i < k whose largest weights are in reverse source order",
)
def _check_crossings(answer: Any) -> str | None:
    """``answer(weights)`` with weights ``(seq_t, seq_s)`` must count pairs i < k with argmax_i > argmax_k."""
    require_callable(answer, "crossings(weights)")
    rng = np.random.default_rng(2)
    eye = np.eye(5) * 0.8 + 0.04
    cases = {
        "a monotonic (diagonal) alignment": eye,
        "the reversal task's anti-diagonal": eye[::-1].copy(),
        # "A man plays guitar" ← "Ein Mann spielt Gitarre": rows man, plays, a, guitar → path 1, 2, 0, 3
        "a 4 × 4 alignment whose argmax path is [1, 2, 0, 3]": np.eye(4)[[1, 2, 0, 3]] * 0.7 + 0.075,
        # two target rows with the same argmax (one source word translated by two target words): no crossing
        "an alignment whose argmax path is [0, 2, 2, 1] (two rows on the same source word)": np.eye(3)[[0, 2, 2, 1]]
        * 0.7
        + 0.1,
        "a random 6 × 8 alignment": _softmax(3 * rng.standard_normal((6, 8))),
        "a random 9 × 5 alignment": _softmax(3 * rng.standard_normal((9, 5))),
    }
    for what, w in cases.items():
        path = w.argmax(axis=1)
        expected = _crossings(path)
        value = as_number(call_answer(answer, w.copy()), f"crossings of {what}")
        if value == expected:
            continue
        wrong = [
            (
                "you took the argmax down the columns (axis 0, over the target rows); each target row i has its "
                "source position argmax_j weights[i, j]",
                _crossings(w.argmax(axis=0)),
            ),
            (
                "you counted only neighbouring rows (i, i + 1), the backward jumps; count every pair i < k",
                _crossings(path, adjacent=True),
            ),
            (
                "you counted ties as crossings: two rows on the same source word are not in reverse order",
                _crossings(path, strict=False),
            ),
            (
                "you counted the pairs in order (argmax_i < argmax_k); a crossing has argmax_i > argmax_k",
                sum(1 for i in range(len(path)) for k in range(i + 1, len(path)) if path[i] < path[k]),
            ),
            ("you counted each crossing twice (ordered pairs); count pairs i < k once", 2 * expected),
        ]
        why = next((m for m, v in wrong if v != expected and value == v), None)
        hint = (
            f" It looks like {why}."
            if why
            else (" Hint: path = weights.argmax(axis=1); count the pairs i < k with path[i] > path[k].")
        )
        raise AssertionError(
            f"for {what} your count is {value:g}; expected {expected} (argmax path {path.tolist()}).{hint}"
        )
    return "A monotonic alignment has 0 crossings; the reversal task's anti-diagonal has the most possible, n(n − 1)/2."


# --------------------------------------------------------------------------------------------
# Break-it exercises on the chapter's reversal model with attention (reversal_experiment("additive"))
# --------------------------------------------------------------------------------------------

_SETUP_FIX = (
    "the chapter's reversal models are trained once (one to two minutes) and kept in the user cache folder; run "
    "the chapter's §3 from the top, then check again"
)


@functools.cache
def _reversal() -> tuple[Seq2Seq, list[tuple[list[int], list[int]]]]:
    """The chapter's attention model on reversal and its 1,000 test pairs (§3's ``test_sequences``)."""
    model = reversal_experiment("additive").model.eval()
    return model, sequence_task(1000, 4, 30, 20, seed=2)


@torch.no_grad()
def _teacher_forced(model: Seq2Seq, pairs: list, length: int, attend_fn=None) -> tuple[np.ndarray, list[Tensor]]:
    """Teacher-force the pairs of one length, with ``attend_fn`` in place of lib's ``attend`` (None: lib's own).

    Returns ``(correct, contexts)``: ``(sequences, length)`` 1 where the most probable symbol is the target's, and
    the context c_i of every decoder step (</s>'s step included), one ``(sequences, d)`` tensor per step.
    """
    group = [(s, t) for s, t in pairs if len(s) == length]
    src = torch.tensor([s + [EOS_ID] for s, _ in group])  # (group, length + 1)
    tgt = torch.tensor([[BOS_ID] + t for _, t in group])  # (group, length + 1)
    contexts: list[Tensor] = []
    inner = attend_fn or _seq2seq.attend

    def recording(scores: Tensor, values: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        context, weights = inner(scores, values, mask)
        contexts.append(context)
        return context, weights

    with mock.patch.object(_seq2seq, "attend", recording):
        best = model(src, tgt)[:, :length].argmax(-1)  # (group, length): </s>'s position left out
    return (best == torch.tensor([t for _, t in group])).double().numpy(), contexts


def _uniform_attend(scores: Tensor, values: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Every real source position gets the same weight: c_i is the mean of the annotations."""
    keep = torch.ones_like(scores) if mask is None else mask.to(values.dtype)
    weights = keep / keep.sum(-1, keepdim=True)
    return torch.einsum("bs,bsd->bd", weights, values), weights


def _raw_attend(scores: Tensor, values: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """No softmax: the raw scores e_ij weigh the annotations (padding gets 0)."""
    weights = scores if mask is None else scores.masked_fill(~mask, 0.0)
    return torch.einsum("bs,bsd->bd", weights, values), weights


def _exp_attend(scores: Tensor, values: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """exp(e_ij) without the division by the sum: half a softmax."""
    weights = scores.exp() if mask is None else scores.exp().masked_fill(~mask, 0.0)
    return torch.einsum("bs,bsd->bd", weights, values), weights


def _pair(answer: Any, what: str) -> tuple[float, float]:
    """The reader's measurement as two numbers (a tuple, list, array or tensor of two)."""
    values = as_array(answer, what).ravel()
    if values.size != 2:
        raise AssertionError(f"{what} should be a pair of two numbers, got {values.size} numbers: {fmt(values, 3)}")
    return float(values[0]), float(values[1])


def _same(got: tuple[float, float], ref: tuple[float, float], rtol: float = 0.01, atol: float = 0.01) -> bool:
    return all(abs(g - r) <= atol + rtol * abs(r) for g, r in zip(got, ref))


@exercise(
    "ba_break_uniform",
    chapter=_CHAPTER,
    summary="(short, long): teacher-forced token accuracy of the reversal attention model at lengths 6 and 30 "
    "with uniform weights α_ij = 1/T_x",
)
def _check_break_uniform(answer: Any) -> str | None:
    """The pair must match the checker's own measurement with uniform weights: far below the intact 1.0."""
    with checker_setup("loading the chapter's reversal models (reversal_experiment)", _SETUP_FIX), _one_thread():
        model, pairs = _reversal()
        accuracy = lambda fn: tuple(_teacher_forced(model, pairs, n, fn)[0].mean() for n in (6, 30))  # noqa: E731
        uniform, intact = accuracy(_uniform_attend), accuracy(None)
        fixed = reversal_experiment(None).model.eval()
        fixed_acc = tuple(_seq2seq_fixed_accuracy(fixed, [(s, t) for s, t in pairs if len(s) == n]) for n in (6, 30))
    got = _pair(answer, "your measurement (short, long)")
    if _same(got, uniform):
        return (
            f"with uniform weights the accuracy falls from {intact[0]:.2f} to {uniform[0]:.2f} at length 6 and to "
            f"{uniform[1]:.2f} at length 30: the mean of the annotations is one fixed vector again, and one this "
            "decoder never learnt to read."
        )
    expected = f"expected about ({uniform[0]:.3f}, {uniform[1]:.3f})"
    if _same(got, uniform[::-1]):
        hint = " Your two numbers are swapped: length 6 first, then length 30."
    elif _same(got, intact):
        hint = (
            " That is the intact model: your weights never reached it. Seq2Seq.decoder_step calls the function "
            "named attend in the module lib.seq2seq: patch that one, mock.patch('lib.seq2seq.attend', ...), not the "
            "name attend you imported into the notebook, and run the model inside the with block."
        )
    elif _same(got, fixed_acc, atol=0.02):
        hint = (
            " That is the fixed-vector model of the previous chapter; measure the attention model "
            "(attentive.model) with your uniform attend patched in."
        )
    else:
        hint = (
            " Uniform weights are 1/T_x on every real source position (</s> included): weights = mask / "
            "mask.sum(-1, keepdim=True), context = Σ_j α_j h_j."
        )
    raise AssertionError(f"your pair is ({got[0]:.3f}, {got[1]:.3f}); {expected}.{hint}")


@torch.no_grad()
def _seq2seq_fixed_accuracy(model: Seq2Seq, group: list) -> float:
    """Teacher-forced token accuracy of a fixed-vector model on pairs of one length (no attend to patch)."""
    src = torch.tensor([s + [EOS_ID] for s, _ in group])
    tgt = torch.tensor([[BOS_ID] + t for _, t in group])
    best = model(src, tgt)[:, : len(group[0][1])].argmax(-1)
    return float((best == torch.tensor([t for _, t in group])).double().mean())


@exercise(
    "ba_break_softmax",
    chapter=_CHAPTER,
    summary="(short, long): the mean length ‖c_i‖ of the reversal attention model's contexts at lengths 6 and 30 "
    "with the softmax removed (α_ij = e_ij)",
)
def _check_break_softmax(answer: Any) -> str | None:
    """The pair must match the checker's own measurement: ‖c_i‖ far above the softmax's bound and growing with T_x."""
    with checker_setup("loading the chapter's reversal models (reversal_experiment)", _SETUP_FIX), _one_thread():
        model, pairs = _reversal()

        def norms(fn, squared=False):
            out = []
            for n in (6, 30):
                c = torch.cat(_teacher_forced(model, pairs, n, fn)[1])  # (steps · sequences, d)
                out.append(float((c.norm(dim=-1) ** (2 if squared else 1)).mean()))
            return tuple(out)

        raw, intact, exp, raw_squared = norms(_raw_attend), norms(None), norms(_exp_attend), norms(_raw_attend, True)
        bound = model.config.d_hidden**0.5  # |entries of h_j| < 1: ‖h_j‖ < √d_hidden
    got = _pair(answer, "your measurement (short, long)")
    if _same(got, raw):
        return (
            f"with the softmax the contexts measure {intact[0]:.1f} and {intact[1]:.1f} (an average of annotations "
            f"stays below √{model.config.d_hidden} ≈ {bound:.1f}); without it {raw[0]:.0f} and {raw[1]:.0f}: a sum "
            "of T_x raw scores times states grows with the sentence."
        )
    expected = f"expected about ({raw[0]:.1f}, {raw[1]:.1f})"
    if _same(got, raw[::-1]):
        hint = " Your two numbers are swapped: length 6 first, then length 30."
    elif _same(got, intact):
        hint = (
            " Those are the contexts with the softmax: your attend never reached the model. Patch the name "
            "decoder_step looks up, mock.patch('lib.seq2seq.attend', ...), and run the model inside the with block."
        )
    elif _same(got, exp):
        hint = (
            " You kept the exponential and dropped only the division: exp(e_ij) weights are positive but do not "
            "sum to 1 either. This exercise removes the whole softmax: α_ij = e_ij."
        )
    elif _same(got, raw_squared):
        hint = " That is the mean of the squared length ‖c_i‖²; take the length, c.norm(dim=-1)."
    else:
        hint = (
            " Record c = Σ_j e_ij h_j at every decoder step (</s>'s step included) of the teacher-forced length-6 "
            "and length-30 test sequences, then average c.norm(dim=-1) over steps and sequences."
        )
    raise AssertionError(f"your pair is ({got[0]:.3f}, {got[1]:.3f}); {expected}.{hint}")
