"""Tests of the capstone's assembly exercise, ``check("assemble_transformer", MyTransformer)``.

The reader writes the encoder layer, the decoder layer and the forward pass from lib's blocks; the checker loads
the shipped weights into them and compares the greedy translations (and, when they differ, every layer's output)
with lib's model. Here: lib's own layers and the chapter's solution pass; four planted mistakes (a missing
residual, post-LN instead of pre-LN, no √d_model scale, a wrong mask) each fail with their hint; an answer that
raises, one that loops and one that is still the starter are reported. ``CASES`` is collected by
``test_exercises_capstone.py`` (and so by ``test_exercises.py``'s generic checks).
"""

import math
import time

import pytest
import torch
from torch import nn

from lib.attention import MultiHeadAttention, causal_mask, padding_mask
from lib.exercises import check
from lib.exercises import core as exercises_core
from lib.positional import PositionalEncoding
from lib.transformer import DecoderLayer, EncoderLayer, PositionwiseFeedForward, Transformer

# --- the reader's model, written as the chapter's solution, with switches for the planted mistakes -------------


class MyEncoderLayer(nn.Module):
    residual, post_ln, padding = True, False, True  # the planted mistakes switch these

    def __init__(self, c):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.num_heads)
        self.ffn = PositionwiseFeedForward(c.d_model, c.d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)

    def forward(self, x, src_mask):
        mask = src_mask if self.padding else None
        if self.post_ln:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            return self.norm2(x + self.ffn(x))
        h = self.norm1(x)
        a = self.self_attn(h, h, h, mask)[0]
        x = x + a if self.residual else a
        return x + self.ffn(self.norm2(x))


class MyDecoderLayer(nn.Module):
    post_ln, causal, cross_padding = False, True, True

    def __init__(self, c):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.num_heads)
        self.cross_attn = MultiHeadAttention(c.d_model, c.num_heads)
        self.ffn = PositionwiseFeedForward(c.d_model, c.d_ff)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(c.d_model) for _ in range(3))

    def forward(self, y, memory, tgt_mask, src_mask):
        tgt_mask = tgt_mask if self.causal else None
        src_mask = src_mask if self.cross_padding else None
        if self.post_ln:
            y = self.norm1(y + self.self_attn(y, y, y, tgt_mask)[0])
            y = self.norm2(y + self.cross_attn(y, memory, memory, src_mask)[0])
            return self.norm3(y + self.ffn(y))
        h = self.norm1(y)
        y = y + self.self_attn(h, h, h, tgt_mask)[0]
        h = self.norm2(y)
        y = y + self.cross_attn(h, memory, memory, src_mask)[0]
        return y + self.ffn(self.norm3(y))


class MyTransformer(nn.Module):
    encoder_layer, decoder_layer, scale = MyEncoderLayer, MyDecoderLayer, True

    def __init__(self, c):
        super().__init__()
        self.d_model, self.pad_id = c.d_model, c.pad_id
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = self.src_embed
        self.positional = PositionalEncoding(c.d_model, c.max_len)
        enc = [self.encoder_layer(c) for _ in range(c.num_encoder_layers)]
        dec = [self.decoder_layer(c) for _ in range(c.num_decoder_layers)]
        self.encoder = nn.ModuleDict(dict(layers=nn.ModuleList(enc), norm=nn.LayerNorm(c.d_model)))
        self.decoder = nn.ModuleDict(dict(layers=nn.ModuleList(dec), norm=nn.LayerNorm(c.d_model)))
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        self.output.weight = self.tgt_embed.weight

    def embed(self, ids):
        return self.positional(self.src_embed(ids) * (math.sqrt(self.d_model) if self.scale else 1.0))

    def forward(self, src, tgt):
        src_mask = padding_mask(src, self.pad_id)
        tgt_mask = causal_mask(tgt.size(1), tgt.device)
        x = self.embed(src)
        for layer in self.encoder["layers"]:
            x = layer(x, src_mask)
        memory = self.encoder["norm"](x)
        y = self.embed(tgt)
        for layer in self.decoder["layers"]:
            y = layer(y, memory, tgt_mask, src_mask)
        return self.output(self.decoder["norm"](y))


def planted(name, model=None, encoder=None, decoder=None):
    """MyTransformer with one mistake: class attributes switched on the model, its encoder or decoder layers."""
    enc = type(f"{name}EncoderLayer", (MyEncoderLayer,), encoder or {})
    dec = type(f"{name}DecoderLayer", (MyDecoderLayer,), decoder or {})
    return type(f"{name}Transformer", (MyTransformer,), {"encoder_layer": enc, "decoder_layer": dec, **(model or {})})


