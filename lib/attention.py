"""Scaled dot-product attention, multi-head attention and the two masks.

Every attention module in the book calls :func:`scaled_dot_product_attention`, the single core that
returns both the output and the attention weights.  Masks have one meaning everywhere in ``lib``:
``True`` = this query may attend to this key; ``False`` = blocked (the weight becomes exactly 0).

Source: Vaswani et al. (2017), "Attention Is All You Need", §3.2, Eq. (1) and §3.2.2.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_int as _check_int
from ._checks import check_qkv_tensors
from .positional import alibi_bias, apply_rotary

__all__ = [
    "scaled_dot_product_attention",
    "MultiHeadAttention",
    "GroupedQueryAttention",
    "RotaryMultiHeadAttention",
    "ALiBiMultiHeadAttention",
    "causal_mask",
    "padding_mask",
]


def _check_probability(value: object, name: str, upper: float = 1.0) -> None:
    """A dropout probability: a real number in [0, upper] (NaN fails the range check)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float in [0, {upper:g}], got {value!r} ({type(value).__name__})")
    if not 0.0 <= value <= upper:
        raise ValueError(f"{name} must be in [0, {upper:g}], got {value}")


def _check_heads(d_model: int, num_heads: int) -> None:
    """num_heads divides d_model: each head gets d_k = d_model / num_heads features."""
    if d_model % num_heads != 0:
        raise ValueError(
            f"d_model ({d_model}) must be divisible by num_heads ({num_heads}): "
            f"each head gets d_k = d_model / num_heads features"
        )


def _check_qkv(query: Tensor, key: Tensor, value: Tensor) -> None:
    """Query, key and value: tensors of one floating dtype and device, ``(..., seq, d)``, whose sizes fit."""
    check_qkv_tensors(query, key, value)
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query and key must have the same d_k (last dimension), got {query.size(-1)} and {key.size(-1)}"
        )
    if key.size(-2) != value.size(-2):
        raise ValueError(f"key and value must have the same length seq_k, got {key.size(-2)} and {value.size(-2)}")
    try:
        torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "query, key and value must agree on their leading dimensions (batch, heads), got "
            f"{tuple(query.shape[:-2])}, {tuple(key.shape[:-2])} and {tuple(value.shape[:-2])}"
        ) from None


