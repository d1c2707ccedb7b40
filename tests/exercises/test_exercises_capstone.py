"""Tests of the exercises of the capstone chapter: a correct answer passes, typical mistakes are named.

The correct answers are written with ``lib`` where lib has the function (the loss, the length penalty, BLEU) and
as a plain loop where it does not (greedy decoding of one sentence); ``test_exercises.py`` also collects this
module's ``CASES`` (every registered exercise must have test cases). The assembly exercise's cases and tests live in
``test_assemble_transformer.py``; its CASES join these.
"""

import math
import time

import pytest
import torch
import torch.nn.functional as F

from lib.decode import greedy_decode, length_penalty
from lib.exercises import EXERCISES, check
from lib.exercises.capstone import _BP_CASES, _BP_REFERENCES
from lib.metrics import corpus_bleu
from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID
from lib.training import label_smoothed_cross_entropy

# --- answers, correct and wrong ---------------------------------------------------------------------------


def smoothed_correct(logits, target, epsilon):
    return label_smoothed_cross_entropy(logits, target, epsilon)


def _smoothed(logits, target, epsilon, skip_pad=True, spread=None, reduce="mean", plain=False):
    logp = torch.log_softmax(logits, dim=-1)
    nll = -logp.gather(-1, target[..., None])[..., 0]
    uniform = -logp.mean(-1) if spread is None else spread(logp, nll)
    loss = nll if plain else (1 - epsilon) * nll + epsilon * uniform
    if skip_pad:
        loss = loss[target != PAD_ID]
    return loss.sum() if reduce == "sum" else loss.mean()


def smoothed_no_padding_mask(logits, target, epsilon):
    return _smoothed(logits, target, epsilon, skip_pad=False)


def smoothed_summed(logits, target, epsilon):
    return _smoothed(logits, target, epsilon, reduce="sum")


def smoothed_v_minus_1(logits, target, epsilon):
    return _smoothed(logits, target, epsilon, spread=lambda lp, nll: (-lp.sum(-1) - nll) / (lp.size(-1) - 1))


def smoothed_sum_over_vocab(logits, target, epsilon):
    return _smoothed(logits, target, epsilon, spread=lambda lp, nll: -lp.sum(-1))


def smoothed_swapped(logits, target, epsilon):
    return _smoothed(logits, target, 1 - epsilon)


def smoothed_plain(logits, target, epsilon):
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=PAD_ID)


def smoothed_pad_nan(logits, target, epsilon):
    # the mean of each row, weighted by its number of real tokens: right, until a row is all padding (0/0)
    rows = [_smoothed(logits[i : i + 1], target[i : i + 1], epsilon) for i in range(len(target))]
    counts = (target != PAD_ID).sum(-1)
    return (torch.stack(rows) * counts).sum() / counts.sum()


@torch.no_grad()
def greedy_correct(model, src, max_len):
    memory, src_mask = model.encode(src)
    ys = [BOS_ID]
    for _ in range(max_len):
        logits = model.decode(torch.tensor([ys]), memory, src_mask)
        token = int(logits[0, -1].argmax())
        if token == EOS_ID:
            break
        ys.append(token)
    return ys[1:]


@torch.no_grad()
def _greedy(model, src, max_len, keep_bos=False, keep_eos=False, stop=True, use_max_len=True):
    memory, src_mask = model.encode(src)
    ys = [BOS_ID]
    for _ in range(max_len if use_max_len else 40):
        logits = model.decode(torch.tensor([ys]), memory, src_mask)
        token = int(logits[0, -1].argmax())
        if token == EOS_ID and stop:
            if keep_eos:
                ys.append(token)
            break
        ys.append(token)
    return ys if keep_bos else ys[1:]


def greedy_with_bos(model, src, max_len):
    return _greedy(model, src, max_len, keep_bos=True)


def greedy_with_eos(model, src, max_len):
    return _greedy(model, src, max_len, keep_eos=True)


def greedy_no_stop(model, src, max_len):
    return _greedy(model, src, max_len, stop=False)


def greedy_ignores_max_len(model, src, max_len):
    return _greedy(model, src, max_len, use_max_len=False)