class LibLayers(MyTransformer):
    """The stack assembled from lib's own EncoderLayer and DecoderLayer (pre-LN, as the shipped model)."""

    encoder_layer = staticmethod(lambda c: EncoderLayer(c.d_model, c.num_heads, c.d_ff, norm_first=True))
    decoder_layer = staticmethod(lambda c: DecoderLayer(c.d_model, c.num_heads, c.d_ff, norm_first=True))

    def forward(self, src, tgt):
        src_mask = padding_mask(src, self.pad_id)
        tgt_mask = causal_mask(tgt.size(1), tgt.device)
        x = self.embed(src)
        for layer in self.encoder["layers"]:
            x = layer(x, src_mask)[0]
        memory = self.encoder["norm"](x)
        y = self.embed(tgt)
        for layer in self.decoder["layers"]:
            y = layer(y, memory, tgt_mask, src_mask)[0]
        return self.output(self.decoder["norm"](y))


NoResidual = planted("NoResidual", encoder={"residual": False})
PostLN = planted("PostLN", encoder={"post_ln": True}, decoder={"post_ln": True})
NoScale = planted("NoScale", model={"scale": False})
NoCausalMask = planted("NoCausalMask", decoder={"causal": False})
NoCrossPadding = planted("NoCrossPadding", decoder={"cross_padding": False})
NoEncoderPadding = planted("NoEncoderPadding", encoder={"padding": False})


class Raises(MyTransformer):
    def forward(self, src, tgt):
        raise RuntimeError("shapes do not match")


class Loops(MyTransformer):
    def forward(self, src, tgt):
        while True:
            pass


class WrongNames(MyTransformer):
    def __init__(self, c):
        super().__init__(c)
        self.encoder_layers = self.encoder["layers"]  # registered twice, under a second name
        del self.encoder


class NoFinalNorm(MyTransformer):
    def forward(self, src, tgt):
        src_mask = padding_mask(src, self.pad_id)
        x = self.embed(src)
        for layer in self.encoder["layers"]:
            x = layer(x, src_mask)
        y = self.embed(tgt)
        for layer in self.decoder["layers"]:
            y = layer(y, x, causal_mask(tgt.size(1)), src_mask)
        return self.output(self.decoder["norm"](y))


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...]); test_exercises_capstone.py
# adds it to its CASES.
CASES = {
    "assemble_transformer": (
        MyTransformer,
        [
            (NoResidual, "residual connection around the self-attention is missing"),
            (PostLN, "post-LN"),
            (NoScale, "√d_model"),
            (NoCausalMask, "no causal mask"),
            (NoCrossPadding, "cross-attention does not get the source padding mask"),
            (NoEncoderPadding, "self-attention has no padding mask"),
            (WrongNames, "encoder.layers.<i>"),
            (NoFinalNorm, "encoder's final LayerNorm (encoder.norm)"),
            (Raises, "RuntimeError: shapes do not match"),
            (lambda c: "a model", "should give an nn.Module"),
            (42, "expected a function"),
        ],
    ),
}


# --- the tests ------------------------------------------------------------------------------------------------


def _verdict(answer, capsys) -> str:
    assert check("assemble_transformer", answer) is False
    out = capsys.readouterr().out
    assert out.startswith("❌ assemble_transformer: ") and out.count("\n") == 1, out
    return out


@pytest.mark.parametrize("answer", [MyTransformer, LibLayers, Transformer], ids=["solution", "lib-layers", "lib"])
def test_lib_s_own_layers_pass(answer, capsys):
    assert check("assemble_transformer", answer) is True
    out = capsys.readouterr().out
    assert out.startswith("✅ assemble_transformer: correct. Your model translates «Zwei Hunde spielen im Schnee.»")


@pytest.mark.parametrize(
    "answer, where, hint",
    [
        (NoResidual, "encoder layer 0", "the residual connection around the self-attention is missing"),
        (PostLN, "encoder layer 0", "you put the LayerNorm after the residual (post-LN"),
        (NoScale, "the source embeddings", "you did not multiply the embeddings by √d_model"),
        (NoCausalMask, "decoder layer 0", "the decoder's self-attention has no causal mask"),
        (NoCrossPadding, "decoder layer 0", "the cross-attention does not get the source padding mask"),
    ],
    ids=["missing-residual", "post-ln", "no-scale", "no-causal-mask", "no-cross-padding"],
)
def test_each_planted_mistake_names_the_first_layer_that_differs_and_its_hint(answer, where, hint, capsys):
    out = _verdict(answer, capsys)
    assert f"the first output that differs is {where}" in out and "differs from lib's by up to" in out
    assert f"It looks like {hint}" in out


