"""lib.efficient: each efficient attention against full attention (lib's and torch's), its invariants and errors."""

import math

import pytest
import torch
import torch.nn.functional as F

from lib.attention import causal_mask, scaled_dot_product_attention
from lib.cost import attention_methods, crossover, scaling_cost
from lib.efficient import (
    elu_feature_map,
    linear_attention,
    linear_attention_quadratic,
    lsh_attention,
    lsh_hash,
    lsh_mask,
    lsh_rotations,
    performer_attention,
    performer_features,
    random_projection,
    sliding_window_attention,
    sliding_window_mask,
)


def _qkv(batch=2, heads=3, n=24, d_k=8, d_v=6, seed=0, dtype=torch.float64, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (
        scale * torch.randn(batch, heads, n, d_k, generator=g, dtype=dtype),
        scale * torch.randn(batch, heads, n, d_k, generator=g, dtype=dtype),
        torch.randn(batch, heads, n, d_v, generator=g, dtype=dtype),
    )


def _shared_keys(q):
    """Reformer's shared-QK keys: the queries at unit length."""
    return q / q.norm(dim=-1, keepdim=True)


def _future_changed(x, t):
    """A copy of x whose positions after t are replaced by other random numbers."""
    y = x.clone()
    y[..., t + 1 :, :] = torch.randn(
        y[..., t + 1 :, :].shape, generator=torch.Generator().manual_seed(99), dtype=x.dtype
    )
    return y


# --- sliding window -------------------------------------------------------------------------------


def test_sliding_window_mask_is_a_band():
    m = sliding_window_mask(6, 1)
    expected = torch.tensor([[abs(i - j) <= 1 for j in range(6)] for i in range(6)])
    assert torch.equal(m, expected) and m.dtype == torch.bool
    assert torch.equal(
        sliding_window_mask(6, 2, causal=True), torch.tensor([[0 <= i - j <= 2 for j in range(6)] for i in range(6)])
    )


def test_sliding_window_mask_global_tokens_see_and_are_seen_by_all():
    m = sliding_window_mask(10, 1, global_tokens=[0, 7])
    assert m[0].all() and m[:, 0].all() and m[7].all() and m[:, 7].all()
    assert not m[3, 9] and m[3, 4]
    c = sliding_window_mask(10, 1, global_tokens=[0, 7], causal=True)
    assert torch.equal(c, m & causal_mask(10))


@pytest.mark.parametrize("window", [1, 2, 5, 11])
@pytest.mark.parametrize("global_tokens", [None, [0], [0, 9, 23]])
@pytest.mark.parametrize("causal", [False, True])
def test_sliding_window_equals_full_attention_with_its_mask(window, global_tokens, causal):
    q, k, v = _qkv()
    out, weights = sliding_window_attention(q, k, v, window, global_tokens, causal)
    mask = sliding_window_mask(24, window, global_tokens, causal)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v, mask)[0])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert weights is None


@pytest.mark.parametrize("block_size", [1, 5, 7, 24, 100])
def test_sliding_window_any_block_size_and_length(block_size):
    q, k, v = _qkv(n=23)  # 23: not a multiple of the block size, the last block is padded
    out, _ = sliding_window_attention(q, k, v, 3, [4], block_size=block_size)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v, sliding_window_mask(23, 3, [4]))[0])


