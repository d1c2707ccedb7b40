"""Checkers of the chapter "Positional encoding" (registered in :data:`lib.exercises.EXERCISES` on import)."""

from __future__ import annotations

import copy
import functools
import math
from typing import Any

import numpy as np
import torch

from ..positional import PositionalEncoding, sinusoidal_positional_encoding
from .core import as_array, as_number, call_answer, checker_setup, diagnose, exercise, fmt, require_callable

# This module only registers checkers (with @exercise, on import): it has no public names.
__all__: list[str] = []

# --------------------------------------------------------------------------------------------
# Chapter: positional_encoding
# --------------------------------------------------------------------------------------------

_CHAPTER_PE = "positional_encoding"


def _pe_row_variants(pos: int, d_model: int) -> dict[str, np.ndarray]:
    """Typical wrong rows PE(pos, ·), keyed by the mistake that produces them."""
    j = np.arange(d_model)  # column index
    two_i = j - j % 2  # 2i: the even column of each (sin, cos) pair
    i = two_i // 2  # the pair index
    even = j % 2 == 0
    ang = pos / 10000.0 ** (two_i / d_model)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return {
            "you swapped sin and cos (even columns 2i take the sin, odd columns 2i+1 the cos)": np.where(
                even, np.cos(ang), np.sin(ang)
            ),
            "you used i instead of 2i in the exponent: it is 10000^(2i/d_model), "
            "where i counts the (sin, cos) pairs": np.where(
                even, np.sin(pos / 10000.0 ** (i / d_model)), np.cos(pos / 10000.0 ** (i / d_model))
            ),
            "the cos column 2i+1 used its own index in the exponent; it must share the frequency "
            "of its sin partner: 10000^(2i/d_model) for both": np.where(
                even, np.sin(pos / 10000.0 ** (j / d_model)), np.cos(pos / 10000.0 ** (j / d_model))
            ),
            "you used i as the exponent; it is 2i/d_model, i.e. 10000^(2i/d_model)": np.where(
                even, np.sin(pos / 10000.0**i), np.cos(pos / 10000.0**i)
            ),
            "you forgot to divide the exponent by d_model: it is 10000^(2i/d_model)": np.where(
                even, np.sin(pos / 10000.0**two_i), np.cos(pos / 10000.0**two_i)
            ),
            "you multiplied pos by 10000^(2i/d_model); divide instead": np.where(
                even, np.sin(pos * 10000.0 ** (two_i / d_model)), np.cos(pos * 10000.0 ** (two_i / d_model))
            ),
            "you used sin in every column; odd columns 2i+1 take the cos": np.sin(ang),
        }


@exercise(
    "pe_row", chapter=_CHAPTER_PE, summary="pe_row(pos, d_model): one row of the sinusoidal positional-encoding table"
)
def _check_pe_row(answer: Any) -> str | None:
    """``answer(pos, d_model)`` must return the d_model values PE(pos, 0 .. d_model-1)."""
    require_callable(answer, "pe_row(pos, d_model)")
    # The chapter's worked row first, then pos = 0 (the [0, 1, 0, 1, ...] edge), then wider tables.
    for pos, d_model in [(1, 8), (0, 8), (3, 8), (7, 4), (1, 2), (25, 128), (49, 128)]:
        expected = sinusoidal_positional_encoding(pos + 1, d_model)[pos].double().numpy()
        got = as_array(call_answer(answer, pos, d_model), f"pe_row({pos}, {d_model})").ravel()
        if got.shape != expected.shape:
            raise AssertionError(
                f"for pos={pos}, d_model={d_model} your row has {got.size} values; expected d_model = "
                f"{d_model} (one per dimension)"
            )
        if not np.allclose(got, expected, atol=1e-5, rtol=0.0):
            hint = diagnose(got, _pe_row_variants(pos, d_model), atol=1e-5)
            raise AssertionError(
                f"for pos={pos}, d_model={d_model} your row is {fmt(got)}; expected {fmt(expected)}.{hint}"
            )
    return "Row 1 for d_model = 8 is [0.84147, 0.54030, 0.09983, 0.99500, ...], the worked row of the chapter's §2."


