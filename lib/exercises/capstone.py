"""Checkers of the capstone chapter (registered in :data:`lib.exercises.EXERCISES` on import).

The expected values come from the library the chapter uses: :func:`lib.training.label_smoothed_cross_entropy`,
:func:`lib.decode.greedy_decode` with the shipped model (``models/de-en``, loaded once),
:func:`lib.decode.length_penalty` and sacreBLEU's brevity penalty through :func:`lib.metrics.corpus_bleu`. None
needs the Multi30k files.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
from typing import Any

import numpy as np
import torch

from ..decode import greedy_decode, length_penalty
from ..metrics import corpus_bleu
from ..special_tokens import BOS_ID, EOS_ID, PAD_ID
from ..training import label_smoothed_cross_entropy
from .core import AnswerRaised, as_number, call_answer, checker_setup, exercise, observed, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

_CHAPTER = "capstone"


# --------------------------------------------------------------------------------------------
# smoothed_loss(logits, target, epsilon): the label-smoothed cross-entropy of §4
# --------------------------------------------------------------------------------------------


def _smoothing_inputs() -> list[tuple[torch.Tensor, torch.Tensor, float]]:
    """(logits, target, ε): the paper's ε = 0.1 with padding, ε = 0 (plain cross-entropy), a row that is all padding."""
    gen = torch.Generator().manual_seed(0)
    target_a = torch.tensor([[5, 3, 1, 0, 0], [2, 6, 4, 3, 1]])
    target_c = torch.tensor([[7, 2, 9, 1], [0, 0, 0, 0], [3, 10, 1, 0]])
    return [
        (torch.randn(2, 5, 7, generator=gen) * 2, target_a, 0.1),
        (torch.randn(2, 5, 7, generator=gen) * 2, target_a, 0.0),
        (torch.randn(3, 4, 11, generator=gen) * 3, target_c, 0.3),
    ]


