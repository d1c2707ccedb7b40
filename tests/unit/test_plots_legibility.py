"""Issue 31: the figures of lib.plots and lib.diagrams are legible where the reader sees them.

Every text is at least 9 pt at the page's 688-px column (a notebook's PNG at 100 dpi is scaled down to fit it when
wider), measured by lib.plots.smallest_text_pt; and a kernel-free slider's frames carry a description of their
figure as alt text, not just the slider's value.
"""

import json
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from lib import plots
from lib.book.transformer import WalkStage, walk_figure
from lib.diagrams import plot_transformer_diagram

SRC = ["▁Ein", "▁Mann", "▁trinkt", "▁aus", "▁einem", "▁Wein", "glas", "▁während", "▁er", ".", "</s>"]
TGT = ["▁A", "▁man", "▁is", "▁drinking", "▁from", "▁a", "▁wine", "glass", "▁while", "▁reading", ".", "</s>"]


def _beam_tree():
    """A beam tree of the decoding chapter's shape: 15 steps, K = 4, four finished hypotheses, long sub-words."""
    rng = np.random.default_rng(0)
    labels, parents, scores, depth = ["<s>"], [-1], [0.0], [0]
    beam = [0]
    for t in range(1, 15):
        nxt = []
        for p in beam:
            for _ in range(2 if len(nxt) < 4 else 0):
                labels.append("</s>" if t in (12, 13, 14) and len(nxt) == 0 else f"▁word{rng.integers(100)}")
                parents.append(p)
                scores.append(scores[p] - float(rng.random()))
                depth.append(t)
                if labels[-1] != "</s>":
                    nxt.append(len(labels) - 1)
        beam = nxt[:4] or beam[:1]
    path = [len(labels) - 1]
    while parents[path[-1]] != -1:
        path.append(parents[path[-1]])
    return labels, parents, scores, path[::-1]


FIGURES = {
    "transformer diagram": lambda: plot_transformer_diagram(),
    "transformer diagram, encoder": lambda: plot_transformer_diagram(part="encoder"),
    "transformer diagram, decoder": lambda: plot_transformer_diagram(part="decoder"),
    "beam tree": lambda: plots.plot_beam_tree(*_beam_tree(), title="Beam search, K = 4, α = 0.6"),
    "grid 3 layers × 4 heads": lambda: plots.plot_attention_grid(
        np.random.default_rng(0).dirichlet(np.ones(11), size=(3, 4, 12)), SRC, TGT, panel_size=2.4, title="Cross"
    ),
    "grid 1 × 8 heads": lambda: plots.plot_attention_grid(
        np.random.default_rng(1).random((8, 10, 10)), col_titles=[f"m = 1/{2**i}" for i in range(8)], row_titles=[""]
    ),
    # The decoding chapter's filters (3 × 12 bars, was 10 in wide) and the preliminaries' temperatures (annotated).
    "distributions 3 × 12": lambda: plots.plot_distributions(
        {
            n: np.random.default_rng(i).dirichlet(np.ones(12))
            for i, n in enumerate(["softmax (T = 1)", "top-k", "top-p"])
        },
        TGT,
        xlabel="next token",
        title="P(next token | 'A man in a blue shirt is standing') and what the filters keep",
    ),
    "distributions 4 × 3, annotated": lambda: plots.plot_distributions(
        {f"T = {t}": np.random.default_rng(0).dirichlet(np.ones(3)) for t in (0.1, 0.25, 1, 4)},
        ["z = 0.5", "z = 0.8", "z = 0.6"],
    ),
    "mask 16 × 16 with labels": lambda: plots.plot_mask(np.tri(16, dtype=bool), TGT + SRC[:4], title="GPT: causal"),
    "mask 32 × 32": lambda: plots.plot_mask(np.random.default_rng(0).random((32, 32)) < 0.3, title="LSH attention"),
    "attention 6 × 12 annotated, 9 in asked": lambda: plots.plot_attention(
        np.random.default_rng(0).uniform(0.3, 0.7, (6, 12)), annotate=True, figsize=(9, 4.2), title="x" * 90
    ),
    "attention 24 × 4 annotated": lambda: plots.plot_attention(
        np.random.default_rng(0).dirichlet(np.ones(4), size=24),
        ["previous token", "same token", "next token", "final </s>"],
        [f"layer {i // 8}, head {i % 8}" for i in range(24)],
        annotate=True,
        figsize=(6.5, 5.5),
    ),
    "attention 22 × 22 sub-words": lambda: plots.plot_attention(
        np.random.default_rng(0).dirichlet(np.ones(22), size=22), (SRC * 2)[:22], (TGT * 2)[:22]
    ),
    "attention 40 × 40 sub-words": lambda: plots.plot_attention(
        np.random.default_rng(0).dirichlet(np.ones(40), size=40), (SRC * 4)[:40], (TGT * 4)[:40], annotate=True
    ),
    "curves with long names": lambda: plots.plot_curves(
        {
            "the live model: warm-up 400, peak 0.001": ([1, 2, 3], [1, 2, 3]),
            "the shipped model (40 min): warm-up 800, peak 0.002": ([1, 2, 3], [2, 3, 1]),
            "the paper: d_model 512, warm-up 4000": ([1, 2, 3], [3, 1, 2]),
        }
    ),
}


