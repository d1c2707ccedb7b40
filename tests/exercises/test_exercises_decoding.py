"""Tests of the exercises of the decoding chapter: a correct answer passes, typical mistakes are named.

The correct answers are written with ``lib`` where it has the function (the filters, the cache size) and with
``torch.topk`` where it does not (one step of beam search); ``test_exercises.py`` also collects this module's
``CASES`` (every registered exercise must have test cases).
"""

import numpy as np
import pytest
import torch

from lib.decode import beam_search, filter_top_k, filter_top_p, kv_cache_bytes
from lib.exercises import EXERCISES, check
from lib.transformer import Transformer, TransformerConfig

# --- answers, correct and wrong ---------------------------------------------------------------------------


def top_k_correct(logits, k):
    return filter_top_k(logits, k)


def top_k_by_threshold(logits, k):
    # a common hand-written version: compare with the k-th largest value (no ties in the cases)
    kth = logits.topk(min(k, logits.size(-1)), dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_k_zero(logits, k):
    return filter_top_k(logits, k).nan_to_num(neginf=0.0)


def top_k_probs(logits, k):
    return torch.softmax(filter_top_k(logits, k), -1)


def top_k_plus_one(logits, k):
    return filter_top_k(logits, min(k + 1, logits.size(-1)))


def top_k_smallest(logits, k):
    return -filter_top_k(-logits, k)


def top_k_flat(logits, k):
    # top k over the whole tensor instead of per row
    flat = logits.reshape(-1)
    keep = torch.zeros_like(flat, dtype=torch.bool).scatter(0, flat.topk(min(k, flat.numel())).indices, True)
    return logits.masked_fill(~keep.view_as(logits), float("-inf"))


def _nucleus(logits, p, rule):
    probs, order = torch.softmax(logits, -1).sort(-1, descending=True)
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, rule(probs.cumsum(-1), probs, p))
    return logits.masked_fill(~keep, float("-inf"))


def top_p_correct(logits, p):
    return filter_top_p(logits, p)


def top_p_by_hand(logits, p):
    return _nucleus(logits, p, lambda cum, probs, p: cum - probs < p)


def top_p_below(logits, p):
    return _nucleus(logits, p, lambda cum, probs, p: cum < p)


def top_p_each_above_p(logits, p):
    return logits.masked_fill(torch.softmax(logits, -1) < p, float("-inf"))


def top_p_unsorted(logits, p):
    probs = torch.softmax(logits, -1)
    return logits.masked_fill(~(probs.cumsum(-1) - probs < p), float("-inf"))


def beam_step_correct(scores, logp, k):
    vocab = logp.size(-1)
    top = (scores[:, None] + logp).reshape(-1).topk(k)
    return top.indices // vocab, top.indices % vocab, top.values


def beam_step_lists(scores, logp, k):
    parents, tokens, values = beam_step_correct(scores, logp, k)
    return parents.tolist(), tokens.tolist(), values.tolist()


def beam_step_swapped(scores, logp, k):
    parents, tokens, values = beam_step_correct(scores, logp, k)
    return tokens, parents, values


def beam_step_reversed(scores, logp, k):
    parents, tokens, values = beam_step_correct(scores, logp, k)
    return parents.flip(0), tokens.flip(0), values.flip(0)


def beam_step_per_beam(scores, logp, k):
    best = logp.max(-1)
    return torch.arange(k), best.indices, scores + best.values


def beam_step_no_scores(scores, logp, k):
    vocab = logp.size(-1)
    top = logp.reshape(-1).topk(k)
    return top.indices // vocab, top.indices % vocab, top.values


def beam_step_raw_scores(scores, logp, k):
    parents, tokens, _ = beam_step_correct(scores, logp, k)
    return parents, tokens, logp[parents, tokens]


