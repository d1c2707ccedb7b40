"""Property tests: random shapes, dtypes, masks and sizes, and only two acceptable outcomes.

Each property draws valid inputs for a public function of ``lib`` with hypothesis, then, in about half of the
examples, spoils one of them (its ``flaw``: a wrong dtype, batch size, rank, a size that is 0, negative, a float, NaN,
a bool or a string, a mask of the wrong shape, ...). It accepts exactly two outcomes: a correct result, whose
invariants are checked (weights are non-negative and rows sum to 1 where a key is allowed, masked keys weigh 0, the
shapes are right, nothing is NaN), or a ``ValueError``/``TypeError`` whose message names one of the function's
arguments. Anything else fails the property: a ``RuntimeError`` or ``IndexError`` from inside torch, NaN for valid
inputs, a wrong shape, or a spoilt input that was silently accepted.

The core that the chapters display (attention, the masks, the positional table) trusts its callers, as the
models' entry points check user input once: its properties draw valid inputs only and check the invariants.

Reproducible and fast: every property runs at most 50 derandomized examples without a deadline.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections.abc import Callable, Iterable
from typing import Any

import pytest
import torch
from hypothesis import currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from lib.attention import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention
from lib.data import pad_batch, token_batches
from lib.efficient import linear_attention, linear_attention_quadratic, sliding_window_attention, sliding_window_mask
from lib.positional import sinusoidal_positional_encoding
from lib.transformer import Transformer, TransformerConfig

# The core the chapters display (attention, the masks, the positional table) trusts its callers and states its
# invariants as asserts: its properties draw valid inputs only; the entry points (models, data, efficient attention)
# keep their spoilt inputs.
CORE: tuple[str, ...] = ()

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, database=None)

FLAW = st.integers(0, 2**32 - 1)  # seeds the choice of what to spoil (uniform, unlike hypothesis' own choices)
FLOAT = st.sampled_from([torch.float32, torch.float64])
SEED = st.integers(0, 2**16)
BAD_SIZES = (0, -1, 2.5, float("nan"), True, "3", None)


class Flaw:
    """What one example spoils: ``None`` half of the time, else one of ``options``; ``bad()`` picks a bad value.

    The choice is seeded by the repr of the example's arguments (hypothesis varies some arguments far more than
    others, so a seed of its own would repeat).
    """

    def __init__(self, arguments: dict[str, Any] | int, options: Iterable[str]) -> None:
        key = sorted(arguments.items()) if isinstance(arguments, dict) else arguments
        self.rng = random.Random(repr(key))
        options = list(options)
        self.name = None if self.rng.random() < 0.5 or not options else self.rng.choice(options)

    def __eq__(self, other: object) -> bool:
        return self.name == other

    def __hash__(self) -> int:
        return hash(self.name)

    def bad(self, values: Iterable[Any] = BAD_SIZES) -> Any:
        return self.rng.choice(list(values))

    def size(self, name: str, good: Any) -> Any:
        """``good``, or a bad size when this example spoils ``name``."""
        return self.bad() if self.name == name else good


def outcome(call: Callable[[], Any], names: Iterable[str], flaw: Flaw | None = None) -> Any | None:
    """``call()``'s result, or None when it raised a ValueError/TypeError naming one of ``names``.

    Any other exception propagates (and fails the property), and so does a ValueError/TypeError whose message
    names none of the arguments, or a result for inputs with a ``flaw``.
    """
    try:
        result = call()
    except (ValueError, TypeError) as err:
        if currently_in_test_context():
            event(f"flaw {flaw.name}: named {type(err).__name__}" if flaw else f"named {type(err).__name__}")
        message = str(err)
        assert any(re.search(rf"(?<![A-Za-z_]){re.escape(n)}(?![A-Za-z_])", message) for n in names), (
            f"{type(err).__name__} does not name an argument ({', '.join(names)}): {message}"
        )
        return None
    if currently_in_test_context():
        event("valid: result checked")
    assert flaw is None or flaw.name is None, f"spoilt {flaw.name!r} was accepted silently"
    return result


def randn(shape: tuple, dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype)
    return torch.randint(-3, 4, shape, generator=gen, dtype=dtype)


def check_weights(weights: torch.Tensor, allowed: torch.Tensor | None) -> None:
    """Non-negative, finite, 0 on blocked keys, rows sum to 1 where some key is allowed and 0 where none is."""
    assert torch.isfinite(weights).all()
    assert (weights >= 0).all()
    sums = weights.sum(-1)
    if allowed is None:
        torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-5, rtol=0)
        return
    allowed = allowed.expand(weights.shape)
    assert (weights[~allowed] == 0).all()
    has_key = allowed.any(-1)
    torch.testing.assert_close(sums[has_key], torch.ones_like(sums[has_key]), atol=1e-5, rtol=0)
    assert (sums[~has_key] == 0).all()


# --- scaled dot-product attention --------------------------------------------------------------------------------


@SETTINGS
@given(
    lead=st.sampled_from([((2, 3), (2, 3)), ((1, 3), (2, 1)), ((3,), (2, 3)), ((), ())]),
    seq_q=st.integers(1, 6),
    seq_k=st.integers(1, 6),
    d_k=st.integers(1, 8),
    d_v=st.integers(1, 8),
    dtype=FLOAT,
    mask_shape=st.sampled_from([None, "full", "row", "key", "batch"]),
    flaw=FLAW,
    seed=SEED,
)
def test_scaled_dot_product_attention(lead, seq_q, seq_k, d_k, d_v, dtype, mask_shape, flaw, seed):
    flaw = Flaw(locals(), CORE)  # the core: valid inputs only, see the module docstring
    lead_q, lead_kv = ((2, 3), (2, 4)) if flaw == "lead" else lead
    q = randn((*lead_q, seq_q, d_k), torch.int64 if flaw == "int" else dtype, seed)
    k = randn((*lead_kv, seq_k, d_k + (flaw == "d_k")), dtype, seed + 1)
    v = randn((*lead_kv, seq_k + (flaw == "seq_v"), d_v), torch.float16 if flaw == "dtype" else dtype, seed + 2)
    gen = torch.Generator().manual_seed(seed)
    shapes = {"full": (seq_q, seq_k), "row": (1, seq_k), "key": (seq_q, 1), "batch": (*lead_q, 1, seq_k)}
    mask = None if mask_shape is None else torch.rand(shapes[mask_shape], generator=gen) < 0.6
    if flaw == "mask-shape":
        mask = torch.ones(seq_q + 1, seq_k, dtype=torch.bool)
    elif flaw == "mask-dtype":
        mask = torch.ones(seq_q, seq_k, dtype=torch.long)
    dropout = flaw.bad([-0.1, 1.5, float("nan"), "0", None]) if flaw == "dropout" else 0.0
    query = q.tolist() if flaw == "not-a-tensor" else q
    names = ("query", "key", "value", "mask", "dropout_p")
    result = outcome(lambda: scaled_dot_product_attention(query, k, v, mask, dropout), names, flaw)
    if result is None:
        return
    out, weights = result
    shape = torch.broadcast_shapes(lead_q, lead_kv)
    assert out.shape == (*shape, seq_q, d_v) and weights.shape == (*shape, seq_q, seq_k)
    assert torch.isfinite(out).all()
    check_weights(weights, mask)
    torch.testing.assert_close(out, weights @ v)


# --- multi-head attention ----------------------------------------------------------------------------------------


@SETTINGS
@given(
    heads=st.sampled_from([(4, 1), (4, 2), (8, 2), (8, 4), (12, 3)]),
    batch=st.integers(1, 3),
    seq_q=st.integers(1, 5),
    seq_k=st.integers(1, 5),
    fused=st.booleans(),
    return_attention=st.booleans(),
    mask_kind=st.sampled_from([None, "pairs", "padding"]),
    flaw=FLAW,
    seed=SEED,
)
def test_multi_head_attention(heads, batch, seq_q, seq_k, fused, return_attention, mask_kind, flaw, seed):
    flaw = Flaw(locals(), CORE)  # the core: valid inputs only, see the module docstring
    d_model, num_heads = heads
    d_model, num_heads = flaw.size("d_model", d_model), flaw.size("num_heads", num_heads)
    if flaw == "indivisible":
        num_heads = 5
    dropout = flaw.bad([-0.5, 1.5, float("nan"), "0.1"]) if flaw == "dropout" else 0.0
    names = ("d_model", "num_heads", "dropout")
    init_flaw = flaw if flaw in ("d_model", "num_heads", "indivisible", "dropout") else None
    mha = outcome(lambda: MultiHeadAttention(d_model, num_heads, dropout, fused=fused).eval(), names, init_flaw)
    if mha is None:
        return
    query = randn((batch, seq_q, d_model + (flaw == "width")), torch.int64 if flaw == "int" else torch.float32, seed)
    key = randn((batch + (flaw == "batch"), seq_k, d_model), torch.float32, seed + 1)
    gen = torch.Generator().manual_seed(seed)
    mask = {
        None: None,
        "pairs": torch.rand(seq_q, seq_k, generator=gen) < 0.5,
        "padding": (torch.rand(batch, 1, 1, seq_k, generator=gen) < 0.7),
    }[mask_kind]
    if flaw == "mask":
        mask = torch.ones(seq_q + 1, seq_k, dtype=torch.bool)
    with torch.no_grad():
        result = outcome(lambda: mha(query, key, key, mask, return_attention), ("query", "key", "value", "mask"), flaw)
    if result is None:
        return
    out, weights = result
    assert out.shape == (batch, seq_q, d_model)
    assert torch.isfinite(out).all()
    if return_attention or not fused:
        assert weights.shape == (batch, num_heads, seq_q, seq_k)
        check_weights(weights, mask)
    else:
        assert weights is None


# --- masks ---------------------------------------------------------------------------------------------------------


@SETTINGS
@given(seq_len=st.integers(1, 12), flaw=FLAW)
def test_causal_mask(seq_len, flaw):
    flaw = Flaw(locals(), CORE)  # the core: valid inputs only, see the module docstring
    seq_len = flaw.size("seq_len", seq_len)
    mask = outcome(lambda: causal_mask(seq_len), ("seq_len",), flaw)
    if mask is None:
        return
    assert mask.dtype == torch.bool and mask.shape == (seq_len, seq_len)
    i, j = torch.meshgrid(torch.arange(seq_len), torch.arange(seq_len), indexing="ij")
    assert torch.equal(mask, j <= i)


@SETTINGS
@given(
    lengths=st.lists(st.integers(0, 7), min_size=1, max_size=4),
    max_len=st.one_of(st.none(), st.integers(7, 9)),
    as_tokens=st.booleans(),
    pad_id=st.integers(0, 3),
    flaw=FLAW,
)
def test_padding_mask(lengths, max_len, as_tokens, pad_id, flaw):
    if as_tokens:
        flaw = Flaw(locals(), CORE)  # the core: valid inputs only, see the module docstring
        width = max(lengths)
        tokens = torch.full((len(lengths), width), pad_id, dtype=torch.float32 if flaw == "float-ids" else torch.long)
        for row, n in enumerate(lengths):
            tokens[row, :n] = 9  # a real token (pad_id is at most 3)
        pad = flaw.bad([None, 1.5, "0"]) if flaw == "pad_id" else pad_id
        x = tokens[None] if flaw == "rank" else tokens
        mask = outcome(lambda: padding_mask(x, pad), ("lengths_or_tokens", "pad_id"), flaw)
    else:
        flaw = Flaw(locals(), CORE)  # the core: valid inputs only
        if flaw == "negative":
            lengths = [*lengths, -1]
        limit = max_len
        if flaw == "max_len":
            limit = flaw.bad([2.5, "8", -1])
        elif flaw == "short":
            limit = max(lengths) - 1
        mask = outcome(lambda: padding_mask(lengths, max_len=limit), ("lengths", "max_len"), flaw)
        width = max(lengths) if max_len is None else max_len
    if mask is None:
        return
    assert mask.dtype == torch.bool and mask.shape == (len(lengths), 1, 1, width)
    for row, n in enumerate(lengths):
        assert mask[row, 0, 0, :n].all() and not mask[row, 0, 0, n:].any()


# --- the positional encoding ------------------------------------------------------------------------------------


@SETTINGS
@given(
    max_len=st.integers(1, 40),
    half=st.integers(1, 16),
    base=st.one_of(st.just(10000.0), st.floats(1e-300, 1e300), st.integers(1, 10**6)),
    flaw=FLAW,
)
def test_sinusoidal_positional_encoding(max_len, half, base, flaw):
    flaw = Flaw(locals(), CORE)  # the core: valid inputs only, see the module docstring
    max_len, d_model = flaw.size("max_len", max_len), flaw.size("d_model", 2 * half)
    if flaw == "odd":
        d_model = 2 * half - 1
    if flaw == "base":
        base = flaw.bad([0.0, -2.0, float("nan"), float("inf"), "1e4", None])
    names = ("max_len", "d_model", "base")
    pe = outcome(lambda: sinusoidal_positional_encoding(max_len, d_model, base), names, flaw)
    if pe is None:
        return
    assert pe.shape == (max_len, d_model) and pe.dtype == torch.float32
    assert torch.isfinite(pe).all() and (pe.abs() <= 1).all()
    assert (pe[0, 0::2] == 0).all() and (pe[0, 1::2] == 1).all()  # position 0: sin 0 = 0, cos 0 = 1
    torch.testing.assert_close(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, torch.ones(max_len, d_model // 2))


# --- padding and batching ---------------------------------------------------------------------------------------

ID = st.integers(0, 50)
ROW = st.one_of(
    st.lists(ID, max_size=6),
    st.lists(ID, max_size=6).map(tuple),
    st.lists(ID, max_size=6).map(lambda r: torch.tensor(r, dtype=torch.long)),
)


@SETTINGS
@given(
    rows=st.lists(ROW, min_size=1, max_size=4),
    pad_id=st.sampled_from([0, 1, 3, -100]),
    extra=st.one_of(st.none(), st.integers(0, 2)),
    flaw=FLAW,
)
def test_pad_batch(rows, pad_id, extra, flaw):
    flaw = Flaw(locals(), ["row", "rows", "pad_id", "width", "narrow"])
    longest = max(len(r) for r in rows)
    width = None if extra is None else longest + extra
    if flaw == "row":
        rows = [*rows, flaw.bad([[1, 2.5], [1, [2]], "ids", [True, False], 7])]
    elif flaw == "rows":
        rows = flaw.bad([[], "ids", 5])
    elif flaw == "pad_id":
        pad_id = flaw.bad([0.5, None, "0", True])
    elif flaw == "width":
        width = flaw.bad([4.0, "4", True])
    elif flaw == "narrow" and longest:
        width = longest - 1
    else:
        flaw.name = None  # nothing to narrow: a valid example
    out = outcome(lambda: pad_batch(rows, pad_id, width), ("rows", "pad_id", "width"), flaw)
    if out is None:
        return
    lists = [r.tolist() if isinstance(r, torch.Tensor) else list(r) for r in rows]
    assert out.dtype == torch.long and out.shape == (len(rows), longest if width is None else width)
    for i, row in enumerate(lists):  # the rows come back, then padding
        assert out[i, : len(row)].tolist() == row
        assert (out[i, len(row) :] == pad_id).all()


EXAMPLE = st.tuples(st.lists(ID, max_size=12), st.lists(ID, max_size=12))


@SETTINGS
@given(
    examples=st.lists(EXAMPLE, max_size=20),
    max_tokens=st.integers(1, 60),
    shuffle=st.booleans(),
    seed=st.integers(0, 100),
    flaw=FLAW,
)
def test_token_batches(examples, max_tokens, shuffle, seed, flaw):
    flaw = Flaw(locals(), ["max_tokens", "examples"])
    max_tokens = flaw.size("max_tokens", max_tokens)
    if flaw == "examples":
        examples = [*examples, flaw.bad([5, ([1],), "ab"])]
    names = ("max_tokens", "examples")
    batches = outcome(lambda: token_batches(examples, max_tokens, shuffle, seed), names, flaw)
    if batches is None:
        return
    assert sorted(i for batch in batches for i in batch) == list(range(len(examples)))  # each index exactly once
    for batch in batches:
        assert batch, "an empty batch"
        cost = len(batch) * (max(max(len(examples[i][0]), len(examples[i][1])) for i in batch) + 2)
        assert cost <= max_tokens or len(batch) == 1, f"batch {batch} costs {cost} > {max_tokens}"


# --- efficient attention -----------------------------------------------------------------------------------------

QKV_FLAWS = ["heads", "seq_k", "d_k", "int", "dtype"]


def spoilt_qkv(flaw: Flaw, lead: tuple, n_q: int, n_k: int, d: int, d_v: int, dtype: torch.dtype, seed: int):
    lead_k = (*lead[:-1], lead[-1] + 1) if flaw == "heads" else lead
    q = randn((*lead, n_q, d), torch.int64 if flaw == "int" else dtype, seed)
    k = randn((*lead_k, n_k, d + (flaw == "d_k")), dtype, seed + 1)
    v = randn((*lead_k, n_k + (flaw == "seq_k"), d_v), torch.float16 if flaw == "dtype" else dtype, seed + 2)
    return q, k, v


@SETTINGS
@given(
    lead=st.sampled_from([(1, 1), (2, 3), (2,)]),
    n=st.integers(1, 40),
    d=st.integers(1, 8),
    window=st.integers(1, 12),
    block_size=st.one_of(st.none(), st.integers(1, 9)),
    causal=st.booleans(),
    global_tokens=st.sampled_from([None, [0], [0, 1]]),
    dtype=FLOAT,
    flaw=FLAW,
    seed=SEED,
)
def test_sliding_window_attention(lead, n, d, window, block_size, causal, global_tokens, dtype, flaw, seed):
    flaw = Flaw(locals(), [*QKV_FLAWS, "window", "block_size", "global_tokens"])
    q, k, v = spoilt_qkv(flaw, lead, n, n, d, d, dtype, seed)
    window = flaw.size("window", window)
    if flaw == "block_size":
        block_size = flaw.bad([0, -1, 2.5, float("nan"), True, "3"])
    if flaw == "global_tokens":
        global_tokens = flaw.bad([[-1], [0, 0], [n], [0.5]])
    elif global_tokens is not None:
        global_tokens = [g for g in global_tokens if g < n]
    names = ("query", "key", "value", "window", "block_size", "global_tokens")
    result = outcome(lambda: sliding_window_attention(q, k, v, window, global_tokens, causal, block_size), names, flaw)
    if result is None:
        return
    out, weights = result
    assert weights is None and out.shape == (*lead, n, d) and torch.isfinite(out).all()
    mask = sliding_window_mask(n, window, global_tokens, causal)
    expected, w = scaled_dot_product_attention(q, k, v, mask)
    check_weights(w, mask)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)


@SETTINGS
@given(
    lead=st.sampled_from([(1, 1), (2, 3), (2,)]),
    n_q=st.integers(1, 30),
    n_k=st.integers(1, 30),
    d=st.integers(1, 8),
    d_v=st.integers(1, 6),
    causal=st.booleans(),
    chunk_size=st.sampled_from([1, 3, 8, 64]),
    dtype=FLOAT,
    flaw=FLAW,
    seed=SEED,
)
def test_linear_attention(lead, n_q, n_k, d, d_v, causal, chunk_size, dtype, flaw, seed):
    flaw = Flaw(locals(), [*QKV_FLAWS, "chunk_size", "causal-lengths"])
    if causal and flaw != "causal-lengths":
        n_k = n_q
    elif flaw == "causal-lengths":
        causal, n_k = True, n_q + 1
    q, k, v = spoilt_qkv(flaw, lead, n_q, n_k, d, d_v, dtype, seed)
    chunk_size = flaw.size("chunk_size", chunk_size)
    names = ("query", "key", "value", "chunk_size")
    result = outcome(lambda: linear_attention(q, k, v, causal=causal, chunk_size=chunk_size), names, flaw)
    if result is None:
        return
    out, weights = result
    assert weights is None and out.shape == (*lead, n_q, d_v) and torch.isfinite(out).all()
    expected, w = linear_attention_quadratic(q, k, v, causal=causal)
    check_weights(w, torch.ones(n_q, n_k, dtype=torch.bool).tril() if causal else None)
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)


# --- a tiny Transformer ------------------------------------------------------------------------------------------

VOCAB, MAX_LEN = 30, 12


@functools.cache
def tiny() -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig.tiny(VOCAB, max_len=MAX_LEN, d_model=16, num_heads=2, d_ff=32)).eval()


@SETTINGS
@given(
    batch=st.integers(1, 3),
    seq_s=st.integers(1, MAX_LEN),
    seq_t=st.integers(1, MAX_LEN),
    src_pad=st.integers(0, 3),
    dtype=st.sampled_from([torch.long, torch.int32]),
    return_attention=st.booleans(),
    flaw=FLAW,
    seed=SEED,
)
def test_tiny_transformer_forward(batch, seq_s, seq_t, src_pad, dtype, return_attention, flaw, seed):
    flaw = Flaw(locals(), ["batch", "long-src", "long-tgt", "vocab", "float", "rank"])
    if flaw == "long-src":
        seq_s = MAX_LEN + 1
    if flaw == "long-tgt":
        seq_t = MAX_LEN + 1
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(1, VOCAB + 5 * (flaw == "vocab"), (batch, seq_s), generator=gen)
    src[:, max(seq_s - src_pad, 1) :] = 0  # right padding, at least one real token
    if flaw == "vocab":
        src[0, 0] = VOCAB
    tgt = torch.randint(1, VOCAB, (batch + (flaw == "batch"), seq_t), generator=gen)
    tgt = tgt.to(torch.float32 if flaw == "float" else dtype)
    if flaw == "rank":
        tgt = tgt[0]
    model = tiny()
    with torch.no_grad():
        result = outcome(lambda: model(src, tgt, return_attention), ("src", "tgt"), flaw)
    if result is None:
        return
    logits, maps = result if return_attention else (result, None)
    assert logits.shape == (batch, seq_t, VOCAB) and torch.isfinite(logits).all()
    if maps is not None:
        assert [len(maps.encoder), len(maps.decoder), len(maps.cross)] == [2, 2, 2]
        real = (src != 0)[:, None, None, :]
        for w in maps.encoder:
            check_weights(w, real)
        for w in maps.decoder:
            check_weights(w, torch.ones(seq_t, seq_t, dtype=torch.bool).tril())
        for w in maps.cross:
            check_weights(w, real)


def test_outcome_rejects_an_error_that_names_no_argument_and_a_silent_flaw():
    with pytest.raises(AssertionError, match="does not name an argument"):
        outcome(lambda: math.sqrt(-1), names=("x",))
    assert outcome(lambda: padding_mask([5], max_len=3), names=("max_len",)) is None
    flaw = Flaw(0, ["max_len"])
    flaw.name = "max_len"
    with pytest.raises(AssertionError, match="accepted silently"):
        outcome(lambda: padding_mask([5], max_len=6), names=("max_len",), flaw=flaw)
