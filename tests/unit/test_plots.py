"""Tests for lib.plots: figures are pure, show the data they were given, and validate input."""

from __future__ import annotations

import io
import warnings

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported; pyplot is used only to check it stays empty

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from lib import plots
from lib.plots import (
    plot_attention,
    plot_attention_grid,
    plot_curves,
    plot_mask,
    plot_positional_encoding,
)

SRC = ["我", "爱", "机器", "学习"]
TGT = ["I", "love", "machine", "learning", "<eos>"]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _weights(*shape: int, seed: int = 0) -> np.ndarray:
    return _softmax(np.random.default_rng(seed).normal(size=shape))


def _png_bytes(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _tick_texts(labels) -> list[str]:
    return [t.get_text() for t in labels]


@pytest.fixture(autouse=True)
def _no_pyplot_figures():
    """Every test checks that lib.plots never registers a pyplot figure."""
    plt.close("all")
    yield
    assert plt.get_fignums() == [], "lib.plots created a pyplot figure"


# ---------------------------------------------------------------- plot_attention


def test_attention_returns_figure_with_the_weights_as_image():
    w = _weights(5, 4)
    fig = plot_attention(w, SRC, TGT, title="alignment")
    assert isinstance(fig, Figure)
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), w)
    assert len(fig.axes) == 2  # heatmap + colorbar
    assert fig.axes[0].get_title() == "alignment"


def test_attention_tick_labels_are_the_given_labels():
    fig = plot_attention(_weights(5, 4), x_labels=SRC, y_labels=TGT)
    ax = fig.axes[0]
    assert _tick_texts(ax.get_xticklabels()) == SRC
    assert _tick_texts(ax.get_yticklabels()) == TGT
    assert ax.get_xlabel() == "key (attended to)"
    assert ax.get_ylabel() == "query"


def test_attention_axis_titles_can_be_overridden():
    fig = plot_attention(_weights(2, 3), xlabel="source", ylabel="target")
    assert fig.axes[0].get_xlabel() == "source"
    assert fig.axes[0].get_ylabel() == "target"


def test_attention_long_x_labels_are_rotated():
    labels = [f"token_number_{i}" for i in range(6)]
    fig = plot_attention(_weights(3, 6), x_labels=labels)
    assert all(t.get_rotation() == 90 for t in fig.axes[0].get_xticklabels())
    short = plot_attention(_weights(3, 3), x_labels=["a", "b", "c"])
    assert all(t.get_rotation() == 0 for t in short.axes[0].get_xticklabels())


@pytest.mark.parametrize(
    "x_labels, y_labels, axis",
    [(SRC[:3], TGT, "x_labels"), (SRC, TGT[:4], "y_labels")],
)
def test_attention_label_length_mismatch_raises(x_labels, y_labels, axis):
    with pytest.raises(ValueError, match=axis) as info:
        plot_attention(_weights(5, 4), x_labels, y_labels)
    message = str(info.value)
    # names both sizes
    assert str(len(x_labels) if axis == "x_labels" else len(y_labels)) in message
    assert ("4" if axis == "x_labels" else "5") in message


@pytest.mark.parametrize("shape", [(4,), (2, 3, 4), (2, 1, 3, 4)])
def test_attention_wrong_ndim_raises(shape):
    with pytest.raises(ValueError, match="2-D"):
        plot_attention(np.ones(shape))


def test_attention_squeezes_leading_size_one_axes():
    w = _weights(3, 4)
    fig = plot_attention(w[None, None])  # (1, 1, seq_q, seq_k)
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), w)


def test_attention_accepts_torch_tensors():
    w = torch.softmax(torch.randn(1, 1, 3, 4, requires_grad=True), dim=-1)  # needs detach
    fig = plot_attention(w, ["a", "b", "c", "d"], ["x", "y", "z"])
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), w.detach()[0, 0].numpy(), rtol=1e-6)


def test_attention_annotates_small_matrices_only_by_default():
    w = _weights(3, 4)
    fig = plot_attention(w)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == 12
    assert texts[0] == f"{w[0, 0]:.2f}"
    assert len(plot_attention(_weights(9, 9)).axes[0].texts) == 0
    assert len(plot_attention(_weights(9, 9), annotate=True).axes[0].texts) == 81
    assert len(plot_attention(w, annotate=False).axes[0].texts) == 0


