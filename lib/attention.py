"""Scaled dot-product attention, multi-head attention (with grouped-query heads) and the two masks.

Every attention module in the book calls :func:`scaled_dot_product_attention`, the single core that returns both
the output and the attention weights (or, behind ``fused=True``, torch's fused kernel of the same maths). Masks
have one meaning everywhere in ``lib``: ``True`` = this query may attend to this key; ``False`` = blocked (the
weight becomes exactly 0).

This is the book's core code: it reads like the paper and trusts its callers, with ``assert`` for invariants.
The models' entry points (constructors, ``forward``/``encode``/``decode``/``generate``) check user input once.

Source: Vaswani et al. (2017), "Attention Is All You Need", §3.2; Ainslie et al. (2023), "GQA", §2.2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_attention_sizes, check_int

__all__ = ["scaled_dot_product_attention", "MultiHeadAttention", "KeyValue", "causal_mask", "padding_mask"]


def scaled_dot_product_attention(query, key, value, mask=None, dropout_p=0.0):
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, returning the output and the weights.

    query (..., seq_q, d_k), key (..., seq_k, d_k), value (..., seq_k, d_v); mask: bool, True = may attend.
    Returns the output (..., seq_q, d_v) and the weights (..., seq_q, seq_k), rows summing to 1.
    Source: Vaswani et al. 2017, §3.2.1, Eq. (1).
    """
    assert query.size(-1) == key.size(-1), "query and key must have the same d_k"
    assert mask is None or mask.dtype == torch.bool, "mask must be bool: True = may attend"
    scores = (query / math.sqrt(query.size(-1))) @ key.transpose(-2, -1)  # (..., seq_q, seq_k)
    if mask is not None:
        scores.masked_fill_(~mask, float("-inf"))
    in_place = not scores.requires_grad  # without autograd the weights overwrite the scores: one matrix, not two
    weights = torch.softmax(scores, dim=-1, out=scores) if in_place else torch.softmax(scores, dim=-1)
    if mask is not None:  # a query with no allowed key gets zeros, not NaN
        weights = weights.masked_fill_(~mask, 0.0) if in_place else weights.masked_fill(~mask, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights  # (..., seq_q, d_v), (..., seq_q, seq_k)


def causal_mask(seq_len, device=None, offset=0):
    """Query t sees keys 0 … offset + t, never the future: (seq_len, offset + seq_len) bool, True = may attend.

    Source: Vaswani et al. 2017, §3.2.3. offset > 0: the queries follow offset cached positions, which they all see.
    """
    assert isinstance(seq_len, int) and seq_len >= 1, f"seq_len must be a positive int, got {seq_len!r}"
    return torch.ones(seq_len, offset + seq_len, dtype=torch.bool, device=device).tril(offset)


def padding_mask(lengths_or_tokens, pad_id=None, max_len=None):
    """Hide the padding keys: (batch, 1, 1, seq_len) bool, True for real tokens, False for padding.

    From token ids (batch, seq_len) and their pad_id, or from true lengths (batch,) padded to max_len (default:
    the longest). The mask broadcasts against the scores (batch, heads, seq_q, seq_len).
    Source: Vaswani et al. 2017, §3.2.3.
    """
    x = torch.as_tensor(lengths_or_tokens)
    assert x.dim() in (1, 2) and not x.is_floating_point(), "lengths_or_tokens must be lengths (batch,) or ids"
    if x.dim() == 2:
        assert isinstance(pad_id, int), "token ids need their pad_id (an int)"
        return (x != pad_id)[:, None, None, :]  # (batch, 1, 1, seq_len)
    assert x.numel() == 0 or int(x.min()) >= 0, "lengths must be non-negative"
    longest = int(x.max()) if x.numel() else 0
    max_len = longest if max_len is None else check_int(max_len, "max_len", longest)
    return (torch.arange(max_len, device=x.device) < x[:, None])[:, None, None, :]  # (batch, 1, 1, max_len)


@dataclass
class KeyValue:
    """Projected keys and values, split into heads: what a decoder caches between steps.

    Attributes:
        key: ``(batch, heads, seq_k, d_k)``, the keys K W^K.
        value: ``(batch, heads, seq_k, d_k)``, the values V W^V.

    Source: Vaswani et al. 2017, §3.2.2 (the projections); the cache is an implementation device (§3.1: the
    decoder is auto-regressive, so the keys and values of earlier positions do not change).
    """

    key: Tensor
    value: Tensor

    def append(self, new: KeyValue) -> KeyValue:
        """These keys and values followed by ``new``'s along seq_k: the cache after one more decoding step."""
        return KeyValue(torch.cat([self.key, new.key], dim=2), torch.cat([self.value, new.value], dim=2))


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The h heads are computed at once: one projection per Q, K, V whose output is split into ``num_heads`` slices
    of ``d_k = d_model / num_heads`` features. With ``num_kv_heads < num_heads`` it is grouped-query attention:
    each of the ``num_kv_heads`` key/value heads serves ``num_heads / num_kv_heads`` query heads, so keys, values
    and the decoder's cache shrink by that factor (``num_kv_heads=1``: multi-query attention).

    Args:
        d_model: model width.
        num_heads: number of query heads h; must divide d_model.
        dropout: dropout on the attention weights (training only).
        bias: whether the four projections have biases.
        fused: when True and no weights are requested, call torch's fused ``F.scaled_dot_product_attention``
            (same maths, faster, no weights returned).
        num_kv_heads: key/value heads; must divide num_heads (default: num_heads, the paper's attention).

    Raises:
        TypeError: d_model, num_heads or num_kv_heads is not an int; dropout is not a number.
        ValueError: non-positive sizes; d_model not divisible by num_heads, or num_heads by num_kv_heads; dropout
            outside [0, 1].

    Source: Vaswani et al. 2017, §3.2.2; grouped-query attention: Ainslie et al. 2023, §2.2; multi-query
    attention: Shazeer 2019, §3.
    """

    def __init__(self, d_model, num_heads, dropout=0.0, bias=True, fused=False, num_kv_heads=None):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        check_attention_sizes(d_model, num_heads, num_kv_heads, dropout)
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_k = d_model // num_heads
        self.dropout, self.fused = dropout, fused
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None, return_attention=True):
        """Multi-head attention of query (batch, seq_q, d_model) over key and value (batch, seq_k, d_model).

        mask: bool, broadcastable to (batch, heads, seq_q, seq_k), True = may attend. Returns the output
        (batch, seq_q, d_model) and the weights (batch, heads, seq_q, seq_k), or None when fused and not asked.
        Source: Vaswani et al. 2017, §3.2.2.
        """
        return self.attend(self.project_query(query), self.project_key_value(key, value), mask, return_attention)

    def project_query(self, query):
        """Q W^Q, split into heads: (batch, seq_q, d_model) → (batch, heads, seq_q, d_k)."""
        assert query.size(-1) == self.d_model, f"query must be (batch, seq_q, d_model={self.d_model})"
        return self.split_heads(self.w_q(query))

    def project_key_value(self, key, value):
        """K W^K and V W^V, split into heads: each (batch, num_kv_heads, seq_k, d_k), what a decoder caches."""
        assert key.shape[:-1] == value.shape[:-1], "key and value must have the same (batch, seq_k)"
        return KeyValue(self.split_heads(self.w_k(key)), self.split_heads(self.w_v(value)))

    def split_heads(self, x):
        """(batch, seq, heads · d_k) → (batch, heads, seq, d_k): head i holds features i·d_k … (i+1)·d_k − 1."""
        batch, seq, _ = x.shape
        return x.view(batch, seq, -1, self.d_k).transpose(1, 2)

    def merge_heads(self, x):
        """Concat(head_1, ..., head_h): (batch, heads, seq, d_k) → (batch, seq, d_model)."""
        batch, _, seq, _ = x.shape
        return x.transpose(1, 2).reshape(batch, seq, self.d_model)

    def attend(self, q, kv, mask=None, return_attention=True):
        """Each head's attention, then Concat(head_1, …, head_h) W^O: q (batch, heads, seq_q, d_k) → output, weights."""
        assert q.size(0) == kv.key.size(0), "query and key must have the same batch size"
        assert mask is None or mask.dtype == torch.bool, "mask must be bool: True = may attend"
        key, value = kv.key, kv.value  # (batch, num_kv_heads, seq_k, d_k)
        if self.num_kv_heads != self.num_heads:  # grouped-query: each key/value head serves a group of heads
            key = key.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)  # (batch, heads, seq_k, d_k)
            value = value.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)
        p = self.dropout if self.training else 0.0
        if self.fused and not return_attention:  # torch's fused kernel: the same maths, no weights kept
            out, weights = F.scaled_dot_product_attention(q, key, value, attn_mask=mask, dropout_p=p), None
        else:
            out, weights = scaled_dot_product_attention(q, key, value, mask, dropout_p=p)
        return self.w_o(self.merge_heads(out)), weights  # (batch, seq_q, d_model)
