"""The plumbing of the chapter on Bahdanau attention (``chapters/bahdanau_attention.ipynb``) and its deeper dives.

What the pages run but their reader need not read: the attention weights of the reversal model over a test set
(where each row's largest weight lies, how peaked the rows are) and the weights of a whole test set of
translations, computed in padded batches.
"""

from __future__ import annotations

from collections import defaultdict

import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from ..bpe import encode
from ..checkpoint import SHIPPED_MODEL, load_run
from ..data import pad_batch
from ..seq2seq import DecoderState
from ..special_tokens import BOS_ID, EOS_ID
from ..translate import translation_attention

__all__ = ["decoder_step_example", "largest_weights", "reversal_band", "test_alignments"]


def _reversal_weights(model: nn.Module, pairs: list[tuple[list[int], list[int]]]):
    """Yield ``(n, weights)`` per source length n: the cross-attention of the pairs of that length, teacher-forced."""
    by_length = defaultdict(list)
    for source, target in pairs:
        by_length[len(source)].append((source, target))
    with torch.no_grad():
        for n, group in by_length.items():
            src = torch.tensor([s + [EOS_ID] for s, _ in group])  # (batch, n + 1)
            tgt = torch.tensor([[BOS_ID] + t for _, t in group])  # (batch, n + 1)
            yield n, model(src, tgt, return_attention=True)[1].cross[0][:, 0]  # (batch, n + 1, n + 1)


def reversal_band(model: nn.Module, pairs: list[tuple[list[int], list[int]]]) -> tuple[Tensor, Tensor]:
    """Where the reversal model's attention lies relative to the mirrored source position, for every output symbol.

    Output symbol i of a length-n reversal copies source position n - 1 - i (counting from 0).

    Args:
        model: a ``lib.seq2seq.Seq2Seq`` with attention, trained on reversal.
        pairs: ``(source, target)`` pairs of ``lib.experiments.sequence_task`` (target = source reversed).

    Returns:
        ``(offsets, band)``, one entry per output symbol (``</s>`` left out): the position of the row's largest
        weight minus the mirrored position, and the weight on the mirrored position plus its right neighbour.
    """
    offsets, band = [], []
    for n, w in _reversal_weights(model, pairs):
        mirrored, rows = torch.arange(n - 1, -1, -1), torch.arange(n)
        offsets.append((w[:, :n].argmax(-1) - mirrored).flatten())
        band.append((w[:, rows, mirrored] + w[:, rows, mirrored + 1]).flatten())
    return torch.cat(offsets), torch.cat(band)


def largest_weights(model: nn.Module, pairs: list[tuple[list[int], list[int]]]) -> Tensor:
    """The largest attention weight of every output symbol's row: how peaked the attention is.

    Args:
        model: a ``lib.seq2seq.Seq2Seq`` with attention.
        pairs: ``(source, target)`` token-id lists without specials.

    Returns:
        ``(number of output symbols,)``: each row's largest weight over the real source symbols (not ``</s>``).
    """
    return torch.cat([w[:, :n].max(dim=-1).values.flatten() for n, w in _reversal_weights(model, pairs)])


def test_alignments(
    model: nn.Module, tokenizer: Tokenizer, sources: list[str], translations: list[str], batch_size: int = 100
) -> list[Tensor]:
    """The attention weights of a whole test set of translations, in padded batches.

    The decoder is fed each translation (teacher forcing), which gives the weights that
    ``lib.translate.translation_attention`` returns for one sentence.

    Args:
        model: a ``lib.seq2seq.Seq2Seq`` with attention.
        tokenizer: its tokenizer.
        sources: the source sentences.
        translations: the model's translation of each source sentence.
        batch_size: sentences per batch.

    Returns:
        One ``(seq_t, seq_s)`` weight matrix per sentence, rows and columns including ``</s>`` (as ``cross_map()``).
    """
    result = []
    with torch.no_grad():
        for start in range(0, len(sources), batch_size):
            src_ids = [
                encode(tokenizer, s)[: model.config.max_len - 1] + [EOS_ID] for s in sources[start : start + batch_size]
            ]
            tgt_ids = [[BOS_ID] + encode(tokenizer, t) for t in translations[start : start + batch_size]]
            weights = model(pad_batch(src_ids), pad_batch(tgt_ids), return_attention=True)[1].cross[0][:, 0]
            result += [weights[row, : len(b), : len(a)] for row, (a, b) in enumerate(zip(src_ids, tgt_ids))]
    return result


@torch.no_grad()
def decoder_step_example(source: str, step: int) -> tuple[list[str], Tensor, Tensor, str]:
    """Decoder step ``step`` of the greedy translation of ``source`` by ``models/de-en-rnn-attention``: what §1 draws.

    Runs steps 1 … step − 1 (fed ``<s>`` and the model's own outputs) to reach s_{i-1}, then scores every annotation.

    Args:
        source: a German sentence.
        step: i ≥ 2, the decoder step.

    Returns:
        ``(tokens, scores, weights, previous)``: the source sub-words (``▁`` removed, ``</s>`` last), e_i· and
        α_i· = softmax(e_i·) as ``(seq_s,)`` tensors, and y_{i-1}, the output token fed to step i.
    """
    run = load_run(SHIPPED_MODEL.parent / "de-en-rnn-attention")
    model, tokenizer = run.model.eval(), run.tokenizer
    a = translation_attention(model, tokenizer, source)
    src = torch.tensor([[tokenizer.token_to_id(t) for t in a.source_tokens]])
    tgt = torch.tensor([[BOS_ID] + [tokenizer.token_to_id(t) for t in a.target_tokens[: step - 2]]])
    memory, src_mask = model.encode(src)
    cache = DecoderState()
    model.init_decoder(memory, src_mask, cache)
    for i in range(step - 1):  # steps 1 … i - 1: the state becomes s_{i-1}
        model.decoder_step(model.tgt_embed(tgt[:, i]), memory, src_mask, cache)
    scores = model.score(cache.state, cache.prepared)[0]
    name = lambda t: t.removeprefix("\u2581")  # noqa: E731
    return [name(t) for t in a.source_tokens], scores, torch.softmax(scores, -1), name(a.target_tokens[step - 2])