@exercise(
    "pe_norm",
    chapter=_CHAPTER_PE,
    summary="pe_norm(d_model): the length ||PE(pos)|| of a row, the same for every pos, without the table",
)
def _check_pe_norm(answer: Any) -> str | None:
    """``answer(d_model)`` must return ||PE(pos)||₂ = √(d_model / 2), measured on lib's table."""
    require_callable(answer, "pe_norm(d_model)")
    for d_model in (512, 8, 2, 128, 1000):
        norms = sinusoidal_positional_encoding(200, d_model).double().norm(dim=1)  # one per position
        expected = float(norms.mean())
        value = as_number(call_answer(answer, d_model), f"pe_norm({d_model})")
        if math.isclose(value, expected, rel_tol=1e-4):
            continue
        wrong = {
            d_model / 2: "that is the squared length ||PE||² = d_model/2; take the square root",
            math.sqrt(d_model): "that is √d_model, as if every dimension contributed 1; a (sin, cos) pair "
            "contributes sin² + cos² = 1 in total, and there are d_model/2 pairs",
            float(d_model): "that counts every dimension as 1 and forgets the square root",
            1.0: "a single (sin, cos) pair has length 1, but the row has d_model/2 pairs",
        }
        why = next((w for v, w in wrong.items() if math.isclose(value, v, rel_tol=1e-4)), None)
        hint = (
            f" It looks like {why}."
            if why
            else (" Hint: add up PE(pos, j)² over the columns j pair by pair, using sin² + cos² = 1.")
        )
        raise AssertionError(f"for d_model={d_model} your length is {value:g}; expected {expected:.5g}.{hint}")
    return (
        "d_model/2 pairs, each with sin² + cos² = 1, give the length √(d_model/2) at every position "
        "(16 for d_model = 512): PE turns as pos grows, it never gets longer."
    )


def _shift_matrix(k: int, d_model: int) -> np.ndarray:
    """The block-diagonal M_k with PE(pos + k) = M_k · PE(pos) (rotation by ω_i k in each pair)."""
    m = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        a = k / 10000.0 ** (2 * i / d_model)
        c, s = math.cos(a), math.sin(a)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


@exercise(
    "pe_shift_matrix",
    chapter=_CHAPTER_PE,
    summary="shift_matrix(k, d_model): the matrix M_k with PE(pos + k) = M_k · PE(pos) for every pos",
)
def _check_pe_shift_matrix(answer: Any) -> str | None:
    """``answer(k, d_model)`` must return a (d_model, d_model) M_k that shifts every row of PE by k."""
    require_callable(answer, "shift_matrix(k, d_model)")
    for k, d_model in [(1, 8), (3, 8), (0, 8), (5, 16), (-2, 8), (17, 32)]:
        m = as_array(call_answer(answer, k, d_model), f"shift_matrix({k}, {d_model})")
        if m.shape != (d_model, d_model):
            raise AssertionError(f"shift_matrix({k}, {d_model}) has shape {m.shape}; expected ({d_model}, {d_model})")
        if not np.isfinite(m).all():
            raise AssertionError(
                f"shift_matrix({k}, {d_model}) holds NaN or infinite values; every entry must be finite"
            )
        pe = sinusoidal_positional_encoding(300, d_model).double().numpy()  # (300, d_model)
        start = max(0, -k)
        pos = np.arange(start, 300 - max(k, 0))
        shifted = pe[pos] @ m.T  # row r is M_k · PE(pos_r)
        err = np.abs(shifted - pe[pos + k]).max(axis=1)
        if err.max() > 1e-4:
            first = int(np.argmax(err > 1e-4))  # the first position where the shift fails
            p = int(pos[first])
            hint = ""
            if k != 0 and np.allclose(m, np.eye(d_model), atol=1e-4):
                hint = " Your matrix is the identity, which is M_0; M_k must move PE by k positions."
            elif k != 0 and np.allclose(m, _shift_matrix(-k, d_model), atol=1e-4):
                hint = (
                    " Your matrix shifts by -k (it is the transpose of M_k): check the signs of the "
                    "sin terms; sin(a + b) = sin a cos b + cos a sin b."
                )
            elif np.allclose(np.diag(m), np.diag(_shift_matrix(k, d_model)), atol=1e-4):
                hint = " The diagonal (the cos terms) is right; look at the sin terms beside it."
            raise AssertionError(
                f"for k={k}, d_model={d_model}: M_k · PE({p}) = {fmt(shifted[first])}; "
                f"expected PE({p + k}) = {fmt(pe[p + k])}.{hint}"
            )
    return (
        "M_k depends on the offset k only, never on pos: a rotation by the angle k·ω_i in each "
        "(sin, cos) pair, so 'k positions later' is one fixed linear map."
    )


