"""The plumbing of the chapter on multi-head attention: the statistics of the trained model's encoder heads.

The chapter shows what the measurement finds; the batching and the bookkeeping of which query rows count live
here.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tokenizers import Tokenizer
from torch import Tensor

from ..bpe import encode
from ..special_tokens import BOS_ID, EOS
from ..transformer import Transformer

__all__ = ["PATTERNS", "head_patterns"]

# Where a query row's largest weight can go, in the order of the last axis of ``head_patterns``'s shares.
PATTERNS = ("previous token", "same token", "next token", "final </s>")


@torch.no_grad()
def head_patterns(
    model: Transformer, tokenizer: Tokenizer, sentences: Sequence[str], batch_size: int = 100
) -> tuple[Tensor, float]:
    """For every encoder head, the share of query rows whose largest weight goes to each of :data:`PATTERNS`.

    The previous token counts rows 1 .. n-1; the same token, the next token and the final ``</s>`` count rows
    0 .. n-2 (row n-1 is ``</s>`` itself). A sentence is cut to the model's ``max_len`` with ``</s>`` last.

    Args:
        model: a trained encoder-decoder (``lib.transformer.Transformer``); its encoder maps are measured.
        tokenizer: the model's tokenizer.
        sentences: source sentences (German for the shipped model).
        batch_size: sentences per forward pass.

    Returns:
        ``(shares, mean_length)``: shares of shape ``(layers, heads, 4)`` in [0, 1], and the mean number of
        tokens per sentence (``</s>`` included).
    """
    layers, heads = model.config.num_encoder_layers, model.config.num_heads
    eos = tokenizer.token_to_id(EOS)
    ids = [encode(tokenizer, s)[: model.config.max_len - 1] + [eos] for s in sentences]
    hits, rows = torch.zeros(layers, heads, len(PATTERNS)), torch.zeros(len(PATTERNS))
    for start in range(0, len(ids), batch_size):
        chunk = ids[start : start + batch_size]
        width = max(map(len, chunk))
        src = torch.zeros(len(chunk), width, dtype=torch.long)  # 0 = padding
        for r, seq in enumerate(chunk):
            src[r, : len(seq)] = torch.tensor(seq)
        bos = torch.full((len(chunk), 1), BOS_ID)  # a one-token target: the encoder maps do not depend on it
        enc_weights = model(src, bos, return_attention=True)[1].encoder  # per layer: (batch, heads, q, k)
        length = torch.tensor([len(seq) for seq in chunk])[:, None, None]  # (batch, 1, 1)
        pos = torch.arange(width)[None, None, :]  # query position
        real = pos < length
        targets = [
            (pos - 1, real & (pos >= 1)),
            (pos, real & (pos < length - 1)),
            (pos + 1, real & (pos < length - 1)),
            (length - 1, real & (pos < length - 1)),
        ]
        for p, (_, valid) in enumerate(targets):
            rows[p] += valid[:, 0].sum()
        for layer, w in enumerate(enc_weights):
            top = w.argmax(dim=-1)  # (batch, heads, q)
            for p, (target, valid) in enumerate(targets):
                hits[layer, :, p] += ((top == target) & valid).sum(dim=(0, 2))
    return hits / rows, sum(map(len, ids)) / len(ids)