def test_the_planted_mistakes_change_the_translations(capsys):
    # not only the logits: the message shows a sentence whose greedy translation is not lib's
    for answer in (NoResidual, PostLN, NoScale, NoCrossPadding):
        assert "your model translates «" in _verdict(answer, capsys)


def test_layers_before_the_first_difference_are_said_to_agree(capsys):
    out = _verdict(NoCausalMask, capsys)
    assert "the source embeddings, encoder layer 0, encoder layer 1, encoder layer 2, the encoder's final" in out


def test_an_answer_that_raises_is_reported_with_its_line(capsys):
    out = _verdict(Raises, capsys)
    assert "translating the test sentences with your model, your code raised RuntimeError: shapes do not match" in out
    assert "(in Raises.forward: `raise RuntimeError(" in out


def test_a_forgotten_super_init_is_named(capsys):
    class NoSuper(nn.Module):
        def __init__(self, c):
            self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)

        def forward(self, src, tgt):
            return self.src_embed(tgt)

    assert "Call super().__init__() first" in _verdict(NoSuper, capsys)


def test_a_persistent_positional_table_is_explained(capsys):
    class PersistentTable(MyTransformer):
        def __init__(self, c):
            super().__init__(c)
            self.register_buffer("table", torch.zeros(3))

    out = _verdict(PersistentTable, capsys)
    assert "table" in out and "persistent=False" in out


def test_a_forward_that_returns_nothing_or_the_wrong_shape_is_reported(capsys):
    class Forgot(MyTransformer):
        def forward(self, src, tgt):
            super().forward(src, tgt)

    class Shape(MyTransformer):
        def forward(self, src, tgt):
            return super().forward(src, tgt)[:, -1]

    assert "did you forget the `return`" in _verdict(Forgot, capsys)
    assert "expected the logits (batch, seq_t, tgt_vocab_size)" in _verdict(Shape, capsys)


@pytest.mark.skipif(not hasattr(__import__("signal"), "setitimer"), reason="the time limit needs SIGALRM")
def test_an_answer_that_loops_gets_the_time_out(monkeypatch, capsys):
    monkeypatch.setattr(exercises_core, "TIME_LIMIT_S", 1.0)
    start = time.monotonic()
    out = _verdict(Loops, capsys)
    assert "⏱ your function did not return within 1 s" in out and time.monotonic() - start < 5.0


def test_the_starter_is_not_solved_yet_until_every_class_is_filled_in(capsys):
    # the student edition's starter: signatures and docstrings, bodies `...`; ⏳ names the next body to fill in
    class StarterEncoderLayer(nn.Module):
        def __init__(self, c):
            """Pre-LN encoder layer."""
            ...

        def forward(self, x, src_mask): ...

    class StarterTransformer(nn.Module):
        def __init__(self, c): ...

        def forward(self, src, tgt): ...

    class HalfDone(MyTransformer):
        def __init__(self, c):
            super().__init__(c)
            self.encoder["layers"] = nn.ModuleList(StarterEncoderLayer(c) for _ in range(c.num_encoder_layers))

    starters = [(StarterTransformer, "StarterTransformer.__init__"), (HalfDone, "StarterEncoderLayer.__init__")]
    for answer, body in starters:
        assert check("assemble_transformer", answer) is False
        assert capsys.readouterr().out == f"⏳ assemble_transformer: not solved yet — fill in the body of {body}\n"


def test_the_reference_is_lib_s_cached_greedy_decoder():
    # the checker decodes both models through forward(src, tgt) alone; for lib's model that must give
    # exactly what lib.decode.greedy_decode (batched, with the key/value cache) gives
    from lib.decode import greedy_decode
    from lib.exercises.capstone import _assembly_reference, _sentence_ids, _shipped

    src, ys, _ = _assembly_reference()
    got = [_sentence_ids(row) for row in ys.tolist()]
    assert got == greedy_decode(_shipped().model, src, max_len=40)
    assert max(map(len, got)) == 17  # well within the checker's 40 steps (its comment says so)
    assert (src == 0).any(dim=1).sum() >= 4  # most sentences are padded: a missing padding mask shows


def test_the_check_is_quick_and_leaves_the_shipped_model_unhooked(capsys):
    from lib.exercises.capstone import _shipped

    check("assemble_transformer", MyTransformer)
    start = time.perf_counter()
    assert check("assemble_transformer", NoCausalMask) is False
    assert time.perf_counter() - start < 10.0
    model = _shipped().model
    assert not model.training
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
