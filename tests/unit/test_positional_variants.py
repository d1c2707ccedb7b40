"""The position variants a Transformer can be given for the length-extrapolation experiment: a learned table, no
table (positions inside attention), and self-attention with RoPE or ALiBi, as drop-in modules of lib.transformer."""

from __future__ import annotations

import math

import pytest
import torch

from lib.attention import KeyValue, MultiHeadAttention, causal_mask
from lib.decode import greedy_decode
from lib.experiments import transformer_with_positions
from lib.positional import (
    LearnedPositionalEncoding,
    NoPositionalEncoding,
    PositionalEncoding,
    alibi_bias,
    alibi_slopes,
    apply_rotary,
)
from lib.positional_attention import ALiBiMultiHeadAttention, RotaryMultiHeadAttention
from lib.transformer import Transformer, TransformerConfig


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_learned_and_no_positional_encoding_have_the_sinusoidal_interface():
    x = _randn(2, 5, 8)
    learned = LearnedPositionalEncoding(8, max_len=10)
    torch.testing.assert_close(learned(x), x + learned.table[:5])
    torch.testing.assert_close(learned(x[:, :2], offset=3), x[:, :2] + learned.table[3:5])
    assert learned.table.requires_grad and learned.table.std().item() < 0.05
    torch.testing.assert_close(NoPositionalEncoding(8, max_len=10)(x), x)
    for module in (learned, NoPositionalEncoding(8, max_len=10)):
        assert isinstance(module, PositionalEncoding)
        with pytest.raises(AssertionError, match="max_len"):  # inside a model: an assert (entry points check)
            module(x, offset=6)


def _copy(cls, mha):
    other = cls(mha.d_model, mha.num_heads)
    other.load_state_dict(mha.state_dict())
    return other.eval()


def test_rotary_attention_scores_are_the_rotated_dot_products():
    torch.manual_seed(0)
    rope = RotaryMultiHeadAttention(16, 2).eval()
    x = _randn(1, 6, 16, seed=1)
    _, weights = rope(x, x, x, causal_mask(6))
    q = apply_rotary(rope.split_heads(rope.w_q(x)))
    k = apply_rotary(rope.split_heads(rope.w_k(x)))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(8)).masked_fill(~causal_mask(6), float("-inf"))
    torch.testing.assert_close(weights, scores.softmax(-1))
    # the rotation changes the weights (position 0 alone is unrotated)
    _, plain = _copy(MultiHeadAttention, rope)(x, x, x, causal_mask(6))
    assert not torch.allclose(weights[..., 1:, :], plain[..., 1:, :])
    torch.testing.assert_close(weights[..., 0, :], plain[..., 0, :])


@pytest.mark.parametrize("cls", [RotaryMultiHeadAttention, ALiBiMultiHeadAttention])
def test_position_aware_attention_step_by_step_equals_the_full_sequence(cls):
    torch.manual_seed(0)
    attn = cls(16, 2).eval()
    x = _randn(2, 7, 16, seed=2)
    full, _ = attn(x, x, x, causal_mask(7))
    kv = attn.project_key_value(x, x)
    for t in range(7):  # the query at position t against keys 0..t (a key/value cache)
        step_kv = KeyValue(kv.key[:, :, : t + 1], kv.value[:, :, : t + 1])
        out, _ = attn.attend(attn.project_query(x[:, t : t + 1]), step_kv)
        torch.testing.assert_close(out, full[:, t : t + 1], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="seq_q"):
        attn.attend(attn.project_query(x), KeyValue(kv.key[:, :, :3], kv.value[:, :, :3]))


def test_alibi_attention_with_zero_queries_decays_geometrically_with_distance():
    # q = 0: the scores are ALiBi's bias alone, so head h weighs key j ∝ exp(−m_h (i − j)) (Press et al. 2022, §3)
    torch.manual_seed(0)
    alibi = ALiBiMultiHeadAttention(16, 4).eval()
    with torch.no_grad():
        alibi.w_q.weight.zero_()
        alibi.w_q.bias.zero_()
    x = _randn(1, 5, 16, seed=3)
    _, weights = alibi(x, x, x, causal_mask(5))
    expected = alibi_bias(4, 5, 5).masked_fill(~causal_mask(5), float("-inf")).softmax(-1)
    torch.testing.assert_close(weights[0], expected)
    m = alibi_slopes(4)
    ratio = weights[0, :, 4, 4] / weights[0, :, 4, 3]  # the nearest key over the one before it
    torch.testing.assert_close(ratio, torch.exp(m))


def _with_positions(kind: str, seed: int = 0) -> Transformer:
    """A tiny Transformer whose positions are swapped after construction, as the extrapolation experiment's."""
    return transformer_with_positions(TransformerConfig.tiny(40, max_len=32), kind, seed).eval()


@pytest.mark.parametrize("kind", ["learned", "rope", "alibi"])
def test_a_transformer_with_swapped_positions_decodes_the_same_with_and_without_the_cache(kind):
    model = _with_positions(kind)
    src = torch.randint(4, 40, (3, 6), generator=torch.Generator().manual_seed(1))
    cached = greedy_decode(model, src, max_len=12)
    assert cached == greedy_decode(model, src, max_len=12, use_cache=False)
    baseline = greedy_decode(_with_positions("sinusoidal"), src, max_len=12)
    assert cached != baseline  # the positions did change the model


def test_rotary_attention_error_for_odd_d_k():
    with pytest.raises(ValueError, match="d_k"):
        RotaryMultiHeadAttention(6, 2)
