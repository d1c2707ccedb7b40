"""Schematics of the book, drawn in code: the whole Transformer in one picture (the paper's Figure 1).

Hand-placed boxes, arrows and labels, not data: each function takes the few numbers a schematic shows (the number of
layers written beside a stack) and returns a :class:`matplotlib.figure.Figure`, built without ``pyplot`` (no global
figure registry, no ``plt.show()``, no rcParams changes), like the figures of :mod:`lib.plots`. A leaf: matplotlib
only, nothing from ``lib``; the labels name ``lib`` code as text, which the tests resolve.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

__all__ = ["plot_transformer_diagram", "TRANSFORMER_DIAGRAM_BLOCKS"]

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
    figsize: tuple[float, float] = (8.6, 9.2),
) -> Figure:
    """The encoder–decoder Transformer as a block diagram, each block labelled with the ``lib`` code that runs it.

    Drawn like the paper's Figure 1 (post-LN, as published): on the left the encoder (source embedding × √d_model
    plus the positional encoding, then N encoder layers of self-attention and feed-forward, each followed by Add &
    Norm); on the right the decoder (the target shifted right, embedded the same way, then N decoder layers of
    masked self-attention, cross-attention over the encoder output and feed-forward, each with Add & Norm), then
    the output layer tied to the embedding and a softmax. Residual connections are drawn as lines around each
    sub-layer; the encoder output (the memory) feeds every decoder layer's cross-attention. The blocks are
    :data:`TRANSFORMER_DIAGRAM_BLOCKS`.

    Args:
        num_encoder_layers: the N written beside the encoder stack (an int, or a symbol such as ``"N"``).
        num_decoder_layers: the N written beside the decoder stack.
        title: figure title (None: none).
        figsize: ``(width, height)`` in inches.

    Returns:
        The Figure: one axes without ticks holding the blocks (patches) and their labels (texts).

    Raises:
        ValueError: a number of layers that is a negative int, or an empty string.

    Source: Vaswani et al. 2017, Figure 1 and §3.1–§3.5.
    """
    for name, n in (("num_encoder_layers", num_encoder_layers), ("num_decoder_layers", num_decoder_layers)):
        if isinstance(n, bool) or not isinstance(n, (int, str)) or (isinstance(n, int) and n < 0) or n == "":
            raise ValueError(f"{name} must be a non-negative int or a symbol such as 'N', got {n!r}")

    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    ax.set_xlim(-0.7, 10.6)
    ax.set_ylim(-0.5, 13.5)
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=11)
    blocks = {key: (label, code) for key, label, code in TRANSFORMER_DIAGRAM_BLOCKS}
    width, height = 3.3, 0.62
    centres: dict[str, tuple[float, float]] = {}

    def box(key: str, x: float, y: float) -> None:
        label, code = blocks[key]
        patch = FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02,rounding_size=0.12",
            facecolor=_DIAGRAM_COLOURS[_diagram_kind(key)],
            edgecolor="#333333",
            linewidth=1.0,
            gid=key,
        )
        ax.add_patch(patch)
        ax.text(x, y + 0.12, label, ha="center", va="center", fontsize=8.5)
        ax.text(x, y - 0.15, code, ha="center", va="center", fontsize=7.5, family="monospace", color="#1f3b73")
        centres[key] = (x, y)

    def arrow(start: tuple[float, float], end: tuple[float, float], **kw: Any) -> None:
        style = dict(arrowstyle="-|>", mutation_scale=10, linewidth=1.0, color="#333333", shrinkA=0, shrinkB=0)
        ax.add_patch(FancyArrowPatch(start, end, **{**style, **kw}))

    def up(a: str, b: str) -> None:
        (xa, ya), (xb, yb) = centres[a], centres[b]
        arrow((xa, ya + height / 2), (xb, yb - height / 2))

    def residual(x: float, y_from: float, to: str) -> None:
        # From below a sub-layer, around its left side, into the Add & Norm block above it.
        left = x - width / 2 - 0.25
        xt, yt = centres[to]
        ax.plot([x, left, left], [y_from, y_from, yt], color="#777777", linewidth=1.0)
        arrow((left, yt), (xt - width / 2, yt), color="#777777")

    def stack(x: float, y0: float, y1: float, n: int | str, layer: str, stack_name: str) -> None:
        frame = FancyBboxPatch(
            (x - width / 2 - 0.45, y0),
            width + 0.9,
            y1 - y0,
            boxstyle="round,pad=0.02,rounding_size=0.2",
            facecolor="#f2f2f2",
            edgecolor="#555555",
            linewidth=1.2,
            zorder=0,
        )
        ax.add_patch(frame)
        left_side = x < 5
        edge = x - width / 2 - 0.45 if left_side else x + width / 2 + 0.45
        sign = -1 if left_side else 1
        ax.text(
            edge + sign * 0.25,
            (y0 + y1) / 2,
            f"{stack_name}: {n} × {layer}",
            ha="center",
            va="center",
            rotation=90,
            fontsize=8,
            family="monospace",
            color="#1f3b73",
        )
        ax.text(edge + sign * 0.7, (y0 + y1) / 2, f"{n}×", ha="center", va="center", fontsize=12)

    xe, xd = 2.6, 7.4
    # encoder: inputs, embedding, positions, then the stack
    ax.text(xe, -0.2, "source ids (batch, seq_s) + </s>", ha="center", va="center", fontsize=8)
    box("src_embed", xe, 0.75)
    box("src_pe", xe, 1.75)
    arrow((xe, 0.0), (xe, 0.75 - height / 2))
    up("src_embed", "src_pe")
    ys = {"enc_self": 3.3, "enc_norm1": 4.3, "enc_ffn": 5.5, "enc_norm2": 6.5}
    for key, y in ys.items():
        box(key, xe, y)
    stack(xe, 2.55, 7.05, num_encoder_layers, "EncoderLayer", "Encoder")
    arrow((xe, 1.75 + height / 2), (xe, 3.3 - height / 2))
    up("enc_self", "enc_norm1")
    up("enc_norm1", "enc_ffn")
    up("enc_ffn", "enc_norm2")
    residual(xe, 2.75, "enc_norm1")
    residual(xe, 4.85, "enc_norm2")
    ax.text(xe + 0.08, 2.8, "Q, K, V", ha="left", va="center", fontsize=7, color="#555555")
    ax.text(xe + 1.2, 2.8, "padding_mask", ha="center", va="center", fontsize=7, family="monospace", color="#555555")

    # decoder: shifted target, embedding, positions, then the stack
    ax.text(xd, -0.2, "target ids shifted right: <s> + y (batch, seq_t)", ha="center", va="center", fontsize=8)
    box("tgt_embed", xd, 0.75)
    box("tgt_pe", xd, 1.75)
    arrow((xd, 0.0), (xd, 0.75 - height / 2))
    up("tgt_embed", "tgt_pe")
    yd = {"dec_self": 3.3, "dec_norm1": 4.3, "dec_cross": 5.5, "dec_norm2": 6.5, "dec_ffn": 7.7, "dec_norm3": 8.7}
    for key, y in yd.items():
        box(key, xd, y)
    stack(xd, 2.55, 9.25, num_decoder_layers, "DecoderLayer", "Decoder")
    arrow((xd, 1.75 + height / 2), (xd, 3.3 - height / 2))
    for a, b in (("dec_self", "dec_norm1"), ("dec_norm1", "dec_cross"), ("dec_cross", "dec_norm2")):
        up(a, b)
    for a, b in (("dec_norm2", "dec_ffn"), ("dec_ffn", "dec_norm3")):
        up(a, b)
    residual(xd, 2.75, "dec_norm1")
    residual(xd, 4.85, "dec_norm2")
    residual(xd, 7.05, "dec_norm3")
    ax.text(xd + 1.1, 2.8, "causal_mask", ha="center", va="center", fontsize=7, family="monospace", color="#555555")
    ax.text(xd + 0.95, 4.95, "Q from here", ha="center", va="center", fontsize=7, color="#555555")

    # the memory: the encoder output feeds every decoder layer's cross-attention (keys and values)
    mem_y = 7.6
    ax.plot([xe, xe], [6.5 + height / 2, mem_y], color="#b5522b", linewidth=1.4)
    ax.plot([xe, 5.0, 5.0], [mem_y, mem_y, 5.5], color="#b5522b", linewidth=1.4)
    arrow((5.0, 5.5), (xd - width / 2, 5.5), color="#b5522b", linewidth=1.4)
    memory_label = "memory (batch, seq_s, d_model): keys and values\nof every cross-attention, with padding_mask"
    ax.text(3.4, mem_y + 0.12, memory_label, ha="center", va="bottom", fontsize=7.5, color="#b5522b")

    # output layer and softmax
    box("output", xd, 10.35)
    box("softmax", xd, 11.35)
    arrow((xd, 9.25), (xd, 10.35 - height / 2))
    up("output", "softmax")
    arrow((xd, 11.35 + height / 2), (xd, 12.15))
    ax.text(xd, 12.35, "P(y_t | y_<t, x): (batch, seq_t, vocab)", ha="center", va="center", fontsize=8)

    # the tied matrix: one table for both embeddings and the output layer
    tied = dict(color="#6a3d9a", linestyle="--", linewidth=1.0)
    x_tied = -0.5  # left of the encoder stack and its labels
    ax.plot([xe - width / 2, x_tied, x_tied, xd - width / 2], [0.75, 0.75, 10.35, 10.35], **tied)
    ax.text(
        xe,
        10.45,
        "one matrix for src_embed, tgt_embed and output\n(share_embeddings=True)",
        ha="center",
        va="bottom",
        fontsize=7.5,
        color="#6a3d9a",
    )
    ax.text(
        xe,
        12.9,
        "lib.transformer.Transformer (post-LN, as in the paper; norm_first=True puts each LayerNorm\n"
        "before its sub-layer and adds one after each stack, the capstone's pre-LN model)",
        ha="center",
        va="center",
        fontsize=7.5,
        color="#333333",
    )
    return fig
