"""GPT: a decoder-only Transformer language model (causal self-attention, learned positions, tied output).

    h₀ = U W_e + W_p                       token embeddings plus learned position embeddings
    h_l = transformer_block(h_{l-1})       self-attention under the causal mask, then the FFN
    P(u) = softmax(h_n W_eᵀ)               the output layer is the token table again (tied)
    L₁(U) = Σ_i log P(u_i | u_{i-k}, …, u_{i-1}; Θ)

A GPT block is the Transformer's *encoder* layer with a causal mask: there is no encoder to cross-attend to,
so the decoder's middle sub-layer disappears (Radford et al. 2018, §3.1 "a multi-layer Transformer decoder";
Liu et al. 2018, "Generating Wikipedia by Summarizing Long Sequences", the decoder-only variant it cites).

Sequences are ``<s> u₁ … u_m </s>`` with the book's tokenizer ids (BOS = 1, EOS = 2, PAD = 0).

Source: Radford, Narasimhan, Salimans, Sutskever (2018), "Improving Language Understanding by Generative
Pre-Training", §3.1 Eq. (1) and Eq. (2), §3.2 Eq. (3)–(5); GPT-2: Radford et al. (2019) §2.3 (pre-LN, final
LayerNorm).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_int as _check_int
from ._checks import check_model_config, check_new_tokens, check_sampling, check_token_ids
from .attention import causal_mask
from .config import Config
from .interfaces import AttentionMaps, check_config_types
from .special_tokens import PAD_ID
from .transformer import EncoderLayer

__all__ = ["GPTConfig", "GPT", "lm_loss", "generate", "generate_tokens"]

_ACTIVATIONS = ("gelu", "relu")


def _check_ids(ids: Tensor, name: str) -> None:
    if not isinstance(ids, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.dtype != torch.long:
        raise ValueError(f"{name} must be a LongTensor of token ids, got dtype {ids.dtype}")


@dataclass
class GPTConfig(Config):
    """Sizes of a :class:`GPT`.

    Attributes:
        vocab_size: the tokenizer's vocabulary size.
        d_model, num_heads, num_layers, d_ff: sizes (GPT-1: 768, 12, 12, 3072). ``num_heads`` must divide
            ``d_model``; :class:`lib.attention.MultiHeadAttention` raises otherwise.
        max_len: context window k = number of learned positions (GPT-1: 512).
        dropout: on embeddings, residual branches and attention weights (GPT-1: 0.1).
        pad_id: padding id (ignored by :func:`lm_loss`).
        norm_first: pre-LN plus a final LayerNorm (GPT-2) if True; post-LN (GPT-1, the paper's Transformer) if False.
        activation: ``"gelu"`` (GPT) or ``"relu"``.

    Raises:
        TypeError: a field of the wrong type (``"128"`` for an int, ``1`` for a bool): see
            :func:`lib.interfaces.check_config_types`.
        ValueError: non-positive sizes, d_model not divisible by num_heads, dropout outside [0, 1), pad_id outside
            the vocabulary, an unknown activation.

    Source: Radford et al. 2018, §4.1 "Model specifications".
    """

    vocab_size: int
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 512
    max_len: int = 64
    dropout: float = 0.1
    pad_id: int = PAD_ID
    norm_first: bool = True
    activation: str = "gelu"

    PRESETS: ClassVar[tuple[str, ...]] = ("tiny", "gpt1")

    def __post_init__(self) -> None:
        check_config_types(self)
        check_model_config(self, ("vocab_size", "d_model", "num_heads", "num_layers", "d_ff", "max_len"), _ACTIVATIONS)

    @classmethod
    def tiny(cls, vocab_size: int, **overrides) -> GPTConfig:
        """The book's CPU-sized model: d_model 128, 4 heads, 2 layers, d_ff 512, 48 positions, pre-LN.

        Args:
            vocab_size: the tokenizer's vocabulary size.
            **overrides: any other field, replacing the preset's value.

        Returns:
            The :class:`GPTConfig`.
        """
        return cls(vocab_size, **{**dict(d_model=128, num_heads=4, num_layers=2, d_ff=512, max_len=48), **overrides})

    @classmethod
    def gpt1(cls, vocab_size: int = 40478, **overrides) -> GPTConfig:
        """GPT-1: 12 layers, d_model 768, 12 heads, d_ff 3072, 512 positions, post-LN (Radford et al. 2018, §4.1).

        Args:
            vocab_size: the tokenizer's vocabulary size (default 40478, GPT-1's BPE vocabulary).
            **overrides: any other field, replacing the preset's value.

        Returns:
            The :class:`GPTConfig`.
        """
        kw = dict(d_model=768, num_heads=12, num_layers=12, d_ff=3072, max_len=512, norm_first=False)
        return cls(vocab_size, **{**kw, **overrides})


class GPT(nn.Module):
    """Decoder-only language model: ``ids (batch, seq)`` → next-token ``logits (batch, seq, vocab_size)``.

    Position t sees tokens 0..t only (:func:`lib.attention.causal_mask`, ``True`` = may attend), so
    ``logits[:, t]`` is the model's P(u_{t+1} | u_0..u_t). Right-padding needs no extra mask: padding comes after
    the real tokens, which never attend to it.

    Args:
        config: the model's sizes (:class:`GPTConfig`).

    Raises:
        TypeError: ``config`` is not a :class:`GPTConfig`.

    Source: Radford et al. 2018, §3.1, Eq. (2).
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        c = config
        self.config = c
        self.token_embed = nn.Embedding(c.vocab_size, c.d_model)  # W_e
        self.position_embed = nn.Embedding(c.max_len, c.d_model)  # W_p (learned)
        self.dropout = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(
                c.d_model,
                c.num_heads,
                c.d_ff,
                c.dropout,
                c.dropout,
                norm_first=c.norm_first,
                activation=c.activation,
                fused=True,
            )
            for _ in range(c.num_layers)
        )
        self.final_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # "weights initialized from N(0, 0.02)" (Radford et al. 2018, §4.1)
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def num_parameters(self) -> int:
        """Number of trainable parameters (W_e counted once: the output layer reuses it).

        Returns:
            The count of scalar weights with ``requires_grad``.
        """
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _check(self, ids: Tensor, name: str) -> None:
        """``(batch, seq)`` long ids inside the vocabulary, ``seq <= max_len``."""
        check_token_ids(ids, name, self.config.vocab_size, self.config.max_len)

    @overload
    def forward(self, ids: Tensor, return_attention: Literal[False] = False) -> Tensor: ...

    @overload
    def forward(self, ids: Tensor, return_attention: Literal[True]) -> tuple[Tensor, AttentionMaps]: ...

    def forward(self, ids: Tensor, return_attention: bool = False) -> Tensor | tuple[Tensor, AttentionMaps]:
        """Next-token logits.

        Args:
            ids: ``(batch, seq)`` LongTensor, ``seq ≤ max_len``.
            return_attention: also return each layer's attention weights.

        Returns:
            ``logits (batch, seq, vocab_size)``; with ``return_attention=True``, the pair ``(logits,
            AttentionMaps)`` whose ``decoder`` list holds one causal ``(batch, heads, seq, seq)`` map per layer.

        Raises:
            TypeError: ids is not a tensor.
            ValueError: wrong shape/dtype, ids outside the vocabulary, or ``seq > max_len``.

        Source: Radford et al. 2018, §3.1, Eq. (2).
        """
        self._check(ids, "ids")
        positions = torch.arange(ids.size(1), device=ids.device)
        h = self.dropout(self.token_embed(ids) + self.position_embed(positions)[None])  # h₀ = U W_e + W_p
        mask = causal_mask(ids.size(1), ids.device)  # (seq, seq)
        weights = []
        for layer in self.layers:
            h, w = layer(h, mask, return_attention)  # h_l = block(h_{l-1})
            if return_attention:
                weights.append(w)
        logits = self.final_norm(h) @ self.token_embed.weight.T  # h_n W_eᵀ (softmax in the loss)
        return (logits, AttentionMaps(decoder=weights)) if return_attention else logits


