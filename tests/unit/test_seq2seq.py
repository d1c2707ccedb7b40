"""lib.seq2seq: the fixed-vector and attention GRU encoder–decoders and their scores."""

import math

import numpy as np
import pytest
import torch

from lib.checkpoint import load_run, save_run
from lib.decode import beam_search, greedy_decode
from lib.interfaces import AttentionMaps, EncoderDecoder
from lib.metrics import bleu_by_length
from lib.seq2seq import (
    SCORES,
    AdditiveScore,
    DotScore,
    GeneralScore,
    ScaledDotScore,
    Seq2Seq,
    Seq2SeqConfig,
    attend,
    make_score,
)
from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID

VOCAB = 30
ALL = (None, *SCORES)


def small(attention="additive", **kw):
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(VOCAB, d_embed=12, d_hidden=16, attention=attention, dropout=0.0, **kw))
    return model.eval()


def padded_batch():
    # two sentences of 5 and 3 tokens (ending in EOS), right-padded; targets of 4 and 2 tokens
    src = torch.tensor([[5, 6, 7, 8, EOS_ID], [9, 10, EOS_ID, PAD_ID, PAD_ID]])
    tgt = torch.tensor([[BOS_ID, 11, 12, 13], [BOS_ID, 14, PAD_ID, PAD_ID]])
    return src, tgt


@pytest.mark.parametrize("attention", ALL)
def test_shapes(attention):
    model = small(attention)
    src, tgt = padded_batch()
    logits, maps = model(src, tgt, return_attention=True)
    assert logits.shape == (2, 4, VOCAB) and isinstance(maps, AttentionMaps)
    assert maps.encoder == [] and maps.decoder == []
    if attention is None:
        assert maps.cross == [] and maps.kinds() == []
    else:
        assert len(maps.cross) == 1 and maps.cross[0].shape == (2, 1, 4, 5)  # one "layer", one head
    memory, mask = model.encode(src)
    assert memory.shape == (2, 5, 16) and mask.shape == (2, 5)
    assert isinstance(model, EncoderDecoder)


@pytest.mark.parametrize("attention", SCORES)
def test_weights_sum_to_one_and_padding_gets_zero(attention):
    model = small(attention)
    src, tgt = padded_batch()
    _, maps = model(src, tgt, return_attention=True)
    weights = maps.cross[0][:, 0]
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4))
    assert torch.all(weights[1, :, 3:] == 0)  # the padded source positions of sentence 2
    assert torch.all(weights[1, :, :3] > 0)


@pytest.mark.parametrize("attention", ALL)
def test_padding_does_not_change_a_sentence(attention):
    # the GRU runs over packed sequences: a sentence gives the same output alone and padded in a batch
    model = small(attention)
    src, tgt = padded_batch()
    both = model(src, tgt)
    alone = model(src[1:, :3], tgt[1:, :2])
    torch.testing.assert_close(both[1, :2], alone[0], atol=1e-6, rtol=1e-5)
    memory, _ = model.encode(src)
    assert torch.all(memory[1, 3:] == 0)


def test_summary_is_the_grus_final_state():
    model = small(None)
    src, _ = padded_batch()
    memory, mask = model.encode(src)
    _, last = model.encoder(model.src_embed(src), mask.sum(-1))
    torch.testing.assert_close(Seq2Seq.summary(memory, mask), last)


def test_additive_score_against_a_hand_computation():
    # e_j = vᵀ tanh(W_q s + W_k h_j + b), d_query = d_key = 2, d_attention = 2, one query, three keys
    score = AdditiveScore(2, 2, 2)
    with torch.no_grad():
        score.w_q.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
        score.w_k.weight.copy_(torch.tensor([[0.5, -1.0], [1.0, 1.0]]))
        score.w_k.bias.copy_(torch.tensor([0.1, -0.2]))
        score.v.weight.copy_(torch.tensor([[1.0, -0.5]]))
    s = np.array([0.3, -0.4])
    h = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    by_hand = []
    for hj in h:
        a = np.array([1.0 * s[0], 2.0 * s[1]]) + np.array([0.5 * hj[0] - hj[1] + 0.1, hj[0] + hj[1] - 0.2])
        by_hand.append(1.0 * math.tanh(a[0]) - 0.5 * math.tanh(a[1]))
    keys = torch.tensor(h, dtype=torch.float32)[None]
    got = score(torch.tensor(s, dtype=torch.float32)[None], score.prepare(keys))
    np.testing.assert_allclose(got[0].detach().numpy(), by_hand, rtol=1e-6)
    context, weights = attend(got, keys)
    expected = np.exp(by_hand) / np.exp(by_hand).sum()
    np.testing.assert_allclose(weights[0].detach().numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(context[0].detach().numpy(), expected @ h, rtol=1e-6)


def test_dot_scaled_and_general_scores():
    torch.manual_seed(1)
    q, k = torch.randn(2, 4), torch.randn(2, 3, 4)
    dot = torch.stack([k[b] @ q[b] for b in range(2)])
    torch.testing.assert_close(DotScore()(q, k), dot)
    torch.testing.assert_close(ScaledDotScore()(q, k), dot / 2.0)  # √4 = 2
    general = GeneralScore(4, 4)
    w = general.w.weight  # (d_query, d_key)
    torch.testing.assert_close(general(q, general.prepare(k)), torch.stack([k[b] @ w.T @ q[b] for b in range(2)]))


def test_attend_masks_and_checks():
    scores = torch.tensor([[1.0, 2.0, 3.0]])
    values = torch.eye(3)[None]
    context, weights = attend(scores, values, torch.tensor([[True, True, False]]))
    assert weights[0, 2] == 0
    torch.testing.assert_close(weights[0, :2], torch.softmax(torch.tensor([1.0, 2.0]), -1))
    torch.testing.assert_close(context, weights)
    with pytest.raises(ValueError, match="hides every source position"):
        attend(scores, values, torch.tensor([[False, False, False]]))
    with pytest.raises(ValueError, match=r"scores must be \(batch, seq_s\)"):
        attend(scores, torch.eye(4)[None])
    with pytest.raises(ValueError, match="mask must be"):
        attend(scores, values, torch.tensor([True, True, True]))


def test_bad_input_errors():
    with pytest.raises(ValueError, match="unknown attention score 'cosine'"):
        Seq2SeqConfig(VOCAB, attention="cosine")
    with pytest.raises(ValueError, match="unknown attention score"):
        make_score("cosine", 4, 4)
    with pytest.raises(ValueError, match="equal query and key sizes"):
        make_score("dot", 4, 6)
    with pytest.raises(ValueError, match="d_hidden must be even"):
        Seq2SeqConfig(VOCAB, d_hidden=15)
    with pytest.raises(ValueError, match="d_embed must be positive"):
        Seq2SeqConfig(VOCAB, d_embed=0)
    model = small()
    src, tgt = padded_batch()
    with pytest.raises(ValueError, match=r"src must be integer token ids of shape \(batch, seq_s\)"):
        model(src.float(), tgt)
    with pytest.raises(ValueError, match="all padding"):
        model(torch.tensor([[5, EOS_ID], [PAD_ID, PAD_ID]]), tgt)
    with pytest.raises(ValueError, match=r"tgt must be \(batch, seq_t\) with batch 2"):
        model(src, tgt[:1])


@pytest.mark.parametrize("attention", ALL)
def test_stepwise_decoding_equals_the_teacher_forced_pass(attention):
    model = small(attention)
    src, tgt = padded_batch()
    full = model(src, tgt)
    memory, mask = model.encode(src)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, mask, cache, offset=t) for t in range(4)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("attention", ALL)
