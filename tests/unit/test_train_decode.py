"""Training recipe, decoding, BLEU and saving/loading runs, including a small end-to-end run on real data."""

import math

import pytest
import torch
import torch.nn.functional as F

from lib.bpe import train_bpe
from lib.checkpoint import load_run, save_run
from lib.data import Batch, encode_pairs, load_multi30k, make_batches
from lib.decode import beam_search, greedy_decode
from lib.metrics import corpus_bleu
from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID
from lib.training import TrainConfig, evaluate_loss, label_smoothed_cross_entropy, noam_lr, train, translation_batches
from lib.transformer import Transformer, TransformerConfig
from lib.translate import translate

# --- the schedule and the loss --------------------------------------------------------------------


@pytest.mark.parametrize("step", [1, 10, 399, 400, 401, 4000, 100000])
def test_noam_lr_matches_the_formula(step):
    d_model, warmup = 512, 4000
    expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
    assert noam_lr(step, d_model, warmup) == pytest.approx(expected, rel=1e-12)


def test_noam_lr_peaks_at_warmup_and_factor_sets_the_peak():
    lrs = [noam_lr(s, 512, 4000) for s in range(1, 20000, 7)]
    assert max(lrs) == pytest.approx(noam_lr(4000, 512, 4000), rel=1e-3)
    assert noam_lr(4000, 512, 4000) == pytest.approx(512**-0.5 * 4000**-0.5)  # ≈ 7.0e-4 in the paper
    cfg = TrainConfig(peak_lr=1e-3, warmup=400, max_steps=1)
    assert noam_lr(400, 128, 400, cfg.lr_factor(128)) == pytest.approx(1e-3)


def test_label_smoothing_matches_hand_formula_and_ignores_padding():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 11)
    target = torch.tensor([[5, 6, 7, PAD_ID], [1, 2, PAD_ID, PAD_ID]])
    eps = 0.1
    logp = logits.log_softmax(-1)
    keep = target != PAD_ID
    nll = -logp.gather(-1, target[..., None])[..., 0]
    smooth = -logp.mean(-1)
    expected = ((1 - eps) * nll + eps * smooth)[keep].mean()
    torch.testing.assert_close(label_smoothed_cross_entropy(logits, target, eps), expected)
    plain = F.cross_entropy(logits[keep], target[keep])
    torch.testing.assert_close(label_smoothed_cross_entropy(logits, target, 0.0), plain)
    with pytest.raises(AssertionError, match="differ"):  # the core asserts its invariant; train's inputs are checked
        label_smoothed_cross_entropy(logits, target[:, :3])


# --- decoding -------------------------------------------------------------------------------------


def _model(seed=0):
    torch.manual_seed(seed)
    return Transformer(TransformerConfig.tiny(vocab_size=40, max_len=64)).eval()


