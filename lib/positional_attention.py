"""Multi-head self-attention with positions inside the attention: rotary embeddings (RoPE) and ALiBi.

Drop-in :class:`lib.attention.MultiHeadAttention` modules for self-attention (keys at positions 0 … seq_k − 1,
queries the last seq_q of them, as in a decoder with a key/value cache), used by the positional-extrapolation
experiment (``lib.experiments.transformer_with_positions``).

Source: Su et al. (2021), "RoFormer", §3.4, Eq. (34); Press, Smith, Lewis (2022), "Train Short, Test Long", §3.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from .attention import KeyValue, MultiHeadAttention
from .positional import alibi_bias, apply_rotary

__all__ = ["RotaryMultiHeadAttention", "ALiBiMultiHeadAttention"]


def _self_attention_positions(seq_q: int, seq_k: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """Self-attention's positions: the queries are the last ``seq_q`` of the ``seq_k`` keys (cached decoding)."""
    if seq_q > seq_k:
        raise ValueError(f"self-attention needs seq_q <= seq_k (queries are the last keys), got {seq_q} > {seq_k}")
    return torch.arange(seq_k - seq_q, seq_k, device=device), torch.arange(seq_k, device=device)


class RotaryMultiHeadAttention(MultiHeadAttention):
    """Multi-head self-attention with rotary position embeddings: queries and keys rotated by RoPE before the scores.

    Same constructor, call signature and return values as :class:`lib.attention.MultiHeadAttention`; a cache
    keeps unrotated keys, rotated at every step.

    Args:
        d_model, num_heads, dropout, bias, fused: as :class:`lib.attention.MultiHeadAttention` (d_k must be even).

    Raises:
        TypeError: as :class:`lib.attention.MultiHeadAttention`.
        ValueError: as :class:`lib.attention.MultiHeadAttention`; an odd d_k.

    Source: Su et al. 2021, "RoFormer", §3.4, Eq. (34).
    """

    def __init__(
        self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True, fused: bool = False
    ) -> None:
        super().__init__(d_model, num_heads, dropout, bias, fused)
        if self.d_k % 2 != 0:
            raise ValueError(f"RoPE rotates pairs of features: d_k = d_model / num_heads must be even, got {self.d_k}")

    def attend(
        self, q: Tensor, kv: KeyValue, mask: Tensor | None = None, return_attention: bool = True
    ) -> tuple[Tensor, Tensor | None]:
        """As :meth:`lib.attention.MultiHeadAttention.attend`, with queries and keys rotated to their positions.

        Args:
            q: ``(batch, heads, seq_q, d_k)``, the projected queries of the last seq_q positions of the keys.
            kv: :class:`lib.attention.KeyValue`, key and value ``(batch, heads, seq_k, d_k)`` (keys not rotated).
            mask: optional bool tensor broadcastable to ``(batch, heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: as :meth:`lib.attention.MultiHeadAttention.attend`.

        Returns:
            output ``(batch, seq_q, d_model)`` and weights ``(batch, heads, seq_q, seq_k)`` (or None, fused).

        Raises:
            ValueError: seq_q > seq_k.

        Source: Su et al. 2021, Eq. (34).
        """
        q_pos, k_pos = _self_attention_positions(q.size(-2), kv.key.size(-2), q.device)
        rotated = KeyValue(apply_rotary(kv.key, k_pos), kv.value)
        return super().attend(apply_rotary(q, q_pos), rotated, mask, return_attention)


class ALiBiMultiHeadAttention(MultiHeadAttention):
    """Multi-head self-attention with ALiBi: softmax(Q Kᵀ / √d_k − m_h · |i − j|) V, one slope m_h per head.

    Same constructor, call signature and return values as :class:`lib.attention.MultiHeadAttention`; always
    computes the weights itself (no fused kernel).

    Args:
        d_model, num_heads, dropout, bias, fused: as :class:`lib.attention.MultiHeadAttention` (``fused`` is
            accepted and ignored).

    Raises:
        TypeError: as :class:`lib.attention.MultiHeadAttention`.
        ValueError: as :class:`lib.attention.MultiHeadAttention`.

    Source: Press, Smith, Lewis 2022, "Train Short, Test Long", §3.
    """

    def attend(
        self, q: Tensor, kv: KeyValue, mask: Tensor | None = None, return_attention: bool = True
    ) -> tuple[Tensor, Tensor | None]:
        """As :meth:`lib.attention.MultiHeadAttention.attend`, with ALiBi's bias added to the scores.

        Args:
            q: ``(batch, heads, seq_q, d_k)``, the projected queries of the last seq_q positions of the keys.
            kv: :class:`lib.attention.KeyValue`, key and value ``(batch, heads, seq_k, d_k)``.
            mask: optional bool tensor broadcastable to ``(batch, heads, seq_q, seq_k)``; ``True`` = may attend.
            return_attention: accepted for the interface; the weights are always returned.

        Returns:
            output ``(batch, seq_q, d_model)`` and weights ``(batch, heads, seq_q, seq_k)``, rows summing to 1.

        Raises:
            ValueError: seq_q > seq_k.

        Source: Press et al. 2022, §3.
        """
        assert mask is None or mask.dtype == torch.bool, "mask must be bool: True = may attend"
        seq_q, seq_k = q.size(-2), kv.key.size(-2)
        _self_attention_positions(seq_q, seq_k, q.device)
        scores = q @ kv.key.transpose(-2, -1) / math.sqrt(self.d_k)  # (batch, heads, seq_q, seq_k)
        scores = scores + alibi_bias(self.num_heads, seq_q, seq_k, q.device).to(scores.dtype)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)  # rows with no allowed key: zeros, not NaN
        p = self.dropout if self.training else 0.0
        out = F.dropout(weights, p=p) @ kv.value if p > 0 else weights @ kv.value
        return self.w_o(self.merge_heads(out)), weights
