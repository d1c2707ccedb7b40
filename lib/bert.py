"""BERT: a bidirectional Transformer encoder pre-trained by masked LM (MLM) and next-sentence prediction (NSP).

    input  = [CLS] A₁ … A_m [SEP] B₁ … B_n [SEP]
    x₀     = TokenEmb(input) + SegmentEmb(A/B) + PositionEmb(0 … T-1)        (three learned tables, summed)
    x_l    = EncoderLayer(x_{l-1}, padding mask)                              (no causal mask: every token sees all)
    MLM    : softmax(LN(GELU(x_L W + b)) Eᵀ + b_V) at the masked positions    (E = the token table, tied)
    NSP    : softmax(tanh(x_L[CLS] W_p + b_p) W_nsp) ∈ {NotNext, IsNext}

Vocabulary. BERT needs three special tokens the book's BPE tokenizer does not have: ``[CLS]``, ``[SEP]`` and
``[MASK]``. They are appended after the tokenizer's ids, so a tokenizer of size V gives ``[CLS]`` = V,
``[SEP]`` = V + 1, ``[MASK]`` = V + 2 and a BERT vocabulary of V + 3 (see :class:`BertVocab`); ``<pad>`` keeps
id 0. The tokenizer's ``<s>``/``</s>`` are not used by BERT.

Source: Devlin, Chang, Lee, Toutanova (2019), "BERT: Pre-training of Deep Bidirectional Transformers for
Language Understanding", NAACL, §3 and Fig. 2 (input representation), §3.1 (MLM 15 %, 80/10/10; NSP 50 %),
§3.2 and Fig. 4 (fine-tuning), Appendix A.2 (pre-training procedure).
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_int as _check_int
from ._checks import check_model_config, check_token_ids
from .attention import padding_mask
from .config import Config
from .interfaces import AttentionMaps, check_config_types
from .special_tokens import PAD_ID, SPECIAL_TOKENS
from .transformer import EncoderLayer

__all__ = [
    "IGNORE_INDEX",
    "IS_NEXT",
    "NOT_NEXT",
    "BertVocab",
    "BertConfig",
    "Bert",
    "BertClassifier",
    "mask_tokens",
    "make_nsp_pairs",
    "pack_pair",
]

IGNORE_INDEX = -100  # label of the positions MLM does not predict (F.cross_entropy's default ignore_index)
IS_NEXT, NOT_NEXT = 1, 0  # NSP labels
_ACTIVATIONS = ("gelu", "relu")


def _check_ids(ids: Tensor, name: str) -> None:
    if not isinstance(ids, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of ids, got {type(ids).__name__}")
    if ids.dtype not in (torch.long, torch.int):
        raise ValueError(f"{name} must be an integer (long) tensor of ids, got dtype {ids.dtype}")


@dataclass(frozen=True)
class BertVocab:
    """BERT's special ids, appended after a tokenizer's ``base_size`` ids.

    Attributes:
        base_size: the tokenizer's vocabulary size V (8,000 for the book's Multi30k BPE).
        pad_id: ``<pad>`` (0, the tokenizer's).

    Properties give ``cls_id`` = V, ``sep_id`` = V + 1, ``mask_id`` = V + 2 and ``size`` = V + 3.

    Raises:
        TypeError: base_size or pad_id is not an int.
        ValueError: base_size not larger than the tokenizer's 4 special tokens.

    Source: Devlin et al. 2019, §3 "Input/Output Representations" ([CLS], [SEP]) and §3.1 ([MASK]).
    """

    base_size: int
    pad_id: int = PAD_ID

    def __post_init__(self) -> None:
        check_config_types(self)
        if self.base_size <= len(SPECIAL_TOKENS):
            raise ValueError(
                f"base_size must exceed the {len(SPECIAL_TOKENS)} tokenizer specials, got {self.base_size}"
            )

    @property
    def cls_id(self) -> int:
        """The [CLS] id, V: the first token of every input; its final state feeds NSP and classification."""
        return self.base_size

    @property
    def sep_id(self) -> int:
        """The [SEP] id, V + 1: ends sentence A and sentence B."""
        return self.base_size + 1

    @property
    def mask_id(self) -> int:
        """The [MASK] id, V + 2: replaces 80 % of the positions MLM selects."""
        return self.base_size + 2

    @property
    def size(self) -> int:
        """BERT's vocabulary size, V + 3 (the tokenizer's ids and the three appended specials)."""
        return self.base_size + 3

    def special_mask(self, ids: Tensor) -> Tensor:
        """``True`` where ``ids`` is a special token (pad, <s>, </s>, <unk>, [CLS], [SEP], [MASK]), never masked by MLM.

        Args:
            ids: token ids of any shape, e.g. ``(batch, seq)``.

        Returns:
            bool tensor shaped like ``ids``: ``True`` for ids below 4 (the tokenizer's specials) or at least V.
        """
        return (ids < len(SPECIAL_TOKENS)) | (ids >= self.base_size)


@dataclass
class BertConfig(Config):
    """Sizes of a :class:`Bert`.

    Attributes:
        vocab_size: including the appended [CLS]/[SEP]/[MASK] (``BertVocab.size``).
        d_model, num_heads, num_layers, d_ff: the encoder's sizes (BERT-base: 768, 12, 12, 3072).
            ``num_heads`` must divide ``d_model``; :class:`lib.attention.MultiHeadAttention` raises otherwise.
        max_len: number of learned positions (BERT: 512).
        dropout: on embeddings, sub-layer outputs and attention weights (BERT: 0.1).
        num_segments: segment (sentence A/B) embeddings (BERT: 2).
        pad_id: the padding id (hidden from attention).
        norm_first: pre-LN if True; BERT is post-LN (False).
        activation: ``"gelu"`` (BERT; the exact erf form) or ``"relu"``.
        layer_norm_eps: ε of every LayerNorm (torch's default 1e-5; BERT's released models use 1e-12).

    The field ``num_segments`` is Hugging Face's ``type_vocab_size`` and ``max_len`` its
    ``max_position_embeddings`` (see :func:`lib.pretrained.bert_config_from_hf`).

    Raises:
        TypeError: a field of the wrong type (``"128"`` for an int, ``1`` for a bool): see
            :func:`lib.interfaces.check_config_types`.
        ValueError: non-positive sizes, d_model not divisible by num_heads, dropout outside [0, 1), pad_id outside
            the vocabulary, an unknown activation, layer_norm_eps not positive and finite.

    Source: Devlin et al. 2019, §3 ("BERT_BASE (L=12, H=768, A=12, Total Parameters=110M)").
    """

    vocab_size: int
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 512
    max_len: int = 64
    dropout: float = 0.1
    num_segments: int = 2
    pad_id: int = PAD_ID
    norm_first: bool = False
    activation: str = "gelu"
    layer_norm_eps: float = 1e-5

    PRESETS: ClassVar[tuple[str, ...]] = ("tiny", "base")

    def __post_init__(self) -> None:
        check_config_types(self)
        sizes = ("vocab_size", "d_model", "num_heads", "num_layers", "d_ff", "max_len", "num_segments")
        check_model_config(self, sizes, _ACTIVATIONS)
        if not (math.isfinite(self.layer_norm_eps) and self.layer_norm_eps > 0):
            raise ValueError(f"layer_norm_eps must be a positive finite number, got {self.layer_norm_eps}")

    @classmethod
    def tiny(cls, vocab_size: int, **overrides) -> BertConfig:
        """The book's CPU-sized model: d_model 128, 4 heads, 2 layers, d_ff 512, 48 positions.

        Args:
            vocab_size: BERT's vocabulary size (``BertVocab.size``).
            **overrides: any other field, replacing the preset's value.

        Returns:
            The :class:`BertConfig`.
        """
        return cls(vocab_size, **{**dict(d_model=128, num_heads=4, num_layers=2, d_ff=512, max_len=48), **overrides})

    @classmethod
    def base(cls, vocab_size: int = 30522, **overrides) -> BertConfig:
        """BERT-base: d_model 768, 12 heads, 12 layers, d_ff 3072, 512 positions (Devlin et al. 2019, §3).

        Args:
            vocab_size: BERT's vocabulary size (default 30522, BERT's WordPiece vocabulary).
            **overrides: any other field, replacing the preset's value.

        Returns:
            The :class:`BertConfig` (about 110 M parameters with the default vocabulary).
        """
        return cls(
            vocab_size, **{**dict(d_model=768, num_heads=12, num_layers=12, d_ff=3072, max_len=512), **overrides}
        )


class Bert(nn.Module):
    """Token + segment + learned position embeddings, a stack of bidirectional encoder layers, MLM and NSP heads.

    Shapes: ``input_ids (batch, seq)``, ``segment_ids (batch, seq)`` in ``[0, num_segments)`` →
    ``hidden (batch, seq, d_model)``. Attention uses only the padding mask (``True`` = may attend: every real
    token sees every real token, left and right).

    Args:
        config: the model's sizes (:class:`BertConfig`).

    Raises:
        TypeError: ``config`` is not a :class:`BertConfig`.

    Source: Devlin et al. 2019, §3, Fig. 2 (input = sum of three embeddings), §3.1 (MLM, NSP); the MLM output
    layer shares the token embedding matrix and the NSP classifier reads the pooled [CLS] state, as in the
    authors' released code.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        if not isinstance(config, BertConfig):
            raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
        c = config
        self.config = c
        self.token_embed = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        self.segment_embed = nn.Embedding(c.num_segments, c.d_model)
        self.position_embed = nn.Embedding(c.max_len, c.d_model)  # learned, not sinusoidal
        self.embed_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
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
                layer_norm_eps=c.layer_norm_eps,
                fused=True,
            )
            for _ in range(c.num_layers)
        )
        self.final_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.norm_first else nn.Identity()
        # MLM head: transform, then the tied output layer E (vocab_size, d_model) plus a bias per token
        self.mlm_transform = nn.Sequential(
            nn.Linear(c.d_model, c.d_model), nn.GELU(), nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        )
        self.mlm_bias = nn.Parameter(torch.zeros(c.vocab_size))
        # NSP head: the "pooler" tanh(W_p h_[CLS] + b_p), then 2 classes
        self.pooler = nn.Sequential(nn.Linear(c.d_model, c.d_model), nn.Tanh())
        self.nsp_head = nn.Linear(c.d_model, 2)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # BERT's initialiser: N(0, 0.02) for every weight matrix and embedding (Devlin et al.'s code)
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()

    def num_parameters(self) -> int:
        """Number of trainable parameters (the tied output matrix counted once).

        Returns:
            The count of scalar weights with ``requires_grad``.
        """
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _check_hidden(self, hidden: Tensor, batch_seq: bool) -> None:
        """Final states: ``(batch, seq, d_model)`` if ``batch_seq``, else any ``(..., d_model)``."""
        d = self.config.d_model
        if not isinstance(hidden, Tensor):
            raise TypeError(f"hidden must be a torch.Tensor of final states, got {type(hidden).__name__}")
        dims_ok = hidden.dim() == 3 if batch_seq else hidden.dim() >= 1
        if not dims_ok or hidden.size(-1) != d or not hidden.is_floating_point():
            shape = "(batch, seq, d_model)" if batch_seq else "(..., d_model)"
            raise ValueError(
                f"hidden must be float final states {shape} with d_model={d}, got {tuple(hidden.shape)} {hidden.dtype}"
            )

    def _check(self, input_ids: Tensor, segment_ids: Tensor | None) -> None:
        c = self.config
        if segment_ids is not None:
            _check_ids(segment_ids, "segment_ids")
        check_token_ids(input_ids, "input_ids", c.vocab_size, c.max_len)
        if segment_ids is not None:
            if segment_ids.shape != input_ids.shape:
                raise ValueError(
                    f"segment_ids {tuple(segment_ids.shape)} must have input_ids' shape {tuple(input_ids.shape)}"
                )
            if segment_ids.numel() and (segment_ids.min() < 0 or segment_ids.max() >= c.num_segments):
                raise ValueError(f"segment_ids must be in [0, num_segments={c.num_segments})")

    def embed(self, input_ids: Tensor, segment_ids: Tensor | None = None) -> Tensor:
        """x₀ = TokenEmb + SegmentEmb + PositionEmb, then LayerNorm and dropout.

        Args:
            input_ids: ``(batch, seq)`` token ids.
            segment_ids: ``(batch, seq)`` segment ids (0 = sentence A, 1 = sentence B); None = all 0.

        Returns:
            ``(batch, seq, d_model)``, the input of the first encoder layer.

        Source: Devlin et al. 2019, §3 and Fig. 2.
        """
        if segment_ids is None:
            segment_ids = torch.zeros_like(input_ids)
        positions = torch.arange(input_ids.size(1), device=input_ids.device)  # (seq,)
        x = self.token_embed(input_ids) + self.segment_embed(segment_ids) + self.position_embed(positions)[None]
        return self.dropout(self.embed_norm(x))

    @overload
    def forward(
        self, input_ids: Tensor, segment_ids: Tensor | None = None, return_attention: Literal[False] = False
    ) -> Tensor: ...

    @overload
    def forward(
        self, input_ids: Tensor, segment_ids: Tensor | None, return_attention: Literal[True]
    ) -> tuple[Tensor, AttentionMaps]: ...

    def forward(
        self, input_ids: Tensor, segment_ids: Tensor | None = None, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, AttentionMaps]:
        """Encode a batch.

        Args:
            input_ids: ``(batch, seq)`` ids, right-padded with ``pad_id``.
            segment_ids: ``(batch, seq)``, 0 for sentence A (and [CLS]), 1 for sentence B; None = all 0.
            return_attention: also return each layer's attention weights.

        Returns:
            the last layer's states ``hidden (batch, seq, d_model)``; with ``return_attention=True``, the pair
            ``(hidden, AttentionMaps)`` whose ``encoder`` list holds one ``(batch, heads, seq, seq)`` map per layer.

        Raises:
            TypeError: input_ids or segment_ids is not a tensor.
            ValueError: wrong shape or dtype, ids outside the vocabulary, sequence longer than max_len.

        Source: Devlin et al. 2019, §3 and Fig. 2.
        """
        self._check(input_ids, segment_ids)
        mask = padding_mask(input_ids, self.config.pad_id)  # (batch, 1, 1, seq), True = may attend
        x = self.embed(input_ids, segment_ids)
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask, return_attention)
            if return_attention:
                weights.append(w)
        hidden = self.final_norm(x)
        return (hidden, AttentionMaps(encoder=weights)) if return_attention else hidden

    def hidden_states(self, input_ids: Tensor, segment_ids: Tensor | None = None) -> tuple[list[Tensor], AttentionMaps]:
        """Every layer's states and attention weights: x₀ (the embeddings), x₁, …, x_L.

        Args:
            input_ids: ``(batch, seq)`` ids, right-padded with ``pad_id``.
            segment_ids: ``(batch, seq)`` segment ids (0 = A, 1 = B); None = all 0.

        Returns:
            ``(states, maps)``: ``states`` is a list of ``num_layers + 1`` tensors ``(batch, seq, d_model)``,
            ``states[0]`` the output of :meth:`embed` and ``states[l]`` that of layer l (the last one after the
            final LayerNorm of a pre-LN model, so it equals :meth:`forward`'s output); ``maps.encoder`` holds one
            ``(batch, heads, seq, seq)`` map per layer (rows sum to 1; padded keys get 0).

        Raises:
            TypeError: input_ids or segment_ids is not a tensor.
            ValueError: wrong shape or dtype, ids outside the vocabulary, sequence longer than max_len.

        Source: Devlin et al. 2019, §3 and Fig. 2 (the states Hugging Face's ``output_hidden_states`` returns).
        """
        self._check(input_ids, segment_ids)
        mask = padding_mask(input_ids, self.config.pad_id)  # (batch, 1, 1, seq), True = may attend
        states, weights = [self.embed(input_ids, segment_ids)], []
        for layer in self.layers:
            x, w = layer(states[-1], mask, True)
            states.append(x)
            weights.append(w)
        states[-1] = self.final_norm(states[-1])
        return states, AttentionMaps(encoder=weights)

    def mlm_logits(self, hidden: Tensor) -> Tensor:
        """Scores over the vocabulary; the output matrix is the token embedding (tied).

        Args:
            hidden: ``(..., d_model)`` final states, e.g. ``(batch, seq, d_model)`` or the masked positions
                ``(n_masked, d_model)``.

        Returns:
            ``(..., vocab_size)`` unnormalised logits: LN(GELU(h W + b)) Eᵀ + b_V.

        Raises:
            TypeError: hidden is not a tensor.
            ValueError: hidden is not a float tensor whose last dimension is d_model.

        Source: Devlin et al. 2019, §3.1 "Task #1: Masked LM".
        """
        self._check_hidden(hidden, batch_seq=False)
        return self.mlm_transform(hidden) @ self.token_embed.weight.T + self.mlm_bias

    def pooled(self, hidden: Tensor) -> Tensor:
        """The [CLS] summary tanh(W_p h₀ + b_p).

        Args:
            hidden: ``(batch, seq, d_model)`` final states; position 0 must be [CLS].

        Returns:
            ``(batch, d_model)``, values in (−1, 1).

        Raises:
            TypeError: hidden is not a tensor.
            ValueError: hidden is not ``(batch, seq, d_model)``.
        """
        self._check_hidden(hidden, batch_seq=True)
        return self.pooler(hidden[:, 0])

    def nsp_logits(self, hidden: Tensor) -> Tensor:
        """NSP scores from the pooled [CLS] state.

        Args:
            hidden: ``(batch, seq, d_model)`` final states; position 0 must be [CLS].

        Returns:
            ``(batch, 2)`` logits; index 1 = ``IS_NEXT``, index 0 = ``NOT_NEXT``.

        Raises:
            TypeError: hidden is not a tensor.
            ValueError: hidden is not ``(batch, seq, d_model)``.

        Source: Devlin et al. 2019, §3.1 "Task #2: Next Sentence Prediction (NSP)".
        """
        return self.nsp_head(self.pooled(hidden))

    def mlm_loss(self, hidden: Tensor, labels: Tensor) -> Tensor:
        """Mean cross-entropy at the positions whose label is not ``IGNORE_INDEX`` (only those are scored).

        Args:
            hidden: ``(batch, seq, d_model)``.
            labels: ``(batch, seq)`` from :func:`mask_tokens`.

        Returns:
            scalar tensor, nats per masked token.

        Raises:
            TypeError: hidden or labels is not a tensor.
            ValueError: hidden is not ``(batch, seq, d_model)``; labels not integer ids of shape ``(batch, seq)``;
                no label to score (every one is ``IGNORE_INDEX``: the mean over no token would be NaN).
        """
        self._check_hidden(hidden, batch_seq=True)
        _check_ids(labels, "labels")
        if labels.shape != hidden.shape[:2]:
            raise ValueError(
                f"labels must be (batch, seq) = {tuple(hidden.shape[:2])} like hidden, got {tuple(labels.shape)}"
            )
        picked = labels != IGNORE_INDEX
        if not picked.any():
            raise ValueError(
                f"labels has no target token to score: every label is IGNORE_INDEX ({IGNORE_INDEX}), so the mean "
                "loss would be NaN; mask at least one position"
            )
        return F.cross_entropy(self.mlm_logits(hidden[picked]), labels[picked])