@pytest.mark.parametrize("window", [23, 24, 1000])
def test_sliding_window_wider_than_the_sequence_is_full_attention(window):
    q, k, v = _qkv()
    out, _ = sliding_window_attention(q, k, v, window)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v)[0])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    causal, _ = sliding_window_attention(q, k, v, window, causal=True)
    torch.testing.assert_close(causal, F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_sliding_window_one_position_and_float32():
    q, k, v = _qkv(n=1)
    torch.testing.assert_close(sliding_window_attention(q, k, v, 4)[0], v)
    q, k, v = _qkv(dtype=torch.float32)
    torch.testing.assert_close(
        sliding_window_attention(q, k, v, 3)[0],
        F.scaled_dot_product_attention(q, k, v, attn_mask=sliding_window_mask(24, 3)),
    )


def test_sliding_window_memory_grows_linearly_not_quadratically():
    from lib.cost import peak_tensor_bytes

    def peak(n):
        q, k, v = _qkv(batch=1, heads=1, n=n, d_k=8, d_v=8, dtype=torch.float32)
        with torch.no_grad():
            return peak_tensor_bytes(lambda: sliding_window_attention(q, k, v, 4, block_size=8))

    small, large = peak(512), peak(2048)
    assert 3.5 < large / small < 4.5  # 4 × longer, 4 × the memory (full attention: 16 ×)
    assert large < 2048 * 2048 * 4 / 8  # far below one n × n float32 matrix


def test_sliding_window_no_future_leakage():
    q, k, v = _qkv()
    t = 10
    out, _ = sliding_window_attention(q, k, v, 3, [2, 15], causal=True)
    out2, _ = sliding_window_attention(q, _future_changed(k, t), _future_changed(v, t), 3, [2, 15], causal=True)
    torch.testing.assert_close(out[..., : t + 1, :], out2[..., : t + 1, :])
    assert not torch.allclose(out[..., t + 1 :, :], out2[..., t + 1 :, :])


def test_global_tokens_see_everything():
    q, k, v = _qkv()
    out, _ = sliding_window_attention(q, k, v, 1, global_tokens=[0, 12])
    full = scaled_dot_product_attention(q, k, v)[0]
    torch.testing.assert_close(out[..., [0, 12], :], full[..., [0, 12], :])
    # a non-global token far away from both changes when a global token's value changes ...
    v2 = v.clone()
    v2[..., 12, :] += 1.0
    out2, _ = sliding_window_attention(q, k, v2, 1, global_tokens=[0, 12])
    assert not torch.allclose(out[..., 20, :], out2[..., 20, :])
    # ... but not when a far-away non-global token's value changes
    v3 = v.clone()
    v3[..., 5, :] += 1.0
    out3, _ = sliding_window_attention(q, k, v3, 1, global_tokens=[0, 12])
    torch.testing.assert_close(out[..., 20, :], out3[..., 20, :])


# --- linear attention ------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("chunk_size", [1, 5, 64])
def test_linear_attention_equals_its_quadratic_form(causal, chunk_size):
    q, k, v = _qkv(n=23)
    out, weights = linear_attention(q, k, v, causal=causal, chunk_size=chunk_size)
    ref, w = linear_attention_quadratic(q, k, v, causal=causal)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-12)
    assert weights is None and w.shape == (2, 3, 23, 23)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 23, dtype=w.dtype))
    assert (w >= 0).all()
    if causal:
        assert (w.triu(1) == 0).all()


def test_linear_attention_float32_and_cross_attention():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 2, 5, 8, generator=g)
    k = torch.randn(2, 2, 9, 8, generator=g)
    v = torch.randn(2, 2, 9, 4, generator=g)
    out, _ = linear_attention(q, k, v)
    torch.testing.assert_close(out, linear_attention_quadratic(q, k, v)[0], rtol=1e-5, atol=1e-6)
    assert out.shape == (2, 2, 5, 4)


def test_linear_attention_by_hand():
    # φ = elu + 1 written out: V' = φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1), Katharopoulos et al. 2020, Eq. 5
    q, k, v = _qkv(batch=1, heads=1, n=7)
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    expected = (fq @ (fk.transpose(-1, -2) @ v)) / (fq @ fk.sum(-2).unsqueeze(-1))
    torch.testing.assert_close(linear_attention(q, k, v)[0], expected)
    torch.testing.assert_close(elu_feature_map(torch.tensor([-1.0, 0.0, 2.0])), torch.tensor([math.exp(-1), 1.0, 3.0]))