def kv_bytes_correct(num_layers, num_heads, d_model, seq_len, batch, bytes_per_value):
    return kv_cache_bytes(num_layers, num_heads, d_model // num_heads, seq_len, batch, bytes_per_value)


def kv_bytes_formula(num_layers, num_heads, d_model, seq_len, batch, bytes_per_value):
    return 2 * num_layers * d_model * seq_len * batch * bytes_per_value  # heads · d_k = d_model


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "dec_top_k": (
        top_k_correct,
        [
            (top_k_zero, "set the dropped logits to 0"),
            (top_k_probs, "returned probabilities"),
            (top_k_plus_one, "kept k + 1 tokens"),
            (top_k_smallest, "smallest"),
            (top_k_flat, "last axis"),
            (lambda logits, k: logits[..., :k], "shape"),
        ],
    ),
    "dec_top_p": (
        top_p_correct,
        [
            (top_p_below, "the token that crosses p"),
            (top_p_each_above_p, "own probability is at least p"),
            (top_p_unsorted, "sort them"),
            (lambda logits, p: logits.clone(), "Nothing was dropped"),
        ],
    ),
    "dec_beam_step": (
        beam_step_correct,
        [
            (beam_step_swapped, "swapped parents and tokens"),
            (beam_step_reversed, "best first"),
            (beam_step_per_beam, "ranks all K · V extensions together"),
            (beam_step_no_scores, "add each beam's score first"),
            (beam_step_raw_scores, "summed log-probabilities"),
            (lambda s, lp, k: (0, 0), "return a triple"),
        ],
    ),
    "dec_kv_bytes": (
        kv_bytes_correct,
        [
            (lambda n, h, d, t, b, v: kv_bytes_correct(n, h, d, t, b, v) // 2, "factor 2"),
            (lambda n, h, d, t, b, v: kv_bytes_correct(n, h, d, t, b, v) * h, "d_k = d_model / num_heads"),
            (lambda n, h, d, t, b, v: kv_bytes_correct(n, h, d, t, 1, v), "forgot the batch"),
            (lambda n, h, d, t, b, v: 8 * kv_bytes_correct(n, h, d, t, b, v), "bits, not bytes"),
            (lambda n, h, d, t, b, v: kv_bytes_correct(n, h, d, t, b, 1), "bytes per value"),
            (lambda n, h, d, t, b, v: 1000, "expected"),
        ],
    ),
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


def test_the_cases_are_this_chapters_exercises():
    assert all(EXERCISES[name].chapter == "decoding" for name in CASES)


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("dec_top_k", top_k_by_threshold),
        ("dec_top_p", top_p_by_hand),
        ("dec_beam_step", beam_step_lists),
        ("dec_kv_bytes", kv_bytes_formula),
    ],
)
def test_other_correct_answers_pass(name, answer, capsys):
    assert check(name, answer)


def test_the_top_p_cases_cover_the_crossing_token():
    # the exercise is about the token that crosses p: some case must keep it (cum < p would drop it)
    from lib.exercises.decoding import _logits_cases

    differs = [
        (i, p)
        for i, logits in enumerate(_logits_cases())
        for p in (0.05, 0.5, 0.9)
        if not torch.equal(filter_top_p(logits, p).isfinite(), top_p_below(logits, p).isfinite())
    ]
    assert differs


def test_the_beam_step_cases_need_the_flattened_ranking():
    # in the worked case one beam takes two places and another none: a per-beam answer cannot pass
    from lib.exercises.decoding import _beam_cases, _beam_reference

    scores, logp, k = _beam_cases()[0]
    parents, _, _ = _beam_reference(scores, logp, k)
    assert sorted(parents) != list(range(k)) and 2 not in parents
    assert int(logp.max(-1).values.argmax()) == 2  # beam 2 has the most probable next token of all


def test_the_beam_step_is_the_step_lib_beam_search_takes():
    # beam_search's first two steps on an untrained model follow beam_step_correct (alpha = 0: raw scores)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(20)).eval()
    src = torch.tensor([[5, 6, 7, 2]])
    _, (tree,) = beam_search(model, src, beam_size=3, alpha=0.0, max_len=2, return_tree=True)
    with torch.no_grad():
        memory, mask = model.encode(src)
        logp0 = torch.log_softmax(model.decode(torch.tensor([[1]]), memory, mask)[0, -1], -1)
    _, tokens, values = beam_step_correct(torch.zeros(1), logp0[None], 3)
    assert tree.tokens[1:4] == tokens.tolist() and tree.parents[1:4] == [0, 0, 0]
    assert np.allclose(tree.scores[1:4], values.tolist(), atol=1e-5)
