"""The plumbing of the chapter "The Transformer" and its deeper dives (batching, cost).

Figure builders, the printing of shapes, the padding statistics of a batching, the path-length probe and the
timing harness: what the pages run but their reader need not read. The ideas themselves are in
``lib.transformer``, ``lib.training`` and ``lib.data``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import Tensor, nn

from ..attention import MultiHeadAttention, scaled_dot_product_attention
from ..cost import median_ms
from ..plots import plot_curves
from ..training import label_smoothed_cross_entropy, noam_lr
from ..transformer import EncoderLayer

__all__ = [
    "legend_outside",
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
]


def legend_outside(fig: Figure) -> Figure:
    """Move the legend of a one-axes figure (``lib.plots.plot_curves``) to the right of the axes.

    Args:
        fig: a figure whose first axes has a legend.

    Returns:
        The same figure, its legend outside the axes, where it hides no curve.
    """
    fig.axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


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
    fig = Figure(figsize=(7.5, 4.6), layout="constrained")
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
    axes[0].set_yticks(range(len(labels)), labels, fontsize=7)
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
    return legend_outside(plot_curves(curve, xlabel="optimiser step", ylabel="learning rate", figsize=(9.5, 3)))


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
    ax.set_title(ax.get_legend().get_texts()[0].get_text())
    ax.get_legend().remove()
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
    fig = Figure(figsize=(7, 2.6), layout="constrained")
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
    fig = Figure(figsize=(7.5, 2.8), layout="constrained")
    ax = fig.add_subplot()
    bins = np.linspace(0, max(cells_a.max(), cells_b.max()) * 1.05, 40)
    ax.hist(cells_a, bins=bins, alpha=0.7, label=label_a)
    ax.hist(cells_b, bins=bins, alpha=0.7, label=label_b)
    ax.set_xlabel("positions per batch (source + target, padding included)")
    ax.set_ylabel("batches")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
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