def test_linear_attention_with_a_separable_exponential_kernel_is_softmax_attention():
    # φ = exp on 1-D queries and keys: φ(q)·φ(k) = exp(q + k), a softmax kernel on the scores q_i + k_j, so
    # linear attention must give softmax over j of (q_i + k_j) = softmax over j of k_j, for every query.
    q, k, v = _qkv(n=9, d_k=1)
    out, _ = linear_attention(q, k, v, feature_map=torch.exp)
    scores = q + k.transpose(-1, -2)  # (batch, heads, n, n): q_i + k_j
    torch.testing.assert_close(out, torch.softmax(scores, dim=-1) @ v)
    torch.testing.assert_close(out, (torch.softmax(k[..., 0], dim=-1).unsqueeze(-2) @ v).expand_as(out))


@pytest.mark.parametrize("fn", ["linear", "performer"])
def test_causal_linear_and_performer_have_no_future_leakage(fn):
    q, k, v = _qkv(n=20, scale=0.5)
    t = 8

    def run(q, k, v):
        if fn == "linear":
            return linear_attention(q, k, v, causal=True, chunk_size=3)[0]
        return performer_attention(q, k, v, 32, causal=True, chunk_size=3)[0]

    out = run(q, k, v)
    out2 = run(_future_changed(q, t), _future_changed(k, t), _future_changed(v, t))
    torch.testing.assert_close(out[..., : t + 1, :], out2[..., : t + 1, :], rtol=1e-12, atol=1e-12)
    assert not torch.allclose(out[..., t + 1 :, :], out2[..., t + 1 :, :])


# --- Performer -------------------------------------------------------------------------------------


def test_random_projection_is_seeded_orthogonal_in_blocks_and_gaussian_sized():
    w = random_projection(20, 8, seed=1)
    assert w.shape == (20, 8) and w.dtype == torch.float32
    torch.testing.assert_close(w, random_projection(20, 8, seed=1))
    assert not torch.allclose(w, random_projection(20, 8, seed=2))
    block = random_projection(8, 8, seed=1, dtype=torch.float64)
    unit = block / block.norm(dim=1, keepdim=True)
    torch.testing.assert_close(unit @ unit.T, torch.eye(8, dtype=torch.float64))
    iid = random_projection(4000, 8, seed=0, orthogonal=False, dtype=torch.float64)
    assert abs(iid.mean().item()) < 0.02 and abs(iid.var().item() - 1) < 0.03
    orf = random_projection(4000, 8, seed=0, dtype=torch.float64)
    assert abs((orf**2).sum(1).mean().item() - 8) < 0.3  # E‖ω‖² = d_k, as for Gaussian rows


def test_random_projection_returns_a_copy():
    w = random_projection(16, 4, seed=5, dtype=torch.float64)
    w.zero_()
    assert random_projection(16, 4, seed=5, dtype=torch.float64).abs().sum() > 0


def test_performer_features_estimate_the_exponential_kernel_without_bias():
    # Lemma 1: E[φ(x)·φ(y)] = exp(xᵀy); with m = 2**16 independent features the estimate is within a few %.
    g = torch.Generator().manual_seed(0)
    x = 0.3 * torch.randn(6, 8, generator=g, dtype=torch.float64)
    y = 0.3 * torch.randn(5, 8, generator=g, dtype=torch.float64)
    w = random_projection(2**16, 8, seed=0, orthogonal=False, dtype=torch.float64)
    fx, fy = performer_features(x, w), performer_features(y, w)
    assert (fx > 0).all() and fx.shape == (6, 2**16)
    ratio = (fx @ fy.T) / torch.exp(x @ y.T)
    assert abs(ratio.mean().item() - 1) < 0.02 and (ratio - 1).abs().max() < 0.06


