"""Figures for the book: attention heatmaps, beam-search trees, positional encodings, masks and learning curves.

Every function here is pure: it takes arrays (numpy arrays or torch tensors) and labels, builds a
:class:`matplotlib.figure.Figure` directly (no ``pyplot``, so no global figure registry, no
``plt.show()``, no rcParams changes) and returns it. In a notebook the returned figure is displayed
by ending a cell with it; ``fig.savefig(...)`` writes it to a file.

Token labels may contain CJK characters (``"我 爱 机器 学习"``) or sub-word pieces: a sequence that marks word
starts (``"▁Ein"``) is labelled as the attention explorer labels it (``Ein``, a continuation ``-e``;
:mod:`lib.token_labels`). When a label has characters that the default font lacks, its tick labels get a font-family
list that adds an installed CJK font (Noto Sans CJK, WenQuanYi, Droid Sans Fallback, AR PL, ...) as a
fallback. Without one the missing characters are drawn as placeholder boxes, without warnings.
On Debian/Ubuntu ``apt-get install fonts-noto-cjk`` (or ``fonts-wqy-microhei``) provides a font.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import textwrap
import unicodedata
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from matplotlib import font_manager, rcParams
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from lib.token_labels import token_labels

__all__ = [
    "plot_attention",
    "plot_attention_grid",
    "plot_beam_tree",
    "plot_positional_encoding",
    "plot_curves",
    "plot_mask",
    "plot_distributions",
    "FigureSlider",
    "figure_slider",
    "describe_figure",
    "drawn_text_sizes",
    "smallest_text_pt",
    "PAGE_COLUMN_PX",
    "NOTEBOOK_DPI",
]

#: The content column of a page of the website, in CSS pixels, on a desktop (an image wider than this is scaled down).
PAGE_COLUMN_PX = 688
#: The resolution at which a notebook shows a figure (matplotlib's default ``figure.dpi``, which the inline backend
#: keeps), and so the width in pixels of the PNG the website shows.
NOTEBOOK_DPI = 100


# Cells up to this size get their value written in them when ``annotate=None``.
_ANNOTATE_MAX = 8
# Legibility (issue 31): no text under _MIN_PT, and new figures at most _MAX_WIDTH_IN wide, so that a notebook's PNG
# (100 dpi) fits the page's 688-px column without being scaled down (see smallest_text_pt).
_MIN_PT = 9.0
_FONT = 10.0
_MAX_WIDTH_IN = 6.6  # + the 0.1-in pads of a tight PNG: at most 680 px at 100 dpi
# Preferred CJK fonts, best first; any other installed font whose name contains one of
# ``_CJK_NAME_PARTS`` is used after these.
_CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "Noto Sans CJK HK",
    "Noto Sans SC",
    "Source Han Sans SC",
    "Source Han Sans",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "AR PL UMing CN",
    "AR PL UKai CN",
    "Noto Serif CJK SC",
    "Noto Serif CJK JP",
    "PingFang SC",
    "Hiragino Sans GB",
    "Heiti SC",
    "Microsoft YaHei",
    "SimHei",
    "Arial Unicode MS",
)
_CJK_NAME_PARTS = ("CJK", "WenQuanYi", "Droid Sans Fallback", "AR PL", "Source Han")
# Shipped with matplotlib >= 3.10: one placeholder glyph per Unicode block. Naming it
# explicitly in a family list makes matplotlib use it without the "Glyph ... missing" warning.
_LAST_RESORT = "Last Resort High-Efficiency"
_GLYPH_WARNING = r"Glyph \d+ .* missing from font"


# --------------------------------------------------------------------------------------------
# Input conversion and validation
# --------------------------------------------------------------------------------------------


def _to_numpy(x: Any, name: str) -> np.ndarray:
    """A float numpy copy of a numpy array, torch tensor or nested sequence."""
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch here
        return x.detach().cpu().float().numpy()
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array or tensor, got {type(x).__name__}") from err


def _squeeze_leading(arr: np.ndarray, ndim: int, name: str, what: str) -> np.ndarray:
    """Drop leading size-1 axes down to ``ndim`` axes; raise if the result is not ``ndim``-D."""
    original = arr.shape
    while arr.ndim > ndim and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != ndim:
        raise ValueError(
            f"{name} must be {ndim}-D {what} (leading size-1 axes are dropped), got shape {tuple(original)}"
        )
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(original)}")
    return arr


def _check_labels(labels: Sequence[Any] | None, size: int, arg: str, axis: str) -> list[str] | None:
    """Labels as strings (sub-word tokens as words, :func:`lib.token_labels.token_labels`), or ValueError naming the
    axis and both sizes."""
    if labels is None:
        return None
    if isinstance(labels, str):
        raise ValueError(f"{arg} must be a sequence of labels (one per token), not one string")
    labels = token_labels(labels)  # "▁Hund" -> "Hund", a continuation "maschine" -> "-maschine"
    if len(labels) != size:
        raise ValueError(f"{arg} has {len(labels)} labels but the {axis} has {size} positions")
    return labels


def _check_titles(titles: Sequence[Any] | None, size: int, arg: str, what: str) -> list[str] | None:
    if titles is None:
        return None
    if isinstance(titles, str):
        raise ValueError(f"{arg} must be a sequence of {size} titles, not one string")
    titles = [str(t) for t in titles]
    if len(titles) != size:
        raise ValueError(f"{arg} has {len(titles)} titles but there are {size} {what}")
    return titles


def _root_figure(ax: Any) -> Figure:
    """The top-level Figure of ``ax`` (also when ``ax`` lives in a SubFigure)."""
    try:
        return ax.get_figure(root=True)  # matplotlib >= 3.10
    except TypeError:
        fig = ax.figure
        while hasattr(fig, "figure") and fig.figure is not fig:
            fig = fig.figure
        return fig


# --------------------------------------------------------------------------------------------
# Fonts for non-Latin labels
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _installed_font_names() -> frozenset[str]:
    return frozenset(f.name for f in font_manager.fontManager.ttflist)


@lru_cache(maxsize=1)
def find_cjk_font() -> str | None:
    """Name of an installed font with CJK glyphs, or None if there is none.

    Returns:
        A family name from matplotlib's font list (e.g. ``"Noto Sans CJK JP"``), preferring the
        fonts in ``_CJK_FONTS`` in order; None when no such font is installed.
    """
    names = _installed_font_names()
    for name in _CJK_FONTS:
        if name in names:
            return name
    for name in sorted(names):
        if any(part.lower() in name.lower() for part in _CJK_NAME_PARTS):
            return name
    return None


@lru_cache(maxsize=4096)
def _font_has_glyph(font_path: str, char: str) -> bool:
    return font_manager.get_font(font_path).get_char_index(ord(char)) != 0


def _needs_fallback(labels: Sequence[str]) -> bool:
    """True if some label has a printable character that the default font lacks."""
    chars = {c for label in labels for c in label if c.isprintable() and not c.isspace()}
    if all(ord(c) < 0x250 for c in chars):  # Basic Latin .. Latin Extended-B: always covered
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = font_manager.findfont(font_manager.FontProperties())
    return not all(_font_has_glyph(path, c) for c in chars)


def _label_families(labels: Sequence[str]) -> list[str] | None:
    """A font-family list for tick labels that contain non-Latin text, else None."""
    if not _needs_fallback(labels):
        return None
    families = list(rcParams["font.family"])
    cjk = find_cjk_font()
    if cjk is not None:
        families.append(cjk)
    if _LAST_RESORT in _installed_font_names():
        families.append(_LAST_RESORT)
    return families


def _display_width(label: str) -> int:
    """Width of a label in character cells (CJK characters count as two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in label)