def test_attention_draws_into_a_given_axes():
    fig = Figure()
    ax_left, ax_right = fig.subplots(1, 2)
    out = plot_attention(_weights(3, 3), ax=ax_right, colorbar=False, title="right")
    assert out is fig
    assert len(ax_right.images) == 1 and len(ax_left.images) == 0
    assert len(fig.axes) == 2  # no colorbar added


def test_attention_colour_limits():
    w = _weights(3, 3)
    fig = plot_attention(w)
    assert fig.axes[0].images[0].get_clim() == pytest.approx((0.0, w.max()))
    fig = plot_attention(w, vmax=1.0)
    assert fig.axes[0].images[0].get_clim() == (0.0, 1.0)


def test_attention_png_with_cjk_and_subword_labels_saves_without_warnings():
    fig = plot_attention(_weights(3, 4), SRC, ["▁Ein", "▁Hund", "."])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing-glyph UserWarning would fail here
        data = _png_bytes(fig)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"


def test_cjk_labels_get_a_fallback_font_family_and_latin_labels_do_not(monkeypatch):
    monkeypatch.setattr(plots, "find_cjk_font", lambda: "DejaVu Serif")  # stand-in CJK font
    fig = plot_attention(_weights(4, 4), SRC, ["a", "b", "c", "d"])
    x_family = fig.axes[0].get_xticklabels()[0].get_fontfamily()
    y_family = fig.axes[0].get_yticklabels()[0].get_fontfamily()
    assert "DejaVu Serif" in x_family
    assert "DejaVu Serif" not in y_family
    _png_bytes(fig)


@pytest.mark.parametrize(
    "installed, found",
    [
        ({"DejaVu Sans", "Noto Sans CJK JP", "Noto Sans CJK SC"}, "Noto Sans CJK SC"),  # the preferred one first
        ({"DejaVu Sans", "WenQuanYi Micro Hei"}, "WenQuanYi Micro Hei"),  # an unlisted font, known by its name
        ({"DejaVu Sans", "DejaVu Serif"}, None),  # no CJK font: None, and the labels show as boxes
    ],
)
def test_find_cjk_font_prefers_the_listed_fonts_then_a_cjk_name_else_none(monkeypatch, installed, found):
    monkeypatch.setattr(plots, "_installed_font_names", lambda: frozenset(installed))
    plots.find_cjk_font.cache_clear()  # its answer is cached per process: this machine's fonts, not these
    try:
        assert plots.find_cjk_font() == found
    finally:
        plots.find_cjk_font.cache_clear()


# ---------------------------------------------------------------- plot_attention_grid


