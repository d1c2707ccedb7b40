"""Sinusoidal positional encoding.

PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Source: Vaswani et al. (2017), "Attention Is All You Need", §3.5.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor, nn

__all__ = ["sinusoidal_positional_encoding", "PositionalEncoding"]


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    return int(value)


def _check_table(max_len: int, d_model: int, base: float) -> None:
    """The arguments of :func:`sinusoidal_positional_encoding`: sizes are ints, d_model even, base positive."""
    if _check_int(max_len, "max_len") < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    if _check_int(d_model, "d_model") < 2 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number (sin/cos pairs), got {d_model}")
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise TypeError(f"base must be a number, got {base!r} ({type(base).__name__})")
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base must be a positive finite number (10000 in the paper), got {base}")


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
        TypeError: max_len or d_model is not an int, or base is not a number.
        ValueError: max_len < 1; d_model not a positive even number; base not positive and finite.

    Source: Vaswani et al. 2017, §3.5.
    """
    _check_table(max_len, d_model, base)
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
        TypeError: as :func:`sinusoidal_positional_encoding`; dropout is not a number.
        ValueError: as :func:`sinusoidal_positional_encoding`; dropout outside [0, 1].

    Source: Vaswani et al. 2017, §3.5 and §5.4.
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0) -> None:
        super().__init__()
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
            raise TypeError(f"dropout must be a float in [0, 1], got {dropout!r} ({type(dropout).__name__})")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout must be in [0, 1], got {dropout}")
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
            TypeError: ``x`` is not a tensor or ``offset`` not an int.
            ValueError: ``x`` is not a floating ``(..., seq, d_model)`` tensor; ``offset < 0`` or
                ``offset + seq > max_len``.

        Source: Vaswani et al. 2017, §3.5.
        """
        self._check(x, offset)
        end = offset + x.size(-2)
        return self.dropout(x + self.pe[offset:end])

    def _check(self, x: Tensor, offset: int) -> None:
        if not isinstance(x, Tensor):
            raise TypeError(f"x must be a torch.Tensor (batch, seq, d_model), got {type(x).__name__}")
        if x.dim() < 2 or x.size(-1) != self.d_model or not x.is_floating_point():
            raise ValueError(
                f"x must be a floating-point tensor (batch, seq, d_model={self.d_model}), got shape "
                f"{tuple(x.shape)} and dtype {x.dtype}"
            )
        if _check_int(offset, "offset") < 0:
            raise ValueError(f"offset must be >= 0 (the position of the first row), got {offset}")
        end = offset + x.size(-2)
        if end > self.max_len:
            raise ValueError(
                f"offset {offset} plus {x.size(-2)} positions of x reach position {end - 1}, beyond "
                f"max_len={self.max_len}; build the model with a larger max_len"
            )
