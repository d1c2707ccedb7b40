"""The plumbing of the chapter on positional encoding: the figures of its explorer.

The encoding itself is ``lib.positional.sinusoidal_positional_encoding``, which the chapter shows; here are only
the matplotlib builders that one chapter uses.
"""

from __future__ import annotations

import math

import torch
from matplotlib.figure import Figure

from ..plots import plot_curves, plot_positional_encoding
from ..positional import sinusoidal_positional_encoding

__all__ = ["wavelength", "pe_views", "column_view"]


def wavelength(dim: int, d_model: int) -> float:
    """The wavelength in positions of column ``dim`` of the sinusoidal table: 2π · 10000^(2i / d_model).

    Args:
        dim: a column, 0 .. d_model - 1 (columns 2i and 2i + 1 share pair i's wavelength).
        d_model: the table's width.

    Returns:
        The number of positions per full turn of that column's sine or cosine.
    """
    return 2 * math.pi * 10000 ** ((dim - dim % 2) / d_model)


def pe_views(d_model: int = 64, max_len: int = 100, dim: int = 6) -> tuple[Figure, Figure]:
    """The sinusoidal table of ``max_len`` positions × ``d_model`` dimensions as a heatmap, and one column as a curve.

    Args:
        d_model: the table's width (even).
        max_len: the number of positions.
        dim: the column drawn as a curve (clipped to d_model - 1).

    Returns:
        ``(heatmap, curve)``: two figures.
    """
    dim = min(dim, d_model - 1)
    pe = sinusoidal_positional_encoding(max_len, d_model)  # (max_len, d_model)
    kind = "sin" if dim % 2 == 0 else "cos"
    heat = plot_positional_encoding(pe, title=f"{max_len} positions × {d_model} dimensions", figsize=(5.5, 3))
    wave = plot_curves(
        {f"dim {dim} ({kind}), wavelength {wavelength(dim, d_model):.1f}": (torch.arange(max_len), pe[:, dim])},
        xlabel="position",
        ylabel="PE(pos, dim)",
        figsize=(6.6, 2.4),
    )
    return heat, wave


def column_view(dim: int, d_model: int = 64, max_len: int = 100) -> Figure:
    """One column of the table as a curve, titled by its legend and with a fixed y axis, for a slider's frames.

    Args:
        dim: the column drawn.
        d_model: the table's width.
        max_len: the number of positions.

    Returns:
        The figure; from frame to frame its axes stay in place and its y axis runs from -1.1 to 1.1.
    """
    wave = pe_views(d_model, max_len, dim)[1]
    ax = wave.axes[0]
    ax.set_title(ax.lines[0].get_label())  # the curve's name, on one line (the legend wraps it)
    ax.get_legend().remove()
    ax.set_ylim(-1.1, 1.1)
    return wave
