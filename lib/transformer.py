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
import numbers
from dataclasses import dataclass
from typing import ClassVar, Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import KeyValue, MultiHeadAttention, causal_mask, padding_mask
from .config import Config
from .interfaces import AttentionMaps, check_config_types
from .positional import PositionalEncoding

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
        ValueError: d_model not divisible by num_heads; odd d_model; non-positive sizes; no decoder layer or a
            negative number of encoder layers; unknown activation; shared embeddings with different vocabulary
            sizes; dropout outside [0, 1); layer_norm_eps not positive and finite; pad_id outside a vocabulary.

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

    def __post_init__(self) -> None:
        check_config_types(self)
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "num_heads", "d_ff", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.num_encoder_layers < 0 or self.num_decoder_layers < 1:
            raise ValueError("need num_encoder_layers >= 0 and num_decoder_layers >= 1")
        if self.d_model % self.num_heads != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})")
        if self.d_model % 2 != 0:
            raise ValueError(f"d_model must be even for the sinusoidal encoding, got {self.d_model}")
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {self.activation!r}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                "share_embeddings needs one joint vocabulary, got src_vocab_size="
                f"{self.src_vocab_size} and tgt_vocab_size={self.tgt_vocab_size}"
            )
        for name in ("dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if not (math.isfinite(self.layer_norm_eps) and self.layer_norm_eps > 0):
            raise ValueError(f"layer_norm_eps must be a positive finite number, got {self.layer_norm_eps}")
        if not 0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(
                f"pad_id must be an id of both vocabularies, in [0, {min(self.src_vocab_size, self.tgt_vocab_size)}), "
                f"got {self.pad_id}"
            )

    @property
    def d_k(self) -> int:
        """Features per head, d_k = d_v = d_model / num_heads."""
        return self.d_model // self.num_heads

    @classmethod
    def tiny(cls, vocab_size: int = 100, **overrides) -> TransformerConfig:
        """A toy model for tests and hand-worked examples: d_model 32, 4 heads, 2+2 layers, d_ff 64, no dropout.

        Args:
            vocab_size: the joint source/target vocabulary size.
            **overrides: any other field, replacing the preset's value.

        Returns:
            The :class:`TransformerConfig`.
        """
        kw = dict(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=64, dropout=0.0)
        return cls(vocab_size, vocab_size, **{**kw, **overrides})

    @classmethod
    def multi30k(cls, vocab_size: int = 8000, **overrides) -> TransformerConfig:
        """The capstone's model, sized for a laptop CPU: d_model 128, 4 heads, 3+3 layers, d_ff 512, pre-LN.

        About 2.4 M parameters with an 8,000-token joint vocabulary (tied embeddings), so the shipped
        weights fit in under 5 MB as float16.

        Args:
            vocab_size: the joint source/target vocabulary size (the book's BPE: 8,000).
            **overrides: any other field, replacing the preset's value.

        Returns:
            The :class:`TransformerConfig`.
        """
        kw = dict(
            d_model=128,
            num_heads=4,
            num_encoder_layers=3,
            num_decoder_layers=3,
            d_ff=512,
            dropout=0.1,
            norm_first=True,
        )
        return cls(vocab_size, vocab_size, **{**kw, **overrides})

    @classmethod
    def multi30k_wide(cls, vocab_size: int = 8000, **overrides) -> TransformerConfig:
        """A wider capstone model: d_model 256, 8 heads, 3+3 layers, d_ff 512, pre-LN.

        The configuration of common Multi30k tutorials; otherwise as :meth:`multi30k`.

        Args:
            vocab_size: the joint source/target vocabulary size (the book's BPE: 8,000).
            **overrides: any other field, replacing the preset's value.

        Returns:
            The :class:`TransformerConfig`.
        """
        return cls.multi30k(vocab_size, **{**dict(d_model=256, num_heads=8), **overrides})

    @classmethod
    def base(cls, vocab_size: int = 37000, **overrides) -> TransformerConfig:
        """The paper's base model: d_model 512, 8 heads, 6+6 layers, d_ff 2048, dropout 0.1 (Table 3).

        Args:
            vocab_size: the joint vocabulary size (default 37000, the paper's shared English–German BPE, §5.1).
            **overrides: any other field, replacing the default's value.

        Returns:
            The :class:`TransformerConfig` (about 63 M parameters with the default vocabulary, embeddings tied).
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
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = _ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        """Apply the two linear layers, with the activation and dropout between them, at every position.

        Args:
            x: ``(batch, seq, d_model)`` (any leading dimensions work).

        Returns:
            ``(batch, seq, d_model)``.
        """
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

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        fused: bool = False,
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, attention_dropout, fused=fused)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(
        self, x: Tensor, mask: Tensor | None = None, return_attention: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """One encoder layer: self-attention, then the feed-forward network, each with Add & Norm.

        Args:
            x: ``(batch, seq, d_model)``.
            mask: optional bool tensor broadcastable to ``(batch, heads, seq, seq)``; ``True`` = may attend
                (a padding mask for an encoder, a causal mask for GPT).
            return_attention: return the attention weights (False lets a fused layer skip them).

        Returns:
            x: ``(batch, seq, d_model)``.
            weights: ``(batch, heads, seq, seq)`` (rows sum to 1), or None when not requested and the fused
            kernel ran.

        Source: Vaswani et al. 2017, §3.1 ("LayerNorm(x + Sublayer(x))").
        """
        if self.norm_first:
            h = self.norm1(x)
            a, w = self.self_attn(h, h, h, mask, return_attention)
            x = x + self.dropout(a)
            x = x + self.dropout(self.ffn(self.norm2(x)))
        else:
            a, w = self.self_attn(x, x, x, mask, return_attention)
            x = self.norm1(x + self.dropout(a))  # Add & Norm
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

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        fused: bool = False,
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, attention_dropout, fused=fused)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, attention_dropout, fused=fused)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def _self_attention(self, h, mask, cache, return_attention):
        kv = self.self_attn.project_key_value(h, h)
        if cache is not None:
            if cache.self_kv is not None:  # append this step's keys/values to the past ones
                kv = KeyValue(
                    torch.cat([cache.self_kv.key, kv.key], dim=2),
                    torch.cat([cache.self_kv.value, kv.value], dim=2),
                )
            cache.self_kv = kv
        return self.self_attn.attend(h, kv, mask, return_attention)

    def _cross_attention(self, h, memory, memory_mask, cache, return_attention):
        if cache is not None and cache.cross_kv is not None:
            kv = cache.cross_kv
        else:
            kv = self.cross_attn.project_key_value(memory, memory)
            if cache is not None:
                cache.cross_kv = kv
        return self.cross_attn.attend(h, kv, memory_mask, return_attention)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: LayerCache | None = None,
        return_attention: bool = False,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """One decoder layer.

        Args:
            x: target states ``(batch, seq_t, d_model)``; with a ``cache``, only the new positions.
            memory: encoder output ``(batch, seq_s, d_model)``.
            self_mask: broadcastable to ``(batch, heads, seq_t, seq_t_total)``, usually causal.
            memory_mask: broadcastable to ``(batch, heads, seq_t, seq_s)``, usually the source padding mask.
            cache: a :class:`LayerCache` to read and extend (incremental decoding), or None.
            return_attention: return the attention weights.

        Returns:
            ``(x (batch, seq_t, d_model), self weights (batch, heads, seq_t, seq_t_total) or None,
            cross weights (batch, heads, seq_t, seq_s) or None)``.
        """
        if self.norm_first:
            h = self.norm1(x)
            a, w_self = self._self_attention(h, self_mask, cache, return_attention)
            x = x + self.dropout(a)
            a, w_cross = self._cross_attention(self.norm2(x), memory, memory_mask, cache, return_attention)
            x = x + self.dropout(a)
            x = x + self.dropout(self.ffn(self.norm3(x)))
        else:
            a, w_self = self._self_attention(x, self_mask, cache, return_attention)
            x = self.norm1(x + self.dropout(a))
            a, w_cross = self._cross_attention(x, memory, memory_mask, cache, return_attention)
            x = self.norm2(x + self.dropout(a))
            x = self.norm3(x + self.dropout(self.ffn(x)))
        return x, w_self, w_cross


def _layer_kwargs(c: TransformerConfig) -> dict:
    return dict(
        d_model=c.d_model,
        num_heads=c.num_heads,
        d_ff=c.d_ff,
        dropout=c.dropout,
        attention_dropout=c.attention_dropout,
        norm_first=c.norm_first,
        activation=c.activation,
        layer_norm_eps=c.layer_norm_eps,
        fused=c.fused_attention,
    )


class Encoder(nn.Module):
    """A stack of N :class:`EncoderLayer` (plus a final LayerNorm when pre-LN).

    Shapes: ``x (batch, seq, d_model)``, mask broadcastable to ``(batch, heads, seq, seq)``.

    Args:
        config: the :class:`TransformerConfig` (num_encoder_layers layers of its sizes).

    Source: Vaswani et al. 2017, §3.1 (N = 6).
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(**_layer_kwargs(config)) for _ in range(config.num_encoder_layers))
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.norm_first else nn.Identity()

    def forward(
        self, x: Tensor, mask: Tensor | None = None, return_attention: bool = False
    ) -> tuple[Tensor, list[Tensor]]:
        """Run every encoder layer, then the final LayerNorm (pre-LN only).

        Args:
            x: embedded source plus positions, ``(batch, seq, d_model)``.
            mask: optional bool tensor broadcastable to ``(batch, heads, seq, seq)``; ``True`` = may attend
                (the source padding mask).
            return_attention: collect each layer's attention weights.

        Returns:
            memory: ``(batch, seq, d_model)``.
            weights: one ``(batch, heads, seq, seq)`` tensor per layer; empty unless ``return_attention``.
        """
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask, return_attention)
            if return_attention:
                weights.append(w)
        return self.norm(x), weights


