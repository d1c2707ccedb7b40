"""Recurrent encoder–decoders: the fixed-vector model and Bahdanau attention.

Before the Transformer, neural translation read the source with a recurrent network and wrote the
target with another (Sutskever et al. 2014; Cho et al. 2014). Two models are built from the same parts:

* **Fixed vector** (``attention=None``, "RNNencdec" in Bahdanau et al. 2015): the encoder's final
  states are squeezed into one vector ``c`` that the decoder sees at every step (Cho et al. 2014,
  Eq. 9–10). However long the sentence, everything the decoder knows about it must pass through ``c``.
* **Attention** (``attention="additive"``, "RNNsearch"): at every step ``i`` the decoder scores every
  encoder state ``h_j`` against its previous state ``s_{i-1}``, turns the scores into weights
  ``α_ij = softmax_j(e_ij)`` and reads a fresh context ``c_i = Σ_j α_ij h_j`` (Bahdanau et al. 2015,
  Eq. 5–6). The score functions:

  ================  =============================================  ==============================
  name              e_ij                                           source
  ================  =============================================  ==============================
  ``additive``      vᵀ tanh(W_q s_{i-1} + W_k h_j)                 Bahdanau et al. 2015, Eq. 6 (App. A.1.2)
  ``dot``           s_{i-1}ᵀ h_j                                   Luong et al. 2015, Eq. 8
  ``scaled_dot``    s_{i-1}ᵀ h_j / √d                              Vaswani et al. 2017, Eq. 1
  ``general``       s_{i-1}ᵀ W h_j                                 Luong et al. 2015, Eq. 8
  ================  =============================================  ==============================

Both share the encoder (a bidirectional GRU, so ``h_j`` summarises the words before *and* after
``j``), the decoder GRU and the output layer; only the context differs. The models speak the same
protocol as :class:`lib.transformer.Transformer` (``lib.interfaces.EncoderDecoder``: ``forward``, ``encode``,
``decode``, ``new_cache``, ``config.d_model``, ``config.max_len``), so the book's training loop
(``lib.training.train``), decoders (``lib.decode``), ``lib.translate.translate`` and the checkpoint format work
for them unchanged.

The synthetic reversal task of the bottleneck chapter, accuracy by length and the cached experiments live in
:mod:`lib.experiments`, above the models; a translation's attention maps come from
``lib.translate.translation_attention``, as for the Transformer.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import ClassVar, Literal, overload

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .config import Config
from .interfaces import AttentionMaps, check_config_types
from .special_tokens import PAD_ID, SPECIAL_TOKENS

__all__ = [
    "SCORES",
    "Seq2SeqConfig",
    "AttentionScore",
    "AdditiveScore",
    "DotScore",
    "ScaledDotScore",
    "GeneralScore",
    "make_score",
    "attend",
    "Encoder",
    "DecoderState",
    "Seq2Seq",
]

#: The score functions :func:`make_score` knows.
SCORES = ("additive", "dot", "scaled_dot", "general")


# --- configuration -------------------------------------------------------------------------------


@dataclass
class Seq2SeqConfig(Config):
    """Sizes of a recurrent encoder–decoder.

    Attributes:
        vocab_size: shared source/target vocabulary size V.
        d_embed: word-embedding size m (Bahdanau et al. 2015 use 620).
        d_hidden: decoder state size n; the encoder's two directions have n/2 units each, so that an
            encoder state h_j = [→h_j; ←h_j] also has n entries and dot scores need no projection
            (Bahdanau et al. use 1000 per direction).
        attention: ``None`` for the fixed-vector model, else one of :data:`SCORES`.
        d_attention: size of the additive score's hidden layer (n' in Bahdanau et al. App. A.1.2);
            default d_hidden.
        dropout: dropout on embeddings and on the layer before the output softmax.
        max_len: longest target a decoder will generate (and longest sequence to expect).
        share_embeddings: tie source embedding, target embedding and output projection (one V × m
            matrix; Press & Wolf 2017), as the book's Transformer does.
        architecture: always ``"seq2seq"``; lets :func:`lib.checkpoint.load_run` pick the class.

    Raises:
        TypeError: a field of the wrong type (``"256"`` for an int, ``1`` for a bool): see
            :func:`lib.interfaces.check_config_types`.
        ValueError: unknown ``attention``; odd ``d_hidden``; a non-positive size; a vocabulary of no more than the
            4 special tokens; dropout outside [0, 1); an ``architecture`` other than ``"seq2seq"``.

    Source: Bahdanau et al. 2015, §4.2 and App. A (m = 620, n = 1000, n' = 1000); Cho et al. 2014, §2.2.
    """

    vocab_size: int
    d_embed: int = 256
    d_hidden: int = 256
    attention: str | None = "additive"
    d_attention: int | None = None
    dropout: float = 0.1
    max_len: int = 256
    share_embeddings: bool = True
    architecture: str = "seq2seq"

    SHAPE_FIELDS: ClassVar[tuple[str, ...]] = ("d_embed", "d_hidden", "attention")

    def __post_init__(self) -> None:
        check_config_types(self)
        if self.attention is not None and self.attention not in SCORES:
            raise ValueError(f"unknown attention score {self.attention!r}; choose None or one of {SCORES}")
        for name in ("vocab_size", "d_embed", "d_hidden", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.vocab_size <= len(SPECIAL_TOKENS):
            raise ValueError(
                f"vocab_size must exceed the {len(SPECIAL_TOKENS)} special tokens {SPECIAL_TOKENS}, "
                f"got {self.vocab_size}"
            )
        if self.d_attention is not None and self.d_attention < 1:
            raise ValueError(f"d_attention must be positive or None (= d_hidden), got {self.d_attention}")
        if self.architecture != "seq2seq":
            raise ValueError(f"architecture must be 'seq2seq', got {self.architecture!r}")
        if self.d_hidden % 2:
            raise ValueError(f"d_hidden must be even (two encoder directions of d_hidden/2), got {self.d_hidden}")
        if self.d_attention is None:
            self.d_attention = self.d_hidden
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def d_model(self) -> int:
        """The width the learning-rate schedule is scaled by (``lib.training.noam_lr``): d_hidden."""
        return self.d_hidden


# --- score functions -----------------------------------------------------------------------------


class AttentionScore(nn.Module):
    """Base class: scores one decoder query against every encoder state.

    ``prepare(keys)`` does the per-sentence work once (e.g. W_k h_j for all j); ``forward(query,
    prepared)`` is then called at every decoding step.

    Source: Bahdanau et al. 2015, §3.1, Eq. (6) (the alignment model a(s_{i-1}, h_j)); Luong et al. 2015, §3.1,
    Eq. (8) (the score functions compared).
    """

    def prepare(self, keys: Tensor) -> Tensor:
        """The per-sentence, step-independent part of the score (default: the keys unchanged).

        Args:
            keys: encoder states h_j, ``(batch, seq_s, d_key)``.

        Returns:
            What :meth:`forward` takes as ``prepared``; here the keys, ``(batch, seq_s, d_key)``.
        """
        return keys

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:  # pragma: no cover - abstract
        """Score one decoder query against every source position.

        Args:
            query: the previous decoder state s_{i-1}, ``(batch, d_query)``.
            prepared: the output of :meth:`prepare`, ``(batch, seq_s, ·)``.

        Returns:
            Scores e_i·, ``(batch, seq_s)`` (unnormalised; :func:`attend` applies the softmax).

        Raises:
            NotImplementedError: always; the subclasses implement it.
        """
        raise NotImplementedError


class AdditiveScore(AttentionScore):
    """e_ij = vᵀ tanh(W_q s_{i-1} + W_k h_j) (Bahdanau et al. 2015, Eq. 6 and App. A.1.2).

    Shapes: query ``(batch, d_query)``, keys ``(batch, seq_s, d_key)`` → scores ``(batch, seq_s)``.
    W_k h_j does not depend on the step, so :meth:`prepare` computes it once per sentence.

    Args:
        d_query: size of the decoder state s_{i-1} (n).
        d_key: size of an encoder state h_j (2n in Bahdanau et al.; d_hidden here).
        d_attention: size of the hidden layer, n' (the rows of W_q and W_k, the length of v).

    Source: Bahdanau et al. 2015, §3.1, Eq. (6) and App. A.1.2.
    """

    def __init__(self, d_query: int, d_key: int, d_attention: int) -> None:
        super().__init__()
        self.w_q = nn.Linear(d_query, d_attention, bias=False)
        self.w_k = nn.Linear(d_key, d_attention)
        self.v = nn.Linear(d_attention, 1, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        """W_k h_j (plus bias) for every source position, computed once per sentence.

        Args:
            keys: encoder states h_j, ``(batch, seq_s, d_key)``.

        Returns:
            ``(batch, seq_s, d_attention)``.
        """
        return self.w_k(keys)  # (batch, seq_s, d_attention)

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:
        """e_ij = vᵀ tanh(W_q s_{i-1} + W_k h_j) for every j.

        Args:
            query: s_{i-1}, ``(batch, d_query)``.
            prepared: W_k h_j from :meth:`prepare`, ``(batch, seq_s, d_attention)``.

        Returns:
            Scores ``(batch, seq_s)``.
        """
        return self.v(torch.tanh(self.w_q(query)[:, None, :] + prepared)).squeeze(-1)


class DotScore(AttentionScore):
    """e_ij = s_{i-1}ᵀ h_j (Luong et al. 2015, Eq. 8, "dot"). Needs d_query = d_key.

    Source: Luong et al. 2015, "Effective Approaches to Attention-based Neural Machine Translation", §3.1, Eq. (8).
    """

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:
        """e_ij = s_{i-1}ᵀ h_j for every j.

        Args:
            query: s_{i-1}, ``(batch, d)``.
            prepared: the keys h_j, ``(batch, seq_s, d)``.

        Returns:
            Scores ``(batch, seq_s)``.
        """
        return torch.einsum("bd,bsd->bs", query, prepared)


class ScaledDotScore(AttentionScore):
    """e_ij = s_{i-1}ᵀ h_j / √d (Vaswani et al. 2017, Eq. 1). Needs d_query = d_key = d.

    Source: Vaswani et al. 2017, §3.2.1, Eq. (1) (the scaling by 1/√d_k), applied to one query per step.
    """

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:
        """e_ij = s_{i-1}ᵀ h_j / √d for every j.

        Args:
            query: s_{i-1}, ``(batch, d)``.
            prepared: the keys h_j, ``(batch, seq_s, d)``.

        Returns:
            Scores ``(batch, seq_s)``.
        """
        return torch.einsum("bd,bsd->bs", query, prepared) / math.sqrt(query.size(-1))


class GeneralScore(AttentionScore):
    """e_ij = s_{i-1}ᵀ W h_j (Luong et al. 2015, Eq. 8, "general"); W is d_query × d_key.

    Args:
        d_query: size of the decoder state s_{i-1}.
        d_key: size of an encoder state h_j.

    Source: Luong et al. 2015, "Effective Approaches to Attention-based Neural Machine Translation", §3.1, Eq. (8).
    """

    def __init__(self, d_query: int, d_key: int) -> None:
        super().__init__()
        self.w = nn.Linear(d_key, d_query, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        """W h_j for every source position, computed once per sentence.

        Args:
            keys: encoder states h_j, ``(batch, seq_s, d_key)``.

        Returns:
            ``(batch, seq_s, d_query)``.
        """
        return self.w(keys)

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:
        """e_ij = s_{i-1}ᵀ (W h_j) for every j.

        Args:
            query: s_{i-1}, ``(batch, d_query)``.
            prepared: W h_j from :meth:`prepare`, ``(batch, seq_s, d_query)``.

        Returns:
            Scores ``(batch, seq_s)``.
        """
        return torch.einsum("bd,bsd->bs", query, prepared)


def make_score(name: str, d_query: int, d_key: int, d_attention: int | None = None) -> AttentionScore:
    """The score function called ``name`` (one of :data:`SCORES`).

    Args:
        name: ``"additive"``, ``"dot"``, ``"scaled_dot"`` or ``"general"``.
        d_query: size of the decoder state s_{i-1}.
        d_key: size of an encoder state h_j (must equal d_query for ``dot`` and ``scaled_dot``).
        d_attention: hidden size n' of the additive score (default d_query); ignored by the others.

    Returns:
        A new :class:`AttentionScore` (an :class:`AdditiveScore`, :class:`DotScore`, :class:`ScaledDotScore` or
        :class:`GeneralScore`).

    Raises:
        TypeError: a size that is not an int.
        ValueError: unknown name; a size < 1; ``dot``/``scaled_dot`` with d_query ≠ d_key.

    Source: Bahdanau et al. 2015, Eq. (6) and App. A.1.2 (additive); Luong et al. 2015, Eq. (8) (dot, general);
    Vaswani et al. 2017, Eq. (1) (scaled dot).
    """
    for size, size_name in ((d_query, "d_query"), (d_key, "d_key"), (d_attention, "d_attention")):
        if size is None and size_name == "d_attention":
            continue
        if isinstance(size, bool) or not isinstance(size, numbers.Integral):
            raise TypeError(f"{size_name} must be an int, got {size!r} ({type(size).__name__})")
        if size < 1:
            raise ValueError(f"{size_name} must be at least 1, got {size}")
    if name not in SCORES:
        raise ValueError(f"unknown attention score {name!r}; choose one of {SCORES}")
    if name in ("dot", "scaled_dot") and d_query != d_key:
        raise ValueError(
            f"a {name} score needs equal query and key sizes, got d_query={d_query}, d_key={d_key}; "
            "use 'additive' or 'general', which project them"
        )
    if name == "additive":
        return AdditiveScore(d_query, d_key, d_attention or d_query)
    if name == "general":
        return GeneralScore(d_query, d_key)
    return DotScore() if name == "dot" else ScaledDotScore()


def attend(scores: Tensor, values: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Weights and context from scores: α = softmax(e) over the source, c = Σ_j α_j h_j (Bahdanau Eq. 5–6).

    Args:
        scores: ``(batch, seq_s)``.
        values: encoder states ``(batch, seq_s, d)``.
        mask: ``(batch, seq_s)`` bool, True for real source tokens; padded positions get weight 0.

    Returns:
        ``(context (batch, d), weights (batch, seq_s))``; each row of weights sums to 1.

    Raises:
        ValueError: mismatched shapes, a mask that is not bool, or a row whose mask hides every position.

    Source: Bahdanau et al. 2015, §3.1, Eq. (6) (α_ij = softmax_j e_ij) and Eq. (5) (c_i = Σ_j α_ij h_j).
    """
    if scores.dim() != 2 or values.dim() != 3 or values.shape[:2] != scores.shape:
        raise ValueError(
            f"scores must be (batch, seq_s) and values (batch, seq_s, d); got "
            f"{tuple(scores.shape)} and {tuple(values.shape)}"
        )
    if mask is not None:
        if mask.dtype != torch.bool or mask.shape != scores.shape:
            raise ValueError(
                f"mask must be bool (batch, seq_s) = {tuple(scores.shape)}, got {mask.dtype} {tuple(mask.shape)}"
            )
        if not mask.any(-1).all():
            raise ValueError("a mask row hides every source position: there is nothing to attend to")
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores.float(), dim=-1).to(values.dtype)
    return torch.einsum("bs,bsd->bd", weights, values), weights


