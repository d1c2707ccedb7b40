"""lib.attention against torch's reference implementations, plus its invariants and errors."""

import math

import pytest
import torch
import torch.nn.functional as F

from lib.attention import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention


def _qkv(batch=2, heads=3, seq_q=5, seq_k=7, d_k=8, d_v=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(batch, heads, seq_q, d_k, generator=g),
        torch.randn(batch, heads, seq_k, d_k, generator=g),
        torch.randn(batch, heads, seq_k, d_v, generator=g),
    )


def test_sdpa_equals_torch_without_mask():
    q, k, v = _qkv()
    out, w = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    assert w.shape == (2, 3, 5, 7)


@pytest.mark.parametrize("kind", ["padding", "causal", "random"])
def test_sdpa_equals_torch_with_mask(kind):
    q, k, v = _qkv(seq_q=6, seq_k=6)
    if kind == "padding":
        mask = padding_mask(torch.tensor([6, 3]))
    elif kind == "causal":
        mask = causal_mask(6)
    else:
        mask = torch.rand(2, 3, 6, 6, generator=torch.Generator().manual_seed(1)) > 0.5
        mask[..., 0] = True  # every query keeps at least one key
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_weights_are_a_distribution_and_masked_keys_get_exactly_zero():
    q, k, v = _qkv(seq_q=4, seq_k=4)
    mask = padding_mask(torch.tensor([4, 2]))
    _, w = scaled_dot_product_attention(q, k, v, mask)
    assert (w >= 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 4))
    assert (w[1, :, :, 2:] == 0).all()
    assert (w[0] > 0).all()


def test_fully_masked_row_gives_zeros_not_nan():
    q, k, v = _qkv(batch=1, heads=1, seq_q=2, seq_k=3)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any()
    assert (w[0, 0, 1] == 0).all() and (out[0, 0, 1] == 0).all()


def test_autograd_and_in_place_paths_agree_and_gradients_match_torch():
    # Without autograd the mask and the softmax overwrite the scores in place; with it, each step writes a new
    # tensor. Both must give the same output and weights, and the autograd path torch's gradients.
    q, k, v = _qkv(seq_q=4, seq_k=4)
    mask = padding_mask(torch.tensor([4, 2])).expand(2, 3, 4, 4).clone()
    mask[0, 1, 2] = False  # one query row with no allowed key
    before = [t.clone() for t in (q, k, v, mask)]
    with torch.no_grad():
        out_ip, w_ip = scaled_dot_product_attention(q, k, v, mask)
    for t, b in zip((q, k, v, mask), before):
        assert torch.equal(t, b)  # the inputs and the mask are left as they were
    q_, k_, v_ = (t.clone().requires_grad_() for t in (q, k, v))
    out_ag, w_ag = scaled_dot_product_attention(q_, k_, v_, mask)
    assert w_ag.requires_grad and not w_ip.requires_grad
    torch.testing.assert_close(out_ip, out_ag.detach())
    torch.testing.assert_close(w_ip, w_ag.detach())
    assert (w_ip[0, 1, 2] == 0).all() and (w_ip[1, ..., 2:] == 0).all()
    # gradients: against torch's fused attention on the rows that have a key (its fully masked row is NaN)
    keep = mask.any(-1, keepdim=True)
    out_ag.masked_fill(~keep, 0.0).square().sum().backward()
    q_t, k_t, v_t = (t.clone().requires_grad_() for t in (q, k, v))
    F.scaled_dot_product_attention(q_t, k_t, v_t, attn_mask=mask).masked_fill(~keep, 0.0).square().sum().backward()
    for mine, ref in ((q_, q_t), (k_, k_t), (v_, v_t)):
        torch.testing.assert_close(mine.grad, torch.nan_to_num(ref.grad))


def test_without_autograd_one_score_matrix_is_alive():
    from lib.cost import peak_tensor_bytes

    q, k, v = _qkv(batch=1, heads=2, seq_q=16, seq_k=16, d_k=8, d_v=8)
    n_by_n, output = 2 * 16 * 16 * 4, 2 * 16 * 8 * 4
    with torch.no_grad():
        assert peak_tensor_bytes(lambda: scaled_dot_product_attention(q, k, v)) == n_by_n + output
    q.requires_grad_()
    # with autograd the scores and the weights are two tensors
    assert peak_tensor_bytes(lambda: scaled_dot_product_attention(q, k, v)) >= 2 * n_by_n + output