def _smoothing_variants(logits: torch.Tensor, target: torch.Tensor, eps: float) -> dict[str, float]:
    """Typical wrong losses, keyed by the mistake that produces them."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    vocab = logits.size(-1)
    nll = -logp.gather(-1, target[..., None])[..., 0]  # (batch, seq): −log p_y
    uniform = -logp.mean(-1)  # (batch, seq): mean_v(−log p_v)
    real = target != PAD_ID
    others = (-logp.sum(-1) - nll) / (vocab - 1)  # mean of −log p_v over the V − 1 wrong tokens
    out = {
        "you did not skip the padding: positions whose target is PAD_ID = 0 must not count, neither in the sum "
        "nor in the number you divide by": ((1 - eps) * nll + eps * uniform).mean(),
        "you summed over the positions; the loss is the mean over the real (non-padding) target tokens": (
            (1 - eps) * nll + eps * uniform
        )[real].sum(),
        "you averaged over every position but summed only the real ones (divide by the number of real tokens, "
        "not by batch · seq)": ((1 - eps) * nll + eps * uniform)[real].sum() / target.numel(),
        "you swapped ε and 1 − ε: the true token gets the large share (1 − ε), the uniform part the small one (ε)": (
            eps * nll + (1 - eps) * uniform
        )[real].mean(),
        "you summed −log p_v over the vocabulary; ε is spread uniformly, ε/V per token, so take the mean": (
            (1 - eps) * nll + eps * (-logp.sum(-1))
        )[real].mean(),
        "you spread ε over the V − 1 wrong tokens only (ε/(V − 1) each); here it is spread over the whole "
        "vocabulary, true token included (ε/V each), as lib and torch's label_smoothing do": (
            (1 - eps) * nll + eps * others
        )[real].mean(),
    }
    if eps > 0:
        out["you computed plain cross-entropy: with ε > 0 add ε · mean_v(−log p_v) and scale −log p_y by 1 − ε"] = nll[
            real
        ].mean()
    return {k: float(v) for k, v in out.items()}


@exercise(
    "cap_label_smoothing",
    chapter=_CHAPTER,
    summary="smoothed_loss(logits, target, epsilon): label-smoothed cross-entropy, padding (id 0) skipped",
)
def _check_label_smoothing(answer: Any) -> str | None:
    """``answer(logits, target, ε)`` must equal ``lib.training.label_smoothed_cross_entropy`` (padding id 0 ignored)."""
    require_callable(answer, "smoothed_loss(logits, target, epsilon)")
    for logits, target, eps in _smoothing_inputs():
        expected = float(label_smoothed_cross_entropy(logits, target, eps))
        where = f"for logits of shape {tuple(logits.shape)}, ε = {eps:g}"
        value = as_number(call_answer(answer, logits.clone(), target.clone(), eps), f"smoothed_loss ({where})")
        if math.isclose(value, expected, rel_tol=1e-4, abs_tol=1e-5):
            continue
        if math.isnan(value):
            raise AssertionError(
                f"{where} your loss is nan. It looks like the row that is all padding made you divide 0 by 0, or you "
                "took the log of a probability 0: use torch.log_softmax and average over the real tokens of the batch"
            )
        variants = _smoothing_variants(logits, target, eps)
        why = next((w for w, v in variants.items() if math.isclose(value, v, rel_tol=1e-4, abs_tol=1e-5)), None)
        hint = (
            f" It looks like {why}."
            if why
            else (
                " Hint: per real position, (1 − ε)·(−log p_y) + ε·mean_v(−log p_v); then the mean over those positions."
            )
        )
        raise AssertionError(f"{where} your loss is {value:.5f}; expected {expected:.5f}.{hint}")
    return (
        "Even a perfect model cannot reach loss 0 with ε > 0: the smoothed target keeps ε/V on every wrong "
        "token, so training stops pushing the true token's probability towards 1."
    )


# --------------------------------------------------------------------------------------------
# greedy(model, src, max_len): greedy decoding written as a plain loop over model.encode/decode (§6)
# --------------------------------------------------------------------------------------------

_GREEDY_SENTENCES = [  # (German source, max_len): two ordinary captions, then one cut short by max_len
    ("Zwei Hunde spielen im Schnee.", 30),
    ("Ein Mann repariert das Fahrrad eines kleinen Mädchens.", 30),
    ("Eine Frau in einem roten Kleid singt auf einer Bühne.", 3),
]


@contextlib.contextmanager
def _one_thread():
    """Run torch on one thread while checking, then restore the reader's setting.

    The shipped model's matrices are small: a second thread gains little, and on a busy CPU threads that wait
    for each other make every decoding step up to 100 times slower.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@functools.lru_cache(maxsize=1)
def _shipped():
    """The shipped run (model in eval mode and tokenizer), loaded once (a failed load is not cached).

    The checker never hands this model to the reader's function: each call gets its own deep copy (about 10 ms).
    """
    from ..checkpoint import SHIPPED_MODEL, load_run

    return load_run(SHIPPED_MODEL)


# What to check when the shipped model cannot be loaded (shown after "check the installation:").
_SHIPPED_MODEL_FIX = (
    "the checker needs the shipped model, the folder models/de-en of the book's repository (lib.checkpoint."
    "SHIPPED_MODEL); it is found when lib is installed from a clone with `pip install -e .` (an editable install) "
    "or imported from the clone's folder, not when lib was copied into site-packages by a plain `pip install`"
)


@functools.cache
def _greedy_case(sentence: str, max_len: int) -> tuple[torch.Tensor, tuple[int, ...]]:
    """Source ids ``(1, seq_s)`` ending in EOS, and lib's greedy output for them."""
    from ..bpe import encode

    run = _shipped()
    src = torch.tensor([encode(run.tokenizer, sentence) + [EOS_ID]])
    run.model.eval()
    return src, tuple(greedy_decode(run.model, src, max_len=max_len)[0])


@torch.no_grad()
def _greedy_variant(model, src: torch.Tensor, max_len: int, last_only: bool, first_row: bool) -> list[int]:
    """Greedy decoding with one of two typical loop mistakes (no cache, no full prefix; the wrong logits row)."""
    memory, src_mask = model.encode(src)
    ys = [BOS_ID]
    for _ in range(max_len):
        tgt = torch.tensor([ys[-1:] if last_only else ys])
        logits = model.decode(tgt, memory, src_mask)
        token = int(logits[0, 0 if first_row else -1].argmax())
        if token == EOS_ID:
            break
        ys.append(token)
    return ys[1:]


