"""lib.transformer and lib.positional against torch references, the seeds' numbers and invariants."""

import pytest
import torch

from lib.attention import scaled_dot_product_attention
from lib.positional import PositionalEncoding, sinusoidal_positional_encoding
from lib.transformer import DecoderLayer, EncoderLayer, PositionwiseFeedForward, Transformer, TransformerConfig

# --- the seeds' worked numbers -------------------------------------------------------------------


def test_seed_softmax_numbers():
    # seed 001: softmax([0.5, 0.8, 0.6]); with d_k = 1 the attention scores are exactly q·k.
    q = torch.tensor([[1.0]])
    k = torch.tensor([[0.5], [0.8], [0.6]])
    _, w = scaled_dot_product_attention(q, k, torch.eye(3))
    assert w[0].tolist() == pytest.approx([0.28943, 0.39069, 0.31987], abs=5e-6)


def test_seed_positional_encoding_row_1():
    pe = sinusoidal_positional_encoding(4, 8)
    expected = [0.84147, 0.54030, 0.09983, 0.99500, 0.01000, 0.99995, 0.00100, 1.00000]
    assert pe[1].tolist() == pytest.approx(expected, abs=5e-6)
    assert pe[0].tolist() == [0, 1, 0, 1, 0, 1, 0, 1]


def test_seed_encoder_walkthrough_pe_row_0_correction():
    # seed 001 prints PE row 0 for d_model = 4 as [0, 1, 1, 1]; it is [0, 1, 0, 1].
    pe = sinusoidal_positional_encoding(4, 4)
    assert pe[0].tolist() == [0, 1, 0, 1]
    x = torch.arange(1, 17, dtype=torch.float32).view(4, 4)
    assert (x + pe)[0].tolist() == [1, 3, 3, 5]


def test_seed_ffn_example():
    ffn = PositionwiseFeedForward(4, 16)
    with torch.no_grad():
        ffn.linear1.weight.fill_(1.0)
        ffn.linear1.bias.zero_()
        ffn.linear2.weight.fill_(1.0)
        ffn.linear2.bias.zero_()
    x = torch.arange(1, 13, dtype=torch.float32).view(3, 4)
    hidden = torch.relu(ffn.linear1(x))
    assert hidden[:, 0].tolist() == [10, 26, 42]
    assert ffn(x).tolist() == [[160.0] * 4, [416.0] * 4, [672.0] * 4]