# --- encoder -------------------------------------------------------------------------------------


class Encoder(nn.Module):
    """Bidirectional GRU over the embedded source (Bahdanau et al. 2015, §3.2).

    ``forward(embedded (batch, seq_s, d_embed), lengths (batch,))`` → ``(states (batch, seq_s,
    d_hidden), summary (batch, d_hidden))``: ``states[:, j] = [→h_j; ←h_j]``; ``summary`` is the
    forward direction's last state joined with the backward direction's first, the fixed-length
    summary of the whole sentence (the vector c of Cho et al. 2014). Padded positions of ``states`` are
    zero and never influence the real ones (the GRU runs over packed sequences).

    Args:
        d_embed: size of the word embeddings read (m).
        d_hidden: size of an encoder state h_j; each direction has d_hidden / 2 units.

    Source: Bahdanau et al. 2015, §3.2 and App. A.2.1 (the bidirectional encoder); Cho et al. 2014, §2 (the GRU,
    the summary c).
    """

    def __init__(self, d_embed: int, d_hidden: int) -> None:
        super().__init__()
        self.rnn = nn.GRU(d_embed, d_hidden // 2, batch_first=True, bidirectional=True)

    def forward(self, embedded: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """Run both directions over the (right-padded) embedded source.

        Args:
            embedded: ``(batch, seq_s, d_embed)`` embedded source tokens.
            lengths: ``(batch,)`` number of real tokens per row (each ≥ 1).

        Returns:
            states: ``(batch, seq_s, d_hidden)``, ``states[:, j] = [→h_j; ←h_j]``; zero at padded positions.
            summary: ``(batch, d_hidden)``, [→h_last; ←h_1].

        Raises:
            ValueError: ``embedded`` is not ``(batch, seq_s, d_embed)``; ``lengths`` is not ``(batch,)`` integers
                in ``[1, seq_s]``.
        """
        d_embed = self.rnn.input_size
        if not isinstance(embedded, Tensor) or embedded.dim() != 3 or embedded.size(-1) != d_embed:
            raise ValueError(
                f"embedded must be (batch, seq_s, d_embed={d_embed}), got {tuple(getattr(embedded, 'shape', ()))}"
            )
        if (
            not isinstance(lengths, Tensor)
            or lengths.shape != embedded.shape[:1]
            or lengths.is_floating_point()
            or (lengths.numel() and (int(lengths.min()) < 1 or int(lengths.max()) > embedded.size(1)))
        ):
            raise ValueError(
                f"lengths must be (batch,) = ({embedded.size(0)},) integers in [1, seq_s={embedded.size(1)}], got "
                f"{lengths.tolist() if isinstance(lengths, Tensor) else lengths!r}"
            )
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, last = self.rnn(packed)  # last: (2, batch, d_hidden/2) — forward's end, backward's start
        states, _ = pad_packed_sequence(out, batch_first=True, total_length=embedded.size(1))
        return states, torch.cat([last[0], last[1]], dim=-1)


# --- decoder state (the "cache" of lib.decode) ---------------------------------------------------


class DecoderState:
    """What the recurrent decoder carries from one step to the next.

    ``state``: s_{i-1}, ``(batch, d_hidden)``; ``context``: the fixed vector c (fixed-vector model
    only), ``(batch, d_hidden)``; ``prepared``: the score function's per-sentence keys. It plays the
    role of :class:`lib.transformer.LayerCache` for :func:`lib.decode.greedy_decode` and
    :func:`lib.decode.beam_search`.

    Source: Bahdanau et al. 2015, App. A.2.2 (s_i depends on s_{i-1}, y_{i-1} and c_i); Cho et al. 2014, Eq. (9)
    (the fixed c at every step).
    """

    def __init__(self) -> None:
        self.state: Tensor | None = None
        self.context: Tensor | None = None
        self.prepared: Tensor | None = None

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search: follow the surviving hypotheses), in place.

        Args:
            index: ``(new_batch,)`` LongTensor of the rows to keep, in their new order (rows may repeat).

        Raises:
            ValueError: ``index`` is not a 1-D integer tensor.
        """
        if not isinstance(index, Tensor) or index.dim() != 1 or index.is_floating_point() or index.dtype == torch.bool:
            raise ValueError(f"index must be a 1-D LongTensor of batch rows, got {getattr(index, 'shape', index)!r}")
        for name in ("state", "context", "prepared"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value.index_select(0, index))


# --- the model -----------------------------------------------------------------------------------


class Seq2Seq(nn.Module):
    """A GRU encoder–decoder, with a fixed context vector or with attention (see the module docstring).

    One decoder step (Bahdanau et al. 2015, App. A.2.2, with a GRU and tanh in place of maxout)::

        c_i = c                              (fixed vector)   or   Σ_j α_ij h_j, α_i = softmax(e_i·)  (attention)
        s_i = GRU([E y_{i-1}; c_i], s_{i-1})
        t_i = tanh(W_o [s_i; c_i; E y_{i-1}])                       (batch, d_embed)
        p(y_i | y_<i, x) = softmax(t_i Eᵀ)                           tied output matrix when share_embeddings

    and s_0 = tanh(W_s [→h_last; ←h_1]) for both models.

    Args:
        config: a :class:`Seq2SeqConfig`.

    Raises:
        TypeError: ``config`` is not a :class:`Seq2SeqConfig`.

    Source: Bahdanau et al. 2015, §3 and App. A.2 (RNNsearch); Cho et al. 2014, §2.2, Eq. (9)–(10) (RNNencdec,
    the fixed vector c).
    """

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise TypeError(f"config must be a Seq2SeqConfig, got {type(config).__name__}")
        self.config = c = config
        self.src_embed = nn.Embedding(c.vocab_size, c.d_embed, padding_idx=PAD_ID)
        self.tgt_embed = nn.Embedding(c.vocab_size, c.d_embed, padding_idx=PAD_ID)
        self.encoder = Encoder(c.d_embed, c.d_hidden)
        self.init_state = nn.Linear(c.d_hidden, c.d_hidden)
        self.score = None if c.attention is None else make_score(c.attention, c.d_hidden, c.d_hidden, c.d_attention)
        self.rnn = nn.GRU(c.d_embed + c.d_hidden, c.d_hidden, batch_first=True)
        self.pre_output = nn.Linear(c.d_hidden + c.d_hidden + c.d_embed, c.d_embed)
        self.output = nn.Linear(c.d_embed, c.vocab_size, bias=False)
        self.dropout = nn.Dropout(c.dropout)
        self._reset_parameters()
        if c.share_embeddings:
            self.tgt_embed.weight = self.src_embed.weight
            self.output.weight = self.src_embed.weight

    def _reset_parameters(self) -> None:
        for emb in (self.src_embed, self.tgt_embed):
            nn.init.normal_(emb.weight, std=self.config.d_embed**-0.5)
            with torch.no_grad():
                emb.weight[PAD_ID].zero_()

    def num_parameters(self) -> int:
        """Trainable parameters, each shared matrix counted once.

        Returns:
            The count of scalar weights (``parameters()`` yields a tied matrix once).
        """
        return sum(p.numel() for p in self.parameters())

    def _check_tokens(self, ids: Tensor, name: str) -> None:
        """Token ids ``(batch, seq_s)`` (src) or ``(batch, seq_t)`` (tgt) of an integer dtype inside the vocabulary."""
        shape = "(batch, seq_s)" if name == "src" else "(batch, seq_t)"
        if not isinstance(ids, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of token ids {shape}, got {type(ids).__name__}")
        if ids.dim() != 2 or ids.dtype not in (torch.long, torch.int):
            raise ValueError(f"{name} must be integer token ids of shape {shape}, got {tuple(ids.shape)} {ids.dtype}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise ValueError(f"{name} holds ids outside [0, {self.config.vocab_size})")

    def _check_decode(self, tgt: Tensor, memory: Tensor, src_mask: Tensor, cache, offset: int) -> None:
        """What :meth:`decode` reads: target ids, the encoder's output and mask, a cache from new_cache."""
        self._check_tokens(tgt, "tgt")
        if not isinstance(memory, Tensor) or not isinstance(src_mask, Tensor):
            raise TypeError("memory and src_mask must be the tensors that encode returns")
        d = self.config.d_hidden
        if memory.dim() != 3 or memory.size(-1) != d or not memory.is_floating_point():
            raise ValueError(
                f"memory must be the encoder states, a float (batch, seq_s, d_hidden={d}) tensor, got "
                f"{tuple(memory.shape)} {memory.dtype}"
            )
        if tgt.size(0) != memory.size(0):
            raise ValueError(f"tgt must be (batch, seq_t) with batch {memory.size(0)}, got {tuple(tgt.shape)}")
        if src_mask.dtype != torch.bool or src_mask.shape != memory.shape[:2]:
            raise ValueError(
                f"src_mask must be a bool (batch, seq_s) = {tuple(memory.shape[:2])} tensor, as encode returns, got "
                f"{src_mask.dtype} {tuple(src_mask.shape)}"
            )
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError(f"offset must be an int, got {offset!r} ({type(offset).__name__})")
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        if cache is not None and (
            not isinstance(cache, list) or len(cache) != 1 or not isinstance(cache[0], DecoderState)
        ):
            raise ValueError("cache must be [DecoderState()], as new_cache() returns")

    # -- encoding ---------------------------------------------------------------------------------
    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """Encode right-padded source ids once; :meth:`decode` reads the result at every step.

        Args:
            src: source ids ``(batch, seq_s)``, right-padded with ``<pad>``.

        Returns:
            ``(memory, src_mask)``: the encoder states h_j ``(batch, seq_s, d_hidden)`` and a ``(batch, seq_s)``
            bool mask, ``True`` where a real token is. The fixed-vector model's summary c is read back from
            ``memory`` by :meth:`summary`.

        Raises:
            TypeError: src is not a tensor.
            ValueError: src is not ``(batch, seq_s)`` integer ids inside the vocabulary, or a row is all padding.

        Source: Bahdanau et al. 2015, §3.2 (the annotations h_j of a bidirectional RNN).
        """
        self._check_tokens(src, "src")
        mask = src != PAD_ID
        lengths = mask.sum(-1)
        if (lengths == 0).any():
            raise ValueError("a source row is all padding: every sentence needs at least one token")
        states, _ = self.encoder(self.dropout(self.src_embed(src)), lengths)
        return states, mask

    @staticmethod
    def summary(memory: Tensor, src_mask: Tensor) -> Tensor:
        """The fixed-length summary [→h_last; ←h_1] of each sentence, read from the encoder states.

        It equals the final states the GRU returns (tested), so it can be recomputed from what :meth:`encode`
        gives.

        Args:
            memory: encoder states ``(batch, seq_s, d_hidden)`` from :meth:`encode`.
            src_mask: ``(batch, seq_s)`` bool, ``True`` at real tokens (right-padded: the real tokens come first).

        Returns:
            ``(batch, d_hidden)``: the forward direction at each sentence's last real token joined with the
            backward direction at position 0.
        """
        half = memory.size(-1) // 2
        last = src_mask.sum(-1) - 1  # index of each sentence's last real token
        forward_last = memory[torch.arange(memory.size(0), device=memory.device), last, :half]
        backward_first = memory[:, 0, half:]
        return torch.cat([forward_last, backward_first], dim=-1)

    # -- decoding ---------------------------------------------------------------------------------
    def new_cache(self) -> list[DecoderState]:
        """An empty decoder state (a list of one, like the Transformer's per-layer caches).

        Returns:
            ``[DecoderState()]``; :meth:`decode` fills it at offset 0.
        """
        return [DecoderState()]

    def init_decoder(self, memory: Tensor, src_mask: Tensor, cache: DecoderState) -> None:
        """The decoder's first state s_0 = tanh(W summary(memory)); Bahdanau's scores prepare U_a h_j once."""
        summary = self.summary(memory, src_mask)
        cache.state = torch.tanh(self.init_state(summary))
        if self.score is None:
            cache.context = summary
        else:
            cache.prepared = self.score.prepare(memory)

    def decoder_step(
        self, emb: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderState
    ) -> tuple[Tensor, Tensor | None]:
        """One step: ``emb (batch, d_embed)`` of y_{i-1} → (t_i (batch, d_embed), α_i (batch, seq_s) or None)."""
        weights = None
        if self.score is None:
            context = cache.context
        else:
            context, weights = attend(self.score(cache.state, cache.prepared), memory, src_mask)
        out, _ = self.rnn(torch.cat([emb, context], -1)[:, None, :], cache.state[None])
        cache.state = out[:, 0]
        t = torch.tanh(self.pre_output(torch.cat([cache.state, context, emb], -1)))
        return t, weights

    def _decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: list[DecoderState] | None,
        offset: int,
        return_attention: bool,
    ) -> tuple[Tensor, Tensor | None]:
        self._check_decode(tgt, memory, src_mask, cache, offset)
        state = (cache or self.new_cache())[0]
        if state.state is None:
            if offset != 0:
                raise ValueError(f"an empty decoder cache can only start at offset 0, got offset {offset}")
            if not src_mask.any(-1).all():
                raise ValueError("src_mask has a row with no source token: every sentence needs at least one")
            self.init_decoder(memory, src_mask, state)
        emb = self.dropout(self.tgt_embed(tgt))  # (batch, seq_t, d_embed)
        if self.score is None and tgt.size(1) > 1:
            # the context is the same at every step: run the GRU over the whole sequence at once
            context = state.context[:, None, :].expand(-1, tgt.size(1), -1)
            out, last = self.rnn(torch.cat([emb, context], -1), state.state[None])
            state.state = last[0]
            t = torch.tanh(self.pre_output(torch.cat([out, context, emb], -1)))
            weights = None
        else:
            ts, ws = [], []
            for i in range(tgt.size(1)):
                t_i, w_i = self.decoder_step(emb[:, i], memory, src_mask, state)
                ts.append(t_i)
                ws.append(w_i)
            t = torch.stack(ts, 1)
            weights = torch.stack(ws, 1) if self.score is not None and return_attention else None
        return self.output(self.dropout(t)), weights

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: list[DecoderState] | None = None,
        offset: int = 0,
    ) -> Tensor:
        """Run the decoder over target ids, teacher-forced or one step at a time with ``cache``.

        Args:
            tgt: ``(batch, seq_t)`` target ids (y_0 = BOS first); with a cache, the new token(s) only.
            memory: the encoder states from :meth:`encode`.
            src_mask: the source mask from :meth:`encode`.
            cache: from :meth:`new_cache`; carries s_{i-1} between calls. None = a fresh one.
            offset: tokens decoded before ``tgt`` (0 starts a sentence; kept for the Transformer's protocol).

        Returns:
            logits ``(batch, seq_t, V)``.

        Raises:
            TypeError: ``tgt``, ``memory`` or ``src_mask`` is not a tensor; ``offset`` is not an int.
            ValueError: ``tgt`` is not ``(batch, seq_t)`` integer ids in the vocabulary with memory's batch;
                ``memory`` or ``src_mask`` not as :meth:`encode` returns them; a negative offset or an empty cache
                with offset ≠ 0; a cache not from :meth:`new_cache`.

        Source: Bahdanau et al. 2015, App. A.2.2 (the decoder step), with a GRU and tanh in place of maxout.
        """
        return self._decode(tgt, memory, src_mask, cache, offset, return_attention=False)[0]

    @overload
    def forward(self, src: Tensor, tgt: Tensor, return_attention: Literal[False] = False) -> Tensor: ...

    @overload
    def forward(self, src: Tensor, tgt: Tensor, return_attention: Literal[True]) -> tuple[Tensor, AttentionMaps]: ...

    def forward(
        self, src: Tensor, tgt: Tensor, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, AttentionMaps]:
        """Teacher-forced forward pass.

        Args:
            src: ``(batch, seq_s)`` source ids, right-padded.
            tgt: ``(batch, seq_t)`` decoder inputs (BOS y_1 … y_{T-1}).
            return_attention: also return the attention weights.

        Returns:
            ``logits (batch, seq_t, V)``; with ``return_attention=True`` the pair ``(logits, AttentionMaps)``
            whose ``cross`` list holds one ``(batch, 1, seq_t, seq_s)`` tensor (one head; row i: where the
            decoder looked to predict y_i), or is empty for the fixed-vector model, which attends to nothing.

        Raises:
            TypeError: ``src`` or ``tgt`` is not a tensor.
            ValueError: bad ``src`` (see :meth:`encode`) or ``tgt`` not ``(batch, seq_t)`` ids with src's batch.

        Source: Bahdanau et al. 2015, §3 and App. A.2.2; Cho et al. 2014, Eq. 9–10 (fixed vector).
        """
        if all(isinstance(t, Tensor) and t.dim() == 2 for t in (src, tgt)) and tgt.size(0) != src.size(0):
            raise ValueError(f"tgt must be (batch, seq_t) with batch {src.size(0)}, got {tuple(tgt.shape)}")
        memory, src_mask = self.encode(src)
        logits, weights = self._decode(tgt, memory, src_mask, None, 0, return_attention)
        if not return_attention:
            return logits
        return logits, AttentionMaps(cross=[] if weights is None else [weights[:, None]])