def _encoder_input_variants(emb: torch.Tensor) -> dict[str, np.ndarray]:
    d_model, seq = emb.size(-1), emb.size(-2)
    pe = sinusoidal_positional_encoding(seq, d_model).double()
    e = emb.double()
    root = math.sqrt(d_model)
    return {
        "you forgot to multiply the embeddings by √d_model": (e + pe).numpy(),
        "you multiplied by d_model; the factor is √d_model": (e * d_model + pe).numpy(),
        "you scaled after adding PE; scale the embeddings only, then add PE": ((e + pe) * root).numpy(),
        "you scaled the positional encoding instead of the embeddings": (e + pe * root).numpy(),
        "you divided by √d_model; multiply instead": (e / root + pe).numpy(),
    }


@exercise(
    "encoder_input",
    chapter=_CHAPTER_PE,
    summary="encoder_input(emb): embeddings (batch, seq, d_model) scaled by √d_model plus PE",
)
def _check_encoder_input(answer: Any) -> str | None:
    """``answer(emb)`` must return emb·√d_model + PE[:seq], as the Transformer's embedding layer does."""
    require_callable(answer, "encoder_input(emb)")
    gen = torch.Generator().manual_seed(0)
    for batch, seq, d_model in [(1, 4, 8), (2, 5, 32), (3, 1, 16)]:
        emb = torch.randn(batch, seq, d_model, generator=gen) * d_model**-0.5
        with torch.no_grad():
            expected = PositionalEncoding(d_model, max_len=seq)(emb * math.sqrt(d_model)).double().numpy()
        got = as_array(call_answer(answer, emb.clone()), f"encoder_input of a {tuple(emb.shape)} tensor")
        if got.shape != expected.shape:
            raise AssertionError(
                f"for emb of shape {tuple(emb.shape)} your output has shape {got.shape}; expected "
                f"{expected.shape} (the same shape as emb)"
            )
        if not np.allclose(got, expected, atol=1e-4, rtol=1e-5):
            hint = diagnose(got, _encoder_input_variants(emb), atol=1e-4)
            raise AssertionError(
                f"for emb of shape {tuple(emb.shape)} your first row is {fmt(got[0, 0])}; expected "
                f"{fmt(expected[0, 0])}.{hint}"
            )
    return (
        "With embeddings initialised at std d_model^-0.5, the scaled embedding and PE both have "
        "coordinates of order 1, so neither drowns the other."
    )


# --------------------------------------------------------------------------------------------
# Break it: the shipped translator without its positional encoding
# --------------------------------------------------------------------------------------------

# What to check when the shipped model cannot be loaded (shown after "check the installation:").
_SHIPPED_MODEL_FIX = (
    "the checker needs the shipped model, the folder models/de-en of the book's repository (lib.checkpoint."
    "SHIPPED_MODEL); it is found when lib is installed from a clone with `pip install -e .`"
)
# Two sentences with the same six tokens: the man and the dog trade places (tokens 1 and 4); EOS stays last.
BREAK_SENTENCES = ("Ein Mann füttert einen Hund.", "Ein Hund füttert einen Mann.")
BREAK_PERM = [0, 4, 2, 3, 1, 5, 6]  # row i of sentence B's encoding = row BREAK_PERM[i] of sentence A's


