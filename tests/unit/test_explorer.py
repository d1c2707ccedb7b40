"""lib.explorer: the attention explorer's JSON holds exactly the model's maps, rounded, with the right axes; the
notebook widget runs the website's own ES module on the same JSON."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
import torch

from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.explorer import (
    EXPLORER_ESM,
    EXPLORER_FORMAT,
    ExplorerWidget,
    explorer_data,
    explorer_json,
    explorer_widget,
)
from lib.translate import translate, translation_attention

SENTENCES = ["Ein Hund läuft über die Wiese.", "Zwei Männer spielen Fußball </s> im Park."]


@pytest.fixture(scope="module")
def shipped():
    return load_run(SHIPPED_MODEL)


@pytest.fixture(scope="module")
def data(shipped):
    return explorer_data(shipped.model, shipped.tokenizer, SENTENCES)


def test_every_map_of_the_transformer_is_there_with_its_axes(shipped, data):
    c = shipped.model.config
    assert data["format"] == EXPLORER_FORMAT and data["decimals"] == 3
    assert [s["translation"] for s in data["sentences"]] == translate(shipped.model, shipped.tokenizer, SENTENCES)
    for s in data["sentences"]:
        src, tgt, tgt_in = s["src_tokens"], s["tgt_tokens"], s["tgt_input_tokens"]
        assert src[-1] == "</s>" and tgt[-1] == "</s>" and tgt_in[0] == "<s>" and tgt_in[1:] == tgt[:-1]
        shapes = {"encoder": (len(src), len(src)), "decoder": (len(tgt), len(tgt_in)), "cross": (len(tgt), len(src))}
        layers = {"encoder": c.num_encoder_layers, "decoder": c.num_decoder_layers, "cross": c.num_decoder_layers}
        assert set(s["maps"]) == set(shapes)
        for kind, maps in s["maps"].items():
            assert len(maps) == layers[kind]
            for layer in maps:
                assert len(layer) == c.num_heads
                for head in layer:
                    assert (len(head), len(head[0])) == shapes[kind]


def test_weights_are_the_models_rounded_and_rows_sum_to_one(shipped, data):
    for source, s in zip(SENTENCES, data["sentences"]):
        t = translation_attention(shipped.model, shipped.tokenizer, source)
        for kind in ("encoder", "decoder", "cross"):
            for layer, got in enumerate(s["maps"][kind]):
                want = getattr(t.weights, kind)[layer][0]  # (heads, seq_q, seq_k)
                got = torch.tensor(got, dtype=torch.float64)
                assert torch.all((got - want.double()).abs() <= 0.5e-3 + 1e-9)
                n_keys = got.shape[-1]
                assert torch.allclose(got.sum(-1), torch.ones(got.shape[:-1], dtype=torch.float64), atol=n_keys * 5e-4)
    # the decoder is causal: row t attends to input positions 0..t only
    for head in data["sentences"][0]["maps"]["decoder"][0]:
        assert all(w == 0 for t, row in enumerate(head) for w in row[t + 1 :])


def test_a_literal_end_token_in_the_source_is_text(data):
    """</s> typed in a sentence is read as text, as lib.translate reads it: only the last source token is </s>."""
    assert data["sentences"][1]["src_tokens"].count("</s>") == 1


def test_forced_translations_and_decimals(shipped):
    data = explorer_data(shipped.model, shipped.tokenizer, SENTENCES[:1], ["A dog runs."], decimals=1)
    s = data["sentences"][0]
    assert s["translation"] == "A dog runs." and s["tgt_tokens"][-1] == "</s>"
    values = [w for layer in s["maps"]["cross"] for head in layer for row in head for w in row]
    assert all(round(w, 1) == w for w in values)


def test_recurrent_model_has_only_cross_attention():
    run = load_run("models/de-en-rnn-attention")
    data = explorer_data(run.model, run.tokenizer, ["Ein Mann schläft."])
    maps = data["sentences"][0]["maps"]
    assert list(maps) == ["cross"] and len(maps["cross"]) == 1 and len(maps["cross"][0]) == 1


def test_json_is_compact_and_cannot_close_a_script_element(data):
    text = explorer_json(data)
    assert "<" not in text and "\\u003c/s>" in text  # a token </s> is written \u003c/s>
    assert '": ' not in text and '", "' not in text  # no spaces after separators
    assert json.loads(text) == data


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"sentences": "Ein Hund."}, ValueError, "single str"),
        ({"sentences": []}, ValueError, "at least one"),
        ({"sentences": ["  "]}, ValueError, r"sentences\[0\] is blank"),
        ({"sentences": [3]}, TypeError, r"sentences\[0\] must be a str"),
        ({"sentences": ["a"], "translations": ["x", "y"]}, ValueError, "one entry per sentence"),
        ({"sentences": ["a"], "decimals": 0}, ValueError, "decimals"),
        ({"sentences": ["a"], "decimals": 2.0}, TypeError, "decimals"),
        ({"sentences": ["a"], "kinds": []}, ValueError, "kinds must be some of"),
        ({"sentences": ["a"], "kinds": ["self"]}, ValueError, "kinds must be some of"),
    ],
)
def test_bad_arguments_are_named(shipped, kwargs, error, match):
    with pytest.raises(error, match=match):
        explorer_data(shipped.model, shipped.tokenizer, **kwargs)


def test_fixed_vector_model_has_nothing_to_show():
    run = load_run("models/de-en-rnn-fixed")
    with pytest.raises(ValueError, match="no attention"):
        explorer_data(run.model, run.tokenizer, ["Ein Mann schläft."])


def test_explorer_json_rejects_a_non_dict():
    with pytest.raises(TypeError, match="dict"):
        explorer_json([1])


def test_kinds_keeps_only_the_kinds_asked_for(shipped, data):
    encoder = explorer_data(shipped.model, shipped.tokenizer, SENTENCES, kinds=["encoder"])
    for full, only in zip(data["sentences"], encoder["sentences"]):
        assert list(only["maps"]) == ["encoder"] and only["maps"]["encoder"] == full["maps"]["encoder"]
        assert only["src_tokens"] == full["src_tokens"] and only["translation"] == full["translation"]
    both = explorer_data(shipped.model, shipped.tokenizer, SENTENCES[:1], kinds=("cross", "encoder"))
    assert list(both["sentences"][0]["maps"]) == ["encoder", "cross"]  # the explorer's order
    assert len(explorer_json(encoder)) < len(explorer_json(data)) / 2


def test_a_kind_the_model_does_not_compute_is_named():
    run = load_run("models/de-en-rnn-attention")
    with pytest.raises(ValueError, match=r"computes only \['cross'\], not \['encoder'\]"):
        explorer_data(run.model, run.tokenizer, ["Ein Mann schläft."], kinds=["encoder"])


# --- the notebook widget: the website's module, the website's JSON ------------------------------------------------


def _book_site():
    path = EXPLORER_ESM.parents[1] / "tools" / "sphinxext" / "book_site.py"
    spec = importlib.util.spec_from_file_location("book_site_ext", path)
    book_site = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = book_site  # its dataclasses look their module up while they are created
    spec.loader.exec_module(book_site)
    return book_site


def test_the_widget_runs_the_websites_module_byte_for_byte():
    """One ES module for both: the widget's _esm is lib/explorer.js, the file the site build inlines and copies."""
    book_site = _book_site()
    site_module = EXPLORER_ESM.parents[1] / book_site.EXPLORER_MODULE
    assert site_module.resolve() == EXPLORER_ESM.resolve()
    widget = ExplorerWidget({"format": EXPLORER_FORMAT, "decimals": 3, "sentences": [{"maps": {}}]})
    assert widget._esm.encode("utf-8") == EXPLORER_ESM.read_bytes()
    text = EXPLORER_ESM.read_text(encoding="utf-8")
    # the anywidget entry point and the site's entry points are exported by that one module
    assert "export default {\n  render({ model, el: root })" in text
    assert "export function mountAll(" in text and "export function mount(" in text
    assert 'model.get("data_json")' in text and 'model.get("view_json")' in text


