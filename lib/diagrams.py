"""Schematics of the book, drawn in code: the whole Transformer (the paper's Figure 1) and one picture per mechanism.

Hand-placed boxes, arrows and labels, not data: each function takes the few numbers a schematic shows (the number of
layers written beside a stack) and returns a :class:`matplotlib.figure.Figure`, built without ``pyplot`` (no global
figure registry, no ``plt.show()``, no rcParams changes), like the figures of :mod:`lib.plots`. Nearly a
leaf: matplotlib and :mod:`lib.token_labels` (sub-word tokens labelled as words, as the explorer labels them), nothing
else from ``lib``; the labels name ``lib`` code as text, which the tests resolve.

The mechanism schematics (the encoder–decoder's context vector, a Bahdanau step, one token's q/k/v, multi-head
attention's shapes and what a ``view`` without ``transpose`` scrambles, the sinusoidal clocks, masks, post-LN
against pre-LN, the KV cache, BERT's input, efficient attentions' patterns, RoPE, grouped-query heads) take the
numbers the chapter computes with ``lib`` and write them, so a schematic cannot drift from the code. They fit a
page's content column (at most 6.9 in wide, no text under 9 pt), use colour-blind-safe colours, and
:func:`save_svg` writes any of them as SVG, plain labels as text and maths labels as outlines (no font needed).
"""

from __future__ import annotations

import io
import itertools
import textwrap
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib import font_manager, patheffects, rc_context, rcParams
from matplotlib.cbook import is_math_text
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle
from matplotlib.text import Text

from lib.token_labels import token_labels

__all__ = [
    "plot_transformer_diagram",
    "TRANSFORMER_DIAGRAM_BLOCKS",
    "save_svg",
    "to_svg",
    "plot_encoder_decoder",
    "plot_bahdanau_step",
    "plot_qkv_step",
    "plot_multihead",
    "head_slice_sources",
    "plot_view_scramble",
    "plot_sinusoid_clocks",
    "plot_masks",
    "plot_residual_paths",
    "plot_kv_cache",
    "plot_bert_input",
    "plot_attention_patterns",
    "plot_rope_rotation",
    "plot_grouped_query",
]

#: The blocks of :func:`plot_transformer_diagram`, bottom to top: ``(key, what the block does, the lib code)``.
#: The third entry names the ``lib`` class (or the attribute of a ``lib`` class) that implements the block;
#: tests resolve every name in it. The chapter's legend under the figure lists the same keys.
TRANSFORMER_DIAGRAM_BLOCKS: tuple[tuple[str, str, str], ...] = (
    ("src_embed", "Embedding × √d_model", "Transformer.src_embed"),
    ("src_pe", "+ positional encoding", "PositionalEncoding"),
    ("enc_self", "Multi-head self-attention", "MultiHeadAttention"),
    ("enc_norm1", "Add & Norm", "EncoderLayer.norm1"),
    ("enc_ffn", "Feed-forward", "PositionwiseFeedForward"),
    ("enc_norm2", "Add & Norm", "EncoderLayer.norm2"),
    ("tgt_embed", "Embedding × √d_model", "Transformer.tgt_embed"),
    ("tgt_pe", "+ positional encoding", "PositionalEncoding"),
    ("dec_self", "Masked multi-head self-attention", "MultiHeadAttention"),
    ("dec_norm1", "Add & Norm", "DecoderLayer.norm1"),
    ("dec_cross", "Multi-head cross-attention", "MultiHeadAttention"),
    ("dec_norm2", "Add & Norm", "DecoderLayer.norm2"),
    ("dec_ffn", "Feed-forward", "PositionwiseFeedForward"),
    ("dec_norm3", "Add & Norm", "DecoderLayer.norm3"),
    ("output", "Linear (tied to the embedding)", "Transformer.output"),
    ("softmax", "Softmax", "torch.softmax"),
)

# Fill colours of the diagram's kinds of block (close to the paper's Figure 1).
_DIAGRAM_COLOURS = {
    "embed": "#f6c9d0",
    "pe": "#ffffff",
    "attn": "#fbd9b5",
    "norm": "#f3f1a8",
    "ffn": "#c6e2f5",
    "output": "#d9d2ec",
    "softmax": "#cfe8cf",
}


def _diagram_kind(key: str) -> str:
    for part, kind in (("embed", "embed"), ("pe", "pe"), ("self", "attn"), ("cross", "attn"), ("norm", "norm")):
        if part in key:
            return kind
    return "ffn" if "ffn" in key else key