@functools.lru_cache(maxsize=1)
def _shipped():
    """The shipped run (model in eval mode and its tokenizer), loaded once."""
    from ..checkpoint import SHIPPED_MODEL, load_run

    return load_run(SHIPPED_MODEL)


@functools.cache
def _no_pe_reference() -> dict[str, Any]:
    """Encoder outputs of the two sentences, with and without the encoding, and the broken model's translations."""
    from ..positional import NoPositionalEncoding
    from ..special_tokens import EOS_ID
    from ..translate import translate

    run = _shipped()
    model, tok = run.model.eval(), run.tokenizer
    broken = copy.deepcopy(model)
    broken.positional = NoPositionalEncoding(model.config.d_model, model.config.max_len)
    ids = [torch.tensor([tok.encode(s).ids + [EOS_ID]]) for s in BREAK_SENTENCES]
    assert sorted(ids[0][0].tolist()) == sorted(ids[1][0].tolist()), "the two sentences must be one permutation"
    ref: dict[str, Any] = {}
    with torch.no_grad():
        for name, m in (("pe", model), ("no_pe", broken)):
            mem_a, mem_b = (m.encode(i)[0][0] for i in ids)
            ref[f"gap_{name}"] = (mem_b - mem_a[BREAK_PERM]).abs().max().item()
            ref[f"rowwise_{name}"] = (mem_b - mem_a).abs().max().item()
        ref["translations_no_pe"] = translate(broken, tok, list(BREAK_SENTENCES))
    return ref