def _set_ticks(
    ax: Any, axis: str, labels: list[str] | None, size: int, rotate: bool = False, fontsize: float | None = None
) -> None:
    """Put one tick per position with ``labels`` on the x or y axis of ``ax``."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    if labels is None:
        target.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
        return
    ticks = np.arange(size)
    kwargs: dict[str, Any] = {}
    if fontsize is not None:
        kwargs["fontsize"] = fontsize
    if axis == "x":
        ax.set_xticks(ticks)
        texts = ax.set_xticklabels(labels, rotation=90 if rotate else 0, **kwargs)
    else:
        ax.set_yticks(ticks)
        texts = ax.set_yticklabels(labels, **kwargs)
    families = _label_families(labels)
    if families is not None:
        for text in texts:
            text.set_fontfamily(families)


def _should_rotate(labels: list[str] | None, cell_width_in: float, fontsize: float) -> bool:
    """Rotate x tick labels when the longest one is wider than its cell."""
    if not labels:
        return False
    char_in = 0.6 * fontsize / 72.0  # average glyph width in inches
    return max(_display_width(s) for s in labels) * char_in > 0.9 * cell_width_in


def _cell_inches(size: int) -> float:
    """Side of one heatmap cell (inches) for a new figure: roomy for short sequences, capped total."""
    if size <= 10:
        return 0.42
    if size <= 20:
        return 0.32
    return max(0.08, 4.5 / size)


def _tick_fontsize(size: int) -> float | None:
    """Tick labels of a long sequence at the smallest legible size (_MIN_PT), the default otherwise."""
    return _MIN_PT if size > 16 else None


def _run_layout(fig: Figure) -> None:
    """Place the axes as the figure's layout engine will when it is drawn, so that their sizes can be measured."""
    engine = fig.get_layout_engine()
    if engine is not None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
            engine.execute(fig)


def _axes_inches(ax: Any) -> tuple[float, float]:
    """Width and height of an axes in inches, where it is placed now."""
    fig = _root_figure(ax)
    pos = ax.get_position()
    return pos.width * fig.get_figwidth(), pos.height * fig.get_figheight()


def _wrap(text: str, width_in: float, size: float) -> str:
    """``text`` wrapped into lines at most ``width_in`` wide at ``size`` pt (by :func:`_width_in`'s estimate)."""
    if _width_in(text, size) <= width_in:
        return text
    return "\n".join(textwrap.wrap(text, max(12, int(width_in / (0.6 * size / 72.0))))) or text


def _fit_heatmap_ticks(
    ax: Any, xl: list[str] | None, yl: list[str] | None, seq_k: int, seq_q: int, x_font: float, y_font: float
) -> None:
    """Label a heatmap's cells at ``x_font``/``y_font`` pt, never smaller: x labels rotated where wider than a cell,
    and every k-th token labelled where a cell is narrower than a line of text.

    The figure's layout is run first (twice: rotated labels take height), so the cells are measured as drawn.
    """
    for _ in range(2):
        _run_layout(_root_figure(ax))
        width_in, height_in = _axes_inches(ax)
        cell_w, cell_h = width_in / seq_k, height_in / seq_q
        if xl is not None:
            longest_in = max(map(_display_width, xl)) * 0.55 * x_font / 72.0  # a closer estimate than _width_in's
            rotate = longest_in > 0.95 * cell_w
            room = 1.2 * x_font / 72.0 if rotate else longest_in + 0.05
            _set_thinned_ticks(ax, "x", xl, seq_k, max(1, int(np.ceil(room / cell_w))), rotate=rotate)
            ax.tick_params(axis="x", which="major", labelsize=x_font)
        if yl is not None:
            step = max(1, int(np.ceil(1.2 * y_font / 72.0 / cell_h)))  # a line of text: 1.2 × its size
            _set_thinned_ticks(ax, "y", yl, seq_q, step)
            ax.tick_params(axis="y", which="major", labelsize=y_font)


def _width_in(text: str, size: float) -> float:
    """A generous estimate of the printed width of one line of text, in inches (CJK characters count double)."""
    return _display_width(text) * 0.6 * size / 72.0


def _label_pad_in(labels: list[str] | None, fontsize: float) -> float:
    """Rough room (inches) that a column of labels needs, capped."""
    if not labels:
        return 0.3
    return min(2.0, max(_display_width(s) for s in labels) * 0.6 * fontsize / 72.0 + 0.15)


