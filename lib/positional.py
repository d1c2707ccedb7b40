"""Sinusoidal positional encoding.

PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Source: Vaswani et al. (2017), "Attention Is All You Need", §3.5.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["sinusoidal_positional_encoding", "PositionalEncoding"]


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    """The sinusoidal positional-encoding table.

    Args:
        max_len: number of positions (rows), pos = 0 .. max_len - 1.
        d_model: model width (columns); must be even (sin/cos pairs).
        base: the wavelength base, 10000 in the paper.

    Returns:
        ``(max_len, d_model)`` float32 tensor; even columns 2i hold sin(pos / base^(2i/d_model)),
        odd columns 2i+1 the matching cos. Every entry lies in [-1, 1].

    Raises:
        ValueError: max_len < 1, or d_model not a positive even number.

    Source: Vaswani et al. 2017, §3.5.
    """
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    if d_model < 2 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number (sin/cos pairs), got {d_model}")
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
        ValueError: as :func:`sinusoidal_positional_encoding`; in ``forward``, a sequence longer
            than ``max_len`` or a last dimension other than d_model.

    Source: Vaswani et al. 2017, §3.5 and §5.4.
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add PE(offset .. offset + seq - 1) to ``x (batch, seq, d_model)``; returns the same shape.

        Args:
            x: ``(batch, seq, d_model)`` embeddings (already scaled by √d_model in the Transformer, §3.4).
            offset: the position of the first row, used when decoding one token at a time (0: the
                sequence starts at position 0).

        Returns:
            ``(batch, seq, d_model)``: ``dropout(x + PE[offset : offset + seq])``, the table broadcast over
            the batch.

        Raises:
            ValueError: the last dimension of ``x`` is not ``d_model``, or ``offset + seq > max_len``.

        Source: Vaswani et al. 2017, §3.5.
        """
        if x.size(-1) != self.d_model:
            raise ValueError(f"expected last dimension d_model={self.d_model}, got {tuple(x.shape)}")
        end = offset + x.size(-2)
        if end > self.max_len:
            raise ValueError(
                f"sequence reaches position {end - 1}, beyond max_len={self.max_len}; "
                "build the model with a larger max_len"
            )
        return self.dropout(x + self.pe[offset:end])
