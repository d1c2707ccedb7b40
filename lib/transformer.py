"""The Transformer encoder–decoder, one small module per concept.

Encoder layer:  x → x + Dropout(SelfAttention(x)) → LayerNorm → x + Dropout(FFN(x)) → LayerNorm   (post-LN)
Decoder layer:  as above with a causal self-attention, then cross-attention over the encoder output.
Pre-LN (``norm_first=True``) moves each LayerNorm to the sub-layer's input: x + Dropout(Sublayer(LN(x))).

Source: Vaswani et al. (2017), "Attention Is All You Need", §3.1–§3.4 (post-LN, Add & Norm
LayerNorm(x + Sublayer(x))); pre-LN as analysed by Xiong et al. (2020), "On Layer Normalization in the
Transformer Architecture".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_float_input, check_int, check_token_ids
from .attention import KeyValue, MultiHeadAttention, causal_mask, padding_mask
from .config import Config
from .interfaces import AttentionMaps, check_config_types
from .positional import PositionalEncoding
from .special_tokens import SPECIAL_TOKENS

__all__ = [
    "TransformerConfig",
    "PositionwiseFeedForward",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "Transformer",
    "LayerCache",
]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


@dataclass
class TransformerConfig(Config):
    """Sizes and switches of a :class:`Transformer`; build one with a named preset.

    Presets: :meth:`tiny` (tests), :meth:`multi30k` (the capstone, fits a CPU), :meth:`multi30k_wide`,
    :meth:`base` (the paper's base model, Table 3). Vocabulary sizes come from the tokenizer.

    Attributes:
        src_vocab_size, tgt_vocab_size: vocabulary sizes of source and target (equal when shared).
        d_model: model width, the size of every embedding and sub-layer output (paper: 512).
        num_heads: attention heads h; must divide d_model (paper: 8).
        num_encoder_layers: encoder layers N (paper: 6); 0 gives a decoder that attends to the embedded source.
        num_decoder_layers: decoder layers N, at least 1 (paper: 6).
        d_ff: hidden width of the position-wise feed-forward network (paper: 2048).
        dropout: P_drop on the embeddings + positions and on every sub-layer output (paper: 0.1, §5.4).
        attention_dropout: dropout on the attention weights (the paper has none: 0.0).
        max_len: longest sequence, in tokens: the rows of the positional-encoding table.
        norm_first: pre-LN (LayerNorm at each sub-layer's input, plus a final LayerNorm) if True; post-LN
            (paper) if False.
        share_embeddings: one matrix for the source embedding, the target embedding and the output layer
            (needs src_vocab_size == tgt_vocab_size; paper §3.4).
        pad_id: the padding id; hidden from attention by the source mask, its embedding row starts at 0.
        activation: the FFN's non-linearity, ``"relu"`` (paper) or ``"gelu"``.
        layer_norm_eps: ε of every LayerNorm (torch's default 1e-5).
        fused_attention: let attention call torch's fused ``F.scaled_dot_product_attention`` whenever no
            weights are requested (same maths, faster).

    Raises:
        TypeError: a field of the wrong type (``"8000"`` or ``8000.0`` for an int, ``1`` for a bool): see
            :func:`lib.interfaces.check_config_types`.
        ValueError: d_model not divisible by num_heads; odd d_model; non-positive sizes; a vocabulary of no more
            than the 4 special tokens; no decoder layer or a negative number of encoder layers; unknown
            activation; shared embeddings with different vocabulary sizes; dropout outside [0, 1); layer_norm_eps
            not positive and finite; pad_id outside a vocabulary.

    Source: Vaswani et al. 2017, §3 and Table 3 (the base model's sizes), §5.4 (dropout).
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    num_heads: int = 8
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    attention_dropout: float = 0.0
    max_len: int = 256
    norm_first: bool = False
    share_embeddings: bool = True
    pad_id: int = 0
    activation: str = "relu"
    layer_norm_eps: float = 1e-5
    fused_attention: bool = True

    PRESETS: ClassVar[tuple[str, ...]] = ("tiny", "multi30k", "multi30k_wide", "base")
    SHAPE_FIELDS = ("d_model", "num_heads", "num_encoder_layers", "num_decoder_layers", "d_ff")  # from_dict needs them

    def __post_init__(self) -> None:
        check_config_types(self)
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "num_heads", "d_ff", "max_len"):
            least = len(SPECIAL_TOKENS) + 1 if name.endswith("vocab_size") else 1  # the special tokens and a word
            if getattr(self, name) < least:
                raise ValueError(f"{name} must be at least {least}, got {getattr(self, name)}")
        if self.num_encoder_layers < 0 or self.num_decoder_layers < 1:
            raise ValueError("need num_encoder_layers >= 0 and num_decoder_layers >= 1")
        if self.d_model % self.num_heads != 0 or self.d_model % 2 != 0:
            raise ValueError(f"d_model ({self.d_model}) must be even and divisible by num_heads ({self.num_heads})")
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {self.activation!r}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(f"share_embeddings needs src_vocab_size == tgt_vocab_size, got {self.src_vocab_size}")
        if not (0.0 <= self.dropout < 1.0 and 0.0 <= self.attention_dropout < 1.0):
            raise ValueError(f"dropout, attention_dropout must be in [0, 1): {self.dropout}, {self.attention_dropout}")
        if not (math.isfinite(self.layer_norm_eps) and self.layer_norm_eps > 0):
            raise ValueError(f"layer_norm_eps must be a positive finite number, got {self.layer_norm_eps}")
        if not 0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(f"pad_id must be an id of both vocabularies, got {self.pad_id}")

    @property
    def d_k(self) -> int:
        """Features per head, d_k = d_v = d_model / num_heads."""
        return self.d_model // self.num_heads

    @classmethod
    def tiny(cls, vocab_size: int = 100, **overrides) -> TransformerConfig:
        """Tests and hand-worked examples: d_model 32, 4 heads, 2+2 layers, d_ff 64, no dropout; ``overrides`` win."""
        kw = dict(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=64, dropout=0.0)
        return cls(vocab_size, vocab_size, **{**kw, **overrides})

    @classmethod
    def multi30k(cls, vocab_size: int = 8000, **overrides) -> TransformerConfig:
        """The capstone's model for a laptop CPU: d_model 128, 4 heads, 3+3 layers, d_ff 512, pre-LN; ~2.4 M weights."""
        kw = dict(d_model=128, num_heads=4, num_encoder_layers=3, num_decoder_layers=3, d_ff=512, norm_first=True)
        return cls(vocab_size, vocab_size, **{**kw, **overrides})

    @classmethod
    def multi30k_wide(cls, vocab_size: int = 8000, **overrides) -> TransformerConfig:
        """A wider capstone model (d_model 256, 8 heads; the common Multi30k tutorials' size), else :meth:`multi30k`."""
        return cls.multi30k(vocab_size, **{**dict(d_model=256, num_heads=8), **overrides})

    @classmethod
    def base(cls, vocab_size: int = 37000, **overrides) -> TransformerConfig:
        """The paper's base model (Table 3): d_model 512, 8 heads, 6+6 layers, d_ff 2048, dropout 0.1; ~63 M weights.

        The default vocabulary is the paper's shared English–German BPE of 37,000 tokens (§5.1).
        """
        return cls(vocab_size, vocab_size, **overrides)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W₁ + b₁) W₂ + b₂, applied to every position separately.

    Args:
        d_model: input and output width.
        d_ff: hidden width (2048 in the paper's base model).
        dropout: dropout on the hidden activations.
        activation: ``"relu"`` (paper) or ``"gelu"`` (BERT/GPT).

    Shapes: ``(batch, seq, d_model)`` → ``(batch, seq, d_model)``.

    Raises:
        ValueError: an activation other than ``"relu"`` or ``"gelu"``.

    Source: Vaswani et al. 2017, §3.3, Eq. (2).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu") -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout, self.activation = nn.Dropout(dropout), _ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        """(batch, seq, d_model) → (batch, seq, d_model), each position on its own."""
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


@dataclass
class LayerCache:
    """What one decoder layer remembers between decoding steps.

    Attributes:
        self_kv: keys/values of the tokens decoded so far, each ``(batch, heads, t, d_k)``, growing by one
            position per step; None before the first step.
        cross_kv: the encoder output projected once, each ``(batch, heads, seq_src, d_k)``; None before the
            first step.

    Source: Vaswani et al. 2017, §3.1 (the decoder is auto-regressive: step t reads only positions < t, so
    their keys and values can be kept); the cache itself is an implementation device, not in the paper.
    """

    self_kv: KeyValue | None = None
    cross_kv: KeyValue | None = None

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search: follow the surviving hypotheses), in place.

        Args:
            index: ``(new_batch,)`` LongTensor of the rows to keep, in their new order (rows may repeat).

        Raises:
            ValueError: ``index`` is not a 1-D integer tensor.
        """
        if not isinstance(index, Tensor) or index.dim() != 1 or index.is_floating_point() or index.dtype == torch.bool:
            raise ValueError(f"index must be a 1-D LongTensor of batch rows, got {getattr(index, 'shape', index)!r}")
        for kv in (self.self_kv, self.cross_kv):
            if kv is not None:
                kv.key = kv.key.index_select(0, index)
                kv.value = kv.value.index_select(0, index)


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in a residual connection and LayerNorm.

    Post-LN (paper): ``x = LayerNorm(x + Dropout(Sublayer(x)))``.
    Pre-LN: ``x = x + Dropout(Sublayer(LayerNorm(x)))``.

    Args:
        d_model, num_heads, d_ff: sizes (num_heads must divide d_model).
        dropout: on each sub-layer's output and inside the FFN.
        attention_dropout: on the attention weights.
        norm_first: pre-LN if True, post-LN (paper) if False.
        activation, layer_norm_eps, fused: see :class:`TransformerConfig`.

    Source: Vaswani et al. 2017, §3.1 and §5.4.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, attention_dropout=0.0, norm_first=False,
                 activation="relu", layer_norm_eps=1e-5, fused=False):  # fmt: skip
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, attention_dropout, fused=fused)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout, self.norm_first = nn.Dropout(dropout), norm_first

    def forward(self, x, mask=None, return_attention=False):
        """x (batch, seq, d_model) → the same shape, and the weights (batch, heads, seq, seq) or None. §3.1."""
        if self.norm_first:  # pre-LN: x + Dropout(Sublayer(LayerNorm(x)))
            h = self.norm1(x)
            a, w = self.self_attn(h, h, h, mask, return_attention)
            x = x + self.dropout(a)
            x = x + self.dropout(self.ffn(self.norm2(x)))
        else:  # post-LN, the paper's: LayerNorm(x + Dropout(Sublayer(x)))
            a, w = self.self_attn(x, x, x, mask, return_attention)
            x = self.norm1(x + self.dropout(a))
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, w


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the encoder output, feed-forward; each with Add & Norm.

    Args:
        d_model, num_heads, d_ff: sizes (num_heads must divide d_model).
        dropout: on each sub-layer's output and inside the FFN.
        attention_dropout: on the attention weights (both attentions).
        norm_first: pre-LN if True, post-LN (paper) if False.
        activation, layer_norm_eps, fused: see :class:`TransformerConfig`.

    Source: Vaswani et al. 2017, §3.1 ("a third sub-layer, which performs multi-head attention over
    the output of the encoder stack") and §3.2.3.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, attention_dropout=0.0, norm_first=False,
                 activation="relu", layer_norm_eps=1e-5, fused=False):  # fmt: skip
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, attention_dropout, fused=fused)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, attention_dropout, fused=fused)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout, self.norm_first = nn.Dropout(dropout), norm_first

    def self_attention(self, h, mask, cache=None, return_attention=False):
        """Masked self-attention over the target; with a cache, this step's keys and values join the past ones."""
        kv = self.self_attn.project_key_value(h, h)  # (batch, heads, seq_t, d_k) each
        if cache is not None:
            cache.self_kv = kv = kv if cache.self_kv is None else cache.self_kv.append(kv)
        return self.self_attn.attend(self.self_attn.project_query(h), kv, mask, return_attention)

    def cross_attention(self, h, memory, memory_mask, cache=None, return_attention=False):
        """Queries from the decoder, keys and values from the encoder output (projected once, then cached)."""
        kv = None if cache is None else cache.cross_kv
        if kv is None:
            kv = self.cross_attn.project_key_value(memory, memory)  # (batch, heads, seq_s, d_k) each
        if cache is not None:
            cache.cross_kv = kv
        return self.cross_attn.attend(self.cross_attn.project_query(h), kv, memory_mask, return_attention)

    def forward(self, x, memory, self_mask=None, memory_mask=None, cache=None, return_attention=False):
        """x (batch, seq_t, d_model), memory (batch, seq_s, d_model) → x, self and cross weights (or None). §3.1."""
        if self.norm_first:  # pre-LN
            a, w_self = self.self_attention(self.norm1(x), self_mask, cache, return_attention)
            x = x + self.dropout(a)
            a, w_cross = self.cross_attention(self.norm2(x), memory, memory_mask, cache, return_attention)
            x = x + self.dropout(a)
            x = x + self.dropout(self.ffn(self.norm3(x)))
        else:  # post-LN, the paper's
            a, w_self = self.self_attention(x, self_mask, cache, return_attention)
            x = self.norm1(x + self.dropout(a))
            a, w_cross = self.cross_attention(x, memory, memory_mask, cache, return_attention)
            x = self.norm2(x + self.dropout(a))
            x = self.norm3(x + self.dropout(self.ffn(x)))
        return x, w_self, w_cross


