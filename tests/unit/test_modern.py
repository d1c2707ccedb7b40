"""The modern Transformer's pieces: RoPE and ALiBi (lib.positional), grouped-query attention (lib.attention),
RMSNorm, SwiGLU and the ModernGPT decoder (lib.modern), against torch's references and the papers' properties."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from lib.attention import MultiHeadAttention, causal_mask
from lib.decode import kv_cache_bytes, kv_cache_table
from lib.gpt import GPT, GPTConfig, lm_loss
from lib.modern import (
    ModernGPT,
    ModernGPTConfig,
    RMSNorm,
    SwiGLUFeedForward,
    swiglu_hidden_size,
)
from lib.positional import alibi_bias, alibi_slopes, apply_rotary
from lib.transformer import PositionwiseFeedForward


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# --- RoPE -------------------------------------------------------------------------------------------------------


def test_rotary_dot_product_depends_only_on_the_offset():
    q, k = _randn(16, seed=1, dtype=torch.float64), _randn(16, seed=2, dtype=torch.float64)

    def score(m, n):  # query at position m, key at position n
        qm = apply_rotary(q[None].float(), torch.tensor([m]))[0].double()
        kn = apply_rotary(k[None].float(), torch.tensor([n]))[0].double()
        return float(qm @ kn)

    for offset in (0, 1, 5, -3):
        values = [score(m, m + offset) for m in (3, 10, 25, 40)]
        assert max(values) - min(values) < 1e-4, (offset, values)
    assert abs(score(4, 9) - score(4, 4)) > 1e-2  # but it does depend on the offset


def test_rotary_preserves_norms_and_position_zero_is_identity():
    x = _randn(2, 3, 7, 8)
    y = apply_rotary(x)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[..., 0, :], x[..., 0, :])  # position 0: angle 0
    assert not torch.allclose(y[..., 1:, :], x[..., 1:, :])


def test_rotary_pairs_neighbouring_features_with_the_papers_angles():
    # d = 4: pair (0, 1) turns by m·1, pair (2, 3) by m·base^(-1/2) = m/100 (RoFormer, Eq. 34)
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0]]).repeat(3, 1)
    y = apply_rotary(x, torch.tensor([0, 1, 2]))
    for m in range(3):
        expected = [math.cos(m), math.sin(m), math.cos(m / 100), math.sin(m / 100)]
        torch.testing.assert_close(y[m], torch.tensor(expected))


def test_rotary_positions_argument_equals_slicing_a_longer_sequence():
    x = _randn(1, 2, 10, 8)
    full = apply_rotary(x)
    torch.testing.assert_close(apply_rotary(x[:, :, 6:], torch.arange(6, 10)), full[:, :, 6:])
    torch.testing.assert_close(apply_rotary(x, torch.arange(10)), full)
    # a different base changes the rotation
    assert not torch.allclose(apply_rotary(x, base=100.0), full)


def test_rotary_errors():
    with pytest.raises(ValueError, match="even"):
        apply_rotary(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="positions"):
        apply_rotary(torch.zeros(3, 4), torch.arange(4))
    with pytest.raises(TypeError, match="positions"):
        apply_rotary(torch.zeros(3, 4), [0, 1, 2])
    with pytest.raises(ValueError, match="x"):
        apply_rotary(torch.zeros(4, dtype=torch.float32))
    with pytest.raises(ValueError, match="base"):
        apply_rotary(torch.zeros(3, 4), base=-1.0)


# --- ALiBi ------------------------------------------------------------------------------------------------------


def test_alibi_slopes_for_eight_heads_are_one_half_to_one_over_256():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0**-i for i in range(1, 9)]))
    # 16 heads: the geometric sequence starting at 2^(-1/2), ratio 2^(-1/2) (Press et al. 2022, §3)
    torch.testing.assert_close(alibi_slopes(16), torch.tensor([2.0 ** (-0.5 * i) for i in range(1, 17)]))


def test_alibi_slopes_for_other_head_counts_interleave():
    # 6 heads: the 4 slopes of 4 heads, then every other slope of 8 heads: 1/2, 1/8
    torch.testing.assert_close(alibi_slopes(6), torch.tensor([1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]))
    assert alibi_slopes(1).tolist() == [2.0**-8]


def test_alibi_bias_values_and_shapes():
    bias = alibi_bias(4, 5, 5)
    assert bias.shape == (4, 5, 5)
    slopes = alibi_slopes(4)
    for h in range(4):
        for i in range(5):
            for j in range(i + 1):  # the causal part: m · (j − i)
                assert bias[h, i, j].item() == pytest.approx(slopes[h].item() * (j - i))
    torch.testing.assert_close(bias, bias.transpose(1, 2))  # symmetric in the distance
    # cached decoding: the last query row of the full bias
    torch.testing.assert_close(alibi_bias(4, 1, 5), bias[:, -1:])


def test_alibi_errors():
    with pytest.raises(ValueError, match="num_heads"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match="num_heads"):
        alibi_bias(2.0, 3, 3)
    with pytest.raises(ValueError, match="seq_q"):
        alibi_bias(2, 4, 3)


# --- grouped-query attention ----------------------------------------------------------------------------------


def GroupedQueryAttention(d_model: int, num_heads: int, num_kv_heads: int, **kwargs) -> MultiHeadAttention:
    """Grouped-query attention is multi-head attention with fewer key/value heads."""
    return MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, **kwargs)


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_gqa_equals_torch_sdpa_with_grouped_heads(num_kv_heads):
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(32, 4, num_kv_heads).eval()
    x = _randn(2, 6, 32, seed=4)
    out, weights = gqa(x, x, x, causal_mask(6))
    q = gqa.project_query(x)
    kv = gqa.project_key_value(x, x)
    assert kv.key.shape == (2, num_kv_heads, 6, 8)
    try:
        ref = F.scaled_dot_product_attention(q, kv.key, kv.value, is_causal=True, enable_gqa=True)
    except TypeError:  # a torch before 2.5: repeat the key/value heads by hand
        rep = 4 // num_kv_heads
        key, value = kv.key.repeat_interleave(rep, 1), kv.value.repeat_interleave(rep, 1)
        ref = F.scaled_dot_product_attention(q, key, value, is_causal=True)
    torch.testing.assert_close(out, gqa.w_o(ref.transpose(1, 2).reshape(2, 6, 32)))
    assert weights.shape == (2, 4, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 6))


def test_multi_query_attention_shares_one_key_value_head():
    gqa = GroupedQueryAttention(32, 4, 1, bias=False)
    mha = MultiHeadAttention(32, 4, bias=False)
    n_gqa, n_mha = (sum(p.numel() for p in m.parameters()) for m in (gqa, mha))
    assert n_mha - n_gqa == 2 * 32 * (32 - 8)  # W^K and W^V shrink from d_model to d_k outputs
    # query heads 0..3 read the same keys: the heads differ only through their queries
    x = _randn(1, 5, 32, seed=5)
    kv = gqa.project_key_value(x, x)
    assert kv.key.shape == (1, 1, 5, 8)


def test_gqa_errors():
    with pytest.raises(ValueError, match="num_kv_heads"):
        GroupedQueryAttention(32, 4, 3)
    with pytest.raises(ValueError, match="num_heads"):
        GroupedQueryAttention(30, 4, 2)
    with pytest.raises(TypeError, match="num_kv_heads"):
        GroupedQueryAttention(32, 4, 2.0)
    # inside the model, invariants are asserts with a message (the models' entry points check user input)
    gqa = GroupedQueryAttention(32, 4, 2)
    with pytest.raises(AssertionError, match="d_model"):
        gqa(torch.zeros(1, 3, 16), torch.zeros(1, 3, 32), torch.zeros(1, 3, 32))
    with pytest.raises(AssertionError, match="mask"):
        gqa(torch.zeros(1, 3, 32), torch.zeros(1, 3, 32), torch.zeros(1, 3, 32), torch.ones(3, 3))
    with pytest.raises(AssertionError, match="batch"):
        gqa.attend(torch.zeros(1, 4, 3, 8), gqa.project_key_value(torch.zeros(2, 3, 32), torch.zeros(2, 3, 32)))


# --- RMSNorm and SwiGLU ------------------------------------------------------------------------------------------


def test_rmsnorm_equals_torch():
    norm = RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(_randn(16, seed=6))
    ref = torch.nn.RMSNorm(16, eps=1e-6)
    ref.load_state_dict(norm.state_dict())
    x = _randn(3, 5, 16, seed=7) * 4 + 1
    torch.testing.assert_close(norm(x), ref(x))
    # with gain 1 the output's root mean square is 1
    plain = RMSNorm(16)
    torch.testing.assert_close(plain(x).pow(2).mean(-1), torch.ones(3, 5), atol=1e-4, rtol=0)


def test_rmsnorm_errors():
    with pytest.raises(ValueError, match="eps"):
        RMSNorm(8, eps=0.0)
    with pytest.raises(TypeError, match="d_model"):
        RMSNorm("8")


@pytest.mark.parametrize("d_model, d_ff", [(128, 512), (512, 2048), (64, 100), (32, 64)])
def test_swiglu_matches_the_relu_ffns_parameter_count(d_model, d_ff):
    relu = sum(p.numel() for p in PositionwiseFeedForward(d_model, d_ff).parameters())
    swiglu = sum(p.numel() for p in SwiGLUFeedForward(d_model, d_ff).parameters())
    assert abs(swiglu - relu) <= 1.5 * d_model  # within half a hidden unit (3·d_model weights)
    assert SwiGLUFeedForward(d_model, d_ff).hidden == swiglu_hidden_size(d_model, d_ff)
    assert swiglu_hidden_size(128, 512) == 343  # (2·128·512 + 512 + 128) / 384 = 343 exactly


def test_swiglu_computes_the_gated_product():
    ffn = SwiGLUFeedForward(8, 16, hidden=5)
    x = _randn(2, 3, 8, seed=8)
    w, v, w2 = ffn.w.weight, ffn.v.weight, ffn.w2.weight
    gate = x @ w.T
    expected = ((gate * torch.sigmoid(gate)) * (x @ v.T)) @ w2.T  # Swish_1(xW) ⊙ xV, then W2
    torch.testing.assert_close(ffn(x), expected)


# --- ModernGPT --------------------------------------------------------------------------------------------------

V = 50


def _modern(**overrides):
    torch.manual_seed(0)
    return ModernGPT(ModernGPTConfig.tiny(V, dropout=0.0, **overrides)).eval()


@pytest.mark.parametrize("vocab, max_len", [(8000, 48), (8000, 40), (1000, 48)])
def test_tiny_preset_is_parameter_matched_to_gpt_tiny(vocab, max_len):
    gpt = GPT(GPTConfig.tiny(vocab, max_len=max_len)).num_parameters()
    modern = ModernGPT(ModernGPTConfig.tiny(vocab, max_len=max_len)).num_parameters()
    assert abs(modern - gpt) / gpt < 0.02
    # the blocks alone (no token table) are matched too
    table = vocab * 128
    assert abs((modern - table) - (gpt - table)) / (gpt - table) < 0.02


def test_modern_gpt_has_gpts_interface_and_is_causal():
    model = _modern()
    ids = torch.randint(3, V, (2, 10), generator=torch.Generator().manual_seed(0))
    logits = model(ids)
    assert logits.shape == (2, 10, V)
    edited = ids.clone()
    edited[:, 6:] = 5
    torch.testing.assert_close(model(edited)[:, :6], logits[:, :6])
    logits2, maps = model(ids, return_attention=True)
    torch.testing.assert_close(logits2, logits)
    assert maps.kinds() == ["decoder"] and len(maps.decoder) == 2
    w = maps.decoder[0]
    assert w.shape == (2, 4, 10, 10)
    assert torch.all(w.triu(1) == 0)
    loss = lm_loss(logits, ids)
    assert abs(loss.item() - math.log(V)) < 0.5  # an untrained model is close to uniform


def test_modern_gpt_decodes_with_a_cache_exactly_as_without():
    model = _modern()
    ids = torch.randint(3, V, (2, 9), generator=torch.Generator().manual_seed(1))
    full = model(ids)
    cache = model.new_cache()
    steps = [model(ids[:, :4], cache=cache, offset=0)]
    for t in range(4, 9):
        steps.append(model(ids[:, t : t + 1], cache=cache, offset=t))
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    # the cache holds num_kv_heads heads: the formula of lib.decode.kv_cache_bytes
    cached = sum(c.self_kv.key.nbytes + c.self_kv.value.nbytes for c in cache)
    c = model.config
    assert cached == kv_cache_bytes(c.num_layers, c.num_kv_heads, c.d_k, 9, batch=2, bytes_per_value=4)
    assert cached == kv_cache_table(c.num_layers, c.num_heads, c.d_model, 9, c.num_kv_heads, 2, 4)["GQA"]


def test_modern_gpt_trains_with_the_lm_loss():
    model = _modern(d_model=32, ffn_hidden=48)
    model.train()
    ids = torch.randint(3, 10, (8, 12), generator=torch.Generator().manual_seed(2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(20):
        loss = lm_loss(model(ids), ids)
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.7 * first


def test_modern_config_and_model_errors():
    with pytest.raises(ValueError, match="num_kv_heads"):
        ModernGPTConfig(V, num_heads=4, num_kv_heads=3)
    with pytest.raises(ValueError, match="even"):
        ModernGPTConfig(V, d_model=12, num_heads=4, num_kv_heads=1)
    with pytest.raises(TypeError, match="ffn_hidden"):
        ModernGPTConfig(V, ffn_hidden=3.5)
    with pytest.raises(TypeError, match="ModernGPTConfig"):
        ModernGPT(GPTConfig.tiny(V))
    model = _modern()
    with pytest.raises(ValueError, match="max_len"):
        model(torch.ones(1, 49, dtype=torch.long))
    with pytest.raises(ValueError, match="ids"):
        model(torch.ones(1, 4))
    with pytest.raises(ValueError, match="offset"):
        model(torch.ones(1, 1, dtype=torch.long), cache=model.new_cache(), offset=3)
    assert ModernGPTConfig.preset("tiny", V) == ModernGPTConfig.tiny(V)
    assert ModernGPTConfig.from_dict(ModernGPTConfig.tiny(V).to_dict()) == ModernGPTConfig.tiny(V)


def test_kv_cache_table_for_llama2_70b():
    c = ModernGPTConfig.llama2_70b()
    table = kv_cache_table(c.num_layers, c.num_heads, c.d_model, 4096, c.num_kv_heads, bytes_per_value=2)
    # 2 · 80 layers · 8 heads · 128 · 4096 positions · 2 bytes = 1.34 GB; MHA 8× that, MQA 1/8
    assert table["GQA"] == 2 * 80 * 8 * 128 * 4096 * 2 == 1_342_177_280
    assert table["MHA"] == 8 * table["GQA"] and table["GQA"] == 8 * table["MQA"]