def test_grid_has_rows_times_cols_heatmaps_and_one_colorbar():
    w = _weights(2, 3, 4, 5)  # (layers, heads, seq_q, seq_k)
    fig = plot_attention_grid(w, x_labels=list("abcde"), y_labels=list("wxyz"))
    assert isinstance(fig, Figure)
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 6
    assert len(fig.axes) == 6 + 1
    for k, ax in enumerate(heatmaps):  # row-major
        np.testing.assert_allclose(ax.images[0].get_array(), w[k // 3, k % 3])
    assert heatmaps[0].get_title() == "head 0" and heatmaps[2].get_title() == "head 2"
    assert heatmaps[2].get_ylabel() == "layer 0" and heatmaps[5].get_ylabel() == "layer 1"
    _png_bytes(fig)


def test_grid_shows_tick_labels_on_outer_panels_only():
    fig = plot_attention_grid(_weights(2, 2, 3, 3), x_labels=SRC[:3], y_labels=TGT[:3])
    top_left, top_right, bottom_left, bottom_right = fig.axes[:4]
    fig.canvas.draw()  # tick label visibility is resolved at draw time

    def visible(labels):
        return [t.get_text() for t in labels if t.get_visible()]

    assert visible(bottom_left.get_xticklabels()) == SRC[:3]
    assert visible(bottom_left.get_yticklabels()) == TGT[:3]
    assert visible(top_left.get_yticklabels()) == TGT[:3]
    assert visible(top_left.get_xticklabels()) == []
    assert visible(bottom_right.get_yticklabels()) == []
    assert visible(top_right.get_xticklabels()) == visible(top_right.get_yticklabels()) == []


def test_grid_accepts_3d_as_one_row_and_a_list_of_layers():
    heads = _weights(4, 3, 3)
    fig = plot_attention_grid(heads)
    assert len([ax for ax in fig.axes if ax.images]) == 4
    layers = [torch.tensor(_weights(1, 2, 3, 3, seed=i)) for i in range(3)]  # (1, heads, q, k)
    fig = plot_attention_grid(layers, row_titles=["enc 1", "enc 2", "enc 3"], col_titles=["h1", "h2"], title="encoder")
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 6
    np.testing.assert_allclose(heatmaps[5].images[0].get_array(), layers[2][0, 1].numpy(), rtol=1e-6)
    assert heatmaps[3].get_ylabel() == "enc 2"  # right column of row 1
    assert heatmaps[1].get_title() == "h2"


def test_grid_validation():
    with pytest.raises(ValueError, match="4-D"):
        plot_attention_grid(np.ones((2, 2, 2, 3, 3)))
    with pytest.raises(ValueError, match="4-D"):
        plot_attention_grid(np.ones((3, 3)))
    with pytest.raises(ValueError, match="x_labels"):
        plot_attention_grid(_weights(2, 2, 3, 4), x_labels=["a", "b", "c"])
    with pytest.raises(ValueError, match="row_titles"):
        plot_attention_grid(_weights(2, 2, 3, 4), row_titles=["only one"])
    with pytest.raises(ValueError, match="share one"):
        plot_attention_grid([_weights(2, 3, 3), _weights(2, 4, 4)])


# ---------------------------------------------------------------- plot_positional_encoding


def test_positional_encoding_heatmap_has_fixed_clim():
    pos = np.arange(50)[:, None]
    i = np.arange(0, 128, 2)[None, :]
    pe = np.zeros((50, 128))
    pe[:, 0::2] = np.sin(pos / 10000 ** (i / 128))
    pe[:, 1::2] = np.cos(pos / 10000 ** (i / 128))
    fig = plot_positional_encoding(torch.tensor(pe, dtype=torch.float32)[None])
    assert isinstance(fig, Figure)
    image = fig.axes[0].images[0]
    assert image.get_clim() == (-1.0, 1.0)
    np.testing.assert_allclose(image.get_array(), pe, atol=1e-6)
    assert len(fig.axes) == 2
    assert fig.axes[0].get_xlabel() == "dimension" and fig.axes[0].get_ylabel() == "position"
    _png_bytes(fig)


def test_positional_encoding_wrong_ndim_raises():
    with pytest.raises(ValueError, match="pe"):
        plot_positional_encoding(np.zeros(10))
    with pytest.raises(ValueError, match="pe"):
        plot_positional_encoding(np.zeros((2, 10, 8)))


# ---------------------------------------------------------------- plot_curves


def test_curves_plots_each_named_curve():
    curves = {
        "Transformer": (np.arange(5), torch.tensor([3.0, 2.0, 1.5, 1.2, 1.1])),
        "RNN + attention": ([0, 2, 4], [3.1, 2.5, 2.2]),
    }
    fig = plot_curves(curves, xlabel="training minutes", ylabel="validation loss", logy=True)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == list(curves)
    np.testing.assert_allclose(ax.lines[1].get_xydata(), [[0, 3.1], [2, 2.5], [4, 2.2]])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(curves)
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "training minutes"
    _png_bytes(fig)


def test_curves_validation():
    with pytest.raises(ValueError, match="non-empty"):
        plot_curves({})
    with pytest.raises(ValueError, match="equal length"):
        plot_curves({"a": ([1, 2, 3], [1, 2])})
    with pytest.raises(ValueError, match="pair"):
        plot_curves({"a": np.ones(3)})
    with pytest.raises(ValueError, match="positive"):
        plot_curves({"a": ([1, 2], [0.0, 1.0])}, logy=True)


# ---------------------------------------------------------------- plot_mask


def test_mask_draws_true_as_may_attend():
    causal = torch.tril(torch.ones(4, 4, dtype=torch.bool))[None, None]  # (1, 1, q, k)
    fig = plot_mask(causal, ["狗", "追了", "猫", "<eos>"], title="causal mask")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.images[0].get_array(), causal[0, 0].numpy().astype(int))
    assert _tick_texts(ax.get_xticklabels()) == ["狗", "追了", "猫", "<eos>"]
    assert _tick_texts(ax.get_yticklabels()) == ["狗", "追了", "猫", "<eos>"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("True" in s and "may attend" in s for s in legend)
    # the True cells get a different colour from the False cells
    image = ax.images[0]
    assert not np.allclose(image.to_rgba(1), image.to_rgba(0))
    _png_bytes(fig)


def test_mask_non_square_labels_keys_only():
    pad = np.array([[True, True, True, False]])  # one query row over 4 keys
    fig = plot_mask(pad, list("abcd"))
    assert _tick_texts(fig.axes[0].get_xticklabels()) == list("abcd")


def test_mask_validation():
    with pytest.raises(ValueError, match="may attend"):
        plot_mask(np.array([[0.0, -np.inf], [0.0, 0.0]]))  # additive mask, wrong convention
    with pytest.raises(ValueError, match="2-D"):
        plot_mask(np.ones(4, dtype=bool))
    with pytest.raises(ValueError, match="labels"):
        plot_mask(np.ones((3, 3), dtype=bool), ["a", "b"])


def test_no_function_creates_a_pyplot_figure():
    w = _weights(3, 3)
    plot_attention(w, list("abc"), list("xyz"))
    plot_attention_grid(w[None, None])
    plot_positional_encoding(np.zeros((4, 8)))
    plot_curves({"a": ([0, 1], [1.0, 0.5])})
    plot_mask(w > 0.3)
    assert plt.get_fignums() == []


# --------------------------------------------------------------------------------------------
# figure_slider: pre-rendered frames for the static website
# --------------------------------------------------------------------------------------------


def _curve_view(k):
    return plots.plot_curves({"k": (np.arange(5), np.arange(5) * k)}, title=f"k = {k}")


def test_figure_slider_draws_one_png_per_value_with_its_label():
    slider = plots.figure_slider(_curve_view, [1, 2, 3], name="k", index=1, fmt=lambda v: f"{v}x")
    assert slider.labels == ("1x", "2x", "3x")
    assert len(slider.frames) == 3 and all(f.startswith(b"\x89PNG") for f in slider.frames)
    assert len(set(slider.frames)) == 3  # different values give different pictures
    page = slider._repr_html_()
    assert page.count('type="range"') == 1 and 'max="2"' in page and 'value="1"' in page
    assert page.count("data:image/png;base64,") == 4  # three frames in the data, the shown one in <img>
    assert ">2x</output>" in page  # the label of the first frame shown


def test_figure_slider_is_deterministic_and_its_data_cannot_close_the_script():
    a = plots.figure_slider(_curve_view, [1, 2], name="k", fmt=lambda v: "</script>")
    b = plots.figure_slider(_curve_view, [1, 2], name="k", fmt=lambda v: "</script>")
    assert a.uid == b.uid
    data = a._repr_html_().split('class="figure-slider-data">')[1].split("</script>")[0]
    assert "</" not in data


@pytest.mark.parametrize(
    "values, kwargs, match",
    [([1], {}, "at least 2"), ([1, 2], {"index": 2}, "index"), ([1, 2], {"dpi": 0}, "dpi")],
)
def test_figure_slider_validation(values, kwargs, match):
    with pytest.raises(ValueError, match=match):
        plots.figure_slider(_curve_view, values, name="k", **kwargs)


def test_figure_slider_rejects_a_view_that_returns_no_figure():
    with pytest.raises(ValueError, match=r"view\(1\) returned int"):
        plots.figure_slider(lambda v: v, [1, 2], name="k")
