"""The instructor's chart of a graded class: for each exercise, how many students got each verdict.

Pure like :mod:`lib.plots` (numpy and matplotlib, nothing from ``lib``): it takes names and counts, builds a
:class:`matplotlib.figure.Figure` without ``pyplot`` and returns it. :func:`lib.classroom.grade.summary_figure` draws
the grader's summary with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = ["plot_grade_summary"]

# Colours of the verdicts, by their usual words; other categories get the next of _EXTRA.
_GRADE_COLOURS = {
    "solved": "#4c9a2a",
    "wrong": "#d1495b",
    "not solved yet": "#c8c8c8",
    "time-out": "#edae49",
    "error": "#5c3c92",
}
_GRADE_EXTRA = ("#00798c", "#30638e", "#8d6a9f", "#6b705c")


def _text_colour(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever reads better on a bar of colour ``rgba`` (the rule of lib.plots' heatmaps)."""
    r, g, b = rgba[:3]
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"


def plot_grade_summary(
    exercises: Sequence[str],
    counts: Mapping[str, Sequence[int]],
    *,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Stacked horizontal bars: for each exercise, how many students got each verdict.

    Args:
        exercises: the exercise names, one bar each, drawn top to bottom in this order.
        counts: mapping ``verdict -> counts``, one non-negative integer per exercise; the verdicts are stacked
            left to right in the mapping's order. "solved", "wrong", "not solved yet", "time-out" and "error" get
            fixed colours (green, red, grey, orange, purple), other names the next of a few more.
        title: axes title.
        figsize: ``(width, height)`` in inches; default 7 wide, 0.45 per exercise (at least 2.4) high.

    Returns:
        The Figure; ``fig.axes[0].containers[k]`` holds the bars of the k-th verdict, bar i for exercise i.

    Raises:
        ValueError: no exercises, no verdicts, a counts list of the wrong length, or a negative or
            non-integer count.
    """
    names = [str(e) for e in exercises]
    if not names:
        raise ValueError("exercises must name at least one exercise")
    if not isinstance(counts, Mapping) or len(counts) == 0:
        raise ValueError("counts must be a non-empty dict verdict -> one count per exercise")
    table = []
    for verdict, values in counts.items():
        arr = np.asarray(values, dtype=float)
        if arr.shape != (len(names),):
            raise ValueError(f"counts[{verdict!r}] must hold {len(names)} counts (one per exercise), got {arr.shape}")
        if np.any(arr < 0) or np.any(arr != np.round(arr)):
            raise ValueError(f"counts[{verdict!r}] must be non-negative integers, got {list(values)}")
        table.append((str(verdict), arr))

    fig = Figure(figsize=figsize or (7.0, max(2.4, 0.45 * len(names) + 1.0)), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(names))
    left = np.zeros(len(names))
    extra = iter(_GRADE_EXTRA * (1 + len(table)))
    for verdict, arr in table:
        colour = _GRADE_COLOURS.get(verdict) or next(extra)
        bars = ax.barh(y, arr, left=left, color=colour, label=verdict, edgecolor="white", linewidth=0.8)
        labels = [str(int(v)) if v > 0 else "" for v in arr]
        ax.bar_label(
            bars, labels=labels, label_type="center", fontsize=8, color=_text_colour(bars.patches[0].get_facecolor())
        )
        left += arr
    ax.set_yticks(y, names)
    ax.invert_yaxis()  # the first exercise on top
    ax.set_xlabel("students")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0, max(1.0, float(left.max())))
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(title)
    ax.legend(frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    return fig