class BertClassifier(nn.Module):
    """Fine-tuning for a sentence (or sentence-pair) task: a linear layer on the pooled [CLS] state.

    ``logits = W_y · tanh(W_p h_[CLS] + b_p) + b_y``, shape ``(batch, num_classes)``; all of BERT's weights are
    trained too.

    Args:
        bert: a (pre-trained) :class:`Bert`.
        num_classes: number of labels (≥ 2).
        dropout: on the pooled vector (Devlin et al. use 0.1).

    Raises:
        TypeError: bert is not a :class:`Bert`; num_classes is not an int; dropout is not a number.
        ValueError: num_classes < 2; dropout outside [0, 1).

    Source: Devlin et al. 2019, §3.2 and §4.1 ("the only new parameters introduced during fine-tuning are
    classification layer weights W ∈ R^{K×H}"), Fig. 4a/b.
    """

    def __init__(self, bert: Bert, num_classes: int, dropout: float = 0.1) -> None:
        super().__init__()
        if not isinstance(bert, Bert):
            raise TypeError(f"bert must be a Bert model, got {type(bert).__name__}")
        if _check_int(num_classes, "num_classes") < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
            raise TypeError(f"dropout must be a float in [0, 1), got {dropout!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.bert = bert
        self.config = bert.config
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(bert.config.d_model, num_classes)

    def forward(self, input_ids: Tensor, segment_ids: Tensor | None = None) -> Tensor:
        """Class scores for a batch of (packed) sentences.

        Args:
            input_ids: ``(batch, seq)`` ids starting with [CLS], right-padded.
            segment_ids: ``(batch, seq)`` segment ids (0 = A, 1 = B); None = all 0.

        Returns:
            ``(batch, num_classes)`` unnormalised logits.

        Raises:
            TypeError: from :meth:`Bert.forward`: input_ids or segment_ids is not a tensor.
            ValueError: from :meth:`Bert.forward`: wrong shape or dtype, ids outside the vocabulary, sequence
                longer than max_len.
        """
        return self.head(self.dropout(self.bert.pooled(self.bert(input_ids, segment_ids))))


def mask_tokens(
    ids: Tensor,
    special_mask: Tensor,
    vocab_size: int,
    mask_id: int,
    generator: torch.Generator | None = None,
    mask_prob: float = 0.15,
    low: int = len(SPECIAL_TOKENS),
) -> tuple[Tensor, Tensor]:
    """BERT's masking: select ``mask_prob`` of the non-special positions; 80 % → [MASK], 10 % → random, 10 % kept.

    Each non-special position is selected independently with probability ``mask_prob``; each selected one
    independently becomes [MASK] (probability 0.8), a uniformly random ordinary token (0.1), or stays (0.1).
    The model must predict the original token at every selected position, including the unchanged ones.

    Args:
        ids: ``(batch, seq)`` LongTensor (or any shape).
        special_mask: bool, same shape; ``True`` = never select ([CLS], [SEP], padding).
        vocab_size: random replacements are drawn uniformly from ``[low, vocab_size)``; pass the tokenizer's
            size V so that the appended [CLS]/[SEP]/[MASK] (and, with ``low``, pad/<s>/</s>/<unk>) are never drawn.
        mask_id: the [MASK] id.
        generator: a seeded ``torch.Generator`` (all randomness goes through it).
        mask_prob: selection probability, in (0, 1) (BERT: 0.15).
        low: smallest id drawn as a random replacement (default 4: skip the tokenizer's specials).

    Returns:
        ``(inputs, labels)``, both shaped like ``ids``: ``inputs`` is the corrupted copy, ``labels`` holds the
        original id at selected positions and ``IGNORE_INDEX`` (-100) elsewhere (F.cross_entropy's default
        ``ignore_index``; -100, not PAD, so that a PAD target could never be confused with "not selected").

    Raises:
        TypeError: ids or special_mask is not a tensor; vocab_size, mask_id or low is not an int; mask_prob is not
            a number.
        ValueError: ids not integers; mask_prob outside (0, 1); special_mask not bool or of another shape;
            low ≥ vocab_size.

    Source: Devlin et al. 2019, §3.1 "Task #1: Masked LM" and Appendix C.2 (the 80/10/10 ablation).
    """
    _check_ids(ids, "ids")
    if not isinstance(special_mask, Tensor):
        raise TypeError(f"special_mask must be a bool torch.Tensor, got {type(special_mask).__name__}")
    vocab_size, mask_id, low = (
        _check_int(vocab_size, "vocab_size"),
        _check_int(mask_id, "mask_id"),
        _check_int(low, "low"),
    )
    if isinstance(mask_prob, bool) or not isinstance(mask_prob, numbers.Real):
        raise TypeError(f"mask_prob must be a float in (0, 1), got {mask_prob!r}")
    if not 0.0 < mask_prob < 1.0:
        raise ValueError(f"mask_prob must be in (0, 1), got {mask_prob}")
    if special_mask.dtype != torch.bool or special_mask.shape != ids.shape:
        raise ValueError(
            f"special_mask must be a bool tensor of ids' shape {tuple(ids.shape)}, "
            f"got {special_mask.dtype} {tuple(special_mask.shape)}"
        )
    if not 0 <= low < vocab_size:
        raise ValueError(f"need 0 <= low < vocab_size, got low={low}, vocab_size={vocab_size}")
    u = torch.rand(ids.shape, generator=generator, device=ids.device)
    selected = (u < mask_prob) & ~special_mask
    action = torch.rand(ids.shape, generator=generator, device=ids.device)
    to_mask = selected & (action < 0.8)
    to_random = selected & (action >= 0.8) & (action < 0.9)  # the last 10 %: unchanged
    random_ids = torch.randint(low, vocab_size, ids.shape, generator=generator, device=ids.device)
    inputs = torch.where(to_mask, torch.full_like(ids, mask_id), ids)
    inputs = torch.where(to_random, random_ids, inputs)
    labels = torch.where(selected, ids, torch.full_like(ids, IGNORE_INDEX))
    return inputs, labels


def make_nsp_pairs(sentences: Sequence[Sequence[int]], rng: random.Random) -> list[tuple[list[int], list[int], int]]:
    """Next-sentence-prediction examples: (A, B, label) with B the true next sentence half of the time.

    For each consecutive pair ``(sentences[i], sentences[i + 1])``: with probability 1/2 keep it
    (label ``IS_NEXT`` = 1); otherwise replace B by a random sentence of the corpus other than the true next one
    (label ``NOT_NEXT`` = 0).

    Args:
        sentences: an ordered text (list of token-id lists, or of strings), at least 3 sentences.
        rng: a seeded ``random.Random``.

    Returns:
        ``len(sentences) - 1`` triples ``(a, b, label)`` (a and b: copies of the token lists, or the strings).

    Raises:
        ValueError: fewer than 3 sentences.

    Source: Devlin et al. 2019, §3.1 "Task #2: Next Sentence Prediction (NSP)".
    """
    n = len(sentences)
    if n < 3:
        raise ValueError(f"make_nsp_pairs needs at least 3 sentences, got {n}")

    def item(k):  # a copy of a token list; strings are kept as they are
        return sentences[k] if isinstance(sentences[k], str) else list(sentences[k])

    pairs = []
    for i in range(n - 1):
        if rng.random() < 0.5:
            pairs.append((item(i), item(i + 1), IS_NEXT))
        else:
            j = rng.randrange(n - 1)  # any index but i + 1
            j = j if j < i + 1 else j + 1
            pairs.append((item(i), item(j), NOT_NEXT))
    return pairs


def pack_pair(a: Sequence[int], b: Sequence[int] | None, vocab: BertVocab, max_len: int) -> tuple[list[int], list[int]]:
    """``[CLS] a [SEP]`` or ``[CLS] a [SEP] b [SEP]``, and its segment ids.

    Segment 0 covers [CLS], A and the first [SEP]; segment 1 covers B and its [SEP].

    Args:
        a, b: token ids without specials (b may be None for a single sentence).
        vocab: the :class:`BertVocab`.
        max_len: longest result; the longer of A and B is cut from the end, one token at a time.

    Returns:
        ``(ids, segment_ids)``, two lists of equal length ≤ max_len.

    Raises:
        TypeError: vocab is not a :class:`BertVocab`; max_len is not an int.
        ValueError: max_len too small to hold the specials and one token of each sentence.

    Source: Devlin et al. 2019, §3 "Input/Output Representations" and Fig. 2.
    """
    if not isinstance(vocab, BertVocab):
        raise TypeError(f"vocab must be a BertVocab, got {type(vocab).__name__}")
    max_len = _check_int(max_len, "max_len")
    a, b = list(a), (None if b is None else list(b))
    n_special = 2 if b is None else 3
    if max_len < n_special + 1 + (b is not None):
        raise ValueError(f"max_len={max_len} cannot hold the specials and the sentences")
    while len(a) + (len(b) if b is not None else 0) + n_special > max_len:
        if b is not None and len(b) > len(a):
            b.pop()
        else:
            a.pop()
    ids = [vocab.cls_id, *a, vocab.sep_id]
    segments = [0] * len(ids)
    if b is not None:
        ids += [*b, vocab.sep_id]
        segments += [1] * (len(b) + 1)
    return ids, segments