def test_no_information_flows_from_the_future(attention):
    model = small(attention)
    src, tgt = padded_batch()
    changed = tgt.clone()
    changed[:, 2:] = 20
    a, b = model(src, tgt), model(src, changed)
    torch.testing.assert_close(a[:, :2], b[:, :2])
    assert not torch.allclose(a[0, 2:], b[0, 2:])


@pytest.mark.parametrize("attention", [None, "additive"])
def test_lib_decoders_drive_the_recurrent_model(attention):
    model = small(attention)
    src, _ = padded_batch()
    greedy = greedy_decode(model, src, max_len=6)
    assert len(greedy) == 2 and all(len(h) <= 6 for h in greedy)
    assert beam_search(model, src, beam_size=1, max_len=6) == greedy
    assert len(beam_search(model, src, beam_size=3, max_len=6)) == 2


def test_tied_embeddings_and_save_load_round_trip(tmp_path):
    from lib.bpe import train_bpe

    model = small("additive")
    assert model.src_embed.weight is model.tgt_embed.weight is model.output.weight
    untied = Seq2Seq(Seq2SeqConfig(VOCAB, d_embed=12, d_hidden=16, share_embeddings=False))
    assert untied.num_parameters() == model.num_parameters() + 2 * VOCAB * 12
    tokenizer = train_bpe(["ein Hund läuft", "a dog runs", "zwei Männer", "two men"] * 5, vocab_size=VOCAB)
    assert tokenizer.get_vocab_size() == VOCAB  # load_run refuses a tokenizer of another size than the embedding
    save_run(tmp_path / "run", model, tokenizer)
    run = load_run(tmp_path / "run")
    assert isinstance(run.model, Seq2Seq) and run.config == model.config
    src, tgt = padded_batch()
    torch.testing.assert_close(run.model(src, tgt), model(src, tgt))


def test_bleu_by_length():
    refs = ["a dog runs", "two men sit on a bench", "a cat", "the big red bus drives down the street"]
    hyps = ["a dog runs", "two men sit on a bench", "the cat", "a bus"]
    buckets = bleu_by_length(hyps, refs, [3, 6, 2, 8], edges=[1, 5, 7])
    assert [(b.low, b.high, b.count) for b in buckets] == [(1, 4, 2), (5, 6, 1), (7, 10**9, 1)]
    assert buckets[1].bleu.score == pytest.approx(100.0) and buckets[2].label == "7+"
    assert buckets[2].bleu.score < 10
    with pytest.raises(ValueError, match="strictly increasing"):
        bleu_by_length(hyps, refs, [3, 6, 2, 8], edges=[5, 5])
    with pytest.raises(ValueError, match="lengths"):
        bleu_by_length(hyps, refs, [3], edges=[1])


@pytest.mark.slow
def test_train_command_line_trains_a_recurrent_model(multi30k_dir, tmp_path):
    import json
    import subprocess
    import sys

    from lib.translate import translate

    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lib.train",
            "--arch",
            "rnn",
            "--attention",
            "none",
            "--d-embed",
            "16",
            "--d-hidden",
            "16",
            "--steps",
            "3",
            "--max-tokens",
            "500",
            "--eval-every",
            "100",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "rnn (none attention)" in proc.stdout
    assert json.loads((out / "results.json").read_text())["steps"] == 3
    run = load_run(out)
    assert isinstance(run.model, Seq2Seq) and run.config.attention is None and run.config.d_hidden == 16
    assert len(translate(run.model, run.tokenizer, ["Ein Mann."])) == 1
