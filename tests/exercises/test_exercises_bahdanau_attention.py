"""Tests of the exercises of the chapter "Bahdanau attention": a correct answer passes, typical mistakes are named.

The correct answers are written with ``lib`` (or plain numpy, for the crossing count); ``test_exercises.py``
also collects this module's ``CASES`` (every registered exercise must have test cases).
"""

import functools
from unittest import mock

import numpy as np
import torch

from lib.book.seq2seq_bottleneck import correct_matrix, teacher_forced_outputs
from lib.exercises import check
from lib.experiments import reversal_experiment, sequence_task
from lib.seq2seq import AdditiveScore, attend

# --- answers, correct and wrong ---------------------------------------------------------------------------


def _softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def additive_correct(s, H, W_q, W_k, v):
    d_a, d_q = W_q.shape
    score = AdditiveScore(d_q, W_k.shape[1], d_a).double()
    with torch.no_grad():
        score.w_q.weight.copy_(torch.from_numpy(W_q))
        score.w_k.weight.copy_(torch.from_numpy(W_k))
        score.w_k.bias.zero_()
        score.v.weight.copy_(torch.from_numpy(v)[None])
        return score(torch.from_numpy(s)[None], score.prepare(torch.from_numpy(H)[None]))[0]


def _hidden(s, H, W_q, W_k):
    return np.tanh(W_q @ s + H @ W_k.T)  # (seq_s, d_attention)


def additive_without_v(s, H, W_q, W_k, v):
    return _hidden(s, H, W_q, W_k)


def additive_seed_000(s, H, W_q, W_k, v):  # h'ᵀ tanh(W_q h' + W_k h): the query in place of v
    return _hidden(s, H, W_q, W_k) @ s


def additive_summed(s, H, W_q, W_k, v):
    return _hidden(s, H, W_q, W_k).sum(-1)


def additive_no_tanh(s, H, W_q, W_k, v):
    return (W_q @ s + H @ W_k.T) @ v


def additive_weights(s, H, W_q, W_k, v):
    return _softmax(_hidden(s, H, W_q, W_k) @ v)


def additive_column_vector(s, H, W_q, W_k, v):
    return (_hidden(s, H, W_q, W_k) @ v)[:, None]


def attend_correct(scores, values, mask):
    return attend(torch.from_numpy(scores), torch.from_numpy(values), torch.from_numpy(mask))


def _attend(scores, values, mask, fill=-np.inf, axis=-1, use_mask=True, after=False, invert=False):
    keep = ~mask if invert else mask
    with np.errstate(invalid="ignore"):
        if after:
            w = np.where(keep, _softmax(scores), 0.0)
        else:
            w = _softmax(np.where(keep, scores, fill) if use_mask else scores, axis=axis)
    return np.einsum("bs,bsd->bd", w, values), w


def attend_batch_axis(scores, values, mask):
    return _attend(scores, values, mask, axis=0)


def attend_no_mask(scores, values, mask):
    return _attend(scores, values, mask, use_mask=False)


def attend_zero_fill(scores, values, mask):
    return _attend(scores, values, mask, fill=0.0)


def attend_mask_after_softmax(scores, values, mask):
    return _attend(scores, values, mask, after=True)


def attend_inverted_mask(scores, values, mask):
    return _attend(scores, values, mask, invert=True)


def attend_swapped(scores, values, mask):
    context, weights = attend_correct(scores, values, mask)
    return weights, context


def attend_mean_context(scores, values, mask):
    _, weights = attend_correct(scores, values, mask)
    return values.mean(axis=1), weights


def crossings_correct(weights):
    path = np.asarray(weights).argmax(axis=1)
    return int(sum(path[i] > path[k] for i in range(len(path)) for k in range(i + 1, len(path))))


def crossings_columns(weights):
    return crossings_correct(np.asarray(weights).T)


def crossings_adjacent(weights):
    path = np.asarray(weights).argmax(axis=1)
    return int(np.sum(np.diff(path) < 0))


def crossings_ties(weights):
    path = np.asarray(weights).argmax(axis=1)
    return int(sum(path[i] >= path[k] for i in range(len(path)) for k in range(i + 1, len(path))))


def crossings_in_order(weights):
    path = np.asarray(weights).argmax(axis=1)
    return int(sum(path[i] < path[k] for i in range(len(path)) for k in range(i + 1, len(path))))


def crossings_twice(weights):
    return 2 * crossings_correct(weights)


# --- break-it measurements on the chapter's reversal model, made with the chapter's plumbing ---------------


class Lazy:
    """A measurement computed when the checker first reads it (np.asarray), not when the tests are collected."""

    def __init__(self, compute):
        self.compute = compute

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.compute(), dtype=dtype)


def _pairs(n):
    return [p for p in sequence_task(1000, 4, 30, 20, seed=2) if len(p[0]) == n]


def uniform_attend(scores, values, mask=None):
    weights = mask.double() / mask.sum(-1, keepdim=True)  # 1/T_x on every real position
    return torch.einsum("bs,bsd->bd", weights.to(values.dtype), values), weights


def raw_attend(scores, values, mask=None):
    weights = scores.masked_fill(~mask, 0.0)  # no softmax
    return torch.einsum("bs,bsd->bd", weights, values), weights


def exp_attend(scores, values, mask=None):
    weights = scores.exp().masked_fill(~mask, 0.0)  # exp without the division
    return torch.einsum("bs,bsd->bd", weights, values), weights


@functools.cache
def _accuracy(attend_fn=None, fixed=False):
    model = reversal_experiment(None if fixed else "additive").model
    result = []
    for n in (6, 30):
        with mock.patch("lib.seq2seq.attend", attend_fn or attend):
            result.append(correct_matrix(_pairs(n), teacher_forced_outputs(model, _pairs(n)), n).mean())
    return tuple(result)