def plot_transformer_diagram(
    num_encoder_layers: int | str = "N",
    num_decoder_layers: int | str = "N",
    *,
    title: str | None = "The Transformer, block by block (lib class under each block)",
    part: str = "both",
) -> Figure:
    """The encoder–decoder Transformer as a block diagram, each block labelled with the ``lib`` code that runs it.

    Drawn like the paper's Figure 1 (post-LN, as published): on the left the encoder (source embedding × √d_model
    plus the positional encoding, then N encoder layers of self-attention and feed-forward, each followed by Add &
    Norm); on the right the decoder (the target shifted right, embedded the same way, then N decoder layers of
    masked self-attention, cross-attention over the encoder output and feed-forward, each with Add & Norm), then
    the output layer tied to the embedding and a softmax. Residual connections are drawn as lines around each
    sub-layer; the encoder output (the memory) feeds every decoder layer's cross-attention. The blocks are
    :data:`TRANSFORMER_DIAGRAM_BLOCKS`.

    Legible on a page: ``part="both"`` is 6.6 in wide with no text under 9.5 pt, so it is not scaled down in a
    688-px column; ``part="encoder"`` and ``part="decoder"`` draw one side each, 3.4 in wide (shown at full size
    on a 390-px phone), to be shown one above the other.

    Args:
        num_encoder_layers: the N written beside the encoder stack (an int, or a symbol such as ``"N"``).
        num_decoder_layers: the N written beside the decoder stack.
        title: figure title (None: none).
        part: ``"both"``, ``"encoder"`` or ``"decoder"``.

    Returns:
        The Figure: one axes without ticks holding the blocks (patches, each with its block's key as gid) and their
        labels (texts).

    Raises:
        ValueError: a number of layers that is a negative int, or an empty string; an unknown ``part``.

    Source: Vaswani et al. 2017, Figure 1 and §3.1–§3.5.
    """
    for name, n in (("num_encoder_layers", num_encoder_layers), ("num_decoder_layers", num_decoder_layers)):
        if isinstance(n, bool) or not isinstance(n, (int, str)) or (isinstance(n, int) and n < 0) or n == "":
            raise ValueError(f"{name} must be a non-negative int or a symbol such as 'N', got {n!r}")
    if part not in ("both", "encoder", "decoder"):
        raise ValueError(f"part must be 'both', 'encoder' or 'decoder', got {part!r}")

    label_pt, code_pt, note_pt = _FONT, 9.5, 9.5
    bw, bh, col = 2.45, 0.5, 3.3  # box width and height, one column's width (inches)
    enc, dec = part in ("both", "encoder"), part in ("both", "decoder")
    width = col * (enc + dec) + (0.45 if part == "decoder" else 0.0)
    xe = col / 2 + 0.05
    xd = (col if enc else 0.45) + col / 2 - 0.05
    fig, ax = _canvas(width, 13.0)  # cut to the drawing's height at the end
    y0 = 1.05  # room for the footnote under the inputs
    blocks = {key: (label, code) for key, label, code in TRANSFORMER_DIAGRAM_BLOCKS}
    centres: dict[str, tuple[float, float]] = {}
    grey, memory_colour, tied_colour = "#555555", "#b5522b", "#6a3d9a"

    def box(key: str, x: float, y: float) -> None:
        label, code = blocks[key]
        patch = FancyBboxPatch(
            (x - bw / 2, y - bh / 2),
            bw,
            bh,
            boxstyle="round,pad=0,rounding_size=0.08",
            facecolor=_DIAGRAM_COLOURS[_diagram_kind(key)],
            edgecolor=_EDGE,
            linewidth=1.0,
            gid=key,
            zorder=2,
        )
        ax.add_patch(patch)
        _text(ax, x, y + 0.11, label, label_pt, zorder=3)
        _text(ax, x, y - 0.13, code, code_pt, family="monospace", color="#1f3b73", zorder=3)
        centres[key] = (x, y)

    def up(a: str, b: str) -> None:
        (xa, ya), (xb, yb) = centres[a], centres[b]
        _arrow(ax, (xa, ya + bh / 2), (xb, yb - bh / 2))

    def residual(x: float, y_from: float, to: str) -> None:  # around the left of a sub-layer into its Add & Norm
        left = x - bw / 2 - 0.18
        xt, yt = centres[to]
        _line(ax, [x, left, left], [y_from, y_from, yt], colour="#777777")
        _arrow(ax, (left, yt), (xt - bw / 2, yt), colour="#777777")

    def stack(x: float, y_lo: float, y_hi: float, n: int | str, layer: str, name: str) -> None:
        ax.add_patch(
            FancyBboxPatch(
                (x - bw / 2 - 0.3, y_lo),
                bw + 0.6,
                y_hi - y_lo,
                boxstyle="round,pad=0,rounding_size=0.12",
                facecolor="#f2f2f2",
                edgecolor=grey,
                linewidth=1.2,
                zorder=0,
            )
        )
        _text(ax, x + 0.12, y_hi - 0.2, f"{name}: {n} × {layer}", code_pt, family="monospace", color="#1f3b73")
        _text(ax, x - bw / 2 - 0.12, y_hi - 0.2, f"{n}×", 12, weight="bold", ha="left")

    def inputs(x: float, text: str, embed: str, pe: str) -> None:
        _text(ax, x, y0 + 0.05, text, note_pt)
        box(embed, x, y0 + 0.75)
        box(pe, x, y0 + 1.55)
        _arrow(ax, (x, y0 + 0.25), (x, y0 + 0.75 - bh / 2))
        up(embed, pe)

    layer_lo = y0 + 2.15  # the bottom of both stacks
    if enc:
        inputs(xe, "source ids (batch, seq_s) + </s>", "src_embed", "src_pe")
        ys = {"enc_self": layer_lo + 0.7, "enc_norm1": layer_lo + 1.35, "enc_ffn": layer_lo + 2.3, "enc_norm2": 0.0}
        ys["enc_norm2"] = ys["enc_ffn"] + 0.8
        for key, y in ys.items():
            box(key, xe, y)
        enc_top = ys["enc_norm2"] + bh / 2 + 0.5
        stack(xe, layer_lo, enc_top, num_encoder_layers, "EncoderLayer", "Encoder")
        _arrow(ax, (xe, y0 + 1.55 + bh / 2), (xe, ys["enc_self"] - bh / 2))
        up("enc_self", "enc_norm1")
        up("enc_norm1", "enc_ffn")
        up("enc_ffn", "enc_norm2")
        residual(xe, layer_lo + 0.15, "enc_norm1")
        residual(xe, (ys["enc_norm1"] + ys["enc_ffn"]) / 2, "enc_norm2")
        _text(ax, xe - 0.08, layer_lo + 0.32, "Q, K, V", note_pt, color=grey, ha="right")
        _text(ax, xe + 0.08, layer_lo + 0.32, "padding_mask", note_pt, family="monospace", color=grey, ha="left")
    if dec:
        inputs(xd, "target shifted right: <s> + y (batch, seq_t)", "tgt_embed", "tgt_pe")
        names = ("dec_self", "dec_norm1", "dec_cross", "dec_norm2", "dec_ffn", "dec_norm3")
        yd = {}
        y = layer_lo + 0.7
        for key in names:
            yd[key] = y
            y += 0.95 if "norm" in key else 0.8
        for key, y in yd.items():
            box(key, xd, y)
        dec_top = yd["dec_norm3"] + bh / 2 + 0.5
        stack(xd, layer_lo, dec_top, num_decoder_layers, "DecoderLayer", "Decoder")
        _arrow(ax, (xd, y0 + 1.55 + bh / 2), (xd, yd["dec_self"] - bh / 2))
        for a_key, b_key in itertools.pairwise(names):
            up(a_key, b_key)
        residual(xd, layer_lo + 0.15, "dec_norm1")
        residual(xd, (yd["dec_norm1"] + yd["dec_cross"]) / 2, "dec_norm2")
        residual(xd, (yd["dec_norm2"] + yd["dec_ffn"]) / 2, "dec_norm3")
        _text(ax, xd + 0.08, layer_lo + 0.32, "causal_mask", note_pt, family="monospace", color=grey, ha="left")
        _text(ax, xd + 0.75, (yd["dec_norm1"] + yd["dec_cross"]) / 2, "Q from here", note_pt, color=grey)
        box("output", xd, dec_top + 0.55)
        box("softmax", xd, dec_top + 1.35)
        _arrow(ax, (xd, dec_top), (xd, dec_top + 0.55 - bh / 2))
        up("output", "softmax")
        top_y = dec_top + 1.35 + bh / 2 + 0.45
        _arrow(ax, (xd, dec_top + 1.35 + bh / 2), (xd, top_y - 0.15))
        _text(ax, xd, top_y, "P(y_t | y_<t, x): (batch, seq_t, vocab)", note_pt)

    # the memory: the encoder output feeds every decoder layer's cross-attention (keys and values)
    memory_label = "memory (batch, seq_s, d_model):\nkeys and values of every\ncross-attention, with padding_mask"
    cross_y = centres["dec_cross"][1] if dec else layer_lo + 3.4
    if enc:
        mem_y = enc_top + 0.3
        if dec:
            x_turn = xe + bw / 2 + 0.42
            _line(ax, [xe, xe], [centres["enc_norm2"][1] + bh / 2, mem_y], colour=memory_colour, lw=1.5)
            _line(ax, [xe, x_turn, x_turn], [mem_y, mem_y, cross_y], colour=memory_colour, lw=1.5)
            _arrow(ax, (x_turn, cross_y), (xd - bw / 2, cross_y), colour=memory_colour, lw=1.5)
        else:  # up and out: to every decoder layer
            _arrow(ax, (xe, centres["enc_norm2"][1] + bh / 2), (xe, mem_y + 0.1), colour=memory_colour, lw=1.5)
            mem_y += 0.1
        _text(ax, xe - bw / 2 - 0.3, mem_y + 0.12, memory_label, note_pt, color=memory_colour, ha="left", va="bottom")
    else:
        _arrow(ax, (0.03, cross_y), (xd - bw / 2, cross_y), colour=memory_colour, lw=1.5)
        _text(ax, 0.03, cross_y + 0.15, "memory", note_pt, color=memory_colour, ha="left")

    # the tied matrix: one table for both embeddings and the output layer
    tied_note = "one matrix for src_embed, tgt_embed\nand output (share_embeddings=True)"
    if enc and dec:
        x_tied = 0.08
        out_y = centres["output"][1]
        _line(
            ax,
            [xe - bw / 2, x_tied, x_tied, xd - bw / 2],
            [centres["src_embed"][1]] * 2 + [out_y] * 2,
            colour=tied_colour,
            ls="--",
        )
        _text(ax, xe - bw / 2 - 0.3, out_y + 0.12, tied_note, note_pt, color=tied_colour, ha="left", va="bottom")
    elif dec:
        _text(ax, xd, top_y + 0.5, "output tied to the embeddings\n(share_embeddings=True)", note_pt, color=tied_colour)
        top_y += 0.75
    footnote = (
        "lib.transformer.Transformer: post-LN, as in the paper; norm_first=True puts each LayerNorm\n"
        "before its sub-layer and adds one after each stack (the capstone's pre-LN model)"
        if enc and dec
        else "lib.transformer.Transformer: post-LN, as in the paper;\nnorm_first=True: pre-LN (the capstone)"
    )
    _text(ax, width / 2, 0.45, footnote, note_pt, color="#333333")
    if not dec:
        top_y = mem_y + 0.85
    wrapped = (title if part == "both" else "\n".join(textwrap.wrap(title, 42))) if title else ""
    height = top_y + 0.25 + (0.3 + 0.2 * (wrapped.count("\n") + 1) if title else 0.0)
    fig.set_size_inches(width, height)
    ax.set_ylim(0, height)
    if title:
        _text(ax, width / 2, height - 0.15, wrapped, _FONT + 1, weight="bold", va="top")
    return fig


# ============================================================================================
# The mechanism schematics (issue 31): one function per idea, drawn from the numbers a chapter computes
# ============================================================================================
#
# Each draws on one axes that fills the figure, in inch coordinates (x from 0 to the width, y from 0 to the height),
# so that boxes and labels are placed where they will be printed. Text is at least _SMALL pt at a width of at most
# _MAX_WIDTH in (a page's content column; the same figure is readable on a 390-px phone). Colours are the Okabe–Ito
# palette (safe for every common colour-vision deficiency) and its light tints: blue against orange, never red
# against green, and what must be told apart differs in lightness or hatching too.

_MAX_WIDTH = 6.9  # inches: the content column of a page
_FONT = 10.0  # points: labels
_SMALL = 9.0  # points: the smallest text of a schematic
_EDGE = "#333333"
_BLUE, _ORANGE, _PURPLE, _SKY = "#0072B2", "#E69F00", "#CC79A7", "#56B4E9"
_TINT = {"blue": "#d2e6f5", "orange": "#fce3b6", "purple": "#f2d8e8", "grey": "#eeeeee", "white": "#ffffff"}
_ORANGE_TEXT = "#8a5a00"  # orange dark enough for text on white
_ALLOWED, _MASKED = _BLUE, "#eeeeee"  # mask cells: dark blue = may attend; light grey, hatched = masked


def _cjk_family(text: str) -> list[str] | None:
    """A font-family list with a CJK fallback for text with CJK characters (None for other text)."""
    if not any(ord(c) >= 0x2E80 for c in text):
        return None
    names = {f.name for f in font_manager.fontManager.ttflist}
    cjk = next((n for n in _CJK_FONTS if n in names), None)
    cjk = cjk or next((n for n in sorted(names) if any(p in n for p in ("CJK", "WenQuanYi", "Han Sans"))), None)
    families = list(rcParams["font.family"])
    return families + [cjk] if cjk else families


_CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "Droid Sans Fallback")


def _width_in(text: str, size: float) -> float:
    """A generous estimate of the printed width of one line of text, in inches (CJK characters count double)."""
    cells = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return cells * 0.58 * size / 72.0


def _fit_size(labels: Sequence[str], width: float, name: str) -> float:
    """The largest font size (10 or 9 pt) at which every label fits ``width`` inches; ValueError if none does."""
    for size in (_FONT, _SMALL):
        if all(_width_in(s, size) <= width for s in labels):
            return size
    longest = max(labels, key=lambda s: _width_in(s, _SMALL))
    raise ValueError(f"{name}: the label {longest!r} is too long for its {width:.2f} in column; shorten it")