def _performer_error(m, seeds=range(8)):
    q, k, v = _qkv(batch=1, heads=2, n=64, d_k=16, d_v=8, scale=0.5, dtype=torch.float32)
    exact = scaled_dot_product_attention(q, k, v)[0]
    errors = [((performer_attention(q, k, v, m, seed=s)[0] - exact).norm() / exact.norm()).item() for s in seeds]
    return sum(errors) / len(errors)


def test_performer_error_decreases_with_the_number_of_features():
    e16, e64, e256, e1024 = (_performer_error(m) for m in (16, 64, 256, 1024))
    assert e16 > e64 > e256 > e1024
    assert e1024 < 0.4 * e16  # error ∝ 1/√m would give 0.125
    assert e1024 < 0.15


def test_performer_causal_approximates_causal_softmax():
    q, k, v = _qkv(batch=1, heads=2, n=64, d_k=16, d_v=8, scale=0.5, dtype=torch.float32)
    exact = scaled_dot_product_attention(q, k, v, causal_mask(64))[0]
    approx = performer_attention(q, k, v, 1024, causal=True)[0]
    assert ((approx - exact).norm() / exact.norm()).item() < 0.15


def test_performer_is_linear_attention_with_its_features():
    q, k, v = _qkv(n=10, d_k=4, scale=0.5)
    w = random_projection(32, 4, seed=7, dtype=torch.float64)

    def phi(x):
        return performer_features(x * 4**-0.25, w)

    for causal in (False, True):
        torch.testing.assert_close(
            performer_attention(q, k, v, 32, seed=7, causal=causal)[0],
            linear_attention_quadratic(q, k, v, feature_map=phi, causal=causal)[0],
        )


# --- LSH (Reformer) --------------------------------------------------------------------------------


@pytest.mark.parametrize("num_hashes", [1, 3])
def test_lsh_with_one_bucket_is_full_attention_with_shared_qk(num_hashes):
    q, _, v = _qkv()
    out, weights = lsh_attention(q, None, v, num_buckets=1, num_hashes=num_hashes)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, _shared_keys(q), v)[0])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, _shared_keys(q), v))
    assert weights is None
    torch.testing.assert_close(lsh_attention(q, q, v, 1)[0], out)  # key=query is accepted


@pytest.mark.parametrize(
    "num_buckets, num_hashes, bucket_size, causal",
    [
        (2, 1, None, False),
        (4, 1, None, False),
        (8, 2, None, True),
        (4, 3, 4, False),
        (6, 4, 6, True),
        (2, 2, 12, False),
    ],
)
def test_lsh_equals_full_attention_over_its_mask(num_buckets, num_hashes, bucket_size, causal):
    q, _, v = _qkv()
    out, _ = lsh_attention(q, None, v, num_buckets, num_hashes, bucket_size, seed=3, causal=causal)
    mask = lsh_mask(q, num_buckets, num_hashes, bucket_size, seed=3, causal=causal)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, _shared_keys(q), v, mask)[0])
    assert mask.diagonal(dim1=-2, dim2=-1).all()  # shared QK: every position sees itself


def test_lsh_sees_fewer_keys_with_more_buckets_and_more_with_more_rounds():
    q, _, _ = _qkv(n=64)
    few = lsh_mask(q, 16, 1, seed=0).float().mean()
    assert few.item() == pytest.approx(2 * 4 / 64)  # each query: own chunk + previous chunk of 4
    assert lsh_mask(q, 16, 4, seed=0).float().mean() > few