def _as_ids(raw: Any, what: str) -> list[int]:
    """A flat list of ints from a list, a tuple, a 1-D tensor, or a batch of one such list."""
    if isinstance(raw, (torch.Tensor, np.ndarray)):
        raw = raw.tolist()
    if isinstance(raw, (list, tuple)) and len(raw) == 1 and isinstance(raw[0], (list, tuple)):
        raw = raw[0]  # a batch of one sentence, as lib's greedy_decode returns
    if not isinstance(raw, (list, tuple)) or not all(
        isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in raw
    ):
        raise AssertionError(f"{what} should be a list of token ids (ints), got {type(raw).__name__} {raw!r:.60}")
    return [int(i) for i in raw]


def _greedy_mistake(got: list[int], expected: list[int], model, src: torch.Tensor, max_len: int) -> str | None:
    """Name the typical mistake that gives ``got`` instead of ``expected``, or None."""
    n = len(expected)
    if got and got[0] == BOS_ID and got[1 : n + 1] == expected[: len(got) - 1]:
        return "your list starts with BOS (id 1); the decoder's first input is BOS, but it is not part of the output"
    if len(got) > max_len and got[:n] == expected:
        return (
            f"you generated more than max_len = {max_len} tokens; stop after max_len steps even without an EOS "
            "(a model that never writes EOS must not loop forever)"
        )
    if got == expected + [EOS_ID]:
        return "you kept the EOS (id 2) at the end; stop when the model predicts EOS and leave it out"
    if len(got) > n + 1 and got[: n + 1] == expected + [EOS_ID]:
        return "you went on after the EOS (id 2); stop the loop as soon as the model predicts it"
    if len(got) > n and got[:n] == expected:
        return "you went on after the model predicted EOS (id 2); stop the loop as soon as it does"
    if got == _greedy_variant(model, src, max_len, last_only=True, first_row=False):
        return (
            "you fed the decoder only the last token, without a cache: it then sees one word and no history. "
            "Without a cache, pass the whole prefix [BOS, y_1, …, y_t] at every step"
        )
    if got == _greedy_variant(model, src, max_len, last_only=False, first_row=True):
        return (
            "you took the argmax of the first position's logits (logits[0, 0]); the next token is predicted "
            "by the last position, logits[0, -1]"
        )
    return None


@exercise(
    "cap_greedy_decode",
    chapter=_CHAPTER,
    summary="greedy(model, src, max_len): greedy decoding of one sentence with model.encode and model.decode",
)
def _check_greedy_decode(answer: Any) -> str | None:
    """``answer(model, src, max_len)`` must give the ids of ``lib.decode.greedy_decode`` with the shipped model."""
    require_callable(answer, "greedy(model, src, max_len)")
    with _one_thread():
        return _check_greedy_one_thread(answer)


def _check_greedy_one_thread(answer: Any) -> str | None:
    """The checks of :func:`_check_greedy_decode`, run on one torch thread."""
    # The checker's own set-up, before the reader's function runs: a failure here is an installation problem.
    with checker_setup("loading the shipped model and decoding the test sentences with it", _SHIPPED_MODEL_FIX):
        from ..bpe import decode

        run = _shipped()
        cases = [(sentence, max_len, *_greedy_case(sentence, max_len)) for sentence, max_len in _GREEDY_SENTENCES]
    model, tok = run.model, run.tokenizer  # pristine: the reader's function gets a deep copy
    for sentence, max_len, src, expected in cases:
        expected = list(expected)
        mine = copy.deepcopy(model)  # this call's own model, so that its training mode can be looked at afterwards
        raw = call_answer(answer, mine, src.clone(), max_len, copy_args=False)
        was_training = observed("training mode after the call", lambda mine=mine: mine.training)
        where = f"for «{sentence}» with max_len={max_len}"
        got = _as_ids(raw, f"{where} your output")
        if got == expected and not was_training:
            continue
        if was_training:  # even when dropout happened to leave these ids unchanged: another sentence, another result
            why = (
                "your function put the model in training mode, where dropout changes every step; decoding runs "
                "in eval mode (model.eval())"
            )
        else:
            why = _greedy_mistake(got, expected, model, src, max_len)
        hint = (
            f" It looks like {why}."
            if why
            else (
                " Hint: BOS first; at every step the argmax of the last position's logits; "
                "stop at EOS or after max_len."
            )
        )
        shown = decode(tok, [i for i in got if 0 <= i < model.config.tgt_vocab_size])
        raise AssertionError(
            f"{where} your ids are {got[:12]}{' …' if len(got) > 12 else ''} («{shown}»); expected {expected} "
            f"(«{decode(tok, expected)}»).{hint}"
        )
    return (
        "lib.decode.greedy_decode does the same for a whole batch at once, and caches the keys and values of "
        "earlier steps, so that each step feeds only the newest token."
    )