def _canvas(width: float, height: float) -> tuple[Figure, Any]:
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return fig, ax


def _text(ax: Any, x: float, y: float, s: str, size: float = _FONT, **kw: Any) -> Any:
    kw.setdefault("ha", "center")
    kw.setdefault("va", "center")
    family = _cjk_family(s)
    if family is not None:
        kw["fontfamily"] = family
    return ax.text(x, y, s, fontsize=size, **kw)


def _box(
    ax: Any, x: float, y: float, w: float, h: float, label: str = "", fc: str = "white", size: float = _FONT, **kw: Any
) -> None:
    ec = kw.pop("ec", _EDGE)
    lw = kw.pop("lw", 1.0)
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.05", fc=fc, ec=ec, lw=lw, zorder=2
        )
    )
    if label:
        _text(ax, x, y, label, size, zorder=3, **kw)


def _arrow(ax: Any, start: tuple[float, float], end: tuple[float, float], colour: str = _EDGE, **kw: Any) -> None:
    style = dict(arrowstyle="-|>", mutation_scale=10, linewidth=1.0, color=colour, shrinkA=0, shrinkB=0, zorder=1)
    ax.add_patch(FancyArrowPatch(start, end, **{**style, **kw}))


def _line(ax: Any, xs: Sequence[float], ys: Sequence[float], colour: str = _EDGE, **kw: Any) -> None:
    ax.plot(xs, ys, color=colour, linewidth=kw.pop("lw", 1.0), zorder=kw.pop("zorder", 1), **kw)


