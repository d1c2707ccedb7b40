"""Turning a trained model into sentences: greedy decoding and beam search, batched, with a key/value cache.

Both encode the source once, then add one target token per step; the decoder's keys and values of
earlier steps are cached (``lib.transformer.LayerCache``; the recurrent models keep their state in
``lib.seq2seq.DecoderState``), so a step costs O(t) instead of re-running the whole prefix. Decoding stops as
soon as every sentence in the batch has ended. Any model with the methods of
``lib.interfaces.EncoderDecoder`` can be decoded: the Transformer and both recurrent models.

Source: Vaswani et al. 2017, §6.1 (beam size 4, length penalty α = 0.6); the length penalty
lp(Y) = ((5 + |Y|) / 6)^α is from Wu et al. (2016), "Google's Neural Machine Translation System", Eq. (14).
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor

from .interfaces import EncoderDecoder
from .special_tokens import BOS_ID, EOS_ID, PAD_ID

__all__ = ["greedy_decode", "beam_search", "length_penalty"]


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    return int(value)


def _max_steps(model: EncoderDecoder, src: Tensor, max_len: int | None, bos_id: int, eos_id: int) -> int:
    """Check the arguments every decoder shares; the number of steps to run."""
    if not isinstance(model, EncoderDecoder):
        raise TypeError(
            f"model must be an encoder-decoder with encode, decode and new_cache (lib.interfaces.EncoderDecoder), "
            f"got {type(model).__name__}"
        )
    if not isinstance(src, Tensor):
        raise TypeError(f"src must be a torch.Tensor of token ids (batch, seq_s), got {type(src).__name__}")
    if src.dim() != 2 or src.dtype not in (torch.long, torch.int):
        raise ValueError(f"src must be integer token ids of shape (batch, seq_s), got {tuple(src.shape)} {src.dtype}")
    vocab = getattr(model.config, "tgt_vocab_size", getattr(model.config, "vocab_size", None))
    for value, name in ((bos_id, "bos_id"), (eos_id, "eos_id")):
        if _check_int(value, name) < 0 or (vocab is not None and value >= vocab):
            raise ValueError(f"{name} must be an id of the target vocabulary [0, {vocab}), got {value}")
    limit = model.config.max_len
    if max_len is None:
        max_len = int(1.5 * src.size(1)) + 10
    if _check_int(max_len, "max_len") < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    return min(max_len, limit)


def _strip(row: list[int], eos_id: int) -> list[int]:
    return row[: row.index(eos_id)] if eos_id in row else row


@torch.no_grad()
def greedy_decode(
    model: EncoderDecoder,
    src: Tensor,
    max_len: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> list[list[int]]:
    """Pick the most probable next token at every step, for a batch of sentences at once.

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``; put in eval mode here).
        src: source ids ``(batch, seq_s)``, right-padded.
        max_len: most target tokens to generate (default 1.5 · seq_s + 10, capped by the model's max_len).
        bos_id, eos_id: start and end token ids.

    Returns:
        One list of token ids per sentence, without BOS and EOS.

    Raises:
        TypeError: model is not an ``EncoderDecoder``; src is not a tensor; max_len, bos_id or eos_id is not an int.
        ValueError: src not ``(batch, seq_s)`` integer ids; max_len < 1; bos_id or eos_id outside the target
            vocabulary.

    Source: Sutskever et al. 2014, "Sequence to Sequence Learning with Neural Networks", §3.2 (left-to-right
    decoding; greedy is their beam search with a beam of size 1).
    """
    steps = _max_steps(model, src, max_len, bos_id, eos_id)
    model.eval()
    memory, src_mask = model.encode(src)
    batch = src.size(0)
    cache = model.new_cache()
    token = torch.full((batch, 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    out = []
    for t in range(steps):
        logits = model.decode(token, memory, src_mask, cache, offset=t)
        token = logits[:, -1].argmax(-1, keepdim=True)  # (batch, 1)
        token = token.masked_fill(finished[:, None], PAD_ID)
        out.append(token)
        finished |= token[:, 0] == eos_id
        if finished.all():
            break
    ids = torch.cat(out, dim=1).tolist()
    return [_strip(row, eos_id) for row in ids]


def length_penalty(length: Tensor, alpha: float) -> Tensor:
    """GNMT length penalty lp(Y) = ((5 + |Y|) / 6)^α; beam scores (summed log-probabilities) are divided by it.

    Args:
        length: hypothesis lengths |Y| in tokens, any shape (float tensor).
        alpha: exponent α (0 gives 1 everywhere, i.e. no normalisation; 0.6 in Vaswani et al. 2017).

    Returns:
        lp(Y), shaped like ``length``.

    Raises:
        TypeError: length is not a tensor or alpha not a number.
        ValueError: alpha is not finite.

    Source: Wu et al. 2016, "Google's Neural Machine Translation System", §7, Eq. (14).
    """
    if not isinstance(length, Tensor):
        raise TypeError(f"length must be a torch.Tensor of hypothesis lengths, got {type(length).__name__}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a number (0.6 in Vaswani et al. 2017), got {alpha!r}")
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha}")
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: EncoderDecoder,
    src: Tensor,
    beam_size: int = 5,
    alpha: float = 0.6,
    max_len: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> list[list[int]]:
    """Keep the ``beam_size`` best partial translations of each sentence, ranked by length-normalised log-probability.

    A hypothesis that has produced EOS is frozen (its score and length no longer change) but stays
    in the beam, so it competes with the unfinished ones; the search ends when every hypothesis of
    every sentence has ended or ``max_len`` is reached. With ``beam_size=1`` this is greedy decoding.

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``).
        src: source ids ``(batch, seq_s)``, right-padded.
        beam_size: hypotheses kept per sentence (K).
        alpha: length-penalty exponent α (0 = no normalisation; 0.6 in Vaswani et al. 2017).
        max_len, bos_id, eos_id: as :func:`greedy_decode`.

    Returns:
        The best hypothesis per sentence as token ids, without BOS and EOS.

    Raises:
        TypeError: beam_size is not an int, alpha not a number; as :func:`greedy_decode`.
        ValueError: beam_size < 1; alpha not finite; bad src, max_len, bos_id or eos_id (as :func:`greedy_decode`).

    Source: Vaswani et al. 2017, §6.1; Wu et al. 2016, §7.
    """
    if _check_int(beam_size, "beam_size") < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a number (0.6 in Vaswani et al. 2017), got {alpha!r}")
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha}")
    steps = _max_steps(model, src, max_len, bos_id, eos_id)
    model.eval()
    memory, src_mask = model.encode(src)
    batch, k, device = src.size(0), beam_size, src.device
    memory = memory.repeat_interleave(k, dim=0)  # (batch·K, seq_s, d_model)
    src_mask = src_mask.repeat_interleave(k, dim=0)
    cache = model.new_cache()

    scores = torch.zeros(batch, k, device=device)  # sum of log-probabilities per hypothesis
    scores[:, 1:] = float("-inf")  # all K beams start identical: keep only one alive at first
    lengths = torch.zeros(batch * k, device=device)
    finished = torch.zeros(batch * k, dtype=torch.bool, device=device)
    tokens = torch.full((batch * k, 1), bos_id, dtype=torch.long, device=device)

    for t in range(steps):
        logits = model.decode(tokens[:, -1:], memory, src_mask, cache, offset=t)
        logp = torch.log_softmax(logits[:, -1].float(), dim=-1)  # (batch·K, V)
        vocab = logp.size(-1)
        # a finished hypothesis can only be continued by padding, at no cost
        logp[finished] = float("-inf")
        logp[finished, PAD_ID] = 0.0
        cand = scores.view(-1, 1) + logp  # (batch·K, V)
        cand_len = lengths + (~finished).float()
        ranked = cand / length_penalty(cand_len, alpha)[:, None]
        top = ranked.view(batch, k * vocab).topk(k, dim=-1).indices  # (batch, K)
        beam, token = top // vocab, top % vocab
        rows = (torch.arange(batch, device=device)[:, None] * k + beam).view(-1)  # surviving rows
        scores = cand.view(batch, k * vocab).gather(1, top)
        lengths = cand_len[rows]
        token = token.view(-1, 1)
        finished = finished[rows] | (token[:, 0] == eos_id)
        tokens = torch.cat([tokens[rows], token], dim=1)
        for layer in cache:
            layer.reorder(rows)
        if finished.all():
            break

    final = scores.view(-1) / length_penalty(lengths, alpha)
    best = final.view(batch, k).argmax(-1)
    rows = torch.arange(batch, device=device) * k + best
    return [_strip([i for i in tokens[r, 1:].tolist() if i != PAD_ID], eos_id) for r in rows.tolist()]