def test_lsh_buckets_group_similar_directions():
    rot = lsh_rotations(8, 4, num_hashes=2, seed=0, dtype=torch.float64)
    assert rot.shape == (2, 8, 2)
    x = torch.randn(1, 10, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    b = lsh_hash(x, rot)
    assert b.shape == (1, 2, 10) and b.min() >= 0 and b.max() < 4
    torch.testing.assert_close(lsh_hash(3.0 * x, rot), b)  # lengths do not matter
    assert (lsh_hash(-x, rot) != b).all()  # opposite directions: [xR; −xR] swaps halves
    assert (lsh_hash(x, rot, 1) == 0).all()


def test_lsh_mask_self_falls_back_to_self_only_when_alone():
    q, _, v = _qkv()
    out, _ = lsh_attention(q, None, v, 1, mask_self=True)
    not_self = ~torch.eye(24, dtype=torch.bool)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, _shared_keys(q), v, not_self)[0])
    causal, _ = lsh_attention(q, None, v, 1, mask_self=True, causal=True)
    torch.testing.assert_close(causal[..., 0, :], v[..., 0, :])  # position 0 has only itself


def test_lsh_no_future_leakage():
    q, _, v = _qkv()
    t = 9
    out, _ = lsh_attention(q, None, v, 4, 2, bucket_size=6, causal=True)
    q2, v2 = _future_changed(q, t), _future_changed(v, t)
    out2, _ = lsh_attention(q2, None, v2, 4, 2, bucket_size=6, causal=True)
    # the keys a past query sees may change (hashing is global), but none of them is in the future:
    m1 = lsh_mask(q, 4, 2, 6, causal=True)
    assert not m1.triu(1).any()
    ref2 = scaled_dot_product_attention(q2, _shared_keys(q2), v2, lsh_mask(q2, 4, 2, 6, causal=True))[0]
    torch.testing.assert_close(out2, ref2)
    # position 0 only ever sees itself
    torch.testing.assert_close(out[..., 0, :], out2[..., 0, :])


# --- measuring -------------------------------------------------------------------------------------


def test_scaling_cost_times_every_method_and_drops_the_slow_ones():
    methods = attention_methods(window=4, num_features=8, bucket_size=8)
    points = scaling_cost([16, 32], methods, heads=1, d_k=8, repeats=1, warmup=0, max_ms=None)
    assert [(p.method, p.seq_len) for p in points] == [(m, n) for n in (16, 32) for m in methods]
    assert all(p.ms > 0 and p.peak_bytes > 0 for p in points)
    full = {p.seq_len: p.peak_bytes for p in points if p.method == "full (lib)"}
    assert full[32] == 32 * 32 * 4 + 32 * 8 * 4  # the weights, written over the scores, + the output
    dropped = scaling_cost(
        [16, 32], {"slow": lambda q, k, v: q}, heads=1, d_k=8, repeats=1, warmup=0, max_ms=0.0, measure_memory=False
    )
    assert dropped[0].ms is not None and dropped[1].ms is None and dropped[0].peak_bytes is None


def test_every_method_computes_attention_of_the_right_shape():
    q, k, v = _qkv(batch=1, heads=2, n=32, d_k=8, d_v=8, dtype=torch.float32)
    exact = F.scaled_dot_product_attention(q, k, v)
    for name, f in attention_methods(window=40, num_features=8, bucket_size=8).items():
        out = f(q, k, v)[0] if isinstance(f(q, k, v), tuple) else f(q, k, v)
        assert out.shape == (1, 2, 32, 8), name
        if name.startswith("full") or name == "sliding window":  # window 40 > n: exact
            torch.testing.assert_close(out, exact, msg=name)


def test_crossover():
    ns = [256, 512, 1024, 2048]
    assert crossover(ns, [1, 2, 8, 30], [2, 3, 4, 8]) == 1024
    assert crossover(ns, [1, 2, 8, 30], [2, 1, 9, 8]) == 2048  # won at 512, lost at 1024: counts from 2048
    assert crossover(ns, [1, 2, 8, None], [2, 3, 4, 8]) == 1024  # full dropped out: linear wins there
    assert crossover(ns, [1, 2, 3, 4], [2, 3, 4, 5]) is None
    assert crossover(ns, [5, 5, 5, 5], [1, 1, 1, 1]) == 256
    with pytest.raises(ValueError, match="one entry per length"):
        crossover(ns, [1], [1, 2, 3, 4])