def test_scaling_by_sqrt_dk_matches_hand_computation():
    q = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    k = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    v = torch.tensor([[1.0], [0.0]])
    _, w = scaled_dot_product_attention(q, k, v)
    s = 2 / math.sqrt(4)  # q·k1 / sqrt(d_k); q·k2 = 0
    expected = math.exp(s) / (math.exp(s) + 1)
    assert w[0, 0].item() == pytest.approx(expected)


def test_causal_mask_shape_and_content():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    assert m.tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, False],
        [True, True, True, True],
    ]


def test_padding_mask_from_tokens_and_lengths_agree():
    tokens = torch.tensor([[5, 6, 7, 0], [8, 0, 0, 0]])
    a = padding_mask(tokens, pad_id=0)
    b = padding_mask(torch.tensor([3, 1]), max_len=4)
    assert a.shape == (2, 1, 1, 4)
    assert torch.equal(a, b)


def _copy_into_torch(mha: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(mha.d_model, mha.num_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.w_q.weight, mha.w_k.weight, mha.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([mha.w_q.bias, mha.w_k.bias, mha.w_v.bias]))
        ref.out_proj.weight.copy_(mha.w_o.weight)
        ref.out_proj.bias.copy_(mha.w_o.bias)
    return ref


@pytest.mark.parametrize("fused", [False, True])
def test_multihead_equals_torch_multiheadattention(fused):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, fused=fused).eval()
    ref = _copy_into_torch(mha).eval()
    x = torch.randn(2, 5, 16)
    mem = torch.randn(2, 7, 16)
    lengths = torch.tensor([7, 4])
    ours, w = mha(x, mem, mem, padding_mask(lengths), return_attention=not fused)
    # torch's key_padding_mask uses the opposite convention: True = ignore.
    theirs, w_ref = ref(x, mem, mem, key_padding_mask=~padding_mask(lengths)[:, 0, 0], average_attn_weights=False)
    torch.testing.assert_close(ours, theirs)
    if not fused:
        torch.testing.assert_close(w, w_ref)
    # causal self-attention
    ours, _ = mha(x, x, x, causal_mask(5))
    theirs, _ = ref(x, x, x, attn_mask=~causal_mask(5))
    torch.testing.assert_close(ours, theirs)


def test_self_attention_without_positions_is_permutation_equivariant():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2).eval()
    x = torch.randn(1, 6, 16)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    out, _ = mha(x, x, x)
    out_perm, _ = mha(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm])


def test_parameter_count_does_not_depend_on_heads():
    counts = {h: sum(p.numel() for p in MultiHeadAttention(64, h).parameters()) for h in (1, 2, 4, 8)}
    assert len(set(counts.values())) == 1 and counts[1] == 4 * (64 * 64 + 64)


# --- bad input -----------------------------------------------------------------------------------


def test_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)


def test_core_invariants_are_asserts_with_a_message():
    # the core trusts its callers (the models' entry points check user input); its invariants are asserts that
    # name what is wrong, not a traceback from deep inside torch
    q, k, v = _qkv()
    with pytest.raises(AssertionError, match="d_k"):
        scaled_dot_product_attention(q, k[..., :-1], v)
    with pytest.raises(AssertionError, match="bool"):
        scaled_dot_product_attention(q, k, v, torch.ones(5, 7))
    mha = MultiHeadAttention(8, 2, fused=True)
    x = torch.randn(2, 5, 8)
    with pytest.raises(AssertionError, match="bool"):
        mha(x, x, x, torch.ones(5, 5), return_attention=False)
    with pytest.raises(AssertionError, match="d_model=8"):
        mha(torch.randn(2, 3, 7), torch.randn(2, 3, 8), torch.randn(2, 3, 8))
    with pytest.raises(AssertionError, match="batch"):
        mha(torch.randn(2, 3, 8), torch.randn(3, 3, 8), torch.randn(3, 3, 8), return_attention=False)
    with pytest.raises(AssertionError, match="pad_id"):
        padding_mask(torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="max_len"):  # a user's value: a named error
        padding_mask(torch.tensor([5]), max_len=3)
    with pytest.raises(AssertionError, match="seq_len"):
        causal_mask(0)
