"""Tests for lib.plots.plot_distributions (the chapter "Preliminaries"): bars show the data, bad input raises."""

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

from lib.plots import plot_distributions

Z = np.array([0.5, 0.8, 0.6])  # seed 001's scores


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


@pytest.fixture(autouse=True)
def _no_pyplot_figures():
    plt.close("all")
    yield
    assert plt.get_fignums() == [], "lib.plots created a pyplot figure"


def test_returns_a_figure_with_one_bar_per_value():
    dists = {f"T = {t}": _softmax(Z / t) for t in (0.25, 1, 4)}
    fig = plot_distributions(dists, labels=["z1", "z2", "z3"], title="softmax")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(ax.patches) == 9 and len(ax.containers) == 3
    for container, probs in zip(ax.containers, dists.values()):
        np.testing.assert_allclose([bar.get_height() for bar in container], probs)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["z1", "z2", "z3"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(dists)
    assert ax.get_title() == "softmax" and ax.get_ylim() == (0.0, 1.0)


def test_bars_of_one_outcome_stand_side_by_side_within_the_group():
    fig = plot_distributions({"a": [0.2, 0.8], "b": [0.5, 0.5]})
    a, b = fig.axes[0].containers
    centres = [[bar.get_x() + bar.get_width() / 2 for bar in c] for c in (a, b)]
    assert centres[0][0] < centres[1][0] < 0.5 < centres[0][1] < centres[1][1] < 1.5


def test_accepts_tensors_and_lists_and_a_single_distribution():
    fig = plot_distributions({"torch": torch.softmax(torch.tensor([1.0, 2.0, 3.0, 4.0]), dim=0)})
    assert len(fig.axes[0].patches) == 4 and fig.axes[0].get_legend() is None
    fig = plot_distributions({"list": [0.1, 0.9]})
    assert len(fig.axes[0].patches) == 2


def test_annotates_small_charts_only_by_default():
    small = plot_distributions({"p": _softmax(Z)})
    assert [t.get_text() for t in small.axes[0].texts] == ["0.29", "0.39", "0.32"]
    big = plot_distributions({f"d{i}": np.full(8, 1 / 8) for i in range(3)})
    assert len(big.axes[0].texts) == 0
    forced = plot_distributions({f"d{i}": np.full(4, 1 / 4) for i in range(2)}, annotate=True)
    assert len(forced.axes[0].texts) == 8
    # 24 bars in a 6.6-in figure are too narrow for a 9-pt value: none is written, even when asked for
    too_narrow = plot_distributions({f"d{i}": np.full(8, 1 / 8) for i in range(3)}, annotate=True)
    assert len(too_narrow.axes[0].texts) == 0


def test_values_above_one_get_an_automatic_y_limit():
    fig = plot_distributions({"counts": [3.0, 5.0]}, ylabel="count")
    assert fig.axes[0].get_ylim()[1] == pytest.approx(5.5)
    assert fig.axes[0].get_ylabel() == "count"


def test_png_with_cjk_labels_saves_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_distributions({"p": [0.1, 0.2, 0.3, 0.4]}, labels=["我", "爱", "机器", "学习"])
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    assert buf.getvalue().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "dists, words",
    [
        ({}, "non-empty dict"),
        ([0.5, 0.5], "non-empty dict"),
        ({"2-D": np.full((2, 2), 0.25)}, "1-D"),
        ({"empty": []}, "1-D"),
        ({"a": [0.5, 0.5], "b": [0.2, 0.3, 0.5]}, "same outcomes"),
        ({"nan": [np.nan, np.nan, np.nan]}, "non-negative finite"),
        ({"negative": [-0.1, 1.1]}, "non-negative finite"),
        ({"text": "abc"}, "numeric"),
    ],
)
def test_bad_distributions_raise(dists, words):
    with pytest.raises(ValueError, match=words):
        plot_distributions(dists)


def test_label_length_mismatch_raises():
    with pytest.raises(ValueError, match="labels has 2 labels but the outcome axis"):
        plot_distributions({"p": [0.2, 0.3, 0.5]}, labels=["a", "b"])
    with pytest.raises(ValueError, match="not one string"):
        plot_distributions({"p": [0.2, 0.3, 0.5]}, labels="abc")