@pytest.mark.parametrize("name", list(FIGURES))
def test_smallest_text_is_at_least_9pt_at_the_page_width(name):
    assert plots.smallest_text_pt(FIGURES[name]()) >= 9.0


def test_the_two_halves_of_the_diagram_are_shown_at_full_size_on_a_phone():
    for part in ("encoder", "decoder"):
        assert plots.smallest_text_pt(plot_transformer_diagram(part=part), column_px=390) >= 9.0


def _walk() -> list[WalkStage]:
    """Stages of the walk's three kinds, with the chapter's sizes: 10 tokens × 128 features, 4 heads over 10 tokens,
    the 5 most likely next tokens."""
    rng = np.random.default_rng(0)
    vectors = WalkStage(
        "encoder layer 2",
        (1, 10, 128),
        rng.standard_normal((10, 128)),
        SRC[:10],
        None,
        "row ▁Ein: [+0.07, +1.23, +1.68, +0.87, …]; length of a row 22.2 to 52.7",
        "",
    )
    weights = WalkStage(
        "decoder layer 2: cross-attention over the memory",
        (1, 4, 3, 10),
        rng.dirichlet(np.ones(10), size=4),
        [f"head {h}" for h in range(1, 5)],
        SRC[:10],
        "query ▁man: each head's weights over the 10 source tokens; largest on ▁Mann, ▁Mann, ▁trinkt",
        "",
    )
    bars = WalkStage(
        "output softmax after ▁man",
        (1, 3, 8000),
        np.array([0.44, 0.24, 0.21, 0.01, 0.0]),
        TGT[2:7],
        None,
        "the next token after <s> ▁A ▁man: ▁is 0.44, …",
        "",
    )
    return [vectors, weights, bars]  # fmt: skip


def test_the_transformer_chapters_norm_axes_figure_is_9pt_at_the_page_width():
    import torch

    from lib.book.transformer import norm_axes_figure

    is_pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 2 + [True] * 3])
    fig = norm_axes_figure(torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(0)), is_pad)
    assert plots.smallest_text_pt(fig) >= 9.0


def test_the_decoding_chapters_nucleus_figure_is_9pt_at_the_page_width():
    from lib.book.decoding import nucleus_figure

    caption = "A group of people are standing in front of a building."  # the chapter's: its title quotes it
    tokens = ["<s>", *(f"▁{w}" for w in caption[:-1].split()), "."]
    kept = {"top-p, p = 0.9": list(range(1, len(tokens) + 1)), "top-k, k = 50": [50] * len(tokens)}
    fig = nucleus_figure(tokens, kept, title=f"How many tokens each filter keeps: {caption!r}")
    assert plots.smallest_text_pt(fig) >= 9.0


@pytest.mark.parametrize("index", range(3))
def test_the_walks_frames_are_9pt_at_the_page_width(index):
    assert plots.smallest_text_pt(walk_figure(_walk(), index)) >= 9.0  # at the slider's 100 dpi


def test_smallest_text_pt_counts_a_lower_dpi():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 2))
    fig.text(0.5, 0.5, "nine", fontsize=9)
    assert plots.smallest_text_pt(fig) == pytest.approx(9.0)
    assert plots.smallest_text_pt(fig, dpi=80) == pytest.approx(7.2)  # 10 px where 100 dpi draws 12.5