def test_the_widget_carries_the_same_json_as_the_page(shipped, data):
    widget = explorer_widget(shipped.model, shipped.tokenizer, SENTENCES, view={"kind": "encoder", "head": 1})
    assert widget.data_json == explorer_json(data)  # the very text the directive embeds in a page
    assert widget.data == data
    assert json.loads(widget.view_json) == {"kind": "encoder", "head": 1}
    state = widget.get_state()
    assert state["data_json"] == explorer_json(data) and state["_esm"] == EXPLORER_ESM.read_text(encoding="utf-8")
    smaller = explorer_data(shipped.model, shipped.tokenizer, SENTENCES[:1], kinds=["encoder"])
    widget.data = smaller  # setting the data sends new JSON to the view, which redraws
    assert widget.data_json == explorer_json(smaller)


@pytest.mark.parametrize(
    ("data", "view", "error", "match"),
    [
        ([1], None, TypeError, "data must be a dict"),
        ({"format": 2, "sentences": [{}]}, None, ValueError, "format 1"),
        ({"format": 1, "sentences": []}, None, ValueError, "at least one sentence"),
        ({"format": 1, "sentences": [{}]}, "encoder", TypeError, "view must be a dict"),
    ],
)
def test_the_widget_rejects_bad_data(data, view, error, match):
    with pytest.raises(error, match=match):
        ExplorerWidget(data, view=view)


def test_the_site_leaves_the_notebooks_explorer_widget_state_out_of_the_page(shipped):
    """A page embeds the explorer with the directive; the notebook's saved anywidget state would be a second copy."""
    from sphinx.builders.html._assets import _JavaScript

    book_site = _book_site()
    widget = explorer_widget(shipped.model, shipped.tokenizer, SENTENCES[:1])
    state = {
        "version_major": 2,
        "state": {
            "slider": {"model_module": "@jupyter-widgets/controls", "state": {"value": 3}},
            "explorer": {"model_module": "anywidget", "state": widget.get_state()},
        },
    }
    body = json.dumps(state).replace("</", "<\\/")
    page = _JavaScript(None, priority=500, type=book_site.WIDGET_STATE, body=body)
    other = _JavaScript("x.js", priority=200)
    context = {"script_files": [other, page]}
    book_site._drop_anywidget_state(context)
    kept = context["script_files"]
    assert kept[0] is other and kept[1].attributes["type"] == book_site.WIDGET_STATE
    assert json.loads(kept[1].attributes["body"])["state"] == {"slider": state["state"]["slider"]}
    assert "</" not in kept[1].attributes["body"] and len(kept[1].attributes["body"]) < len(body) / 10


def test_explorer_json_refuses_a_nan_weight(data):
    # a bare NaN in the page's data made its JSON unreadable to the browser
    broken = json.loads(json.dumps(data))
    broken["sentences"][0]["maps"]["cross"][0][0][0][0] = float("nan")
    with pytest.raises(ValueError, match=r"NaN or infinite .* at \$.sentences\[0\].maps.cross\[0\]\[0\]\[0\]\[0\]"):
        explorer_json(broken)