def _num(value: float, digits: int = 2) -> str:
    """A number rounded for a label ('-0.00' written as '0.00')."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _vector(values: np.ndarray, digits: int = 2, most: int = 4) -> str:
    shown = ", ".join(_num(v, digits) for v in values[:most])
    return f"[{shown}{', …' if len(values) > most else ''}]"


def _array(x: Any, name: str, ndim: int) -> np.ndarray:
    """A float numpy copy of a numpy array, a torch tensor or a nested sequence, with ``ndim`` axes."""
    if hasattr(x, "detach"):  # a torch.Tensor, without importing torch
        x = x.detach().cpu().float().numpy()
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}") from err
    if arr.ndim != ndim or arr.size == 0 or not np.isfinite(arr).all():
        raise ValueError(f"{name} must be a finite, non-empty {ndim}-D array, got shape {arr.shape}")
    return arr


def _bools(x: Any, name: str, ndim: int) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype != bool or arr.ndim != ndim or arr.size == 0:
        raise ValueError(
            f"{name} must be a non-empty {ndim}-D bool array (True = may attend), got {arr.dtype} {arr.shape}"
        )
    return arr


def _labels(x: Any, name: str, most: int, least: int = 1) -> list[str]:
    if isinstance(x, str) or not isinstance(x, Sequence):
        raise ValueError(f"{name} must be a sequence of labels, got {type(x).__name__}")
    labels = token_labels(x)  # "▁Hund" -> "Hund", a continuation "maschine" -> "-maschine"
    if not least <= len(labels) <= most:
        raise ValueError(f"{name} must have {least} to {most} labels to fit the page, got {len(labels)}")
    return labels


def _same_length(name: str, n: int, **others: int) -> None:
    for other, m in others.items():
        if m != n:
            raise ValueError(f"{other} has {m} entries but {name} has {n}; they must match")


def _positive_int(value: Any, name: str, most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if most is not None and value > most:
        raise ValueError(f"{name} must be at most {most} to fit the page, got {value}")
    return int(value)


def _title(ax: Any, fig: Figure, title: str | None) -> None:
    if title:
        width, height = fig.get_size_inches()
        _text(ax, width / 2, height - 0.2, title, _FONT, weight="bold")


def save_svg(fig: Figure, path: Any) -> None:
    """Write a figure as SVG: plain labels as ``<text>``, maths labels as outlines.

    A plain label is one ``<text>`` element, anchored at its start, middle or end: sharp at any zoom, searchable,
    and drawn with whatever sans-serif font the reader's system has. A maths label (``$\\alpha_{ij}$``) is set by
    matplotlib glyph by glyph at DejaVu Sans's widths, and its radicals use STIX size fonts: kept as text it falls
    apart on a system without those fonts (Windows, macOS, iOS, Android), so it is written as outlines, which need
    no font. (The site shows every schematic as an image with its alt text, which names what the labels say.)

    Args:
        fig: the figure (any figure of :mod:`lib.diagrams` or :mod:`lib.plots`).
        path: a file path or a binary file object to write to.

    Returns:
        None; the SVG is in ``path``, the same bytes for the same figure (fixed ids, no date). ``svg.fonttype:
        none`` is set only while saving (no global rcParams change), and the figure is left as it was.
    """
    # A path effect draws a label through the renderer's outline path, whatever svg.fonttype says.
    maths = [t for t in fig.findobj(Text) if t.get_visible() and is_math_text(t.get_text())]
    effects = [t.get_path_effects() for t in maths]
    for label in maths:
        label.set_path_effects([patheffects.Normal()])
    try:
        # A fixed salt for the ids matplotlib gives clip paths and no date: the same figure gives the same bytes.
        with rc_context({"svg.fonttype": "none", "svg.hashsalt": "attention-book"}):
            fig.savefig(path, format="svg", metadata={"Date": None})
    finally:
        for label, effect in zip(maths, effects):
            label.set_path_effects(effect)


def to_svg(fig: Figure) -> str:
    """The figure as SVG text, its text kept as ``<text>`` elements: what a chapter displays (``SVG(to_svg(fig))``).

    Args:
        fig: the figure.

    Returns:
        The SVG document as a string.
    """
    buffer = io.BytesIO()
    save_svg(fig, buffer)
    return buffer.getvalue().decode("utf-8")


# --------------------------------------------------------------------------------------------
# 1. The encoder–decoder and its single context vector
# --------------------------------------------------------------------------------------------


def plot_encoder_decoder(
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    context: Any = None,
    *,
    title: str | None = None,
) -> Figure:
    """The RNN encoder–decoder: every source token feeds the encoder, whose last state C is all the decoder sees.

    Source tokens → encoder states h_1 … h_n → C → decoder states s_1 … s_m (each fed C and the previous target
    token) → output tokens. A bracket marks the path length: the first source token reaches the first output
    through n recurrent steps and C, ``n + 1`` steps.

    Args:
        source_tokens: the source sentence, 1 to 7 tokens.
        target_tokens: the target sentence, 1 to 7 tokens (at most 11 tokens in all).
        context: optional, the context vector C (1-D, e.g. ``(hidden,)``): its first values and size are written.
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: empty or too many tokens, a label too long for its column, or a context that is not 1-D.
    """
    src = _labels(source_tokens, "source_tokens", 7)
    tgt = _labels(target_tokens, "target_tokens", 7)
    if len(src) + len(tgt) > 11:
        raise ValueError(
            f"source_tokens and target_tokens must have at most 11 tokens in all, got {len(src) + len(tgt)}"
        )
    c = None if context is None else _array(context, "context", 1)
    n, m = len(src), len(tgt)
    width = _MAX_WIDTH
    col = min(0.85, (width - 0.2) / (n + m + 1.3))
    inputs = ["<s>", *tgt[:-1]]
    size = _fit_size(src + tgt + inputs, col - 0.04, "source_tokens/target_tokens")
    height = 3.6 if title else 3.3
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    x0 = (width - col * (n + m + 1.3)) / 2 + col / 2
    xs = [x0 + j * col for j in range(n)]
    xc = xs[-1] + col * 1.15
    xd = [xc + col * 1.15 + t * col for t in range(m)]
    y_in, y_state, y_bus, y_out = 0.4, 1.15, 1.85, 2.55
    bw, bh = col * 0.72, 0.42
    for j, (x, token) in enumerate(zip(xs, src)):
        _text(ax, x, y_in, token, size)
        _box(ax, x, y_state, bw, bh, f"$h_{{{j + 1}}}$", _TINT["blue"])
        _arrow(ax, (x, y_in + 0.15), (x, y_state - bh / 2))
        if j:
            _arrow(ax, (xs[j - 1] + bw / 2, y_state), (x - bw / 2, y_state))
    _box(ax, xc, y_state, bw, bh + 0.1, "C", _TINT["purple"], weight="bold", lw=1.6)
    _arrow(ax, (xs[-1] + bw / 2, y_state), (xc - bw / 2, y_state))
    # the bus: C is copied to every decoder step
    _line(ax, [xc, xc, xd[-1]], [y_state + (bh + 0.1) / 2, y_bus, y_bus], _PURPLE, lw=1.6)
    for t, (x, inp, out) in enumerate(zip(xd, inputs, tgt)):
        _arrow(ax, (x, y_bus), (x, y_state + bh / 2), _PURPLE, linewidth=1.6)
        _box(ax, x, y_state, bw, bh, f"$s_{{{t + 1}}}$", _TINT["orange"])
        _text(ax, x, y_in, inp, size, color="#555555")
        _arrow(ax, (x, y_in + 0.15), (x, y_state - bh / 2))
        _arrow(ax, (x + bw * 0.3, y_state + bh / 2), (x + bw * 0.3, y_out - 0.15))
        _text(ax, x, y_out, out, size, weight="bold")
        if t:
            _arrow(ax, (xd[t - 1] + bw / 2, y_state), (x - bw / 2, y_state))
    _text(ax, (xs[0] + xs[-1]) / 2, 0.1, "encoder", _SMALL, color=_BLUE)
    _text(ax, (xd[0] + xd[-1]) / 2, 0.1, "decoder", _SMALL, color=_ORANGE_TEXT)
    # the path length: the first source token reaches the first output through n recurrent steps and C
    y_path = y_state + (bh + 0.1) / 2 + 0.12
    x_end = xc - bw / 2  # C's left edge: the bus leaves C's top
    _line(ax, [xs[0], xs[0], x_end, x_end], [y_path - 0.06, y_path, y_path, y_path - 0.06], _BLUE, lw=1.2)
    _text(ax, xs[0] - bw / 2, y_path + 0.2, f"path {src[0]} → {tgt[0]}: {n + 1} steps", _SMALL, ha="left", color=_BLUE)
    note = "C: one vector for the whole sentence"
    if c is not None:
        note = f"C = {_vector(c)}  ({c.size} numbers)"
    _text(ax, xs[0] - bw / 2, y_out + 0.4, note, _SMALL, ha="left", color="#7a3b66")
    return fig


# --------------------------------------------------------------------------------------------
# 2. One step of Bahdanau attention
# --------------------------------------------------------------------------------------------


def plot_bahdanau_step(
    source_tokens: Sequence[str],
    weights: Any,
    scores: Any = None,
    *,
    step: int = 1,
    previous_token: str | None = None,
    title: str | None = None,
) -> Figure:
    """One decoder step of Bahdanau attention: s_{i-1} scores every annotation h_j, softmax, context c_i, GRU.

    Drawn bottom to top per source position j: the annotation h_j, its score e_ij = a(s_{i-1}, h_j), its weight
    α_ij as a bar (height from ``weights``, value written). On the right, c_i = Σ_j α_ij h_j and the previous target
    token y_{i-1} enter the GRU, which turns s_{i-1} into s_i.

    Args:
        source_tokens: the source tokens, one per annotation h_j (1 to 8).
        weights: α_i·, shape ``(len(source_tokens),)``, non-negative, summing to 1.
        scores: optional, e_i·, same shape (the energies before the softmax); written in the score boxes.
        step: the decoder step i (≥ 1), written in the labels.
        previous_token: optional, y_{i-1}, the token fed to the GRU.
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: mismatched lengths, weights that are negative or do not sum to 1, a step below 1.
    """
    tokens = _labels(source_tokens, "source_tokens", 8)
    alpha = _array(weights, "weights", 1)
    _same_length("source_tokens", len(tokens), weights=len(alpha))
    e = None if scores is None else _array(scores, "scores", 1)
    if e is not None:
        _same_length("source_tokens", len(tokens), scores=len(e))
    if (alpha < 0).any() or abs(alpha.sum() - 1) > 1e-3:
        raise ValueError(f"weights must be non-negative and sum to 1, got sum {alpha.sum():.4f}")
    i = _positive_int(step, "step")
    n = len(tokens)
    width, height = _MAX_WIDTH, 3.9 if title else 3.6
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    left, right = 0.95, 4.35
    col = (right - left) / n
    size = _fit_size(tokens, col - 0.04, "source_tokens")
    xs = [left + (j + 0.5) * col for j in range(n)]
    y_tok, y_h, y_e, y_bar, bar_max = 0.3, 0.85, 1.5, 2.15, 0.95
    bw = min(0.5, col * 0.8)
    digits = 2 if e is None or all(_width_in(_num(v), _SMALL) <= col - 0.1 for v in e) else 1
    rows = ((y_h, "$h_j$"), (y_e, "$e_{ij}$"), (y_bar + 0.35, r"$\alpha_{ij}$"))
    for y, label in rows:
        _text(ax, 0.4, y, label, _FONT)
    _text(ax, 0.4, y_tok, "source", _SMALL, color="#555555")
    # s_{i-1} meets every h_j on the score row
    xs_prev, xc, xg = 4.95, 4.95, 6.15
    _line(ax, [xs[0], xs_prev - 0.35], [y_e, y_e], _ORANGE, lw=1.6)
    for j, (x, token) in enumerate(zip(xs, tokens)):
        _text(ax, x, y_tok, token, size)
        _box(ax, x, y_h, bw, 0.38, f"$h_{{{j + 1}}}$", _TINT["blue"])
        _arrow(ax, (x, y_h + 0.19), (x, y_e - 0.17))
        _box(ax, x, y_e, col - 0.06, 0.34, _num(e[j], digits) if e is not None else "", _TINT["white"], _SMALL)
        height_j = bar_max * alpha[j]
        ax.add_patch(Rectangle((x - bw / 2, y_bar), bw, height_j, fc=_BLUE, ec=_BLUE, zorder=2))
        _text(ax, x, y_bar + height_j + 0.05, _num(alpha[j]), _SMALL, va="bottom")
    _line(ax, [left, right], [y_bar, y_bar], "#777777")
    _text(ax, (left + right) / 2, y_bar - 0.22, "softmax over j", _SMALL, color="#555555")
    label_prev = f"$s_{{{i - 1}}}$"
    _box(ax, xs_prev, y_e, 0.7, 0.4, label_prev, _TINT["orange"])
    _box(ax, xc, y_bar + 0.6, 0.7, 0.4, f"$c_{{{i}}}$", _TINT["purple"])
    _line(ax, [left, right], [y_bar - 0.02, y_bar - 0.02], _PURPLE, lw=1.4)
    _arrow(ax, (right, y_bar - 0.02), (xc - 0.35, y_bar + 0.5), _PURPLE, linewidth=1.4)
    _text(ax, xc, y_bar + 1.05, r"$\sum_j \alpha_{ij} h_j$", _FONT)
    _box(ax, xg, 1.55, 0.8, 0.5, "GRU", _TINT["grey"], weight="bold")
    _arrow(ax, (xs_prev + 0.35, y_e), (xg - 0.4, y_e))
    _arrow(ax, (xc + 0.35, y_bar + 0.6), (xg - 0.2, 1.8))
    prev = f"$y_{{{i - 1}}}$" + (" = " + previous_token.replace("$", r"\$") if previous_token else "")
    _text(ax, xg, 0.55, prev, _FONT)
    _arrow(ax, (xg, 0.72), (xg, 1.3))
    _box(ax, xg, 3.05, 0.7, 0.4, f"$s_{{{i}}}$", _TINT["orange"], lw=1.6)
    _arrow(ax, (xg, 1.8), (xg, 2.85))
    return fig


# --------------------------------------------------------------------------------------------
# 3. One token's query, a row of scores, the softmax and the weighted sum of values
# --------------------------------------------------------------------------------------------


def plot_qkv_step(
    tokens: Sequence[str],
    scores: Any,
    weights: Any,
    output: Any,
    *,
    query_index: int = 0,
    query: Any = None,
    title: str | None = None,
) -> Figure:
    """One token's attention, step by step: x_i → q_i; q_i · k_j / √d_k for every key; softmax; z_i = Σ_j α_ij v_j.

    The numbers are the caller's, rounded to two decimals: the scaled scores, the weights (also as bars) and the
    output vector (its first four entries).

    Args:
        tokens: the sentence's tokens, one key and value each (1 to 6), e.g. ``["我", "爱", "机器", "学习"]``.
        scores: the query's row of scaled scores q_i · k_j / √d_k, shape ``(len(tokens),)``.
        weights: the softmax of ``scores``, same shape, summing to 1.
        output: z_i = Σ_j α_ij v_j, shape ``(d_v,)``.
        query_index: i, the position of the query token.
        query: optional, q_i, shape ``(d_k,)``: written next to the query token.
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: mismatched lengths, weights that are not the softmax of the scores, a query_index out of range.
    """
    labels = _labels(tokens, "tokens", 6)
    s = _array(scores, "scores", 1)
    alpha = _array(weights, "weights", 1)
    z = _array(output, "output", 1)
    _same_length("tokens", len(labels), scores=len(s), weights=len(alpha))
    softmax = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    if not np.allclose(softmax, alpha, atol=1e-3):
        raise ValueError("weights must be the softmax of scores (the same row), they differ")
    if isinstance(query_index, bool) or not isinstance(query_index, (int, np.integer)):
        raise ValueError(f"query_index must be an int, got {query_index!r}")
    if not 0 <= query_index < len(labels):
        raise ValueError(f"query_index must be in 0 … {len(labels) - 1}, got {query_index}")
    q = None if query is None else _array(query, "query", 1)
    n, me = len(labels), labels[query_index]
    width, height = _MAX_WIDTH, 4.3 if title else 4.0
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    left, right = 1.75, 6.75
    col = (right - left) / n
    size = _fit_size(labels, col - 0.1, "tokens")
    xs = [left + (j + 0.5) * col for j in range(n)]
    y_q, y_k, y_s, y_bar, bar_max, y_z = 3.5, 2.85, 2.3, 1.05, 0.8, 0.3
    _text(ax, 0.15, y_q, f"query token {me}:", _FONT, ha="left")
    head = "$q_i = x_i W^Q$" + (f" = {_vector(q)}" if q is not None else "")
    _text(ax, 0.25 + _width_in(f"query token {me}:", _FONT), y_q, head, _FONT, ha="left")
    for y, label in (
        (y_k, "key $k_j$"),
        (y_s, r"$q_i \cdot k_j / \sqrt{d_k}$"),
        (y_bar + 0.55, r"softmax $\alpha_{ij}$"),
    ):
        _text(ax, 0.15, y, label, _FONT, ha="left")
    _text(ax, 0.15, y_bar - 0.3, r"$\alpha_{ij}\, v_j$", _FONT, ha="left")
    bw = min(0.7, col * 0.7)
    for j, x in enumerate(xs):
        fc = _TINT["orange"] if j == query_index else _TINT["blue"]
        _box(ax, x, y_k, bw, 0.38, labels[j], fc, size)
        _text(ax, x, y_s, _num(s[j]), _FONT)
        height_j = bar_max * alpha[j]
        ax.add_patch(Rectangle((x - bw / 2, y_bar), bw, height_j, fc=_BLUE, ec=_BLUE, zorder=2))
        _text(ax, x, y_bar + height_j + 0.05, _num(alpha[j]), _FONT, va="bottom", weight="bold")
        _arrow(ax, (x, y_bar - 0.05), (width / 2 + (x - width / 2) * 0.25, y_z + 0.2), "#777777")
    _line(ax, [left, right], [y_bar, y_bar], "#777777")
    summary = r"$z_i = \sum_j \alpha_{ij} v_j$ = " + _vector(z)
    _text(ax, width / 2, y_z, summary, _FONT, bbox=dict(fc=_TINT["purple"], ec=_EDGE, boxstyle="round"))
    return fig


# --------------------------------------------------------------------------------------------
# 4. Multi-head attention: split, attend per head, concatenate, W^O — with the shapes
# --------------------------------------------------------------------------------------------


def plot_multihead(batch: int, seq: int, d_model: int, num_heads: int, *, title: str | None = None) -> Figure:
    """Multi-head attention as a flow with its shapes: project, split into heads, attend per head, concat, W^O.

    Bottom to top: x (batch, seq, d_model) → the projections W^Q, W^K, W^V → ``view`` to (batch, seq, heads, d_k)
    and ``transpose(1, 2)`` to (batch, heads, seq, d_k) → one attention per head → ``transpose(1, 2)`` and
    ``reshape`` back to (batch, seq, d_model) (the concatenation) → W^O. Each shape is written in symbols and with
    the numbers given.

    Args:
        batch, seq, d_model, num_heads: the sizes (positive ints; ``d_model`` divisible by ``num_heads``).
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: a size that is not a positive int, or d_model not divisible by num_heads.
    """
    b = _positive_int(batch, "batch")
    n = _positive_int(seq, "seq")
    d = _positive_int(d_model, "d_model")
    h = _positive_int(num_heads, "num_heads")
    if d % h:
        raise ValueError(f"d_model ({d}) must be divisible by num_heads ({h})")
    dk = d // h
    width, height = _MAX_WIDTH, 5.0 if title else 4.7
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    xc, bw, bh = 1.75, 3.1, 0.42
    xs = 4.85  # the shapes column
    steps = [
        (0.35, "input x", "(batch, seq, d_model)", (b, n, d), _TINT["grey"]),
        (1.05, "$W^Q$, $W^K$, $W^V$ (Linear)", "(batch, seq, d_model)", (b, n, d), _TINT["blue"]),
        (1.75, "split: view, transpose(1, 2)", "(batch, heads, seq, d_k)", (b, h, n, dk), _TINT["white"]),
        (3.15, "concat: transpose, reshape", "(batch, seq, d_model)", (b, n, d), _TINT["white"]),
        (3.85, "$W^O$ (Linear)", "(batch, seq, d_model)", (b, n, d), _TINT["blue"]),
    ]
    for y, label, symbols, numbers, fc in steps:
        _box(ax, xc, y, bw, bh, label, fc)
        _text(ax, xs, y + 0.1, symbols, _SMALL, family="monospace")
        _text(ax, xs, y - 0.12, "= " + str(numbers), _SMALL, family="monospace", color=_BLUE)
    for y0, y1 in ((steps[0][0], steps[1][0]), (steps[1][0], steps[2][0])):
        _arrow(ax, (xc, y0 + bh / 2), (xc, y1 - bh / 2))
    _arrow(ax, (xc, 3.85 - 0.7 + bh / 2), (xc, 3.85 - bh / 2))
    _arrow(ax, (xc, 3.85 + bh / 2), (xc, 4.4))
    _text(ax, xc, 4.52, "output (batch, seq, d_model)", _SMALL)
    # the heads, side by side
    shown = list(range(h)) if h <= 4 else [0, 1, None, h - 1]
    hw = bw / len(shown)
    y_head = 2.45
    for k, head in enumerate(shown):
        x = xc - bw / 2 + (k + 0.5) * hw
        if head is None:
            _text(ax, x, y_head, "…", _FONT)
            continue
        _box(ax, x, y_head, hw - 0.08, 0.5, f"head {head + 1}", _TINT["orange"], _SMALL)
        _arrow(ax, (x, 1.75 + bh / 2), (x, y_head - 0.25))
        _arrow(ax, (x, y_head + 0.25), (x, 3.15 - bh / 2))
    _text(ax, xs, y_head + 0.1, f"{h} heads, each attends over", _SMALL)
    _text(ax, xs, y_head - 0.12, f"d_k = {d} / {h} = {dk} features", _SMALL, family="monospace", color=_BLUE)
    return fig


# --------------------------------------------------------------------------------------------
# 5. What a view without transpose scrambles
# --------------------------------------------------------------------------------------------


def head_slice_sources(seq: int, d_model: int, num_heads: int, transpose: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Which token and which feature slice fill each row of each head after splitting a (seq, d_model) matrix.

    With ``transpose=True`` the split is ``view(seq, heads, d_k).transpose(0, 1)`` (right: head h, row t holds
    token t's slice h); with ``False`` it is ``view(heads, seq, d_k)`` (wrong: the rows of a head run across
    token boundaries). Computed by reshaping an array of indices in row-major order, as ``view`` reads memory.

    Args:
        seq, d_model, num_heads: the sizes (positive ints; ``d_model`` divisible by ``num_heads``).
        transpose: the right split (True) or the view alone (False).

    Returns:
        ``(token, part)``: two int arrays of shape ``(num_heads, seq)``: the source token of each row of each head,
        and which d_k-wide part of that token's features it is.

    Raises:
        ValueError: a size that is not a positive int, or d_model not divisible by num_heads.
    """
    n, d, h = _positive_int(seq, "seq"), _positive_int(d_model, "d_model"), _positive_int(num_heads, "num_heads")
    if d % h:
        raise ValueError(f"d_model ({d}) must be divisible by num_heads ({h})")
    dk = d // h
    flat = np.arange(n * d).reshape(n, d)  # element index in memory
    split = flat.reshape(n, h, dk).transpose(1, 0, 2) if transpose else flat.reshape(h, n, dk)
    first = split[..., 0]  # (heads, seq): the first element of each row
    return first // d, (first % d) // dk