# --------------------------------------------------------------------------------------------
# beam_score(log_prob, length, alpha): the length-normalised score that beam search ranks by (§6)
# --------------------------------------------------------------------------------------------


def _beam_score(log_prob: float, length: int, alpha: float) -> float:
    return log_prob / float(length_penalty(torch.tensor(float(length), dtype=torch.float64), alpha))


@exercise(
    "cap_beam_score",
    chapter=_CHAPTER,
    summary="beam_score(log_prob, length, alpha): log-probability divided by the length penalty ((5 + |Y|)/6)^α",
)
def _check_beam_score(answer: Any) -> str | None:
    """``answer(log_prob, length, α)`` must equal ``log_prob / lib.decode.length_penalty(length, α)``."""
    require_callable(answer, "beam_score(log_prob, length, alpha)")
    # the chapter's α = 0.6 first, then a long hypothesis with a large α, α = 0 and the one-token edge (lp = 1)
    for log_prob, length, alpha in [(-4.5, 9, 0.6), (-3.0, 4, 0.6), (-12.0, 20, 1.2), (-4.5, 9, 0.0), (-2.0, 1, 0.6)]:
        expected = _beam_score(log_prob, length, alpha)
        where = f"beam_score({log_prob}, {length}, {alpha})"
        value = as_number(call_answer(answer, log_prob, length, alpha), where)
        if math.isclose(value, expected, rel_tol=1e-6, abs_tol=1e-9):
            continue
        lp = ((5 + length) / 6) ** alpha
        wrong = {
            log_prob * lp: "you multiplied by the length penalty; beam search divides the log-probability by it",
            log_prob / length**alpha: "you divided by |Y|^α; GNMT's penalty is ((5 + |Y|)/6)^α",
            log_prob / length: "you divided by the length |Y|; the penalty is ((5 + |Y|)/6)^α",
            log_prob / (alpha * (5 + length) / 6): "you multiplied by α; α is the exponent: ((5 + |Y|)/6)^α",
            log_prob / ((5 + length) ** alpha / 6): "you raised only 5 + |Y| to the power α; the whole ratio "
            "(5 + |Y|)/6 is raised",
            log_prob / ((5 + length) / 6): "you left out the exponent α",
            -log_prob / lp: "you flipped the sign: the score is the (negative) log-probability divided by lp",
        }
        why = next((w for v, w in wrong.items() if math.isclose(value, v, rel_tol=1e-6, abs_tol=1e-9)), None)
        hint = f" It looks like {why}." if why else " Hint: log_prob / ((5 + length) / 6) ** alpha."
        raise AssertionError(f"{where} returned {value:.6g}; expected {expected:.6g}.{hint}")
    short, long = _beam_score(-3.0, 4, 0.6), _beam_score(-4.5, 9, 0.6)
    return (
        f"A 4-token hypothesis with log p = -3.0 scores {short:.3f} at α = 0.6 and beats a 9-token one with "
        f"log p = -4.5 ({long:.3f}); at α = 1.2 the longer one wins ({_beam_score(-4.5, 9, 1.2):.3f} vs "
        f"{_beam_score(-3.0, 4, 1.2):.3f})."
    )


# --------------------------------------------------------------------------------------------
# brevity_penalty(hypotheses, references): BLEU's corpus-level brevity penalty (§6)
# --------------------------------------------------------------------------------------------

_BP_REFERENCES = [
    "a man is fixing the bicycle of a little girl .",
    "two dogs are playing in the snow .",
    "a woman in a red dress sings on a stage .",
]

