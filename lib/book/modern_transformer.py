"""The plumbing of the chapter "The modern Transformer" and its deeper dive "Train short, test long".

The stored runs of ``bench/modern_transformer.py`` (``lib.experiments.load_modern_results``) as a text table
and as figures: the translation models' loss per length bucket, and the two language models' training and
validation curves. The models themselves are in :mod:`lib.modern`, :mod:`lib.positional` and
:mod:`lib.attention`; the runs in :mod:`lib.experiments`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from lib.plots import plot_curves

__all__ = ["bucket_labels", "bucket_table", "plot_bucket_losses", "plot_lm_curves"]


def bucket_labels(buckets: Sequence[Mapping]) -> list[str]:
    """The names of the length buckets of a stored translation run: ``"1–12"``, ..., ``"29+"`` for the open last one.

    Args:
        buckets: the run's ``"buckets"``, dicts with ``low`` and ``high`` (``None`` for the open last bucket).

    Returns:
        One label per bucket.
    """
    return [f"{b['low']}–{b['high']}" if b["high"] else f"{b['low']}+" for b in buckets]


def bucket_table(runs: Mapping[str, Mapping], kinds: Sequence[str]) -> str:
    """The stored translation runs as a text table: pairs per length bucket, then loss and greedy BLEU per model.

    Args:
        runs: position kind -> stored run (``results["extrapolation"]``), each with the same buckets.
        kinds: the kinds to list, in order (``lib.experiments.POSITION_KINDS``).

    Returns:
        The table as one string.
    """
    first = runs[kinds[0]]["buckets"]
    lines = [f"{'length bucket':>14} " + " ".join(f"{lab:>8}" for lab in bucket_labels(first))]
    lines.append(f"{'pairs':>14} " + " ".join(f"{b['pairs']:>8}" for b in first))
    for what, key, fmt in (("loss (nats/token)", "loss", "{:>8.3f}"), ("greedy BLEU", "bleu", "{:>8.1f}")):
        lines += ["", what]
        lines += [f"{kind:>14} " + " ".join(fmt.format(b[key]) for b in runs[kind]["buckets"]) for kind in kinds]
    return "\n".join(lines)


def plot_bucket_losses(runs: Mapping[str, Mapping], kinds: Sequence[str], trained: int = 2) -> Figure:
    """Cross-entropy per target token against the length bucket, one curve per position scheme.

    Args:
        runs: position kind -> stored run (``results["extrapolation"]``), each with the same buckets.
        kinds: the kinds to draw, in order.
        trained: how many buckets, from the first, hold lengths seen in training (shaded).

    Returns:
        The Figure, the buckets' labels on the x axis.
    """
    labels = bucket_labels(runs[kinds[0]]["buckets"])
    xs = list(range(len(labels)))
    fig = plot_curves(
        {kind: (xs, [b["loss"] for b in runs[kind]["buckets"]]) for kind in kinds},
        xlabel="length of the longer side (sub-words)",
        ylabel="cross-entropy (nats per target token)",
        title="Trained on short pairs, tested on all lengths",
        figsize=(6.5, 3.8),
    )
    ax = fig.axes[0]
    ax.set_xticks(xs, labels)
    ax.axvspan(-0.3, trained - 0.5, color="0.9", zorder=0)
    ax.text((trained - 0.8) / 2, ax.get_ylim()[1], "trained", ha="center", va="top", fontsize=9)
    return fig


def plot_lm_curves(lms: Mapping[str, Mapping], names: Mapping[str, str], smooth: int = 25) -> Figure:
    """Validation loss and smoothed training loss of the stored language-model runs against the step.

    Args:
        lms: kind -> stored run (``results["language_models"]``), with ``history`` (``step``, ``val_loss``)
            and ``step_losses``.
        names: kind -> the name of the model in the legend.
        smooth: the training losses are averaged over this many steps.

    Returns:
        The Figure, its y axis cut to 3.5 ... 7.5 nats.
    """
    curves = {}
    for kind, name in names.items():
        history = lms[kind]["history"]
        curves[f"{name}, validation"] = ([e["step"] for e in history], [e["val_loss"] for e in history])
    for kind, name in names.items():
        losses = np.array(lms[kind]["step_losses"])
        mean = np.convolve(losses, np.ones(smooth) / smooth, mode="valid")
        curves[f"{name.split(':')[0]}, training (mean of {smooth} steps)"] = (np.arange(smooth, len(losses) + 1), mean)
    fig = plot_curves(
        curves,
        xlabel="step",
        ylabel="cross-entropy (nats per token)",
        figsize=(6.6, 4),
        title="Same data, same steps, same number of parameters",
    )
    fig.axes[0].set_ylim(3.5, 7.5)
    return fig
