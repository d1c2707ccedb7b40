"""Checkers of the chapter "Positional encoding" (registered in :data:`lib.exercises.EXERCISES` on import)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..positional import PositionalEncoding, sinusoidal_positional_encoding
from .core import as_array, as_number, call_answer, diagnose, exercise, fmt, require_callable

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