def plot_view_scramble(tokens: Sequence[str], d_model: int, num_heads: int, *, title: str | None = None) -> Figure:
    """What each head sees after the split, right (view + transpose) and wrong (view alone), side by side.

    A grid per split: one row per position t, one column per head; the cell names the token whose features fill
    that row of that head and which part of them (``Mann ·2`` = the second d_k-wide slice of Mann's vector).
    Cells that differ from the right split are orange and outlined (see :func:`head_slice_sources`).

    Args:
        tokens: the sentence (2 to 7 tokens).
        d_model, num_heads: the sizes (``d_model`` divisible by ``num_heads``, 2 to 4 heads).
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: too few or many tokens or heads, d_model not divisible by num_heads.
    """
    labels = _labels(tokens, "tokens", 7, least=2)
    h = _positive_int(num_heads, "num_heads", most=4)
    if h < 2:
        raise ValueError(f"num_heads must be 2 to 4 for the picture, got {h}")
    n = len(labels)
    right = head_slice_sources(n, d_model, h, transpose=True)
    wrong = head_slice_sources(n, d_model, h, transpose=False)
    cell_h = 0.42
    width = _MAX_WIDTH
    height = 0.95 + n * cell_h + (0.3 if title else 0)
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    label_w = 0.75
    panel_w = (width - 0.1) / 2
    cell_w = (panel_w - label_w - 0.15) / h
    size = _fit_size([f"{s} ·{h}" for s in labels], cell_w - 0.08, "tokens")
    top = height - (0.75 if title else 0.45)
    for p, ((tok, part), name) in enumerate(((right, "right: view + transpose"), (wrong, "wrong: view only"))):
        x0 = 0.05 + p * panel_w + label_w
        _text(ax, x0 + h * cell_w / 2, top + 0.3, name, _FONT, weight="bold")
        for k in range(h):
            _text(ax, x0 + (k + 0.5) * cell_w, top + 0.05, f"head {k + 1}", _SMALL, va="bottom")
        for t in range(n):
            y = top - (t + 0.5) * cell_h
            if p == 0:
                _text(ax, x0 - 0.08, y, f"row {t}", _SMALL, ha="right")
            for k in range(h):
                bad = (tok[k, t], part[k, t]) != (right[0][k, t], right[1][k, t])
                ax.add_patch(
                    Rectangle(
                        (x0 + k * cell_w + 0.02, y - cell_h / 2 + 0.02),
                        cell_w - 0.04,
                        cell_h - 0.04,
                        fc=_TINT["orange"] if bad else _TINT["blue"],
                        ec=_ORANGE if bad else "white",
                        lw=2.0 if bad else 0.5,
                        zorder=2,
                        gid="wrong" if bad else "right",
                    )
                )
                _text(ax, x0 + (k + 0.5) * cell_w, y, f"{labels[tok[k, t]]} ·{part[k, t] + 1}", size, zorder=3)
    _text(ax, width / 2, 0.2, f"'·p' = the p-th slice of d_k = {d_model // h} features of that token", _SMALL)
    return fig


