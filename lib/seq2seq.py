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
protocol as :class:`lib.transformer.Transformer` (``forward``, ``encode``, ``decode``, ``new_cache``,
``config.d_model``, ``config.max_len``), so the book's training loop (:func:`lib.train.train`), decoders
(:mod:`lib.decode`), :func:`lib.translate.translate` and the checkpoint format work for them unchanged.

The module also makes the synthetic sequence tasks of the bottleneck chapter
(:func:`sequence_task`) and measures accuracy by length (:func:`accuracy_by_length`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .special_tokens import BOS_ID, EOS_ID, PAD_ID

__all__ = [
    "SCORES", "Seq2SeqConfig", "AttentionScore", "AdditiveScore", "DotScore", "ScaledDotScore", "GeneralScore",
    "make_score", "attend", "Encoder", "DecoderState", "Seq2Seq", "Alignment", "alignment",
    "sequence_task", "accuracy_by_length", "LengthAccuracy", "ReversalExperiment", "reversal_experiment",
]

#: The score functions :func:`make_score` knows.
SCORES = ("additive", "dot", "scaled_dot", "general")


# --- configuration -------------------------------------------------------------------------------

@dataclass
class Seq2SeqConfig:
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
        ValueError: unknown ``attention``; odd ``d_hidden``; a non-positive size.
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

    def __post_init__(self) -> None:
        if self.attention is not None and self.attention not in SCORES:
            raise ValueError(f"unknown attention score {self.attention!r}; choose None or one of {SCORES}")
        for name in ("vocab_size", "d_embed", "d_hidden", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.d_hidden % 2:
            raise ValueError(f"d_hidden must be even (two encoder directions of d_hidden/2), got {self.d_hidden}")
        if self.d_attention is None:
            self.d_attention = self.d_hidden
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def d_model(self) -> int:
        """The width the learning-rate schedule is scaled by (:func:`lib.train.noam_lr`): d_hidden."""
        return self.d_hidden

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Seq2SeqConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


# --- score functions -----------------------------------------------------------------------------

class AttentionScore(nn.Module):
    """Base class: scores one decoder query against every encoder state.

    ``prepare(keys)`` does the per-sentence work once (e.g. W_k h_j for all j); ``forward(query,
    prepared)`` is then called at every decoding step.
    """

    def prepare(self, keys: Tensor) -> Tensor:
        """``keys (batch, seq_s, d_hidden)`` → whatever ``forward`` needs (default: the keys)."""
        return keys

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class AdditiveScore(AttentionScore):
    """e_ij = vᵀ tanh(W_q s_{i-1} + W_k h_j) (Bahdanau et al. 2015, Eq. 6 and App. A.1.2).

    Shapes: query ``(batch, d_query)``, keys ``(batch, seq_s, d_key)`` → scores ``(batch, seq_s)``.
    W_k h_j does not depend on the step, so :meth:`prepare` computes it once per sentence.
    """

    def __init__(self, d_query: int, d_key: int, d_attention: int) -> None:
        super().__init__()
        self.w_q = nn.Linear(d_query, d_attention, bias=False)
        self.w_k = nn.Linear(d_key, d_attention)
        self.v = nn.Linear(d_attention, 1, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        return self.w_k(keys)  # (batch, seq_s, d_attention)

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:
        return self.v(torch.tanh(self.w_q(query)[:, None, :] + prepared)).squeeze(-1)


class DotScore(AttentionScore):
    """e_ij = s_{i-1}ᵀ h_j (Luong et al. 2015, Eq. 8, "dot"). Needs d_query = d_key."""

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:
        return torch.einsum("bd,bsd->bs", query, prepared)


class ScaledDotScore(AttentionScore):
    """e_ij = s_{i-1}ᵀ h_j / √d (Vaswani et al. 2017, Eq. 1). Needs d_query = d_key = d."""

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:
        return torch.einsum("bd,bsd->bs", query, prepared) / math.sqrt(query.size(-1))


class GeneralScore(AttentionScore):
    """e_ij = s_{i-1}ᵀ W h_j (Luong et al. 2015, Eq. 8, "general"); W is d_query × d_key."""

    def __init__(self, d_query: int, d_key: int) -> None:
        super().__init__()
        self.w = nn.Linear(d_key, d_query, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        return self.w(keys)

    def forward(self, query: Tensor, prepared: Tensor) -> Tensor:
        return torch.einsum("bd,bsd->bs", query, prepared)


def make_score(name: str, d_query: int, d_key: int, d_attention: int | None = None) -> AttentionScore:
    """The score function called ``name`` (one of :data:`SCORES`).

    Raises:
        ValueError: unknown name; ``dot``/``scaled_dot`` with d_query ≠ d_key.
    """
    if name not in SCORES:
        raise ValueError(f"unknown attention score {name!r}; choose one of {SCORES}")
    if name in ("dot", "scaled_dot") and d_query != d_key:
        raise ValueError(f"a {name} score needs equal query and key sizes, got d_query={d_query}, d_key={d_key}; "
                         "use 'additive' or 'general', which project them")
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
        ValueError: mismatched shapes, or a row whose mask hides every position.
    """
    if scores.dim() != 2 or values.dim() != 3 or values.shape[:2] != scores.shape:
        raise ValueError(f"scores must be (batch, seq_s) and values (batch, seq_s, d); got "
                         f"{tuple(scores.shape)} and {tuple(values.shape)}")
    if mask is not None:
        if mask.shape != scores.shape:
            raise ValueError(f"mask must be (batch, seq_s) = {tuple(scores.shape)}, got {tuple(mask.shape)}")
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
    """

    def __init__(self, d_embed: int, d_hidden: int) -> None:
        super().__init__()
        self.rnn = nn.GRU(d_embed, d_hidden // 2, batch_first=True, bidirectional=True)

    def forward(self, embedded: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
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
    """

    def __init__(self) -> None:
        self.state: Tensor | None = None
        self.context: Tensor | None = None
        self.prepared: Tensor | None = None

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search: follow the surviving hypotheses)."""
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
    """

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
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
            nn.init.normal_(emb.weight, std=self.config.d_embed ** -0.5)
            with torch.no_grad():
                emb.weight[PAD_ID].zero_()

    def num_parameters(self) -> int:
        """Trainable parameters, each shared matrix counted once."""
        return sum(p.numel() for p in self.parameters())

    # -- encoding ---------------------------------------------------------------------------------
    def encode(self, src: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor, list]:
        """Encode right-padded source ids ``(batch, seq_s)``.

        Returns:
            ``(memory (batch, seq_s, d_hidden), src_mask (batch, seq_s) bool, [])``: the encoder states
            h_j, True where a real token is, and an empty list (recurrent encoders have no attention
            weights; the element keeps the return shape of :meth:`lib.transformer.Transformer.encode`).
            The fixed-vector model's summary c is read back from ``memory`` by :meth:`summary`.

        Raises:
            ValueError: src is not ``(batch, seq_s)`` integer ids, or a row is all padding.
        """
        if src.dim() != 2 or src.dtype not in (torch.long, torch.int, torch.int32, torch.int64):
            raise ValueError(f"src must be integer token ids of shape (batch, seq_s), got {tuple(src.shape)} {src.dtype}")
        mask = src != PAD_ID
        lengths = mask.sum(-1)
        if (lengths == 0).any():
            raise ValueError("a source row is all padding: every sentence needs at least one token")
        states, _ = self.encoder(self.dropout(self.src_embed(src)), lengths)
        return states, mask, []

    @staticmethod
    def summary(memory: Tensor, src_mask: Tensor) -> Tensor:
        """The fixed-length summary [→h_last; ←h_1] of each sentence, read from the encoder states.

        ``memory (batch, seq_s, d_hidden)``, ``src_mask (batch, seq_s)`` → ``(batch, d_hidden)``. It equals
        the final states the GRU returns (tested), so it can be recomputed from what :meth:`encode` gives.
        """
        half = memory.size(-1) // 2
        last = src_mask.sum(-1) - 1  # index of each sentence's last real token
        forward_last = memory[torch.arange(memory.size(0), device=memory.device), last, :half]
        backward_first = memory[:, 0, half:]
        return torch.cat([forward_last, backward_first], dim=-1)

    # -- decoding ---------------------------------------------------------------------------------
    def new_cache(self) -> list[DecoderState]:
        """An empty decoder state (a list of one, like the Transformer's per-layer caches)."""
        return [DecoderState()]

    def _start(self, memory: Tensor, src_mask: Tensor, cache: DecoderState) -> None:
        summary = self.summary(memory, src_mask)
        cache.state = torch.tanh(self.init_state(summary))
        if self.score is None:
            cache.context = summary
        else:
            cache.prepared = self.score.prepare(memory)

    def _step(self, emb: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderState) -> tuple[Tensor, Tensor | None]:
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

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: list[DecoderState] | None = None,
        offset: int = 0,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None, None]:
        """Run the decoder over target ids, teacher-forced or one step at a time with ``cache``.

        Args:
            tgt: ``(batch, seq_t)`` target ids (y_0 = BOS first); with a cache, the new token(s) only.
            memory, src_mask: from :meth:`encode`.
            cache: from :meth:`new_cache`; carries s_{i-1} between calls. None = a fresh one.
            offset: tokens decoded before ``tgt`` (0 starts a sentence; kept for the Transformer's protocol).
            need_weights: also return the attention weights.

        Returns:
            ``(logits (batch, seq_t, V), weights (batch, seq_t, seq_s) or None, None)``.
        """
        state = (cache or self.new_cache())[0]
        if state.state is None:
            if offset != 0:
                raise ValueError("an empty decoder cache can only start at offset 0")
            self._start(memory, src_mask, state)
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
                t_i, w_i = self._step(emb[:, i], memory, src_mask, state)
                ts.append(t_i)
                ws.append(w_i)
            t = torch.stack(ts, 1)
            weights = torch.stack(ws, 1) if self.score is not None and need_weights else None
        logits = self.output(self.dropout(t))
        return logits, weights, None

    def forward(self, src: Tensor, tgt: Tensor, return_attention: bool = False):
        """Teacher-forced forward pass.

        Args:
            src: ``(batch, seq_s)`` source ids, right-padded.
            tgt: ``(batch, seq_t)`` decoder inputs (BOS y_1 … y_{T-1}).
            return_attention: also return the attention weights.

        Returns:
            ``logits (batch, seq_t, V)``; with ``return_attention`` a pair ``(logits, weights)`` where
            weights is ``(batch, seq_t, seq_s)`` (row i: where the decoder looked to predict y_i), or None
            for the fixed-vector model.

        Raises:
            ValueError: bad ``src`` (see :meth:`encode`) or ``tgt`` not ``(batch, seq_t)`` with src's batch.
        """
        if tgt.dim() != 2 or tgt.size(0) != src.size(0):
            raise ValueError(f"tgt must be (batch, seq_t) with batch {src.size(0)}, got {tuple(tgt.shape)}")
        memory, src_mask, _ = self.encode(src)
        logits, weights, _ = self.decode(tgt, memory, src_mask, need_weights=return_attention)
        return (logits, weights) if return_attention else logits


# --- looking at the alignments -------------------------------------------------------------------

@dataclass
class Alignment:
    """A translation and the attention weights the decoder used for it.

    ``weights[i, j]``: how much target token ``target_tokens[i]`` (the i-th prediction, last one ``</s>``)
    drew on source token ``source_tokens[j]``; shape ``(len(target_tokens), len(source_tokens))``.
    """

    source: str
    translation: str
    source_tokens: list[str]
    target_tokens: list[str]
    weights: Tensor


@torch.no_grad()
def alignment(model: Seq2Seq, tokenizer, source: str, translation: str | None = None) -> Alignment:
    """Translate ``source`` greedily (or force ``translation``) and return the attention weights.

    Raises:
        ValueError: the model has no attention (a fixed-vector model aligns nothing).
    """
    from .decode import greedy_decode
    from .bpe import decode, encode

    if model.score is None:
        raise ValueError("this model has no attention (attention=None): there are no alignments to show")
    model.eval()
    device = next(model.parameters()).device
    src_ids = encode(tokenizer, source)[: model.config.max_len - 1] + [EOS_ID]
    src = torch.tensor([src_ids], device=device)
    tgt_ids = greedy_decode(model, src)[0] if translation is None else encode(tokenizer, translation)
    tgt_in = torch.tensor([[BOS_ID] + tgt_ids], device=device)
    _, weights = model(src, tgt_in, return_attention=True)
    name = tokenizer.id_to_token
    return Alignment(source, decode(tokenizer, tgt_ids), [name(i) for i in src_ids],
                     [name(i) for i in tgt_ids] + [name(EOS_ID)], weights[0].cpu())


# --- the synthetic task --------------------------------------------------------------------------

def sequence_task(
    n: int,
    min_len: int,
    max_len: int,
    num_symbols: int = 20,
    kind: str = "reverse",
    seed: int = 0,
) -> list[tuple[list[int], list[int]]]:
    """Random symbol sequences and their targets: the clean test of how much a model remembers.

    Symbols are token ids ``4 … 4 + num_symbols - 1`` (ids 0–3 are PAD, BOS, EOS, UNK as in
    :mod:`lib.bpe`); lengths are uniform in ``[min_len, max_len]``. ``kind="reverse"``: the target is
    the source backwards; ``"copy"``: the source itself. The pairs have no specials, like
    :func:`lib.data.encode_pairs` output, so :func:`lib.train.train` takes them directly.

    Raises:
        ValueError: ``min_len < 1``, ``max_len < min_len``, ``num_symbols < 2``, unknown kind.
    """
    if min_len < 1 or max_len < min_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if num_symbols < 2:
        raise ValueError(f"num_symbols must be at least 2, got {num_symbols}")
    if kind not in ("reverse", "copy"):
        raise ValueError(f"kind must be 'reverse' or 'copy', got {kind!r}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        src = [4 + rng.randrange(num_symbols) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((src, src[::-1] if kind == "reverse" else list(src)))
    return pairs


@dataclass
class LengthAccuracy:
    """Accuracy of greedy outputs per source length.

    ``lengths``: the lengths measured; ``token``: fraction of target positions predicted right (a
    missing or extra token counts as wrong; denominator max(len(output), len(target))); ``sequence``:
    fraction of outputs exactly right; ``count``: sequences per length.
    """

    lengths: list[int]
    token: list[float]
    sequence: list[float]
    count: list[int]


@torch.no_grad()
def accuracy_by_length(model: nn.Module, pairs: list[tuple[list[int], list[int]]], batch_size: int = 200,
                       device: torch.device | str = "cpu") -> LengthAccuracy:
    """Greedy-decode ``pairs``' sources and score the outputs against their targets, per source length.

    Works for any model that :func:`lib.decode.greedy_decode` can drive (recurrent or Transformer).
    """
    from .decode import greedy_decode

    if not pairs:
        raise ValueError("pairs is empty")
    model.eval().to(device)
    by_len: dict[int, list[tuple[float, float]]] = {}
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        width = max(len(s) for s, _ in chunk) + 1
        src = torch.full((len(chunk), width), PAD_ID, dtype=torch.long)
        for row, (s, _) in enumerate(chunk):
            src[row, : len(s) + 1] = torch.tensor(s + [EOS_ID])
        outs = greedy_decode(model, src.to(device), max_len=width + 5)
        for (s, t), o in zip(chunk, outs):
            right = sum(a == b for a, b in zip(o, t))
            by_len.setdefault(len(s), []).append((right / max(len(o), len(t)), float(o == t)))
    lengths = sorted(by_len)
    return LengthAccuracy(
        lengths=lengths,
        token=[sum(a for a, _ in by_len[n]) / len(by_len[n]) for n in lengths],
        sequence=[sum(b for _, b in by_len[n]) / len(by_len[n]) for n in lengths],
        count=[len(by_len[n]) for n in lengths],
    )


# --- the bottleneck experiment, trained once and cached ------------------------------------------

@dataclass
class ReversalExperiment:
    """One model trained on the reversal task and measured.

    ``accuracy``: :class:`LengthAccuracy` on fresh test sequences; ``history``: the training loop's
    validation history; ``steps``/``minutes``: what training took (minutes = training time on the
    machine that ran it, so it varies); ``model``: the trained :class:`Seq2Seq` (eval mode, CPU);
    ``cached``: True when loaded from the cache instead of trained now.
    """

    attention: str | None
    accuracy: LengthAccuracy
    history: list[dict]
    steps: int
    minutes: float
    model: Seq2Seq
    settings: dict = field(default_factory=dict)
    cached: bool = False


def _cache_root(cache_dir) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    import platformdirs

    return Path(platformdirs.user_cache_dir("attention-book")) / "seq2seq"


def reversal_experiment(
    attention: str | None,
    steps: int = 600,
    min_len: int = 4,
    max_len: int = 30,
    num_symbols: int = 20,
    d_embed: int = 64,
    d_hidden: int = 128,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> ReversalExperiment:
    """Train a model on sequence reversal and measure its accuracy by length; cached on disk.

    The model sees 20,000 random sequences of lengths ``min_len … max_len`` (a new batch order each
    epoch) for ``steps`` optimiser steps of :func:`lib.train.train` (batches of 2,000 tokens, peak
    learning rate 3·10⁻³ after 100 warm-up steps, no label smoothing), then greedily reverses 1,000
    fresh sequences. The first call trains (one to two minutes on one CPU core for the attention model, half
    that without); later calls with the same arguments load the result from ``cache_dir`` (default:
    the user cache folder, ``.../attention-book/seq2seq``), so two chapters can share one run.

    Args:
        attention: None for the fixed-vector model, else a score name from :data:`SCORES`.
        steps: training budget in optimiser steps. Training runs on one CPU thread, so a step budget
            (unlike minutes) gives the same model on any machine with the same kind of CPU; the validation
            history is taken every 0.1 training minutes, so its steps do vary with the machine's speed.
        min_len, max_len, num_symbols: the task (see :func:`sequence_task`).
        d_embed, d_hidden: model sizes (see :class:`Seq2SeqConfig`).
        seed: seeds the data and the training.
        cache_dir: where to keep results; the file name encodes every argument.
        progress: show the training progress bar.

    Returns:
        A :class:`ReversalExperiment`.
    """
    settings = dict(attention=attention, steps=steps, min_len=min_len, max_len=max_len, num_symbols=num_symbols,
                    d_embed=d_embed, d_hidden=d_hidden, seed=seed, version=2)
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    folder = _cache_root(cache_dir)
    path = folder / f"reversal-{attention or 'fixed'}-{key}.pt"
    config = Seq2SeqConfig(4 + num_symbols, d_embed=d_embed, d_hidden=d_hidden, attention=attention, dropout=0.0,
                           max_len=2 * max_len + 10)
    if path.is_file():
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)
            model = Seq2Seq(config)
            model.load_state_dict(state["model"])
            return ReversalExperiment(attention, LengthAccuracy(**state["accuracy"]), state["history"], state["steps"],
                                      state["minutes"], model.eval(), settings, cached=True)
        except Exception:  # a stale or broken cache file: train again
            pass
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same model on any core count (and, for these small sizes, fastest)
    try:
        torch.manual_seed(seed)
        model = Seq2Seq(config)
        result, accuracy = _train_reversal(model, settings, progress)
    finally:
        torch.set_num_threads(threads)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        torch.save(dict(model=model.state_dict(), accuracy=asdict(accuracy), history=result.history,
                        steps=result.steps, minutes=result.minutes, settings=settings), tmp)
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs a retrain next time
    return ReversalExperiment(attention, accuracy, result.history, result.steps, result.minutes, model, settings)


def _train_reversal(model: Seq2Seq, settings: dict, progress: bool):
    from .data import make_batches
    from .train import TrainConfig, train

    seed, min_len, max_len, num_symbols = (settings[k] for k in ("seed", "min_len", "max_len", "num_symbols"))
    pairs = sequence_task(20_000, min_len, max_len, num_symbols, seed=seed)
    val = make_batches(sequence_task(500, min_len, max_len, num_symbols, seed=seed + 1), 4000, PAD_ID, BOS_ID, EOS_ID)
    tconf = TrainConfig(max_tokens=2000, peak_lr=3e-3, warmup=100, label_smoothing=0.0, max_steps=settings["steps"],
                        eval_every_minutes=0.1, seed=seed)
    result = train(model, pairs, val, tconf, device="cpu", progress=progress, log=lambda *_: None)
    accuracy = accuracy_by_length(model, sequence_task(1000, min_len, max_len, num_symbols, seed=seed + 2))
    model.eval()
    return result, accuracy
