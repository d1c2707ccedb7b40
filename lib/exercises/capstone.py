"""Checkers of the capstone chapter (registered in :data:`lib.exercises.EXERCISES` on import).

The expected values come from the library the chapter uses: :func:`lib.training.label_smoothed_cross_entropy`,
:func:`lib.decode.greedy_decode` with the shipped model (``models/de-en``, loaded once),
:func:`lib.decode.length_penalty` and sacreBLEU's brevity penalty through :func:`lib.metrics.corpus_bleu`. None
needs the Multi30k files.

``assemble_transformer`` takes the reader's model class (the Transformer assembled from lib's blocks), builds it
with the shipped model's config, loads the shipped weights into it (``load_state_dict(strict=True)``: the reader's
attributes are named as lib's), and decodes a few sentences greedily with both models through ``forward(src, tgt)``
alone. When the translations (or the logits) differ, forward hooks on both models, run on the same input, find the
first output that differs (the embeddings, each encoder layer, the encoder's final LayerNorm, then the same in the
decoder, then the logits), and lib's own blocks, run with the typical mistakes on lib's input to that layer (a
missing residual, post-LN, no √d_model scale, a missing or inverted mask, ...), name the mistake it matches.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import linecache
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..attention import causal_mask, padding_mask
from ..decode import greedy_decode, length_penalty
from ..metrics import corpus_bleu
from ..special_tokens import BOS_ID, EOS_ID, PAD_ID
from ..training import label_smoothed_cross_entropy
from .core import (
    AnswerRaised,
    NotSolved,
    _is_placeholder,
    as_number,
    call_answer,
    checker_setup,
    exercise,
    observed,
    require_callable,
)
from .core import one_thread as _one_thread

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


# --------------------------------------------------------------------------------------------
# MyTransformer(config): the Transformer assembled from lib's blocks, loaded with the shipped weights
# --------------------------------------------------------------------------------------------

# German captions of different lengths, so that the batch has padding: a missing padding mask changes the outputs.
_ASSEMBLY_SENTENCES = (
    "Zwei Hunde spielen im Schnee.",
    "Ein Mann repariert das Fahrrad eines kleinen Mädchens.",
    "Ein Kind springt ins Wasser.",
    "Eine Frau in einem roten Kleid singt auf einer Bühne, während zwei Männer Gitarre spielen.",
    "Drei Männer sitzen an einem Tisch und trinken Kaffee.",
    "Ein Hund rennt.",
)
_ASSEMBLY_MAX_LEN = 40  # target tokens at most: lib's longest translation of these has 17
_ASSEMBLY_RTOL = 1e-4  # outputs agree when max |Δ| ≤ 1e-4 · (1 + the largest |value| of lib's)


def _names_in_code(code) -> set[str]:
    """The global names a function's code (and the code nested in it: comprehensions, lambdas) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, type(code)):
            names |= _names_in_code(const)
    return names


def _is_readers(cls: type) -> bool:
    """A module class the reader wrote (not torch's, not lib's)."""
    module = getattr(cls, "__module__", "") or ""
    return not (module.split(".")[0] in ("torch", "lib") or module == "builtins")


def _reader_classes(answer: Any) -> list[type]:
    """The reader's nn.Module classes the answer uses, found by name in their methods' code, answer first."""
    seen: list[Any] = []
    todo = [answer]
    while todo:
        obj = todo.pop(0)
        if any(obj is s for s in seen):
            continue
        seen.append(obj)
        if isinstance(obj, type):
            functions = [f for f in vars(obj).values() if inspect.isfunction(f)]
        else:
            functions = [obj] if inspect.isfunction(obj) else []
        for fn in functions:
            values = [fn.__globals__.get(name) for name in sorted(_names_in_code(fn.__code__))]
            for cell in fn.__closure__ or ():  # classes defined inside a function: its free variables
                with contextlib.suppress(ValueError):  # an empty cell
                    values.append(cell.cell_contents)
            todo += [v for v in values if isinstance(v, type) and issubclass(v, nn.Module) and _is_readers(v)]
    return [c for c in seen if isinstance(c, type)]


def _raise_if_unsolved(answer: Any) -> None:
    """⏳ for the starter: a class of the reader's model whose ``__init__`` or ``forward`` is still ``...``."""
    for cls in _reader_classes(answer):
        for method in ("__init__", "forward"):
            fn = vars(cls).get(method)
            if fn is not None and _is_placeholder(fn):
                raise NotSolved(f"{cls.__name__}.{method}")


