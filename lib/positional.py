"""Positional information: the sinusoidal encoding, rotary embeddings (RoPE) and ALiBi's attention bias.

PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

RoPE rotates each pair of query/key features (2i, 2i+1) by the angle pos · θ_i, θ_i = 10000^(−2i/d), so that
q·k depends on the positions only through their offset; ALiBi adds −m · |i − j| to the attention scores, with
one slope m per head.

Source: Vaswani et al. (2017), "Attention Is All You Need", §3.5; Su et al. (2021), "RoFormer: Enhanced
Transformer with Rotary Position Embedding", §3.4, Eq. (34); Press, Smith, Lewis (2022), "Train Short, Test Long:
Attention with Linear Biases Enables Input Length Extrapolation", §3.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor, nn

from ._checks import check_int as _check_int
from ._checks import check_positional

__all__ = [
    "sinusoidal_positional_encoding",
    "PositionalEncoding",
    "apply_rotary",
    "alibi_slopes",
    "alibi_bias",
    "LearnedPositionalEncoding",
    "NoPositionalEncoding",
]


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    """PE(pos, 2i) = sin(pos / base^(2i/d_model)), PE(pos, 2i+1) = cos(pos / base^(2i/d_model)); base 10000.

    Source: Vaswani et al. 2017, §3.5. Returns the ``(max_len, d_model)`` float32 table, pos = 0 … max_len − 1.
    """
    assert d_model % 2 == 0 and math.isfinite(base) and base > 0, "d_model must be even, base positive and finite"
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model / 2,)
    angle = pos / base ** (two_i / d_model)  # (max_len, d_model / 2)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to a batch of embeddings, then applies dropout.

    Args:
        d_model: model width (even).
        max_len: longest sequence supported.
        dropout: dropout probability after the addition (0.1 in the paper, §5.4).

    Raises:
        TypeError: max_len or d_model is not an int; dropout is not a number.
        ValueError: max_len < 1; d_model not a positive even number; dropout outside [0, 1].

    Source: Vaswani et al. 2017, §3.5 and §5.4.
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0) -> None:
        super().__init__()
        check_positional(d_model, max_len, dropout)
        self.d_model, self.max_len = d_model, max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """dropout(x + PE[offset : offset + seq]) for x (batch, seq, d_model); offset: the first row's position."""
        assert isinstance(offset, int) and 0 <= offset <= self.max_len - x.size(-2), f"offset {offset}: beyond max_len"
        return self.dropout(x + self.pe[offset : offset + x.size(-2)])


def _check_base(base: object) -> None:
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise TypeError(f"base must be a number, got {base!r} ({type(base).__name__})")
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base must be a positive finite number (10000 in the paper), got {base}")


