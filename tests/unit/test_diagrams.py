"""Tests for lib.diagrams: the Transformer diagram and the mechanism schematics.

The block diagram is pure, names lib code that exists and validates input. The schematics are drawn from numbers
computed with lib, write those numbers, keep text at 9 pt or more without overlaps, keep it as text in SVG, and
refuse bad input with a ValueError.
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET

import matplotlib
import matplotlib.text

matplotlib.use("Agg")  # before pyplot is imported; pyplot is used only to check it stays empty

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cbook import is_math_text
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle

from lib import diagrams as D
from lib.attention import causal_mask, padding_mask
from lib.diagrams import TRANSFORMER_DIAGRAM_BLOCKS, plot_transformer_diagram
from lib.efficient import sliding_window_mask
from lib.positional import apply_rotary, sinusoidal_positional_encoding


def _png_bytes(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title() for ax in fig.axes]


def _resolve(code: str):
    """The object a diagram label names: ``Transformer.output`` is an attribute of a Transformer instance."""
    import importlib

    from lib.transformer import Transformer, TransformerConfig

    head, _, attr = code.partition(".")
    if head == "torch":
        return getattr(importlib.import_module("torch"), attr)
    for module in ("lib.transformer", "lib.attention", "lib.positional"):
        obj = getattr(importlib.import_module(module), head, None)
        if obj is not None:
            break
    assert obj is not None, f"{head} is no class of lib.transformer, lib.attention or lib.positional"
    if not attr:
        return obj
    if obj is Transformer:
        obj = Transformer(TransformerConfig.tiny())
    else:
        obj = obj(d_model=8, num_heads=2, d_ff=16)
    return getattr(obj, attr)


def test_transformer_diagram_labels_every_block_with_existing_lib_code():
    before = dict(matplotlib.rcParams)
    fig = plot_transformer_diagram()
    assert isinstance(fig, Figure) and plt.get_fignums() == []
    assert dict(matplotlib.rcParams) == before, "the diagram changed rcParams"
    texts = _texts(fig)
    for key, label, code in TRANSFORMER_DIAGRAM_BLOCKS:
        assert label in texts and code in texts, key
        assert _resolve(code) is not None
    # the paper's Figure 1: 2 embeddings, 2 positional encodings, 3 attentions, 5 Add & Norm, 2 FFN, linear, softmax
    labels = [label for _, label, _ in TRANSFORMER_DIAGRAM_BLOCKS]
    assert labels.count("Add & Norm") == 5 and sum("attention" in x for x in labels) == 3
    assert sum(x == "Feed-forward" for x in labels) == 2 and len(labels) == 16
    assert "Encoder: N × EncoderLayer" in texts and "Decoder: N × DecoderLayer" in texts
    assert texts.count("N×") == 2
    assert any(t == "causal_mask" for t in texts) and any("padding_mask" in t for t in texts)
    assert any(t.startswith("memory (batch, seq_s, d_model)") for t in texts)
    # one patch per block, found by its gid
    gids = {p.get_gid() for p in fig.axes[0].patches}
    assert {key for key, _, _ in TRANSFORMER_DIAGRAM_BLOCKS} <= gids
    _png_bytes(fig)  # draws without error


def test_transformer_diagram_writes_the_given_number_of_layers():
    texts = _texts(plot_transformer_diagram(6, 3, title="six and three"))
    assert "Encoder: 6 × EncoderLayer" in texts and "Decoder: 3 × DecoderLayer" in texts
    assert "6×" in texts and "3×" in texts and "six and three" in texts


@pytest.mark.parametrize("bad", [-1, "", True, 2.5])
def test_transformer_diagram_validation(bad):
    with pytest.raises(ValueError, match="num_encoder_layers"):
        plot_transformer_diagram(bad)


def test_transformer_diagram_tool_writes_the_intro_png(tmp_path):
    """tools/transformer_diagram.py runs, and the intro's committed PNG is what it draws (up to anti-aliasing)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "diagram.png"
    done = subprocess.run(
        [sys.executable, str(root / "tools" / "transformer_diagram.py"), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    fresh = plt.imread(out)
    committed = plt.imread(root / "chapters" / "images" / "transformer_diagram.png")
    assert fresh.shape == committed.shape, "re-run tools/transformer_diagram.py and commit the PNG"
    assert np.abs(fresh - committed).mean() < 0.01, "re-run tools/transformer_diagram.py and commit the PNG"
    assert "images/transformer_diagram.png" in (root / "chapters" / "intro.md").read_text(encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, str(root / "tools" / "transformer_diagram.py"), "--out", str(tmp_path / "x.txt")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and ".png" in bad.stderr


# --------------------------------------------------------------------------------------------
# The mechanism schematics (issue 31)
# --------------------------------------------------------------------------------------------

TOKENS_ZH = ["我", "爱", "机器", "学习"]


def _qkv_numbers():
    """The self-attention chapter's example: X and W^Q, W^K, W^V from seed 0, d_model = d_k = 4."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4))
    w_q, w_k, w_v = (rng.standard_normal((4, 4)) / 2 for _ in range(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    s = q @ k.T / 2
    a = np.exp(s - s.max(1, keepdims=True))
    a /= a.sum(1, keepdims=True)
    return q, s, a, a @ v


def _masks_batch():
    tokens = ["<s>", "Zwei", "Männer", "<pad>", "<pad>"]
    pad = padding_mask(torch.tensor([5, 3]), max_len=5)[1, 0, 0]  # (5,) the second sentence's keys
    causal = causal_mask(5)
    return torch.stack([pad.expand(5, 5), causal, causal & pad]), tokens


def _sample_diagrams() -> dict[str, Figure]:
    """Every mechanism schematic, drawn from numbers computed with lib (what the chapters pass)."""
    q, s, a, z = _qkv_numbers()
    masks, tokens = _masks_batch()
    n = 12
    buckets = np.array([0, 1, 0, 2, 1, 3, 2, 0, 3, 1, 2, 3])
    patterns = np.stack([sliding_window_mask(n, 2).reshape(-1, n, n)[0].numpy(), np.ones((n, n), bool),
                         buckets[:, None] == buckets[None, :]])  # fmt: skip
    return {
        "encoder_decoder": D.plot_encoder_decoder(
            ["Zwei", "Hunde", "spielen", "."], ["Two", "dogs", "play", "."], np.linspace(-1, 1, 256)
        ),
        "bahdanau_step": D.plot_bahdanau_step(
            ["Ein", "Mann", "fährt", "Rad", "."],
            [0.05, 0.62, 0.2, 0.1, 0.03],
            [-1.2, 1.33, 0.2, -0.5, -1.9],
            step=2,
            previous_token="A",
        ),
        "qkv_step": D.plot_qkv_step(TOKENS_ZH, s[0], a[0], z[0], query_index=0, query=q[0]),
        "multihead": D.plot_multihead(2, 5, 8, 2),
        "multihead_8": D.plot_multihead(32, 40, 512, 8, title="Multi-head attention"),
        "view_scramble": D.plot_view_scramble(["Ein", "Mann", "fährt", "Rad", "."], 8, 2),
        "sinusoid_clocks": D.plot_sinusoid_clocks(sinusoidal_positional_encoding(50, 16), [0, 1, 2, 5, 10], [0, 1, 3]),
        "masks": D.plot_masks(masks, [tokens] * 3, [tokens] * 3, ["padding", "causal", "both"]),
        "residual_paths": D.plot_residual_paths(captions=["grad norm: 0.12", "grad norm: 0.85"], title="LN"),
        "kv_cache": D.plot_kv_cache(["<s>", "A", "man", "rides", "a"], 64, batch=1, heads=8),
        "bert_input": D.plot_bert_input(
            ["[CLS]", "my", "dog", "is", "cute", "[SEP]", "he", "likes", "play", "##ing", "[SEP]"],
            [101, 2026, 3899, 2003, 10140, 102, 2002, 7777, 2377, 2075, 102],
            [0] * 6 + [1] * 5,
            d_model=768,
        ),
        "attention_patterns": D.plot_attention_patterns(
            patterns, ["sliding window", "linear", "LSH"], ["window 2", "no n×n matrix", "4 buckets"]
        ),
        "rope_rotation": D.plot_rope_rotation([1.0, 0.3], [0.6, 0.8], [(1, 3), (4, 6), (2, 7)], 0.5),
        "grouped_query": D.plot_grouped_query(8, 2),
    }


@pytest.fixture(scope="module")
def diagrams() -> dict[str, Figure]:
    before = dict(matplotlib.rcParams)
    figs = _sample_diagrams()
    assert dict(matplotlib.rcParams) == before, "a diagram changed rcParams"
    assert plt.get_fignums() == [], "a diagram used pyplot"
    return figs


def _all_texts(fig: Figure):
    return [t for ax in fig.axes for t in ax.texts if t.get_text().strip() and t.get_visible()]


def test_at_least_twelve_public_schematics_each_a_figure_fitting_the_column(diagrams):
    plotters = [name for name in D.__all__ if name.startswith("plot_") and name != "plot_transformer_diagram"]
    assert len(plotters) >= 12
    for name, fig in diagrams.items():
        assert isinstance(fig, Figure), name
        width, _ = fig.get_size_inches()
        assert width <= 6.9 + 1e-9, f"{name} is {width} in wide"


def test_every_text_is_at_least_9_pt(diagrams):
    for name, fig in diagrams.items():
        small = [(t.get_text(), t.get_fontsize()) for t in _all_texts(fig) if t.get_fontsize() < 9]
        assert not small, f"{name}: {small}"


def _text_clashes(fig: Figure) -> list[str]:
    """Texts that overlap one another (by more than half a pixel) or leave the figure, drawn by the Agg renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = _all_texts(fig)
    boxes = [t.get_window_extent(renderer) for t in texts]
    frame, clashes = fig.bbox, []
    for t, box in zip(texts, boxes):
        if box.x0 < frame.x0 - 0.5 or box.x1 > frame.x1 + 0.5 or box.y0 < frame.y0 - 0.5 or box.y1 > frame.y1 + 0.5:
            clashes.append(f"{t.get_text()!r} leaves the figure")
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i], boxes[j]
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5:
                clashes.append(f"{texts[i].get_text()!r} overlaps {texts[j].get_text()!r}")
    return clashes


def _text_outside_its_box(fig: Figure) -> list[str]:
    """Texts centred in a box or cell (a FancyBboxPatch or Rectangle) that spill over its edges."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [
        p.get_window_extent(renderer)
        for ax in fig.axes
        for p in ax.patches
        if isinstance(p, (FancyBboxPatch, Rectangle))
    ]
    spills = []
    for t in _all_texts(fig):
        ext = t.get_window_extent(renderer)
        cx, cy = (ext.x0 + ext.x1) / 2, (ext.y0 + ext.y1) / 2
        for box in boxes:
            centred = abs(cx - (box.x0 + box.x1) / 2) < 2 and abs(cy - (box.y0 + box.y1) / 2) < 4
            if centred and box.width > 1 and not (ext.x0 >= box.x0 - 1 and ext.x1 <= box.x1 + 1):
                spills.append(f"{t.get_text()!r} is wider than its box")
    return spills


def test_no_two_texts_overlap_and_all_lie_inside_the_figure(diagrams):
    for name, fig in diagrams.items():
        assert _text_clashes(fig) == [], name


def test_labels_fit_their_boxes(diagrams):
    for name, fig in diagrams.items():
        assert _text_outside_its_box(fig) == [], name


def test_the_overlap_check_catches_overlaps():
    fig = Figure(figsize=(2, 1))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.text(0.5, 0.5, "first label")
    ax.text(0.55, 0.5, "second label")
    ax.text(0.99, 0.1, "outside")
    clashes = _text_clashes(fig)
    assert any("overlaps" in c for c in clashes) and any("'outside' leaves" in c for c in clashes)
    fig, ax = D._canvas(3.0, 1.0)
    D._box(ax, 1.5, 0.5, 0.4, 0.3, "a label wider than its box")
    assert _text_outside_its_box(fig) == ["'a label wider than its box' is wider than its box"]


def test_svg_keeps_text_as_text(diagrams, tmp_path):
    for name, fig in diagrams.items():
        path = tmp_path / f"{name}.svg"
        D.save_svg(fig, path)
        root = ET.parse(path).getroot()
        words = " ".join("".join(el.itertext()) for el in root.iter() if el.tag.endswith("text"))
        assert words.strip(), f"{name}: no <text> in the SVG"
        plain = [t.get_text() for t in _all_texts(fig) if "$" not in t.get_text()]
        for label in plain:
            assert label.split("\n")[0] in words, f"{name}: {label!r} is not kept as <text>"
    assert matplotlib.rcParams["svg.fonttype"] == "path", "save_svg changed rcParams"
    svg = (tmp_path / "qkv_step.svg").read_text(encoding="utf-8")
    assert "机器" in svg and "学习" in svg


SVG_NS = "{http://www.w3.org/2000/svg}"


def _svg_text_groups(svg: str) -> dict[str, ET.Element]:
    """matplotlib's ``<g id="text_N">`` groups, one per drawn Text, by id."""
    groups = ET.fromstring(svg).iter(f"{SVG_NS}g")
    return {g.get("id"): g for g in groups if (g.get("id") or "").startswith("text_")}


def test_svg_draws_maths_labels_as_outlines_that_need_no_font(diagrams):
    """A maths label kept as text is one <text> per glyph placed at DejaVu Sans's widths (with a STIX size font for
    a radical): on a system without those fonts it reads "softm ax". Each is written as outlines; plain labels stay
    one <text> each; the only font asked for is the sans-serif family (with a CJK fallback)."""
    with_maths = 0
    for name, fig in diagrams.items():
        texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
        maths = [t for t in texts if is_math_text(t.get_text())]
        effects_before = [t.get_path_effects() for t in texts]
        svg = D.to_svg(fig)
        assert [t.get_path_effects() for t in texts] == effects_before, f"{name}: save_svg left path effects"
        assert "STIX" not in svg and "DejaVu Sans Display" not in svg, name
        families = {f.split(",")[0].strip() for f in re.findall(r"font-family: ([^;\"]+)", svg)}
        assert families <= {"'DejaVu Sans'", "'DejaVu Sans Mono'"}, (name, families)
        # every <text> holds a whole plain label: no maths label was set glyph by glyph
        plain = {line for t in texts if not is_math_text(t.get_text()) for line in t.get_text().split("\n")}
        for el in ET.fromstring(svg).iter(f"{SVG_NS}text"):
            assert "".join(el.itertext()) in plain, (name, "".join(el.itertext()))
        if maths:
            with_maths += 1
            outlined = [g for g in _svg_text_groups(svg).values() if g.find(f"{SVG_NS}text") is None]
            assert len(outlined) >= len(maths), (name, len(outlined), len(maths))
    assert with_maths >= 4  # the schematics with α_ij, √d_k, softmax, W^Q ... in their labels


def test_svg_of_a_plot_with_a_maths_axis_label():
    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.plot([1, 2], [3, 4])
    ax.set_xlabel(r"$\sqrt{d_k}$")
    ax.set_ylabel("weight")
    svg = D.to_svg(fig)
    assert "STIX" not in svg and ">weight<" in svg
    assert "sqrt" not in svg and "d_k" not in svg  # the maths label is outlines, not text


def _strings(fig: Figure) -> list[str]:
    return [t.get_text() for t in _all_texts(fig)]


def test_qkv_step_writes_the_chapters_numbers(diagrams):
    q, s, a, z = _qkv_numbers()
    texts = " ".join(_strings(diagrams["qkv_step"]))
    for token in TOKENS_ZH:
        assert token in texts
    for value in [*s[0], *a[0], *z[0], *q[0]]:
        assert f"{value:.2f}" in texts
    # the bars' heights are the weights
    bars = [p for p in diagrams["qkv_step"].axes[0].patches if isinstance(p, Rectangle)]
    heights = np.array([p.get_height() for p in bars])
    assert np.allclose(heights / heights.sum(), a[0])


def test_encoder_decoder_marks_the_path_length(diagrams):
    # Zwei Hunde spielen . : Zwei passes h_1 → h_2 → h_3 → h_4 → C → s_1, five steps, before it can become Two
    assert "path Zwei → Two: 5 steps" in _strings(diagrams["encoder_decoder"])
    one = D.plot_encoder_decoder(["Hallo"], ["Hello", "!"])
    assert "path Hallo → Hello: 2 steps" in _strings(one)


def test_bahdanau_step_bars_and_numbers(diagrams):
    texts = _strings(diagrams["bahdanau_step"])
    for value in ("0.62", "0.05", "1.33", "-1.90"):
        assert value in texts
    assert "$s_{1}$" in texts and "$s_{2}$" in texts and "$c_{2}$" in texts
    heights = [p.get_height() for p in diagrams["bahdanau_step"].axes[0].patches if isinstance(p, Rectangle)]
    assert np.allclose(np.array(heights) / sum(heights), [0.05, 0.62, 0.2, 0.1, 0.03])


def test_multihead_writes_the_shapes(diagrams):
    texts = _strings(diagrams["multihead"])
    assert "= (2, 5, 8)" in texts and "= (2, 2, 5, 4)" in texts and "d_k = 8 / 2 = 4 features" in texts
    texts8 = _strings(diagrams["multihead_8"])
    assert "= (32, 8, 40, 64)" in texts8 and "head 8" in texts8 and "…" in texts8


@pytest.mark.parametrize("seq, d_model, heads", [(5, 8, 2), (4, 12, 3), (3, 8, 4)])
def test_head_slice_sources_is_what_torch_view_does(seq, d_model, heads):
    x = torch.arange(seq * d_model).reshape(seq, d_model)  # element index in memory
    d_k = d_model // heads
    for transpose, split in ((True, x.view(seq, heads, d_k).transpose(0, 1)), (False, x.view(heads, seq, d_k))):
        token, part = D.head_slice_sources(seq, d_model, heads, transpose=transpose)
        first = split[..., 0].numpy()
        assert np.array_equal(token, first // d_model) and np.array_equal(part, (first % d_model) // d_k)
    token, part = D.head_slice_sources(seq, d_model, heads)
    assert np.array_equal(token, np.tile(np.arange(seq), (heads, 1)))
    assert np.array_equal(part, np.repeat(np.arange(heads)[:, None], seq, axis=1))


def test_view_scramble_shows_a_wrong_token(diagrams):
    fig = diagrams["view_scramble"]
    gids = [p.get_gid() for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert gids.count("right") + gids.count("wrong") == 2 * 5 * 2 and gids.count("wrong") >= 1
    texts = _strings(fig)
    # head 2 of the wrong split starts at the middle of the sentence: row 0 holds fährt's second slice
    assert "fährt ·2" in texts and "Ein ·2" in texts and "Mann ·1" in texts


def test_sinusoid_clocks_hands_and_values(diagrams):
    pe = sinusoidal_positional_encoding(50, 16).numpy()
    texts = _strings(diagrams["sinusoid_clocks"])
    assert f"{pe[1, 0]:.2f}, {pe[1, 1]:.2f}" in texts and f"{pe[10, 6]:.2f}, {pe[10, 7]:.2f}" in texts
    assert "turns 57.3° / position" in texts  # ω_0 = 1 radian


def test_masks_cells_follow_the_masks(diagrams):
    masks, _ = _masks_batch()
    gids = [p.get_gid() for p in diagrams["masks"].axes[0].patches if isinstance(p, Rectangle)]
    for k in range(3):
        assert gids.count(f"panel{k}-allowed") == int(masks[k].sum())
        assert gids.count(f"panel{k}-masked") == int((~masks[k]).sum())
    texts = _strings(diagrams["masks"])
    assert texts.count("<pad>") == 2 * 2 * 3 and "may attend (True)" in texts and "masked (False)" in texts


def test_mask_colours_differ_in_lightness():
    def lightness(colour):
        r, g, b = matplotlib.colors.to_rgb(colour)
        return 0.299 * r + 0.587 * g + 0.114 * b

    assert lightness(D._MASKED) - lightness(D._ALLOWED) > 0.4


def test_kv_cache_grows_one_column_per_step(diagrams):
    gids = [p.get_gid() for p in diagrams["kv_cache"].axes[0].patches if isinstance(p, Rectangle)]
    rows, steps = 4, 5
    assert gids.count("new") == 2 * rows * steps
    assert gids.count("cached") == 2 * rows * sum(range(steps))
    texts = _strings(diagrams["kv_cache"])
    assert all(f"(1, 8, {t}, 64)" in texts for t in range(1, 6))


def test_bert_input_rows(diagrams):
    texts = _strings(diagrams["bert_input"])
    assert texts.count("A") == 6 and texts.count("B") == 5 and "10140" in texts and "[CLS]" in texts
    assert [str(p) for p in range(11)] == [t for t in texts if t.isdigit() and len(t) <= 2]
    assert [f"$x_{{{j}}}$" for j in range(11)] == [t for t in texts if t.startswith("$x_")], "each sum is named x_j"


def test_attention_patterns_count_pairs(diagrams):
    texts = _strings(diagrams["attention_patterns"])
    assert (
        "54 of 144 pairs scored" in texts and "144 of 144 pairs scored" in texts and "36 of 144 pairs scored" in texts
    )


def test_rope_dot_product_is_lib_apply_rotary_and_depends_on_the_offset(diagrams):
    texts = _strings(diagrams["rope_rotation"])
    q, k = torch.tensor([[1.0, 0.3]]), torch.tensor([[0.6, 0.8]])
    # one pair of features: θ_0 = base^0 = 1 whatever the base, so pass θ = 1 to the diagram
    fig = D.plot_rope_rotation(q[0], k[0], [(1, 3), (4, 6)], 1.0)
    dots = [re.search(r"q·k = (-?[\d.]+)", t) for t in _strings(fig)]
    dots = [float(m.group(1)) for m in dots if m]
    for (m, n), shown in zip([(1, 3), (4, 6)], dots):
        qm = apply_rotary(q, torch.tensor([float(m)]))
        kn = apply_rotary(k, torch.tensor([float(n)]))
        assert math.isclose(shown, round(float(qm[0] @ kn[0]), 2), abs_tol=1e-9)
    assert dots[0] == dots[1]
    angles = [t for t in texts if t.startswith("angle")]
    assert angles[0] == angles[1] != angles[2]  # n − m = 2, 2, 5


def test_grouped_query_lines_and_cache(diagrams):
    texts = _strings(diagrams["grouped_query"])
    assert "KV cache: 2/8" in texts and "KV cache: 1/8" in texts and texts.count("kv2") == 2
    lines = diagrams["grouped_query"].axes[0].lines
    assert len(lines) == 3 * 8  # one line per query head per row
    # grouped-query row: q1..q4 read kv1, q5..q8 read kv2 (the line ends at the kv head's centre)
    ends = sorted({round(line.get_xdata()[1], 6) for line in lines[8:16]})
    assert len(ends) == 2


def _bad_calls():
    ok = [0.25, 0.25, 0.25, 0.25]
    pe = np.zeros((10, 8))
    yield "source_tokens", lambda: D.plot_encoder_decoder([], ["a"])
    yield "at most 11", lambda: D.plot_encoder_decoder(list("abcdef"), list("abcdef"))
    yield "weights has 3", lambda: D.plot_bahdanau_step(TOKENS_ZH, [0.5, 0.25, 0.25])
    yield "scores has 2", lambda: D.plot_bahdanau_step(TOKENS_ZH, ok, [1.0, 2.0])
    yield "sum to 1", lambda: D.plot_bahdanau_step(TOKENS_ZH, [0.5, 0.5, 0.5, 0.5])
    yield "weights has 3", lambda: D.plot_qkv_step(TOKENS_ZH, [0, 0, 0, 0], [0.5, 0.25, 0.25], [1.0])
    yield "softmax of scores", lambda: D.plot_qkv_step(TOKENS_ZH, [0, 0, 0, 5], ok, [1.0])
    yield "query_index", lambda: D.plot_qkv_step(TOKENS_ZH, [0, 0, 0, 0], ok, [1.0], query_index=4)
    yield "divisible", lambda: D.plot_multihead(2, 5, 10, 3)
    yield "num_heads", lambda: D.plot_multihead(2, 5, 8, 0)
    yield "divisible", lambda: D.plot_view_scramble(["a", "b"], 10, 3)
    yield "pairs", lambda: D.plot_sinusoid_clocks(pe, [0, 1], [4])
    yield "positions", lambda: D.plot_sinusoid_clocks(pe, [0, 10], [0])
    yield "bool", lambda: D.plot_masks(np.ones((1, 3, 3)), [["a", "b", "c"]], [["a", "b", "c"]], ["x"])
    yield "masks_seq_q", lambda: D.plot_masks(np.ones((1, 3, 3), bool), [["a", "b"]], [["a", "b", "c"]], ["x"])
    yield "titles", lambda: D.plot_masks(np.ones((2, 3, 3), bool), [["a"] * 3] * 2, [["a"] * 3] * 2, ["x"])
    yield "captions", lambda: D.plot_residual_paths(captions=["only one"])
    yield "tokens", lambda: D.plot_kv_cache(list("abcdefg"), 4)
    yield "d_k", lambda: D.plot_kv_cache(["a"], 0)
    yield "segment_ids has 2", lambda: D.plot_bert_input(["[CLS]", "a", "[SEP]"], [1, 2, 3], [0, 0])
    yield "segment_ids must be 0 or 1", lambda: D.plot_bert_input(["[CLS]", "[SEP]"], [1, 2], [0, 2])
    yield "too long", lambda: D.plot_bert_input(["[CLS]", "x" * 40], [1, 2], [0, 0])
    yield "masks must be", lambda: D.plot_attention_patterns(np.ones((1, 3, 4), bool), ["x"])
    yield "notes has 2", lambda: D.plot_attention_patterns(np.ones((1, 3, 3), bool), ["x"], ["a", "b"])
    yield "shape \\(2,\\)", lambda: D.plot_rope_rotation([1.0, 0.0, 0.0], [1.0, 0.0], [(0, 1)], 0.5)
    yield "positions", lambda: D.plot_rope_rotation([1.0, 0.0], [1.0, 0.0], [(0, 1, 2)], 0.5)
    yield "divide", lambda: D.plot_grouped_query(8, 3)
    yield "at most 12", lambda: D.plot_grouped_query(16, 4)


@pytest.mark.parametrize("match, call", list(_bad_calls()), ids=[f"{i}-{m}" for i, (m, _) in enumerate(_bad_calls())])
def test_bad_input_is_a_value_error_naming_it(match, call):
    with pytest.raises(ValueError, match=match):
        call()


def _edge_diagrams():
    """The schematics at the edges of what they accept: the fewest and the most tokens, one panel, CJK labels."""
    eye = np.eye(4, dtype=bool)
    zh = ["我", "爱", "机器", "学习", "。"]
    long_src = ["Ein", "Mann", "in", "Blau", "fährt", "Rad", "."]
    yield "enc-dec 1+1", D.plot_encoder_decoder(["a"], ["b"])
    yield "enc-dec 7+4", D.plot_encoder_decoder(long_src, ["A", "man", "rides", "."], np.ones(3), title="RNN")
    yield "enc-dec zh", D.plot_encoder_decoder(zh, ["I", "love", "ML"])
    yield "bahdanau 1", D.plot_bahdanau_step(["Hund"], [1.0])
    yield "bahdanau 8", D.plot_bahdanau_step([*long_src, "x"], np.full(8, 0.125), np.zeros(8), step=12, title="t")
    yield "qkv 1", D.plot_qkv_step(["x"], [0.0], [1.0], [1.0, 2.0])
    six = ["Zwei", "Hunde", "spielen", "im", "Schnee", "."]
    yield "qkv 6", D.plot_qkv_step(six, np.zeros(6), np.full(6, 1 / 6), np.arange(8.0), query_index=5, title="t")
    yield "multihead 1 head", D.plot_multihead(1, 1, 1, 1)
    yield "multihead 16 heads", D.plot_multihead(128, 256, 1024, 16)
    yield "view zh 4 heads", D.plot_view_scramble(zh[:4], 16, 4)
    yield "view 7 tokens", D.plot_view_scramble(long_src, 6, 3, title="t")
    pe = sinusoidal_positional_encoding(200, 64)
    yield "clocks 1", D.plot_sinusoid_clocks(pe, [0], [0])
    yield "clocks 5x4", D.plot_sinusoid_clocks(pe, [0, 1, 10, 100, 199], [0, 1, 15, 31], title="t")
    yield "masks 1", D.plot_masks(eye[None], [zh[:4]], [zh[:4]], ["identity"])
    ten = [f"t{i}" for i in range(10)]
    yield "masks 3x10", D.plot_masks(np.ones((3, 10, 10), bool), [ten] * 3, [ten] * 3, ["a", "b", "c"], title="t")
    yield "residual", D.plot_residual_paths("FFN")
    yield "kv 1", D.plot_kv_cache(["<s>"], 1)
    yield "kv 5 big", D.plot_kv_cache(["<s>", "Zwei", "Hunde", "spielen", "."], 128, batch=64, heads=16, title="t")
    yield "bert 2", D.plot_bert_input(["[CLS]", "[SEP]"], [101, 102], [0, 0])
    yield "patterns 1", D.plot_attention_patterns(eye[None], ["diagonal"], ["one pair each"])
    yield "patterns 24", D.plot_attention_patterns(np.ones((2, 24, 24), bool), ["a", "b"], title="t")
    yield "rope 1", D.plot_rope_rotation([1.0, 0.0], [0.0, 1.0], [(0, 0)], 0.1)
    yield "rope parallel", D.plot_rope_rotation([1.0, 0.0], [2.0, 0.0], [(3, 3), (0, 9)], 0.3)
    yield "gqa 12", D.plot_grouped_query(12, 4, title="t")
    yield "gqa 1", D.plot_grouped_query(1, 1)
    yield "gqa no compare", D.plot_grouped_query(4, 2, compare=False)


@pytest.mark.parametrize("name, fig", list(_edge_diagrams()), ids=[name for name, _ in _edge_diagrams()])
def test_edge_cases_stay_legible(name, fig):
    assert fig.get_size_inches()[0] <= 6.9 + 1e-9
    assert all(t.get_fontsize() >= 9 for t in _all_texts(fig))
    assert _text_clashes(fig) == []
    assert _text_outside_its_box(fig) == []


def test_to_svg_is_the_svg_that_save_svg_writes(tmp_path):
    from lib.diagrams import plot_grouped_query, save_svg, to_svg

    fig = plot_grouped_query(8, 2)
    save_svg(fig, tmp_path / "gqa.svg")
    text = to_svg(fig)
    assert text.lstrip().startswith("<?xml") and "<text" in text
    assert text == (tmp_path / "gqa.svg").read_text(encoding="utf-8")
