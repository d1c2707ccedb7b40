"""A modern decoder-only Transformer: pre-norm RMSNorm, rotary positions, SwiGLU, grouped-query attention.

One block of :class:`ModernGPT`, as in PaLM, Llama and their descendants:

    h = x + Attention(RMSNorm(x))          grouped-query, causal, queries and keys rotated by RoPE
    x = h + SwiGLU(RMSNorm(h))             (Swish(h W) ⊙ h V) W₂

No learned or sinusoidal position table (positions enter only through the rotation), no biases, a final RMSNorm
and an output layer tied to the token embedding. The forward pass has :class:`lib.gpt.GPT`'s interface
(``ids (batch, seq)`` → ``logits (batch, seq, vocab)``), so ``lib.gpt.lm_loss``, ``lib.lm`` and
``lib.training.train`` train either model, and ``lib.decode.generate`` samples either.

Source: Zhang & Sennrich (2019), "Root Mean Square Layer Normalization", Eq. (4); Shazeer (2020), "GLU Variants
Improve Transformer", Eq. (6); Su et al. (2021), "RoFormer", Eq. (34); Ainslie et al. (2023), "GQA", §2.2;
the combination: Touvron et al. (2023), "LLaMA: Open and Efficient Foundation Language Models", §2.2.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import ClassVar, Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_int as _check_int
from ._checks import check_model_config, check_token_ids
from .attention import KeyValue, MultiHeadAttention, causal_mask
from .config import Config
from .interfaces import AttentionMaps, check_config_types
from .positional import apply_rotary
from .special_tokens import PAD_ID
from .transformer import LayerCache

__all__ = [
    "RMSNorm",
    "swiglu_hidden_size",
    "SwiGLUFeedForward",
    "ModernGPTConfig",
    "ModernBlock",
    "ModernGPT",
]


class RMSNorm(nn.Module):
    """RMSNorm(x) = x / RMS(x) ⊙ g, RMS(x) = √(mean(x²) + ε): LayerNorm without the mean and without a bias.

    Args:
        d_model: size of the normalised (last) dimension.
        eps: ε, added to the mean square for stability (torch.nn.RMSNorm's ``eps``).

    Raises:
        TypeError: d_model is not an int; eps is not a number.
        ValueError: d_model < 1; eps not positive and finite.

    Source: Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", §4, Eq. (4).
    """

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        _check_int(d_model, "d_model", 1)
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
            raise TypeError(f"eps must be a number, got {eps!r}")
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"eps must be positive and finite, got {eps}")
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(d_model))  # the gain g

    def forward(self, x: Tensor) -> Tensor:
        """Normalise every position by its root mean square, then scale by the gain.

        Args:
            x: ``(..., d_model)``.

        Returns:
            ``(..., d_model)``, each position with root mean square ≈ 1 before the gain.
        """
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return x / rms * self.weight


def swiglu_hidden_size(d_model: int, d_ff: int) -> int:
    """The SwiGLU hidden size whose three bias-free matrices hold as many weights as the two-matrix FFN.

    The book's ReLU feed-forward (``lib.transformer.PositionwiseFeedForward``) has 2·d_model·d_ff + d_ff + d_model
    parameters (with biases); SwiGLU's W, V and W₂ have 3·d_model·hidden. Shazeer keeps the count by taking
    hidden = 2/3 · d_ff; this rounds the exact ratio, biases included (d_model 128, d_ff 512: 343).

    Args:
        d_model: model width.
        d_ff: the two-matrix FFN's hidden width.

    Returns:
        round((2·d_model·d_ff + d_ff + d_model) / (3·d_model)), at least 1.

    Raises:
        TypeError: d_model or d_ff is not an int.
        ValueError: d_model or d_ff < 1.

    Source: Shazeer 2020, "GLU Variants Improve Transformer", §2 ("we reduce the number of hidden units d_ff ... by
    a factor of 2/3").
    """
    _check_int(d_model, "d_model", 1)
    _check_int(d_ff, "d_ff", 1)
    return max(1, round((2 * d_model * d_ff + d_ff + d_model) / (3 * d_model)))


class SwiGLUFeedForward(nn.Module):
    """FFN_SwiGLU(x) = (Swish(x W) ⊙ x V) W₂, applied to every position separately; no biases.

    Args:
        d_model: input and output width.
        d_ff: the hidden width of the two-matrix FFN this one replaces; the hidden size is
            :func:`swiglu_hidden_size` of it, so both have (almost) the same number of parameters.
        dropout: dropout on the hidden activations.
        hidden: the hidden size itself, overriding the one derived from d_ff.

    Shapes: ``(batch, seq, d_model)`` → ``(batch, seq, d_model)``.

    Raises:
        TypeError: d_model, d_ff or hidden is not an int.
        ValueError: a size < 1.

    Source: Shazeer 2020, "GLU Variants Improve Transformer", §2, Eq. (6) (Swish = SiLU, β = 1).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, hidden: int | None = None) -> None:
        super().__init__()
        self.hidden = swiglu_hidden_size(d_model, d_ff) if hidden is None else _check_int(hidden, "hidden", 1)
        self.w = nn.Linear(d_model, self.hidden, bias=False)  # the gate, through Swish
        self.v = nn.Linear(d_model, self.hidden, bias=False)  # the linear value it gates
        self.w2 = nn.Linear(self.hidden, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """Gate, multiply, project back, at every position.

        Args:
            x: ``(batch, seq, d_model)`` (any leading dimensions work).

        Returns:
            ``(batch, seq, d_model)``.
        """
        return self.w2(self.dropout(F.silu(self.w(x)) * self.v(x)))


@dataclass
class ModernGPTConfig(Config):
    """Sizes of a :class:`ModernGPT`.

    Attributes:
        vocab_size: the tokenizer's vocabulary size.
        d_model: model width.
        num_heads: query heads; must divide d_model, and d_k = d_model / num_heads must be even (RoPE pairs).
        num_kv_heads: key/value heads (grouped-query attention); must divide num_heads. num_heads = MHA, 1 = MQA.
        num_layers: blocks.
        d_ff: the two-matrix FFN width the SwiGLU replaces (its hidden size is ``swiglu_hidden_size(d_model,
            d_ff)``).
        ffn_hidden: the SwiGLU hidden size itself, overriding the one derived from d_ff; None = derived.
        max_len: the longest sequence trained on and accepted (RoPE itself has no table and no limit).
        dropout: on residual branches, the SwiGLU's hidden units and attention weights.
        pad_id: padding id (ignored by ``lib.gpt.lm_loss``).
        rope_base: RoPE's wavelength base (10000 in RoFormer and Llama 2).
        norm_eps: every RMSNorm's ε.

    Raises:
        TypeError: a field of the wrong type (see :func:`lib.interfaces.check_config_types`).
        ValueError: non-positive sizes; d_model not divisible by num_heads, num_heads not by num_kv_heads; an odd
            d_k; dropout outside [0, 1); pad_id outside the vocabulary; rope_base or norm_eps not positive.

    Source: Touvron et al. 2023, "LLaMA", §2.2 (pre-normalisation with RMSNorm, SwiGLU, rotary embeddings);
    Ainslie et al. 2023 (grouped-query attention, as in Llama 2).
    """

    vocab_size: int
    d_model: int = 128
    num_heads: int = 4
    num_kv_heads: int = 2
    num_layers: int = 2
    d_ff: int = 512
    ffn_hidden: int | None = None
    max_len: int = 64
    dropout: float = 0.1
    pad_id: int = PAD_ID
    rope_base: float = 10000.0
    norm_eps: float = 1e-6

    PRESETS: ClassVar[tuple[str, ...]] = ("tiny", "llama2_70b")

    def __post_init__(self) -> None:
        check_config_types(self)
        sizes = ("vocab_size", "d_model", "num_heads", "num_kv_heads", "num_layers", "d_ff", "max_len")
        check_model_config(self, sizes)
        if self.ffn_hidden is not None and self.ffn_hidden < 1:
            raise ValueError(f"ffn_hidden must be positive or None, got {self.ffn_hidden}")
        if self.num_heads % self.num_kv_heads != 0:
            raise ValueError(f"num_kv_heads ({self.num_kv_heads}) must divide num_heads ({self.num_heads})")
        if (self.d_model // self.num_heads) % 2 != 0:
            raise ValueError(f"d_k = d_model / num_heads must be even for RoPE, got {self.d_model // self.num_heads}")
        for name in ("rope_base", "norm_eps"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be positive and finite, got {value}")

    @property
    def d_k(self) -> int:
        """Features per head, d_model / num_heads."""
        return self.d_model // self.num_heads

    @classmethod
    def tiny(cls, vocab_size: int, **overrides) -> ModernGPTConfig:
        """The book's CPU-sized modern decoder, parameter-matched to ``lib.gpt.GPTConfig.tiny``.

        d_model 128, 4 query heads sharing 2 key/value heads, 2 layers, 48 positions, dropout 0.1, as GPT's tiny
        preset. GQA saves 2 · 128 · 64 weights per layer (and a bias-free model some more), and RoPE needs no
        position table (48 · 128 weights): the SwiGLU's hidden size 396 spends them again, so that both models
        have the same number of parameters within 0.1 % (for any vocabulary: the token table is the same).

        Args:
            vocab_size: the tokenizer's vocabulary size.
            **overrides: any other field, replacing the preset's value (the match holds for the defaults).

        Returns:
            The :class:`ModernGPTConfig`.
        """
        kw = dict(d_model=128, num_heads=4, num_kv_heads=2, num_layers=2, d_ff=512, ffn_hidden=396, max_len=48)
        return cls(vocab_size, **{**kw, **overrides})

    @classmethod
    def llama2_70b(cls, vocab_size: int = 32000, **overrides) -> ModernGPTConfig:
        """Llama 2 70B's shape: 80 layers, d_model 8192, 64 query heads, 8 key/value heads, SwiGLU hidden 28672.

        Its 4096-token context is ``max_len``. For the key/value-cache arithmetic of the book
        (``lib.decode.kv_cache_table``); building the model itself would need about 70 billion parameters.

        Args:
            vocab_size: the tokenizer's vocabulary size (Llama 2: 32000).
            **overrides: any other field, replacing the preset's value.

        Returns:
            The :class:`ModernGPTConfig`.

        Source: Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned Chat Models", §2.2 and Table 1
        (GQA for the 34B and 70B models); the sizes are those of the released model's parameters.
        """
        kw = dict(
            d_model=8192,
            num_heads=64,
            num_kv_heads=8,
            num_layers=80,
            d_ff=4 * 8192,
            ffn_hidden=28672,
            max_len=4096,
            dropout=0.0,
            norm_eps=1e-5,
        )
        return cls(vocab_size, **{**kw, **overrides})


class ModernBlock(nn.Module):
    """One pre-norm decoder block: x + GQA(RMSNorm(x)) with rotary queries and keys, then h + SwiGLU(RMSNorm(h)).

    Args:
        config: the model's :class:`ModernGPTConfig` (its sizes, dropout, rope_base and norm_eps).

    Source: Touvron et al. 2023, "LLaMA", §2.2; Xiong et al. 2020 (pre-normalisation).
    """

    def __init__(self, config: ModernGPTConfig) -> None:
        super().__init__()
        c = config
        self.rope_base = c.rope_base
        self.attn_norm = RMSNorm(c.d_model, c.norm_eps)
        self.attn = MultiHeadAttention(
            c.d_model, c.num_heads, c.dropout, bias=False, fused=True, num_kv_heads=c.num_kv_heads
        )
        self.ffn_norm = RMSNorm(c.d_model, c.norm_eps)
        self.ffn = SwiGLUFeedForward(c.d_model, c.d_ff, c.dropout, hidden=c.ffn_hidden)
        self.dropout = nn.Dropout(c.dropout)

    def forward(
        self,
        x: Tensor,
        positions: Tensor,
        mask: Tensor | None = None,
        cache: LayerCache | None = None,
        return_attention: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """One block; with a ``cache``, ``x`` holds only the new positions and their keys/values are appended.

        Args:
            x: ``(batch, seq, d_model)``.
            positions: ``(seq,)`` the positions of x's rows (RoPE's m).
            mask: bool, broadcastable to ``(batch, heads, seq, seq_total)``; ``True`` = may attend (causal).
            cache: a ``lib.transformer.LayerCache`` whose ``self_kv`` holds the rotated keys and values
                ``(batch, num_kv_heads, t, d_k)`` of earlier positions; extended in place. None = no cache.
            return_attention: return the attention weights.

        Returns:
            x: ``(batch, seq, d_model)``.
            weights: ``(batch, heads, seq, seq_total)`` or None when not requested.

        Source: Su et al. 2021, Eq. (34) (queries and keys rotated, values not); Ainslie et al. 2023, §2.2.
        """
        h = self.attn_norm(x)
        q = apply_rotary(self.attn.project_query(h), positions, self.rope_base)  # (batch, heads, seq, d_k)
        kv = self.attn.project_key_value(h, h)  # (batch, kv_heads, seq, d_k) each
        kv = KeyValue(apply_rotary(kv.key, positions, self.rope_base), kv.value)
        if cache is not None:  # this step's keys and values join the past ones
            cache.self_kv = kv = kv if cache.self_kv is None else cache.self_kv.append(kv)
        a, w = self.attn.attend(q, kv, mask, return_attention)
        x = x + self.dropout(a)
        x = x + self.dropout(self.ffn(self.ffn_norm(x)))
        return x, w


class ModernGPT(nn.Module):
    """Decoder-only language model of modern blocks: ``ids (batch, seq)`` → next-token ``logits (batch, seq, vocab)``.

    The interface of :class:`lib.gpt.GPT`: the causal mask (``True`` = may attend) lets ``logits[:, t]`` see
    tokens 0..t only, right-padding needs no mask, ``return_attention=True`` adds an ``AttentionMaps`` whose
    ``decoder`` list holds one ``(batch, heads, seq, seq)`` map per layer. In addition, :meth:`new_cache` and the
    ``cache``/``offset`` arguments decode one token at a time, keeping ``num_kv_heads`` heads per layer.

    Args:
        config: the model's sizes (:class:`ModernGPTConfig`).

    Raises:
        TypeError: ``config`` is not a :class:`ModernGPTConfig`.

    Source: Touvron et al. 2023, "LLaMA", §2.2; Radford et al. 2018, §3.1 (the language model and its loss).
    """

    def __init__(self, config: ModernGPTConfig) -> None:
        super().__init__()
        if not isinstance(config, ModernGPTConfig):
            raise TypeError(f"config must be a ModernGPTConfig, got {type(config).__name__}")
        self.config = config
        self.token_embed = nn.Embedding(config.vocab_size, config.d_model)  # no position table: RoPE
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(ModernBlock(config) for _ in range(config.num_layers))
        self.final_norm = RMSNorm(config.d_model, config.norm_eps)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # as lib.gpt.GPT: N(0, 0.02) for every matrix (Radford et al. 2018, §4.1); RMSNorm gains start at 1
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)

    def num_parameters(self) -> int:
        """Number of trainable parameters (the token table counted once: the output layer reuses it).

        Returns:
            The count of scalar weights with ``requires_grad``.
        """
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def new_cache(self) -> list[LayerCache]:
        """An empty key/value cache for step-by-step decoding.

        Returns:
            One empty ``lib.transformer.LayerCache`` per block (only ``self_kv`` is used).
        """
        return [LayerCache() for _ in self.layers]

    def _check(self, ids: Tensor, cache: list[LayerCache] | None, offset: int) -> None:
        check_token_ids(ids, "ids", self.config.vocab_size, self.config.max_len, offset=_check_int(offset, "offset", 0))
        if cache is None:
            if offset != 0:
                raise ValueError(f"offset must be 0 without a cache, got {offset}")
            return
        if not isinstance(cache, list) or len(cache) != len(self.layers):
            raise ValueError(f"cache must be a list of {len(self.layers)} LayerCache, from new_cache()")
        cached = 0 if cache[0].self_kv is None else cache[0].self_kv.key.size(2)
        if offset != cached:
            raise ValueError(f"offset must be the number of positions already in the cache ({cached}), got {offset}")

    @overload
    def forward(
        self,
        ids: Tensor,
        return_attention: Literal[False] = False,
        cache: list[LayerCache] | None = None,
        offset: int = 0,
    ) -> Tensor: ...

    @overload
    def forward(
        self, ids: Tensor, return_attention: Literal[True], cache: list[LayerCache] | None = None, offset: int = 0
    ) -> tuple[Tensor, AttentionMaps]: ...

    def forward(
        self, ids: Tensor, return_attention: bool = False, cache: list[LayerCache] | None = None, offset: int = 0
    ) -> Tensor | tuple[Tensor, AttentionMaps]:
        """Next-token logits.

        Args:
            ids: ``(batch, seq)`` LongTensor, ``offset + seq ≤ max_len``.
            return_attention: also return each layer's attention weights.
            cache: from :meth:`new_cache`, extended in place (then ``ids`` holds only the new positions); None = no
                cache.
            offset: position of ``ids[:, 0]``, the number of positions already cached (0 without a cache).

        Returns:
            ``logits (batch, seq, vocab_size)``; with ``return_attention=True``, the pair ``(logits,
            AttentionMaps)`` whose ``decoder`` list holds one causal ``(batch, heads, seq, offset + seq)`` map per
            layer.

        Raises:
            TypeError: ids is not a tensor; offset is not an int.
            ValueError: wrong shape/dtype, ids outside the vocabulary, ``offset + seq > max_len``; a cache of the
                wrong length, or an offset that is not the cached length.

        Source: Radford et al. 2018, §3.1, Eq. (2), with the blocks of Touvron et al. 2023, §2.2.
        """
        self._check(ids, cache, offset)
        seq = ids.size(1)
        positions = torch.arange(offset, offset + seq, device=ids.device)
        # (seq, offset + seq): new positions see every cached one and, causally, each other
        mask = None if offset and seq == 1 else causal_mask(seq, ids.device, offset)
        h = self.dropout(self.token_embed(ids))  # no position embedding: RoPE rotates q and k in every block
        weights = []
        for i, layer in enumerate(self.layers):
            h, w = layer(h, positions, mask, None if cache is None else cache[i], return_attention)
            if return_attention:
                weights.append(w)
        logits = self.final_norm(h) @ self.token_embed.weight.T  # tied output layer
        return (logits, AttentionMaps(decoder=weights)) if return_attention else logits