@exercise(
    "pe_break_no_pe",
    chapter=_CHAPTER_PE,
    summary="break it: (max |difference| of the permuted encodings, same translation?) without positional encoding",
)
def _check_break_no_pe(answer: Any) -> str | None:
    """Without the encoding the encoder is permutation-equivariant and both sentences get one translation."""
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AssertionError(
            f"your measurement should be a pair (gap, same): a number and True/False; got {type(answer).__name__}"
        )
    gap = as_number(answer[0], "the gap (max |difference| between the permuted encoder outputs)")
    same = answer[1]
    if not isinstance(same, (bool, np.bool_)):
        raise AssertionError(f"the second value should be True or False (are the translations equal?), got {same!r}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrices: on a busy CPU, threads waiting for each other slow decoding down
    try:
        with checker_setup(
            "loading the shipped model (models/de-en) and translating two sentences", _SHIPPED_MODEL_FIX
        ):
            ref = _no_pe_reference()
    finally:
        torch.set_num_threads(threads)
    want = (
        f"expected a gap of at most 1e-4 (rounding; lib's is {ref['gap_no_pe']:.1e}) and equal translations "
        f"({ref['translations_no_pe'][0]!r} for both)"
    )
    if not 0 <= gap <= 1e-4:
        wrong = [
            (
                ref["gap_pe"],
                "the encoding is still there: the model with it gives different numbers for the same "
                "word at another position",
            ),
            (
                ref["rowwise_no_pe"],
                "you compared row i with row i: the outputs are equal once REORDERED; compare "
                "row i of sentence B's encoding with row perm[i] of sentence A's",
            ),
            (
                ref["rowwise_pe"],
                "you compared row i with row i of the model WITH its encoding: remove the encoding "
                "and reorder one of the two outputs",
            ),
        ]
        why = next((w for v, w in wrong if abs(gap - v) < 1e-3 * max(1.0, v)), None)
        raise AssertionError(f"your gap is {gap:.4g}; {want}." + (f" It looks like {why}." if why else ""))
    if not same:
        from ..translate import translate

        with_pe = translate(_shipped().model.eval(), _shipped().tokenizer, list(BREAK_SENTENCES))
        raise AssertionError(
            f"you say the translations differ; {want}. Translate both sentences with the broken model: with the "
            f"encoding they are {with_pe}, but without it the decoder's cross-attention sees the "
            "same set of encoder rows for both."
        )
    both = ref["translations_no_pe"][0]
    return f"Without positions the translator reads a bag of words: both sentences become {both!r}."


# --------------------------------------------------------------------------------------------
# Break it: raw integer positions instead of the sinusoids
# --------------------------------------------------------------------------------------------

BREAK_WORDS, BREAK_POSITION = ("Hund", "Katze"), 50


@functools.cache
def _raw_positions_reference() -> dict[str, float]:
    """Cosine similarity of two words' encoder inputs at position 50: raw positions, sinusoids, and wrong variants."""
    run = _shipped()
    model, tok = run.model, run.tokenizer
    d_model, p = model.config.d_model, BREAK_POSITION
    ids = [tok.encode(w).ids for w in BREAK_WORDS]
    assert all(len(i) == 1 for i in ids), "each word must be one token"
    with torch.no_grad():
        stored = model.src_embed(torch.tensor([i[0] for i in ids]))  # (2, d_model), as stored
        pe = PositionalEncoding(d_model, max_len=p + 1).pe[p]
    scaled = stored * math.sqrt(d_model)

    def cos(a: torch.Tensor) -> float:
        return torch.cosine_similarity(a[0], a[1], dim=0).item()

    return {
        "raw": cos(scaled + p),
        "sin": cos(scaled + pe),
        "raw_unscaled": cos(stored + p),
        "sin_unscaled": cos(stored + pe),
        "no_position": cos(scaled),
    }


def _closeness(cos: float) -> float:
    """log10(1 − cos): how many nines the similarity has (−3.4 for 0.9996)."""
    return math.log10(max(1.0 - cos, 1e-12))


@exercise(
    "pe_break_raw_positions",
    chapter=_CHAPTER_PE,
    summary="break it: (cosine of Hund and Katze at position 50 with raw positions, with the sinusoids)",
)
def _check_break_raw_positions(answer: Any) -> str | None:
    """Raw positions swamp the √d_model-scaled embeddings: two different words become almost the same vector."""
    values = as_array(answer, "your measurement (cosine with raw positions, cosine with sinusoids)").ravel()
    if values.size != 2:
        raise AssertionError(f"your measurement should be two cosines, (raw, sinusoidal); got {values.size} values")
    raw, sin = float(values[0]), float(values[1])
    with checker_setup("loading the shipped model (models/de-en)", _SHIPPED_MODEL_FIX):
        ref = _raw_positions_reference()
    want = f"expected about ({ref['raw']:.5f}, {ref['sin']:.3f})"
    if not (-1 - 1e-6 <= raw <= 1 + 1e-6 and -1 - 1e-6 <= sin <= 1 + 1e-6):
        raise AssertionError(f"a cosine lies between −1 and 1; yours are ({raw:g}, {sin:g}); {want}.")
    hints = [
        (abs(raw - ref["sin"]) < 0.005 and abs(sin - ref["raw"]) < 1e-4, "you swapped the two: raw first"),
        (
            abs(_closeness(raw) - _closeness(ref["raw_unscaled"])) < 0.15,
            "you left out the √d_model scale of the embeddings: unscaled they are even smaller next to the position",
        ),
        (
            abs(raw - ref["no_position"]) < 0.005,
            "your raw cosine is that of the embeddings alone: add the position 50 to every coordinate",
        ),
        (abs(sin - ref["sin_unscaled"]) < 0.005, "your sinusoidal cosine leaves out the √d_model scale"),
        (
            abs(sin - ref["no_position"]) < 0.005 and abs(sin - ref["sin"]) > 0.005,
            "your sinusoidal cosine is that of the embeddings alone: add the row PE(50) of the table",
        ),
    ]
    raw_ok = abs(_closeness(raw) - _closeness(ref["raw"])) < 0.1
    sin_ok = abs(sin - ref["sin"]) < 0.005
    if raw_ok and sin_ok:
        return (
            f"At position 50, Hund and Katze are {ref['raw']:.4f} alike with the raw position (alone: "
            f"{ref['no_position']:.2f}) and {ref['sin']:.2f} with the sinusoids: the raw number drowns the word."
        )
    why = next((w for hit, w in hints if hit), None)
    raise AssertionError(
        f"your cosines are ({raw:.6g}, {sin:.4g}); {want}." + (f" It looks like {why}." if why else "")
    )