@torch.no_grad()
def _greedy_loop(model, src, max_len, last_only=False, first_row=False):
    memory, src_mask = model.encode(src)
    ys = [BOS_ID]
    for _ in range(max_len):
        logits = model.decode(torch.tensor([ys[-1:] if last_only else ys]), memory, src_mask)
        token = int(logits[0, 0 if first_row else -1].argmax())
        if token == EOS_ID:
            break
        ys.append(token)
    return ys[1:]


def greedy_last_token_only(model, src, max_len):
    return _greedy_loop(model, src, max_len, last_only=True)


def greedy_first_row(model, src, max_len):
    return _greedy_loop(model, src, max_len, first_row=True)


def greedy_train_mode(model, src, max_len):
    model.train()
    torch.manual_seed(1)
    return _greedy(model, src, max_len)


def beam_score_correct(log_prob, length, alpha):
    return log_prob / float(length_penalty(torch.tensor(float(length)), alpha))


def bp_correct(hypotheses, references):
    return corpus_bleu(hypotheses, references).brevity_penalty


def _bp(hypotheses, references, cap=True, swap=False, per_sentence=False, chars=False, guard=True):
    size = len if chars else (lambda s: len(s.split()))
    if per_sentence:
        return sum(_bp([h], [r], cap, swap, False, chars, guard) for h, r in zip(hypotheses, references)) / len(
            references
        )
    c, r = sum(map(size, hypotheses)), sum(map(size, references))
    if swap:
        c, r = r, c
    if guard and c == 0:
        return 0.0
    bp = math.exp(1 - r / c)
    return min(1.0, bp) if cap else bp


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "cap_label_smoothing": (
        smoothed_correct,
        [
            (smoothed_no_padding_mask, "did not skip the padding"),
            (smoothed_summed, "you summed over the positions"),
            (smoothed_v_minus_1, "V − 1 wrong tokens"),
            (smoothed_sum_over_vocab, "summed −log p_v over the vocabulary"),
            (smoothed_swapped, "swapped ε and 1 − ε"),
            (smoothed_plain, "plain cross-entropy"),
            (smoothed_pad_nan, "your loss is nan"),
            (lambda lo, t, e: 2 * smoothed_correct(lo, t, e), "Hint: per real position"),
        ],
    ),
    "cap_greedy_decode": (
        greedy_correct,
        [
            (greedy_with_bos, "starts with BOS"),
            (greedy_with_eos, "kept the EOS"),
            (greedy_no_stop, "went on after"),
            (greedy_ignores_max_len, "more than max_len = 3"),
            (greedy_last_token_only, "only the last token"),
            (greedy_first_row, "logits[0, -1]"),
            (greedy_train_mode, "training mode"),
            (lambda m, s, n: "A man", "should be a list of token ids"),
            (lambda m, s, n: [5, 6, 7], "Hint: BOS first"),
        ],
    ),
    "cap_beam_score": (
        beam_score_correct,
        [
            (lambda lp, n, a: lp * ((5 + n) / 6) ** a, "multiplied by the length penalty"),
            (lambda lp, n, a: lp / n**a, "divided by |Y|^α"),
            (lambda lp, n, a: lp / n, "divided by the length |Y|"),
            (lambda lp, n, a: lp / (a * (5 + n) / 6), "α is the exponent"),
            (lambda lp, n, a: lp / ((5 + n) ** a / 6), "the whole ratio"),
            (lambda lp, n, a: lp / ((5 + n) / 6), "left out the exponent α"),
            (lambda lp, n, a: -lp / ((5 + n) / 6) ** a, "flipped the sign"),
            (lambda lp, n, a: lp, "Hint: log_prob / ((5 + length) / 6) ** alpha"),
        ],
    ),
    "cap_brevity_penalty": (
        bp_correct,
        [
            (lambda h, r: _bp(h, r, cap=False), "did not cap it at 1"),
            (lambda h, r: _bp(h, r, swap=True, cap=False), "swapped c and r"),
            (lambda h, r: _bp(h, r, swap=True), "swap c and r"),
            (lambda h, r: _bp(h, r, per_sentence=True), "averaged a penalty per sentence"),
            (lambda h, r: _bp(h, r, chars=True), "counted characters"),
            (lambda h, r: _bp(h, r, guard=False), "divided by c = 0"),
            (lambda h, r: sum(len(x.split()) for x in h) / sum(len(x.split()) for x in r), "ratio c/r"),
            (lambda h, r: 1.0, "although the translations are shorter"),
            (lambda h, r: 0.5, "Hint: BP = 1 if c > r"),
            (0.78, "expected a function"),
        ],
    ),
}


