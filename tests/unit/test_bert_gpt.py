"""Tests of lib.bert, lib.gpt and lib.lm: masking statistics, bidirectional vs causal attention, generation, errors."""

import random

import pytest
import torch

from lib.bert import (
    IGNORE_INDEX,
    IS_NEXT,
    NOT_NEXT,
    Bert,
    BertClassifier,
    BertConfig,
    BertVocab,
    make_nsp_pairs,
    mask_tokens,
    pack_pair,
)
from lib.data import pad_batch
from lib.gpt import GPT, GPTConfig, generate, lm_loss
from lib.interfaces import AttentionMaps
from lib.lm import collate_pairs, gpt_sequences, sentence_batches, unigram_counts
from lib.training import TrainConfig, train

V = 50
VOCAB = BertVocab(V)


@pytest.fixture(autouse=True)
def one_thread():
    # tiny tensors: one thread is faster (and immune to other processes on a shared CPU)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_bert(**kw):
    torch.manual_seed(0)
    return Bert(
        BertConfig(VOCAB.size, d_model=32, num_heads=4, num_layers=2, d_ff=64, max_len=16, dropout=0.0, **kw)
    ).eval()


def tiny_gpt(**kw):
    torch.manual_seed(0)
    return GPT(GPTConfig(V, d_model=32, num_heads=4, num_layers=2, d_ff=64, max_len=12, dropout=0.0, **kw)).eval()


# --- masking ---------------------------------------------------------------------------------------------


def test_mask_tokens_statistics():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(4, V, (400, 250), generator=g)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = True  # a [CLS]-like column
    ids[:, 0] = VOCAB.cls_id
    inputs, labels = mask_tokens(ids, special, V, VOCAB.mask_id, g)
    selected = labels != IGNORE_INDEX
    n = selected.sum().item()
    assert abs(n / (~special).sum().item() - 0.15) < 0.01
    masked = (inputs == VOCAB.mask_id) & selected
    unchanged = (inputs == ids) & selected
    other = selected & ~masked & ~unchanged
    assert abs(masked.sum().item() / n - 0.8) < 0.02
    # "unchanged" also catches the 1/(V-4) random draws that hit the original token
    assert abs(unchanged.sum().item() / n - (0.1 + 0.1 / (V - 4))) < 0.02
    assert abs(other.sum().item() / n - 0.1 * (1 - 1 / (V - 4))) < 0.02
    assert not selected[special].any() and (inputs[special] == ids[special]).all()
    assert (labels[selected] == ids[selected]).all() and (inputs[~selected] == ids[~selected]).all()
    assert inputs[other].min() >= 4 and inputs[other].max() < V  # random tokens: ordinary ids only


def test_mask_tokens_is_deterministic_and_checks_arguments():
    ids = torch.randint(4, V, (4, 10))
    special = torch.zeros_like(ids, dtype=torch.bool)
    a = mask_tokens(ids, special, V, VOCAB.mask_id, torch.Generator().manual_seed(1))
    b = mask_tokens(ids, special, V, VOCAB.mask_id, torch.Generator().manual_seed(1))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    for p in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="mask_prob"):
            mask_tokens(ids, special, V, VOCAB.mask_id, mask_prob=p)
    with pytest.raises(ValueError, match="special_mask"):
        mask_tokens(ids, special.long(), V, VOCAB.mask_id)


def test_vocab_special_ids_are_appended():
    assert (VOCAB.cls_id, VOCAB.sep_id, VOCAB.mask_id, VOCAB.size) == (50, 51, 52, 53)
    assert (
        VOCAB.special_mask(torch.tensor([0, 1, 2, 3, 4, 49, 50, 51, 52])).tolist()
        == [True] * 4 + [False] * 2 + [True] * 3
    )
    with pytest.raises(ValueError):
        BertVocab(4)