# --------------------------------------------------------------------------------------------
# 6. The sinusoidal encoding as clock hands
# --------------------------------------------------------------------------------------------


def plot_sinusoid_clocks(
    encoding: Any, positions: Sequence[int], pairs: Sequence[int], *, title: str | None = None
) -> Figure:
    """Each (sin, cos) pair of the sinusoidal encoding as a clock hand that turns with the position.

    Row = one pair i (dimensions 2i and 2i + 1), column = one position; the hand points to (x, y) = (PE[pos, 2i],
    PE[pos, 2i + 1]) = (sin, cos) of pos·ω_i, so it starts at twelve o'clock and turns clockwise by ω_i per
    position: fast for the first pairs, slow for the last. The turn per position is read from the table.

    Args:
        encoding: the table, shape ``(max_len, d_model)`` (``lib.positional.sinusoidal_positional_encoding``).
        positions: 1 to 5 positions (rows of the table) to draw.
        pairs: 1 to 4 pair indices i (0 ≤ i < d_model / 2).
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: a table that is not 2-D with an even width, positions or pairs out of range.
    """
    pe = _array(encoding, "encoding", 2)
    if pe.shape[1] % 2 or pe.shape[0] < 2:
        raise ValueError(f"encoding must be (max_len ≥ 2, even d_model), got shape {pe.shape}")
    pos = [int(p) for p in _labels(positions, "positions", 5)]
    ids = [int(i) for i in _labels(pairs, "pairs", 4)]
    if any(not 0 <= p < pe.shape[0] for p in pos):
        raise ValueError(f"positions must be in 0 … {pe.shape[0] - 1}, got {pos}")
    if any(not 0 <= i < pe.shape[1] // 2 for i in ids):
        raise ValueError(f"pairs must be in 0 … {pe.shape[1] // 2 - 1}, got {ids}")
    label_w, cell_w, cell_h = 1.45, min(1.1, (_MAX_WIDTH - 1.5) / len(pos)), 1.15
    width = label_w + cell_w * len(pos) + 0.05
    height = 0.4 + cell_h * len(ids) + (0.3 if title else 0)
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    top = height - (0.3 if title else 0) - 0.4
    for c, p in enumerate(pos):
        _text(ax, label_w + (c + 0.5) * cell_w, top + 0.2, f"pos {p}", _FONT, weight="bold")
    radius = 0.3
    for r, i in enumerate(ids):
        yc = top - r * cell_h - 0.45
        step = np.degrees(np.arctan2(pe[1, 2 * i], pe[1, 2 * i + 1]))
        _text(ax, 0.1, yc + 0.15, f"pair {i}: dims {2 * i}, {2 * i + 1}", _SMALL, ha="left")
        _text(ax, 0.1, yc - 0.12, f"turns {step:.3g}° / position", _SMALL, ha="left", color=_BLUE)
        for c, p in enumerate(pos):
            xc = label_w + (c + 0.5) * cell_w
            ax.add_patch(Circle((xc, yc), radius, fc=_TINT["grey"], ec="#777777", lw=1.0, zorder=1))
            ax.plot([xc, xc], [yc + radius, yc + radius - 0.06], color="#777777", lw=1.0)
            sin, cos = pe[p, 2 * i], pe[p, 2 * i + 1]
            _arrow(ax, (xc, yc), (xc + radius * 0.92 * sin, yc + radius * 0.92 * cos), _BLUE, linewidth=2.0)
            _text(ax, xc, yc - radius - 0.13, f"{_num(sin)}, {_num(cos)}", _SMALL, color="#555555")
    return fig


# --------------------------------------------------------------------------------------------
# 7. Causal and padding masks over a real batch
# --------------------------------------------------------------------------------------------


def _mask_panel(ax: Any, mask: np.ndarray, x0: float, y_top: float, cell: float, gid: str) -> None:
    """Draw a (rows, cols) bool mask with its top-left corner at (x0, y_top): allowed dark blue, masked hatched."""
    rows, cols = mask.shape
    for i in range(rows):
        for j in range(cols):
            ok = bool(mask[i, j])
            ax.add_patch(
                Rectangle(
                    (x0 + j * cell, y_top - (i + 1) * cell),
                    cell,
                    cell,
                    fc=_ALLOWED if ok else _MASKED,
                    ec="white" if ok else "#bbbbbb",
                    hatch=None if ok else "///",
                    lw=0.6,
                    zorder=2,
                    gid=f"{gid}-{'allowed' if ok else 'masked'}",
                )
            )


def _mask_legend(ax: Any, width: float, y: float) -> None:
    for x, ok, text in ((width / 2 - 2.3, True, "may attend (True)"), (width / 2 + 0.4, False, "masked (False)")):
        _mask_panel(ax, np.array([[ok]]), x, y + 0.09, 0.18, "legend")
        _text(ax, x + 0.28, y, text, _SMALL, ha="left")


def plot_masks(
    masks: Any,
    query_tokens: Sequence[Sequence[str]],
    key_tokens: Sequence[Sequence[str]],
    titles: Sequence[str],
    *,
    title: str | None = None,
) -> Figure:
    """Attention masks over real tokens, side by side: a cell is a (query, key) pair, dark = may attend.

    For the causal mask, the padding mask of a sentence of a batch, and their combination, as the chapter
    computes them (``lib.attention.causal_mask``, ``padding_mask``, broadcast to (seq_q, seq_k)). True = may
    attend, drawn dark blue; False = masked, drawn light grey and hatched (told apart without colour).

    Args:
        masks: bool, shape ``(panels, seq_q, seq_k)``, 1 to 3 panels of at most 10 × 10.
        query_tokens: per panel, the seq_q labels of the rows.
        key_tokens: per panel, the seq_k labels of the columns.
        titles: per panel, a short title.
        title: optional title of the figure.

    Returns:
        The Figure.

    Raises:
        ValueError: a mask that is not bool and 3-D, too many panels or tokens, labels that do not match its shape.
    """
    m = _bools(masks, "masks", 3)
    p, rows, cols = m.shape
    if p > 3 or rows > 10 or cols > 10:
        raise ValueError(f"masks must have at most 3 panels of 10 × 10, got shape {m.shape}")
    heads = _labels(titles, "titles", 3)
    _same_length("masks", p, titles=len(heads), query_tokens=len(query_tokens), key_tokens=len(key_tokens))
    qs = [_labels(q, "query_tokens", 10) for q in query_tokens]
    ks = [_labels(k, "key_tokens", 10) for k in key_tokens]
    for q, k in zip(qs, ks):
        _same_length("query_tokens", rows, masks_seq_q=len(q))
        _same_length("key_tokens", cols, masks_seq_k=len(k))
    label_w = max(_width_in(s, _SMALL) for q in qs for s in q) + 0.12
    key_h = max(_width_in(s, _SMALL) for k in ks for s in k) + 0.12
    panel_w = (_MAX_WIDTH - 0.05) / p
    cell = min(0.34, (panel_w - label_w - 0.15) / cols)
    if cell < 0.17:
        raise ValueError("masks: too many tokens or labels too long for the page; use fewer or shorter tokens")
    width = _MAX_WIDTH if p > 1 else max(4.8, label_w + cols * cell + 0.6)  # 4.8 in: room for the legend
    top_pad = 0.45 + (0.3 if title else 0)
    height = top_pad + key_h + rows * cell + 0.5
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    panel_w = (width - 0.05) / p
    for k in range(p):
        x0 = 0.05 + k * panel_w + label_w
        y_top = height - top_pad - key_h
        _text(ax, x0 + cols * cell / 2, height - top_pad + 0.2, heads[k], _FONT, weight="bold")
        _mask_panel(ax, m[k], x0, y_top, cell, f"panel{k}")
        for i, s in enumerate(qs[k]):
            _text(ax, x0 - 0.06, y_top - (i + 0.5) * cell, s, _SMALL, ha="right")
        for j, s in enumerate(ks[k]):
            _text(ax, x0 + (j + 0.5) * cell, y_top + 0.06, s, _SMALL, rotation=90, va="bottom")
    _mask_legend(ax, width, 0.22)
    return fig


# --------------------------------------------------------------------------------------------
# 8. Post-LN against pre-LN
# --------------------------------------------------------------------------------------------


def plot_residual_paths(
    sublayer: str = "Attention or FFN", captions: Sequence[str] | None = None, *, title: str | None = None
) -> Figure:
    """Post-LN (the paper: LayerNorm(x + F(x))) beside pre-LN (x + F(LayerNorm(x))), one sub-layer each.

    The residual path is drawn thick and blue: in post-LN it passes through every LayerNorm on its way up; in
    pre-LN it is a clean identity from the input to the output (a final LayerNorm closes the stack).

    Args:
        sublayer: the label of the sub-layer F (short).
        captions: optional, two short lines written under the panels (e.g. the gradient norms the chapter measured).
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: captions that are not two strings, or a sublayer label too long for its box.
    """
    caps = None if captions is None else _labels(captions, "captions", 2, least=2)
    _fit_size([sublayer], 1.6, "sublayer")
    width, height = _MAX_WIDTH, 3.9 + (0.3 if title else 0) + (0.35 if caps else 0)
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    base = 0.35 + (0.35 if caps else 0)
    panels = (
        (
            "Post-LN (the paper)",
            "LN(x + F(x))",
            [(sublayer, _TINT["orange"]), ("+", None), ("LayerNorm", _TINT["purple"])],
        ),
        ("Pre-LN", "x + F(LN(x))", [("LayerNorm", _TINT["purple"]), (sublayer, _TINT["orange"]), ("+", None)]),
    )
    for k, (name, formula, blocks) in enumerate(panels):
        xc = width / 4 + k * width / 2
        _text(ax, xc, height - (0.55 if title else 0.25), name, _FONT, weight="bold")
        _text(ax, xc, height - (0.8 if title else 0.5), formula, _SMALL, family="monospace")
        _text(ax, xc, base, "x", _FONT)
        y, ys = base + 0.7, {}
        prev = base + 0.15
        for label, fc in blocks:
            if fc is None:
                ax.add_patch(Circle((xc, y), 0.16, fc="white", ec=_EDGE, zorder=2))
                _text(ax, xc, y, "+", _FONT, zorder=3)
                _arrow(ax, (xc, prev), (xc, y - 0.16))
                ys["+"] = y
                prev = y + 0.16
            else:
                _box(ax, xc, y, 1.8, 0.4, label, fc)
                _arrow(ax, (xc, prev), (xc, y - 0.2))
                prev = y + 0.2
            y += 0.75
        _arrow(ax, (xc, prev), (xc, y - 0.45))
        _text(ax, xc, y - 0.3, "out", _FONT)
        # the residual path, from just above x, around the left, into the "+"
        xr, y0 = xc - 1.25, base + 0.3
        _line(ax, [xc, xr, xr], [y0, y0, ys["+"]], _BLUE, lw=2.4)
        _arrow(ax, (xr, ys["+"]), (xc - 0.16, ys["+"]), _BLUE, linewidth=2.4)
        _text(ax, xr - 0.1, (y0 + ys["+"]) / 2, "residual", _SMALL, rotation=90, color=_BLUE, ha="right")
        if caps:
            _text(ax, xc, 0.2, caps[k], _SMALL)
    return fig


# --------------------------------------------------------------------------------------------
# 9. The KV cache, one column per step
# --------------------------------------------------------------------------------------------


def plot_kv_cache(
    tokens: Sequence[str], d_k: int, *, batch: int = 1, heads: int = 1, title: str | None = None
) -> Figure:
    """The key–value cache of greedy decoding growing by one column per step.

    Step t (left to right) feeds ``tokens[t]``: its query meets the K cache (top) and the V cache (below), t + 1
    columns each, the new column orange and the cached ones blue, so step t computes one new key and value instead
    of t + 1. Under each step, the cache's shape (batch, heads, t + 1, d_k) with the numbers given.

    Args:
        tokens: the tokens fed at each step (1 to 5), e.g. ``["<s>", "A", "man", "rides"]``.
        d_k: the width of a key (each drawn column has min(d_k, 4) cells).
        batch, heads: the other two sizes of the cache's shape.
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: no or too many tokens, a size that is not a positive int, a token too long for its column.
    """
    labels = _labels(tokens, "tokens", 5)
    dk, b, h = _positive_int(d_k, "d_k"), _positive_int(batch, "batch"), _positive_int(heads, "heads")
    steps, rows = len(labels), min(dk, 4)
    cell, label_w = 0.18, 0.55
    col = (_MAX_WIDTH - label_w - 0.05) / 5
    width = label_w + col * steps + 0.05 if steps > 2 else label_w + col * 3
    grid_h = rows * cell
    height = 0.85 + 2 * grid_h + 0.3 + 0.75 + (0.3 if title else 0)
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    top = height - (0.3 if title else 0)
    size = _fit_size([f"{t}: {s}" for t, s in enumerate(labels, 1)], col - 0.08, "tokens")
    y_k = top - 0.75  # top edge of the K grids
    y_v = y_k - grid_h - 0.3
    _text(ax, 0.08, y_k - grid_h / 2, "K", _FONT, ha="left", weight="bold")
    _text(ax, 0.08, y_v - grid_h / 2, "V", _FONT, ha="left", weight="bold")
    for t, token in enumerate(labels):
        xc = label_w + (t + 0.5) * col
        _text(ax, xc, top - 0.25, f"step {t + 1}", _SMALL, color="#555555")
        _text(ax, xc, top - 0.5, token, size, weight="bold")
        x0 = xc - (t + 1) * cell / 2
        for y_top in (y_k, y_v):
            for j in range(t + 1):
                for r in range(rows):
                    new = j == t
                    ax.add_patch(
                        Rectangle(
                            (x0 + j * cell, y_top - (r + 1) * cell),
                            cell,
                            cell,
                            fc=_ORANGE if new else _TINT["blue"],
                            ec="white",
                            lw=0.6,
                            zorder=2,
                            gid="new" if new else "cached",
                        )
                    )
        _text(ax, xc, y_v - grid_h - 0.2, str((b, h, t + 1, dk)), _SMALL, color=_BLUE)
    _text(ax, 0.08, 0.38, "shape (batch, heads, t, d_k) under each step", _SMALL, ha="left")
    _text(ax, 0.08, 0.15, "orange: computed at this step; blue: read from the cache", _SMALL, ha="left")
    return fig


# --------------------------------------------------------------------------------------------
# 10. BERT's input: token + segment + position
# --------------------------------------------------------------------------------------------


def plot_bert_input(
    tokens: Sequence[str],
    token_ids: Sequence[int],
    segment_ids: Sequence[int],
    *,
    d_model: int | None = None,
    title: str | None = None,
) -> Figure:
    """BERT's input as the sum of three embeddings, one column per token of a sentence pair.

    Rows: the tokens ([CLS] sentence A [SEP] sentence B [SEP]); the token embedding E_tok[id] (the id written);
    the segment embedding E_A or E_B (segment 0 or 1, the two told apart by colour and letter); the position
    embedding E_pos[p]; their sum x_j, the input of the first layer.

    Args:
        tokens: the tokens (2 to 12), as ``lib.bert.pack_pair`` lays them out.
        token_ids: their vocabulary ids, same length.
        segment_ids: 0 (sentence A) or 1 (sentence B) per token, same length.
        d_model: optional, the width of each embedding, written in the sum's label.
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: mismatched lengths, a segment id other than 0 or 1, a token too long for its column.
    """
    labels = _labels(tokens, "tokens", 12, least=2)
    ids = [int(i) for i in _labels(token_ids, "token_ids", 12, least=2)]
    segs = [int(s) for s in _labels(segment_ids, "segment_ids", 12, least=2)]
    _same_length("tokens", len(labels), token_ids=len(ids), segment_ids=len(segs))
    if set(segs) - {0, 1}:
        raise ValueError(f"segment_ids must be 0 or 1, got {sorted(set(segs))}")
    n = len(labels)
    label_w = 1.35
    width = _MAX_WIDTH
    col = (width - label_w - 0.05) / n
    size = _fit_size(labels + [str(i) for i in ids], col - 0.06, "tokens")
    height = 3.2 + (0.3 if title else 0)
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    top = height - (0.3 if title else 0)
    rows = [("tokens", top - 0.35), ("token", top - 0.95), ("+ segment", top - 1.55), ("+ position", top - 2.15)]
    sum_label = "= input" + (f" ({d_model})" if d_model else "")
    rows.append((sum_label, top - 2.75))
    for name, y in rows:
        _text(ax, 0.1, y, name, _FONT, ha="left", weight="bold" if name.startswith("=") else "normal")
    bw = col - 0.06
    for j in range(n):
        x = label_w + (j + 0.5) * col
        _text(ax, x, rows[0][1], labels[j], size, weight="bold")
        _box(ax, x, rows[1][1], bw, 0.42, str(ids[j]), _TINT["grey"], size)
        seg_fc = _TINT["blue"] if segs[j] == 0 else _TINT["orange"]
        _box(ax, x, rows[2][1], bw, 0.42, "AB"[segs[j]], seg_fc, size, weight="bold")
        _box(ax, x, rows[3][1], bw, 0.42, str(j), _TINT["purple"], size)
        _box(ax, x, rows[4][1], bw, 0.42, f"$x_{{{j}}}$", _TINT["white"], size, lw=1.4)
        _arrow(ax, (x, rows[3][1] - 0.21), (x, rows[4][1] + 0.21))
    return fig


# --------------------------------------------------------------------------------------------
# 11. Which pairs efficient attentions score
# --------------------------------------------------------------------------------------------


def plot_attention_patterns(
    masks: Any, titles: Sequence[str], notes: Sequence[str] | None = None, *, title: str | None = None
) -> Figure:
    """Which (query, key) pairs each kind of attention scores: one n × n panel per kind, dark = scored.

    For sliding-window attention (``lib.efficient.sliding_window_mask``), LSH attention (``lib.efficient.lsh_mask``,
    the pairs that share a bucket) and any other pattern; linear attention scores no pair one by one, which a
    panel of all True and a note can say. Each panel's count of scored pairs is written under it.

    Args:
        masks: bool, shape ``(panels, n, n)``, 1 to 3 panels, n ≤ 24; True = scored (may attend).
        titles: one short title per panel.
        notes: optional, one short line per panel written under its count.
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: masks that are not bool (panels, n, n), too many panels, titles or notes of another length.
    """
    m = _bools(masks, "masks", 3)
    p, n, n2 = m.shape
    if n != n2 or p > 3 or n > 24:
        raise ValueError(f"masks must be (panels ≤ 3, n, n) with n ≤ 24, got shape {m.shape}")
    heads = _labels(titles, "titles", 3)
    _same_length("masks", p, titles=len(heads))
    extra = None if notes is None else _labels(notes, "notes", 3)
    if extra is not None:
        _same_length("masks", p, notes=len(extra))
    panel_w = (_MAX_WIDTH - 0.1) / 3
    _fit_size(heads + (extra or []), panel_w - 0.1, "titles/notes")
    side = min(panel_w - 0.35, 2.0)
    cell = side / n
    width = _MAX_WIDTH if p > 1 else 4.8  # room for the legend
    height = side + 1.3 + (0.25 if extra else 0) + (0.3 if title else 0)
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    panel_w = (width - 0.1) / p
    y_top = height - (0.3 if title else 0) - 0.55
    for k in range(p):
        xc = 0.05 + (k + 0.5) * panel_w
        x0 = xc - side / 2 + 0.1
        _text(ax, xc, y_top + 0.3, heads[k], _FONT, weight="bold")
        _text(ax, x0 + side / 2, y_top + 0.08, "key j →", _SMALL)
        _text(ax, x0 - 0.12, y_top - side / 2, "query i →", _SMALL, rotation=270)
        _mask_panel(ax, m[k], x0, y_top - 0.05, cell, f"panel{k}")
        count = int(m[k].sum())
        _text(ax, xc, y_top - side - 0.25, f"{count} of {n * n} pairs scored", _SMALL)
        if extra:
            _text(ax, xc, y_top - side - 0.5, extra[k], _SMALL, color="#555555")
    _mask_legend(ax, width, 0.2)
    return fig


# --------------------------------------------------------------------------------------------
# 12. RoPE: a query–key pair rotated by their positions
# --------------------------------------------------------------------------------------------


def plot_rope_rotation(
    query: Any, key: Any, positions: Sequence[tuple[int, int]], theta: float, *, title: str | None = None
) -> Figure:
    """RoPE in two dimensions: q rotated by mθ, k by nθ; their angle, so their dot product, depends on n − m only.

    One panel per (m, n): the unrotated q and k dashed, the rotated q_m (blue) and k_n (orange) solid; under it
    m, n, n − m, the angle between q_m and k_n and the dot product q_m · k_n. Pairs with the same n − m get the
    same dot product.

    Args:
        query, key: 2-D vectors, shape ``(2,)`` (one frequency pair of a head).
        positions: 1 to 3 pairs (m, n): the query's and the key's positions.
        theta: the pair's frequency θ (radians per position).
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: vectors that are not of shape (2,) or are zero, positions that are not pairs of ints, or 0 or
            more than 3 of them.
    """
    q, k = _array(query, "query", 1), _array(key, "key", 1)
    if q.shape != (2,) or k.shape != (2,) or not (np.linalg.norm(q) > 0 and np.linalg.norm(k) > 0):
        raise ValueError(f"query and key must be non-zero vectors of shape (2,), got {q.shape} and {k.shape}")
    pairs = list(positions) if isinstance(positions, Sequence) else []
    if not 1 <= len(pairs) <= 3 or any(len(tuple(pair)) != 2 for pair in pairs):
        raise ValueError(f"positions must be 1 to 3 pairs (m, n), got {positions!r}")
    pairs = [(int(a), int(b)) for a, b in pairs]
    th = float(_array([theta], "theta", 1)[0])

    def rotate(v: np.ndarray, angle: float) -> np.ndarray:
        c, s = np.cos(angle), np.sin(angle)
        return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])

    panel_w = (_MAX_WIDTH - 0.1) / 3
    width = _MAX_WIDTH if len(pairs) > 1 else panel_w + 0.3
    panel_w = (width - 0.1) / len(pairs)
    radius = min(0.85, panel_w / 2 - 0.2)
    stacked = width < 5.5  # a narrow figure lists the legend's three entries one under the other
    height = 2 * radius + 1.5 + (0.5 if stacked else 0) + (0.3 if title else 0)
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    scale = radius / max(np.linalg.norm(q), np.linalg.norm(k))
    yc = height - (0.3 if title else 0) - radius - 0.3
    for i, (m, n) in enumerate(pairs):
        xc = 0.05 + (i + 0.5) * panel_w
        ax.add_patch(Circle((xc, yc), radius, fc="none", ec="#dddddd", lw=0.8))
        qm, kn = rotate(q, m * th), rotate(k, n * th)
        for v, colour in ((q, _BLUE), (k, _ORANGE)):
            _arrow(
                ax, (xc, yc), (xc + scale * v[0], yc + scale * v[1]), colour, linestyle="--", linewidth=1.0, alpha=0.6
            )
        for v, colour in ((qm, _BLUE), (kn, _ORANGE)):
            _arrow(ax, (xc, yc), (xc + scale * v[0], yc + scale * v[1]), colour, linewidth=2.2)
        angle = np.degrees(np.arctan2(qm[0] * kn[1] - qm[1] * kn[0], qm @ kn))
        if abs(angle) > 25:  # name the rotated vectors at their tips when they are far enough apart
            for v, colour, name in ((qm, _BLUE, "q"), (kn, _ORANGE_TEXT, "k")):
                tip = v / np.linalg.norm(v) * (radius + 0.12)
                _text(ax, xc + tip[0], yc + tip[1], name, _FONT, color=colour, weight="bold")
        _text(ax, xc, yc - radius - 0.32, f"m = {m}, n = {n}, n − m = {n - m}", _SMALL)
        _text(ax, xc, yc - radius - 0.57, f"angle {angle:.0f}°, q·k = {_num(float(qm @ kn))}", _SMALL)
    legend = (("q rotated by mθ", _BLUE), ("k rotated by nθ", _ORANGE_TEXT), ("dashed: before rotating", "#555555"))
    for k_, (text, colour) in enumerate(legend):
        if stacked:
            _text(ax, width / 2, 0.18 + 0.25 * (2 - k_), text, _SMALL, color=colour)
        else:
            _text(ax, width * (k_ + 0.5) / 3, 0.18, text, _SMALL, color=colour)
    return fig