def lm_loss(logits: Tensor, ids: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """−L₁ per token: the mean of −log P(u_i | u_<i) over the non-padding targets.

    ``logits[:, t]`` predicts ``ids[:, t + 1]``; the first token (``<s>``) is never a target.

    Args:
        logits: ``(batch, seq, vocab)`` from :class:`GPT` applied to ``ids``.
        ids: ``(batch, seq)``, right-padded with ``pad_id``.
        pad_id: targets equal to it do not count.

    Returns:
        scalar tensor: nats per predicted token (exp of it is the perplexity).

    Raises:
        TypeError: logits or ids is not a tensor; pad_id is not an int.
        ValueError: shapes do not match; seq < 2; logits not floating point or ids not a LongTensor; no target
            token to score (every target is ``pad_id``: the mean over no token would be NaN).

    Source: Radford et al. 2018, §3.1, Eq. (1) (maximising L₁ = minimising this loss).
    """
    if not isinstance(logits, Tensor):
        raise TypeError(f"logits must be a torch.Tensor (batch, seq, vocab), got {type(logits).__name__}")
    _check_ids(ids, "ids")
    pad_id = _check_int(pad_id, "pad_id")
    if logits.dim() != 3 or logits.shape[:2] != ids.shape or not logits.is_floating_point():
        raise ValueError(
            f"logits (batch, seq, vocab) {tuple(logits.shape)} {logits.dtype} and ids (batch, seq) "
            f"{tuple(ids.shape)} do not match"
        )
    if ids.size(1) < 2:
        raise ValueError("ids needs at least 2 tokens per row to predict one")
    pred, target = logits[:, :-1], ids[:, 1:]  # shift: t predicts t + 1
    if not (target != pad_id).any():
        raise ValueError(
            f"ids has no target token to score: every target ids[:, 1:] is pad_id={pad_id}, so the mean loss "
            "would be NaN"
        )
    return F.cross_entropy(pred.reshape(-1, pred.size(-1)), target.reshape(-1), ignore_index=pad_id)


@torch.no_grad()
def generate(
    model: GPT,
    prompt_ids: Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    eos_id: int | None = None,
) -> Tensor:
    """Continue ``prompt_ids`` one token at a time by sampling from softmax(logits / T), optionally among the top k.

    ``temperature == 0`` (or ``top_k == 1``) is greedy decoding: the argmax at every step. When the sequence
    reaches ``max_len`` the oldest tokens drop out of the window (the model sees the last ``max_len``).
    No key/value cache: each step re-runs the (short) context.

    Args:
        model: a :class:`GPT` (put in eval mode for the duration, then restored).
        prompt_ids: ``(seq,)`` or ``(batch, seq)`` LongTensor, 1 ≤ seq ≤ max_len.
        max_new_tokens: number of tokens to add (≥ 0).
        temperature: T ≥ 0; T < 1 sharpens, T > 1 flattens the distribution, 0 = argmax.
        top_k: keep only the k most probable tokens (k ≥ 1) before sampling; None = all.
        generator: a seeded ``torch.Generator`` for the sampling.
        eos_id: if given, a row that produced it continues with ``pad_id``; stops early when all rows have.

    Returns:
        ``(batch, seq + new)`` (or ``(seq + new,)`` for a 1-D prompt) with the prompt first.

    Raises:
        TypeError: model is not a :class:`GPT`; prompt_ids not a tensor; max_new_tokens, top_k or eos_id not an
            int; temperature not a number; generator not a ``torch.Generator``.
        ValueError: temperature < 0 or not finite, top_k < 1, max_new_tokens < 0, an empty prompt or one longer
            than max_len, prompt ids that are not long integers inside the vocabulary.

    Source: temperature sampling (Ackley, Hinton, Sejnowski 1985; Radford et al. 2019 §3); top-k sampling: Fan,
    Lewis, Dauphin (2018), "Hierarchical Neural Story Generation", §5.4.
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT, got {type(model).__name__}")
    check_sampling(temperature, top_k, generator)
    check_new_tokens(max_new_tokens, eos_id)
    _check_ids(prompt_ids, "prompt_ids")
    squeeze = prompt_ids.dim() == 1
    ids = prompt_ids[None] if squeeze else prompt_ids
    if ids.dim() != 2 or ids.size(1) < 1:
        raise ValueError(f"prompt_ids must be (seq,) or (batch, seq) with seq >= 1, got {tuple(prompt_ids.shape)}")
    max_len = model.config.max_len
    if ids.size(1) > max_len:
        raise ValueError(f"prompt of {ids.size(1)} tokens is longer than the model's max_len={max_len}")
    model._check(ids, "prompt_ids")

    def next_token(logits: Tensor) -> Tensor:  # (batch, vocab) → (batch,)
        if temperature == 0 or top_k == 1:
            return logits.argmax(-1)
        logits = logits / temperature
        if top_k is not None and top_k < logits.size(-1):
            kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (batch, 1)
            logits = logits.masked_fill(logits < kth, float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)

    ids = generate_tokens(model, ids, max_new_tokens, next_token, eos_id)
    return ids[0] if squeeze else ids


def generate_tokens(
    model: nn.Module, ids: Tensor, max_new_tokens: int, next_token: Callable[[Tensor], Tensor], eos_id: int | None
) -> Tensor:
    """The sampling loop of :func:`generate` and ``lib.decode.generate``, after they checked their arguments.

    Each step feeds the last ``max_len`` tokens, picks the next token from the last position's logits and appends it.

    Args:
        model: a decoder-only language model with ``config.max_len`` and ``config.pad_id`` (GPT, ModernGPT),
            ``ids (batch, seq)`` → ``logits (batch, seq, vocab)``; in eval mode for the loop, then restored.
        ids: ``(batch, seq)`` the prompts.
        max_new_tokens: number of tokens to add.
        next_token: ``logits (batch, vocab)`` of the next position → ``(batch,)`` the chosen ids.
        eos_id: if given, a row that produced it continues with ``pad_id``; stops early when all rows have.

    Returns:
        ``(batch, seq + new)``, the prompts first.

    Source: Radford et al. (2018), §3.1 Eq. (2): P(u) = softmax(h_n W_eᵀ), one token at a time.
    """
    max_len = model.config.max_len
    was_training = model.training
    model.eval()
    finished = torch.zeros(ids.size(0), dtype=torch.bool, device=ids.device)
    try:
        for _ in range(max_new_tokens):
            nxt = next_token(model(ids[:, -max_len:])[:, -1])  # the last position's logits (batch, vocab)
            if eos_id is not None:
                nxt = torch.where(finished, torch.full_like(nxt, model.config.pad_id), nxt)
                finished |= nxt == eos_id
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            if eos_id is not None and bool(finished.all()):
                break
    finally:
        model.train(was_training)
    return ids