def _where_raised(err: BaseException) -> str:
    """`` (in MyDecoderLayer.forward: `line`)``: the deepest frame of the reader's own code in a traceback."""
    tb, last = err.__traceback__, None
    lib_dir = str(Path(__file__).resolve().parents[1])
    while tb is not None:
        code = tb.tb_frame.f_code
        if not (code.co_filename.startswith(lib_dir) or f"{os.sep}torch{os.sep}" in code.co_filename):
            last = (getattr(code, "co_qualname", code.co_name), code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    if last is None:
        return ""
    qualname, filename, lineno = last
    line = linecache.getline(filename, lineno).strip()
    return f" (in {qualname}: `{line}`)" if line else f" (in {qualname})"


def _readers_error(err: AnswerRaised, doing: str) -> AssertionError:
    """The ❌ message for an exception raised by the reader's code while the checker was ``doing`` something."""
    original = err.original
    hint = ""
    if isinstance(original, AttributeError) and "before Module.__init__() call" in str(original):
        hint = " Call super().__init__() first in the __init__ of each of your nn.Module classes."
    return AssertionError(
        f"{doing}, your code raised {type(original).__name__}: {original}{_where_raised(original)}.{hint}"
    )


def _load_message(err: Exception, model: nn.Module, state: dict) -> str:
    """What is wrong with the names or shapes of the reader's parameters, from load_state_dict's complaint."""
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [k for k in own if k in state and tuple(own[k].shape) != tuple(state[k].shape)]
    buffers = {name for name, _ in model.named_buffers()}
    parts = []
    if missing:
        parts.append(f"your model has {len(missing)} weight(s) the shipped model does not: {', '.join(missing[:4])}")
        if any(k in buffers for k in missing):
            parts.append(
                "a buffer that the shipped weights do not hold (a table, a mask) is registered with "
                "register_buffer(name, tensor, persistent=False), as lib's PositionalEncoding does, so that it "
                "stays out of the state dict"
            )
    if unexpected:
        parts.append(f"it lacks {len(unexpected)} of the shipped model's weights: {', '.join(unexpected[:4])}")
    if shapes:
        k = shapes[0]
        parts.append(f"{k} has shape {tuple(own[k].shape)}; the shipped one has {tuple(state[k].shape)}")
    if not parts:
        parts.append(f"load_state_dict raised {type(err).__name__}: {str(err)[:200]}")
    return (
        "the shipped weights do not load into your model (load_state_dict(..., strict=True)): "
        + "; ".join(parts)
        + ". Name your attributes as lib's Transformer does: src_embed, tgt_embed, output; encoder.layers.<i> and "
        "encoder.norm (e.g. nn.ModuleDict(layers=..., norm=...)), decoder.layers.<i> and decoder.norm; in each layer "
        "self_attn, (cross_attn,) ffn, norm1, norm2(, norm3)."
    )


class _BadOutput(Exception):
    """The reader's forward returned something that is not the logits (raised inside call_answer, reported as ❌)."""


def _as_logits(out: Any, batch: int, seq: int, vocab: int) -> torch.Tensor:
    """The reader's forward output, checked: a float tensor of logits (batch, seq_t, vocab)."""
    if isinstance(out, tuple) and out and isinstance(out[0], torch.Tensor):
        out = out[0]  # (logits, attention maps), as lib's forward with return_attention
    if out is None:
        raise _BadOutput("your model's forward returned None — did you forget the `return` statement?")
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        raise _BadOutput(f"your model's forward(src, tgt) should return logits, a float tensor; got {out!r:.60}")
    if tuple(out.shape) != (batch, seq, vocab):
        raise _BadOutput(
            f"your model's forward(src, tgt) returned shape {tuple(out.shape)}; expected the logits (batch, seq_t, "
            f"tgt_vocab_size) = {(batch, seq, vocab)}"
        )
    return out


@torch.no_grad()
def _greedy_forward(model: nn.Module, src: torch.Tensor, max_len: int, vocab: int) -> torch.Tensor:
    """Greedy decoding through ``model(src, tgt) → logits`` alone, the whole prefix at every step.

    Returns the target ids ``(batch, 1 + steps)``, BOS first, PAD after each sentence's EOS.
    """
    ys = torch.full((src.size(0), 1), BOS_ID, dtype=torch.long)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len):
        logits = _as_logits(model(src, ys), src.size(0), ys.size(1), vocab)
        token = logits[:, -1].argmax(-1).masked_fill(done, PAD_ID)  # (batch,)
        ys = torch.cat([ys, token[:, None]], dim=1)
        done |= token == EOS_ID
        if done.all():
            break
    return ys


