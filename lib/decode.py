"""Turning a trained model into sentences: greedy decoding and beam search, batched, with a key/value cache;
sampling (temperature, top-k, top-p) for the book's language models.

Both encode the source once, then add one target token per step; the decoder's keys and values of
earlier steps are cached (``lib.transformer.LayerCache``; the recurrent models keep their state in
``lib.seq2seq.DecoderState``), so a step costs O(t) instead of re-running the whole prefix. Decoding stops as
soon as every sentence in the batch has ended. Any model with the methods of
``lib.interfaces.EncoderDecoder`` can be decoded: the Transformer and both recurrent models.

Beam search can also record its hypothesis tree (:class:`BeamTree`, for ``lib.plots.plot_beam_tree``), greedy
decoding can run without the cache (to check that the cache changes nothing but the time), and
:func:`kv_cache_bytes` gives the cache's size. For decoder-only models (``lib.gpt.GPT``, ``lib.modern.ModernGPT``)
:func:`generate` samples continuations with :func:`sample_next_token`, which composes temperature,
:func:`filter_top_k` and :func:`filter_top_p`.

Source: Vaswani et al. 2017, §6.1 (beam size 4, length penalty α = 0.6); the length penalty
lp(Y) = ((5 + |Y|) / 6)^α is from Wu et al. (2016), "Google's Neural Machine Translation System", Eq. (14);
nucleus (top-p) sampling: Holtzman et al. (2020), "The Curious Case of Neural Text Degeneration", §3.1.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import torch
from torch import Tensor

from ._checks import check_int as _check_int
from ._checks import check_new_tokens, check_sampling
from .gpt import GPT, generate_tokens
from .interfaces import EncoderDecoder
from .modern import ModernGPT
from .special_tokens import BOS_ID, EOS_ID, PAD_ID

__all__ = [
    "in_eval_mode",
    "greedy_decode",
    "beam_search",
    "length_penalty",
    "BeamTree",
    "kv_cache_bytes",
    "kv_cache_table",
    "filter_top_k",
    "filter_top_p",
    "sample_next_token",
    "generate",
]


F = TypeVar("F", bound=Callable)


def in_eval_mode(search: F) -> F:
    """Run ``search(model, ...)`` with the model in eval mode (dropout off), then give it back in its own mode.

    A reader who decodes in the middle of a training loop gets the model back as it was: in training mode, dropout
    on, for the steps that follow (``model.eval()`` inside the search would leave it off for good).

    Args:
        search: a function whose first argument is the model.

    Returns:
        The same function, that sets ``model.eval()`` before it runs and ``model.train(mode)`` after, even when it
        raises.

    Source: Srivastava et al. 2014, "Dropout", §2 (units are dropped while training only; at test time the whole
    network is used), which ``torch.nn.Module.eval`` and ``train`` switch.
    """

    @functools.wraps(search)
    def run(model, *args, **kwargs):
        mode = getattr(model, "training", None)
        if isinstance(mode, bool):
            model.eval()
        try:
            return search(model, *args, **kwargs)
        finally:
            if isinstance(mode, bool):
                model.train(mode)

    return run  # type: ignore[return-value]


def _search_steps(
    model: EncoderDecoder,
    src: Tensor,
    max_len: int | None,
    bos_id: int,
    eos_id: int,
    use_cache: bool = True,
    beam_size: int = 1,
    alpha: float = 0.0,
    return_tree: bool = False,
) -> int:
    """Check the arguments of a search (greedy or beam) once, at its entry; the number of steps to run."""
    for flag, name in ((use_cache, "use_cache"), (return_tree, "return_tree")):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    _check_int(beam_size, "beam_size", 1)
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a number (0.6 in Vaswani et al. 2017), got {alpha!r}")
    if not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a finite number >= 0 (0.6 in Vaswani et al. 2017), got {alpha}")
    if not isinstance(model, EncoderDecoder):
        raise TypeError(
            f"model must be an encoder-decoder with encode, decode and new_cache (lib.interfaces.EncoderDecoder), "
            f"got {type(model).__name__}"
        )
    if not isinstance(src, Tensor):
        raise TypeError(f"src must be a torch.Tensor of token ids (batch, seq_s), got {type(src).__name__}")
    if src.dim() != 2 or src.dtype not in (torch.long, torch.int):
        raise ValueError(f"src must be integer token ids of shape (batch, seq_s), got {tuple(src.shape)} {src.dtype}")
    empty = (src == PAD_ID).all(dim=1).nonzero().flatten().tolist()
    if empty:
        raise ValueError(f"src rows {empty} hold only padding: there is nothing to translate in them")
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
@in_eval_mode
def greedy_decode(
    model: EncoderDecoder,
    src: Tensor,
    max_len: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    use_cache: bool = True,
) -> list[list[int]]:
    """Pick the most probable next token at every step, for a batch of sentences at once.

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``; in eval mode for the search, then
            given back in its own mode).
        src: source ids ``(batch, seq_s)``, right-padded.
        max_len: most target tokens to generate (default 1.5 · seq_s + 10, capped by the model's max_len).
        bos_id, eos_id: start and end token ids.
        use_cache: keep the decoder's keys and values between steps (step t costs O(t)); False re-runs the decoder
            over the whole prefix at every step (O(t²) in all), with the same result up to rounding.

    Returns:
        One list of token ids per sentence, without BOS and EOS.

    Raises:
        TypeError: model is not an ``EncoderDecoder``; src is not a tensor; max_len, bos_id or eos_id is not an int;
            use_cache is not a bool.
        ValueError: src not ``(batch, seq_s)`` integer ids, or a row of only padding; max_len < 1; bos_id or eos_id
            outside the target vocabulary.

    Source: Sutskever et al. 2014, "Sequence to Sequence Learning with Neural Networks", §3.2 (left-to-right
    decoding; greedy is their beam search with a beam of size 1).
    """
    steps = _search_steps(model, src, max_len, bos_id, eos_id, use_cache=use_cache)  # checks the arguments
    memory, src_mask = model.encode(src)
    batch = src.size(0)
    cache = model.new_cache()
    token = torch.full((batch, 1), bos_id, dtype=torch.long, device=src.device)
    prefix = token  # (batch, 1 + t): every token so far, for decoding without the cache
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    out = []
    for t in range(steps):
        if use_cache:
            logits = model.decode(token, memory, src_mask, cache, offset=t)
        else:  # no cache: recompute the keys and values of the whole prefix
            logits = model.decode(prefix, memory, src_mask)
        token = logits[:, -1].argmax(-1, keepdim=True)  # (batch, 1)
        token = token.masked_fill(finished[:, None], PAD_ID)
        out.append(token)
        prefix = torch.cat([prefix, token], dim=1)
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
@in_eval_mode
def beam_search(
    model: EncoderDecoder,
    src: Tensor,
    beam_size: int = 5,
    alpha: float = 0.6,
    max_len: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    return_tree: bool = False,
) -> list[list[int]] | tuple[list[list[int]], list[BeamTree]]:
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
        return_tree: also return each sentence's hypothesis tree (the search and its result are the same).

    Returns:
        The best hypothesis per sentence as token ids, without BOS and EOS; with ``return_tree=True`` the pair
        ``(hypotheses, trees)``, one :class:`BeamTree` per sentence.

    Raises:
        TypeError: beam_size is not an int, alpha not a number, return_tree not a bool; as :func:`greedy_decode`.
        ValueError: beam_size < 1; alpha negative or not finite; bad src, max_len, bos_id or eos_id (as
            :func:`greedy_decode`).

    Source: Vaswani et al. 2017, §6.1; Wu et al. 2016, §7.
    """
    steps = _search_steps(
        model, src, max_len, bos_id, eos_id, beam_size=beam_size, alpha=alpha, return_tree=return_tree
    )
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
    history = []  # per step: (parent beam, token, score, finished) of the K survivors, for the tree

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
        if return_tree:
            history.append((beam.tolist(), token.view(batch, k).tolist(), scores.tolist(), finished.view(batch, k)))
        if finished.all():
            break

    final = scores.view(-1) / length_penalty(lengths, alpha)
    best = final.view(batch, k).argmax(-1)
    rows = torch.arange(batch, device=device) * k + best
    hypotheses = [_strip([i for i in tokens[r, 1:].tolist() if i != PAD_ID], eos_id) for r in rows.tolist()]
    if return_tree:
        return hypotheses, [_beam_tree(history, b, int(best[b]), bos_id, eos_id) for b in range(batch)]
    return hypotheses


@dataclass
class BeamTree:
    """The hypotheses one sentence's beam search kept, as a tree rooted at BOS (node 0).

    Node i is the hypothesis "parent's tokens + ``tokens[i]``", kept in the beam at step ``depth[i]``. A branch
    that stops before the last step was pushed out of the beam by better hypotheses; a node with ``ended[i]``
    produced EOS and stayed in the beam unchanged afterwards (its continuations by padding are not nodes).

    Attributes:
        tokens: the token id of each node (node 0: BOS).
        parents: each node's parent node, −1 for the root; a parent always comes before its children.
        scores: each node's summed log-probability log P(y_1..y_t | x) in nats (0 for the root), not length-normalised.
        ended: whether the node's token is EOS.
        best_path: the node ids of the hypothesis beam search returned, root first.

    Source: the beam of Vaswani et al. 2017, §6.1, drawn as a search tree (Wu et al. 2016, §7).
    """

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    ended: list[bool] = field(default_factory=list)
    best_path: list[int] = field(default_factory=list)

    @property
    def depth(self) -> list[int]:
        """Each node's step: 0 for the root, parent's depth + 1 for the others.

        Returns:
            One int per node.
        """
        depth: list[int] = []
        for parent in self.parents:
            depth.append(0 if parent < 0 else depth[parent] + 1)
        return depth

    def token_logprobs(self) -> list[float]:
        """Each node's own log-probability log P(y_t | y_<t, x): its score minus its parent's (0 for the root).

        Returns:
            One float (nats, ≤ 0) per node.
        """
        return [0.0 if p < 0 else s - self.scores[p] for s, p in zip(self.scores, self.parents)]


def _beam_tree(history: list, b: int, best: int, bos_id: int, eos_id: int) -> BeamTree:
    """Sentence ``b``'s :class:`BeamTree` from beam search's per-step survivors (parent beam, token, score)."""
    tree = BeamTree([bos_id], [-1], [0.0], [False])
    k = len(history[0][0][b]) if history else 1
    node_of: list[int | None] = [0] + [None] * (k - 1)  # the node of each beam row (only row 0 is alive at first)
    done = [False] * k
    for beams, tokens, scores, finished in history:
        new_nodes: list[int | None] = []
        for j in range(k):
            parent_row, score = beams[b][j], scores[b][j]
            parent = node_of[parent_row]
            if parent is None or score == float("-inf"):
                new_nodes.append(None)
            elif done[parent_row]:  # an ended hypothesis, continued by padding: the same node
                new_nodes.append(parent)
            else:
                tree.tokens.append(tokens[b][j])
                tree.parents.append(parent)
                tree.scores.append(score)
                tree.ended.append(tokens[b][j] == eos_id)
                new_nodes.append(len(tree.tokens) - 1)
        node_of, done = new_nodes, finished[b].tolist()
    node = node_of[best]
    while node is not None and node >= 0:
        tree.best_path.append(node)
        node = tree.parents[node]
    tree.best_path.reverse()
    return tree


def kv_cache_bytes(
    num_layers: int, num_kv_heads: int, d_k: int, seq_len: int, batch: int = 1, bytes_per_value: int = 4
) -> int:
    """Memory of a decoder's key/value cache: 2 · layers · kv heads · d_k · t · bytes per value · batch.

    Each layer keeps one key and one value vector of ``d_k`` numbers per head and per position decoded so far
    (``lib.transformer.LayerCache.self_kv``). Multi-head attention caches ``num_heads`` heads, grouped-query
    attention ``num_kv_heads`` and multi-query attention one. (An encoder–decoder also keeps the projected
    encoder output for cross-attention, whose size does not grow with t; it is not counted here.)

    Args:
        num_layers: decoder layers.
        num_kv_heads: key/value heads per layer (``num_heads`` for MHA, 1 for MQA).
        d_k: features per head.
        seq_len: positions cached, t ≥ 0.
        batch: sequences decoded at once (beam search: sentences × beam size).
        bytes_per_value: 4 for float32, 2 for float16/bfloat16.

    Returns:
        The size in bytes.

    Raises:
        TypeError: an argument is not an int.
        ValueError: seq_len < 0, or another argument < 1.

    Source: the cache of an autoregressive decoder (Vaswani et al. 2017, §3.1); the kv-head counts of MQA and GQA:
    Shazeer 2019, §2.1; Ainslie et al. 2023, §2.2.
    """
    for name, value, least in (
        ("num_layers", num_layers, 1),
        ("num_kv_heads", num_kv_heads, 1),
        ("d_k", d_k, 1),
        ("seq_len", seq_len, 0),
        ("batch", batch, 1),
        ("bytes_per_value", bytes_per_value, 1),
    ):
        if _check_int(value, name) < least:
            raise ValueError(f"{name} must be at least {least}, got {value}")
    return 2 * num_layers * num_kv_heads * d_k * seq_len * bytes_per_value * batch


def kv_cache_table(
    num_layers: int,
    num_heads: int,
    d_model: int,
    seq_len: int,
    num_kv_heads: int,
    batch: int = 1,
    bytes_per_value: int = 2,
) -> dict[str, int]:
    """The key/value cache of one model's shape with multi-head, grouped-query and multi-query attention.

    Args:
        num_layers: decoder layers.
        num_heads: query heads h (d_k = d_model / h).
        d_model: model width.
        seq_len: positions cached.
        num_kv_heads: the grouped-query variant's key/value heads (divides ``num_heads``).
        batch, bytes_per_value: as :func:`kv_cache_bytes` (default 2: a float16 cache).

    Returns:
        ``{"MHA": bytes, "GQA": bytes, "MQA": bytes}`` with ``num_heads``, ``num_kv_heads`` and 1 key/value heads.

    Raises:
        TypeError: an argument is not an int.
        ValueError: ``num_heads`` does not divide ``d_model`` or ``num_kv_heads`` does not divide ``num_heads``;
            as :func:`kv_cache_bytes`.

    Source: Shazeer 2019, "Fast Transformer Decoding: One Write-Head is All You Need", §2.1 (MQA); Ainslie et al.
    2023, "GQA", §2.2.
    """
    for name, value in (("num_heads", num_heads), ("d_model", d_model), ("num_kv_heads", num_kv_heads)):
        if _check_int(value, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if d_model % num_heads != 0:
        raise ValueError(f"num_heads ({num_heads}) must divide d_model ({d_model})")
    if num_heads % num_kv_heads != 0:
        raise ValueError(f"num_kv_heads ({num_kv_heads}) must divide num_heads ({num_heads})")
    d_k = d_model // num_heads
    return {
        name: kv_cache_bytes(num_layers, heads, d_k, seq_len, batch, bytes_per_value)
        for name, heads in (("MHA", num_heads), ("GQA", num_kv_heads), ("MQA", 1))
    }


def _check_logits(logits: Tensor) -> None:
    if not isinstance(logits, Tensor):
        raise TypeError(f"logits must be a torch.Tensor (..., vocab), got {type(logits).__name__}")
    if logits.dim() < 1 or logits.size(-1) < 1 or not logits.is_floating_point():
        raise ValueError(
            f"logits must be a floating-point tensor (..., vocab) with vocab >= 1, got {tuple(logits.shape)} "
            f"{logits.dtype}"
        )


def filter_top_k(logits: Tensor, k: int) -> Tensor:
    """Keep the k largest logits of each row and set the others to −∞ (so softmax gives them probability 0).

    Args:
        logits: ``(..., vocab)`` unnormalised log-probabilities.
        k: tokens kept per row, 1 ≤ k; k ≥ vocab keeps every token. Ties at the k-th value are broken as
            ``torch.topk`` breaks them, so exactly min(k, vocab) tokens stay.

    Returns:
        ``(..., vocab)``, a new tensor: the kept logits unchanged, −∞ elsewhere.

    Raises:
        TypeError: logits is not a tensor; k is not an int.
        ValueError: logits not floating point or without a vocabulary axis; k < 1.

    Source: Fan, Lewis, Dauphin 2018, "Hierarchical Neural Story Generation", §5.4 (top-k sampling).
    """
    _check_logits(logits)
    if _check_int(k, "k") < 1:
        raise ValueError(f"k must be at least 1 (the number of tokens kept), got {k}")
    if k >= logits.size(-1):
        return logits.clone()
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))


