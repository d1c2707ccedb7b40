"""The plumbing of the chapter on decoding: its tables, the timing harness of the key/value cache, a figure.

The decoders themselves are ``lib.decode``'s, which the chapter shows; here is what the chapter runs around them.
"""

from __future__ import annotations

import statistics
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from IPython.display import Markdown
from matplotlib.figure import Figure
from torch import Tensor

from ..interfaces import EncoderDecoder
from ..plots import plot_curves

__all__ = ["markdown_table", "top_candidates", "kv_step_milliseconds", "kv_bytes", "nucleus_figure"]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> Markdown:
    """A Markdown table that Jupyter and the website render.

    Args:
        header: the column titles.
        rows: one sequence of cells per row (each cell written with ``str``), as long as ``header``.

    Returns:
        An ``IPython.display.Markdown``.
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def top_candidates(step_probs: Sequence[Tensor], token: Callable[[int], str], k: int = 3) -> Markdown:
    """A table of the ``k`` most probable next tokens of every decoding step, the chosen one first.

    Args:
        step_probs: one ``(vocab,)`` probability vector per step.
        token: maps a token id to its text.
        k: candidates per step.

    Returns:
        A Markdown table with a row per step: the step (from 1) and ``k`` cells "`token` probability".
    """
    rows = []
    for t, probs in enumerate(step_probs):
        top = probs.topk(k)
        rows.append([t + 1, *(f"`{token(i)}` {p:.3f}" for p, i in zip(top.values, top.indices))])
    header = ["step", "chosen, P", *(f"{n}{'nd' if n == 2 else 'rd' if n == 3 else 'th'}" for n in range(2, k + 1))]
    return markdown_table(header, rows)


@torch.no_grad()
def _step_seconds(model: EncoderDecoder, src: Tensor, targets: Tensor, use_cache: bool) -> list[float]:
    """The CPU seconds of each decoding step of ``targets``, with or without the key/value cache."""
    memory, src_mask = model.encode(src)
    cache, seconds = model.new_cache(), []
    for t in range(targets.size(1)):
        start = time.process_time()
        if use_cache:
            model.decode(targets[:, t : t + 1], memory, src_mask, cache, offset=t)  # the newest token only
        else:
            model.decode(targets[:, : t + 1], memory, src_mask)  # the whole prefix again
        seconds.append(time.process_time() - start)
    return seconds


def kv_step_milliseconds(
    model: EncoderDecoder, src: Tensor, targets: Tensor, repeats: int = 3
) -> dict[bool, list[float]]:
    """The CPU time of each decoding step, with the key/value cache and without it (the whole prefix again).

    After one untimed pass of each variant, ``repeats`` timed passes alternate between the two (so that a
    busy machine favours neither), and each position keeps the median of its passes. The clock is
    ``time.process_time``, the CPU time of this process: on a busy machine it jumps far less than the
    wall-clock time when the process waits for a core.

    Args:
        model: an encoder-decoder in eval mode.
        src: ``(1, seq_s)`` source ids.
        targets: ``(1, T)`` target ids, ``<s>`` first (their values do not change a step's time).
        repeats: timed passes per variant.

    Returns:
        ``{True: ms, False: ms}``: with and without the cache, one number of milliseconds per position.
    """
    for use_cache in (True, False):  # warm-up
        _step_seconds(model, src, targets, use_cache)
    passes: dict[bool, list[list[float]]] = {True: [], False: []}
    for r in range(repeats):
        for use_cache in (True, False) if r % 2 == 0 else (False, True):
            passes[use_cache].append(_step_seconds(model, src, targets, use_cache))
    return {c: [1e3 * statistics.median(p[t] for p in passes[c]) for t in range(targets.size(1))] for c in passes}


def kv_bytes(kv: Any) -> int:
    """The bytes that one cached key/value pair (a ``lib.attention.KeyValue``) holds: its keys plus its values.

    Args:
        kv: an object with tensors ``key`` and ``value``.

    Returns:
        ``key.numel() * key.element_size() + value.numel() * value.element_size()``.
    """
    return kv.key.numel() * kv.key.element_size() + kv.value.numel() * kv.value.element_size()


def nucleus_figure(tokens: Sequence[str], kept: Mapping[str, Sequence[int]], title: str) -> Figure:
    """How many tokens each sampling filter keeps for the token after every prefix of a sentence (log scale).

    Args:
        tokens: the sentence's tokens, ``<s>`` first: the x axis, the prefix that ends with each one.
        kept: ``name -> number of tokens kept`` after each prefix, as long as ``tokens``.
        title: the axes title.

    Returns:
        The figure, with the tokens as x tick labels.
    """
    positions = list(range(len(tokens)))
    fig = plot_curves(
        {name: (positions, list(sizes)) for name, sizes in kept.items()},
        xlabel="the prefix ends with this token; the filter acts on the next",
        ylabel="tokens kept (log scale)",
        logy=True,
        figsize=(6.6, 3.4),  # the page's column: its 9-pt labels stay 9 pt
    )
    ax = fig.axes[0]
    ax.set_title("\n".join(textwrap.wrap(title, 64)))  # a quoted sentence: two lines rather than a wider figure
    ax.set_xticks(positions, tokens, rotation=45, ha="right")
    ax.set_ylim(0.7, 3e4)  # room above the curves for the legend
    ax.legend(frameon=False, ncols=len(kept), loc="upper center")
    return fig
