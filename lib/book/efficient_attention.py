"""The plumbing of the chapter "Efficient attention" and its deeper dive on time and memory.

Random inputs for the checks, the clustered tokens of the hashing section, a log-2 axis for the figures whose
lengths double, and the text table of a measurement. The methods themselves are in :mod:`lib.efficient`, the
harness that measures them in :mod:`lib.cost`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from matplotlib.figure import Figure
from torch import Tensor

__all__ = ["qkv", "topic_tokens", "log2_axis", "cost_table"]


def qkv(n: int, d_k: int = 16, heads: int = 1, scale: float = 1.0, seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """Random queries, keys and values for one sequence, from a private generator.

    Args:
        n: sequence length.
        d_k: features per head (of the queries, keys and values alike).
        heads: attention heads.
        scale: standard deviation of the entries of the queries and keys (the values keep 1).
        seed: seed of the private ``torch.Generator``.

    Returns:
        ``(query, key, value)``, each ``(1, heads, n, d_k)`` float32.
    """
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, heads, n, d_k, generator=g) for _ in range(3))
    return scale * q, scale * k, v


def topic_tokens(n: int, topics: int, d_k: int, scale: float, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Vectors drawn around a few random centres ("topics"): tokens of one topic point in similar directions.

    Each token picks a topic at random; its vector is the topic's centre (entries N(0, 1)) plus noise of
    standard deviation 0.5, all times ``scale``.

    Args:
        n: number of tokens.
        topics: number of centres.
        d_k: width of the vectors.
        scale: factor on every vector (larger vectors give larger, more peaked attention scores).
        seed: seed of the private ``torch.Generator``.

    Returns:
        ``(vectors, topic)``: ``(1, 1, n, d_k)`` float32 and ``(n,)`` long, the topic of each token.
    """
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(topics, d_k, generator=g)
    topic = torch.randint(0, topics, (n,), generator=g)
    x = centres[topic] + 0.5 * torch.randn(n, d_k, generator=g)
    return scale * x[None, None], topic


def log2_axis(fig: Figure, ticks: Sequence[int | float]) -> Figure:
    """Turn the x axis of a one-axes figure (``lib.plots.plot_curves``) into a log-2 axis labelled with ``ticks``.

    Args:
        fig: the figure; its first axes is changed.
        ticks: the x values to label (the doubling lengths or feature counts of a measurement).

    Returns:
        The same figure.
    """
    ax = fig.axes[0]
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks), [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    return fig


def cost_table(lengths: Sequence[int], columns: Mapping[str, Sequence[float]], unit: str, scale: float = 1.0) -> str:
    """A text table of a measurement: one row per sequence length, one column per method.

    Args:
        lengths: the sequence lengths n, one per row.
        columns: method name -> one value per length.
        unit: what the values are, printed after the header (e.g. ``"ms per call"``).
        scale: each value is divided by it before printing (e.g. ``2**20`` for MiB).

    Returns:
        The table as one string, values with two decimals.
    """
    lines = [f"{'n':>5} " + " ".join(f"{name:>18}" for name in columns) + f"   ({unit})"]
    for i, n in enumerate(lengths):
        lines.append(f"{n:>5} " + " ".join(f"{values[i] / scale:>18.2f}" for values in columns.values()))
    return "\n".join(lines)