def _sentence_ids(row: list[int]) -> list[int]:
    """A decoded row without BOS, cut at the first EOS."""
    row = row[1:]
    return row[: row.index(EOS_ID)] if EOS_ID in row else row


# The outputs compared, in the order the data flows: (what the message calls it, module path, input or output,
# which side's positions count).
def _assembly_stages(config) -> list[tuple[str, str, str, str]]:
    stages = [("the source embeddings (the input of encoder layer 0)", "encoder.layers.0", "in", "src")]
    stages += [(f"encoder layer {i}", f"encoder.layers.{i}", "out", "src") for i in range(config.num_encoder_layers)]
    stages += [("the encoder's final LayerNorm (encoder.norm)", "encoder.norm", "out", "src")]
    stages += [("the target embeddings (the input of decoder layer 0)", "decoder.layers.0", "in", "tgt")]
    stages += [(f"decoder layer {i}", f"decoder.layers.{i}", "out", "tgt") for i in range(config.num_decoder_layers)]
    stages += [("the decoder's final LayerNorm (decoder.norm)", "decoder.norm", "out", "tgt")]
    return stages + [("the logits (your forward's output)", "", "out", "tgt")]


def _first_tensor(args: tuple, kwargs: dict | None = None) -> torch.Tensor | None:
    for value in (*args, *(kwargs or {}).values()):
        if isinstance(value, torch.Tensor):
            return value
    return None