def filter_top_p(logits: Tensor, p: float) -> Tensor:
    """Nucleus filtering: keep the smallest set of most probable tokens whose probability mass is ≥ p.

    Tokens are sorted by probability; token i (in that order) is kept when the mass of the tokens before it is
    still below p. The most probable token is always kept, so every row keeps at least one token.

    Args:
        logits: ``(..., vocab)`` unnormalised log-probabilities (softmax over the last axis gives the distribution).
        p: the mass to cover, 0 < p ≤ 1; p = 1 keeps every token.

    Returns:
        ``(..., vocab)``, a new tensor: the nucleus's logits unchanged, −∞ elsewhere.

    Raises:
        TypeError: logits is not a tensor; p is not a number.
        ValueError: logits not floating point or without a vocabulary axis; p outside (0, 1].

    Source: Holtzman, Buys, Du, Forbes, Choi 2020, "The Curious Case of Neural Text Degeneration", §3.1, Eq. (2)–(3).
    """
    _check_logits(logits)
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"p must be a number in (0, 1], got {p!r}")
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p must be in (0, 1] (the probability mass kept), got {p}")
    if p == 1.0:
        return logits.clone()
    probs, order = torch.softmax(logits.float(), dim=-1).sort(dim=-1, descending=True)
    mass_before = probs.cumsum(dim=-1) - probs  # (..., vocab): mass of the more probable tokens
    keep_sorted = mass_before < p  # the first token has mass_before = 0 < p: always kept
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))


