"""The plumbing of the capstone chapter and of its deeper dives (the recipe's levers, training on several GPUs).

The chapter trains, translates, scores and reads the cross-attention; the figure of one head's map, the
Markdown tables of measurements, the padding share of a set of batches and the gradients of a batch split among
ranks live here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from ..data import Batch
from ..plots import plot_attention
from ..training.distributed import shard_batch
from ..translate import TranslationAttention

__all__ = ["cross_view", "markdown_table", "padding_share", "sharded_gradients"]


def cross_view(ex: TranslationAttention, layer: int, head: int | str) -> Figure:
    """One decoder layer's cross-attention for a translation: one head's map, or the mean of all heads.

    Args:
        ex: a translation with its maps (``lib.translate.translation_attention``).
        layer: the decoder layer, 0 … layers − 1.
        head: a head index, or ``"mean"`` for the mean of the layer's heads.

    Returns:
        The heatmap, target sub-words (queries) down, source sub-words (keys) across, on a scale from 0 to 1.
    """
    w = ex.weights.cross[layer][0]  # (heads, seq_t, seq_s)
    what = f"mean of {w.size(0)} heads" if head == "mean" else f"head {head}"
    return plot_attention(
        w.mean(0) if head == "mean" else w[int(head)],
        ex.source_tokens,
        ex.target_tokens,
        vmax=1.0,
        title=f"Cross-attention, decoder layer {layer}, {what}",
        xlabel="German sub-words (keys)",
        ylabel="English sub-words (queries)",
    )


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table (for ``IPython.display.Markdown``) of ``rows`` under ``header``.

    Args:
        header: the column titles.
        rows: one sequence of cells per row, as many as the header has; each cell is written with ``str``.

    Returns:
        The table's Markdown text.
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def padding_share(batches: Iterable[Batch]) -> float:
    """The share of padding among the token positions of ``batches`` (source and target sides together).

    Args:
        batches: padded :class:`lib.data.Batch` es.

    Returns:
        Padded positions / all positions, in [0, 1].
    """
    pad = total = 0
    for b in batches:
        for x in (b.src, b.tgt_in):
            pad += int((x == b.pad_id).sum())
            total += x.numel()
    return pad / max(total, 1)


def sharded_gradients(
    model: nn.Module, batch: Batch, world_size: int, loss_fn: Callable[[nn.Module, Batch], Tensor]
) -> tuple[Tensor, Tensor, Tensor, list[float]]:
    """The gradient of a batch's mean loss, and two ways of combining the gradients of its blocks, one per rank.

    The batch is split as ``lib.training`` splits it among ``world_size`` processes
    (``lib.training.distributed.shard_batch``); each block's mean loss ``L_r`` over its ``T_r`` target tokens is
    differentiated on its own, as a rank would.

    Args:
        model: the model (put it in eval mode, so that dropout does not differ between the passes).
        batch: one batch.
        world_size: the number of ranks ``N``.
        loss_fn: ``loss_fn(model, batch)``: the batch's mean loss over its target tokens.

    Returns:
        ``(whole, weighted, plain, weights)``: the flattened gradient of the whole batch's mean loss; the mean over
        ranks of ``N · (T_r / T) · ∇L_r`` (what ``lib.training`` all-reduces); the plain mean of the ``∇L_r``; and
        the weights ``T_r / T``.
    """

    def gradient(b: Batch, scale: float = 1.0) -> Tensor:
        model.zero_grad(set_to_none=True)
        (scale * loss_fn(model, b)).backward()
        return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    whole = gradient(batch)
    blocks = [shard_batch(batch, rank, world_size) for rank in range(world_size)]
    weighted = sum(gradient(b, world_size * w) for b, w in blocks) / world_size
    plain = sum(gradient(b) for b, _ in blocks) / world_size
    model.zero_grad(set_to_none=True)
    return whole, weighted, plain, [w for _, w in blocks]