def apply_rotary(x: Tensor, positions: Tensor | None = None, base: float = 10000.0) -> Tensor:
    """Rotary position embedding (RoPE): rotate feature pair (2i, 2i+1) of the token at position m by m · θ_i.

    With θ_i = base^(−2i/d), i = 0 … d/2 − 1, each pair becomes

        (x_2i, x_2i+1) → (x_2i cos mθ_i − x_2i+1 sin mθ_i,  x_2i sin mθ_i + x_2i+1 cos mθ_i),

    the paper's pairing of neighbouring features (the same pairs as the sinusoidal table's sin/cos columns).
    Rotations preserve norms, and a query rotated to position m and a key rotated to position n have the dot
    product of the unrotated pair rotated by (n − m)·θ: it depends on the positions only through their offset.
    (Many codebases, e.g. GPT-NeoX and Llama's Hugging Face port, pair feature i with i + d/2 instead: a
    permutation of the features, with the same property.)

    Args:
        x: ``(..., seq, d)`` queries or keys, one head's features on the last axis, e.g.
            ``(batch, heads, seq, d_k)``; d must be even.
        positions: the position of each row, ``(seq,)`` or any shape that broadcasts to ``x.shape[:-1]``
            (integers or floats); default ``0 … seq − 1``. Decoding with a cache passes ``offset … offset + t − 1``.
        base: the wavelength base (10000 in the paper).

    Returns:
        ``(..., seq, d)``, the rotated features, in x's dtype.

    Raises:
        TypeError: x or positions is not a tensor; base is not a number.
        ValueError: x not floating point or with fewer than 2 dimensions; d odd; positions that do not broadcast
            to ``x.shape[:-1]``; base not positive and finite.

    Source: Su et al. 2021, "RoFormer", §3.2, Eq. (13) and §3.4, Eq. (34).
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor (..., seq, d), got {type(x).__name__}")
    if x.dim() < 2 or not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor (..., seq, d), got shape {tuple(x.shape)} {x.dtype}")
    d = x.size(-1)
    if d % 2 != 0:
        raise ValueError(f"the last dimension of x must be even (pairs of features are rotated), got d={d}")
    _check_base(base)
    if positions is None:
        positions = torch.arange(x.size(-2), device=x.device)
    elif not isinstance(positions, Tensor):
        raise TypeError(f"positions must be a torch.Tensor of positions (seq,), got {type(positions).__name__}")
    try:
        torch.broadcast_shapes(positions.shape, x.shape[:-1])
    except RuntimeError:
        raise ValueError(
            f"positions of shape {tuple(positions.shape)} does not broadcast to x's (..., seq) = {tuple(x.shape[:-1])}"
        ) from None
    theta = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)  # (d/2,): θ_i
    angle = positions.to(torch.float32)[..., None] * theta  # (..., seq, d/2): m θ_i
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # the pairs (x_2i, x_2i+1)
    rotated = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., seq, d/2, 2)
    return rotated.flatten(-2)


def alibi_slopes(num_heads: int) -> Tensor:
    """ALiBi's head-specific slopes m: the geometric sequence 2^(−8/n), 2^(−16/n), …, 2^(−8) for n heads.

    For a number of heads that is not a power of two, the paper takes the slopes of the closest power of two
    below it, 2^⌊log2 n⌋, and adds every other slope of the sequence for twice that power, from the first, until it
    has n (8 heads: 1/2 … 1/256; 6 heads: 1/4, 1/16, 1/64, 1/256, then 1/2, 1/8).

    Args:
        num_heads: n ≥ 1.

    Returns:
        ``(num_heads,)`` float32 tensor of slopes, head 0 first.

    Raises:
        TypeError: num_heads is not an int.
        ValueError: num_heads < 1.

    Source: Press, Smith, Lewis 2022, "Train Short, Test Long", §3 (the slopes) and their reference code's rule
    for other head counts.
    """
    if _check_int(num_heads, "num_heads") < 1:
        raise ValueError(f"num_heads must be at least 1, got {num_heads}")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    closest = 1 << (num_heads.bit_length() - 1)  # 2^⌊log2 n⌋
    slopes = power_of_two(closest)
    if closest < num_heads:
        slopes += power_of_two(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(num_heads: int, seq_q: int, seq_k: int, device: torch.device | str | None = None) -> Tensor:
    """ALiBi's additive attention bias −m_h · |i − j|, added to the scores q_i·k_j / √d_k before the softmax.

    Queries are the last ``seq_q`` of the ``seq_k`` positions (as when decoding with a cache), so query i sits at
    position ``seq_k − seq_q + i``. Under the paper's causal mask only keys j ≤ i count, where the bias is
    m · (j − i); keys after the query get the same penalty for their distance, so the bias also serves attention
    without a causal mask.

    Args:
        num_heads: heads h; head h gets slope ``alibi_slopes(num_heads)[h]``.
        seq_q: query positions (≥ 1, ≤ seq_k).
        seq_k: key positions (≥ 1).
        device: where to create the bias.

    Returns:
        ``(num_heads, seq_q, seq_k)`` float32 tensor, ≤ 0, 0 where query and key are at the same position;
        it broadcasts against scores ``(batch, heads, seq_q, seq_k)``.

    Raises:
        TypeError: an argument is not an int.
        ValueError: num_heads, seq_q or seq_k < 1; seq_q > seq_k.

    Source: Press, Smith, Lewis 2022, "Train Short, Test Long", §3 and Figure 3.
    """
    slopes = alibi_slopes(num_heads).to(device)
    for name, value in (("seq_q", seq_q), ("seq_k", seq_k)):
        if _check_int(value, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if seq_q > seq_k:
        raise ValueError(f"seq_q ({seq_q}) must not exceed seq_k ({seq_k}): queries are the last seq_q positions")
    query_pos = torch.arange(seq_k - seq_q, seq_k, device=device)[:, None]  # (seq_q, 1)
    key_pos = torch.arange(seq_k, device=device)[None, :]  # (1, seq_k)
    distance = (query_pos - key_pos).abs().float()  # (seq_q, seq_k): |i − j|
    return -slopes[:, None, None] * distance  # (heads, seq_q, seq_k)


class LearnedPositionalEncoding(PositionalEncoding):
    """Adds a learned position table (one trained vector per position) to a batch of embeddings, then dropout.

    The interface of :class:`PositionalEncoding` (``forward(x, offset)``), so a model can swap one for the other;
    the table starts at N(0, 0.02) as GPT's (Radford et al. 2018, §4.1).

    Args:
        d_model: model width.
        max_len: positions learned (the longest sequence supported).
        dropout: dropout probability after the addition.

    Raises:
        TypeError: as :class:`PositionalEncoding`.
        ValueError: as :class:`PositionalEncoding`.

    Source: Gehring et al. 2017, "Convolutional Sequence to Sequence Learning", §3.1; Vaswani et al. 2017, §3.5
    and Table 3 row (E) (learned positional embeddings, "nearly identical results").
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0) -> None:
        super().__init__(d_model, max_len, dropout)
        self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add the learned vectors of positions ``offset … offset + seq − 1`` to ``x (batch, seq, d_model)``.

        Args:
            x: ``(batch, seq, d_model)`` embeddings.
            offset: the position of the first row (decoding one token at a time).

        Returns:
            ``(batch, seq, d_model)``: ``dropout(x + table[offset : offset + seq])``.

        Raises:
            TypeError: ``x`` is not a tensor or ``offset`` not an int.
            ValueError: as :meth:`PositionalEncoding.forward`.

        Source: Gehring et al. 2017, §3.1.
        """
        assert isinstance(offset, int) and 0 <= offset <= self.max_len - x.size(-2), f"offset {offset}: beyond max_len"
        return self.dropout(x + self.table[offset : offset + x.size(-2)])


class NoPositionalEncoding(PositionalEncoding):
    """Adds nothing (dropout only): for models whose positions enter inside attention (RoPE, ALiBi).

    The interface of :class:`PositionalEncoding`, and the same checks of ``offset`` and ``max_len``.

    Args:
        d_model: model width.
        max_len: the longest sequence accepted.
        dropout: dropout probability on the embeddings.

    Raises:
        TypeError: as :class:`PositionalEncoding`.
        ValueError: as :class:`PositionalEncoding`.

    Source: Su et al. 2021, §3.4 and Press et al. 2022, §3 (neither adds positions to the embeddings).
    """

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Return ``dropout(x)``, after checking that positions ``offset … offset + seq − 1`` fit ``max_len``.

        Args:
            x: ``(batch, seq, d_model)`` embeddings.
            offset: the position of the first row.

        Returns:
            ``(batch, seq, d_model)``.

        Raises:
            TypeError: ``x`` is not a tensor or ``offset`` not an int.
            ValueError: as :meth:`PositionalEncoding.forward`.

        Source: Su et al. 2021, §3.4; Press et al. 2022, §3.
        """
        assert isinstance(offset, int) and 0 <= offset <= self.max_len - x.size(-2), f"offset {offset}: beyond max_len"
        return self.dropout(x)