def _check_sampling(
    temperature: object, top_k: object, top_p: object, generator: object, logits: object = None
) -> None:
    """The sampling arguments of :func:`sample_next_token` (with its ``logits``) and :func:`generate`."""
    if logits is not None:
        _check_logits(logits)
        if logits.dim() > 2:
            raise ValueError(f"logits must be (batch, vocab) or (vocab,), got {tuple(logits.shape)}")
    check_sampling(temperature, top_k, generator)
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real):
            raise TypeError(f"top_p must be a number in (0, 1] or None, got {top_p!r}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1] or None, got {top_p}")


def sample_next_token(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Draw one token per row from softmax(logits / T), after the optional top-k and top-p filters.

    The order is that of common practice (e.g. Hugging Face's ``generate``): divide by T, then keep the top k,
    then the nucleus of mass p of what is left. ``temperature == 0`` is greedy decoding: the argmax of every row,
    no randomness (both filters always keep the most probable token).

    Args:
        logits: ``(batch, vocab)`` or ``(vocab,)`` next-token logits.
        temperature: T ≥ 0; T < 1 sharpens the distribution, T > 1 flattens it, 0 = argmax.
        top_k: keep only the k most probable tokens (:func:`filter_top_k`); None = all.
        top_p: keep only the nucleus of mass p (:func:`filter_top_p`); None = all.
        generator: a seeded ``torch.Generator``: the same seed gives the same draws.

    Returns:
        ``(batch,)`` LongTensor of token ids (a 0-d tensor for 1-D logits).

    Raises:
        TypeError: logits is not a tensor; temperature or top_p not a number; top_k not an int; generator not a
            ``torch.Generator``.
        ValueError: logits not ``(batch, vocab)`` or ``(vocab,)`` floating point; temperature < 0 or not finite;
            top_k < 1; top_p outside (0, 1].

    Source: temperature (Ackley, Hinton, Sejnowski 1985); top-k: Fan et al. 2018, §5.4; top-p: Holtzman et al.
    2020, §3.1.
    """
    _check_sampling(temperature, top_k, top_p, generator, logits)  # the arguments, once
    rows = logits if logits.dim() == 2 else logits[None]  # (batch, vocab)
    if temperature == 0:
        ids = rows.argmax(-1)  # both filters keep the most probable token
    else:
        rows = rows / temperature  # first the temperature, then the filters (top-p depends on the order)
        if top_k is not None:
            rows = filter_top_k(rows, top_k)
        if top_p is not None:
            rows = filter_top_p(rows, top_p)
        ids = torch.multinomial(torch.softmax(rows, dim=-1), 1, generator=generator).squeeze(1)
    return ids if logits.dim() == 2 else ids[0]


@torch.no_grad()
def generate(
    model: GPT | ModernGPT,
    prompt_ids: Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    eos_id: int | None = None,
) -> Tensor:
    """Continue ``prompt_ids`` with a decoder-only language model, one sampled token at a time.

    Each step runs the model on the last ``max_len`` tokens and draws the next with :func:`sample_next_token`.
    With ``top_p=None`` this is :func:`lib.gpt.generate` (same tokens for the same seed); ``top_p`` adds nucleus
    sampling, and :class:`lib.modern.ModernGPT` can be sampled too. No key/value cache.

    Args:
        model: a :class:`lib.gpt.GPT` or :class:`lib.modern.ModernGPT` (put in eval mode for the duration).
        prompt_ids: ``(seq,)`` or ``(batch, seq)`` LongTensor, 1 ≤ seq ≤ max_len.
        max_new_tokens: number of tokens to add (≥ 0).
        temperature, top_k, top_p, generator: as :func:`sample_next_token`.
        eos_id: if given, a row that produced it continues with ``pad_id``; stops early when all rows have.

    Returns:
        ``(batch, seq + new)`` (or ``(seq + new,)`` for a 1-D prompt) with the prompt first.

    Raises:
        TypeError: model is not a GPT or ModernGPT; prompt_ids not a tensor; max_new_tokens, top_k or eos_id not
            an int; temperature or top_p not a number; generator not a ``torch.Generator``.
        ValueError: an empty prompt or one longer than max_len, ids that are not long integers inside the
            vocabulary; max_new_tokens < 0; temperature, top_k or top_p out of range (as :func:`sample_next_token`).

    Source: Radford et al. 2019, §3 (sampling a language model); Holtzman et al. 2020, §3.1 (top-p).
    """
    if not isinstance(model, (GPT, ModernGPT)):
        raise TypeError(f"model must be a lib.gpt.GPT or a lib.modern.ModernGPT, got {type(model).__name__}")
    if not isinstance(prompt_ids, Tensor):
        raise TypeError(f"prompt_ids must be a torch.Tensor of token ids, got {type(prompt_ids).__name__}")
    check_new_tokens(max_new_tokens, eos_id)
    squeeze = prompt_ids.dim() == 1
    ids = prompt_ids[None] if squeeze else prompt_ids
    if ids.dim() != 2 or ids.size(1) < 1 or ids.dtype != torch.long:
        raise ValueError(
            f"prompt_ids must be a LongTensor (seq,) or (batch, seq) with seq >= 1, got {tuple(prompt_ids.shape)} "
            f"{prompt_ids.dtype}"
        )
    max_len = model.config.max_len
    if ids.size(1) > max_len:
        raise ValueError(f"prompt_ids has {ids.size(1)} tokens, more than the model's max_len={max_len}")
    if ids.min() < 0 or ids.max() >= model.config.vocab_size:
        raise ValueError(f"prompt_ids must be in [0, vocab_size={model.config.vocab_size})")
    _check_sampling(temperature, top_k, top_p, generator)

    def next_token(logits: Tensor) -> Tensor:  # (batch, vocab) → (batch,)
        return sample_next_token(logits, temperature, top_k, top_p, generator)

    ids = generate_tokens(model, ids, max_new_tokens, next_token, eos_id)
    return ids[0] if squeeze else ids
