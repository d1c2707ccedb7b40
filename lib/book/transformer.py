"""The plumbing of the chapter "The Transformer" and its deeper dives (batching, cost).

Figure builders, the printing of shapes, the padding statistics of a batching, the path-length probe and the
timing harness: what the pages run but their reader need not read. The ideas themselves are in
``lib.transformer``, ``lib.training`` and ``lib.data``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import Tensor, nn

from ..attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from ..cost import median_ms
from ..data import collate, encode_pairs
from ..plots import plot_curves
from ..special_tokens import BOS_ID, EOS_ID, PAD_ID
from ..token_labels import token_labels
from ..training import label_smoothed_cross_entropy, noam_lr
from ..transformer import EncoderLayer

__all__ = [
    "print_shape",
    "norm_axes_figure",
    "residual_rms",
    "schedule_figure",
    "warmup_frame",
    "smoothed_target_figure",
    "smoothing_loss_curve",
    "padding_stats",
    "batch_size_figure",
    "AttentionOverChannels",
    "layers_until_connected",
    "layer_timings",
    "WalkStage",
    "sentence_walk",
    "walk_figure",
    "WALK_ALT",
    "WALK_WIDTH_IN",
]


def print_shape(name: str, tensor: Tensor) -> None:
    """Print one line: a stage's name, its tensor's shape and dtype (the chapter's walk through the model).

    Args:
        name: what the tensor is, e.g. ``"encoder layer 1"``.
        tensor: any tensor.
    """
    print(f"{name:38s} {tuple(tensor.shape)!s:16s} {str(tensor.dtype).removeprefix('torch.')}")


def norm_axes_figure(x: Tensor, is_pad: Tensor) -> Figure:
    """The ``(batch · seq, d)`` matrix twice: LayerNorm's group is a row, BatchNorm's group a column.

    Args:
        x: a padded batch, ``(batch, seq, d)``.
        is_pad: ``(batch, seq)`` booleans, True at padding (labelled "(pad)").

    Returns:
        A figure with two heat maps of the same matrix (rows: ``s<b> t<t>``, sentence and token), one with a
        token's row boxed, one with a feature's column boxed.
    """
    flat = x.reshape(-1, x.size(-1)).numpy()
    labels = [f"s{b} t{t}" + (" (pad)" if is_pad[b, t] else "") for b in range(x.size(0)) for t in range(x.size(1))]
    fig = Figure(figsize=(6.6, 4.6), layout="constrained")  # the page's column: its 9-pt labels stay 9 pt
    axes = fig.subplots(1, 2, sharey=True)
    groups = [
        ("LayerNorm: one mean and variance\nper token (a row)", Rectangle((-0.5, 5.5), flat.shape[1], 1)),
        (
            "BatchNorm: one mean and variance\nper feature (a column, pads included)",
            Rectangle((0.5, -0.5), 1, len(flat)),
        ),
    ]
    for ax, (title, rect) in zip(axes, groups):
        im = ax.imshow(flat, cmap="RdBu_r", vmin=-5, vmax=5, aspect="auto", interpolation="nearest")
        rect.set(fill=False, edgecolor="black", linewidth=2.5)
        ax.add_patch(rect)
        ax.set_xticks(range(flat.shape[1]))
        ax.set_xlabel("feature")
        ax.set_title(title, fontsize=9)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=9)
    fig.colorbar(im, ax=axes, fraction=0.04)
    return fig


def residual_rms(norm_first: bool, num_layers: int = 12, d_model: int = 64, seed: int = 0) -> list[float]:
    """Root mean square of the residual stream after each of ``num_layers`` fresh encoder layers.

    Args:
        norm_first: pre-LN (True) or the paper's post-LN (False) layers.
        num_layers: how many layers to stack.
        d_model: their width (4 heads, ``d_ff = 4 · d_model``).
        seed: seeds the layers' weights and the random input ``(4, 20, d_model)``.

    Returns:
        ``num_layers + 1`` numbers: the input's RMS, then the RMS after each layer (evaluation mode: no dropout).
    """
    torch.manual_seed(seed)
    stack = [EncoderLayer(d_model, 4, 4 * d_model, norm_first=norm_first).eval() for _ in range(num_layers)]
    x = torch.randn(4, 20, d_model)
    rms = [x.pow(2).mean().sqrt().item()]
    with torch.no_grad():
        for layer in stack:
            x, _ = layer(x)
            rms.append(x.pow(2).mean().sqrt().item())
    return rms


def schedule_figure(d_model: int = 512, warmup: int = 4000, factor: float = 1.0, max_step: int = 20_000) -> Figure:
    """The warm-up learning-rate schedule ``lib.training.noam_lr`` for one setting, its peak in the legend.

    Args:
        d_model: the model width in the schedule's ``d_model^-0.5``.
        warmup: the warm-up steps.
        factor: the schedule's scale.
        max_step: the last step drawn (every 10th step is drawn).

    Returns:
        A one-curve figure, learning rate against optimiser step.
    """
    s = np.arange(1, max_step + 1, 10)
    peak = noam_lr(warmup, d_model, warmup, factor)
    label = f"d_model {d_model}, warm-up {warmup}, factor {factor:g}: peak {peak:.2e}"
    curve = {label: (s, [noam_lr(int(t), d_model, warmup, factor) for t in s])}
    return plot_curves(curve, xlabel="optimiser step", ylabel="learning rate", figsize=(6.6, 3))


def warmup_frame(warmup: int) -> Figure:
    """One frame of the chapter's warm-up slider: the paper's schedule (``d_model`` 512) for one warm-up.

    The legend becomes the title, so that the axes stay in place from frame to frame, and the y axis is fixed
    (to the peak of a 1,000-step warm-up), so that the peaks compare.

    Args:
        warmup: the warm-up steps.

    Returns:
        The figure of :func:`schedule_figure` with the fixed y axis.
    """
    fig = schedule_figure(512, warmup)
    ax = fig.axes[0]
    ax.set_title(ax.lines[0].get_label())  # the curve's name, on one line (the legend wraps it)
    ax.get_legend().remove()
    ax.set_xticks(range(0, 20_001, 4000))  # the axes now span the figure: a tick every 4,000 steps
    ax.set_ylim(0, 1.05 * noam_lr(1000, 512, 1000))
    return fig


def smoothed_target_figure(one_hot: Tensor, smoothed: Tensor, epsilon: float) -> Figure:
    """Bars of a one-hot target and its label-smoothed version, side by side per token id.

    Args:
        one_hot: ``(V,)`` the one-hot target.
        smoothed: ``(V,)`` the smoothed target.
        epsilon: the smoothing ε, for the legend.

    Returns:
        A bar chart, target probability per token id.
    """
    fig = Figure(figsize=(6.6, 2.6), layout="constrained")
    ax = fig.add_subplot()
    pos = np.arange(len(one_hot))
    ax.bar(pos - 0.2, one_hot.numpy(), width=0.4, label="one-hot target")
    ax.bar(pos + 0.2, smoothed.numpy(), width=0.4, label=f"smoothed, epsilon = {epsilon}")
    ax.set_xticks(pos)
    ax.set_xlabel(f"token id ({int(one_hot.argmax())} = correct)")
    ax.set_ylabel("target probability")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def smoothing_loss_curve(p: Tensor, vocab_size: int, true_token: int, epsilon: float) -> Tensor:
    """The loss of one prediction that puts probability ``p`` on the correct token and spreads the rest evenly.

    Each value is ``lib.training.label_smoothed_cross_entropy`` of one position (``epsilon = 0``: plain
    cross-entropy).

    Args:
        p: ``(n,)`` probabilities on the correct token, each in (0, 1).
        vocab_size: the vocabulary size V (the other ``V - 1`` tokens share ``1 - p``).
        true_token: the id of the correct token.
        epsilon: the label-smoothing ε.

    Returns:
        ``(n,)`` the loss in nats for each ``p``.
    """
    probs = ((1 - p[:, None]) / (vocab_size - 1)).repeat(1, vocab_size)
    probs[:, true_token] = p
    log_probs = probs.log()[None]  # (1, n positions, V): log-probabilities are valid logits
    target = torch.full((1, 1), true_token)
    return torch.stack(
        [
            label_smoothed_cross_entropy(log_probs[:, i : i + 1], target, epsilon, ignore_index=-100)
            for i in range(len(p))
        ]
    )


def padding_stats(
    batches: Sequence[Sequence[int]], src_len: np.ndarray, tgt_len: np.ndarray
) -> tuple[float, np.ndarray]:
    """The share of padded positions of a batching, and the positions of each of its padded batches.

    A batch of pairs is padded to its longest source and its longest target: it holds
    ``len(batch) · (max source length + max target length)`` positions.

    Args:
        batches: lists of example indices.
        src_len: ``(examples,)`` each source's length in positions (with its end token).
        tgt_len: ``(examples,)`` each target's length in positions (with its start or end token).

    Returns:
        ``(padding share in [0, 1], positions per batch as an int array)``.
    """
    real = cells = 0
    per_batch = []
    for b in batches:
        b_cells = len(b) * (src_len[b].max() + tgt_len[b].max())
        real += src_len[b].sum() + tgt_len[b].sum()
        cells += b_cells
        per_batch.append(b_cells)
    return 1 - real / cells, np.array(per_batch)


def batch_size_figure(cells_a: np.ndarray, cells_b: np.ndarray, label_a: str, label_b: str) -> Figure:
    """Histograms of the positions per batch (padding included) of two batchings.

    Args:
        cells_a, cells_b: positions per batch of each batching (:func:`padding_stats`).
        label_a, label_b: their names in the legend.

    Returns:
        One axes with both histograms on the same bins.
    """
    fig = Figure(figsize=(6.6, 3.0), layout="constrained")
    ax = fig.add_subplot()
    bins = np.linspace(0, max(cells_a.max(), cells_b.max()) * 1.05, 40)
    ax.hist(cells_a, bins=bins, alpha=0.7, label=label_a)
    ax.hist(cells_b, bins=bins, alpha=0.7, label=label_b)
    ax.set_xlabel("positions per batch (source + target, padding included)")
    ax.set_ylabel("batches")
    fig.legend(loc="outside upper center", ncols=2, frameon=False)  # above the axes: the bars keep the full width
    return fig


class AttentionOverChannels(nn.Module):
    """``lib``'s one-head self-attention on ``(batch, channels, positions)`` input, the layout of ``nn.Conv1d``.

    Args:
        d: the channels (the model width).
    """

    def __init__(self, d: int) -> None:
        super().__init__()
        self.attn = MultiHeadAttention(d, num_heads=1)

    def forward(self, x: Tensor) -> Tensor:
        """Self-attention over the positions.

        Args:
            x: ``(batch, channels, positions)``.

        Returns:
            ``(batch, channels, positions)``.
        """
        h = x.transpose(1, 2)  # (batch, positions, d)
        return self.attn(h, h, h)[0].transpose(1, 2)


def layers_until_connected(
    make_layer: Callable[[int], nn.Module], n: int = 16, d: int = 4, max_layers: int = 40, seed: int = 0
) -> int | None:
    """The smallest depth at which output position ``n - 1`` depends on input position 0 (a non-zero gradient).

    Args:
        make_layer: ``depth -> layer`` on ``(batch, d, n)`` tensors (called for depths 1, 2, ...).
        n: the sequence length.
        d: the channels.
        max_layers: give up after this many layers.
        seed: seeds the input (and the layers' weights).

    Returns:
        The depth, or None when ``max_layers`` layers do not connect the two positions.
    """
    torch.manual_seed(seed)
    x = torch.randn(1, d, n, requires_grad=True)  # (batch, channels, positions)
    out = x
    for depth in range(1, max_layers + 1):
        out = make_layer(depth)(out)
        (grad,) = torch.autograd.grad(out[0, :, -1].sum(), x, retain_graph=True)
        if grad[0, :, 0].abs().sum() > 0:
            return depth
    return None


def layer_timings(lengths: Sequence[int], d: int = 64, repeats: int = 9, seed: int = 0) -> dict[str, list[float]]:
    """Median milliseconds of one self-attention, one recurrent and one convolution layer, per sequence length.

    One thread (steadier, and the same for every layer), no gradients, a warm-up call, then the median of
    ``repeats`` calls, the three layers taking turns (``lib.cost.median_ms``). The numbers depend on the
    machine and on what else runs on it.

    Args:
        lengths: the sequence lengths n.
        d: the width of every layer.
        repeats: timed calls per layer and length.
        seed: seeds the layers' weights and the inputs ``(1, n, d)``.

    Returns:
        ``{"self-attention": [...], "recurrent (nn.RNN)": [...], "convolution, k = 3": [...]}``, one median
        per length.
    """
    torch.manual_seed(seed)
    rnn = nn.RNN(d, d, batch_first=True)  # one step per token, in order
    conv = nn.Conv1d(d, d, 3, padding=1)
    timings: dict[str, list[float]] = {"self-attention": [], "recurrent (nn.RNN)": [], "convolution, k = 3": []}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            for n in lengths:
                x = torch.randn(1, n, d)
                calls = {
                    "self-attention": lambda x=x: scaled_dot_product_attention(x, x, x),
                    "recurrent (nn.RNN)": lambda x=x: rnn(x),
                    "convolution, k = 3": lambda x=x: conv(x.transpose(1, 2)),
                }
                for name, ms in median_ms(calls, repeats=repeats, warmup=1).items():
                    timings[name].append(ms)
    finally:
        torch.set_num_threads(threads)
    return timings


# --------------------------------------------------------------------------------------------
# The one-sentence walk, stage by stage (the slider and the widget after the block diagram)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WalkStage:
    """One stage of the one-sentence walk: the numbers one frame of the slider draws.

    Attributes:
        name: the stage, e.g. ``"encoder layer 2"``.
        shape: the shape of the stage's tensor in the model, e.g. ``(1, 10, 128)``.
        values: what is drawn: ``(rows, columns)`` vectors or weights, or ``(k,)`` probabilities.
        rows: a label per row (the tokens, or the heads); for probabilities, the ``k`` tokens.
        columns: a label per column (the keys' tokens), or None when the columns are the ``d_model`` features.
        note: a few of the stage's numbers, one line under the picture.
        caption: one sentence of what the frame shows, with its key numbers (the slider's label, read as alt text).
    """

    name: str
    shape: tuple[int, ...]
    values: np.ndarray
    rows: list[str]
    columns: list[str] | None
    note: str
    caption: str


def _vectors(name: str, x: Tensor, tokens: list[str], what: str) -> WalkStage:
    """A stage of ``(1, seq, d)`` vectors: its heat strip, the first numbers of row 0 and the lengths of the rows."""
    v = x[0].numpy()
    norms = np.linalg.norm(v, axis=-1)
    first = ", ".join(f"{a:+.2f}" for a in v[0, :4])
    note = f"{what}; row {tokens[0]}: [{first}, …]; length of a row {norms.min():.1f} to {norms.max():.1f}"
    caption = (
        f"{name}: {v.shape[0]} rows (tokens) × {v.shape[1]} features, shape {tuple(x.shape)}, rows of length "
        f"{norms.min():.1f} to {norms.max():.1f}"
    )
    return WalkStage(name, tuple(x.shape), v, tokens, None, note, caption)


def sentence_walk(run, pair: tuple[str, str], prefix: int = 3, layer: int = 0, top_k: int = 5) -> list[WalkStage]:
    """One test pair through a trained Transformer, stage by stage, with the stages' real values.

    The source goes through the embedding (× √d_model), the positional encoding, every encoder layer and the
    final LayerNorm (the memory); the decoder reads ``<s>`` and the first ``prefix - 1`` target tokens (one
    decoder step: it predicts the token after them), and the walk keeps one decoder layer's masked
    self-attention and cross-attention weights, the decoder's output and the top tokens of the softmax.

    Args:
        run: a loaded run (``lib.checkpoint.load_run``): its ``model`` (eval mode) and ``tokenizer``.
        pair: the (source, target) sentences.
        prefix: decoder input positions read, ``<s>`` included.
        layer: the decoder layer whose attention weights are kept (0 = the first).
        top_k: tokens kept from the softmax.

    Returns:
        The stages in order (:class:`WalkStage`); the last holds the ``top_k`` probabilities of the next token.
    """
    model, tok = run.model, run.tokenizer
    batch = collate(encode_pairs([pair], tok), PAD_ID, BOS_ID, EOS_ID)
    src, tgt = batch.src, batch.tgt_in[:, :prefix]
    src_tokens = [tok.id_to_token(i) for i in src[0].tolist()]
    tgt_tokens = [tok.id_to_token(i) for i in tgt[0].tolist()]
    src_words, tgt_words = token_labels(src_tokens), token_labels(tgt_tokens)  # the captions': "▁Hund" -> "Hund"
    scale = math.sqrt(model.config.d_model)
    stages = []
    with torch.no_grad():
        e = model.src_embed(src) * scale  # (1, seq_s, d_model)
        stages.append(_vectors("source embedding × √d_model", e, src_tokens, "each token's row of the table × √d"))
        x = model.positional(e)
        stages.append(_vectors("+ positional encoding", x, src_tokens, "each position adds a row of length 8"))
        mask = model.source_mask(src)  # (1, 1, 1, seq_s), True = real token
        for i, enc in enumerate(model.encoder.layers):
            x, _ = enc(x, mask)
            stages.append(_vectors(f"encoder layer {i}", x, src_tokens, "the same shape, new values"))
        memory = model.encoder.norm(x)
        stages.append(_vectors("memory (final LayerNorm)", memory, src_tokens, "what cross-attention reads"))
        y = model.positional(model.tgt_embed(tgt) * scale)  # (1, prefix, d_model)
        stages.append(_vectors("decoder input embedded (× √d_model + PE)", y, tgt_tokens, "the target so far"))
        causal = causal_mask(prefix)
        for i, dec in enumerate(model.decoder.layers):
            y, w_self, w_cross = dec(y, memory, causal, mask, return_attention=True)
            if i == layer:
                kept = w_self, w_cross
        y = model.decoder.norm(y)
        probs = torch.softmax(model.output(y), dim=-1)  # (1, prefix, vocab)
    w_self, w_cross = kept
    self_avg = w_self[0].mean(0).numpy()  # (prefix, prefix), the heads' average
    last = tgt_words[-1]
    row = ", ".join(f"{a:.2f}" for a in self_avg[-1])
    stages.append(
        WalkStage(
            f"decoder layer {layer}: masked self-attention",
            tuple(w_self.shape),
            self_avg,
            tgt_tokens,
            tgt_tokens,
            f"weights averaged over the {w_self.size(1)} heads; row {last}: [{row}]; above the diagonal 0 (causal)",
            f"decoder layer {layer}, masked self-attention: {prefix} × {prefix} weights (the heads' average), "
            f"0 above the diagonal; row {last} = [{row}]",
        )
    )
    cross = w_cross[0, :, -1].numpy()  # (heads, seq_s): the last query's weights
    peaks = [src_words[j] for j in cross.argmax(-1)]
    stages.append(
        WalkStage(
            f"decoder layer {layer}: cross-attention over the memory",
            tuple(w_cross.shape),
            cross,
            [f"head {h}" for h in range(cross.shape[0])],
            src_tokens,
            f"query {last}: each head's weights over the {len(src_tokens)} source tokens; "
            f"largest on {', '.join(peaks)}",
            f"decoder layer {layer}, cross-attention: the {cross.shape[0]} heads' weights from {last} over the "
            f"{len(src_tokens)} source tokens, largest on {', '.join(peaks)}",
        )
    )
    stages.append(_vectors("decoder output (final LayerNorm)", y, tgt_tokens, "one vector per target position"))
    p, ids = probs[0, -1].topk(top_k)
    top = [tok.id_to_token(i) for i in ids.tolist()]
    listed = ", ".join(f"{t} {v:.2f}" for t, v in zip(token_labels(top), p.tolist()))
    stages.append(
        WalkStage(
            f"output softmax after {last}",
            tuple(probs.shape),
            p.numpy(),
            top,
            None,
            f"the next token after {' '.join(tgt_words)}: {listed}",
            f"output softmax: the next token after {' '.join(tgt_words)}, {top_k} most likely of "
            f"{probs.size(-1)}: {listed}",
        )
    )
    return stages


#: The walk's frames are drawn for the page's column: 6.7 in at the slider's 100 dpi is under its 688 px, so a 9-pt
#: label is 9 pt there; a tap shows a frame at this size on a phone.
WALK_WIDTH_IN = 6.7

#: The alt text of the walk's slider frames (``{value}`` is the frame's label: its number and caption).
WALK_ALT = (
    "The one-sentence walk through the shipped model, stage {value}. Drawn as a heat strip (rows: tokens or heads; "
    "columns: features or source tokens; colour: the value) or, for the softmax, as bars of probability."
)


def walk_figure(stages: Sequence[WalkStage], index: int) -> Figure:
    """One frame of the walk: stage ``index`` as a heat strip (or bars, for the softmax), its shape and numbers.

    Args:
        stages: the walk, from :func:`sentence_walk`.
        index: which stage to draw.

    Returns:
        A figure titled ``"<index + 1>/<n> <name>: shape <shape>"``, the stage's note under it.
    """
    s = stages[index]
    fig = Figure(figsize=(WALK_WIDTH_IN, 3.2), layout="constrained")  # the page's column
    ax = fig.subplots()
    if s.values.ndim == 1:  # the softmax: bars of probability
        bars = ax.bar(range(len(s.rows)), s.values, color="#440154")
        ax.bar_label(bars, labels=[f"{v:.2f}" for v in s.values], fontsize=10)
        ax.set_xticks(range(len(s.rows)), token_labels(s.rows), fontsize=10)  # tokens as words
        ax.set_ylim(0, 1)
        ax.set_ylabel("probability")
    else:
        weights = s.columns is not None  # attention weights: sequential colours, 0 to 1
        vmax = float(np.abs(s.values).max())
        im = ax.imshow(
            s.values,
            cmap="viridis" if weights else "RdBu_r",
            vmin=0 if weights else -vmax,
            vmax=1 if weights else vmax,
            aspect="auto",
            interpolation="nearest",
        )
        ax.set_yticks(range(len(s.rows)), token_labels(s.rows), fontsize=10)  # tokens as words
        if weights:
            ax.set_xticks(range(len(s.columns)), token_labels(s.columns), fontsize=9)  # 10 source tokens side by side
        else:
            ax.set_xlabel("feature (0 … d_model − 1)")
        fig.colorbar(im, ax=ax, fraction=0.04, pad=0.01)
    ax.set_title(f"{index + 1}/{len(stages)}  {s.name}: shape {s.shape}", fontsize=11)
    fig.text(0.01, -0.02, s.note, fontsize=9, ha="left", va="top", wrap=True)
    return fig
