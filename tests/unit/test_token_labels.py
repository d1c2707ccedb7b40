"""Sub-word tokens labelled as words, in every figure as in the attention explorer (lib.token_labels)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from lib import diagrams as D
from lib.plots import plot_attention, plot_beam_tree, plot_distributions
from lib.token_labels import WORD_START, token_label, token_labels

EXPLORER_JS = Path(__file__).resolve().parents[2] / "lib" / "explorer.js"

# Word starts, continuations (letters, digits, other scripts), punctuation, special tokens, a lone mark, inner marks.
TOKENS = [
    "▁Ein", "▁Hund", "e", "maschine", "2", "▁1999", "ß", "über", "我", "学习", ".", ",", "„", "'s", "-", "</s>",
    "<s>", "[CLS]", "<pad>", "▁", "▁a▁b", "a▁b", "Ⅻ", "½", "🙂", "",
]  # fmt: skip


def test_a_word_start_is_the_word_and_a_continuation_gets_a_hyphen():
    assert token_labels(["▁Eine", "▁Bohr", "maschine", ".", "</s>"]) == ["Eine", "Bohr", "-maschine", ".", "</s>"]
    assert token_label("▁") == "␣" and token_label("▁a▁b") == "a b"
    assert token_label("2") == "-2" and token_label("über") == "-über" and token_label("'s") == "'s"


def test_tokens_that_mark_no_word_start_are_left_as_they_are():
    words = ["我", "爱", "机器", "学习", "cat", "dog", "head 0", "</s>"]
    assert token_labels(words) == words
    assert token_labels(["maschine"], metaspace=False) == ["maschine"]
    assert token_labels(["maschine"], metaspace=True) == ["-maschine"]


def test_labels_never_show_the_word_start_mark():
    assert not [label for label in token_labels(TOKENS) if WORD_START in label]
    assert len(token_labels(iter(TOKENS))) == len(TOKENS)  # any iterable, one label per token


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is absent (make vendor installs it)")
def test_the_explorer_labels_every_token_as_lib_does():
    script = """
    import { readFileSync } from "node:fs";
    const { tokenLabel } = await import(process.argv[1]);
    const tokens = JSON.parse(readFileSync(0, "utf8"));
    console.log(JSON.stringify([true, false].map((m) => tokens.map((t) => tokenLabel(t, m)))));
    """
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, EXPLORER_JS.as_uri()],
        input=json.dumps(TOKENS),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    with_marks, without = json.loads(done.stdout)
    assert with_marks == [token_label(t, True) for t in TOKENS]
    assert without == [token_label(t, False) for t in TOKENS]


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")) if t.get_text().strip()]


def _ticks(fig: Figure) -> list[str]:
    fig.canvas.draw()
    return [t.get_text() for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]


SOURCE = ["▁Eine", "▁Bohr", "maschine", ".", "</s>"]
TARGET = ["▁A", "▁drill", ".", "</s>"]


def test_heat_maps_label_tokens_as_words():
    weights = torch.softmax(torch.randn(len(TARGET), len(SOURCE), generator=torch.Generator().manual_seed(0)), -1)
    ticks = _ticks(plot_attention(weights, SOURCE, TARGET))
    assert {"Eine", "Bohr", "-maschine", "A", "drill", "</s>"} <= set(ticks)
    assert not [t for t in ticks if WORD_START in t]


def test_distributions_and_the_beam_tree_label_tokens_as_words():
    probs = {"T = 1": np.array([0.5, 0.3, 0.2])}
    ticks = _ticks(plot_distributions(probs, ["▁dog", "▁cat", "s"]))
    assert {"dog", "cat", "-s"} <= set(ticks) and not [t for t in ticks if WORD_START in t]
    tree = plot_beam_tree(["<s>", "▁A", "▁The", "▁dog", "</s>"], [-1, 0, 0, 1, 3], [0.0, -0.5, -1.0, -1.2, -1.5])
    texts = _texts(tree)
    assert any(t.startswith("dog") for t in texts) and not [t for t in texts if WORD_START in t]


def test_schematics_label_tokens_as_words():
    fig = D.plot_kv_cache(["<s>", "▁A", "▁drill", "ing"], d_k=4)
    texts = _texts(fig)
    assert "drill" in " ".join(texts) and "-ing" in " ".join(texts)
    assert not [t for t in texts if WORD_START in t]


def test_the_walk_keeps_tokens_in_its_data_and_draws_them_as_words():
    from lib.book.transformer import WalkStage, walk_figure

    rng = np.random.default_rng(0)
    stages = [
        WalkStage("memory", (1, 5, 8), rng.standard_normal((5, 8)), SOURCE, None, "note", "caption"),
        WalkStage("cross", (1, 2, 3, 5), rng.dirichlet(np.ones(5), 2), ["head 0", "head 1"], SOURCE, "n", "c"),
        WalkStage("softmax", (1, 3, 8), np.array([0.5, 0.3, 0.2]), ["▁are", "▁sit", "ting"], None, "n", "c"),
    ]
    drawn = [_ticks(walk_figure(stages, i)) for i in range(len(stages))]
    assert {"Eine", "-maschine"} <= set(drawn[0]) and {"head 0", "Bohr", "</s>"} <= set(drawn[1])
    assert {"are", "sit", "-ting"} <= set(drawn[2])
    assert not [t for ticks in drawn for t in ticks if WORD_START in t]
    assert stages[0].rows == SOURCE  # the data the chapter checks keeps the tokenizer's tokens
