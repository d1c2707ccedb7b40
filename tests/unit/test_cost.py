"""Tests of lib.cost: exact counts (bytes, FLOPs), the deterministic tensor-memory measurement, the timer."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from lib.attention import MultiHeadAttention, scaled_dot_product_attention
from lib.cost import (
    AttentionCost,
    attention_cost,
    attention_flops,
    attention_weight_bytes,
    median_ms,
    peak_tensor_bytes,
)

# --- attention_weight_bytes ----------------------------------------------------------------------------------


def test_weight_bytes_is_batch_heads_n_squared_times_itemsize():
    assert attention_weight_bytes(1, 8, 4096) == 8 * 4096 * 4096 * 4 == 512 * 2**20
    assert attention_weight_bytes(2, 4, 10, 7) == 2 * 4 * 10 * 7 * 4
    assert attention_weight_bytes(1, 1, 16, dtype=torch.float16) == 16 * 16 * 2
    assert attention_weight_bytes(1, 1, 16, dtype=torch.float64) == 16 * 16 * 8


def test_weight_bytes_equals_the_weights_lib_returns():
    q = torch.randn(2, 3, 5, 4)
    k = torch.randn(2, 3, 9, 4)
    _, w = scaled_dot_product_attention(q, k, k)
    assert attention_weight_bytes(2, 3, 5, 9) == w.numel() * w.element_size()


@pytest.mark.parametrize("args", [(0, 1, 1), (1, -2, 1), (1, 1, 1.5), (True, 1, 1), (1, 1, 4, 0)])
def test_weight_bytes_rejects_bad_sizes(args):
    with pytest.raises(ValueError, match="positive integer"):
        attention_weight_bytes(*args)


def test_weight_bytes_rejects_a_dtype_that_is_not_a_torch_dtype():
    with pytest.raises(ValueError, match=r"torch\.dtype"):
        attention_weight_bytes(1, 1, 4, dtype="float32")


# --- attention_flops -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch, heads, seq_q, seq_k, d_k, d_v", [(1, 4, 32, 32, 16, 16), (2, 2, 5, 9, 8, 3)])
def test_flops_match_torchs_flop_counter_on_lib_attention(batch, heads, seq_q, seq_k, d_k, d_v):
    q = torch.randn(batch, heads, seq_q, d_k)
    k = torch.randn(batch, heads, seq_k, d_k)
    v = torch.randn(batch, heads, seq_k, d_v)
    with FlopCounterMode(display=False) as counter:
        scaled_dot_product_attention(q, k, v)
    assert attention_flops(batch, heads, seq_q, seq_k, d_k, d_v) == counter.get_total_flops()


def test_flops_are_quadratic_in_n_and_linear_in_d_k():
    assert attention_flops(1, 1, 200, 200, 64) == 4 * attention_flops(1, 1, 100, 100, 64)
    assert attention_flops(1, 1, 100, 100, 128) == 2 * attention_flops(1, 1, 100, 100, 64)
    assert attention_flops(1, 8, 512, 512, 64) == 4 * 8 * 512**2 * 64


def test_flops_reject_bad_sizes():
    with pytest.raises(ValueError, match="d_k must be a positive integer"):
        attention_flops(1, 1, 4, 4, 0)


# --- peak_tensor_bytes ---------------------------------------------------------------------------------------


def test_peak_of_one_new_tensor_is_its_size():
    assert peak_tensor_bytes(lambda: torch.empty(1000)) == 4000
    assert peak_tensor_bytes(lambda: torch.zeros(10, 10, dtype=torch.float64)) == 800


def test_views_and_in_place_changes_of_existing_tensors_count_zero():
    x = torch.randn(100, 100)
    assert peak_tensor_bytes(lambda: x.t()) == 0
    assert peak_tensor_bytes(lambda: x[:10]) == 0
    assert peak_tensor_bytes(lambda: x.mul_(1.0)) == 0
    assert peak_tensor_bytes(lambda: x.t().contiguous()) == 40000


def test_freed_tensors_leave_the_count():
    def two_at_a_time():
        a = torch.ones(1000)
        b = a * 2  # a and b alive: 8000 bytes
        del a  # 4000
        c = b * 2  # b and c alive: 8000
        return c

    def three_at_a_time():
        a = torch.ones(1000)
        b = a * 2
        c = b * 2  # all three alive: 12000
        return a, b, c

    assert peak_tensor_bytes(two_at_a_time) == 8000
    assert peak_tensor_bytes(three_at_a_time) == 12000


def test_libs_attention_holds_one_n_by_n_matrix_torchs_fused_kernel_none():
    b, h, n, d = 1, 2, 64, 8
    q, k, v = (torch.randn(b, h, n, d) for _ in range(3))
    weights, output = attention_weight_bytes(b, h, n), b * h * n * d * 4
    with torch.no_grad():
        lib_peak = peak_tensor_bytes(lambda: scaled_dot_product_attention(q, k, v))
        fused_peak = peak_tensor_bytes(lambda: F.scaled_dot_product_attention(q, k, v))
    assert lib_peak == weights + output  # the softmax writes the weights over the scaled scores, then the output
    assert output <= fused_peak < weights  # no n × n tensor: the output (and O(n) statistics)


def test_peak_rejects_a_non_callable():
    with pytest.raises(ValueError, match="function of no arguments"):
        peak_tensor_bytes(torch.ones(3))


# --- median_ms -----------------------------------------------------------------------------------------------


def test_median_ms_calls_each_function_warmup_plus_repeats_times_and_returns_positive_ms():
    counts = {"a": 0, "b": 0}

    def make(name):
        def fn():
            counts[name] += 1
            return sum(range(1000))

        return fn

    ms = median_ms({"a": make("a"), "b": make("b")}, repeats=3, warmup=2)
    assert set(ms) == {"a", "b"} and all(t > 0 for t in ms.values())
    assert counts == {"a": 5, "b": 5}


@pytest.mark.parametrize(
    "calls, kwargs, words",
    [
        ({}, {}, "non-empty"),
        ({"a": 3}, {}, "callable"),
        ({"a": lambda: 0}, {"repeats": 0}, "repeats"),
        ({"a": lambda: 0}, {"warmup": -1}, "warmup"),
    ],
)
def test_median_ms_rejects_bad_arguments(calls, kwargs, words):
    with pytest.raises(ValueError, match=words):
        median_ms(calls, **kwargs)


# --- attention_cost ------------------------------------------------------------------------------------------


def test_attention_cost_rows():
    rows = attention_cost([16, 32], batch=1, heads=2, d_k=8, repeats=1, warmup=0)
    assert [r.seq_len for r in rows] == [16, 32]
    for r in rows:
        assert isinstance(r, AttentionCost)
        assert r.flops == attention_flops(1, 2, r.seq_len, r.seq_len, 8)
        assert r.weight_bytes == attention_weight_bytes(1, 2, r.seq_len)
        assert r.lib_ms > 0 and r.torch_ms > 0
        assert r.lib_peak_bytes == r.weight_bytes + 1 * 2 * r.seq_len * 8 * 4  # weights over the scores + output
        assert r.torch_peak_bytes < r.lib_peak_bytes
        assert set(r.to_dict()) == {
            "seq_len",
            "flops",
            "weight_bytes",
            "lib_ms",
            "torch_ms",
            "lib_peak_bytes",
            "torch_peak_bytes",
        }


def test_attention_cost_can_skip_time_and_memory():
    (row,) = attention_cost([8], heads=1, d_k=4, time_it=False, measure_memory=False)
    assert row.lib_ms is None and row.torch_ms is None and row.lib_peak_bytes is None


def test_attention_cost_rejects_bad_lengths():
    with pytest.raises(ValueError, match="at least one"):
        attention_cost([])
    with pytest.raises(ValueError, match="seq_lens"):
        attention_cost([16, 0], time_it=False)


def test_multihead_attention_weights_match_the_byte_count():
    mha = MultiHeadAttention(32, 4).eval()
    x = torch.randn(3, 10, 32)
    with torch.no_grad():
        _, w = mha(x, x, x)
    assert w.numel() * w.element_size() == attention_weight_bytes(3, 4, 10)