@torch.no_grad()
def _hooked_forward(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor, paths: list[tuple[str, str]]) -> dict:
    """``model(src, tgt)`` with forward hooks: ``{(path, "in"/"out"): [tensor per call]}``; the model's output at ''."""
    seen: dict[tuple[str, str], list] = {}
    handles = []

    def keep(key, value):
        if isinstance(value, tuple):
            value = _first_tensor(value)
        if isinstance(value, torch.Tensor):
            seen.setdefault(key, []).append(value.detach().clone())

    try:
        for path, side in paths:
            try:
                module = model.get_submodule(path)
            except AttributeError:
                continue
            if side == "in":
                hook = functools.partial(lambda key, m, a, kw: keep(key, _first_tensor(a, kw)), (path, side))
                handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
            else:
                hook = functools.partial(lambda key, m, a, out: keep(key, out), (path, side))
                handles.append(module.register_forward_hook(hook))
        model(src, tgt)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def _embedding_variants(lib_model, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """Typical wrong inputs of the first layer, from lib's own table and positions."""
    d = lib_model.config.d_model
    emb = lib_model.src_embed(ids)  # (batch, seq, d_model); one shared table
    pe = lib_model.positional.pe[: ids.size(1)]
    return {
        f"you did not multiply the embeddings by √d_model = √{d} ≈ {math.sqrt(d):.1f} (Vaswani et al. §3.4): lib "
        "computes table(ids) · √d_model + PE, so that the embeddings are not drowned by the positional encoding": (
            emb + pe
        ),
        "you multiplied the embeddings by d_model; the scale is √d_model": emb * d + pe,
        "you divided the embeddings by √d_model; multiply by it": emb / math.sqrt(d) + pe,
        "the positional encoding is missing: add PositionalEncoding's table after scaling the embeddings": emb
        * math.sqrt(d),
        "you scaled after adding the positions; scale the embeddings by √d_model first, then add PE": (emb + pe)
        * math.sqrt(d),
    }


def _encoder_variants(layer, x: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Typical wrong encoder layers, computed with lib's layer's own blocks and weights on lib's input."""

    def run(res_attn=True, res_ffn=True, post=False, swap=False, m=mask):
        n1, n2 = (layer.norm2, layer.norm1) if swap else (layer.norm1, layer.norm2)
        attn = lambda h: layer.self_attn(h, h, h, m, True)[0]  # noqa: E731
        if post:
            x1 = n1(x + attn(x))
            return n2(x1 + layer.ffn(x1))
        a = attn(n1(x))
        x1 = x + a if res_attn else a
        f = layer.ffn(n2(x1))
        return x1 + f if res_ffn else f

    return {
        "the residual connection around the self-attention is missing: x = x + SelfAttention(LN(x)), not "
        "x = SelfAttention(LN(x))": run(res_attn=False),
        "the residual connection around the feed-forward block is missing: x + FFN(LN(x)), not FFN(LN(x))": run(
            res_ffn=False
        ),
        "the residual connections are missing: each sub-layer's output is added to its input, x + Sublayer(LN(x))": run(
            res_attn=False, res_ffn=False
        ),
        "you put the LayerNorm after the residual (post-LN, LN(x + Sublayer(x)), the original paper's); the shipped "
        "model is pre-LN (norm_first=True): x + Sublayer(LN(x)), and each stack ends with its own LayerNorm": run(
            post=True
        ),
        "you swapped norm1 and norm2: norm1 goes before the self-attention, norm2 before the feed-forward block": run(
            swap=True
        ),
        "the encoder's self-attention has no padding mask: pass padding_mask(src, pad_id) (True = real token) so "
        "that no word attends to a <pad>": run(m=None),
        "the padding mask is inverted: lib's masks mean True = may attend, and padding_mask is True at the real "
        "tokens (nn.MultiheadAttention's key_padding_mask is the opposite)": run(m=~mask),
    }


def _decoder_variants(layer, y, memory, causal, mask) -> dict[str, torch.Tensor]:
    """Typical wrong decoder layers, computed with lib's layer's own blocks and weights on lib's inputs."""

    def run(res=(True, True, True), post=False, self_m=causal, cross_m=mask, over="memory", cross_first=False):
        def attend(h):
            return layer.self_attn(h, h, h, self_m, True)[0]

        def cross(h):
            if over == "self":  # the decoder's states as keys: their mask is the causal one
                return layer.cross_attn(h, h, h, causal, True)[0]
            kv = layer.norm2(memory) if over == "normed" else memory
            return layer.cross_attn(h, kv, kv, cross_m, True)[0]

        if post:
            y1 = layer.norm1(y + attend(y))
            y2 = layer.norm2(y1 + cross(y1))
            return layer.norm3(y2 + layer.ffn(y2))
        steps = [lambda h: attend(layer.norm1(h)), lambda h: cross(layer.norm2(h))]
        steps = [*(steps[::-1] if cross_first else steps), lambda h: layer.ffn(layer.norm3(h))]
        h = y
        for step, residual in zip(steps, res):
            h = h + step(h) if residual else step(h)
        return h

    return {
        "the decoder's self-attention has no causal mask: word t then reads the words after it, which do not exist "
        "yet when you translate; pass causal_mask(seq_t) (True = may attend)": run(self_m=None),
        "the cross-attention does not get the source padding mask: its keys are the encoder's outputs, <pad> "
        "positions included, so pass padding_mask(src, pad_id) to the cross-attention too": run(cross_m=None),
        "the decoder has neither the causal mask (self-attention) nor the padding mask (cross-attention)": run(
            self_m=None, cross_m=None
        ),
        "the padding mask is inverted: lib's masks mean True = may attend (padding_mask is True at the real tokens)": (
            run(cross_m=~mask)
        ),
        "the residual connection around the decoder's self-attention is missing: y = y + SelfAttention(LN(y))": run(
            res=(False, True, True)
        ),
        "the residual connection around the cross-attention is missing: y = y + CrossAttention(LN(y), memory)": run(
            res=(True, False, True)
        ),
        "the residual connection around the decoder's feed-forward block is missing: y + FFN(LN(y))": run(
            res=(True, True, False)
        ),
        "the residual connections are missing: each sub-layer's output is added to its input, y + Sublayer(LN(y))": (
            run(res=(False, False, False))
        ),
        "you put the LayerNorm after the residual (post-LN, LN(y + Sublayer(y)), the original paper's); the shipped "
        "model is pre-LN (norm_first=True): y + Sublayer(LN(y)), and each stack ends with its own LayerNorm": run(
            post=True
        ),
        "the cross-attention attends over the decoder's own states; its keys and values are the encoder's output: "
        "cross_attn(norm2(y), memory, memory, src_mask)": run(over="self"),
        "you normalised memory with norm2 too; only the decoder's side is normalised there (memory already went "
        "through encoder.norm)": run(over="normed"),
        "the cross-attention comes before the self-attention; the order is self-attention, cross-attention, "
        "feed-forward (§3.1)": run(cross_first=True),
    }


def _close(got: torch.Tensor, want: torch.Tensor, real: torch.Tensor) -> tuple[bool, float, float]:
    """Whether ``got`` equals ``want`` at the real positions; their max |Δ| there, and lib's largest |value|."""
    if got.shape != want.shape:
        return False, math.inf, float(want.abs().max())
    delta = float((got - want).abs()[real].max()) if real.any() else 0.0
    scale = float(want.abs()[real].max()) if real.any() else 0.0
    return math.isfinite(delta) and delta <= _ASSEMBLY_RTOL * (1 + scale), delta, scale


@torch.no_grad()
def _first_difference(lib_model, lib_seen: dict, seen: dict, src, tgt) -> str:
    """Name the first stage whose output differs (with the same input in both models) and, if known, the mistake."""
    c = lib_model.config
    real = {"src": src != PAD_ID, "tgt": tgt != PAD_ID}
    src_mask = padding_mask(src, c.pad_id)  # (batch, 1, 1, seq_s)
    causal = causal_mask(tgt.size(1))
    agreed = []
    for what, path, side, positions in _assembly_stages(c):
        want = lib_seen[(path, side)][-1]
        calls = seen.get((path, side), [])
        if not calls:
            agreed_text = f" ({', '.join(agreed)} agree)" if agreed else ""
            how = "its input never reached it" if side == "in" else "it was never called"
            fix = (
                f"a pre-LN stack ends with its own LayerNorm: apply {path} once, to the output of the last layer"
                if path.endswith(".norm")
                else "call each block as a module (x = layer(x, mask)), in the order of lib's model"
            )
            return f" The first difference{agreed_text}: {what}: {how}. It looks like {fix}."
        got = calls[-1]
        ok, delta, scale = _close(got, want, real[positions])
        if ok:
            agreed.append(what.split(" (")[0])
            continue
        if got.shape != want.shape:
            size = f"has shape {tuple(got.shape)}, lib's {tuple(want.shape)}"
        else:
            size = f"differs from lib's by up to {delta:.3g} (lib's values reach {scale:.3g})"
        agreed_text = f"; {', '.join(agreed)} agree" if agreed else ""
        text = f" With the same input in both models, the first output that differs is {what}: it {size}{agreed_text}."
        variants: dict[str, torch.Tensor] = {}
        if side == "in":
            ids = src if positions == "src" else tgt
            variants = _embedding_variants(lib_model, ids)
        elif path.startswith("encoder.layers."):
            i = int(path.rsplit(".", 1)[1])
            x_in = lib_seen[(path, "in")][-1]
            variants = _encoder_variants(lib_model.encoder.layers[i], x_in, src_mask)
        elif path.startswith("decoder.layers."):
            i = int(path.rsplit(".", 1)[1])
            y_in = lib_seen[(path, "in")][-1]
            memory = lib_seen[("encoder.norm", "out")][-1]
            variants = _decoder_variants(lib_model.decoder.layers[i], y_in, memory, causal, src_mask)
        elif path in ("encoder.norm", "decoder.norm"):
            text += f" Apply {path} once, to the output of the last layer."
        why = next((w for w, v in variants.items() if _close(got, v, real[positions])[0]), None)
        return text + (f" It looks like {why}." if why else "")
    return ""


@functools.cache
def _assembly_reference() -> tuple[torch.Tensor, torch.Tensor, dict]:
    """The test batch ``(batch, seq_s)``, lib's greedy ids for it, and what lib's layers compute on them (hooked)."""
    from ..bpe import encode

    run = _shipped()
    model, c = run.model.eval(), run.model.config
    rows = [encode(run.tokenizer, s) + [EOS_ID] for s in _ASSEMBLY_SENTENCES]
    longest = max(map(len, rows))
    src = torch.tensor([r + [PAD_ID] * (longest - len(r)) for r in rows])  # (batch, seq_s), right-padded
    ys = _greedy_forward(model, src, _ASSEMBLY_MAX_LEN, c.tgt_vocab_size)
    paths = [(f"{stack}.layers.{i}", side) for stack, n in (("encoder", c.num_encoder_layers),
             ("decoder", c.num_decoder_layers)) for i in range(n) for side in ("in", "out")]  # fmt: skip
    paths += [("encoder.norm", "out"), ("decoder.norm", "out"), ("", "out")]
    return src, ys, _hooked_forward(model, src, ys, paths)


@exercise(
    "assemble_transformer",
    chapter=_CHAPTER,
    summary="MyTransformer(config): encoder layer, decoder layer and forward pass from lib's blocks, shipped weights",
)
def _check_assemble_transformer(answer: Any) -> str | None:
    """``answer(config)``, loaded with the shipped weights, must translate as lib's model, token for token."""
    require_callable(answer, "MyTransformer(config)")
    _raise_if_unsolved(answer)
    with _one_thread():
        return _check_assembly_one_thread(answer)


def _assembly_outputs(answer: Any, config: Any, state: dict, src: torch.Tensor, lib_ys: torch.Tensor) -> dict:
    """Build the reader's model, load the shipped weights, translate and hook it: ``{"ys", "seen"}`` (tensors), or
    ``{"error": the ❌ line's reason}`` / ``{"unsolved": what is still ...}``: plain data either way."""
    try:
        model = call_answer(answer, copy.deepcopy(config), copy_args=False)
    except AnswerRaised as err:
        return {"error": str(_readers_error(err, "building your model, MyTransformer(config)"))}
    except NotSolved as err:
        return {"unsolved": str(err)}
    if not isinstance(model, nn.Module):
        return {"error": f"MyTransformer(config) should give an nn.Module, got {type(model).__name__}"}
    try:
        model.load_state_dict(state, strict=True)
    except Exception as err:  # RuntimeError (names, shapes), or an AttributeError of a half-built module
        try:
            message = _load_message(err, model, state)
        except Exception:  # the model cannot even list its weights
            message = f"the shipped weights do not load into your model: {type(err).__name__}: {err}"
        return {"error": message}
    model.eval()
    stages = [(path, side) for _, path, side, _ in _assembly_stages(config)]
    try:
        ys = call_answer(_greedy_forward, model, src, _ASSEMBLY_MAX_LEN, config.tgt_vocab_size, copy_args=False)
        seen = call_answer(_hooked_forward, model, src, lib_ys, stages, copy_args=False)
    except AnswerRaised as err:
        if isinstance(err.original, _BadOutput):
            return {"error": str(err.original)}
        return {"error": str(_readers_error(err, "translating the test sentences with your model"))}
    return {"ys": ys, "seen": seen}


def _check_assembly_one_thread(answer: Any) -> str | None:
    """The checks of :func:`_check_assemble_transformer`, run on one torch thread."""
    with checker_setup("loading the shipped model and translating the test sentences with it", _SHIPPED_MODEL_FIX):
        from ..bpe import decode

        run = _shipped()
        lib_model, tok = run.model, run.tokenizer
        src, lib_ys, lib_seen = _assembly_reference()
        state = lib_model.state_dict()
    config, vocab = lib_model.config, lib_model.config.tgt_vocab_size
    # One measurement of plain data (token ids, layer outputs, or why the model failed): the classroom grader
    # records it where the reader's classes run and replays it where the verdict is made (lib.classroom.answers).
    out = observed(
        "translations and layer outputs of your model",
        lambda: _assembly_outputs(answer, config, state, src, lib_ys),
    )
    if "unsolved" in out:
        raise NotSolved(out["unsolved"])
    if "error" in out:
        raise AssertionError(out["error"])
    ys, seen = out["ys"], out["seen"]
    mine = [_sentence_ids(row) for row in ys.tolist()]
    ref = [_sentence_ids(row) for row in lib_ys.tolist()]
    logits_ok, delta, _ = _close(seen.get(("", "out"), [torch.empty(0)])[-1], lib_seen[("", "out")][-1],
                                 lib_ys != PAD_ID)  # fmt: skip
    differ = [i for i, (a, b) in enumerate(zip(mine, ref)) if a != b]
    if not differ and logits_ok:
        return (
            f"Your model translates «{_ASSEMBLY_SENTENCES[0]}» as «{decode(tok, mine[0])}», and all "
            f"{len(ref)} test sentences token for token as lib's (logits within {delta:.0e}): the same blocks, "
            "in the same order, with the same weights, are the same model."
        )
    if differ:
        i = differ[0]
        shown = decode(tok, [t for t in mine[i] if 0 <= t < vocab])
        shown = shown if len(shown) <= 90 else shown[:88] + " …"
        head = (
            f"your model translates «{_ASSEMBLY_SENTENCES[i]}» as «{shown}»; lib's model as «{decode(tok, ref[i])}» "
            f"({len(differ)} of {len(ref)} test sentences differ)."
        )
    else:
        head = (
            f"your translations of the {len(ref)} test sentences match lib's token for token, but your logits "
            f"differ from lib's by up to {delta:.3g}."
        )
    diagnosis = _first_difference(lib_model, lib_seen, seen, src, lib_ys)
    return_hint = diagnosis or (
        " Hint: pre-LN layers x + Sublayer(LN(x)); embeddings · √d_model + PE; the padding mask in the encoder and "
        "the cross-attention, the causal mask in the decoder's self-attention; a final LayerNorm after each stack."
    )
    raise AssertionError(head + return_hint)