_BP_CASES = [  # (what the case is, hypotheses); the references are _BP_REFERENCES
    ("shorter translations", ["a man fixes a bicycle .", "two dogs play in snow .", "a woman sings on a stage ."]),
    (
        "translations longer than the references",
        [
            "a man is repairing the old bicycle of a very little girl .",
            "two brown dogs are playing together in the white snow .",
            "a young woman in a long red dress sings on a big stage .",
        ],
    ),
    (
        "one short and one long translation",
        [
            "a man fixes a bike .",
            "two big brown dogs are running and playing in the deep white snow .",
            "a woman in a red dress sings on a stage .",
        ],
    ),
    ("empty translations (the model wrote EOS first)", ["", "", ""]),
]


def _bp_variants(hyps: list[str], refs: list[str]) -> dict[str, float]:
    """Typical wrong brevity penalties, keyed by the mistake that produces them."""
    c = sum(len(h.split()) for h in hyps)
    r = sum(len(s.split()) for s in refs)
    out: dict[str, float] = {}
    if c > 0:
        out[
            "you did not cap it at 1: when the translations are longer than the references (c > r) BP = 1; "
            "long output is punished by the n-gram precisions, not rewarded"
        ] = math.exp(1 - r / c)
        out["you swapped c and r: BP = exp(1 − r/c), with c the translations' length and r the references'"] = math.exp(
            1 - c / r
        )
        if c < r:
            out[
                "your penalty is 1 although the translations are shorter than the references (c < r), where "
                "BP = exp(1 − r/c) is below 1 (did you swap c and r, or the test c > r?)"
            ] = 1.0
        out["you returned the ratio c/r; BP = exp(1 − r/c) when c < r"] = c / r
    if all(hyps):
        per = [min(1.0, math.exp(1 - len(s.split()) / len(h.split()))) for h, s in zip(hyps, refs)]
        out[
            "you averaged a penalty per sentence; BLEU's is one penalty for the corpus, from the total lengths c "
            "and r, so a long sentence makes up for a short one"
        ] = sum(per) / len(per)
        cc, rc = sum(len(h) for h in hyps), sum(len(s) for s in refs)
        out["you counted characters (len of a string); count words: len(sentence.split())"] = min(
            1.0, math.exp(1 - rc / cc)
        )
    return out


@exercise(
    "cap_brevity_penalty",
    chapter=_CHAPTER,
    summary="brevity_penalty(hypotheses, references): BLEU's corpus brevity penalty from the total word counts",
)
def _check_brevity_penalty(answer: Any) -> str | None:
    """``answer(hyps, refs)`` must equal sacreBLEU's brevity penalty (``corpus_bleu(...).brevity_penalty``)."""
    require_callable(answer, "brevity_penalty(hypotheses, references)")
    refs = list(_BP_REFERENCES)
    for what, hyps in _BP_CASES:
        expected = corpus_bleu(hyps, refs).brevity_penalty
        c, r = sum(len(h.split()) for h in hyps), sum(len(s.split()) for s in refs)
        where = f"for {what} (c = {c} words, r = {r} words)"
        try:
            value = as_number(call_answer(answer, list(hyps), list(refs)), f"brevity_penalty ({where})")
        except AnswerRaised as err:
            if c == 0 and isinstance(err.original, ZeroDivisionError):
                raise AssertionError(
                    f"{where} your function divided by c = 0. With no words at all there is nothing to match: "
                    "BP is 0 (sacreBLEU's convention), return it before computing r/c"
                ) from None
            raise
        if math.isclose(value, expected, rel_tol=1e-6, abs_tol=1e-9):
            continue
        variants = _bp_variants(hyps, refs)
        why = next((w for w, v in variants.items() if math.isclose(value, v, rel_tol=1e-6, abs_tol=1e-9)), None)
        hint = f" It looks like {why}." if why else " Hint: BP = 1 if c > r, else exp(1 − r/c), with the total lengths."
        raise AssertionError(f"{where} your penalty is {value:.5f}; expected {expected:.5f}.{hint}")
    return (
        "BLEU multiplies the n-gram precisions by BP; without it, a system that writes only the few words it "
        "is sure of would score high precision. This is what α = 0 risks in beam search."
    )