class Decoder(nn.Module):
    """A stack of N :class:`DecoderLayer` (plus a final LayerNorm when pre-LN).

    Args:
        config: the :class:`TransformerConfig` (num_decoder_layers layers of its sizes).

    Source: Vaswani et al. 2017, §3.1 (N = 6).
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(**_layer_kwargs(config)) for _ in range(config.num_decoder_layers))
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.norm_first else nn.Identity()

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: list[LayerCache] | None = None,
        return_attention: bool = False,
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """Run every decoder layer, then the final LayerNorm (pre-LN only).

        Args:
            x: embedded target plus positions, ``(batch, seq_t, d_model)``; with a ``cache``, only the new
                positions.
            memory: encoder output ``(batch, seq_s, d_model)``.
            self_mask: optional bool tensor broadcastable to ``(batch, heads, seq_t, seq_t_total)``; ``True`` =
                may attend (usually causal).
            memory_mask: optional bool tensor broadcastable to ``(batch, heads, seq_t, seq_s)``; ``True`` = may
                attend (the source padding mask).
            cache: one :class:`LayerCache` per layer, read and extended in place; None = no cache.
            return_attention: collect each layer's attention weights.

        Returns:
            x: ``(batch, seq_t, d_model)``.
            self_weights: one ``(batch, heads, seq_t, seq_t_total)`` tensor per layer (empty unless
            ``return_attention``).
            cross_weights: one ``(batch, heads, seq_t, seq_s)`` tensor per layer (empty unless
            ``return_attention``).
        """
        self_ws, cross_ws = [], []
        for i, layer in enumerate(self.layers):
            x, ws, wc = layer(x, memory, self_mask, memory_mask, None if cache is None else cache[i], return_attention)
            if return_attention:
                self_ws.append(ws)
                cross_ws.append(wc)
        return self.norm(x), self_ws, cross_ws


class Transformer(nn.Module):
    """The encoder–decoder Transformer for sequence-to-sequence tasks such as translation.

    Embeddings are multiplied by √d_model and added to the sinusoidal positional encoding (§3.4,
    §3.5). With ``share_embeddings`` (one joint vocabulary) the source embedding, the target
    embedding and the output projection are one matrix (§3.4, Press & Wolf 2017).

    Masks are built from the token ids: source padding is hidden from every attention over the
    source; the decoder's self-attention is causal. (Target padding needs no mask of its own: it
    comes after every real token, so the causal mask already hides it from every real query.)

    Args:
        config: a :class:`TransformerConfig`.

    Raises:
        TypeError: ``config`` is not a :class:`TransformerConfig` (e.g. a dict: use ``TransformerConfig.from_dict``).

    Source: Vaswani et al. 2017, Figure 1 and §3.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(
                f"config must be a TransformerConfig (from a preset or TransformerConfig.from_dict), "
                f"got {type(config).__name__}"
            )
        self.config = config
        c = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = (
            self.src_embed if c.share_embeddings else nn.Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        )
        self.positional = PositionalEncoding(c.d_model, c.max_len, c.dropout)
        self.encoder = Encoder(c)
        self.decoder = Decoder(c)
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        self._reset_parameters()
        if c.share_embeddings:
            self.output.weight = self.tgt_embed.weight

    def _reset_parameters(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
        for emb in {self.src_embed, self.tgt_embed}:
            nn.init.normal_(emb.weight, mean=0.0, std=self.config.d_model**-0.5)
            with torch.no_grad():
                emb.weight[self.config.pad_id].zero_()

    def num_parameters(self) -> int:
        """Number of trainable parameters (a tied matrix counts once).

        Returns:
            The count of scalar weights with ``requires_grad``.
        """
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _check_tokens(self, x: Tensor, name: str, vocab: int, offset: int = 0) -> None:
        """Token ids ``(batch, seq_len)`` of an integer dtype, inside the vocabulary, that fit max_len from offset."""
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of token ids (batch, seq_len), got {type(x).__name__}")
        if x.dim() != 2 or x.dtype not in (torch.long, torch.int):
            raise ValueError(
                f"{name} must be integer token ids of shape (batch, seq_len), got {tuple(x.shape)} {x.dtype}"
            )
        # The range check reads the ids' values (a device sync on a GPU); torch.compile traces the model without it,
        # since a value read would break its graph in two (the eager model, the same weights, still checks).
        if x.numel() and not torch.compiler.is_compiling() and (int(x.min()) < 0 or int(x.max()) >= vocab):
            raise ValueError(f"{name} holds ids outside [0, {vocab})")
        if offset + x.size(1) > self.config.max_len:
            where = f"from offset {offset} " if offset else ""
            raise ValueError(
                f"{name} has {x.size(1)} positions {where}but the model's max_len is {self.config.max_len} "
                "(the rows of its positional encoding)"
            )

    def _check_memory(self, tgt: Tensor, memory: Tensor, src_mask: Tensor) -> None:
        """The encoder output and source mask that :meth:`decode` reads, against the target batch."""
        if not isinstance(memory, Tensor) or not isinstance(src_mask, Tensor):
            raise TypeError("memory and src_mask must be the tensors that encode returns")
        d = self.config.d_model
        if memory.dim() != 3 or memory.size(-1) != d or not memory.is_floating_point():
            raise ValueError(
                f"memory must be the encoder output, a float (batch, seq_s, d_model={d}) tensor, got "
                f"{tuple(memory.shape)} {memory.dtype}"
            )
        if memory.size(0) != tgt.size(0):
            raise ValueError(
                f"tgt and memory must have the same batch size, got tgt {tgt.size(0)} and memory {memory.size(0)}"
            )
        batch, seq_s = memory.shape[:2]
        if src_mask.dtype != torch.bool:
            raise ValueError(f"src_mask must be a bool tensor (True = real source token), got dtype {src_mask.dtype}")
        full = (batch, self.config.num_heads, tgt.size(1), seq_s)
        try:
            ok = src_mask.dim() == 4 and torch.broadcast_shapes(src_mask.shape, full) == full
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(
                f"src_mask of shape {tuple(src_mask.shape)} does not fit memory {tuple(memory.shape)}: expected "
                f"(batch, 1, 1, seq_s) = {(batch, 1, 1, seq_s)}, as encode returns"
            )

    def _check_cache(self, cache: list[LayerCache] | None, offset: int) -> None:
        if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
            raise TypeError(f"offset must be an int, got {offset!r} ({type(offset).__name__})")
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        if cache is None:
            return
        layers = len(self.decoder.layers)
        if not isinstance(cache, list) or len(cache) != layers or not all(isinstance(c, LayerCache) for c in cache):
            raise ValueError(f"cache must be a list of {layers} LayerCache (one per decoder layer), from new_cache()")
        cached = 0 if cache[0].self_kv is None else cache[0].self_kv.key.size(2)
        if offset != cached:
            raise ValueError(f"offset must be the number of positions already in the cache ({cached}), got {offset}")

    def _embed(self, tokens: Tensor, table: nn.Embedding, offset: int = 0) -> Tensor:
        return self.positional(table(tokens) * math.sqrt(self.config.d_model), offset)

    def source_mask(self, src: Tensor) -> Tensor:
        """The source padding mask.

        Args:
            src: source ids ``(batch, seq_s)``.

        Returns:
            ``(batch, 1, 1, seq_s)`` bool, ``True`` = real source token (may be attended to).
        """
        return padding_mask(src, self.config.pad_id)

    def _encode(self, src: Tensor, return_attention: bool) -> tuple[Tensor, Tensor, list[Tensor]]:
        self._check_tokens(src, "src", self.config.src_vocab_size)
        mask = self.source_mask(src)
        memory, weights = self.encoder(self._embed(src, self.src_embed), mask, return_attention)
        return memory, mask, weights

    def _decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: list[LayerCache] | None,
        offset: int,
        return_attention: bool,
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        self._check_cache(cache, offset)
        self._check_tokens(tgt, "tgt", self.config.tgt_vocab_size, offset)
        self._check_memory(tgt, memory, src_mask)
        t_new = tgt.size(1)
        if cache is None or offset == 0:
            self_mask = causal_mask(t_new, tgt.device)
        else:  # new positions see all cached ones and, causally, each other
            self_mask = (
                None
                if t_new == 1
                else torch.ones(t_new, offset + t_new, dtype=torch.bool, device=tgt.device).tril(offset)
            )
        x = self._embed(tgt, self.tgt_embed, offset)
        x, self_ws, cross_ws = self.decoder(x, memory, self_mask, src_mask, cache, return_attention)
        return self.output(x), self_ws, cross_ws

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
        memory, mask, _ = self._encode(src, return_attention=False)
        return memory, mask

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
        return self._decode(tgt, memory, src_mask, cache, offset, return_attention=False)[0]

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

    def forward(
        self, src: Tensor, tgt: Tensor, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, AttentionMaps]:
        """Teacher-forced forward pass.

        Args:
            src: source ids ``(batch, seq_s)``, right-padded with ``pad_id``.
            tgt: target input ids ``(batch, seq_t)`` (starting with BOS), right-padded.
            return_attention: also return every layer's attention weights.

        Returns:
            logits ``(batch, seq_t, tgt_vocab_size)``; with ``return_attention=True``, the pair
            ``(logits, AttentionMaps)`` whose ``encoder``, ``decoder`` and ``cross`` lists hold one
            ``(batch, heads, seq_q, seq_k)`` tensor per layer.

        Raises:
            TypeError: ``src`` or ``tgt`` is not a tensor.
            ValueError: ids of the wrong shape/dtype, outside the vocabulary, or longer than max_len; src and tgt
                of different batch sizes.

        Source: Vaswani et al. 2017, Figure 1 and §3.
        """
        if all(isinstance(t, Tensor) and t.dim() == 2 for t in (src, tgt)) and src.size(0) != tgt.size(0):
            raise ValueError(f"src and tgt must have the same batch size, got {src.size(0)} and {tgt.size(0)}")
        memory, src_mask, enc_w = self._encode(src, return_attention)
        logits, dec_w, cross_w = self._decode(tgt, memory, src_mask, None, 0, return_attention)
        if return_attention:
            return logits, AttentionMaps(encoder=enc_w, decoder=dec_w, cross=cross_w)
        return logits