def test_nsp_pairs():
    sents = [[i] for i in range(2001)]
    pairs = make_nsp_pairs(sents, random.Random(0))
    assert len(pairs) == 2000
    frac = sum(lab == IS_NEXT for _, _, lab in pairs) / len(pairs)
    assert abs(frac - 0.5) < 0.03
    for a, b, lab in pairs:
        assert (b[0] == a[0] + 1) == (lab == IS_NEXT)
        assert lab in (IS_NEXT, NOT_NEXT)
    texts = make_nsp_pairs(["a b", "c d", "e f"], random.Random(0))
    assert all(isinstance(a, str) and isinstance(b, str) for a, b, _ in texts)
    with pytest.raises(ValueError, match="at least 3"):
        make_nsp_pairs([[1], [2]], random.Random(0))


def test_pack_pair_and_collate():
    ids, seg = pack_pair([5, 6], [7, 8, 9], VOCAB, 16)
    assert ids == [VOCAB.cls_id, 5, 6, VOCAB.sep_id, 7, 8, 9, VOCAB.sep_id]
    assert seg == [0, 0, 0, 0, 1, 1, 1, 1]
    ids, seg = pack_pair(list(range(4, 20)), [7, 8], VOCAB, 8)
    assert len(ids) == 8 and ids[-1] == VOCAB.sep_id and seg.count(1) == 3
    x, s = collate_pairs([pack_pair([5], None, VOCAB, 8), pack_pair([5, 6], [7], VOCAB, 8)])
    assert x.shape == s.shape == (2, 6) and x[0, 3:].tolist() == [0, 0, 0]


# --- BERT ------------------------------------------------------------------------------------------------


def test_bert_shapes_and_tied_head():
    bert = tiny_bert()
    x, s = collate_pairs([pack_pair([5, 6, 7], [8, 9], VOCAB, 16), pack_pair([5], None, VOCAB, 16)])
    hidden, maps = bert(x, s, return_attention=True)
    assert isinstance(maps, AttentionMaps) and maps.kinds() == ["encoder"]
    assert hidden.shape == (2, 8, 32) and len(maps.encoder) == 2 and maps.encoder[0].shape == (2, 4, 8, 8)
    assert bert.mlm_logits(hidden).shape == (2, 8, VOCAB.size)
    assert bert.nsp_logits(hidden).shape == (2, 2)
    assert BertClassifier(bert, 3)(x, s).shape == (2, 3)
    assert not any(p is bert.token_embed.weight for n, p in bert.named_parameters() if n.startswith("mlm"))
    assert bert.num_parameters() == sum(p.numel() for p in bert.parameters())


def test_bert_is_bidirectional_and_ignores_padding():
    bert = tiny_bert()
    x = torch.tensor([[VOCAB.cls_id, 5, 6, 7, 8, VOCAB.sep_id, 0, 0]])
    y = x.clone()
    y[0, 4] = 9  # change a later token
    h1, h2 = bert(x), bert(y)
    assert not torch.allclose(h1[0, 1], h2[0, 1])  # an earlier position changes: bidirectional
    w = bert(x, return_attention=True)[1].encoder
    for layer_w in w:
        assert torch.all(layer_w[..., 6:] == 0)  # padding keys get weight exactly 0
        torch.testing.assert_close(layer_w.sum(-1), torch.ones(1, 4, 8))
    z = x.clone()
    z[0, 6:] = 0
    longer = torch.cat([x, torch.zeros(1, 3, dtype=torch.long)], 1)  # more padding changes nothing real
    torch.testing.assert_close(bert(longer)[0, :6], h1[0, :6])


def test_bert_fused_and_explicit_attention_agree():
    bert = tiny_bert()
    x = torch.tensor([[VOCAB.cls_id, 5, 6, 7, VOCAB.sep_id, 0]])
    torch.testing.assert_close(bert(x), bert(x, return_attention=True)[0])