def test_smallest_text_pt_scales_a_wide_figure_to_the_column():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13.76, 2))  # 1,376 px at 100 dpi + pads: about twice the column
    fig.text(0.01, 0.5, "small", fontsize=8)
    fig.text(0.99, 0.5, "wide", fontsize=12, ha="right")
    sizes, width = plots.drawn_text_sizes(fig)
    assert sorted(s for s, _ in sizes) == [8.0, 12.0]
    assert plots.smallest_text_pt(fig) == pytest.approx(8 * 688 / width)
    assert plots.smallest_text_pt(fig) < 4.5


def test_the_beam_tree_is_pruned_to_the_finished_hypotheses():
    labels, parents, scores, path = _beam_tree()
    fig = plots.plot_beam_tree(labels, parents, scores, path)
    drawn = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(re.fullmatch(r"\+\d+", t) for t in drawn), "no '+N' for the dropped branches"
    assert len([t for t in drawn if not t.startswith("+")]) < len(labels)
    assert len(fig.axes) >= 2, "a 15-step tree should wrap onto more than one row"
    whole = plots.plot_beam_tree(labels, parents, scores, path, prune=False)
    assert not any(t.get_text().startswith("+") for ax in whole.axes for t in ax.texts)


def test_curves_keep_their_legend_off_the_axes():
    fig = FIGURES["curves with long names"]()
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1, "the legend overlaps the axes"


def test_slider_frames_are_described_by_their_figure():
    def view(t):
        return plots.plot_distributions(
            {f"T = {t}": np.array([0.6, 0.4]), "top-p": np.array([1.0, 0.0])},
            ["▁people", "▁men"],
            xlabel="next token",
            title=f"P(next token) at T = {t}",
        )

    slider = plots.figure_slider(view, [0.5, 2.0], name="T", alt="Next-token distribution at temperature {value}")
    alts = slider.frame_alts()
    assert alts[0].startswith("Next-token distribution at temperature 0.5. Bar chart 'P(next token) at T = 0.5'")
    for alt, value in zip(alts, ["0.5", "2.0"]):
        assert "next token (people, men)" in alt and "probability" in alt and f"legend: T = {value}" in alt
        assert f"Slider T set to {value}" in alt
    data = json.loads(re.search(r'figure-slider-data">(.*?)</script>', slider._repr_html_()).group(1))
    assert data["alts"] == alts
    bare = plots.figure_slider(view, [0.5, 2.0], name="T").frame_alts()
    assert bare[1].startswith("Bar chart 'P(next token) at T = 2.0'") and len(bare[1].split()) >= 8


def test_values_too_small_for_9pt_are_dropped_not_shrunk():
    """Annotations are written at 9 pt or more where they fit, and left out (even when asked for) where not."""
    kept = FIGURES["attention 24 × 4 annotated"]()
    assert len(kept.axes[0].texts) == 96 and min(t.get_fontsize() for t in kept.axes[0].texts) >= 9
    assert len(FIGURES["attention 40 × 40 sub-words"]().axes[0].texts) == 0
    bars = FIGURES["distributions 4 × 3, annotated"]().axes[0]
    assert len(bars.texts) == 12 and min(t.get_fontsize() for t in bars.texts) >= 9
    narrow = plots.plot_distributions({"a": np.full(40, 0.025), "b": np.full(40, 0.025)}, annotate=True)
    assert len(narrow.axes[0].texts) == 0


def test_long_token_axes_label_every_kth_token_at_9pt():
    fig = FIGURES["attention 40 × 40 sub-words"]()
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert 1 < len(ticks) < 40 and ticks[0] == "A"  # TGT[0], "▁A", labelled as the word


def test_plot_curves_fits_the_column_whatever_figsize_and_title():
    """A wider ``figsize`` is narrowed to 6.6 in, and a long title wraps inside the figure: the tight PNG at 100 dpi
    is at most the 688-px column (a title wider than the axes used to widen it to 781 px)."""
    import io
    import struct

    x = np.arange(64)
    for figsize, title in [((7.5, 3), "One layer, d = 64, one thread, this machine"), (None, "a long title " * 8)]:
        fig = plots.plot_curves(
            {"with the KV cache": (x, x + 1.0), "without (the whole prefix again)": (x, 2.0 * x + 1)},
            figsize=figsize,
            title=title,
        )
        assert fig.get_figwidth() <= 6.6
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=plots.NOTEBOOK_DPI, bbox_inches="tight")
        width = struct.unpack(">I", buf.getvalue()[16:20])[0]
        assert width <= plots.PAGE_COLUMN_PX, (figsize, title, width)
