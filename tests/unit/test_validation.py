"""Wrong inputs to the public functions of ``lib`` end in a named error at the boundary, not deep inside torch.

One table, one ``pytest.param`` per wrong input: the call, the exception it must raise (``ValueError`` for a wrong
value or shape, ``TypeError`` for a wrong Python type, ``FileNotFoundError`` for a missing file) and a pattern that
the message must match, which names the argument. A traceback from inside torch or tokenizers (``RuntimeError``,
``IndexError``, ``AttributeError``, an unnamed ``TypeError``) fails the case, and so does a call that returns: a
silent NaN, a truncated id or an ignored size is worse than an error.

Tensor dtypes are values of a tensor, so a float tensor where ids belong is a ``ValueError``, as the STYLE asks;
a ``str``, ``float`` or ``bool`` where an ``int`` belongs is a ``TypeError``. (``lib.bpe.encode``,
``lib.bpe.train_bpe`` and ``lib.cost``'s sizes keep the ``ValueError`` they always raised for a wrong type.)
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest
import torch

from lib import attention, bert, bpe, cost, data, decode, efficient, gpt, lm, metrics, positional, seq2seq, transformer
from lib.interfaces import AttentionMaps

V = 40  # vocabulary of the tiny models


# --- tiny models and inputs, built once ----------------------------------------------------------------------


@functools.cache
def tiny_transformer() -> transformer.Transformer:
    torch.manual_seed(0)
    return transformer.Transformer(transformer.TransformerConfig.tiny(V, max_len=16)).eval()


@functools.cache
def tiny_seq2seq() -> seq2seq.Seq2Seq:
    torch.manual_seed(0)
    return seq2seq.Seq2Seq(seq2seq.Seq2SeqConfig(V, d_embed=8, d_hidden=8, max_len=16)).eval()


@functools.cache
def tiny_gpt() -> gpt.GPT:
    torch.manual_seed(0)
    return gpt.GPT(gpt.GPTConfig.tiny(V, d_model=16, num_heads=2, d_ff=32, max_len=12)).eval()


@functools.cache
def tiny_bert() -> bert.Bert:
    torch.manual_seed(0)
    return bert.Bert(bert.BertConfig.tiny(V, d_model=16, num_heads=2, d_ff=32, max_len=12)).eval()


@functools.cache
def toy_tokenizer():
    texts = ["ein Hund läuft über die Wiese .", "a dog runs across the meadow .", "zwei Hunde spielen ."] * 4
    return bpe.train_bpe(texts, vocab_size=60, min_frequency=1)


def qkv(*lead: int, seq_q: int = 5, seq_k: int = 5, d: int = 8, dtype: torch.dtype = torch.float32):
    gen = torch.Generator().manual_seed(0)
    lead = lead or (2, 2)
    return (
        torch.randn(*lead, seq_q, d, generator=gen, dtype=dtype),
        torch.randn(*lead, seq_k, d, generator=gen, dtype=dtype),
        torch.randn(*lead, seq_k, d, generator=gen, dtype=dtype),
    )


def src_ids(batch: int = 2, seq: int = 5) -> torch.Tensor:
    return torch.randint(4, V, (batch, seq), generator=torch.Generator().manual_seed(1))


def encoded():
    model = tiny_transformer()
    return model, *model.encode(src_ids())


def s2s_encoded():
    model = tiny_seq2seq()
    return model, *model.encode(src_ids())


def call_decode(**changes):
    model, memory, mask = encoded()
    args = dict(tgt=torch.ones(2, 1, dtype=torch.long), memory=memory, src_mask=mask, cache=None, offset=0)
    args.update(changes)
    return model.decode(**args)


def call_s2s_decode(**changes):
    model, memory, mask = s2s_encoded()
    args = dict(tgt=torch.ones(2, 1, dtype=torch.long), memory=memory, src_mask=mask, cache=None, offset=0)
    args.update(changes)
    return model.decode(**args)


def tiny_config(**changes) -> dict:
    return {**transformer.TransformerConfig.tiny(V).to_dict(), **changes}


def mha(fused: bool = False) -> attention.MultiHeadAttention:
    return attention.MultiHeadAttention(8, 2, fused=fused)


def bert_inputs():
    ids = torch.tensor([[40, 5, 6, 41, 0]])  # not a real BertVocab: the ids only need to be in the vocabulary
    return ids


def mask_tokens(**changes):
    ids = torch.randint(4, 30, (2, 6), generator=torch.Generator().manual_seed(0))
    args = dict(ids=ids, special_mask=torch.zeros(2, 6, dtype=torch.bool), vocab_size=30, mask_id=32)
    args.update(changes)
    return bert.mask_tokens(**args)


def examples(n: int = 6) -> list[tuple[list[int], list[int]]]:
    rng = random.Random(0)
    return [([4] * rng.randint(1, 6), [5] * rng.randint(1, 6)) for _ in range(n)]


def nan() -> float:
    return float("nan")


def case(case_id: str, error: type[Exception], match: str, call) -> object:
    """One row of the table: ``call()`` must raise ``error`` with a message matching ``match`` (the argument)."""
    return pytest.param(call, error, match, id=case_id)


# --- the table -------------------------------------------------------------------------------------------------

CASES = [
    # lib.attention
    case(
        "sdpa-query-int-dtype",
        ValueError,
        "query",
        lambda: attention.scaled_dot_product_attention(qkv()[0].long(), *qkv()[1:]),
    ),
    case(
        "sdpa-dtype-mismatch",
        ValueError,
        "key",
        lambda: attention.scaled_dot_product_attention(qkv()[0].double(), *qkv()[1:]),
    ),
    case(
        "sdpa-batch-mismatch",
        ValueError,
        "key",
        lambda: attention.scaled_dot_product_attention(qkv(2, 2)[0], *qkv(3, 2)[1:]),
    ),
    case(
        "sdpa-query-not-a-tensor",
        TypeError,
        "query",
        lambda: attention.scaled_dot_product_attention(qkv()[0].tolist(), *qkv()[1:]),
    ),
    case(
        "sdpa-mask-int",
        ValueError,
        "mask",
        lambda: attention.scaled_dot_product_attention(*qkv(), mask=torch.ones(5, 5, dtype=torch.long)),
    ),
    case(
        "sdpa-mask-shape",
        ValueError,
        "mask",
        lambda: attention.scaled_dot_product_attention(*qkv(), mask=torch.ones(4, 4, dtype=torch.bool)),
    ),
    case(
        "sdpa-dropout-nan",
        ValueError,
        "dropout_p",
        lambda: attention.scaled_dot_product_attention(*qkv(), dropout_p=nan()),
    ),
    case(
        "sdpa-dropout-str",
        TypeError,
        "dropout_p",
        lambda: attention.scaled_dot_product_attention(*qkv(), dropout_p="0.1"),
    ),
    case("causal-mask-zero", ValueError, "seq_len", lambda: attention.causal_mask(0)),
    case("causal-mask-float", TypeError, "seq_len", lambda: attention.causal_mask(2.5)),
    case("causal-mask-bool", TypeError, "seq_len", lambda: attention.causal_mask(True)),
    case(
        "padding-mask-float-ids",
        ValueError,
        "lengths_or_tokens",
        lambda: attention.padding_mask(torch.tensor([[1.0, 0.0]]), pad_id=0),
    ),
    case("padding-mask-no-pad-id", ValueError, "pad_id", lambda: attention.padding_mask(torch.tensor([[1, 2]]))),
    case(
        "padding-mask-3d",
        ValueError,
        "lengths_or_tokens",
        lambda: attention.padding_mask(torch.ones(1, 2, 3, dtype=torch.long), 0),
    ),
    case("padding-mask-negative-length", ValueError, "lengths", lambda: attention.padding_mask([2, -1])),
    case("padding-mask-max-len-small", ValueError, "max_len", lambda: attention.padding_mask([5], max_len=3)),
    case(
        "padding-mask-pad-id-str",
        TypeError,
        "pad_id",
        lambda: attention.padding_mask(torch.tensor([[1, 0]]), pad_id="0"),
    ),
    case("mha-num-heads-zero", ValueError, "num_heads", lambda: attention.MultiHeadAttention(8, 0)),
    case("mha-indivisible", ValueError, "num_heads", lambda: attention.MultiHeadAttention(10, 3)),
    case("mha-d-model-float", TypeError, "d_model", lambda: attention.MultiHeadAttention(8.0, 2)),
    case("mha-dropout-nan", ValueError, "dropout", lambda: attention.MultiHeadAttention(8, 2, dropout=nan())),
    case(
        "mha-batch-mismatch",
        ValueError,
        "key",
        lambda: mha()(torch.randn(2, 5, 8), torch.randn(3, 5, 8), torch.randn(3, 5, 8)),
    ),
    case(
        "mha-fused-batch-mismatch",
        ValueError,
        "key",
        lambda: mha(fused=True)(
            torch.randn(2, 5, 8), torch.randn(3, 5, 8), torch.randn(3, 5, 8), return_attention=False
        ),
    ),
    case(
        "mha-query-width",
        ValueError,
        "query",
        lambda: mha()(torch.randn(2, 5, 7), torch.randn(2, 5, 8), torch.randn(2, 5, 8)),
    ),
    case(
        "mha-mask-int",
        ValueError,
        "mask",
        lambda: mha()(*[torch.randn(2, 5, 8)] * 3, mask=torch.ones(5, 5, dtype=torch.int)),
    ),
    # lib.positional
    case("sinusoidal-odd-d-model", ValueError, "d_model", lambda: positional.sinusoidal_positional_encoding(4, 7)),
    case("sinusoidal-max-len-zero", ValueError, "max_len", lambda: positional.sinusoidal_positional_encoding(0, 8)),
    case("sinusoidal-d-model-float", TypeError, "d_model", lambda: positional.sinusoidal_positional_encoding(4, 8.0)),
    case(
        "sinusoidal-base-nan", ValueError, "base", lambda: positional.sinusoidal_positional_encoding(4, 8, base=nan())
    ),
    case(
        "pe-offset-negative",
        ValueError,
        "offset",
        lambda: positional.PositionalEncoding(8, 16)(torch.zeros(1, 1, 8), offset=-1),
    ),
    case(
        "pe-offset-too-large",
        ValueError,
        "offset",
        lambda: positional.PositionalEncoding(8, 16)(torch.zeros(1, 2, 8), offset=15),
    ),
    case(
        "pe-offset-float",
        TypeError,
        "offset",
        lambda: positional.PositionalEncoding(8, 16)(torch.zeros(1, 2, 8), offset=1.5),
    ),
    case("pe-dropout-nan", ValueError, "dropout", lambda: positional.PositionalEncoding(8, 16, dropout=nan())),
    case("pe-x-wrong-width", ValueError, "x must", lambda: positional.PositionalEncoding(8, 16)(torch.zeros(1, 2, 6))),
    # lib.transformer
    case("config-vocab-str", TypeError, "vocab_size", lambda: transformer.TransformerConfig.tiny("100")),
    case(
        "config-num-heads-bool", TypeError, "num_heads", lambda: transformer.TransformerConfig.tiny(V, num_heads=True)
    ),
    case("config-dropout-nan", ValueError, "dropout", lambda: transformer.TransformerConfig.tiny(V, dropout=nan())),
    case(
        "config-dropout-inf",
        ValueError,
        "attention_dropout",
        lambda: transformer.TransformerConfig.tiny(V, attention_dropout=float("inf")),
    ),
    case("config-num-heads-zero", ValueError, "num_heads", lambda: transformer.TransformerConfig.tiny(V, num_heads=0)),
    case("config-max-len-float", TypeError, "max_len", lambda: transformer.TransformerConfig.tiny(V, max_len=2.5)),
    case(
        "config-norm-first-str",
        TypeError,
        "norm_first",
        lambda: transformer.TransformerConfig.tiny(V, norm_first="yes"),
    ),
    case(
        "config-eps-negative",
        ValueError,
        "layer_norm_eps",
        lambda: transformer.TransformerConfig.tiny(V, layer_norm_eps=-1e-5),
    ),
    case("config-pad-id-outside-vocab", ValueError, "pad_id", lambda: transformer.TransformerConfig.tiny(V, pad_id=V)),
    case(
        "config-from-dict-str",
        TypeError,
        "d_model",
        lambda: transformer.TransformerConfig.from_dict(tiny_config(d_model="32")),
    ),
    case("transformer-dict-config", TypeError, "config", lambda: transformer.Transformer(tiny_config())),
    case(
        "forward-src-float",
        ValueError,
        "src",
        lambda: tiny_transformer()(src_ids().float(), torch.ones(2, 1, dtype=torch.long)),
    ),
    case(
        "forward-src-1d",
        ValueError,
        "src",
        lambda: tiny_transformer()(src_ids()[0], torch.ones(2, 1, dtype=torch.long)),
    ),
    case(
        "forward-batch-mismatch",
        ValueError,
        "tgt",
        lambda: tiny_transformer()(src_ids(2), torch.ones(3, 1, dtype=torch.long)),
    ),
    case(
        "forward-src-too-long",
        ValueError,
        "src",
        lambda: tiny_transformer()(src_ids(2, 17), torch.ones(2, 1, dtype=torch.long)),
    ),
    case("decode-offset-negative", ValueError, "offset", lambda: call_decode(offset=-1)),
    case("decode-offset-too-large", ValueError, "offset", lambda: call_decode(offset=16)),
    case("decode-offset-float", TypeError, "offset", lambda: call_decode(offset=1.5)),
    case("decode-memory-width", ValueError, "memory", lambda: call_decode(memory=torch.zeros(2, 5, 16))),
    case("decode-memory-batch", ValueError, "memory", lambda: call_decode(tgt=torch.ones(3, 1, dtype=torch.long))),
    case(
        "decode-src-mask-int",
        ValueError,
        "src_mask",
        lambda: call_decode(src_mask=torch.ones(2, 1, 1, 5, dtype=torch.long)),
    ),
    case(
        "decode-src-mask-shape",
        ValueError,
        "src_mask",
        lambda: call_decode(src_mask=torch.ones(2, 1, 1, 4, dtype=torch.bool)),
    ),
    case("decode-cache-length", ValueError, "cache", lambda: call_decode(cache=tiny_transformer().new_cache()[:1])),
    case(
        "decode-cache-offset-mismatch",
        ValueError,
        "offset",
        lambda: call_decode(cache=tiny_transformer().new_cache(), offset=3),
    ),
    # lib.seq2seq
    case("s2s-config-vocab-str", TypeError, "vocab_size", lambda: seq2seq.Seq2SeqConfig("100")),
    case("s2s-config-d-attention-zero", ValueError, "d_attention", lambda: seq2seq.Seq2SeqConfig(V, d_attention=0)),
    case("s2s-config-dropout-nan", ValueError, "dropout", lambda: seq2seq.Seq2SeqConfig(V, dropout=nan())),
    case("s2s-config-share-int", TypeError, "share_embeddings", lambda: seq2seq.Seq2SeqConfig(V, share_embeddings=1)),
    case("s2s-encode-float", ValueError, "src", lambda: tiny_seq2seq().encode(src_ids().float())),
    case("s2s-encode-outside-vocab", ValueError, "src", lambda: tiny_seq2seq().encode(src_ids() + V)),
    case(
        "s2s-forward-batch-mismatch",
        ValueError,
        "tgt",
        lambda: tiny_seq2seq()(src_ids(2), torch.ones(3, 1, dtype=torch.long)),
    ),
    case("s2s-decode-tgt-float", ValueError, "tgt", lambda: call_s2s_decode(tgt=torch.ones(2, 1))),
    case("s2s-decode-tgt-outside-vocab", ValueError, "tgt", lambda: call_s2s_decode(tgt=torch.full((2, 1), V))),
    case("s2s-decode-memory-width", ValueError, "memory", lambda: call_s2s_decode(memory=torch.zeros(2, 5, 6))),
    case(
        "s2s-decode-src-mask-shape",
        ValueError,
        "src_mask",
        lambda: call_s2s_decode(src_mask=torch.ones(2, 4, dtype=torch.bool)),
    ),
    case("s2s-decode-offset-negative", ValueError, "offset", lambda: call_s2s_decode(offset=-1)),
    case(
        "attend-mask-int",
        ValueError,
        "mask",
        lambda: seq2seq.attend(torch.zeros(1, 3), torch.eye(3)[None], torch.ones(1, 3, dtype=torch.long)),
    ),
    case("make-score-float-size", TypeError, "d_query", lambda: seq2seq.make_score("general", 4.0, 4)),
    # lib.bert
    case("bert-vocab-str", TypeError, "base_size", lambda: bert.BertVocab("8000")),
    case("bert-config-vocab-str", TypeError, "vocab_size", lambda: bert.BertConfig("100")),
    case("bert-config-indivisible", ValueError, "num_heads", lambda: bert.BertConfig(V, d_model=30, num_heads=4)),
    case("bert-config-activation", ValueError, "activation", lambda: bert.BertConfig(V, activation="tanh")),
    case("bert-forward-float", ValueError, "input_ids", lambda: tiny_bert()(bert_inputs().float())),
    case(
        "bert-forward-segment-float", ValueError, "segment_ids", lambda: tiny_bert()(bert_inputs(), torch.zeros(1, 5))
    ),
    case(
        "bert-mlm-loss-all-ignored",
        ValueError,
        "labels",
        lambda: tiny_bert().mlm_loss(torch.zeros(1, 5, 16), torch.full((1, 5), bert.IGNORE_INDEX)),
    ),
    case(
        "bert-mlm-loss-shape",
        ValueError,
        "labels",
        lambda: tiny_bert().mlm_loss(torch.zeros(1, 5, 16), torch.ones(1, 4, dtype=torch.long)),
    ),
    case("bert-mlm-logits-width", ValueError, "hidden", lambda: tiny_bert().mlm_logits(torch.zeros(1, 5, 12))),
    case("bert-nsp-logits-2d", ValueError, "hidden", lambda: tiny_bert().nsp_logits(torch.zeros(1, 16))),
    case("bert-classifier-float-classes", TypeError, "num_classes", lambda: bert.BertClassifier(tiny_bert(), 2.5)),
    case(
        "mask-tokens-special-shape",
        ValueError,
        "special_mask",
        lambda: mask_tokens(special_mask=torch.zeros(2, 5, dtype=torch.bool)),
    ),
    case("mask-tokens-ids-float", ValueError, "ids", lambda: mask_tokens(ids=torch.ones(2, 6))),
    case("mask-tokens-vocab-str", TypeError, "vocab_size", lambda: mask_tokens(vocab_size="30")),
    case("pack-pair-max-len-small", ValueError, "max_len", lambda: bert.pack_pair([5], [6], bert.BertVocab(30), 3)),
    case("nsp-pairs-too-few", ValueError, "sentences", lambda: bert.make_nsp_pairs([[1], [2]], random.Random(0))),
    # lib.gpt
    case("gpt-config-indivisible", ValueError, "num_heads", lambda: gpt.GPTConfig(V, d_model=30, num_heads=4)),
    case("gpt-config-vocab-float", TypeError, "vocab_size", lambda: gpt.GPTConfig(100.0)),
    case("gpt-forward-float", ValueError, "ids", lambda: tiny_gpt()(torch.ones(1, 3))),
    case(
        "lm-loss-all-padding",
        ValueError,
        "ids",
        lambda: gpt.lm_loss(torch.zeros(2, 3, V), torch.tensor([[1, 0, 0], [1, 0, 0]])),
    ),
    case("lm-loss-ids-float", ValueError, "ids", lambda: gpt.lm_loss(torch.zeros(2, 3, V), torch.ones(2, 3))),
    case(
        "lm-loss-shape",
        ValueError,
        "ids",
        lambda: gpt.lm_loss(torch.zeros(2, 3, V), torch.ones(2, 4, dtype=torch.long)),
    ),
    case(
        "generate-temperature-nan",
        ValueError,
        "temperature",
        lambda: gpt.generate(tiny_gpt(), torch.ones(3, dtype=torch.long), 1, temperature=nan()),
    ),
    case(
        "generate-max-new-float",
        TypeError,
        "max_new_tokens",
        lambda: gpt.generate(tiny_gpt(), torch.ones(3, dtype=torch.long), 2.5),
    ),
    case("generate-prompt-float", ValueError, "prompt_ids", lambda: gpt.generate(tiny_gpt(), torch.ones(3), 1)),
    case(
        "generate-not-a-gpt",
        TypeError,
        "model",
        lambda: gpt.generate(tiny_transformer(), torch.ones(3, dtype=torch.long), 1),
    ),
    # lib.decode
    case(
        "greedy-max-len-zero",
        ValueError,
        "max_len",
        lambda: decode.greedy_decode(tiny_transformer(), src_ids(), max_len=0),
    ),
    case("greedy-src-float", ValueError, "src", lambda: decode.greedy_decode(tiny_transformer(), src_ids().float())),
    case("greedy-src-list", TypeError, "src", lambda: decode.greedy_decode(tiny_transformer(), src_ids().tolist())),
    case(
        "greedy-max-len-str",
        TypeError,
        "max_len",
        lambda: decode.greedy_decode(tiny_transformer(), src_ids(), max_len="5"),
    ),
    case(
        "greedy-bos-outside-vocab",
        ValueError,
        "bos_id",
        lambda: decode.greedy_decode(tiny_transformer(), src_ids(), bos_id=V),
    ),
    case("greedy-not-encoder-decoder", TypeError, "model", lambda: decode.greedy_decode(tiny_gpt(), src_ids())),
    case(
        "beam-size-zero",
        ValueError,
        "beam_size",
        lambda: decode.beam_search(tiny_transformer(), src_ids(), beam_size=0),
    ),
    case(
        "beam-size-float",
        TypeError,
        "beam_size",
        lambda: decode.beam_search(tiny_transformer(), src_ids(), beam_size=2.5),
    ),
    case("beam-alpha-nan", ValueError, "alpha", lambda: decode.beam_search(tiny_transformer(), src_ids(), alpha=nan())),
    case("beam-seq2seq-src-float", ValueError, "src", lambda: decode.beam_search(tiny_seq2seq(), src_ids().float())),
    case("length-penalty-alpha-str", TypeError, "alpha", lambda: decode.length_penalty(torch.ones(3), "0.6")),
    # lib.metrics
    case("bleu-different-lengths", ValueError, "hypotheses", lambda: metrics.corpus_bleu(["a b", "c"], ["a b"])),
    case("bleu-non-str", TypeError, "hypotheses", lambda: metrics.corpus_bleu(["a b", 5], ["a b", "c"])),
    case("bleu-str-not-list", TypeError, "hypotheses", lambda: metrics.corpus_bleu("a cat", "a cat")),
    case("bleu-unknown-tokenize", ValueError, "tokenize", lambda: metrics.corpus_bleu(["a"], ["a"], tokenize="nope")),
    case("bleu-by-length-none", TypeError, "lengths", lambda: metrics.bleu_by_length(["a"], ["a"], [None], [0])),
    case("bleu-by-length-edges", ValueError, "edges", lambda: metrics.bleu_by_length(["a"], ["a"], [1], [5, 5])),
    # lib.data
    case("token-batches-zero", ValueError, "max_tokens", lambda: data.token_batches(examples(), 0)),
    case("token-batches-nan", TypeError, "max_tokens", lambda: data.token_batches(examples(), nan())),
    case("token-batches-str", TypeError, "max_tokens", lambda: data.token_batches(examples(), "100")),
    case("token-batches-not-pairs", TypeError, "examples", lambda: data.token_batches([1, 2, 3], 100)),
    case("make-batches-zero", ValueError, "max_tokens", lambda: data.make_batches(examples(), 0, 0, 1, 2)),
    case("pad-batch-nested", TypeError, "rows", lambda: data.pad_batch([[1, [2]]])),
    case("pad-batch-float-ids", TypeError, "rows", lambda: data.pad_batch([[1.5, 2]])),
    case("pad-batch-str", TypeError, "rows", lambda: data.pad_batch("abc")),
    case("pad-batch-empty", ValueError, "rows", lambda: data.pad_batch([])),
    case("pad-batch-pad-id-float", TypeError, "pad_id", lambda: data.pad_batch([[1, 2]], pad_id=0.5)),
    case("pad-batch-width-small", ValueError, "width", lambda: data.pad_batch([[1, 2, 3]], width=2)),
    case("collate-empty", ValueError, "examples", lambda: data.collate([], 0, 1, 2)),
    case(
        "encode-pairs-max-len-zero",
        ValueError,
        "max_len",
        lambda: data.encode_pairs([("a", "b")], toy_tokenizer(), max_len=0),
    ),
    case("load-multi30k-split", ValueError, "split", lambda: data.load_multi30k("training")),
    # lib.bpe
    case("train-bpe-vocab-4", ValueError, "vocab_size", lambda: bpe.train_bpe(["a b"], vocab_size=4)),
    case("bpe-decode-nested", ValueError, "ids", lambda: bpe.decode(toy_tokenizer(), [[5, 6]])),
    case("bpe-decode-float", TypeError, "ids", lambda: bpe.decode(toy_tokenizer(), [5.5])),
    case("bpe-decode-negative", ValueError, "ids", lambda: bpe.decode(toy_tokenizer(), [5, -1])),
    case("bpe-decode-outside-vocab", ValueError, "ids", lambda: bpe.decode(toy_tokenizer(), [5, 10_000])),
    case("bpe-encode-non-str", ValueError, "text", lambda: bpe.encode(toy_tokenizer(), 5)),
    case(
        "bpe-load-missing",
        FileNotFoundError,
        "tokenizer file",
        lambda: bpe.load_tokenizer(Path("/nonexistent/tok.json")),
    ),
    # lib.lm
    case("gpt-sequences-max-len-1", ValueError, "max_len", lambda: lm.gpt_sequences([[5, 6]], 1)),
    case("gpt-sequences-max-len-str", TypeError, "max_len", lambda: lm.gpt_sequences([[5, 6]], "8")),
    case("sentence-batches-zero", ValueError, "batch_size", lambda: lm.sentence_batches([[1]] * 4, 0)),
    case("unigram-counts-outside-vocab", ValueError, "sequences", lambda: lm.unigram_counts([[1, 2, 12]], 10)),
    case("unigram-counts-vocab-str", TypeError, "vocab_size", lambda: lm.unigram_counts([[1, 2]], "10")),
    case("collate-pairs-unequal", ValueError, "rows", lambda: lm.collate_pairs([([1, 2, 3], [0, 0])])),
    # lib.efficient
    case("sliding-window-zero", ValueError, "window", lambda: efficient.sliding_window_attention(*qkv(), 0)),
    case("sliding-window-float", TypeError, "window", lambda: efficient.sliding_window_attention(*qkv(), 1.5)),
    case(
        "sliding-window-heads-mismatch",
        ValueError,
        "key",
        lambda: efficient.sliding_window_attention(qkv(1, 2)[0], *qkv(1, 3)[1:], 2),
    ),
    case(
        "sliding-window-int-query",
        ValueError,
        "query",
        lambda: efficient.sliding_window_attention(qkv()[0].long(), *qkv()[1:], 2),
    ),
    case("linear-heads-mismatch", ValueError, "key", lambda: efficient.linear_attention(qkv(1, 2)[0], *qkv(1, 3)[1:])),
    case("linear-dtype-mismatch", ValueError, "key", lambda: efficient.linear_attention(qkv()[0].double(), *qkv()[1:])),
    case(
        "linear-unknown-feature-map",
        ValueError,
        "feature_map",
        lambda: efficient.linear_attention(*qkv(), feature_map="relu"),
    ),
    case("performer-num-features-zero", ValueError, "num_features", lambda: efficient.performer_attention(*qkv(), 0)),
    case(
        "lsh-odd-buckets",
        ValueError,
        "num_buckets",
        lambda: efficient.lsh_attention(qkv(seq_q=6, seq_k=6)[0], None, qkv(seq_q=6, seq_k=6)[2], 3),
    ),
    case(
        "lsh-heads-mismatch",
        ValueError,
        "value",
        lambda: efficient.lsh_attention(qkv(1, 2)[0], None, qkv(1, 3)[2], 2, bucket_size=5),
    ),
    case(
        "sliding-window-mask-global",
        ValueError,
        "global_tokens",
        lambda: efficient.sliding_window_mask(8, 1, global_tokens=[8]),
    ),
    case(
        "performer-features-projection-1d",
        ValueError,
        "projection",
        lambda: efficient.performer_features(torch.zeros(3, 8), torch.zeros(8)),
    ),
    case(
        "performer-features-x-list",
        TypeError,
        "x must be a torch.Tensor",
        lambda: efficient.performer_features([[0.0] * 8], torch.zeros(4, 8)),
    ),
    # lib.cost
    case("flops-zero", ValueError, "seq_q", lambda: cost.attention_flops(1, 1, 0, 4, 8)),
    case("weight-bytes-dtype-str", ValueError, "dtype", lambda: cost.attention_weight_bytes(1, 1, 4, dtype="float32")),
    case("crossover-lengths", ValueError, "seq_lens", lambda: cost.crossover([1, 2], [1.0], [1.0, 2.0])),
    case(
        "attention-cost-scalar",
        TypeError,
        "seq_lens",
        lambda: cost.attention_cost(16, time_it=False, measure_memory=False),
    ),
    case("median-ms-repeats-zero", ValueError, "repeats", lambda: cost.median_ms({"a": lambda: 0}, repeats=0)),
    # lib.interfaces
    case(
        "attention-maps-select-str",
        TypeError,
        "index",
        lambda: AttentionMaps(encoder=[torch.zeros(2, 1, 3, 3)]).select("0"),
    ),
]


# The core the chapters display (attention, the masks, the positional table) trusts its callers: the models' entry
# points above check user input once, and the core states its invariants as asserts with a message (the STYLE's
# three rooms). These rows of the core raise AssertionError naming the argument; the core leaves the others to
# torch's own error, and the entry points (the models' forward/encode/decode, the constructors) check them.
CORE_ASSERTS = {
    "sdpa-mask-int": "mask",
    "causal-mask-zero": "seq_len",
    "causal-mask-float": "seq_len",
    "padding-mask-float-ids": "lengths_or_tokens",
    "padding-mask-no-pad-id": "pad_id",
    "padding-mask-3d": "lengths_or_tokens",
    "padding-mask-negative-length": "lengths",
    "padding-mask-pad-id-str": "pad_id",
    "mha-batch-mismatch": "batch",
    "mha-fused-batch-mismatch": "batch",
    "mha-query-width": "query",
    "mha-mask-int": "mask",
    "sinusoidal-odd-d-model": "d_model",
    "sinusoidal-base-nan": "base",
    "pe-offset-negative": "offset",
    "pe-offset-too-large": "offset",
    "pe-offset-float": "offset",
}
CORE_LEFT_TO_TORCH = {
    "sdpa-query-int-dtype", "sdpa-dtype-mismatch", "sdpa-batch-mismatch", "sdpa-query-not-a-tensor", "sdpa-mask-shape",
    "sdpa-dropout-nan", "sdpa-dropout-str", "causal-mask-bool", "sinusoidal-max-len-zero", "sinusoidal-d-model-float",
    "pe-x-wrong-width",
}  # fmt: skip
assert {c.id for c in CASES} >= CORE_ASSERTS.keys() | CORE_LEFT_TO_TORCH, "a core row was renamed"
CASES = [
    pytest.param(c.values[0], AssertionError, CORE_ASSERTS[c.id], id=c.id) if c.id in CORE_ASSERTS else c
    for c in CASES
    if c.id not in CORE_LEFT_TO_TORCH
]


@pytest.mark.parametrize("call, error, match", CASES)
def test_wrong_input_raises_a_named_error(call, error, match):
    with pytest.raises(error, match=match):
        call()