def test_pe_linear_relation_between_offsets():
    # PE(pos + k) = M_k PE(pos), M_k block-diagonal rotations (seed 004; Vaswani et al. 2017 §3.5).
    d, k = 16, 3
    pe = sinusoidal_positional_encoding(20, d).double()
    M = torch.zeros(d, d, dtype=torch.double)
    for i in range(d // 2):
        w = 1 / 10000 ** (2 * i / d)
        c, s = torch.cos(torch.tensor(w * k)), torch.sin(torch.tensor(w * k))
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    torch.testing.assert_close(pe[k:], pe[:-k] @ M.T, atol=1e-5, rtol=0)


def test_positional_encoding_errors():
    with pytest.raises(AssertionError, match="even"):  # the core: an assert
        sinusoidal_positional_encoding(4, 7)
    with pytest.raises(ValueError, match="even"):  # the constructor, an entry point: a named error
        PositionalEncoding(7, max_len=4)
    with pytest.raises(AssertionError, match="max_len"):
        PositionalEncoding(8, max_len=4)(torch.zeros(1, 5, 8))


# --- equality with torch.nn.Transformer* ---------------------------------------------------------


def _copy_mha(ours, theirs):
    theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
    theirs.out_proj.weight.copy_(ours.w_o.weight)
    theirs.out_proj.bias.copy_(ours.w_o.bias)


def _copy_ffn_norms(ours, theirs, n_norms):
    theirs.linear1.load_state_dict(ours.ffn.linear1.state_dict())
    theirs.linear2.load_state_dict(ours.ffn.linear2.state_dict())
    for i in range(1, n_norms + 1):
        getattr(theirs, f"norm{i}").load_state_dict(getattr(ours, f"norm{i}").state_dict())


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_equals_torch(norm_first, activation):
    torch.manual_seed(0)
    ours = EncoderLayer(32, 4, 64, dropout=0.0, norm_first=norm_first, activation=activation).eval()
    ref = torch.nn.TransformerEncoderLayer(
        32, 4, 64, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    ).eval()
    with torch.no_grad():
        _copy_mha(ours.self_attn, ref.self_attn)
        _copy_ffn_norms(ours, ref, 2)
    x = torch.randn(3, 6, 32)
    lengths = torch.tensor([6, 4, 1])
    keep = torch.arange(6)[None] < lengths[:, None]
    out, _ = ours(x, keep[:, None, None, :])
    expected = ref(x, src_key_padding_mask=~keep)
    torch.testing.assert_close(out[keep], expected[keep])  # torch may zero padded rows in fast paths


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_torch(norm_first):
    torch.manual_seed(0)
    ours = DecoderLayer(32, 4, 64, dropout=0.0, norm_first=norm_first).eval()
    ref = torch.nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    with torch.no_grad():
        _copy_mha(ours.self_attn, ref.self_attn)
        _copy_mha(ours.cross_attn, ref.multihead_attn)
        _copy_ffn_norms(ours, ref, 3)
    x, mem = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    mem_keep = torch.arange(7)[None] < torch.tensor([7, 3])[:, None]
    out, _, _ = ours(x, mem, causal, mem_keep[:, None, None, :])
    expected = ref(x, mem, tgt_mask=~causal, memory_key_padding_mask=~mem_keep)
    torch.testing.assert_close(out, expected)


# --- the whole model -----------------------------------------------------------------------------


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    return Transformer(TransformerConfig.tiny(vocab_size=50, **kw)).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal(norm_first):
    model = _model(norm_first=norm_first)
    src = torch.randint(4, 50, (2, 7))
    tgt = torch.randint(4, 50, (2, 6))
    logits = model(src, tgt)
    for t in range(6):
        changed = tgt.clone()
        changed[:, t + 1 :] = torch.randint(4, 50, changed[:, t + 1 :].shape)
        torch.testing.assert_close(model(src, changed)[:, : t + 1], logits[:, : t + 1])
    # and the future does matter (the test could fail): changing token 0 changes later positions
    changed = tgt.clone()
    changed[:, 0] = (tgt[:, 0] + 1 - 4) % 46 + 4
    assert not torch.allclose(model(src, changed)[:, 1:], logits[:, 1:])


def test_source_padding_does_not_change_output():
    model = _model()
    src = torch.randint(4, 50, (1, 5))
    tgt = torch.randint(4, 50, (1, 4))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(padded, tgt), model(src, tgt))


def test_incremental_decoding_with_cache_equals_full_pass():
    model = _model(norm_first=True)
    src = torch.randint(4, 50, (3, 8))
    tgt = torch.randint(4, 50, (3, 6))
    full = model(src, tgt)
    memory, mask = model.encode(src)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, mask, cache, offset=t) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-4)
    # a prefill of several tokens with a cache also agrees
    cache = model.new_cache()
    a = model.decode(tgt[:, :4], memory, mask, cache, offset=0)
    b = model.decode(tgt[:, 4:], memory, mask, cache, offset=4)
    torch.testing.assert_close(torch.cat([a, b], 1), full, atol=1e-5, rtol=1e-4)


