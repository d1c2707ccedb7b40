"""Tests for lib.diagrams: the whole-Transformer diagram is pure, names lib code that exists, and validates input."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported; pyplot is used only to check it stays empty

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from lib.diagrams import TRANSFORMER_DIAGRAM_BLOCKS, plot_transformer_diagram


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
