"""The plumbing of the self-attention chapter and its deeper dives (figure helpers, statistics, timing).

The ideas live in ``lib.attention`` (the attention the chapter builds) and ``lib.cost`` (what it costs); this
module holds what the pages run around them: a one-head layer with given matrices, the random scores of the
√d_k experiment and their softmax statistics, the map of one head of the trained model, and the timing run.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from matplotlib.figure import Figure

from lib.attention import MultiHeadAttention
from lib.cost import AttentionCost, attention_cost
from lib.plots import plot_attention, plot_curves
from lib.pretrained import coreference_accuracy, load_minilm, pair_attention
from lib.translate import TranslationAttention, translation_attention

__all__ = [
    "log2_axis",
    "one_head_layer",
    "random_scores",
    "softmax_stats",
    "attention_view",
    "pronoun_rows",
    "minilm_coreference",
    "timed_attention_cost",
    "plot_attention_times",
]

KINDS = ("encoder", "decoder")


def log2_axis(fig: Figure, ticks: Sequence[int]) -> Figure:
    """Give the first axes of ``fig`` a base-2 logarithmic x axis labelled with ``ticks`` (sizes that double).

    Args:
        fig: a figure from ``lib.plots.plot_curves``.
        ticks: the x values to label, e.g. ``[4, 16, 64]``.

    Returns:
        The same figure.
    """
    ax = fig.axes[0]
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks), [str(t) for t in ticks])
    ax.minorticks_off()
    return fig


@torch.no_grad()
def one_head_layer(w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor) -> MultiHeadAttention:
    """``lib``'s ``MultiHeadAttention`` with one head, no biases, the given projections and ``W^O = I``.

    Args:
        w_q, w_k, w_v: ``(d_model, d_model)`` matrices, applied as ``x @ w`` (an ``nn.Linear`` stores ``wᵀ``).

    Returns:
        The layer in eval mode; called as ``layer(x, x, x)`` on ``(batch, n, d_model)`` it returns the output
        and the weights ``(batch, 1, n, n)``.
    """
    d_model = w_q.shape[0]
    layer = MultiHeadAttention(d_model, num_heads=1, bias=False).eval()
    for linear, w in ((layer.w_q, w_q), (layer.w_k, w_k), (layer.w_v, w_v), (layer.w_o, torch.eye(d_model))):
        linear.weight.copy_(w.T)
    return layer


def random_scores(d_k: int, rows: int, n_keys: int, generator: torch.Generator, chunk: int = 250) -> torch.Tensor:
    """Unscaled scores ``q · k`` of random queries against random keys, entries standard normal (float64).

    Args:
        d_k: the width of the queries and keys.
        rows: the number of queries, one row each.
        n_keys: the keys per query (each query has its own keys).
        generator: the source of randomness.
        chunk: queries drawn at a time (bounds the memory of the keys).

    Returns:
        ``(rows, n_keys)`` tensor: row i holds query i's scores with its keys.
    """
    parts = []
    for start in range(0, rows, chunk):
        m = min(chunk, rows - start)
        q = torch.randn(m, 1, d_k, generator=generator, dtype=torch.float64)
        k = torch.randn(m, n_keys, d_k, generator=generator, dtype=torch.float64)
        parts.append((q @ k.transpose(1, 2))[:, 0])  # (m, n_keys)
    return torch.cat(parts)


def softmax_stats(scores: torch.Tensor) -> tuple[float, float, float]:
    """How peaked the softmax of each row is, and how much gradient it passes back, averaged over the rows.

    Args:
        scores: ``(rows, n)`` scores, one softmax per row.

    Returns:
        ``(largest weight, entropy in nats, Frobenius norm of the softmax's Jacobian diag(α) − α αᵀ)``,
        each the mean over the rows.
    """
    w = torch.softmax(scores, dim=-1)
    entropy = -(w * torch.log(w.clamp_min(1e-30))).sum(-1)
    jacobian = torch.diag_embed(w) - w[:, :, None] * w[:, None, :]  # (rows, n, n): ∂α_i / ∂s_j
    return w.max(-1).values.mean().item(), entropy.mean().item(), jacobian.flatten(1).norm(dim=-1).mean().item()


def attention_view(model, tokenizer, sentence: str, kind: str = "encoder", layer: int = 0, head: int = 0) -> Figure:
    """One head's self-attention map of a trained translation model for one German sentence.

    Args:
        model: a trained ``lib.transformer.Transformer``.
        tokenizer: its tokenizer.
        sentence: the German sentence; the model translates it.
        kind: ``"encoder"`` (over the German sub-words) or ``"decoder"`` (causal, over the decoder's inputs:
            ``<s>`` and the English sub-words the model wrote).
        layer, head: which map.

    Returns:
        The heat map (rows: queries, columns: keys), titled with the sentence and the model's translation.

    Raises:
        ValueError: ``kind`` is not ``"encoder"`` or ``"decoder"``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    ta = translation_attention(model, tokenizer, sentence)
    weights = getattr(ta.weights, kind)[layer][0, head]  # (seq_q, seq_k)
    labels = ta.source_tokens if kind == "encoder" else ["<s>"] + ta.target_tokens[:-1]
    title = f"{kind} self-attention, layer {layer}, head {head}\n{ta.source}\n→ {ta.translation}"
    return plot_attention(weights, labels, labels, annotate=False, title=title)


def pronoun_rows(model, tokenizer, sentence: str, pronoun: str) -> tuple[TranslationAttention, torch.Tensor]:
    """Where the query of a pronoun looks in every encoder head: one row per (layer, head).

    Args:
        model: a trained ``lib.transformer.Transformer``.
        tokenizer: its tokenizer.
        sentence: the German sentence.
        pronoun: the pronoun's sub-word, e.g. ``"▁es"``.

    Returns:
        ``(the sentence's TranslationAttention, rows)`` with ``rows`` of shape ``(layers · heads, seq_s)``,
        row ``layer · heads + head``.
    """
    ta = translation_attention(model, tokenizer, sentence)
    i = ta.source_tokens.index(pronoun)
    return ta, torch.stack([w[0, :, i] for w in ta.weights.encoder]).flatten(0, 1)


def minilm_coreference(pair_list: Sequence[dict]) -> dict | None:
    """Recompute the minimal-pair coreference scores of all-MiniLM-L6-v2, or None when it is not installed.

    Args:
        pair_list: the pairs of ``models/minilm/coreference.json`` (each with ``first``, ``second`` and
            ``candidates``), as ``bench/minilm_coreference.py`` wrote them.

    Returns:
        ``lib.pretrained.coreference_accuracy`` of the pairs (``sentence_accuracy``: ``(layers, heads)``, ...),
        or None without the optional package (``make pretrained``).
    """
    try:
        minilm, wordpiece = load_minilm()
    except ImportError:
        return None
    runs = [pair_attention(minilm, wordpiece, [p["first"], p["second"]], p["candidates"]) for p in pair_list]
    both = torch.stack(runs)  # (pairs, 2 sentences, layers, heads, 2 candidates)
    return coreference_accuracy(both[:, 0], both[:, 1])


def timed_attention_cost(
    seq_lens: Sequence[int], heads: int, d_k: int, repeats: int, warmup: int, seed: int, threads: int = 1
) -> list[AttentionCost]:
    """``lib.cost.attention_cost`` run on ``threads`` threads (steadier timings), restoring torch's setting.

    Args:
        seq_lens: the sequence lengths n.
        heads, d_k: the sizes of the attention (batch 1).
        repeats, warmup: timed and untimed calls per n (the median of the timed ones counts).
        seed: seed of the random inputs.
        threads: torch's intra-op threads during the measurement.

    Returns:
        One ``AttentionCost`` per n (times in ms, memory in bytes).
    """
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return attention_cost(list(seq_lens), heads=heads, d_k=d_k, repeats=repeats, warmup=warmup, seed=seed)
    finally:
        torch.set_num_threads(before)


def plot_attention_times(costs: Sequence[AttentionCost], title: str) -> Figure:
    """Milliseconds per call against n for lib's explicit attention and torch's fused kernel, with an n² line.

    Args:
        costs: the rows of :func:`timed_attention_cost`.
        title: the figure's title.

    Returns:
        A log–log figure; the n² line runs through lib's last point.
    """
    ns = [c.seq_len for c in costs]
    top = costs[-1]
    fig = plot_curves(
        {
            "lib (explicit, returns weights)": (ns, [c.lib_ms for c in costs]),
            "torch F.scaled_dot_product_attention (fused)": (ns, [c.torch_ms for c in costs]),
            "∝ n² (through lib's last point)": (ns, [top.lib_ms * (n / top.seq_len) ** 2 for n in ns]),
        },
        xlabel="sequence length n",
        ylabel="ms per call (log scale)",
        logy=True,
        title=title,
        figsize=(6.5, 3.6),
    )
    return log2_axis(fig, ns)