# --- errors ----------------------------------------------------------------------------------------


def test_bad_inputs_raise_value_errors():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="window must be a positive integer"):
        sliding_window_attention(q, k, v, 0)
    with pytest.raises(ValueError, match="window must be a positive integer"):
        sliding_window_mask(8, 0)
    with pytest.raises(ValueError, match="seq_len must be a positive integer"):
        sliding_window_mask(0, 2)
    with pytest.raises(ValueError, match="block_size"):
        sliding_window_attention(q, k, v, 2, block_size=0)
    with pytest.raises(ValueError, match=r"global_tokens must be positions in \[0, 24\)"):
        sliding_window_attention(q, k, v, 2, global_tokens=[24])
    with pytest.raises(ValueError, match="must not repeat"):
        sliding_window_mask(8, 1, global_tokens=[1, 1])
    with pytest.raises(ValueError, match="integer positions"):
        sliding_window_mask(8, 1, global_tokens=[0.5])
    with pytest.raises(ValueError, match="seq_q == seq_k"):
        sliding_window_attention(q[..., :5, :], k, v, 2)
    with pytest.raises(ValueError, match="num_features must be a positive integer"):
        performer_attention(q, k, v, 0)
    with pytest.raises(ValueError, match="num_features must be a positive integer"):
        random_projection(0, 8)
    with pytest.raises(ValueError, match="floating-point"):
        random_projection(4, 8, dtype=torch.int64)
    with pytest.raises(ValueError, match="d_k = 8"):
        performer_features(torch.zeros(3, 5), random_projection(4, 8))
    with pytest.raises(ValueError, match="num_buckets must be a positive integer"):
        lsh_attention(q, None, v, 0)
    with pytest.raises(ValueError, match="1 or even"):
        lsh_attention(q, None, v, 3)
    with pytest.raises(ValueError, match="num_hashes must be a positive integer"):
        lsh_attention(q, None, v, 2, num_hashes=0)
    with pytest.raises(ValueError, match=r"sequence length \(24\) must be divisible by num_buckets \(16\)"):
        lsh_attention(q, None, v, 16)
    with pytest.raises(ValueError, match=r"must be divisible by bucket_size \(5\)"):
        lsh_attention(q, None, v, 4, bucket_size=5)
    with pytest.raises(ValueError, match="shares queries and keys"):
        lsh_attention(q, k, v, 2)
    with pytest.raises(ValueError, match="feature_map"):
        linear_attention(q, k, v, feature_map="relu6")
    with pytest.raises(ValueError, match="chunk_size"):
        linear_attention(q, k, v, causal=True, chunk_size=0)
    with pytest.raises(ValueError, match="seq_q == seq_k"):
        linear_attention(q[..., :5, :], k, v, causal=True)
    with pytest.raises(ValueError, match="rotations"):
        lsh_hash(q, torch.zeros(2, 8))


@pytest.mark.parametrize(
    "fn",
    [
        lambda q, k, v: sliding_window_attention(q, k, v, 2),
        lambda q, k, v: linear_attention(q, k, v),
        lambda q, k, v: linear_attention_quadratic(q, k, v),
        lambda q, k, v: performer_attention(q, k, v, 8),
    ],
)
def test_shape_mismatches_raise(fn):
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="same d_k"):
        fn(q, k[..., :4], v)
    with pytest.raises(ValueError, match="same length seq_k"):
        fn(q, k, v[..., :5, :])
    with pytest.raises(ValueError, match="leading dimensions"):
        fn(q, k[:1], v[:1])
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        fn(q[0, 0, 0], k, v)


def test_lsh_shape_mismatch_raises():
    q, _, v = _qkv()
    with pytest.raises(ValueError, match="leading dimensions"):
        lsh_attention(q, None, v[:1], 2)
    with pytest.raises(ValueError, match="same length seq_k"):
        lsh_attention(q, None, v[..., :4, :], 2)