def _naive_greedy(model, src, steps):
    ys = torch.full((src.size(0), 1), BOS_ID)
    for _ in range(steps):
        nxt = model(src, ys)[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat([ys, nxt], 1)
    out = []
    for row in ys[:, 1:].tolist():
        out.append(row[: row.index(EOS_ID)] if EOS_ID in row else row)
    return out


def test_greedy_with_cache_equals_naive_recomputation():
    model = _model()
    src = torch.randint(4, 40, (3, 6))
    src[2, 4:] = PAD_ID
    assert greedy_decode(model, src, max_len=12) == _naive_greedy(model, src, 12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_width_one_equals_greedy(seed):
    model = _model(seed)
    src = torch.randint(4, 40, (4, 7))
    src[1, 3:] = PAD_ID
    assert beam_search(model, src, beam_size=1, max_len=15) == greedy_decode(model, src, max_len=15)


def test_beam_search_finds_at_least_as_probable_a_sequence_as_greedy():
    # Beam search is not guaranteed to beat greedy (greedy's prefix can fall out of the beam); on finished
    # hypotheses of this untrained model it does. Few of its sentences end before max_len, hence 40 of them.
    model = _model(3)
    src = torch.randint(4, 40, (40, 6))

    def logprob(src_row, hyp):
        ys = torch.tensor([[BOS_ID] + hyp])
        target = torch.tensor(hyp + [EOS_ID]) if len(hyp) < 10 else torch.tensor(hyp)
        logp = model(src_row[None], ys[:, : len(target)]).log_softmax(-1)[0]
        return logp.gather(-1, target[:, None]).sum().item()

    greedy = greedy_decode(model, src, max_len=10)
    beam = beam_search(model, src, beam_size=4, alpha=0.0, max_len=10)
    compared = 0
    for i in range(len(src)):
        # both ended and differ: compare full-sequence probabilities (equal sequences would compare trivially)
        if len(greedy[i]) < 10 and len(beam[i]) < 10 and beam[i] != greedy[i]:
            assert logprob(src[i], beam[i]) >= logprob(src[i], greedy[i]) - 1e-4, i
            compared += 1
    assert compared >= 3, f"only {compared} sentences where both searches ended with different hypotheses"


def test_decode_errors():
    model = _model()
    with pytest.raises(ValueError):
        beam_search(model, torch.randint(4, 40, (1, 5)), beam_size=0)
    with pytest.raises(ValueError):
        greedy_decode(model, torch.randint(4, 40, (5,)))


# --- BLEU -----------------------------------------------------------------------------------------


def test_bleu_of_references_against_themselves_is_100():
    refs = ["A man is riding a bike.", "Two dogs play in the snow.", "A girl in a red dress is running."]
    result = corpus_bleu(refs, refs)
    assert result.score == pytest.approx(100.0)
    assert "tok:13a" in result.signature and "version" in result.signature
    assert corpus_bleu(["A cat sleeps."] * 3, refs).score < 10


def test_bleu_errors():
    with pytest.raises(ValueError):
        corpus_bleu(["a"], ["a", "b"])
    with pytest.raises(ValueError):
        corpus_bleu([], [])


# --- end to end on real data ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_real_data(multi30k_dir):
    pairs = load_multi30k("train")[:2000]
    tok = train_bpe([s for p in pairs for s in p], vocab_size=1000)
    examples = encode_pairs(pairs, tok, max_len=40)
    val = make_batches(encode_pairs(load_multi30k("val")[:200], tok), 2000, PAD_ID, BOS_ID, EOS_ID, shuffle=False)
    return tok, examples, val


def test_train_save_load_translate_end_to_end(small_real_data, tmp_path):
    tok, examples, val = small_real_data
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(tok.get_vocab_size(), max_len=128))
    before = evaluate_loss(model, val)
    cfg = TrainConfig(max_steps=40, max_tokens=1500, warmup=10, peak_lr=3e-3, eval_every_minutes=100, amp=False)
    result = train(
        model,
        translation_batches(examples, cfg.max_tokens),
        cfg,
        evaluate=lambda m: evaluate_loss(m, val),
        progress=False,
        log=lambda s: None,
    )
    after = evaluate_loss(model, val)
    assert result.steps == 40 and result.stopped_by == "max_steps"
    assert after < before - 1.0, (before, after)
    assert result.history[-1]["val_loss"] == pytest.approx(after)

    sentences = [de for de, _ in load_multi30k("test_2016_flickr")[:5]]
    out1 = translate(model, tok, sentences, beam_size=1)
    save_run(tmp_path / "run", model, tok, cfg, result.history, {"note": "test"})
    run = load_run(tmp_path / "run")
    assert run.results == {"note": "test"} and run.train_config == cfg
    out2 = translate(run.model, run.tokenizer, sentences, beam_size=1)
    assert out1 == out2 and all(isinstance(s, str) for s in out1)
    assert len(translate(run.model, run.tokenizer, sentences, beam_size=3)) == 5


def _run(model, examples, val, cfg, **kw):
    return train(
        model,
        translation_batches(examples, cfg.max_tokens, cfg.seed),
        cfg,
        evaluate=lambda m: evaluate_loss(m, val),
        progress=False,
        log=lambda s: None,
        **kw,
    )


def test_resume_continues_exactly_where_it_stopped(small_real_data, tmp_path):
    # 6 steps, stop, resume to 10: the same history and bit-identical weights as 10 steps in one go. The batches
    # of an epoch are 18 here, so the resumed run must start inside the epoch, at batch 7.
    tok, examples, val = small_real_data
    kw = dict(max_tokens=1000, warmup=4, eval_every_steps=3, amp=False)
    assert len(translation_batches(examples, 1000)(0)) > 10
    torch.manual_seed(0)
    straight = Transformer(TransformerConfig.tiny(tok.get_vocab_size(), max_len=128, dropout=0.1))
    full = _run(straight, examples, val, TrainConfig(max_steps=10, **kw))

    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(tok.get_vocab_size(), max_len=128, dropout=0.1))
    _run(model, examples, val, TrainConfig(max_steps=6, **kw), out_dir=tmp_path)
    torch.manual_seed(123)  # whatever happens in between must not matter
    model = Transformer(TransformerConfig.tiny(tok.get_vocab_size(), max_len=128, dropout=0.1))
    resumed = _run(model, examples, val, TrainConfig(max_steps=10, **kw), out_dir=tmp_path, resume=True)
    assert resumed.steps == 10 and [h["step"] for h in resumed.history] == [3, 6, 9, 10]
    for a, b in zip(full.history, resumed.history):
        assert (a["step"], a["train_loss"], a["val_loss"]) == (b["step"], b["train_loss"], b["val_loss"])
    for (name, p), q in zip(straight.state_dict().items(), model.state_dict().values()):
        assert torch.equal(p, q), name