@functools.cache
def _norms(attend_fn=None, power=1):
    model, result = reversal_experiment("additive").model, []
    for n in (6, 30):
        contexts = []

        def recording(scores, values, mask=None, contexts=contexts):
            context, weights = (attend_fn or attend)(scores, values, mask)
            contexts.append(context)
            return context, weights

        with mock.patch("lib.seq2seq.attend", recording):
            teacher_forced_outputs(model, _pairs(n))
        result.append(float((torch.cat(contexts).norm(dim=-1) ** power).mean()))
    return tuple(result)


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "ba_additive_score": (
        additive_correct,
        [
            (additive_without_v, "not a score. Multiply it by v"),
            (additive_seed_000, "as the lecture notes print it"),
            (additive_summed, "v = (1, …, 1)"),
            (additive_no_tanh, "left out the tanh"),
            (additive_weights, "you returned the weights softmax(e)"),
            (additive_column_vector, "1-D array of shape (seq_s,)"),
            (lambda *args: 2 * additive_correct(*args), "your scores are"),
        ],
    ),
    "ba_attend": (
        attend_correct,
        [
            (attend_batch_axis, "softmax over the batch"),
            (attend_no_mask, "forgot the mask"),
            (attend_zero_fill, "exp(0) = 1"),
            (attend_mask_after_softmax, "without renormalising"),
            (attend_inverted_mask, "inverted the mask"),
            (attend_swapped, "you returned (weights, context)"),
            (attend_mean_context, "plain mean of the values"),
            (lambda s, v, m: attend_correct(s, v, m)[1], "expected a pair (context, weights)"),
        ],
    ),
    "ba_crossings": (
        crossings_correct,
        [
            (crossings_columns, "argmax down the columns"),
            (crossings_adjacent, "only neighbouring rows"),
            (crossings_ties, "ties as crossings"),
            (crossings_in_order, "pairs in order"),
            (crossings_twice, "counted each crossing twice"),
            (lambda w: 3, "Hint: path = weights.argmax(axis=1)"),
            (3, "expected a function"),
        ],
    ),
    "ba_break_uniform": (
        Lazy(lambda: _accuracy(uniform_attend)),
        [
            (Lazy(lambda: _accuracy(uniform_attend)[::-1]), "Your two numbers are swapped"),
            (Lazy(lambda: _accuracy()), "patch that one, mock.patch('lib.seq2seq.attend'"),
            (Lazy(lambda: _accuracy(fixed=True)), "That is the fixed-vector model"),
            ((0.5, 0.5), "weights = mask / mask.sum(-1, keepdim=True)"),
            ([0.3], "a pair of two numbers"),
        ],
    ),
    "ba_break_softmax": (
        Lazy(lambda: _norms(raw_attend)),
        [
            (Lazy(lambda: _norms(raw_attend)[::-1]), "Your two numbers are swapped"),
            (Lazy(lambda: _norms()), "your attend never reached the model"),
            (Lazy(lambda: _norms(exp_attend)), "You kept the exponential"),
            (Lazy(lambda: _norms(raw_attend, 2)), "squared length"),
            ((100.0, 200.0), "average c.norm(dim=-1)"),
            ("large", "should be numbers"),
        ],
    ),
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


def test_the_break_it_measurements_go_the_way_the_exercises_say(capsys):
    # uniform weights: far below the intact model, worse on long sequences; no softmax: contexts blow up with T_x
    intact, uniform = _accuracy(), _accuracy(uniform_attend)
    assert min(intact) > 0.95 and uniform[0] < 0.5 and uniform[1] < uniform[0]
    with_softmax, raw = _norms(), _norms(raw_attend)
    bound = reversal_experiment("additive").model.config.d_hidden ** 0.5  # an average of states with entries in (-1, 1)
    assert max(with_softmax) < bound and raw[0] > 5 * bound and raw[1] > 2 * raw[0]
    assert check("ba_break_uniform", list(uniform)) and check("ba_break_softmax", torch.tensor(raw))


def test_a_break_it_answer_that_is_a_function_is_not_called(capsys):
    # the answers are measurements (numbers); a function, even one that raises or never returns, is not run
    def loops():
        while True:
            pass

    def raises():
        raise RuntimeError("not a measurement")

    for name in ("ba_break_uniform", "ba_break_softmax"):
        for answer in (loops, raises):
            assert check(name, answer) is False
            assert "should be numbers (a list, numpy array or tensor), got function" in capsys.readouterr().out


def test_a_float64_numpy_answer_passes(capsys):
    # lib takes the softmax in float32; an exact float64 answer must still pass
    def attend_numpy(scores, values, mask):
        with np.errstate(invalid="ignore"):
            w = _softmax(np.where(mask, scores, -np.inf))
        return np.einsum("bs,bsd->bd", w, values), w

    assert check("ba_attend", attend_numpy)


def test_answers_may_be_lists_numpy_or_tensors(capsys):
    assert check("ba_additive_score", lambda *a: additive_correct(*a).numpy())
    assert check("ba_additive_score", lambda *a: additive_correct(*a).tolist())
    assert check("ba_attend", lambda *a: tuple(t.numpy() for t in attend_correct(*a)))
    assert check("ba_crossings", lambda w: np.int64(crossings_correct(w)))
    assert check("ba_crossings", lambda w: torch.tensor(crossings_correct(w)))


def test_the_seed_000_score_fails_to_run_when_the_sizes_differ(capsys):
    # With all sizes equal the seed's h'ᵀ tanh(…) runs and is named; the message for the first case says so.
    check("ba_additive_score", additive_seed_000)
    assert "for s of shape (3,)" in capsys.readouterr().out
