"""Tests of the exercises of the chapter "Multi-head attention": a correct answer passes, typical mistakes are named.

The correct answers are written with ``lib``; ``test_exercises.py`` also collects this module's ``CASES``
(every registered exercise must have test cases).
"""

import math

import torch

from lib.attention import MultiHeadAttention
from lib.exercises import check

# --- answers, correct and wrong ---------------------------------------------------------------------------


def split_heads_correct(x, num_heads):
    return MultiHeadAttention(x.size(-1), num_heads).split_heads(x)


def split_heads_no_transpose(x, num_heads):
    batch, seq, d_model = x.shape
    return x.view(batch, seq, num_heads, d_model // num_heads)


def split_heads_direct_view(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, num_heads, seq, d_model // num_heads)


def split_heads_interleaved(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, d_model // num_heads, num_heads).permute(0, 3, 1, 2)


def d_k_correct(d_model, num_heads):
    if d_model % num_heads:
        raise ValueError("num_heads must divide d_model")
    return d_model // num_heads


def num_parameters_correct(d_model, num_heads, bias):
    return sum(p.numel() for p in MultiHeadAttention(d_model, num_heads, bias=bias).parameters())


def _multihead(x, w_q, w_k, w_v, w_o, num_heads, scale=None, project=True):
    seq, d_model = x.shape
    d_k = d_model // num_heads
    q, k, v = (torch.einsum("sd,dhk->hsk", x, w.view(d_model, num_heads, d_k)) for w in (w_q, w_k, w_v))
    scores = torch.einsum("hqk,hsk->hqs", q, k) / (math.sqrt(d_k) if scale is None else scale)
    heads = torch.einsum("hqs,hsk->hqk", torch.softmax(scores, dim=-1), v)  # (heads, seq, d_k)
    if not project:
        return heads.transpose(0, 1).reshape(seq, d_model)
    return torch.einsum("hqk,hkd->qd", heads, w_o.view(num_heads, d_k, d_model))


def mha_einsum_correct(x, w_q, w_k, w_v, w_o, num_heads):
    return _multihead(x, w_q, w_k, w_v, w_o, num_heads)


def mha_einsum_unscaled(x, w_q, w_k, w_v, w_o, num_heads):
    return _multihead(x, w_q, w_k, w_v, w_o, num_heads, scale=1.0)


def mha_einsum_sqrt_d_model(x, w_q, w_k, w_v, w_o, num_heads):
    return _multihead(x, w_q, w_k, w_v, w_o, num_heads, scale=math.sqrt(x.size(-1)))


def mha_einsum_no_output_projection(x, w_q, w_k, w_v, w_o, num_heads):
    return _multihead(x, w_q, w_k, w_v, w_o, num_heads, project=False)


def mha_einsum_one_head(x, w_q, w_k, w_v, w_o, num_heads):
    return _multihead(x, w_q, w_k, w_v, w_o, 1)


def mha_einsum_softmax_over_queries(x, w_q, w_k, w_v, w_o, num_heads):
    seq, d_model = x.shape
    d_k = d_model // num_heads
    q, k, v = ((x @ w).view(seq, num_heads, d_k).transpose(0, 1) for w in (w_q, w_k, w_v))
    a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-2)
    return (a @ v).transpose(0, 1).reshape(seq, d_model) @ w_o


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "mha_split_heads": (
        split_heads_correct,
        [
            (split_heads_no_transpose, "forgot to transpose"),
            (split_heads_direct_view, "reshaped straight to (batch, heads, seq, d_k)"),
            (split_heads_interleaved, "interleaved"),
            (lambda x, h: split_heads_correct(x, h) * 2, "expected"),
            (lambda x, h: x, "expected (batch, heads, seq, d_k)"),
        ],
    ),
    "mha_d_k": (
        d_k_correct,
        [
            (lambda d, h: d // h**2, "divided by h twice"),
            (lambda d, h: h, "number of heads"),
            (lambda d, h: d * h, "multiplied"),
            (lambda d, h: d // h, "should raise ValueError"),
            (lambda d, h: d / h if d % h == 0 else [][0], "raised IndexError; expected a ValueError"),
            (64, "expected a function"),
        ],
    ),
    "mha_num_parameters": (
        num_parameters_correct,
        [
            (lambda d, h, b: 4 * d * d, "forgot the biases"),
            (lambda d, h, b: 4 * d * d + 4 * d, "counted biases even when bias=False"),
            (lambda d, h, b: 3 * d * d + 3 * d * b, "forgot the output projection W^O"),
            (lambda d, h, b: h * (4 * d * d + 4 * d * b), "full d_model × d_model matrices"),
            (lambda d, h, b: 4 * d * (d // h) + 4 * (d // h) * b, "one head only"),
            (lambda d, h, b: 12345, "Hint: four projections"),
        ],
    ),
    "mha_einsum": (
        mha_einsum_correct,
        [
            (mha_einsum_unscaled, "forgot to divide the scores by √d_k"),
            (mha_einsum_sqrt_d_model, "divided by √d_model"),
            (mha_einsum_softmax_over_queries, "softmax over the queries"),
            (mha_einsum_no_output_projection, "forgot the output projection W^O"),
            (mha_einsum_one_head, "one head over all d_model features"),
            (lambda x, *rest: x[:, :-1], "expected (seq, d_model)"),
        ],
    ),
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


def test_d_k_message_names_seed_001s_slip(capsys):
    check("mha_d_k", lambda d, h: d // h**2)
    out = capsys.readouterr().out
    assert "d_k(512, 8) is 8; expected 64" in out


def test_answers_may_be_lists_numpy_or_tensors(capsys):
    assert check("mha_split_heads", lambda x, h: split_heads_correct(x, h).numpy())
    assert check("mha_split_heads", lambda x, h: split_heads_correct(x, h).tolist())
    assert check("mha_num_parameters", lambda d, h, b: torch.tensor(num_parameters_correct(d, h, b)))
    assert check("mha_einsum", lambda *args: mha_einsum_correct(*args).float())


# --- break it: heads that share their weights, and a layer without W^O ------------------------------------


def _break_layer(share=(), no_wo=False):
    torch.manual_seed(0)
    layer = MultiHeadAttention(64, 4, bias=False).eval()
    x80, x10 = torch.randn(1, 80, 64), torch.randn(1, 10, 64)
    with torch.no_grad():
        for name in share:  # head 0's block of rows, written into every head's block
            w = getattr(layer, name).weight
            w[16:] = w[:16].repeat(3, 1)
    if no_wo:
        layer.w_o = torch.nn.Identity()
    return layer, x80, x10


def shared_measurement(share=("w_q", "w_k", "w_v"), rank_of="output"):
    layer, x, _ = _break_layer(share)
    with torch.no_grad():
        out, weights = layer(x, x, x)
    diff = max((weights[0, h] - weights[0, 0]).abs().max().item() for h in range(4))
    target = {"output": out[0], "weights": weights[0, 0]}[rank_of]
    return diff, int(torch.linalg.matrix_rank(target))


def no_wo_measurement(count_unchanged=False):
    counts = []
    for no_wo in (False, True):
        layer, _, x = _break_layer(no_wo=no_wo)
        with torch.no_grad():
            before = layer(x, x, x)[0]
            layer.w_q.weight[32:48] = 0.0  # head 2 switched off another way: it now averages ...
            layer.w_v.weight[32:48] = 0.0  # ... values that are all zero
            changed = int(((layer(x, x, x)[0] - before).abs().amax(dim=(0, 1)) > 1e-6).sum())
        counts.append(64 - changed if count_unchanged else changed)
    return tuple(counts)


CASES.update(
    {
        "mha_break_shared_heads": (
            shared_measurement(),
            [
                (shared_measurement(share=()), "nothing is shared yet"),
                (shared_measurement(share=("w_q", "w_k")), "not W^V"),
                (shared_measurement(share=("w_v",)), "maps of their own"),
                ((0.0, 17), "bias"),
                (shared_measurement(rank_of="weights"), "number of tokens"),
                ((0.0, 8), "expected a difference of 0"),
                ((0.0,), "two numbers"),
            ],
        ),
        "mha_break_no_wo": (
            no_wo_measurement(),
            [
                (no_wo_measurement()[::-1], "swapped"),
                ((64, 64), "still in the second layer"),
                (no_wo_measurement(count_unchanged=True), "did NOT change"),
                ((16, 16), "both layers"),
                ((0, 0), "nothing changed"),
                ((64, 32), "expected (64, 16)"),
                ((64, 16, 0), "two counts"),
            ],
        ),
    }
)


def test_break_it_counts_and_ranks_are_the_chapter_sizes(capsys):
    assert shared_measurement() == (0.0, 16) and shared_measurement(share=())[1] == 64
    assert no_wo_measurement() == (64, 16)
    assert check("mha_break_no_wo", torch.tensor([64, 16])) and check("mha_break_shared_heads", [1e-7, 16.0])


def test_break_it_checkers_never_call_a_function_answer(capsys):
    def boom():
        raise RuntimeError("should not run")

    def spin():
        while True:
            pass

    for name in ("mha_break_shared_heads", "mha_break_no_wo"):
        for answer in (boom, spin):
            assert check(name, answer) is False
            out = capsys.readouterr().out
            assert out.startswith(f"❌ {name}: ") and "should be numbers" in out