def _assembly_cases() -> dict:
    """The CASES of the assembly exercise, kept with its own tests in test_assemble_transformer.py."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("test_assemble_transformer.py")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


CASES.update(_assembly_cases())

# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


@pytest.mark.parametrize("name", sorted(CASES))
def test_correct_answers_pass_quickly(name, capsys):
    check(name, CASES[name][0])  # warm-up: the shipped model is loaded once
    seconds = []
    for _ in range(3):  # the fastest of three: other processes on a shared CPU only slow some runs down
        start = time.perf_counter()
        assert check(name, CASES[name][0])
        seconds.append(time.perf_counter() - start)
    assert min(seconds) < 2.0, seconds


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("answer", [None, ...])
def test_unsolved_is_not_yet(name, answer, capsys):
    assert check(name, answer) is False
    assert capsys.readouterr().out == f"⏳ {name}: not solved yet — replace the ... with your answer\n"


def test_the_plain_loop_agrees_with_lib_greedy_decode():
    # the reference the checker compares with is lib's batched, cached decoder; a plain loop must match it
    from lib.bpe import encode
    from lib.exercises.capstone import _GREEDY_SENTENCES, _shipped

    run = _shipped()
    for sentence, max_len in _GREEDY_SENTENCES:
        src = torch.tensor([encode(run.tokenizer, sentence) + [EOS_ID]])
        assert greedy_correct(run.model, src, max_len) == greedy_decode(run.model, src, max_len=max_len)[0]


def test_the_greedy_checker_cuts_one_sentence_short():
    from lib.exercises.capstone import _GREEDY_SENTENCES, _greedy_case

    # the max_len edge only tests something if lib's output there is really cut short
    sentence, max_len = _GREEDY_SENTENCES[-1]
    _, ids = _greedy_case(sentence, max_len)
    assert len(ids) == max_len


def test_greedy_answers_may_be_tensors_or_a_batch_of_one(capsys):
    assert check("cap_greedy_decode", lambda m, s, n: torch.tensor(greedy_correct(m, s, n)))
    assert check("cap_greedy_decode", lambda m, s, n: [greedy_correct(m, s, n)])
    assert check("cap_greedy_decode", lambda m, s, n: greedy_decode(m, s, max_len=n))


def test_greedy_checker_leaves_the_model_in_eval_mode(capsys):
    from lib.exercises.capstone import _shipped

    check("cap_greedy_decode", greedy_train_mode)
    assert not _shipped().model.training


def test_greedy_checker_restores_the_thread_count(capsys):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        check("cap_greedy_decode", greedy_correct)
        check("cap_greedy_decode", lambda m, s, n: 1 / 0)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_smoothing_accepts_torch_label_smoothing_and_floats(capsys):
    def torch_version(logits, target, epsilon):
        return F.cross_entropy(
            logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=PAD_ID, label_smoothing=epsilon
        )

    assert check("cap_label_smoothing", torch_version)
    assert check("cap_label_smoothing", lambda lo, t, e: float(smoothed_correct(lo, t, e)))


def test_beam_score_accepts_tensors(capsys):
    assert check("cap_beam_score", lambda lp, n, a: torch.tensor(lp) / ((5 + n) / 6) ** a)


def test_the_brevity_cases_count_words_as_sacrebleu_does():
    # The exercise says len(s.split()) counts the words: every sentence is already tokenised the 13a way.
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tok = Tokenizer13a()
    for sentence in _BP_REFERENCES + [h for _, hyps in _BP_CASES for h in hyps]:
        assert tok(sentence).split() == sentence.split()


def test_the_brevity_cases_cover_both_sides_of_one():
    values = [corpus_bleu(h, _BP_REFERENCES).brevity_penalty for _, h in _BP_CASES]
    assert 0 < values[0] < 1 and values[1] == 1.0 and values[2] == 1.0 and values[3] == 0.0


def test_every_capstone_exercise_is_registered_once():
    assert all(EXERCISES[name].chapter == "capstone" for name in CASES)