def test_fused_and_explicit_attention_agree_and_weights_returned():
    model = _model()
    src = torch.randint(4, 50, (2, 7))
    tgt = torch.randint(4, 50, (2, 5))
    fused_logits = model(src, tgt)
    logits, att = model(src, tgt, return_attention=True)
    torch.testing.assert_close(fused_logits, logits, atol=1e-5, rtol=1e-4)
    assert len(att.encoder) == 2 and att.encoder[0].shape == (2, 4, 7, 7)
    assert att.decoder[1].shape == (2, 4, 5, 5) and att.cross[0].shape == (2, 4, 5, 7)
    torch.testing.assert_close(att.cross[0].sum(-1), torch.ones(2, 4, 5))
    assert (att.decoder[0].triu(1) == 0).all()


def test_embeddings_are_tied_and_counted_once():
    model = _model()
    assert model.src_embed.weight is model.tgt_embed.weight is model.output.weight
    untied = Transformer(TransformerConfig.tiny(vocab_size=50, share_embeddings=False))
    assert untied.num_parameters() - model.num_parameters() == 2 * 50 * 32


def test_config_errors():
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig.tiny(d_model=30, num_heads=4)
    with pytest.raises(ValueError, match="share_embeddings"):
        TransformerConfig(100, 200)
    with pytest.raises(ValueError, match="unknown preset"):
        TransformerConfig.preset("huge", 100)
    assert TransformerConfig.preset("tiny", 100) == TransformerConfig.tiny(100)
    model = _model()
    with pytest.raises(ValueError, match="outside"):
        model(torch.tensor([[1, 99]]), torch.tensor([[1]]))
    with pytest.raises(ValueError, match=r"\(batch, seq_len\)"):
        model(torch.tensor([1, 2]), torch.tensor([[1]]))


def test_config_round_trip():
    c = TransformerConfig.multi30k(8000)
    assert TransformerConfig.from_dict(c.to_dict()) == c
    assert c.d_k == 32
    assert Transformer(c).num_parameters() < 2.5e6  # float16 weights stay under 5 MB


# --- the entry points under float16 input and under torch's compilers (what the Transformer's docstring claims) ---


def _tiny_model_and_ids():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(50)).eval()
    return model, torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 5))


def test_a_float16_memory_for_a_float32_model_is_an_error_naming_the_dtype():
    # torch's own error came from deep inside a matmul ("expected mat1 and mat2 to have the same dtype")
    model, src, tgt = _tiny_model_and_ids()
    memory, src_mask = model.encode(src)
    with pytest.raises(
        ValueError, match=r"memory must be torch.float32, the dtype of the model's weights, got torch.f"
    ):
        model.decode(tgt, memory.half(), src_mask)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast mixes dtypes on purpose: no error
        assert model.decode(tgt, memory.bfloat16(), src_mask).shape[:2] == (2, 5)


def test_torch_compile_keeps_the_type_and_shape_checks():
    model, src, tgt = _tiny_model_and_ids()
    compiled = torch.compile(model, backend="eager")  # dynamo's tracing without inductor's C++ build: cheap
    torch.testing.assert_close(compiled(src, tgt), model(src, tgt))
    with pytest.raises(ValueError, match="src must be integer token ids"):
        compiled(src.float(), tgt)
    with pytest.raises(ValueError, match="same batch size"):
        compiled(src, tgt[:1])


def test_the_id_range_is_checked_in_eager_mode_only(monkeypatch):
    from lib._checks import check_token_ids

    with pytest.raises(ValueError, match="outside"):
        check_token_ids(torch.tensor([[60]]), "src", 50, 10)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)  # as under torch.compile
    check_token_ids(torch.tensor([[60]]), "src", 50, 10)  # not read: the docstring says to check with an eager call


def test_torch_jit_trace_is_refused_in_one_line_and_script_cannot_compile_the_model():
    # trace failed inside the library's own int check ("seq_len must be a positive int, got tensor(5)")
    model, src, tgt = _tiny_model_and_ids()
    with pytest.raises(RuntimeError, match=r"^src: lib.s models do not support torch.jit.trace"):
        torch.jit.trace(model, (src, tgt))
    with pytest.raises(Exception):  # noqa: B017 (the claim is only that scripting is not supported)
        torch.jit.script(model)
