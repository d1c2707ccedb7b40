"""Efficient attention: four ways around the n × n score matrix, each checked against full attention.

Full attention (``lib.attention.scaled_dot_product_attention``) scores every query against every key:
``O(n² · d)`` time and an ``n × n`` weight matrix per head. The remedies of the blog post "Deconstructing the
Transformer" (解构Transformer), each a function with the call shape of the book's core, ``f(query, key, value,
...) -> (output, weights or None)``, on tensors ``(batch, heads, seq, d_k)`` (any leading dimensions work, as
long as query, key and value agree on them):

- **sparse, local** — :func:`sliding_window_attention`: each query sees the keys within ±``window``
  positions, plus optional *global* tokens that see and are seen by everything (Longformer, Beltagy et al.
  2020). Computed block by block: ``O(n · w)`` time and memory, exact for its mask
  (:func:`sliding_window_mask`).
- **linear, kernel** — :func:`linear_attention`: softmax's ``exp(q · k)`` replaced by a feature-map kernel
  ``φ(q) · φ(k)``, so that the product can be re-associated, ``φ(Q) (φ(K)ᵀ V)``, and never forms the
  ``n × n`` matrix (Katharopoulos et al. 2020). :func:`linear_attention_quadratic` is the same maths in the
  ``O(n²)`` order, for checking.
- **linear, random features** — :func:`performer_attention`: FAVOR+ positive random features whose kernel
  is, in expectation, exactly softmax's ``exp(q · k / √d_k)`` (Choromanski et al. 2021); an unbiased
  approximation whose error shrinks like ``1/√m`` with the number of features ``m``.
- **hashing** — :func:`lsh_attention`: angular locality-sensitive hashing puts similar vectors into the same
  bucket; positions are sorted by bucket, cut into chunks, and each chunk attends to itself and the chunk
  before it (Reformer, Kitaev et al. 2020). Queries and keys are shared.

Masks have the library's meaning everywhere: ``True`` = this query may attend to this key.

The harness that measures them against sequence length (``lib.cost.scaling_cost``, ``lib.cost.crossover``)
lives in :mod:`lib.cost`, above the models; ``bench/attention_scaling.py`` and the chapter "Efficient
attention" use it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import check_qkv_tensors
from ._checks import positive_int as _positive_int
from .attention import scaled_dot_product_attention

__all__ = [
    "sliding_window_mask",
    "sliding_window_attention",
    "elu_feature_map",
    "linear_attention",
    "linear_attention_quadratic",
    "random_projection",
    "performer_features",
    "performer_attention",
    "lsh_rotations",
    "lsh_hash",
    "lsh_mask",
    "lsh_attention",
]

_SELF_SCORE = -1e5  # Reformer's score for "attend to yourself" when it is masked: used only when nothing else is left


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _check_qkv(query: Tensor, key: Tensor, value: Tensor, self_attention: bool) -> None:
    """Shapes ``(..., seq, d)`` with equal leading dimensions; d_k of query and key, seq of key and value agree."""
    check_qkv_tensors(query, key, value)
    if not (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]):
        raise ValueError(
            "query, key and value must agree on their leading dimensions (batch, heads), got "
            f"{tuple(query.shape[:-2])}, {tuple(key.shape[:-2])} and {tuple(value.shape[:-2])}"
        )
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query and key must have the same d_k (last dimension), got {query.size(-1)} and {key.size(-1)}"
        )
    if key.size(-2) != value.size(-2):
        raise ValueError(f"key and value must have the same length seq_k, got {key.size(-2)} and {value.size(-2)}")
    if self_attention and query.size(-2) != key.size(-2):
        raise ValueError(
            f"this attention needs seq_q == seq_k (self-attention over one sequence), got query of length "
            f"{query.size(-2)} and key of length {key.size(-2)}"
        )
    if query.size(-2) < 1 or key.size(-2) < 1:
        raise ValueError("the sequences must hold at least one position")


def _global_index(global_tokens: Any, seq_len: int, device: torch.device) -> Tensor | None:
    """Sorted unique long tensor of global positions, or None."""
    if global_tokens is None:
        return None
    idx = torch.as_tensor(global_tokens, device=device)
    if idx.dim() == 0:
        idx = idx[None]
    if idx.dim() != 1 or idx.dtype in (torch.bool,) or idx.is_floating_point() or idx.is_complex():
        raise ValueError(f"global_tokens must be a sequence of integer positions, got {global_tokens!r}")
    idx = idx.long()
    if idx.numel() == 0:
        return None
    if (idx < 0).any() or (idx >= seq_len).any():
        raise ValueError(f"global_tokens must be positions in [0, {seq_len}), got {idx.tolist()}")
    if idx.unique().numel() != idx.numel():
        raise ValueError(f"global_tokens must not repeat a position, got {idx.tolist()}")
    return idx.sort().values


# --------------------------------------------------------------------------------------------
# 1. Sliding window (+ global tokens): Longformer
# --------------------------------------------------------------------------------------------


def sliding_window_mask(
    seq_len: int,
    window: int,
    global_tokens: Sequence[int] | Tensor | None = None,
    causal: bool = False,
    device: torch.device | str | None = None,
) -> Tensor:
    """The mask of sliding-window attention: query i may attend to key j when ``|i − j| <= window``.

    Global tokens (Longformer's "global attention") attend to every key and every query attends to them. With
    ``causal=True`` every pair with ``j > i`` is removed as well, global tokens included.

    Args:
        seq_len: n, the number of positions (>= 1).
        window: w, how many positions each side a query sees (>= 1); the band is ``2w + 1`` wide
            (``w + 1`` when causal).
        global_tokens: positions in ``[0, seq_len)`` with global attention (e.g. ``[0]`` for a [CLS] token),
            or None.
        causal: also hide the future (j > i).
        device: where to create the mask.

    Returns:
        ``(seq_len, seq_len)`` bool tensor, ``True`` = may attend; broadcasts against
        ``(batch, heads, seq_len, seq_len)``. Plot it with ``lib.plots.plot_mask``.

    Raises:
        TypeError: seq_len or window is not an int.
        ValueError: seq_len < 1, window < 1, or global positions that are out of range or repeated.

    Source: Beltagy et al. 2020, "Longformer", §3.1 (sliding window, global attention), Fig. 2.
    """
    n = _positive_int(seq_len, "seq_len")
    w = _positive_int(window, "window")
    pos = torch.arange(n, device=device)
    offset = pos[None, :] - pos[:, None]  # (n, n): j - i
    mask = offset.abs() <= w
    glob = _global_index(global_tokens, n, pos.device)
    if glob is not None:
        mask[glob, :] = True
        mask[:, glob] = True
    if causal:
        mask &= offset <= 0
    return mask


def sliding_window_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    window: int,
    global_tokens: Sequence[int] | Tensor | None = None,
    causal: bool = False,
    block_size: int | None = None,
) -> tuple[Tensor, None]:
    """Local attention: each query attends to the keys within ±``window`` positions (plus global tokens).

    Equal to ``scaled_dot_product_attention(query, key, value, sliding_window_mask(n, window, global_tokens,
    causal))``, but without an ``n × n`` matrix. The queries are cut into blocks of ``b`` positions; block ``t``
    (positions ``t·b … t·b + b − 1``) can only see keys ``t·b − w … t·b + b − 1 + w``, a window of ``b + 2w``
    keys taken from the zero-padded keys with ``Tensor.unfold`` (a view, no copy). Each block's ``b × (b + 2w)``
    scores are masked to the band and soft-maxed. Global tokens add ``g`` key columns to every row (the global
    keys; they are removed from the band so that none is counted twice) and their own query rows are full
    attention rows over all keys.

    Cost: ``O(n · (b + 2w + g) · d)`` time and ``O(n · (b + 2w + g))`` memory for the scores, instead of
    ``O(n²)``; with the default ``b`` (about ``w``) that is ``O(n · w)``.

    Args:
        query: ``(batch, heads, n, d_k)``.
        key: ``(batch, heads, n, d_k)`` (self-attention: as many keys as queries).
        value: ``(batch, heads, n, d_v)``.
        window: w >= 1, how many positions each side a query sees. A window of n − 1 or more is full attention.
        global_tokens: positions with global attention, or None.
        causal: hide the future too (each query sees keys ``i − w … i``).
        block_size: queries per block (default ``min(n, max(w, 32))``: blocks of about w, not smaller than 32
            so that the matrix products are not tiny).

    Returns:
        output: ``(batch, heads, n, d_v)``.
        weights: None — the point is never to form the ``n × n`` weights. To look at them, use
        ``scaled_dot_product_attention`` with :func:`sliding_window_mask` on a short sequence.

    Raises:
        TypeError: query, key or value is not a tensor; window or block_size is not an int.
        ValueError: window < 1 or block_size < 1; shape mismatches (leading dimensions, d_k, seq_k, or
            seq_q != seq_k); bad global positions.

    Source: Beltagy et al. 2020, "Longformer: The Long-Document Transformer", §3.1 and §3.2 (the banded
    "sliding chunks" computation); Child et al. 2019 for fixed sparse patterns in general.
    """
    _check_qkv(query, key, value, self_attention=True)
    w = _positive_int(window, "window")
    if block_size is not None:
        _positive_int(block_size, "block_size")
    *lead, n, d_k = query.shape
    d_v = value.size(-1)
    glob = _global_index(global_tokens, n, query.device)
    w = min(w, n - 1)  # a band wider than the sequence changes nothing
    b = min(n, block_size or max(w, 32))
    nb = -(-n // b)  # number of query blocks (ceil)
    pad = nb * b - n
    q = query.reshape(-1, n, d_k)  # (B, n, d_k), B = batch · heads
    k = key.reshape(-1, n, d_k)
    v = value.reshape(-1, n, d_v)
    span = b + 2 * w  # keys a block can see

    # Padded keys: w zeros in front, w + pad behind, so block t sees padded positions t·b ... t·b + span - 1.
    k_win = F.pad(k, (0, 0, w, w + pad)).unfold(1, span, b)  # (B, nb, d_k, span): a view
    v_win = F.pad(v, (0, 0, w, w + pad)).unfold(1, span, b)  # (B, nb, d_v, span)
    q_blk = F.pad(q / math.sqrt(d_k), (0, 0, 0, pad)).view(-1, nb, b, d_k)  # (B, nb, b, d_k), scaled by 1/√d_k
    scores = q_blk @ k_win  # (B, nb, b, span)

    # Key slot s of block t is position j = t·b − w + s; query r of block t is i = t·b + r. The band |j − i| <= w
    # depends only on (r, s): one (b, span) pattern for every block. Which slots hold real (and, with global
    # tokens, non-global) keys depends only on (t, s). Neither needs an (n × span) index tensor.
    rel = torch.arange(span, device=q.device) - w - torch.arange(b, device=q.device).view(b, 1)  # (b, span): j − i
    band = rel.abs() <= w
    if causal:
        band &= rel <= 0
    j = (torch.arange(nb, device=q.device) * b - w).view(nb, 1) + torch.arange(span, device=q.device)  # (nb, span)
    real = (j >= 0) & (j < n)
    if glob is not None:
        is_global = torch.zeros(n, dtype=torch.bool, device=q.device)
        is_global[glob] = True
        real &= ~is_global[j.clamp(0, n - 1)]  # global keys get their own columns below
    allowed = band & real.view(nb, 1, span)  # (nb, b, span) bools
    scores = scores.masked_fill_(~allowed, float("-inf")).view(-1, nb * b, span)  # (B, n_pad, span)
    i = torch.arange(nb * b, device=q.device)  # the queries' positions

    if glob is None:
        weights = torch.softmax(scores, dim=-1).view(-1, nb, b, span)
        out = (weights @ v_win.transpose(-1, -2)).view(-1, nb * b, d_v)  # (B, n_pad, d_v)
    else:
        g_scores = q_blk.view(-1, nb * b, d_k) @ k[:, glob].transpose(-1, -2)  # (B, n_pad, g)
        if causal:
            g_scores = g_scores.masked_fill(glob.view(1, -1) > i.view(-1, 1), float("-inf"))
        weights = torch.softmax(torch.cat([scores, g_scores], dim=-1), dim=-1)  # (B, n_pad, span + g)
        local = weights[..., :span].reshape(-1, nb, b, span)
        out = (local @ v_win.transpose(-1, -2)).view(-1, nb * b, d_v) + weights[..., span:] @ v[:, glob]
    out = out[:, :n]
    if glob is not None:  # global queries: full rows over every key
        full_mask = None
        if causal:
            full_mask = glob.view(-1, 1) >= torch.arange(n, device=q.device)
        out[:, glob] = scaled_dot_product_attention(q[:, glob], k, v, full_mask)[0]
    return out.reshape(*lead, n, d_v), None


# --------------------------------------------------------------------------------------------
# 2. Linear attention: Katharopoulos et al. 2020
# --------------------------------------------------------------------------------------------


def elu_feature_map(x: Tensor) -> Tensor:
    """φ(x) = elu(x) + 1, elementwise: positive, so that φ(q) · φ(k) > 0 can replace exp(q · k).

    Args:
        x: queries or keys of any shape, e.g. ``(batch, heads, seq, d_k)``.

    Returns:
        A tensor of the same shape and dtype, every entry > 0: ``x + 1`` where ``x > 0``, ``exp(x)`` elsewhere.

    Source: Katharopoulos et al. 2020, §3.2.1, Eq. (7).
    """
    return F.elu(x) + 1.0


def _feature_map(feature_map: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if callable(feature_map):
        return feature_map
    if feature_map == "elu":
        return elu_feature_map
    raise ValueError(f"feature_map must be 'elu' or a function (..., d) -> (..., m), got {feature_map!r}")


def kernel_attention(phi_q: Tensor, phi_k: Tensor, value: Tensor, causal: bool, chunk_size: int) -> Tensor:
    """φ(Q) (φ(K)ᵀ V) / φ(Q) (φ(K)ᵀ 1), non-causal or causal, never forming an n × n matrix.

    phi_q (B, n_q, m), phi_k (B, n_k, m), value (B, n_k, d_v) -> (B, n_q, d_v).
    """
    if not causal:
        kv = phi_k.transpose(-1, -2) @ value  # (B, m, d_v): Σ_j φ(k_j) v_jᵀ          O(n m d_v)
        z = phi_k.sum(dim=-2)  # (B, m):      Σ_j φ(k_j) = φ(K)ᵀ 1          O(n m)
        numerator = phi_q @ kv  # (B, n, d_v)                              O(n m d_v)
        denominator = phi_q @ z.unsqueeze(-1)  # (B, n, 1): φ(Q) (φ(K)ᵀ 1)  O(n m)
        return numerator / denominator
    # Causal (Eq. 9-10): S_i = Σ_{j<=i} φ(k_j) v_jᵀ, Z_i = Σ_{j<=i} φ(k_j). Chunk by chunk: the state carried
    # from all earlier chunks (prefix sums over chunks) plus a c × c lower-triangular product inside the chunk.
    B, n, m = phi_q.shape
    d_v = value.size(-1)
    c = min(chunk_size, n)
    nc = -(-n // c)
    pad = nc * c - n
    qc = F.pad(phi_q, (0, 0, 0, pad)).view(B, nc, c, m)  # padded keys are 0: they add nothing
    kc = F.pad(phi_k, (0, 0, 0, pad)).view(B, nc, c, m)
    vc = F.pad(value, (0, 0, 0, pad)).view(B, nc, c, d_v)
    kv = kc.transpose(-1, -2) @ vc  # (B, nc, m, d_v): each chunk's Σ φ(k_j) v_jᵀ
    state = F.pad(kv.cumsum(dim=1), (0, 0, 0, 0, 1, 0))[:, :nc]  # (B, nc, m, d_v): sum over earlier chunks
    z = kc.sum(dim=2)  # (B, nc, m)
    z_state = F.pad(z.cumsum(dim=1), (0, 0, 1, 0))[:, :nc]  # (B, nc, m)
    inside = (qc @ kc.transpose(-1, -2)).tril()  # (B, nc, c, c): φ(q_i)·φ(k_j), j <= i in the chunk
    numerator = qc @ state + inside @ vc  # (B, nc, c, d_v)
    denominator = (qc @ z_state.unsqueeze(-1)).squeeze(-1) + inside.sum(dim=-1)  # (B, nc, c)
    out = numerator / denominator.unsqueeze(-1)
    return out.view(B, nc * c, d_v)[:, :n]


def _kernel_attention_quadratic(phi_q: Tensor, phi_k: Tensor, value: Tensor, causal: bool) -> tuple[Tensor, Tensor]:
    """(φ(Q) φ(K)ᵀ) row-normalised, then times V: the O(n²) order. Returns (output, weights)."""
    a = phi_q @ phi_k.transpose(-1, -2)  # (B, n_q, n_k): the kernel matrix, O(n²)
    if causal:
        a = a.tril()
    weights = a / a.sum(dim=-1, keepdim=True)
    return weights @ value, weights


def linear_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    feature_map: str | Callable[[Tensor], Tensor] = "elu",
    causal: bool = False,
    chunk_size: int = 64,
) -> tuple[Tensor, None]:
    """Linear attention: V'_i = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ) / φ(q_i)ᵀ (Σ_j φ(k_j)), in O(n) time and memory.

    Softmax attention weighs value j by ``exp(q_i · k_j / √d_k)``. Replace that similarity by a kernel
    ``φ(q_i) · φ(k_j)`` and the sum can be re-associated (Eq. 5): ``Σ_j (φ(q_i)ᵀ φ(k_j)) v_j =
    φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ)``. The ``m × d_v`` matrix ``φ(K)ᵀ V`` and the ``m``-vector ``φ(K)ᵀ 1`` are computed
    once, then reused by every query: ``O(n · m · d_v)`` time, no ``n × n`` matrix. Note the denominator: it is
    ``φ(Q) (φ(K)ᵀ 1)``, which is ``O(n · m)``; computing ``φ(Q) φ(K)ᵀ`` first and summing its rows gives the
    same numbers in ``O(n²)`` (:func:`linear_attention_quadratic`).

    Causal (Eq. 9–10): ``S_i = Σ_{j<=i} φ(k_j) v_jᵀ`` and ``Z_i = Σ_{j<=i} φ(k_j)`` are prefix sums. They are
    computed chunk by chunk (``chunk_size`` positions): prefix sums over the chunks carry the state of all
    earlier chunks, and inside a chunk a ``c × c`` lower-triangular product adds the rest. Memory
    ``O(n · (c + m · d_v / c))`` rather than the ``O(n · m · d_v)`` of storing every ``S_i``.

    Args:
        query: ``(batch, heads, n_q, d_k)``.
        key: ``(batch, heads, n_k, d_k)``.
        value: ``(batch, heads, n_k, d_v)``.
        feature_map: ``"elu"`` for φ(x) = elu(x) + 1 (Eq. 7, m = d_k), or a function ``(..., d_k) -> (..., m)``
            whose values are positive (the denominators must not vanish).
        causal: position i sees keys 0..i only (needs n_q == n_k).
        chunk_size: positions per chunk of the causal computation (>= 1).

    Returns:
        output: ``(batch, heads, n_q, d_v)``.
        weights: None (the weights would be the ``n × n`` matrix this avoids; see
        :func:`linear_attention_quadratic`).

    Raises:
        TypeError: query, key or value is not a tensor; chunk_size is not an int.
        ValueError: inputs not floating point or of different dtypes or devices; shape mismatches (leading
            dimensions, d_k, seq_k; seq_q != seq_k when causal); an unknown feature map; chunk_size < 1.

    Source: Katharopoulos et al. 2020, "Transformers are RNNs", §3.2, Eq. (4)–(6) (non-causal), (7) (φ),
    §3.3, Eq. (8)–(10) (causal).
    """
    _check_qkv(query, key, value, self_attention=causal)
    _positive_int(chunk_size, "chunk_size")
    phi = _feature_map(feature_map)
    *lead, n_q, _ = query.shape
    n_k = key.size(-2)
    phi_q = phi(query.reshape(-1, n_q, query.size(-1)))
    phi_k = phi(key.reshape(-1, n_k, key.size(-1)))
    out = kernel_attention(phi_q, phi_k, value.reshape(-1, n_k, value.size(-1)), causal, chunk_size)
    return out.reshape(*lead, n_q, value.size(-1)), None


def linear_attention_quadratic(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    feature_map: str | Callable[[Tensor], Tensor] = "elu",
    causal: bool = False,
) -> tuple[Tensor, Tensor]:
    """Linear attention in the quadratic order: A = φ(Q) φ(K)ᵀ, rows normalised, then A V. O(n²), for checking.

    The same numbers as :func:`linear_attention` (matrix products are associative), computed the expensive
    way: the ``n × n`` kernel matrix first, each row divided by its sum (this row sum is ``φ(Q) φ(K)ᵀ 1``, the
    ``O(n²)`` order of the denominator that "Deconstructing the Transformer" writes), then multiplied by V. It
    also returns the weights, which show what linear attention "attends to".

    Args:
        query, key, value, feature_map, causal: as in :func:`linear_attention`.

    Returns:
        output: ``(batch, heads, n_q, d_v)``.
        weights: ``(batch, heads, n_q, n_k)``, non-negative, rows sum to 1 (zero above the diagonal if causal).

    Raises:
        TypeError: as :func:`linear_attention`.
        ValueError: as :func:`linear_attention`.

    Source: Katharopoulos et al. 2020, Eq. (2)–(4).
    """
    _check_qkv(query, key, value, self_attention=causal)
    phi = _feature_map(feature_map)
    *lead, n_q, _ = query.shape
    n_k = key.size(-2)
    out, weights = _kernel_attention_quadratic(
        phi(query.reshape(-1, n_q, query.size(-1))),
        phi(key.reshape(-1, n_k, key.size(-1))),
        value.reshape(-1, n_k, value.size(-1)),
        causal,
    )
    return out.reshape(*lead, n_q, value.size(-1)), weights.reshape(*lead, n_q, n_k)


# --------------------------------------------------------------------------------------------
# 3. Performer: FAVOR+ positive random features, Choromanski et al. 2021
# --------------------------------------------------------------------------------------------


def random_projection(
    num_features: int, d_k: int, seed: int = 0, orthogonal: bool = True, dtype: torch.dtype = torch.float32
) -> Tensor:
    """The random matrix W of FAVOR+: ``num_features`` rows ω_r, each marginally ω_r ~ N(0, I_{d_k}).

    With ``orthogonal=True`` the rows come in blocks of ``d_k`` exactly orthogonal directions (the Q of the QR
    decomposition of a Gaussian matrix), each row rescaled to the length of an independent Gaussian vector
    (a χ(d_k) draw), so that every row is still N(0, I) but the rows of a block are not redundant; this lowers
    the variance of the estimate (Performer's "ORF"). The last block is cut to fit ``num_features``.

    Args:
        num_features: m >= 1, the number of random features.
        d_k: the width of the queries and keys (>= 1).
        seed: seed of a private ``torch.Generator`` (the global random state is not touched).
        orthogonal: orthogonal blocks (True) or independent rows (False).
        dtype: a floating-point dtype.

    Returns:
        ``(num_features, d_k)`` tensor W.

    Raises:
        TypeError: num_features or d_k is not an int.
        ValueError: num_features < 1 or d_k < 1; a seed that is not an integer; a dtype that is not floating
            point.

    Source: Choromanski et al. 2021, "Rethinking Attention with Performers", §2.4 (orthogonal random features).
    """
    m = _positive_int(num_features, "num_features")
    d = _positive_int(d_k, "d_k")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    return _random_projection(m, d, seed, bool(orthogonal)).to(dtype, copy=True)  # a copy: the cache stays intact


@functools.lru_cache(maxsize=32)
def _random_projection(m: int, d: int, seed: int, orthogonal: bool) -> Tensor:
    """float64 W, cached: attention calls it with the same sizes and seed every time (read-only: callers get a copy)."""
    gen = torch.Generator().manual_seed(seed)
    if not orthogonal:
        return torch.randn(m, d, generator=gen, dtype=torch.float64)
    g = torch.randn(-(-m // d), d, d, generator=gen, dtype=torch.float64)  # one Gaussian matrix per block
    q, r = torch.linalg.qr(g)
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)  # unique decomposition: Haar-distributed
    directions = q.transpose(-1, -2).reshape(-1, d)[:m]  # (m, d): each block's rows are d orthonormal directions
    lengths = torch.randn(m, d, generator=gen, dtype=torch.float64).norm(dim=1, keepdim=True)  # χ(d) draws
    return directions * lengths


def _check_projection(x: Tensor, projection: Tensor) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor (..., d_k), got {type(x).__name__}")
    if not isinstance(projection, Tensor) or projection.dim() != 2:
        raise ValueError(
            f"projection must be a (num_features, d_k) tensor, got {getattr(projection, 'shape', projection)!r}"
        )
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    if x.dim() < 1 or x.size(-1) != projection.size(1):
        raise ValueError(
            f"x must have d_k = {projection.size(1)} features in its last dimension (the projection's columns), "
            f"got shape {tuple(x.shape)}"
        )


def performer_features(x: Tensor, projection: Tensor) -> Tensor:
    """FAVOR+ positive random features: φ(x) = exp(W x − ‖x‖² / 2) / √m.

    For ω ~ N(0, I): ``E[exp(ωᵀx − ‖x‖²/2) · exp(ωᵀy − ‖y‖²/2)] = exp(xᵀy)`` (Lemma 1), so
    ``φ(x) · φ(y)`` is an unbiased estimate of ``exp(xᵀy)`` from m samples, and every feature is positive,
    unlike sin/cos random features (the denominators of attention stay positive). Feed it queries and keys
    scaled by ``d_k^(−1/4)`` to estimate softmax's ``exp(q · k / √d_k)``.

    Args:
        x: ``(..., d_k)``.
        projection: W, ``(m, d_k)``, e.g. from :func:`random_projection`.

    Returns:
        ``(..., m)`` positive features.

    Raises:
        TypeError: x is not a tensor.
        ValueError: projection not 2-D; x not floating point, or its last dimension is not the projection's d_k.

    Source: Choromanski et al. 2021, §2.3, Lemma 1 and the positive random features SM⁺_m(x, y).
    """
    _check_projection(x, projection)
    m = projection.size(0)
    w = projection.to(x.dtype)
    return torch.exp(x @ w.T - (x * x).sum(dim=-1, keepdim=True) / 2) / math.sqrt(m)


def performer_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    num_features: int,
    seed: int = 0,
    orthogonal: bool = True,
    causal: bool = False,
    chunk_size: int = 64,
) -> tuple[Tensor, None]:
    """Performer attention (FAVOR+): softmax(Q Kᵀ / √d_k) V approximated in O(n · m · d) with random features.

    Queries and keys are scaled by ``d_k^(−1/4)`` (so that their dot product carries softmax's ``1/√d_k``),
    mapped by :func:`performer_features` with ``num_features`` rows of :func:`random_projection`, and the
    result goes through linear attention's ``φ(Q) (φ(K)ᵀ V) / φ(Q) (φ(K)ᵀ 1)`` (causal: its prefix sums).
    Numerically, each query's features are divided by their largest value and (non-causal) all keys' features
    by the largest key feature: constants that cancel between numerator and denominator, which keep ``exp``
    from overflowing. (Causal attention leaves the keys unscaled, so that no future key changes a past output.)

    The estimate of each weight's numerator is unbiased; the ratio is not exactly, but its error shrinks like
    ``1/√m``. ``m`` of the order ``d_k log d_k`` is the paper's suggestion.

    Args:
        query: ``(batch, heads, n_q, d_k)``.
        key: ``(batch, heads, n_k, d_k)``.
        value: ``(batch, heads, n_k, d_v)``.
        num_features: m >= 1.
        seed: seed of the random projection (the same for every batch and head).
        orthogonal: orthogonal random features (lower variance) or independent ones.
        causal: position i sees keys 0..i only (needs n_q == n_k).
        chunk_size: positions per chunk of the causal prefix sums.

    Returns:
        output: ``(batch, heads, n_q, d_v)``.
        weights: None.

    Raises:
        TypeError: query, key or value is not a tensor; num_features or chunk_size is not an int.
        ValueError: num_features < 1; chunk_size < 1; inputs not floating point or of different dtypes; shape
            mismatches.

    Source: Choromanski et al. 2021, "Rethinking Attention with Performers", §2.2 (the re-associated product;
    unidirectional attention by prefix sums), §2.3 (Lemma 1, positive random features), §2.4 (orthogonal features).
    """
    _check_qkv(query, key, value, self_attention=causal)
    m = _positive_int(num_features, "num_features")
    _positive_int(chunk_size, "chunk_size")
    *lead, n_q, d_k = query.shape
    n_k = key.size(-2)
    w = random_projection(m, d_k, seed=seed, orthogonal=orthogonal, dtype=query.dtype).to(query.device)
    scale = d_k**-0.25
    q = query.reshape(-1, n_q, d_k) * scale  # (B, n_q, d_k)
    k = key.reshape(-1, n_k, d_k) * scale
    # log φ without the 1/√m (it cancels): ωᵀx − ‖x‖²/2
    log_q = q @ w.T - (q * q).sum(dim=-1, keepdim=True) / 2  # (B, n_q, m)
    log_k = k @ w.T - (k * k).sum(dim=-1, keepdim=True) / 2  # (B, n_k, m)
    phi_q = torch.exp(log_q - log_q.amax(dim=-1, keepdim=True))
    if causal:
        phi_k = torch.exp(log_k)
    else:
        phi_k = torch.exp(log_k - log_k.amax(dim=(-2, -1), keepdim=True))
    out = kernel_attention(phi_q, phi_k, value.reshape(-1, n_k, value.size(-1)), causal, chunk_size)
    return out.reshape(*lead, n_q, value.size(-1)), None


# --------------------------------------------------------------------------------------------
# 4. LSH attention: Reformer, Kitaev et al. 2020
# --------------------------------------------------------------------------------------------


def _check_buckets(num_buckets: Any, num_hashes: Any) -> None:
    _positive_int(num_buckets, "num_buckets")
    _positive_int(num_hashes, "num_hashes")
    if num_buckets > 1 and num_buckets % 2:
        raise ValueError(
            f"num_buckets must be 1 or even (angular LSH takes argmax over [xR; −xR], 2 buckets per random "
            f"direction), got {num_buckets}"
        )


def lsh_rotations(
    d_k: int, num_buckets: int, num_hashes: int = 1, seed: int = 0, dtype: torch.dtype = torch.float32
) -> Tensor:
    """The random matrices R of angular LSH, one per hash round: ``(num_hashes, d_k, max(num_buckets // 2, 1))``.

    Entries are independent N(0, 1) from a private generator seeded with ``seed``.

    Args:
        d_k: the width of the shared query/key vectors that will be hashed (>= 1).
        num_buckets: buckets per hash round, 1 or even; each random direction gives two buckets (its sign).
        num_hashes: independent hash rounds (>= 1).
        seed: seed of the private ``torch.Generator``; the same seed gives the same rotations.
        dtype: dtype of the result (drawn in float64, then cast).

    Returns:
        ``(num_hashes, d_k, max(num_buckets // 2, 1))`` tensor of ``dtype``, one matrix R per round, for
        :func:`lsh_hash`.

    Raises:
        TypeError: d_k, num_buckets, num_hashes or seed is not an int.
        ValueError: d_k < 1, num_hashes < 1, num_buckets < 1 or odd and > 1.

    Source: Kitaev et al. 2020, §2 ("Hashing attention"), after Andoni et al. 2015.
    """
    _positive_int(d_k, "d_k")
    _check_buckets(num_buckets, num_hashes)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(num_hashes, d_k, max(num_buckets // 2, 1), generator=gen, dtype=torch.float64).to(dtype)


def lsh_hash(x: Tensor, rotations: Tensor, num_buckets: int | None = None) -> Tensor:
    """Angular LSH: h(x) = argmax([x R ; −x R]), one bucket in ``0 … num_buckets − 1`` per vector and round.

    Two vectors at a small angle are likely to land in the same bucket; the length of x does not matter.

    Args:
        x: ``(..., seq, d_k)``.
        rotations: ``(num_hashes, d_k, num_buckets // 2)`` from :func:`lsh_rotations`.
        num_buckets: default ``2 · rotations.size(-1)``; pass 1 to put every vector into bucket 0.

    Returns:
        ``(..., num_hashes, seq)`` long tensor of bucket ids.

    Raises:
        TypeError: num_buckets is not an int.
        ValueError: rotations not 3-D or of another d_k than x; num_buckets that does not match the rotations.

    Source: Kitaev et al. 2020, §2, the hash h(x) = argmax([xR; −xR]).
    """
    if not isinstance(rotations, Tensor) or rotations.dim() != 3:
        raise ValueError("rotations must be a (num_hashes, d_k, num_buckets // 2) tensor from lsh_rotations")
    if not isinstance(x, Tensor) or x.dim() < 2 or x.size(-1) != rotations.size(1):
        raise ValueError(f"x must be (..., seq, d_k={rotations.size(1)}), got shape {tuple(getattr(x, 'shape', ()))}")
    if num_buckets is None:
        num_buckets = 2 * rotations.size(-1)
    _check_buckets(num_buckets, rotations.size(0))
    if num_buckets > 1 and rotations.size(-1) != num_buckets // 2:
        raise ValueError(
            f"num_buckets={num_buckets} needs rotations with {num_buckets // 2} columns, got {rotations.size(-1)}"
        )
    if num_buckets == 1:
        return torch.zeros(*x.shape[:-2], rotations.size(0), x.size(-2), dtype=torch.long, device=x.device)
    projected = torch.einsum("...sd,hdb->...hsb", x, rotations.to(x.dtype))  # (..., hashes, seq, nb/2)
    return torch.cat([projected, -projected], dim=-1).argmax(dim=-1)


def _lsh_chunking(qk: Tensor, num_buckets: int, num_hashes: int, bucket_size: int | None, seed: int):
    """Buckets, sort order and chunk length. qk: (B, n, d). Returns (order (B, h, n), chunk c, chunks nc)."""
    n = qk.size(-2)
    if bucket_size is None:
        if n % num_buckets:
            raise ValueError(
                f"the sequence length ({n}) must be divisible by num_buckets ({num_buckets}): the chunks have "
                f"n / num_buckets positions (or pass bucket_size)"
            )
        c = n // num_buckets
    else:
        c = _positive_int(bucket_size, "bucket_size")
        if n % c:
            raise ValueError(f"the sequence length ({n}) must be divisible by bucket_size ({c}), the chunk length")
    rotations = lsh_rotations(qk.size(-1), num_buckets, num_hashes, seed, dtype=qk.dtype).to(qk.device)
    buckets = lsh_hash(qk, rotations, num_buckets)  # (B, h, n)
    pos = torch.arange(n, device=qk.device)
    order = (buckets * n + pos).argsort(dim=-1)  # sort by bucket, then by position (stable ordering)
    return order, c, n // c


def lsh_mask(
    query: Tensor,
    num_buckets: int,
    num_hashes: int = 1,
    bucket_size: int | None = None,
    seed: int = 0,
    causal: bool = False,
) -> Tensor:
    """Which keys each query sees in :func:`lsh_attention`: the union over hash rounds of its chunk and the one before.

    Args:
        query: ``(..., n, d_k)``, the shared queries/keys.
        num_buckets, num_hashes, bucket_size, seed, causal: as in :func:`lsh_attention`.

    Returns:
        ``(..., n, n)`` bool tensor, ``True`` = may attend (``O(n²)``: for plotting and checking).

    Raises:
        TypeError: as :func:`lsh_attention`.
        ValueError: as :func:`lsh_attention`.

    Source: Kitaev et al. 2020, §2, the sets P̃_i (Eq. 5 and Fig. 2).
    """
    if not isinstance(query, Tensor) or query.dim() < 2:
        raise ValueError("query must be a tensor (..., seq, d_k)")
    _check_buckets(num_buckets, num_hashes)
    *lead, n, d = query.shape
    order, c, nc = _lsh_chunking(query.reshape(-1, n, d), num_buckets, num_hashes, bucket_size, seed)
    chunk = torch.empty_like(order)
    chunk.scatter_(-1, order, torch.arange(n, device=query.device).expand_as(order) // c)  # chunk of each position
    diff = (chunk[..., None, :] - chunk[..., :, None]) % nc  # (B, h, n, n): chunk(j) − chunk(i) mod nc
    seen = (diff == 0) | (diff == nc - 1) if nc > 1 else torch.ones_like(diff, dtype=torch.bool)
    mask = seen.any(dim=1)  # union over the rounds
    if causal:
        mask &= torch.ones(n, n, dtype=torch.bool, device=query.device).tril()
    return mask.reshape(*lead, n, n)


def lsh_attention(
    query: Tensor,
    key: Tensor | None,
    value: Tensor,
    num_buckets: int,
    num_hashes: int = 1,
    bucket_size: int | None = None,
    seed: int = 0,
    causal: bool = False,
    mask_self: bool = False,
) -> tuple[Tensor, None]:
    """Reformer's LSH attention: hash, sort by bucket, attend within chunks (and one chunk back), unsort.

    **Shared QK.** Reformer uses one projection for queries and keys: the keys are the queries, normalised to
    unit length, ``k_j = q_j / ‖q_j‖`` (§2). So a query and "its" key always share a bucket, and the sorted
    queries and keys line up. This function does the same: pass ``key=None`` or ``key=query``; the keys
    attended to are ``query / ‖query‖``.

    **Algorithm (per hash round).** (1) Angular LSH of every position (:func:`lsh_hash`, ``num_buckets``
    buckets, random rotations from ``seed``); (2) sort the positions by (bucket, position); (3) cut the sorted
    sequence into chunks of ``c`` positions (``c = bucket_size``, default ``n / num_buckets``, the average bucket
    size); (4) each chunk's queries attend to the keys of their own chunk and of the chunk before it (the
    first chunk looks at the last, as in Reformer; with a single chunk only to itself), with the ``c × 2c``
    scores of ordinary scaled dot-product attention; (5) scatter the outputs back to the original order.
    Keys in the neighbouring chunk are attended even if their bucket differs (Reformer's set P̃_i).

    **Several rounds** (``num_hashes > 1``) are combined as in the paper: each round's output is weighted by
    ``exp(logsumexp of its scores − logsumexp over all rounds)``, and a key that a query meets in r rounds has
    ``log r`` subtracted from its score, so it counts once. The result is exactly softmax attention over the
    union of the rounds' key sets (:func:`lsh_mask`).

    Cost: ``O(h · n · c · d)`` time for the scores plus ``O(h · n log n)`` for the sort, ``O(h · n · c)``
    memory; with c fixed (num_buckets growing with n) that is ``O(n log n)``.

    Args:
        query: ``(batch, heads, n, d_k)``, the shared queries/keys.
        key: None or ``query`` itself (shared QK); anything else raises.
        value: ``(batch, heads, n, d_v)``.
        num_buckets: 1 (everything in one bucket: full attention with shared QK) or an even number.
        num_hashes: rounds of hashing (>= 1).
        bucket_size: the chunk length c; must divide n. Default n / num_buckets (then num_buckets must divide n).
        seed: seed of the random rotations (the same for every batch and head).
        causal: hide keys after the query's position (Reformer's decoder).
        mask_self: Reformer's rule that a token does not attend to itself (its own key is its query's
            direction, so it would score high) unless no other key is available; the self score becomes −1e5.
            Off by default, so that one bucket gives plain attention.

    Returns:
        output: ``(batch, heads, n, d_v)``.
        weights: None (build them with :func:`lsh_mask` and ``scaled_dot_product_attention`` on short inputs).

    Raises:
        TypeError: query or value is not a tensor; num_buckets, num_hashes or seed is not an int.
        ValueError: num_buckets < 1 or odd and > 1; num_hashes < 1; n not divisible by the chunk length;
            a key other than None or the query; shape mismatches.

    Source: Kitaev et al. 2020, "Reformer: The Efficient Transformer", §2 (LSH attention, Eq. 2–5, Fig. 2,
    multi-round hashing, shared-QK, causal masking and the masking of attention to oneself).
    """
    if (
        key is not None
        and key is not query
        and not (
            isinstance(key, Tensor)
            and isinstance(query, Tensor)
            and key.shape == query.shape
            and torch.equal(key, query)
        )
    ):
        raise ValueError(
            "lsh_attention shares queries and keys (Reformer's shared-QK attention): pass key=None "
            "or key=query; the keys attended to are query / ||query||"
        )
    _check_qkv(query, query, value, self_attention=True)
    _check_buckets(num_buckets, num_hashes)
    *lead, n, d = query.shape
    d_v = value.size(-1)
    q = query.reshape(-1, n, d)  # (B, n, d)
    v = value.reshape(-1, n, d_v)
    B, h = q.size(0), num_hashes
    order, c, nc = _lsh_chunking(q, num_buckets, num_hashes, bucket_size, seed)  # order: (B, h, n)
    k = q / q.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # shared keys: unit length

    def gather(x: Tensor) -> Tensor:  # (B, n, f) -> (B, h, n, f) in each round's sorted order
        return x.unsqueeze(1).expand(B, h, n, x.size(-1)).gather(2, order.unsqueeze(-1).expand(B, h, n, x.size(-1)))

    def with_previous(x: Tensor) -> Tensor:  # (B, h, nc, c, ...) -> (B, h, nc, 2c, ...): own chunk, then the one before
        return x if nc == 1 else torch.cat([x, x.roll(1, dims=2)], dim=3)

    sq = gather(q).view(B, h, nc, c, d)  # sorted queries
    sk = with_previous(gather(k).view(B, h, nc, c, d))  # (B, h, nc, keys, d)
    sv = with_previous(gather(v).view(B, h, nc, c, d_v))
    pos_q = order.view(B, h, nc, c)  # original positions of the sorted queries
    pos_k = with_previous(pos_q)  # ... and of the keys they see
    scores = sq @ sk.transpose(-1, -2) / math.sqrt(d)  # (B, h, nc, c, keys)

    if h > 1:  # how many rounds put key j into query i's window: subtract log(count) so that it counts once
        chunk_of = torch.empty_like(order)
        chunk_of.scatter_(-1, order, torch.arange(n, device=q.device).expand_as(order) // c)  # (B, h, n)
        counts = torch.zeros_like(scores)
        for r in range(h):
            ci = chunk_of[:, r].gather(1, pos_q.reshape(B, -1)).view(B, h, nc, c, 1)
            cj = chunk_of[:, r].gather(1, pos_k.reshape(B, -1)).view(B, h, nc, 1, -1)
            diff = (cj - ci) % nc
            counts += ((diff == 0) | (diff == nc - 1)).to(scores.dtype) if nc > 1 else 1.0
        scores = scores - counts.log()
    if causal:
        scores = scores.masked_fill(pos_k.unsqueeze(-2) > pos_q.unsqueeze(-1), float("-inf"))
    if mask_self:
        scores = scores.masked_fill(pos_k.unsqueeze(-2) == pos_q.unsqueeze(-1), _SELF_SCORE)

    lse = scores.logsumexp(dim=-1, keepdim=True)  # (B, h, nc, c, 1): log of each round's softmax denominator
    out = torch.exp(scores - lse) @ sv  # (B, h, nc, c, d_v): each round's attention output, sorted order
    # back to the original order
    unsorted = torch.empty(B, h, n, d_v, dtype=out.dtype, device=out.device)
    unsorted.scatter_(2, order.unsqueeze(-1).expand(B, h, n, d_v), out.view(B, h, n, d_v))
    lse_unsorted = torch.empty(B, h, n, dtype=lse.dtype, device=lse.device)
    lse_unsorted.scatter_(2, order, lse.view(B, h, n))
    round_weight = torch.softmax(lse_unsorted, dim=1)  # exp(z_r − logsumexp_r z_r)
    result = (round_weight.unsqueeze(-1) * unsorted).sum(dim=1)  # (B, n, d_v)
    return result.reshape(*lead, n, d_v), None