def _text_colour(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever reads better on a cell of colour ``rgba``."""
    r, g, b = rgba[:3]
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def plot_attention(
    weights: Any,
    x_labels: Sequence[Any] | None = None,
    y_labels: Sequence[Any] | None = None,
    *,
    title: str | None = None,
    ax: Any = None,
    cmap: str = "viridis",
    annotate: bool | None = None,
    vmin: float | None = 0.0,
    vmax: float | None = None,
    colorbar: bool = True,
    figsize: tuple[float, float] | None = None,
    xlabel: str = "key (attended to)",
    ylabel: str = "query",
) -> Figure:
    """Heatmap of one attention matrix: row i shows how query i spreads its weight over the keys.

    Args:
        weights: ``(seq_q, seq_k)`` attention weights (numpy array or torch tensor), rows usually
            sum to 1. Leading size-1 axes are dropped, so ``(1, 1, seq_q, seq_k)`` from a
            ``(batch, heads, seq_q, seq_k)`` tensor with one batch and one head is fine.
        x_labels: ``seq_k`` key labels (e.g. source tokens), drawn under the columns; rotated 90°
            when they are wider than a cell. None: integer positions.
        y_labels: ``seq_q`` query labels (e.g. target tokens), drawn beside the rows. Tick labels are at least
            9 pt; where the cells are narrower than a line of text, every k-th token is labelled.
        title: axes title, wrapped onto more lines where it is wider than the figure.
        ax: existing matplotlib Axes to draw into; its figure is returned.
        cmap: colormap name.
        annotate: write each weight (``"{:.2f}"``) in its cell, at 10 pt or 9 pt. None: only when the matrix is
            at most 8×8. Cells too small for a 9-pt number get none, even with ``annotate=True``: the values are
            dropped rather than printed too small to read.
        vmin, vmax: colour limits; ``vmax=None`` uses the largest weight. Use ``vmin=None`` for raw
            scores that can be negative.
        colorbar: add a colorbar.
        figsize: ``(width, height)`` in inches of a new figure; None picks one from the matrix
            size. A width over 6.6 in is narrowed to 6.6 (a page's column, where every text is shown at its size).
            Ignored when ``ax`` is given.
        xlabel, ylabel: axis titles.

    Returns:
        The Figure. ``fig.axes[0].images[0]`` holds the matrix; with ``colorbar=True`` the
        colorbar is the last axes.

    Raises:
        ValueError: ``weights`` is not 2-D after dropping leading size-1 axes, is empty or not
            numeric; a label list's length differs from its axis size.

    Source: the alignment plots of Bahdanau et al. 2015, Fig. 3.
    """
    w = _squeeze_leading(_to_numpy(weights, "weights"), 2, "weights", "(seq_q, seq_k)")
    seq_q, seq_k = w.shape
    xl = _check_labels(x_labels, seq_k, "x_labels", "key axis (x, weights.shape[-1])")
    yl = _check_labels(y_labels, seq_q, "y_labels", "query axis (y, weights.shape[-2])")
    if annotate is None:
        annotate = seq_q <= _ANNOTATE_MAX and seq_k <= _ANNOTATE_MAX

    base_font = float(rcParams["font.size"])
    x_font = _tick_fontsize(seq_k) or base_font
    y_font = _tick_fontsize(seq_q) or base_font
    title_font = 1.2 * base_font  # matplotlib's "large"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
        if ax is None:
            if figsize is None:
                beside = _label_pad_in(yl, y_font) + (1.6 if colorbar else 0.8)
                cell = min(_cell_inches(max(seq_q, seq_k)), max(0.08, (_MAX_WIDTH_IN - beside) / seq_k))
                rotate_guess = _should_rotate(xl, cell, x_font)
                width = seq_k * cell + beside
                height = seq_q * cell + 0.9 + (0.35 if title else 0.0)
                if rotate_guess:
                    height += _label_pad_in(xl, x_font)
                figsize = (float(np.clip(width, 3.0, _MAX_WIDTH_IN)), float(np.clip(height, 2.4, 6.0)))
            else:  # no wider than the page's column, where it would be scaled down with its text
                figsize = (min(float(figsize[0]), _MAX_WIDTH_IN), float(figsize[1]))
            fig = Figure(figsize=figsize, layout="constrained")
            ax = fig.add_subplot()
            title_in = fig.get_figwidth() - 0.3
        else:
            fig = _root_figure(ax)
            title_in = float("inf")  # the caller's figure: its layout is the caller's

        im = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
        _set_ticks(ax, "x", xl, seq_k, rotate=_should_rotate(xl, _axes_inches(ax)[0] / seq_k, x_font))
        _set_ticks(ax, "y", yl, seq_q)
        if xlabel:
            ax.set_xlabel(xlabel)
        if ylabel:
            ax.set_ylabel(ylabel)
        if title:
            ax.set_title(_wrap(title, title_in, title_font))
        if colorbar:
            fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
        _fit_heatmap_ticks(ax, xl, yl, seq_k, seq_q, x_font, y_font)

        if annotate:
            # A value at _FONT, or _MIN_PT where that does not fit its cell; none where not even that fits.
            values = [f"{v:.2f}" for v in w[np.isfinite(w)]]
            cell_w, cell_h = (side / n for side, n in zip(_axes_inches(ax), (seq_k, seq_q)))
            widest = max(values, key=_display_width, default="")
            size = next(
                (f for f in (_FONT, _MIN_PT) if _width_in(widest, f) <= cell_w and 1.2 * f / 72.0 <= cell_h), None
            )
            if size is not None:
                cmap_obj = im.get_cmap()
                for i in range(seq_q):
                    for j in range(seq_k):
                        value = w[i, j]
                        if not np.isfinite(value):
                            continue
                        colour = _text_colour(cmap_obj(im.norm(value)))
                        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=size, color=colour)
    return fig


def _grid_array(weights: Any) -> np.ndarray:
    """``(rows, cols, seq_q, seq_k)`` from an array or a list of per-layer tensors."""
    if isinstance(weights, (list, tuple)):
        if len(weights) == 0:
            raise ValueError("weights is an empty list; expected one (heads, seq_q, seq_k) per layer")
        layers = []
        for i, layer in enumerate(weights):
            arr = _to_numpy(layer, f"weights[{i}]")
            if arr.ndim == 2:  # one head
                arr = arr[None]
            layers.append(_squeeze_leading(arr, 3, f"weights[{i}]", "(heads, seq_q, seq_k)"))
        shapes = {a.shape for a in layers}
        if len(shapes) != 1:
            raise ValueError(
                "all layers in weights must share one (heads, seq_q, seq_k) shape, got "
                + ", ".join(f"weights[{i}]: {a.shape}" for i, a in enumerate(layers))
            )
        return np.stack(layers)  # (layers, heads, seq_q, seq_k)
    arr = _to_numpy(weights, "weights")
    if arr.ndim == 3:  # (heads, seq_q, seq_k): one row
        arr = arr[None]
    return _squeeze_leading(arr, 4, "weights", "(rows, cols, seq_q, seq_k), e.g. (layers, heads, seq_q, seq_k),")


def plot_attention_grid(
    weights: Any,
    x_labels: Sequence[Any] | None = None,
    y_labels: Sequence[Any] | None = None,
    *,
    row_titles: Sequence[Any] | None = None,
    col_titles: Sequence[Any] | None = None,
    title: str | None = None,
    cmap: str = "viridis",
    panel_size: float = 2.2,
    vmin: float | None = 0.0,
    vmax: float | None = None,
    xlabel: str = "key (attended to)",
    ylabel: str = "query",
) -> Figure:
    """Grid of attention heatmaps, one per (row, column), e.g. per (layer, head), on one colour scale.

    Args:
        weights: ``(rows, cols, seq_q, seq_k)`` array or tensor, e.g. ``(layers, heads, seq_q,
            seq_k)``; a 3-D ``(heads, seq_q, seq_k)`` is one row; a list of per-layer tensors of
            shape ``(heads, seq_q, seq_k)`` or ``(1, heads, seq_q, seq_k)`` is stacked into rows.
            Leading size-1 axes beyond four are dropped.
        x_labels: ``seq_k`` key labels, shown under the bottom row only.
        y_labels: ``seq_q`` query labels, shown beside the left column only.
        row_titles: one title per row, drawn at the right of the row; default ``"layer 0"``,
            ``"layer 1"``, ... (0-based, like the list index).
        col_titles: one title per column; default ``"head 0"``, ``"head 1"``, ...
        title: figure title.
        cmap: colormap name.
        panel_size: the largest width of one panel in inches. Panels narrow so that the grid fits a page's column
            (at most 6.6 in, every text at least 9 pt); a panel may be up to 1.5 times as tall as wide so that its
            query labels fit, and where a label per token still does not fit, every k-th token is labelled.
        vmin, vmax: shared colour limits; ``vmax=None`` uses the largest weight in the grid.
        xlabel, ylabel: figure-level axis titles.

    Returns:
        The Figure: ``rows * cols`` heatmap axes in row-major order, then one shared colorbar axes.

    Raises:
        ValueError: ``weights`` has the wrong number of axes, is empty, or its layers differ in
            shape; a label or title list's length differs from its axis size.
    """
    w = _grid_array(weights)
    rows, cols, seq_q, seq_k = w.shape
    xl = _check_labels(x_labels, seq_k, "x_labels", "key axis (x, weights.shape[-1])")
    yl = _check_labels(y_labels, seq_q, "y_labels", "query axis (y, weights.shape[-2])")
    rt = _check_titles(row_titles, rows, "row_titles", "rows (weights.shape[0])")
    ct = _check_titles(col_titles, cols, "col_titles", "columns (weights.shape[1])")
    if rt is None:
        rt = [f"layer {i}" for i in range(rows)]
    if ct is None:
        ct = [f"head {j}" for j in range(cols)]
    if panel_size <= 0:
        raise ValueError(f"panel_size must be positive (inches), got {panel_size}")
    if vmax is None:
        finite = w[np.isfinite(w)]
        vmax = float(finite.max()) if finite.size else 1.0

    # Fit the page: the grid is at most _MAX_WIDTH_IN wide, so that it is not scaled down on a page, and every text
    # is at least _MIN_PT. Panels narrow to fit; a panel may be taller than wide, so that its query labels fit; where
    # the cells are still too small for one label each, every k-th token is labelled (fewer ticks, never smaller).
    row_pad = max((_display_width(t) for t in rt), default=0) > 0
    overhead = _label_pad_in(yl, _MIN_PT) + (0.35 if ylabel else 0.0) + (0.35 if row_pad else 0.0) + 0.75
    # One row of many panels (e.g. 8 heads) wraps onto several rows of at most 4, each panel with its title.
    per_row = cols if rows > 1 or cols <= 4 else int(np.ceil(cols / np.ceil(cols / 4)))
    grid_rows, grid_cols = (rows, cols) if per_row == cols else (int(np.ceil(cols / per_row)), per_row)
    panel_w = max(0.5, min(panel_size, (_MAX_WIDTH_IN - overhead) / grid_cols))
    rotate = _should_rotate(xl, 0.9 * panel_w / seq_k, _MIN_PT)
    line_in = 1.3 * _MIN_PT / 72.0  # the room one tick label needs across its axis
    panel_h = panel_w
    if yl is not None:
        panel_h = min(max(panel_w, seq_q * line_in), 1.5 * panel_w, 2.6)
    x_room = line_in if (rotate or xl is None) else max(_display_width(s) for s in xl) * 0.6 * _MIN_PT / 72.0 + 0.05
    x_step = max(1, int(np.ceil(seq_k * x_room / (0.9 * panel_w)))) if xl is not None else 1
    y_step = max(1, int(np.ceil(seq_q * line_in / (0.9 * panel_h)))) if yl is not None else 1
    width = grid_cols * panel_w + overhead
    title_h = 0.35 if any(ct) else 0.0
    height = grid_rows * (panel_h + (title_h if per_row != cols else 0.0)) + 0.35 + (0.3 if xlabel else 0.0) + title_h
    height += _label_pad_in(xl, _MIN_PT) if rotate else 0.3
    height += 0.35 if title else 0.0

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
        fig = Figure(figsize=(width, height), layout="constrained")
        grid = fig.subplots(grid_rows, grid_cols, squeeze=False, sharex=True, sharey=True)
        for extra in grid.flat[rows * cols :]:  # the empty end of a wrapped row
            fig.delaxes(extra)
        axes = grid.reshape(-1)[: rows * cols].reshape(rows, cols)
        im = None
        for r in range(rows):
            for c in range(cols):
                ax = axes[r, c]
                k = r * cols + c  # its place in the drawn grid
                gr, gc = divmod(k, grid_cols)
                im = ax.imshow(w[r, c], cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
                _set_thinned_ticks(ax, "x", xl, seq_k, x_step, rotate=rotate, bins=max(2, int(panel_w / 0.35)))
                _set_thinned_ticks(ax, "y", yl, seq_q, y_step, bins=max(2, int(panel_h / 0.3)))
                last = k + grid_cols >= rows * cols  # no panel below it
                ax.tick_params(labelbottom=last, labelleft=(gc == 0), labelsize=_MIN_PT)
                if (r == 0 or per_row != cols) and ct[c]:
                    ax.set_title(ct[c], fontsize=_FONT if _width_in(ct[c], _FONT) <= panel_w else _MIN_PT)
                if (c == cols - 1 or (per_row != cols and gr == 0 and gc == grid_cols - 1)) and rt[r]:
                    ax.yaxis.set_label_position("right")
                    ax.set_ylabel(rt[r], fontsize=_FONT, rotation=270, labelpad=12)
        if xlabel:
            fig.supxlabel(xlabel, fontsize=_FONT)
        if ylabel:
            fig.supylabel(ylabel, fontsize=_FONT)
        if title:
            fig.suptitle(title, fontsize=_FONT + 1)
        drawn = [ax for ax in grid.flat if ax.figure is fig and ax in fig.axes]
        bar = fig.colorbar(im, ax=drawn, shrink=min(1.0, 0.6 + 0.2 * grid_rows), fraction=0.04, pad=0.02)
        bar.ax.tick_params(labelsize=_MIN_PT)
        bar.ax.yaxis.set_major_locator(MaxNLocator(nbins=min(6, max(2, int(grid_rows * panel_h / 0.5)))))
    return fig


def _set_thinned_ticks(
    ax: Any, axis: str, labels: list[str] | None, size: int, step: int, rotate: bool = False, bins: int = 5
) -> None:
    """Label every ``step``-th position with its label (all of them when ``step`` is 1), at least _MIN_PT."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    if labels is None:
        target.set_major_locator(MaxNLocator(nbins=bins, integer=True, steps=[1, 2, 5, 10]))
        return
    ticks = np.arange(0, size, step)
    shown = [labels[i] for i in ticks]
    if axis == "x":
        ax.set_xticks(ticks)
        texts = ax.set_xticklabels(shown, rotation=90 if rotate else 0)
    else:
        ax.set_yticks(ticks)
        texts = ax.set_yticklabels(shown)
    families = _label_families(labels)
    if families is not None:
        for text in texts:
            text.set_fontfamily(families)


def _beam_tree_depths(parents: list[int]) -> list[int]:
    """Each node's depth; ValueError unless node 0 is the only root and every parent comes before its child."""
    if not parents or parents[0] != -1:
        raise ValueError(f"parents[0] must be -1 (node 0 is the root), got {parents[:1]}")
    depth = [0]
    for i, p in enumerate(parents[1:], start=1):
        if not 0 <= p < i:
            raise ValueError(f"parents[{i}] must be an earlier node in [0, {i}), got {p}")
        depth.append(depth[p] + 1)
    return depth


def plot_beam_tree(
    labels: Sequence[Any],
    parents: Sequence[int],
    scores: Sequence[float],
    best_path: Sequence[int] | None = None,
    *,
    title: str | None = None,
    highlight: str = "C3",
    prune: bool = True,
    end: str = "</s>",
    steps_per_row: int | None = None,
) -> Figure:
    """The hypothesis tree of one beam search: one node per kept hypothesis, the returned one highlighted.

    Nodes are placed by step (x, left to right) and drawn as their token with the summed log-probability of the
    hypothesis they end; each node is joined to the hypothesis it extends. Leaves are stacked top to bottom in
    depth-first order and a parent sits at the mean height of its children.

    To stay legible on a page (text at least 9 pt, at most 6.6 in wide), the tree is pruned and wrapped: with
    ``prune`` only the hypotheses that finished (leaves labelled ``end``) and the returned one are drawn, with the
    branches beam search dropped from each node collapsed into a grey ``+N``; a tree of more steps than fit one
    row continues in the row below, whose first column repeats the last column of the row above.

    Args:
        labels: one token string per node (node 0 is the root, e.g. ``"<s>"``).
        parents: each node's parent, ``-1`` for node 0 only; every parent comes before its children.
        scores: each node's summed log-probability (nats), shown under its token.
        best_path: node ids from the root to the chosen hypothesis's last node, drawn in ``highlight``; None draws
            no path.
        title: figure title.
        highlight: colour of the chosen path.
        prune: draw only the paths to finished hypotheses (and ``best_path``), the other branches as ``+N``;
            a tree without a leaf labelled ``end`` is drawn whole.
        end: the label of the token that finishes a hypothesis.
        steps_per_row: columns (steps) per row; None fits as many as the page's width holds.

    Returns:
        The Figure, one axes per row of steps: x = step, one text box per drawn node, one line per drawn edge.

    Raises:
        ValueError: labels, parents and scores differ in length or are empty; parents that do not form a tree
            rooted at node 0 (as above); a best path that does not start at the root or whose nodes are not each
            the previous one's child; ``steps_per_row`` under 2.
    """
    names = [str(label) for label in labels]
    parent_list = [int(p) for p in parents]
    score_arr = _to_numpy(scores, "scores").reshape(-1)
    n = len(names)
    if n == 0 or len(parent_list) != n or score_arr.size != n:
        raise ValueError(
            f"labels, parents and scores must be non-empty and of one length, got {n}, {len(parent_list)} and "
            f"{score_arr.size}"
        )
    depth = _beam_tree_depths(parent_list)
    path = [int(i) for i in best_path] if best_path is not None else []
    if path:
        if path[0] != 0 or any(not 0 <= i < n for i in path):
            raise ValueError(f"best_path must start at the root (node 0) and hold node ids in [0, {n}), got {path}")
        for a, b in itertools.pairwise(path):
            if parent_list[b] != a:
                raise ValueError(f"best_path must follow parent → child edges, but node {b}'s parent is not {a}")
    if steps_per_row is not None and (isinstance(steps_per_row, bool) or int(steps_per_row) < 2):
        raise ValueError(f"steps_per_row must be an int of at least 2 (or None), got {steps_per_row!r}")
    children: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(parent_list[1:], start=1):
        children[p].append(i)
    keep, dropped = _beam_tree_kept(names, parent_list, children, path, end if prune else None)
    children = [[c for c in kids if c in keep] for kids in children]
    y = [0.0] * n
    leaves = 0

    def place(node: int) -> None:  # depth-first: leaves get consecutive rows, parents the mean of their children
        nonlocal leaves
        for child in children[node]:
            place(child)
        if children[node]:
            y[node] = sum(y[c] for c in children[node]) / len(children[node])
        else:
            y[node] = float(leaves)
            leaves += 1

    place(0)
    on_path = set(path)
    path_edges = set(itertools.pairwise(path))
    families = _label_families(names)
    steps = max(depth[i] for i in keep)
    shown = token_labels(names)  # as words: "▁dog" -> "dog"
    texts = {i: shown[i] if i == 0 else f"{shown[i]}\n{score_arr[i]:.2f}" for i in keep}
    col_in = max(_width_in(line, _MIN_PT) for t in texts.values() for line in t.split("\n")) + 0.2
    per_row = int(steps_per_row) if steps_per_row is not None else max(2, int((_MAX_WIDTH_IN - 0.3) // col_in))
    if steps + 1 <= per_row:
        bands = [(0, steps)]
    else:  # rows of about equal length; each after the first repeats the last column of the row before
        size = int(np.ceil(steps / np.ceil(steps / (per_row - 1))))
        bands = [(lo, min(lo + size, steps)) for lo in range(0, steps, size)]
    columns = max(hi - lo + 1 for lo, hi in bands)
    spans = [
        (min(y[i] for i in keep if lo <= depth[i] <= hi), max(y[i] for i in keep if lo <= depth[i] <= hi))
        for lo, hi in bands
    ]
    row_in = 0.5
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
        band_h = [row_in * (top - bottom + 1.2) + 0.35 for bottom, top in spans]
        height = sum(band_h) + (0.35 if title else 0.0) + (0.3 if any(dropped) else 0.0)
        fig = Figure(figsize=(col_in * columns + 0.3, height), layout="constrained")
        axes = fig.subplots(len(bands), 1, squeeze=False, gridspec_kw={"height_ratios": band_h})[:, 0]
        for ax, (lo, hi), (bottom, top) in zip(axes, bands, spans):
            for i in sorted(keep):
                p = parent_list[i]
                if i == 0 or not (lo <= depth[p] and depth[i] <= hi):
                    continue
                best = (p, i) in path_edges
                ax.plot(
                    [depth[p], depth[i]],
                    [y[p], y[i]],
                    color=highlight if best else "0.6",
                    lw=2.5 if best else 1.0,
                    zorder=1,
                )
            for i in sorted(keep):
                if not lo <= depth[i] <= hi:
                    continue
                ax.text(
                    depth[i],
                    y[i],
                    texts[i],
                    ha="center",
                    va="center",
                    fontsize=_MIN_PT,
                    family=families,
                    zorder=2,
                    bbox=dict(
                        boxstyle="round,pad=0.25",
                        facecolor="white",
                        edgecolor=highlight if i in on_path else "0.6",
                        lw=1.8 if i in on_path else 0.8,
                    ),
                )
                if dropped[i] and (depth[i] < hi or hi == steps):
                    ax.plot([depth[i], depth[i] + 0.5], [y[i], y[i] + 0.5], color="0.6", lw=0.8, ls=":", zorder=0)
                    ax.text(
                        depth[i] + 0.5,
                        y[i] + 0.5,
                        f"+{dropped[i]}",
                        ha="center",
                        va="center",
                        fontsize=_MIN_PT,
                        color="0.35",
                        zorder=2,
                    )
            ax.set_xlim(lo - 0.5, lo + columns - 0.5)
            ax.set_ylim(top + 0.6, bottom - 0.6)  # first leaf at the top
            ax.set_xticks(range(lo, hi + 1))
            ax.tick_params(labelsize=_MIN_PT)
            ax.set_yticks([])
            for side in ("left", "right", "top"):
                ax.spines[side].set_visible(False)
        note = "; +N: hypotheses dropped from the beam there" if any(dropped) else ""
        axes[-1].set_xlabel(f"step t (token position){note}", fontsize=_FONT)
        if title:
            axes[0].set_title(title, fontsize=_FONT + 1)
    return fig


def _beam_tree_kept(
    names: list[str], parents: list[int], children: list[list[int]], path: list[int], end: str | None
) -> tuple[set[int], list[int]]:
    """The nodes drawn (all, or the paths to leaves labelled ``end`` and ``path``); per node, its dropped children."""
    n = len(names)
    finished = [i for i in range(n) if not children[i] and names[i] == end] if end is not None else []
    if not finished:
        return set(range(n)), [0] * n
    keep: set[int] = set(path)
    for leaf in finished:
        i = leaf
        while i != -1 and i not in keep:
            keep.add(i)
            i = parents[i]
    keep.add(0)
    dropped = [sum(1 for c in children[i] if c not in keep) if i in keep else 0 for i in range(n)]
    return keep, dropped


def plot_positional_encoding(
    pe: Any,
    *,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
    cmap: str = "RdBu",
) -> Figure:
    """Heatmap of a positional-encoding table: one row per position, one column per dimension.

    Args:
        pe: ``(max_len, d_model)`` array or tensor with values in [-1, 1] (sinusoidal PE);
            a leading size-1 batch axis is dropped.
        title: axes title.
        figsize: ``(width, height)`` in inches; default ``(6, 3.5)``.
        cmap: diverging colormap; colours are fixed to the range [-1, 1].

    Returns:
        The Figure: ``fig.axes[0].images[0]`` is the table (clim ``(-1, 1)``), ``fig.axes[1]``
        the colorbar.

    Raises:
        ValueError: ``pe`` is not 2-D after dropping leading size-1 axes, is empty or not numeric.

    Source: Vaswani et al. 2017, §3.5.
    """
    table = _squeeze_leading(_to_numpy(pe, "pe"), 2, "pe", "(max_len, d_model)")
    fig = Figure(figsize=figsize or (6.0, 3.5), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(table, cmap=cmap, vmin=-1.0, vmax=1.0, aspect="auto", interpolation="nearest")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    if title:
        ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
    return fig


def plot_curves(
    curves: Mapping[str, tuple[Any, Any]],
    *,
    xlabel: str = "step",
    ylabel: str = "loss",
    title: str | None = None,
    logy: bool = False,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Line plot of named curves, e.g. validation loss against training minutes for two models.

    Args:
        curves: mapping ``name -> (xs, ys)``, each a 1-D array, list or tensor of equal length;
            the name goes into the legend, right of the axes (where it hides no curve; names wrapped at 28
            characters). Curves with at most 20 points get markers.
        xlabel, ylabel: axis titles.
        title: axes title.
        logy: logarithmic y axis (all ys must then be positive).
        figsize: ``(width, height)`` in inches; default 3.2 in tall and as wide as the legend needs. At most 6.6 in
            wide (a page's column, where every text is shown at its size; a wider ``figsize`` is narrowed to it).

    Returns:
        The Figure; ``fig.axes[0].lines[i]`` is the i-th curve in the mapping's order.

    Raises:
        ValueError: ``curves`` is empty or not a mapping; a value is not a pair ``(xs, ys)`` of
            equal-length 1-D arrays; ``logy`` with a non-positive y.
    """
    if not isinstance(curves, Mapping) or len(curves) == 0:
        raise ValueError("curves must be a non-empty dict name -> (xs, ys)")
    data = []
    for name, pair in curves.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"curves[{name!r}] must be a pair (xs, ys), got {type(pair).__name__}")
        xs = _to_numpy(pair[0], f"curves[{name!r}] xs")
        ys = _to_numpy(pair[1], f"curves[{name!r}] ys")
        if xs.ndim != 1 or ys.ndim != 1 or xs.shape != ys.shape or xs.size == 0:
            raise ValueError(
                f"curves[{name!r}] must hold two non-empty 1-D arrays of equal length, "
                f"got xs {xs.shape} and ys {ys.shape}"
            )
        if logy and np.any(ys <= 0):
            raise ValueError(f"logy=True needs positive ys, but curves[{name!r}] has ys <= 0")
        data.append((str(name), xs, ys))

    # The legend sits right of the axes, where it hides no curve; long names wrap, and the figure widens for it
    # (at most 6.6 in, so that a page shows it at full size).
    wrapped = ["\n".join(textwrap.wrap(name, 28)) or name for name, _, _ in data]
    legend_in = max(_width_in(line, _FONT) for w in wrapped for line in w.split("\n")) + 0.45
    width, height = figsize or (4.6 + legend_in, 3.2)
    width = min(float(width), _MAX_WIDTH_IN)
    fig = Figure(figsize=(width, float(height)), layout="constrained")
    ax = fig.add_subplot()
    for name, xs, ys in data:
        ax.plot(xs, ys, label=name, marker="o" if xs.size <= 20 else None, markersize=4)
    if logy:
        ax.set_yscale("log")
    if max(np.abs(xs).max() for _, xs, _ in data) >= 10_000:  # five-digit ticks: as many as fit, not 10000 12000
        axes_in = width - legend_in - 0.9
        ax.xaxis.set_major_locator(MaxNLocator(nbins=max(3, int(axes_in / 0.75)), steps=[1, 2, 2.5, 4, 5, 10]))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(_wrap(title, max(2.5, width - legend_in), 1.2 * _FONT))  # centred over the axes, inside the figure
    ax.grid(True, alpha=0.3)
    ax.legend(ax.lines, wrapped, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def plot_mask(
    mask: Any,
    labels: Sequence[Any] | None = None,
    *,
    title: str | None = None,
) -> Figure:
    """A boolean attention mask as a two-colour grid: True (blue) = may attend, False (grey) = masked.

    Args:
        mask: ``(seq_q, seq_k)`` boolean array or tensor, True = the query (row) may attend to
            the key (column); 0/1 integers are accepted. Leading size-1 axes are dropped, so a
            ``(1, 1, seq_q, seq_k)`` broadcast mask is fine.
        labels: ``seq_k`` token labels for the key axis (x); also used for the query axis (y)
            when the mask is square (self-attention). At least 9 pt; where the cells are narrower than a line
            of text, every k-th token is labelled.
        title: axes title, wrapped where it is wider than the figure (at most 6.6 in, a page's column).

    Returns:
        The Figure: ``fig.axes[0].images[0]`` holds the mask as 0/1 integers; the legend
        explains the two colours.

    Raises:
        ValueError: ``mask`` is not 2-D after dropping leading size-1 axes, is empty, or holds
            values other than True/False (0/1), e.g. an additive ``-inf`` mask; ``labels`` has a
            length other than ``seq_k`` (or ``seq_q`` for a square mask).
    """
    if hasattr(mask, "detach"):
        m = mask.detach().cpu().numpy()
    else:
        m = np.asarray(mask)
    if m.dtype != bool:
        try:
            values = np.unique(m.astype(float))
        except (TypeError, ValueError) as err:
            raise ValueError("mask must be boolean (True = may attend)") from err
        if not np.all(np.isin(values, [0.0, 1.0])):
            raise ValueError(
                "mask must be boolean with True = may attend (0/1 accepted), got values "
                f"{values[:5].tolist()}; convert an additive -inf mask with `mask == 0`"
            )
        m = m.astype(bool)
    m = _squeeze_leading(m, 2, "mask", "(seq_q, seq_k)")
    seq_q, seq_k = m.shape
    xl = _check_labels(labels, seq_k, "labels", "key axis (x, mask.shape[-1])")
    yl = xl if seq_q == seq_k else None

    base_font = float(rcParams["font.size"])
    x_font = _tick_fontsize(seq_k) or base_font
    y_font = _tick_fontsize(seq_q) or base_font
    cell = _cell_inches(max(seq_q, seq_k))
    rotate = _should_rotate(xl, cell, x_font)
    legend_in = _width_in("True: may attend", _MIN_PT) + 0.5
    beside = _label_pad_in(yl, y_font) + 0.6 + legend_in
    cell = min(cell, max(0.08, (_MAX_WIDTH_IN - beside) / seq_k))  # square cells in a figure the column's width
    width = seq_k * cell + beside
    height = seq_q * cell + 0.9 + (_label_pad_in(xl, x_font) if rotate else 0.0)
    height += 0.3 if title else 0.0
    # No wider than the page's column (6.6 in), where it would be scaled down with its text.
    figsize = (float(np.clip(width, 3.5, _MAX_WIDTH_IN)), float(np.clip(height, 2.2, 6.5)))

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        colours = ListedColormap(["#d9d9d9", "#2c7fb8"])  # False: grey, True: blue
        ax.imshow(m.astype(int), cmap=colours, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        _set_ticks(ax, "x", xl, seq_k, rotate=rotate)
        _set_ticks(ax, "y", yl, seq_q)
        # white lines between cells
        ax.set_xticks(np.arange(-0.5, seq_k, 1.0), minor=True)
        ax.set_yticks(np.arange(-0.5, seq_q, 1.0), minor=True)
        ax.grid(which="minor", color="white", linewidth=1.0)
        ax.tick_params(which="minor", length=0)
        ax.set_xlabel("key (attended to)")
        ax.set_ylabel("query")
        if title:
            ax.set_title(_wrap(title, figsize[0] - legend_in, 1.2 * base_font))
        ax.legend(
            handles=[Patch(color="#2c7fb8", label="True: may attend"), Patch(color="#d9d9d9", label="False: masked")],
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            frameon=False,
            fontsize=_MIN_PT,
        )
        _fit_heatmap_ticks(ax, xl, yl, seq_k, seq_q, x_font, y_font)
    return fig


def plot_distributions(
    dists: Mapping[str, Any],
    labels: Sequence[Any] | None = None,
    *,
    title: str | None = None,
    xlabel: str = "outcome",
    ylabel: str = "probability",
    annotate: bool | None = None,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Grouped bar chart of discrete distributions over the same outcomes, e.g. softmax at several temperatures.

    Args:
        dists: mapping ``name -> probs``; each ``probs`` is a 1-D array, list or tensor of ``k``
            non-negative finite values (usually summing to 1), the same ``k`` for every entry. The name
            goes into the legend; the bars of one outcome stand side by side in the mapping's order.
        labels: ``k`` outcome labels drawn under the groups (e.g. tokens). None: ``0 .. k-1``.
        title: axes title.
        xlabel, ylabel: axis titles.
        annotate: write each value (``"{:.2f}"``, 9 pt) above its bar. None: only when there are at most
            16 bars in all. Bars too narrow for a 9-pt number get none, even with ``annotate=True``: the values
            are dropped rather than printed too small to read.
        figsize: ``(width, height)`` in inches; default grows with ``k``, from ``(5, 3.2)``, to at most 6.6 in
            wide (a page's column, where every text is shown at its size; a wider ``figsize`` is narrowed to it).
            Outcome labels wider than their group are turned 90°; the title wraps where it is wider than the
            figure.

    Returns:
        The Figure: ``fig.axes[0].containers[i]`` holds the ``k`` bars of the i-th distribution, so
        the axes has ``len(dists) * k`` bar patches. The y axis runs from 0 to 1 when every value is
        at most 1.

    Raises:
        ValueError: ``dists`` is empty or not a mapping; a distribution is not 1-D, is empty, holds a
            negative or non-finite value (e.g. the ``nan`` of an overflowing softmax), or differs in
            length from the first; ``labels`` has a length other than ``k``.
    """
    if not isinstance(dists, Mapping) or len(dists) == 0:
        raise ValueError("dists must be a non-empty dict name -> probs (1-D arrays of equal length)")
    data = []
    for name, probs in dists.items():
        p = _to_numpy(probs, f"dists[{name!r}]")
        if p.ndim != 1 or p.size == 0:
            raise ValueError(f"dists[{name!r}] must be a non-empty 1-D array, got shape {tuple(p.shape)}")
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError(f"dists[{name!r}] must hold non-negative finite values, got {p[:5].tolist()}")
        if data and p.shape != data[0][1].shape:
            raise ValueError(
                f"dists[{name!r}] has {p.size} values but dists[{data[0][0]!r}] has {data[0][1].size}; "
                f"every distribution must cover the same outcomes"
            )
        data.append((str(name), p))
    n, k = len(data), data[0][1].size
    xl = _check_labels(labels, k, "labels", "outcome axis (x, len of each distribution)")
    if annotate is None:
        annotate = n * k <= 16

    group = 0.8  # width of one group of n bars
    width = group / n
    xs = np.arange(k)
    # Legend right of the axes at 9 pt; the figure at most 6.6 in wide, so that a page shows it at full size.
    legend_in = max(_width_in(name, _MIN_PT) for name, _ in data) + 0.6 if n > 1 else 0.0
    fig_w = max(5.0, min(_MAX_WIDTH_IN, 1.2 + 0.35 * n * k + legend_in))
    fig_w, fig_h = (min(float(figsize[0]), _MAX_WIDTH_IN), float(figsize[1])) if figsize else (fig_w, 3.2)
    base_font = float(rcParams["font.size"])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
        fig = Figure(figsize=(fig_w, fig_h), layout="constrained")
        ax = fig.add_subplot()
        containers = [
            ax.bar(xs - group / 2 + (i + 0.5) * width, p, width=width, label=name) for i, (name, p) in enumerate(data)
        ]
        ax.set_xticks(xs)
        if xl is not None:
            texts = ax.set_xticklabels(xl)
            families = _label_families(xl)
            if families is not None:
                for text in texts:
                    text.set_fontfamily(families)
        top = max(float(p.max()) for _, p in data)
        ax.set_ylim(0.0, 1.0 if top <= 1.0 else top * 1.1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(_wrap(title, fig_w - 0.3, 1.2 * base_font))
        ax.grid(True, axis="y", alpha=0.3)
        if n > 1:  # outside the axes, where it cannot hide a bar of height 1
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=_MIN_PT)
        # Measure the drawn axes: outcome labels wider than a group turn 90°; values are written above the bars
        # at 9 pt where a bar is wide enough for one, and not at all where it is not.
        _run_layout(fig)
        group_in = _axes_inches(ax)[0] / (ax.get_xlim()[1] - ax.get_xlim()[0])
        longest_in = max(map(_display_width, xl)) * 0.55 * base_font / 72.0 if xl is not None else 0.0
        if longest_in > group_in:
            for text in ax.get_xticklabels():
                text.set_rotation(90)
            if figsize is None:  # the bars keep their height above the turned labels
                fig.set_figheight(fig_h + min(1.2, longest_in))
        if annotate:
            values = [[f"{v:.2f}" for v in p] for _, p in data]
            widest = max((v for row in values for v in row), key=_display_width)
            if _width_in(widest, _MIN_PT) <= 1.1 * group_in * width:
                for bars, labels_i in zip(containers, values):
                    ax.bar_label(bars, labels=labels_i, fontsize=_MIN_PT, padding=1)
    return fig


# --------------------------------------------------------------------------------------------
# Kernel-free sliders: a few pre-rendered figures and a range input, for the static website
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureSlider:
    """Pre-rendered figures with a slider that picks one: an interactive figure that needs no kernel.

    A notebook shows it through :meth:`_repr_html_` (an ``<input type="range">``, a label and an
    ``<img>``, plus a few lines of JavaScript that swap the image), so it works in Jupyter, in Colab
    and in the static website alike. The book's live ``ipywidgets`` views need a running kernel; this is
    the form the website keeps.

    Attributes:
        name: what the slider sets, e.g. ``"T"``; shown before the value and used as the input's label.
        labels: the ``n`` values as displayed, e.g. ``["0.1", "0.5", "1", "2"]``.
        frames: ``n`` PNG images (bytes), ``frames[i]`` drawn for ``labels[i]``.
        index: the frame shown first (``0 <= index < n``).
        alt: the images' alternative text; ``{value}`` is replaced by the frame's label.
        uid: the HTML id of the slider's container (unique within one page).
        alts: one alternative text per frame (a description of that figure); empty: ``alt`` for every frame.
    """

    name: str
    labels: tuple[str, ...]
    frames: tuple[bytes, ...] = field(repr=False)  # the notebook's text/plain output stays short
    index: int
    alt: str
    uid: str
    alts: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """One short line (the notebook's text/plain output): the name and the number of frames, not their texts."""
        return f"FigureSlider(name={self.name!r}, {len(self.frames)} frames)"

    def frame_alts(self) -> list[str]:
        """The alternative text of every frame.

        Returns:
            One string per frame, in slider order: ``alts``, or ``alt`` with each frame's label for ``{value}``.
        """
        if self.alts:
            return list(self.alts)
        return [self.alt.replace("{value}", v) for v in self.labels]

    def _repr_html_(self) -> str:
        urls = ["data:image/png;base64," + base64.b64encode(f).decode("ascii") for f in self.frames]
        name = html.escape(self.name)
        label = html.escape(self.labels[self.index])
        alts = self.frame_alts()
        alt = html.escape(alts[self.index])
        data = json.dumps({"frames": urls, "labels": list(self.labels), "alts": alts})
        # The data sits in a JSON script (not executed); the small script below reads it, so the
        # page needs no library and no network.
        return (
            f'<div class="figure-slider" id="{self.uid}">'
            f'<label style="display:block;font-family:sans-serif">{name} = '
            f'<output class="figure-slider-value">{label}</output><br>'
            f'<input type="range" class="figure-slider-input" min="0" max="{len(self.frames) - 1}" '
            f'step="1" value="{self.index}" aria-label="{name}" style="width:min(100%,28em)"></label>'
            f'<img class="figure-slider-image" src="{urls[self.index]}" alt="{alt}" '
            f'style="max-width:100%;display:block">'
            f'<script type="application/json" class="figure-slider-data">{_json_for_html(data)}</script>'
            "<script>(function () {"
            f'var root = document.getElementById("{self.uid}");'
            'var data = JSON.parse(root.querySelector(".figure-slider-data").textContent);'
            'var input = root.querySelector(".figure-slider-input");'
            'var image = root.querySelector(".figure-slider-image");'
            'var value = root.querySelector(".figure-slider-value");'
            'input.addEventListener("input", function () {'
            "var i = Number(input.value); image.src = data.frames[i]; image.alt = data.alts[i];"
            "value.textContent = data.labels[i]; });"
            "})();</script></div>"
        )


def _json_for_html(text: str) -> str:
    """JSON text made safe inside ``<script>``: no ``</`` can close the element early."""
    return text.replace("</", "<\\/")


def figure_slider(
    view: Any,
    values: Sequence[Any],
    *,
    name: str,
    index: int = 0,
    fmt: Any = str,
    alt: str | None = None,
    dpi: int = NOTEBOOK_DPI,
) -> FigureSlider:
    """Draw ``view(value)`` for each value and return a slider over the figures (no kernel needed).

    The book's interactive views are functions ``value -> Figure`` driven by an ``ipywidgets`` control
    in a live notebook. The website has no kernel, so each chapter also draws a few values in advance
    with this function; the reader slides between them in the browser.

    Args:
        view: a function ``view(value) -> matplotlib.figure.Figure`` (a figure from ``lib.plots`` or
            any Figure/pyplot figure). It is called once per value, in order.
        values: the ``n >= 2`` values to draw, in slider order (keep ``n`` small: every frame is a PNG
            embedded in the page, typically 15–60 kB each).
        name: what the slider sets, e.g. ``"T"`` or ``"head"``.
        index: the position in ``values`` shown first.
        fmt: ``fmt(value) -> str``, the label shown for a value (default ``str``).
        alt: the start of each frame's alternative text, ``{value}`` replaced by the frame's label (e.g.
            ``"Cross-attention of the last decoder layer, head {value}"``); the description of the frame's figure
            (:func:`describe_figure`: titles, axes, legend) and the slider's setting follow it. None: the
            description and the setting alone.
        dpi: resolution of the PNG frames, in dots per inch: the notebook's (:data:`NOTEBOOK_DPI`), so that a
            frame's 9-pt labels are 9 pt on the page, as every other figure's are.

    Returns:
        A :class:`FigureSlider`; a notebook displays it when a cell ends with it.

    Raises:
        ValueError: fewer than two values, ``index`` out of range, a non-positive ``dpi``, or ``view``
            returned something that is not a matplotlib figure (the message names the value).
    """
    values = list(values)
    if len(values) < 2:
        raise ValueError(f"figure_slider needs at least 2 values to slide between, got {len(values)}")
    if not 0 <= index < len(values):
        raise ValueError(f"index must be in [0, {len(values) - 1}] (one of the {len(values)} values), got {index}")
    if dpi <= 0:
        raise ValueError(f"dpi must be positive, got {dpi}")
    frames, labels, alts = [], [], []
    for value in values:
        fig = view(value)
        if not hasattr(fig, "savefig"):
            raise ValueError(f"view({value!r}) returned {type(fig).__name__}; it must return a matplotlib Figure")
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
            fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        label = str(fmt(value))
        lead = alt.replace("{value}", label).rstrip(". ") + ". " if alt else ""
        what = describe_figure(fig)
        alts.append(f"{lead}{what} Slider {name} set to {label} (frame {len(frames) + 1} of {len(values)}).")
        _close_if_pyplot(fig)
        frames.append(buf.getvalue())
        labels.append(label)
    uid = "figure-slider-" + _digest(name, labels, frames)
    return FigureSlider(
        name=name,
        labels=tuple(labels),
        frames=tuple(frames),
        index=index,
        alt=alt if alt is not None else f"{name} = {{value}}",
        uid=uid,
        alts=tuple(alts),
    )


def describe_figure(fig: Any, most: int = 6) -> str:
    """A plain-text description of a figure for its alternative text: what a reader who cannot see it is shown.

    Read from the figure itself: its suptitle, then per axes (colorbars skipped) the kind of plot (heat map, lines,
    bars), its title, its axis labels with the first tick labels of a category axis, and its legend entries.

    Args:
        fig: a matplotlib Figure.
        most: at most this many axes, tick labels and legend entries are named (the rest are counted).

    Returns:
        One or a few sentences, e.g. ``"Bar chart 'P(next token)': x axis next token (▁people, ▁men, …), y axis
        probability; legend: T = 0.5, T = 1."``.
    """
    parts = []
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text().strip():
        parts.append(f"Figure '{_one_line(sup.get_text())}'.")
    plots = [ax for ax in fig.axes if ax.get_visible() and not _is_colorbar(ax)]
    if len(plots) > most:
        kinds = sorted({_axes_kind(ax) for ax in plots})
        parts.append(f"A grid of {len(plots)} panels ({', '.join(kinds)}).")
        shown = plots[:1]
        titles = [_one_line(ax.get_title()) for ax in plots if ax.get_title().strip()]
        if titles:
            parts.append(f"Panels titled {', '.join(titles[:most])}{', …' if len(titles) > most else ''}.")
    else:
        shown = plots
    for ax in shown:
        bits = []
        title = _one_line(ax.get_title())
        head = _axes_kind(ax).capitalize() + (f" '{title}'" if title else "")
        for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            label = _one_line(axis.get_label().get_text())
            ticks = [_one_line(t.get_text()) for t in axis.get_ticklabels() if t.get_text().strip()]
            words = [t for t in ticks if not _is_number(t)]
            if label or words:
                named = f" ({', '.join(words[:most])}{', …' if len(words) > most else ''})" if words else ""
                bits.append(f"{name} axis {label or 'labels'}{named}".rstrip())
        legend = ax.get_legend()
        entries = [_one_line(t.get_text()) for t in legend.get_texts()] if legend is not None else []
        if entries:
            bits.append(f"legend: {', '.join(entries[:most])}{', …' if len(entries) > most else ''}")
        parts.append(head + (": " + "; ".join(bits) if bits else "") + ".")
    return " ".join(parts) if parts else "A figure without text."


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _is_number(text: str) -> bool:
    try:
        float(text.replace("−", "-"))
    except ValueError:
        return False
    return True


def _is_colorbar(ax: Any) -> bool:
    return getattr(ax, "_colorbar", None) is not None or ax.get_label() == "<colorbar>"


def _axes_kind(ax: Any) -> str:
    if ax.images:
        return "heat map"
    if ax.containers and any(type(c).__name__ == "BarContainer" for c in ax.containers):
        return "bar chart"
    if ax.lines:
        return "line plot"
    return "diagram" if ax.texts or ax.patches else "empty panel"


def _digest(name: str, labels: Sequence[str], frames: Sequence[bytes]) -> str:
    """A short id that is the same for the same figures, so a re-executed notebook is stable."""
    import hashlib

    h = hashlib.sha1(name.encode())
    for label, frame in zip(labels, frames):
        h.update(label.encode())
        h.update(frame)
    return h.hexdigest()[:12]


def _close_if_pyplot(fig: Any) -> None:
    """Close a figure that pyplot manages (a plain ``Figure`` is not registered and needs nothing)."""
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None and getattr(fig, "number", None) is not None and plt.fignum_exists(fig.number):
        plt.close(fig)


# --------------------------------------------------------------------------------------------
# Legibility: how large a figure's text is where the reader sees it
# --------------------------------------------------------------------------------------------


def drawn_text_sizes(fig: Any, *, dpi: float = NOTEBOOK_DPI) -> tuple[list[tuple[float, str]], float]:
    """Every piece of text a figure draws, with its font size, and the width of the PNG a notebook shows.

    The figure is drawn once with a renderer that records each string it is asked to draw (titles, labels, tick
    labels that fall inside the view, legend entries, annotations), so hidden or clipped-away text does not count.

    Args:
        fig: a matplotlib Figure.
        dpi: the resolution of the PNG (a notebook's is :data:`NOTEBOOK_DPI`).

    Returns:
        ``(sizes, width_px)``: ``sizes`` is a list of ``(points, text)``, one per drawn string; ``width_px`` is the
        width of the PNG saved with ``bbox_inches="tight"`` (as a notebook and :func:`figure_slider` save it).

    Raises:
        ValueError: ``fig`` is not a matplotlib Figure.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not hasattr(fig, "savefig"):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    original_dpi = fig.dpi
    fig.set_dpi(dpi)
    try:
        renderer = canvas.get_renderer()
        drawn: list[tuple[float, str]] = []
        draw_text = renderer.draw_text

        def record(gc: Any, x: float, y: float, s: str, prop: Any, angle: float, *args: Any, **kw: Any) -> Any:
            if s.strip():
                drawn.append((float(prop.get_size_in_points()), s))
            return draw_text(gc, x, y, s, prop, angle, *args, **kw)

        renderer.draw_text = record
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
            fig.draw(renderer)
            del renderer.draw_text
            bbox = fig.get_tightbbox(renderer)
        width_px = (bbox.width + 2 * float(rcParams["savefig.pad_inches"])) * dpi
    finally:
        fig.set_dpi(original_dpi)
    return drawn, width_px


def smallest_text_pt(fig: Any, *, dpi: float = NOTEBOOK_DPI, column_px: float = PAGE_COLUMN_PX) -> float:
    """The smallest text of a figure, in points, as a reader sees it on a page ``column_px`` pixels wide.

    A page shows one PNG pixel per CSS pixel, so a point is ``dpi / 72`` pixels at the notebook's :data:`NOTEBOOK_DPI`
    (100) and fewer at a lower ``dpi``: a 9-pt label of a PNG saved at 80 dpi reads as 7.2 pt. A figure whose PNG
    (``width in inches × dpi`` pixels) is wider than the column is scaled down to fit it, and its text with it: a 7 pt
    label of a 2,191-px figure is ``7 × 688 / 2191 ≈ 2.2`` pt on a 688-px page. The book asks for at least 9 pt at
    the desktop column (688 px).

    Args:
        fig: a matplotlib Figure.
        dpi: the resolution of the PNG the page shows (:data:`NOTEBOOK_DPI` for a notebook's output; a
            :func:`figure_slider`'s frames use its ``dpi``).
        column_px: the width of the page's column in pixels (:data:`PAGE_COLUMN_PX`; about 358 on a 390-px phone).

    Returns:
        ``min(font sizes) × dpi / NOTEBOOK_DPI × min(1, column_px / png_width)``, in points; ``inf`` for a figure
        without text.
    """
    sizes, width_px = drawn_text_sizes(fig, dpi=dpi)
    if not sizes:
        return float("inf")
    return min(size for size, _ in sizes) * dpi / NOTEBOOK_DPI * min(1.0, column_px / width_px)