def _layer_kwargs(c: TransformerConfig) -> dict:
    return dict(d_model=c.d_model, num_heads=c.num_heads, d_ff=c.d_ff, dropout=c.dropout,
                attention_dropout=c.attention_dropout, norm_first=c.norm_first, activation=c.activation,
                layer_norm_eps=c.layer_norm_eps, fused=c.fused_attention)  # fmt: skip


class Encoder(nn.Module):
    """A stack of N :class:`EncoderLayer` (plus a final LayerNorm when pre-LN).

    Shapes: ``x (batch, seq, d_model)``, mask broadcastable to ``(batch, heads, seq, seq)``.

    Args:
        config: the :class:`TransformerConfig` (num_encoder_layers layers of its sizes).

    Source: Vaswani et al. 2017, §3.1 (N = 6).
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(**_layer_kwargs(config)) for _ in range(config.num_encoder_layers)])
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.norm_first else nn.Identity()

    def forward(self, x, mask=None, return_attention=False):
        """x (batch, seq, d_model) through every layer → memory, and each layer's weights when asked."""
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask, return_attention)
            weights.append(w)
        return self.norm(x), weights if return_attention else []


class Decoder(nn.Module):
    """A stack of N :class:`DecoderLayer` (plus a final LayerNorm when pre-LN).

    Args:
        config: the :class:`TransformerConfig` (num_decoder_layers layers of its sizes).

    Source: Vaswani et al. 2017, §3.1 (N = 6).
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(**_layer_kwargs(config)) for _ in range(config.num_decoder_layers)])
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.norm_first else nn.Identity()

    def forward(self, x, memory, self_mask=None, memory_mask=None, cache=None, return_attention=False):
        """x (batch, seq_t, d_model) through every layer (cache: a LayerCache per layer) → x, self and cross weights."""
        self_ws, cross_ws = [], []
        for i, layer in enumerate(self.layers):
            x, ws, wc = layer(x, memory, self_mask, memory_mask, None if cache is None else cache[i], return_attention)
            self_ws.append(ws)
            cross_ws.append(wc)
        if not return_attention:
            self_ws, cross_ws = [], []
        return self.norm(x), self_ws, cross_ws


class Transformer(nn.Module):
    """The encoder–decoder Transformer for sequence-to-sequence tasks such as translation.

    Embeddings are multiplied by √d_model and added to the sinusoidal positional encoding (§3.4,
    §3.5). With ``share_embeddings`` (one joint vocabulary) the source embedding, the target
    embedding and the output projection are one matrix (§3.4, Press & Wolf 2017).

    Masks are built from the token ids: source padding is hidden from every attention over the
    source; the decoder's self-attention is causal. (Target padding needs no mask of its own: it
    comes after every real token, so the causal mask already hides it from every real query.)

    Entry points and compilers: ``forward``, ``encode`` and ``decode`` check their inputs in eager mode; under
    ``torch.compile`` (``lib.train --compile``) they run with the same type, shape and dtype checks, but the
    range of the token ids is not read (one eager call checks it). ``torch.jit.trace`` is refused with one line
    at the entry point and ``torch.jit.script`` cannot compile the models (both deprecated by PyTorch): use
    ``torch.compile``, or ``torch.export`` as :mod:`lib.export` does for ONNX. tests/unit/test_transformer.py
    checks each of these claims.

    Args:
        config: a :class:`TransformerConfig`.

    Raises:
        TypeError: ``config`` is not a :class:`TransformerConfig` (e.g. a dict: use ``TransformerConfig.from_dict``).

    Source: Vaswani et al. 2017, Figure 1 and §3.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig (a preset or from_dict), got {type(config).__name__}")
        self.config = c = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = self.src_embed
        if not c.share_embeddings:
            self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.positional = PositionalEncoding(c.d_model, c.max_len, c.dropout)
        self.encoder, self.decoder = Encoder(c), Decoder(c)
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        self.init_weights()
        if c.share_embeddings:  # one matrix for both embeddings and the output layer (§3.4)
            self.output.weight = self.tgt_embed.weight

    def init_weights(self) -> None:
        """Xavier-uniform weight matrices; embeddings N(0, 1/d_model), the padding row at 0."""
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
        for emb in {self.src_embed, self.tgt_embed}:
            nn.init.normal_(emb.weight, mean=0.0, std=self.config.d_model**-0.5)
            nn.init.zeros_(emb.weight[self.config.pad_id])

    def num_parameters(self) -> int:
        """Number of trainable parameters (a tied matrix counts once).

        Returns:
            The count of scalar weights with ``requires_grad``.
        """
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def embed(self, tokens: Tensor, table: nn.Embedding, offset: int = 0) -> Tensor:
        """table(tokens) · √d_model + PE (§3.4, §3.5): ids (batch, seq) → (batch, seq, d_model)."""
        return self.positional(table(tokens) * math.sqrt(self.config.d_model), offset)

    def source_mask(self, src: Tensor) -> Tensor:
        """The source padding mask: ids ``(batch, seq_s)`` → ``(batch, 1, 1, seq_s)`` bool, True = real token."""
        return padding_mask(src, self.config.pad_id)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """Encode source ids once; :meth:`decode` then reads the result at every step.

        Args:
            src: source ids ``(batch, seq_s)``, right-padded with ``pad_id``.

        Returns:
            ``(memory, src_mask)``: the encoder output ``(batch, seq_s, d_model)`` and the source padding
            mask ``(batch, 1, 1, seq_s)`` (``True`` = real token, may be attended to).

        Raises:
            TypeError: ``src`` is not a tensor.
            ValueError: ids not 2-D integers, out of the vocabulary, or longer than ``max_len``.

        Source: Vaswani et al. 2017, §3.1 (the encoder maps x to z = (z_1, …, z_n)).
        """
        check_token_ids(src, "src", self.config.src_vocab_size, self.config.max_len)
        src_mask = self.source_mask(src)
        return self.encoder(self.embed(src, self.src_embed), src_mask)[0], src_mask

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: list[LayerCache] | None = None,
        offset: int = 0,
    ) -> Tensor:
        """Next-token logits for target ids given the encoder output.

        Args:
            tgt: target ids ``(batch, seq_t)``; with a ``cache``, only the new positions
                ``offset … offset + seq_t - 1``.
            memory: ``(batch, seq_s, d_model)`` from :meth:`encode`.
            src_mask: ``(batch, 1, 1, seq_s)`` from :meth:`encode`.
            cache: per-layer :class:`LayerCache` list from :meth:`new_cache` (incremental decoding), extended
                in place; None = no cache (the whole prefix is recomputed).
            offset: position of ``tgt[:, 0]`` in the target sentence.

        Returns:
            logits ``(batch, seq_t, tgt_vocab_size)``; ``logits[:, t]`` scores the token after ``tgt[:, t]``.

        Raises:
            TypeError: ``tgt``, ``memory`` or ``src_mask`` is not a tensor; ``offset`` is not an int.
            ValueError: ids of the wrong shape/dtype or outside the vocabulary; a negative offset, or one that is not
                the number of positions already cached; a position beyond ``max_len``; ``memory`` or ``src_mask``
                that do not fit ``tgt`` (batch size, d_model, mask shape or dtype); a cache with the wrong number of
                layers.

        Source: Vaswani et al. 2017, §3.1 (the decoder is auto-regressive) and §3.2.3 (causal masking).
        """
        self._check_decode(tgt, memory, src_mask, cache, offset)
        past = offset if cache is not None else 0  # positions already cached, which every new one sees
        self_mask = None if past and tgt.size(1) == 1 else causal_mask(tgt.size(1), tgt.device, past)
        x = self.embed(tgt, self.tgt_embed, offset)
        return self.output(self.decoder(x, memory, self_mask, src_mask, cache)[0])

    def new_cache(self) -> list[LayerCache]:
        """An empty key/value cache for step-by-step decoding.

        Returns:
            One empty :class:`LayerCache` per decoder layer.
        """
        return [LayerCache() for _ in self.decoder.layers]

    @overload
    def forward(self, src: Tensor, tgt: Tensor, return_attention: Literal[False] = False) -> Tensor: ...

    @overload
    def forward(self, src: Tensor, tgt: Tensor, return_attention: Literal[True]) -> tuple[Tensor, AttentionMaps]: ...

    def forward(self, src, tgt, return_attention=False):
        """Teacher-forced forward pass: the logits of every target position.

        Args:
            src: source ids ``(batch, seq_s)``, right-padded with ``pad_id``.
            tgt: target input ids ``(batch, seq_t)`` (BOS first), right-padded.
            return_attention: also return every layer's weights, ``(batch, heads, seq_q, seq_k)`` each.

        Returns:
            logits ``(batch, seq_t, tgt_vocab_size)``, or ``(logits, AttentionMaps)`` with ``return_attention``.

        Raises:
            TypeError: src or tgt is not a tensor.
            ValueError: ids not 2-D integers, outside the vocabulary or beyond max_len; batch sizes that differ.

        Source: Vaswani et al. 2017, Figure 1 and §3.
        """
        c = self.config
        check_token_ids(src, "src", c.src_vocab_size, c.max_len)
        check_token_ids(tgt, "tgt", c.tgt_vocab_size, c.max_len, batch=src.size(0))
        src_mask = self.source_mask(src)  # (batch, 1, 1, seq_s), True = real token
        memory, enc_w = self.encoder(self.embed(src, self.src_embed), src_mask, return_attention)
        self_mask = causal_mask(tgt.size(1), tgt.device)  # (seq_t, seq_t)
        x, dec_w, cross_w = self.decoder(
            self.embed(tgt, self.tgt_embed), memory, self_mask, src_mask, None, return_attention
        )
        logits = self.output(x)  # (batch, seq_t, tgt_vocab_size)
        return (logits, AttentionMaps(encoder=enc_w, decoder=dec_w, cross=cross_w)) if return_attention else logits

    def _check_decode(self, tgt, memory, src_mask, cache, offset) -> None:
        """decode's inputs: the target ids, the cache and its offset, and the encoder output and mask that fit them."""
        check_int(offset, "offset", 0)
        check_token_ids(tgt, "tgt", self.config.tgt_vocab_size, self.config.max_len, offset=offset)
        if cache is not None:
            layers = len(self.decoder.layers)
            if not isinstance(cache, list) or len(cache) != layers or not all(isinstance(c, LayerCache) for c in cache):
                raise ValueError(
                    f"cache must be a list of {layers} LayerCache (one per decoder layer), from new_cache()"
                )
            cached = 0 if cache[0].self_kv is None else cache[0].self_kv.key.size(2)
            if offset != cached:
                raise ValueError(
                    f"offset must be the number of positions already in the cache ({cached}), got {offset}"
                )
        if not isinstance(memory, Tensor) or not isinstance(src_mask, Tensor):
            raise TypeError("memory and src_mask must be the tensors that encode returns")
        d = self.config.d_model
        if memory.dim() != 3 or memory.size(-1) != d or not memory.is_floating_point():
            raise ValueError(f"memory must be the encoder output, a float (batch, seq_s, d_model={d}) tensor, "
                             f"got {tuple(memory.shape)} {memory.dtype}")  # fmt: skip
        check_float_input(memory, "memory", self.output.weight.dtype)
        if memory.size(0) != tgt.size(0):
            raise ValueError(f"tgt and memory must have the same batch size, got {tgt.size(0)} and {memory.size(0)}")
        batch, seq_s = memory.shape[:2]
        if src_mask.dtype != torch.bool:
            raise ValueError(f"src_mask must be a bool tensor (True = real source token), got dtype {src_mask.dtype}")
        full = (batch, self.config.num_heads, tgt.size(1), seq_s)
        if src_mask.dim() != 4 or not all(a in (1, b) for a, b in zip(src_mask.shape, full)):
            raise ValueError(f"src_mask of shape {tuple(src_mask.shape)} does not fit memory {tuple(memory.shape)}: "
                             f"expected (batch, 1, 1, seq_s) = {(batch, 1, 1, seq_s)}, as encode returns")  # fmt: skip