def test_bert_errors():
    with pytest.raises(ValueError, match="divisible"):
        Bert(BertConfig(VOCAB.size, d_model=30, num_heads=4))
    bert = tiny_bert()
    with pytest.raises(ValueError, match="max_len"):
        bert(torch.ones(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size"):
        bert(torch.full((1, 3), VOCAB.size))
    with pytest.raises(ValueError, match="segment_ids"):
        bert(torch.ones(1, 3, dtype=torch.long), torch.full((1, 3), 2))
    with pytest.raises(ValueError, match="num_classes"):
        BertClassifier(bert, 1)
    with pytest.raises(ValueError, match="dropout"):
        BertConfig(10, dropout=1.0)


# --- GPT -------------------------------------------------------------------------------------------------


def test_gpt_shapes_loss_and_causality():
    gpt = tiny_gpt()
    x = torch.randint(4, V, (3, 10))
    logits, maps = gpt(x, return_attention=True)
    assert maps.kinds() == ["decoder"]
    w = maps.decoder
    assert logits.shape == (3, 10, V) and w[0].shape == (3, 4, 10, 10)
    assert torch.all(w[0].triu(1) == 0)
    y = x.clone()
    y[:, 6:] = torch.randint(4, V, (3, 4))
    torch.testing.assert_close(gpt(y)[:, :6], logits[:, :6])  # the future never changes the past
    assert not torch.allclose(gpt(y)[:, 6:], logits[:, 6:])
    manual = -torch.log_softmax(logits[:, :-1], -1).gather(-1, x[:, 1:, None]).mean()
    torch.testing.assert_close(lm_loss(logits, x), manual)
    assert gpt.num_parameters() == sum(p.numel() for p in gpt.parameters())  # tied: W_e once


def test_gpt_output_is_tied_and_padding_ignored():
    gpt = tiny_gpt(norm_first=False)
    x = torch.tensor([[1, 5, 6, 2, 0, 0]])
    h = gpt.token_embed(x) + gpt.position_embed.weight[:6]
    for layer in gpt.layers:
        h, _ = layer(h, torch.ones(6, 6, dtype=torch.bool).tril())
    torch.testing.assert_close(gpt(x), h @ gpt.token_embed.weight.T)  # P(u) = softmax(h_n W_eᵀ)
    logits = gpt(x)
    torch.testing.assert_close(lm_loss(logits, x), lm_loss(logits[:, :4], x[:, :4]))


def test_gpt_block_equals_torch_encoder_layer_with_causal_mask():
    from test_transformer import _copy_ffn_norms, _copy_mha

    for norm_first in (False, True):
        gpt = tiny_gpt(norm_first=norm_first)
        layer = gpt.layers[0]
        ref = torch.nn.TransformerEncoderLayer(
            32, 4, 64, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm_first
        ).eval()
        with torch.no_grad():
            _copy_mha(layer.self_attn, ref.self_attn)
            _copy_ffn_norms(layer, ref, 2)
        h = torch.randn(2, 7, 32)
        causal = torch.ones(7, 7, dtype=torch.bool).tril()
        torch.testing.assert_close(layer(h, causal)[0], ref(h, src_mask=~causal, is_causal=True))


def _greedy_by_hand(gpt, prompt, n):
    ids = prompt.clone()
    for _ in range(n):
        ids = torch.cat([ids, gpt(ids[None])[0, -1].argmax()[None]])
    return ids


def test_generate_greedy_and_top1():
    gpt = tiny_gpt()
    prompt = torch.tensor([1, 5, 6])
    expected = _greedy_by_hand(gpt, prompt, 6)
    assert torch.equal(generate(gpt, prompt, 6, temperature=0), expected)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(generate(gpt, prompt, 6, temperature=1.3, top_k=1, generator=g), expected)
    a = generate(gpt, prompt, 6, temperature=1.0, generator=torch.Generator().manual_seed(3))
    b = generate(gpt, prompt, 6, temperature=1.0, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.shape == (9,)
    long = generate(gpt, prompt[None].repeat(2, 1), 15, temperature=0)  # beyond max_len: sliding window
    assert long.shape == (2, 18)


def test_generate_top_k_only_samples_the_k_best():
    gpt = tiny_gpt()
    prompt = torch.tensor([[1, 5]])
    top3 = gpt(prompt)[0, -1].topk(3).indices.tolist()
    g = torch.Generator().manual_seed(0)
    firsts = {generate(gpt, prompt, 1, temperature=5.0, top_k=3, generator=g)[0, -1].item() for _ in range(60)}
    assert firsts <= set(top3) and len(firsts) > 1


def test_generate_stops_at_eos():
    gpt = tiny_gpt()
    prompt = torch.tensor([1, 5])
    first = generate(gpt, prompt, 1, temperature=0)[-1].item()
    out = generate(gpt, prompt, 5, temperature=0, eos_id=first)
    assert out.tolist() == [1, 5, first]


def test_gpt_errors():
    with pytest.raises(ValueError, match="divisible"):
        GPT(GPTConfig(V, d_model=30, num_heads=4))
    gpt = tiny_gpt()
    with pytest.raises(ValueError, match="longer than the model's max_len"):
        generate(gpt, torch.ones(13, dtype=torch.long), 1)
    with pytest.raises(ValueError, match="temperature"):
        generate(gpt, torch.ones(3, dtype=torch.long), 1, temperature=-0.1)
    with pytest.raises(ValueError, match="top_k"):
        generate(gpt, torch.ones(3, dtype=torch.long), 1, top_k=0)
    with pytest.raises(ValueError, match="max_len"):
        gpt(torch.ones(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match="do not match"):
        lm_loss(torch.zeros(1, 3, V), torch.zeros(1, 4, dtype=torch.long))


# --- training helper ---------------------------------------------------------------------------------------


def test_the_one_training_loop_trains_gpt_deterministically():
    seqs = gpt_sequences([[4 + (i % 5), 5 + (i % 5), 6 + (i % 5)] for i in range(64)], 12)

    def run():
        gpt = tiny_gpt()

        def loss_fn(m, b):
            x = pad_batch(b)
            return lm_loss(m(x), x)

        val = pad_batch(seqs)
        config = TrainConfig(max_steps=20, warmup=5, eval_every_steps=10, peak_lr=3e-3)
        return train(
            gpt,
            sentence_batches(seqs, 16),
            config,
            loss_fn=loss_fn,
            evaluate=lambda m: lm_loss(m(val), val).item(),
            progress=False,
            log=lambda _: None,
        )

    h1, h2 = run(), run()
    assert [e["val_loss"] for e in h1.history] == [e["val_loss"] for e in h2.history]
    assert h1.steps == 20 and [e["step"] for e in h1.history] == [10, 20]
    assert h1.history[-1]["val_loss"] < h1.history[0]["val_loss"] < 4.0  # ln 50 = 3.9 at the start
    assert h1.curve("val_loss")[0] == [10, 20]
    assert unigram_counts([[4, 4, 5]], 6).tolist() == [0, 0, 0, 0, 2, 1]


def test_sentence_batches_reshuffle_every_epoch_and_drop_the_last_incomplete_batch():
    batches = sentence_batches(list(range(10)), 3, seed=1)
    e0, e1 = batches(0), batches(1)
    assert len(e0) == 3 and all(len(b) == 3 for b in e0) and e0 != e1 and e0 == batches(0)
    assert len({i for b in e0 for i in b}) == 9
    with pytest.raises(ValueError, match="batch_size"):
        sentence_batches([1, 2], 3)
    with pytest.raises(ValueError, match="batch_size"):
        sentence_batches([1, 2], 0)


def test_gpt2_largest_model_has_the_released_checkpoints_parameter_count():
    # GPT-2's largest model (Radford et al. 2019, Table 2: 48 layers, d_model 1600) was released as "1558M":
    # 1,557,611,200 parameters with the output layer tied to W_e. Built on `meta`, it takes no memory.
    with torch.device("meta"):
        gpt2 = GPT(GPTConfig(50257, d_model=1600, num_heads=25, num_layers=48, d_ff=6400, max_len=1024))
    assert gpt2.num_parameters() == 1_557_611_200