def _check_mask(mask: Tensor, scores_shape: torch.Size) -> None:
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a bool torch.Tensor (True = may attend), got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}")
    try:
        shape = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        shape = None
    if shape != scores_shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the attention scores' shape "
            f"{tuple(scores_shape)} = (batch, heads, seq_q, seq_k)"
        )


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, returning the output and the weights.

    Args:
        query: ``(batch, heads, seq_q, d_k)``. Any number of leading dimensions works, as long as
            query, key and value agree on them.
        key: ``(batch, heads, seq_k, d_k)``.
        value: ``(batch, heads, seq_k, d_v)``.
        mask: optional bool tensor broadcastable to ``(batch, heads, seq_q, seq_k)``;
            ``True`` = may attend. Blocked keys get weight exactly 0. A query row with no allowed key
            gets all-zero weights (and a zero output) instead of NaN.
        dropout_p: dropout probability applied to the weights (use 0 at evaluation time).

    Returns:
        output: ``(batch, heads, seq_q, d_v)``.
        weights: ``(batch, heads, seq_q, seq_k)``; non-negative, rows sum to 1 (before dropout). Without
            autograd (``torch.no_grad()``, or inputs that do not require grad) the softmax is written over the
            scores, so the call holds one ``(seq_q, seq_k)`` matrix per head, not two.

    Raises:
        TypeError: query, key, value or mask is not a tensor; dropout_p is not a number.
        ValueError: fewer than 2 dimensions; not floating point, or of different dtypes or devices; query and key
            disagree on d_k; key and value disagree on seq_k; leading dimensions that do not broadcast; the mask
            is not bool or does not broadcast to the scores' shape; dropout_p outside [0, 1].

    Source: Vaswani et al. 2017, §3.2.1, Eq. (1).
    """
    _check_qkv(query, key, value)
    _check_probability(dropout_p, "dropout_p")

    d_k = query.size(-1)
    # (Q / √d_k) Kᵀ = Q Kᵀ / √d_k: scaling the queries divides seq_q · d_k numbers instead of seq_q · seq_k
    # scores (and writes no second (seq_q, seq_k) tensor).
    scores = (query / math.sqrt(d_k)) @ key.transpose(-2, -1)  # (batch, heads, seq_q, seq_k)
    # Without autograd nothing needs the scores once the softmax has read them, so the mask and the softmax
    # overwrite them in place: one (seq_q, seq_k) tensor is alive instead of two, as in torch's own fast path.
    # With autograd the softmax keeps its output for the backward pass, and each step writes a new tensor.
    in_place = not scores.requires_grad
    blocked = None
    if mask is not None:
        _check_mask(mask, scores.shape)
        blocked = ~mask
        scores = scores.masked_fill_(blocked, float("-inf")) if in_place else scores.masked_fill(blocked, float("-inf"))
    weights = torch.softmax(scores, dim=-1, out=scores) if in_place else torch.softmax(scores, dim=-1)
    if blocked is not None:
        # exp(-inf) is already 0; this only turns rows with no allowed key from NaN into zeros.
        weights = weights.masked_fill_(blocked, 0.0) if in_place else weights.masked_fill(blocked, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> Tensor:
    """Lower-triangular mask: position t may attend to positions 0..t, never to the future.

    Args:
        seq_len: number of positions (> 0).
        device: where to create the mask.

    Returns:
        ``(seq_len, seq_len)`` bool tensor, ``True`` = may attend; broadcasts against
        ``(batch, heads, seq_len, seq_len)``.

    Raises:
        TypeError: seq_len is not an int.
        ValueError: seq_len < 1.

    Source: Vaswani et al. 2017, §3.2.3 ("masking out ... all values which correspond to illegal
    connections").
    """
    _check_int(seq_len, "seq_len", 1)
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def padding_mask(
    lengths_or_tokens: Tensor | list[int], pad_id: int | None = None, max_len: int | None = None
) -> Tensor:
    """Key mask that hides padding: ``True`` for real tokens, ``False`` for padding.

    Args:
        lengths_or_tokens: either token ids ``(batch, seq_len)`` (then ``pad_id`` is required) or
            the true lengths ``(batch,)`` as a tensor or list of ints.
        pad_id: the padding token id, when token ids are given.
        max_len: with lengths: the padded length (default: the longest length).

    Returns:
        ``(batch, 1, 1, seq_len)`` bool tensor, ``True`` = may attend; broadcasts against the scores
        ``(batch, heads, seq_q, seq_len)``.

    Raises:
        TypeError: ``lengths_or_tokens`` is neither a tensor nor a list of ints; ``pad_id`` or ``max_len`` is not
            an int.
        ValueError: token ids without ``pad_id``; ids or lengths that are not integers; lengths that are negative
            or exceed ``max_len``; a tensor that is neither 1-D (lengths) nor 2-D (tokens).

    Source: Vaswani et al. 2017, §3.2.3; padding masks as in Klein et al. 2017 (OpenNMT).
    """
    if isinstance(lengths_or_tokens, Tensor):
        x = lengths_or_tokens
    elif isinstance(lengths_or_tokens, (list, tuple)):
        try:
            x = torch.as_tensor(lengths_or_tokens)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"lengths_or_tokens must be a tensor or a list of ints: {err}") from None
    else:
        raise TypeError(f"lengths_or_tokens must be a tensor or a list of ints, got {type(lengths_or_tokens).__name__}")
    if x.dtype == torch.bool or x.is_floating_point() or x.is_complex():
        raise ValueError(f"lengths_or_tokens must hold integers (token ids or lengths), got dtype {x.dtype}")
    if x.dim() == 2:
        if pad_id is None:
            raise ValueError("padding_mask got token ids (batch, seq_len) but no pad_id")
        keep = x != _check_int(pad_id, "pad_id")
    elif x.dim() == 1:
        if (x < 0).any():
            raise ValueError(f"lengths must be non-negative, got {x.tolist()}")
        longest = int(x.max()) if x.numel() else 0
        max_len = longest if max_len is None else _check_int(max_len, "max_len", 0)
        if longest > max_len:
            raise ValueError(f"a length ({longest}) exceeds max_len ({max_len})")
        keep = torch.arange(max_len, device=x.device)[None, :] < x[:, None]
    else:
        raise ValueError(
            f"lengths_or_tokens must be token ids (batch, seq_len) or lengths (batch,), got shape {tuple(x.shape)}"
        )
    return keep[:, None, None, :]


@dataclass
class KeyValue:
    """Projected keys and values, split into heads: each ``(batch, heads, seq_k, d_k)``."""

    key: Tensor
    value: Tensor


def _attend_heads(
    q: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, dropout_p: float, fused: bool
) -> tuple[Tensor, Tensor | None]:
    """Attention over projected heads ``(batch, heads, seq, d_k)``: torch's fused kernel (no weights) if ``fused``."""
    if not fused:
        return scaled_dot_product_attention(q, key, value, mask, dropout_p=dropout_p)
    _check_qkv(q, key, value)
    if mask is not None:
        _check_mask(mask, torch.Size((*q.shape[:-1], key.size(-2))))
    return F.scaled_dot_product_attention(q, key, value, attn_mask=mask, dropout_p=dropout_p), None


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The h heads are computed at once: one ``d_model × d_model`` projection per Q, K, V whose output
    is split into ``num_heads`` slices of ``d_k = d_model / num_heads`` features.

    Args:
        d_model: model width.
        num_heads: number of heads h; must divide d_model.
        dropout: dropout on the attention weights (training only).
        bias: whether the four projections have biases.
        fused: when True and no weights are requested, call torch's fused
            ``F.scaled_dot_product_attention`` (same maths, faster, no weights returned).

    Raises:
        TypeError: d_model or num_heads is not an int; dropout is not a number.
        ValueError: d_model not divisible by num_heads; non-positive sizes; dropout outside [0, 1].

    Source: Vaswani et al. 2017, §3.2.2.
    """

    def __init__(
        self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True, fused: bool = False
    ) -> None:
        super().__init__()
        _check_int(d_model, "d_model")
        _check_int(num_heads, "num_heads")
        _check_probability(dropout, "dropout")
        if d_model < 1 or num_heads < 1:
            raise ValueError(f"d_model and num_heads must be positive, got {d_model} and {num_heads}")
        _check_heads(d_model, num_heads)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.dropout = dropout
        self.fused = fused
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def _check(self, x: Tensor, name: str, kv: KeyValue | None = None) -> None:
        """``x`` is a floating ``(batch, seq, d_model)`` tensor; with ``kv``, of the keys' and values' batch."""
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor (batch, seq, d_model), got {type(x).__name__}")
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(f"{name} must have shape (batch, seq, d_model={self.d_model}), got {tuple(x.shape)}")
        if not x.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
        if kv is not None and kv.key.size(0) != x.size(0):
            raise ValueError(
                f"{name} has batch size {x.size(0)} but the key and value have {kv.key.size(0)}: "
                "every query sentence needs its own keys and values"
            )

    def _check_key_value(self, key: Tensor, value: Tensor) -> None:
        """``key`` and ``value`` are floating ``(batch, seq_k, d_model)`` tensors of the same batch and length."""
        self._check(key, "key")
        self._check(value, "value")
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(
                f"key and value must have the same (batch, seq_k), got {tuple(key.shape[:2])} and "
                f"{tuple(value.shape[:2])}"
            )

    def split_heads(self, x: Tensor) -> Tensor:
        """Split the model width into heads: ``(batch, seq, d_model)`` → ``(batch, heads, seq, d_k)``.

        Args:
            x: ``(batch, seq, d_model)``, a projection's output.

        Returns:
            ``(batch, heads, seq, d_k)`` with ``d_k = d_model / heads``; head i holds features
            ``i·d_k .. (i+1)·d_k − 1``.
        """
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.num_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, x: Tensor) -> Tensor:
        """Concatenate the heads again: ``(batch, heads, seq, d_k)`` → ``(batch, seq, d_model)``.

        Args:
            x: ``(batch, heads, seq, d_k)``, the heads' outputs.

        Returns:
            ``(batch, seq, d_model)``: Concat(head_1, ..., head_h), before the output projection W^O.
        """
        batch, _, seq, _ = x.shape
        return x.transpose(1, 2).reshape(batch, seq, self.d_model)

    def project_key_value(self, key: Tensor, value: Tensor) -> KeyValue:
        """Project and split keys and values; reused across decoding steps (the key/value cache).

        Args:
            key: ``(batch, seq_k, d_model)``.
            value: ``(batch, seq_k, d_model)``.

        Returns:
            :class:`KeyValue` with key and value of shape ``(batch, heads, seq_k, d_k)``.

        Raises:
            TypeError: key or value is not a tensor.
            ValueError: wrong shapes or dtypes, or key and value of different lengths.
        """
        self._check_key_value(key, value)
        return KeyValue(self.split_heads(self.w_k(key)), self.split_heads(self.w_v(value)))

    def attend(
        self, query: Tensor, kv: KeyValue, mask: Tensor | None = None, return_attention: bool = True
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to keys and values already projected by :meth:`project_key_value`.

        Args:
            query: ``(batch, seq_q, d_model)``, not yet projected (W^Q is applied here).
            kv: :class:`KeyValue` with key and value of shape ``(batch, heads, seq_k, d_k)``.
            mask: optional bool tensor broadcastable to ``(batch, heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: return the weights; ``False`` lets a module built with ``fused=True`` call
                torch's fused kernel, which returns none.

        Returns:
            output: ``(batch, seq_q, d_model)``, after the output projection W^O.
            weights: ``(batch, heads, seq_q, seq_k)`` (rows sum to 1), or None when the fused kernel ran.

        Raises:
            TypeError: query or mask is not a tensor.
            ValueError: query not of shape ``(batch, seq_q, d_model)`` or of another batch size than the keys;
                a mask that is not bool or does not broadcast to the scores' shape.

        Source: Vaswani et al. 2017, §3.2.2.
        """
        self._check(query, "query", kv)
        q = self.split_heads(self.w_q(query))  # (batch, heads, seq_q, d_k)
        p = self.dropout if self.training else 0.0
        if self.fused and not return_attention:
            if mask is not None:
                _check_mask(mask, torch.Size((*q.shape[:-1], kv.key.size(-2))))
            out = F.scaled_dot_product_attention(q, kv.key, kv.value, attn_mask=mask, dropout_p=p)
            weights = None
        else:
            out, weights = scaled_dot_product_attention(q, kv.key, kv.value, mask, dropout_p=p)
        return self.w_o(self.merge_heads(out)), weights

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        return_attention: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        """Multi-head attention of ``query`` over ``key``/``value``.

        Args:
            query: ``(batch, seq_q, d_model)``.
            key: ``(batch, seq_k, d_model)``.
            value: ``(batch, seq_k, d_model)``.
            mask: bool, broadcastable to ``(batch, heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: return the weights (default True, as ``torch.nn.MultiheadAttention``'s
                ``need_weights``); ``False`` allows the fused kernel when the module was built with ``fused``.

        Returns:
            output: ``(batch, seq_q, d_model)``.
            weights: ``(batch, heads, seq_q, seq_k)`` (rows sum to 1), or None when not needed
            and the fused kernel ran.

        Raises:
            ValueError: wrong shapes (last dimension not d_model, key/value lengths differ) or a mask
                that does not broadcast.
        """
        return self.attend(query, self.project_key_value(key, value), mask, return_attention)


class GroupedQueryAttention(nn.Module):
    """Grouped-query attention: h query heads share ``num_kv_heads`` key/value heads, h / num_kv_heads per group.

    Query head i reads key/value head ``i // (h / num_kv_heads)``. With ``num_kv_heads == num_heads`` this is
    :class:`MultiHeadAttention`; with ``num_kv_heads == 1`` it is multi-query attention. Keys and values shrink
    by the factor ``num_heads / num_kv_heads``, and so does the key/value cache when decoding.

    The call signature and return values are :class:`MultiHeadAttention`'s (``forward``, ``project_key_value``,
    ``attend``); two more steps let a model rotate queries and keys (RoPE) between projection and attention:
    :meth:`project_query` and :meth:`attend_heads`.

    Args:
        d_model: model width.
        num_heads: query heads h; must divide d_model (d_k = d_model / h).
        num_kv_heads: key/value heads; must divide num_heads.
        dropout: dropout on the attention weights (training only).
        bias: whether the four projections have biases.
        fused: when True and no weights are requested, call torch's fused ``F.scaled_dot_product_attention``.

    Raises:
        TypeError: d_model, num_heads or num_kv_heads is not an int; dropout is not a number.
        ValueError: non-positive sizes; d_model not divisible by num_heads or num_heads by num_kv_heads; dropout
            outside [0, 1].

    Source: Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
    Checkpoints", §2.2 and Figure 2; multi-query attention: Shazeer 2019, "Fast Transformer Decoding: One
    Write-Head is All You Need", §3.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        fused: bool = False,
    ) -> None:
        super().__init__()
        for name, value in (("d_model", d_model), ("num_heads", num_heads), ("num_kv_heads", num_kv_heads)):
            _check_int(value, name, 1)
        _check_probability(dropout, "dropout")
        _check_heads(d_model, num_heads)
        if num_heads % num_kv_heads != 0:
            raise ValueError(
                f"num_kv_heads ({num_kv_heads}) must divide num_heads ({num_heads}): each key/value head serves "
                "an equal group of query heads"
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.group_size = num_heads // num_kv_heads
        self.d_k = d_model // num_heads
        self.dropout = dropout
        self.fused = fused
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)  # num_kv_heads heads, not num_heads
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    _check = MultiHeadAttention._check
    _check_key_value = MultiHeadAttention._check_key_value

    def _split(self, x: Tensor, heads: int) -> Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, heads, self.d_k).transpose(1, 2)  # (batch, heads, seq, d_k)

    def project_query(self, query: Tensor) -> Tensor:
        """Project and split the queries: ``(batch, seq_q, d_model)`` → ``(batch, num_heads, seq_q, d_k)``.

        Args:
            query: ``(batch, seq_q, d_model)``.

        Returns:
            ``(batch, num_heads, seq_q, d_k)``.

        Raises:
            TypeError: query is not a tensor.
            ValueError: query not a floating ``(batch, seq_q, d_model)`` tensor.
        """
        self._check(query, "query")
        return self._split(self.w_q(query), self.num_heads)

    def project_key_value(self, key: Tensor, value: Tensor) -> KeyValue:
        """Project and split keys and values into the key/value heads; reused across decoding steps (the cache).

        Args:
            key: ``(batch, seq_k, d_model)``.
            value: ``(batch, seq_k, d_model)``.

        Returns:
            :class:`KeyValue` with key and value of shape ``(batch, num_kv_heads, seq_k, d_k)``.

        Raises:
            TypeError: key or value is not a tensor.
            ValueError: wrong shapes or dtypes, or key and value of different lengths.
        """
        self._check_key_value(key, value)
        return KeyValue(self._split(self.w_k(key), self.num_kv_heads), self._split(self.w_v(value), self.num_kv_heads))

    def attend_heads(
        self, q: Tensor, kv: KeyValue, mask: Tensor | None = None, return_attention: bool = True
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from projected queries to projected keys/values: each group of query heads shares one kv head.

        Args:
            q: ``(batch, num_heads, seq_q, d_k)`` from :meth:`project_query` (possibly rotated).
            kv: :class:`KeyValue` with key and value ``(batch, num_kv_heads, seq_k, d_k)``.
            mask: optional bool tensor broadcastable to ``(batch, num_heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: return the weights; ``False`` lets a module built with ``fused=True`` call torch's
                fused kernel.

        Returns:
            output: ``(batch, seq_q, d_model)``, after the output projection W^O.
            weights: ``(batch, num_heads, seq_q, seq_k)`` (rows sum to 1), or None when the fused kernel ran.

        Raises:
            TypeError: q, the keys, values or mask are not tensors.
            ValueError: q not ``(batch, num_heads, seq_q, d_k)``; keys or values not ``(batch, num_kv_heads, seq_k,
                d_k)`` of q's batch; a mask that is not bool or does not broadcast to the scores' shape.

        Source: Ainslie et al. 2023, §2.2 (each group's heads share a single key and value head).
        """
        for name, t, heads in (("q", q, self.num_heads), ("kv.key", kv.key, self.num_kv_heads)):
            if not isinstance(t, Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
            if t.dim() != 4 or t.size(1) != heads or t.size(-1) != self.d_k or t.size(0) != q.size(0):
                raise ValueError(
                    f"{name} must have shape (batch={q.size(0)}, heads={heads}, seq, d_k={self.d_k}), "
                    f"got {tuple(t.shape)}"
                )
        # every key/value head serves group_size query heads: repeat it for each of them
        key = kv.key.repeat_interleave(self.group_size, dim=1)  # (batch, num_heads, seq_k, d_k)
        value = kv.value.repeat_interleave(self.group_size, dim=1)
        p = self.dropout if self.training else 0.0
        out, weights = _attend_heads(q, key, value, mask, p, fused=self.fused and not return_attention)
        batch, _, seq_q, _ = out.shape
        out = out.transpose(1, 2).reshape(batch, seq_q, self.d_model)  # Concat(head_1, ..., head_h)
        return self.w_o(out), weights

    def attend(
        self, query: Tensor, kv: KeyValue, mask: Tensor | None = None, return_attention: bool = True
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to keys and values already projected by :meth:`project_key_value`.

        Args:
            query: ``(batch, seq_q, d_model)``, not yet projected (W^Q is applied here).
            kv: :class:`KeyValue` with key and value of shape ``(batch, num_kv_heads, seq_k, d_k)``.
            mask: optional bool tensor broadcastable to ``(batch, num_heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: as :meth:`attend_heads`.

        Returns:
            output: ``(batch, seq_q, d_model)``.
            weights: ``(batch, num_heads, seq_q, seq_k)`` (rows sum to 1), or None when the fused kernel ran.

        Raises:
            TypeError: query or mask is not a tensor.
            ValueError: query not ``(batch, seq_q, d_model)`` or of another batch size than the keys; a bad mask.

        Source: Ainslie et al. 2023, §2.2.
        """
        self._check(query, "query", kv)
        return self.attend_heads(self.project_query(query), kv, mask, return_attention)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        return_attention: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        """Grouped-query attention of ``query`` over ``key``/``value``.

        Args:
            query: ``(batch, seq_q, d_model)``.
            key: ``(batch, seq_k, d_model)``.
            value: ``(batch, seq_k, d_model)``.
            mask: bool, broadcastable to ``(batch, num_heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: return the weights (default True, as :class:`MultiHeadAttention`).

        Returns:
            output: ``(batch, seq_q, d_model)``.
            weights: ``(batch, num_heads, seq_q, seq_k)`` (rows sum to 1), or None when the fused kernel ran.

        Raises:
            TypeError: query, key, value or mask is not a tensor.
            ValueError: wrong shapes, or a mask that does not broadcast.

        Source: Ainslie et al. 2023, §2.2; Vaswani et al. 2017, §3.2.2 (the multi-head attention it generalises).
        """
        return self.attend(query, self.project_key_value(key, value), mask, return_attention)


def _self_attention_positions(seq_q: int, seq_k: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """Self-attention's positions: the queries are the last ``seq_q`` of the ``seq_k`` keys (cached decoding)."""
    if seq_q > seq_k:
        raise ValueError(f"self-attention needs seq_q <= seq_k (queries are the last keys), got {seq_q} > {seq_k}")
    return torch.arange(seq_k - seq_q, seq_k, device=device), torch.arange(seq_k, device=device)


class RotaryMultiHeadAttention(MultiHeadAttention):
    """Multi-head self-attention with rotary position embeddings: queries and keys rotated by RoPE before the scores.

    A drop-in :class:`MultiHeadAttention` for self-attention (keys at positions 0 … seq_k − 1, queries the last
    seq_q of them, as in a decoder with a key/value cache); the cache keeps unrotated keys, rotated at every step.
    Same constructor, call signature and return values.

    Args:
        d_model, num_heads, dropout, bias, fused: as :class:`MultiHeadAttention` (d_k must be even).

    Raises:
        TypeError: as :class:`MultiHeadAttention`.
        ValueError: as :class:`MultiHeadAttention`; an odd d_k.

    Source: Su et al. 2021, "RoFormer", §3.4, Eq. (34).
    """

    def __init__(
        self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True, fused: bool = False
    ) -> None:
        super().__init__(d_model, num_heads, dropout, bias, fused)
        if self.d_k % 2 != 0:
            raise ValueError(f"RoPE rotates pairs of features: d_k = d_model / num_heads must be even, got {self.d_k}")

    def attend(
        self, query: Tensor, kv: KeyValue, mask: Tensor | None = None, return_attention: bool = True
    ) -> tuple[Tensor, Tensor | None]:
        """As :meth:`MultiHeadAttention.attend`, with queries and keys rotated to their positions.

        Args:
            query: ``(batch, seq_q, d_model)``, the last seq_q positions of the keys.
            kv: :class:`KeyValue`, key and value ``(batch, heads, seq_k, d_k)`` (keys not yet rotated).
            mask: optional bool tensor broadcastable to ``(batch, heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: as :meth:`MultiHeadAttention.attend`.

        Returns:
            output ``(batch, seq_q, d_model)`` and weights ``(batch, heads, seq_q, seq_k)`` (or None, fused).

        Raises:
            TypeError: query or mask is not a tensor.
            ValueError: as :meth:`MultiHeadAttention.attend`; seq_q > seq_k.

        Source: Su et al. 2021, Eq. (34).
        """
        self._check(query, "query", kv)
        q_pos, k_pos = _self_attention_positions(query.size(1), kv.key.size(-2), query.device)
        rotated = KeyValue(apply_rotary(kv.key, k_pos), kv.value)
        q = apply_rotary(self.split_heads(self.w_q(query)), q_pos)  # (batch, heads, seq_q, d_k), rotated
        return self._attend_rotated(q, rotated, mask, return_attention)

    def _attend_rotated(
        self, q: Tensor, kv: KeyValue, mask: Tensor | None, return_attention: bool
    ) -> tuple[Tensor, Tensor | None]:
        p = self.dropout if self.training else 0.0
        out, weights = _attend_heads(q, kv.key, kv.value, mask, p, fused=self.fused and not return_attention)
        return self.w_o(self.merge_heads(out)), weights


class ALiBiMultiHeadAttention(MultiHeadAttention):
    """Multi-head self-attention with ALiBi: softmax(Q Kᵀ / √d_k − m_h · |i − j|) V, one slope m_h per head.

    A drop-in :class:`MultiHeadAttention` for self-attention (queries the last seq_q of the seq_k keys). Same
    constructor, call signature and return values; always computes the weights itself (no fused kernel).

    Args:
        d_model, num_heads, dropout, bias, fused: as :class:`MultiHeadAttention` (``fused`` is accepted and ignored).

    Raises:
        TypeError: as :class:`MultiHeadAttention`.
        ValueError: as :class:`MultiHeadAttention`.

    Source: Press, Smith, Lewis 2022, "Train Short, Test Long", §3.
    """

    def attend(
        self, query: Tensor, kv: KeyValue, mask: Tensor | None = None, return_attention: bool = True
    ) -> tuple[Tensor, Tensor | None]:
        """As :meth:`MultiHeadAttention.attend`, with ALiBi's bias added to the scores before the softmax.

        Args:
            query: ``(batch, seq_q, d_model)``, the last seq_q positions of the keys.
            kv: :class:`KeyValue`, key and value ``(batch, heads, seq_k, d_k)``.
            mask: optional bool tensor broadcastable to ``(batch, heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: accepted for the interface; the weights are always returned.

        Returns:
            output ``(batch, seq_q, d_model)`` and weights ``(batch, heads, seq_q, seq_k)``, rows summing to 1.

        Raises:
            TypeError: query or mask is not a tensor.
            ValueError: as :meth:`MultiHeadAttention.attend`; seq_q > seq_k.

        Source: Press et al. 2022, §3.
        """
        self._check(query, "query", kv)
        seq_q, seq_k = query.size(1), kv.key.size(-2)
        _self_attention_positions(seq_q, seq_k, query.device)
        q = self.split_heads(self.w_q(query))  # (batch, heads, seq_q, d_k)
        scores = q @ kv.key.transpose(-2, -1) / math.sqrt(self.d_k)
        scores = scores + alibi_bias(self.num_heads, seq_q, seq_k, query.device).to(scores.dtype)
        if mask is not None:
            _check_mask(mask, scores.shape)
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)  # rows with no allowed key: zeros, not NaN
        p = self.dropout if self.training else 0.0
        out = F.dropout(weights, p=p) @ kv.value if p > 0 else weights @ kv.value
        return self.w_o(self.merge_heads(out)), weights