# --------------------------------------------------------------------------------------------
# 13. Grouped-query attention: query heads sharing key–value heads
# --------------------------------------------------------------------------------------------


def plot_grouped_query(num_heads: int, num_kv_heads: int, *, compare: bool = True, title: str | None = None) -> Figure:
    """Grouped-query attention: each group of query heads reads one shared key–value head.

    Query heads on top, key–value heads below, a line from each query head to the kv head it reads (head h reads
    kv head h // (num_heads / num_kv_heads), as ``lib.attention.MultiHeadAttention(num_kv_heads=...)`` repeats
    them). With ``compare`` the rows for multi-head (as many kv heads as query heads) and multi-query (one)
    attention frame it; each row states the KV cache's size relative to multi-head attention.

    Args:
        num_heads: query heads (1 to 12).
        num_kv_heads: key–value heads, dividing num_heads.
        compare: also draw multi-head and multi-query attention.
        title: optional title.

    Returns:
        The Figure.

    Raises:
        ValueError: sizes that are not positive ints, too many heads, or num_kv_heads not dividing num_heads.
    """
    h = _positive_int(num_heads, "num_heads", most=12)
    g = _positive_int(num_kv_heads, "num_kv_heads")
    if h % g:
        raise ValueError(f"num_kv_heads ({g}) must divide num_heads ({h})")
    configs = [("multi-head", h), ("grouped-query", g), ("multi-query", 1)] if compare else [("grouped-query", g)]
    if compare:
        configs = [c for i, c in enumerate(configs) if c[1] not in [x[1] for x in configs[:i]]]
    row_h = 1.25
    width, height = _MAX_WIDTH, 0.1 + row_h * len(configs) + (0.3 if title else 0)
    fig, ax = _canvas(width, height)
    _title(ax, fig, title)
    label_w = 1.55
    col = (width - label_w - 0.1) / h
    top = height - (0.3 if title else 0)
    for r, (name, kv) in enumerate(configs):
        y_q = top - r * row_h - 0.3
        y_kv = y_q - 0.75
        _text(ax, 0.08, y_q - 0.15, name, _FONT, ha="left", weight="bold")
        _text(ax, 0.08, y_q - 0.45, f"{h} q / {kv} kv heads", _SMALL, ha="left")
        _text(ax, 0.08, y_q - 0.7, f"KV cache: {kv}/{h}" if kv != h else "KV cache: 1×", _SMALL, ha="left", color=_BLUE)
        group = h // kv
        kv_w = (width - label_w - 0.1) / kv
        for j in range(h):
            x = label_w + (j + 0.5) * col
            xk = label_w + (j // group + 0.5) * kv_w
            _line(ax, [x, xk], [y_q - 0.15, y_kv + 0.15], "#777777")
            _box(ax, x, y_q, min(col - 0.06, 0.5), 0.3, f"q{j + 1}", _TINT["blue"], _SMALL)
        for j in range(kv):
            xk = label_w + (j + 0.5) * kv_w
            _box(ax, xk, y_kv, min(kv_w - 0.06, 0.75), 0.3, f"kv{j + 1}", _TINT["orange"], _SMALL)
    return fig