def test_checkpoint_is_written_atomically_and_loads_without_pickle(small_real_data, tmp_path):
    tok, examples, val = small_real_data
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(tok.get_vocab_size(), max_len=128))
    _run(model, examples, val, TrainConfig(max_steps=2, max_tokens=1000, warmup=4, amp=False), out_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]  # no temporary file left behind
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert state["result"]["steps"] == 2 and (tmp_path / "checkpoint.pt").stat().st_mode & 0o777 == 0o644


def test_resuming_from_a_truncated_checkpoint_is_a_one_line_error_naming_it(small_real_data, tmp_path):
    # torch's zip reader said "PytorchStreamReader failed reading zip archive" with a traceback
    tok, examples, val = small_real_data
    cfg = TrainConfig(max_steps=2, max_tokens=1000, warmup=4, amp=False)
    torch.manual_seed(0)
    _run(Transformer(TransformerConfig.tiny(tok.get_vocab_size(), max_len=128)), examples, val, cfg, out_dir=tmp_path)
    checkpoint = tmp_path / "checkpoint.pt"
    checkpoint.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])  # a crash mid-copy
    model = Transformer(TransformerConfig.tiny(tok.get_vocab_size(), max_len=128))
    with pytest.raises(ValueError) as caught:
        _run(
            model,
            examples,
            val,
            TrainConfig(max_steps=4, max_tokens=1000, warmup=4, amp=False),
            out_dir=tmp_path,
            resume=True,
        )
    message = str(caught.value)
    assert message.startswith(f"{checkpoint}: not a readable checkpoint, truncated or damaged") and "\n" not in message


def test_train_rejects_an_empty_epoch_and_a_model_without_d_model():
    model = Transformer(TransformerConfig.tiny(50))
    with pytest.raises(ValueError, match="no batches"):
        train(model, lambda epoch: [], TrainConfig(max_steps=1), progress=False)
    # a batch whose targets are all padding has no token to average the loss over: refused where it enters the
    # loop (on the CPU, before the step), not by the loss itself, which would need a device sync per step
    padding = torch.full((2, 3), PAD_ID)
    all_padding = Batch(torch.randint(4, 50, (2, 3)), padding, padding)
    with pytest.raises(ValueError, match="no target token to score"):
        train(model, lambda epoch: [all_padding], TrainConfig(max_steps=1), progress=False)
    with pytest.raises(ValueError, match="d_model"):
        train(torch.nn.Linear(2, 2), lambda epoch: [], TrainConfig(max_steps=1), progress=False)
    with pytest.raises(ValueError, match="out_dir"):
        train(model, lambda epoch: [], TrainConfig(max_steps=1), resume=True, progress=False)


@pytest.mark.parametrize(
    "bad",
    [
        dict(clip_norm=-1.0),
        dict(peak_lr=float("nan")),
        dict(peak_lr=0.0),
        dict(eval_every_steps=0),
        dict(eval_every_minutes=0.0),
        dict(label_smoothing=1.0),
        dict(minutes=float("nan")),
        dict(max_tokens=0),
        dict(warmup=0),  # noam_lr trusts its caller: the schedule's warm-up is checked here, d_model by train
        dict(betas=(0.9, 1.5)),
        dict(snapshot_minutes=(-1.0,)),
    ],
)
def test_train_config_rejects_bad_values(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        TrainConfig(max_steps=5, **bad)


def test_half_precision_save_is_smaller_and_close(small_real_data, tmp_path):
    tok, _, val = small_real_data
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(tok.get_vocab_size(), max_len=128)).eval()
    save_run(tmp_path / "f32", model, tok)
    save_run(tmp_path / "f16", model, tok, weights_dtype=torch.float16)

    def size(p):
        return (p / "model.pt").stat().st_size

    assert size(tmp_path / "f16") < 0.6 * size(tmp_path / "f32")
    reloaded = load_run(tmp_path / "f16").model
    assert math.isclose(evaluate_loss(reloaded, val), evaluate_loss(model, val), rel_tol=1e-3)


def test_load_run_names_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"model\.pt"):
        (tmp_path / "config.json").write_text("{}")
        load_run(tmp_path)


def test_train_config_needs_a_budget():
    with pytest.raises(ValueError, match="budget"):
        TrainConfig()
