"""The plumbing of the chapter on the seq2seq bottleneck (``chapters/seq2seq_bottleneck.ipynb``).

What the chapter runs but its reader need not read: the GRU cell behind the encoder's forward direction, the
greedy and the teacher-forced outputs of the reversal test set decoded in batches (the latter with an optional
change to the encoder states, for the break-it exercises), and which output positions are right.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from ..bpe import encode
from ..checkpoint import SHIPPED_MODEL, load_run
from ..data import load_multi30k, pad_batch
from ..decode import greedy_decode
from ..seq2seq import Seq2Seq
from ..special_tokens import BOS_ID, EOS_ID

__all__ = ["correct_matrix", "fixed_vector_example", "forward_cell", "reversal_outputs", "teacher_forced_outputs"]


def forward_cell(model: Seq2Seq) -> nn.GRUCell:
    """A ``GRUCell`` holding the weights of the forward direction of ``model``'s bidirectional encoder.

    Args:
        model: a recurrent encoder–decoder (``lib.seq2seq.Seq2Seq``).

    Returns:
        ``nn.GRUCell(d_embed, d_hidden // 2)``: one step of the encoder's forward GRU, state ``(1, d_hidden // 2)``.
    """
    gru = model.encoder.rnn
    cell = nn.GRUCell(gru.input_size, gru.hidden_size)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):  # the forward direction: suffix _l0
        getattr(cell, name).data.copy_(getattr(gru, f"{name}_l0").data)
    return cell


def reversal_outputs(model: nn.Module, pairs: list[tuple[list[int], list[int]]], batch_size: int = 200) -> list:
    """Greedy outputs for the sources of ``pairs``, batched as ``lib.experiments.accuracy_by_length`` batches them.

    Args:
        model: a trained encoder–decoder.
        pairs: ``(source, target)`` token-id lists without specials (``lib.experiments.sequence_task``).
        batch_size: sources decoded at once.

    Returns:
        One list of token ids per pair (without ``<s>`` and ``</s>``), in the order of ``pairs``.
    """
    outputs = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        width = max(len(s) for s, _ in chunk) + 1
        outputs += greedy_decode(model, pad_batch([s + [EOS_ID] for s, _ in chunk]), max_len=width + 5)
    return outputs


@torch.no_grad()
def teacher_forced_outputs(
    model: Seq2Seq,
    pairs: list[tuple[list[int], list[int]]],
    memory_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
) -> list[list[int]]:
    """The decoder's most probable symbol at every target position, fed the correct previous symbols.

    The pairs are decoded in groups of one source and target length (no padding), as in §1: ``model.encode`` the sources
    (with ``</s>``), then ``model.decode`` the targets after ``<s>`` (teacher forcing).

    Args:
        model: a trained ``lib.seq2seq.Seq2Seq`` (fixed vector or attention).
        pairs: ``(source, target)`` token-id lists without specials (``lib.experiments.sequence_task``).
        memory_fn: ``memory_fn(memory, src_mask) -> memory``, a change to the encoder states before the decoder
            reads them (the break of an experiment); None: the states as encoded.

    Returns:
        One list of ``len(target)`` token ids per pair, in the order of ``pairs`` (``</s>``'s position left out), for
        :func:`correct_matrix`.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(
        1
    )  # small matrices, one step after the other: one thread is fastest, and not slowed by a busy CPU
    try:
        return _teacher_forced(model, pairs, memory_fn)
    finally:
        torch.set_num_threads(threads)


def _teacher_forced(model: Seq2Seq, pairs: list, memory_fn: Callable[[Tensor, Tensor], Tensor] | None) -> list:
    """:func:`teacher_forced_outputs` on the current number of threads."""
    groups: dict[tuple[int, int], list[int]] = {}
    for k, (source, target) in enumerate(pairs):
        groups.setdefault((len(source), len(target)), []).append(k)
    outputs: list[list[int]] = [[] for _ in pairs]
    for (_, n), rows in groups.items():
        src = torch.tensor([pairs[k][0] + [EOS_ID] for k in rows])  # (group, seq_s): the symbols, then </s>
        tgt = torch.tensor([[BOS_ID] + pairs[k][1] for k in rows])  # (group, n + 1): <s>, then the target
        memory, src_mask = model.encode(src)
        if memory_fn is not None:
            memory = memory_fn(memory, src_mask)
        best = model.decode(tgt, memory, src_mask)[:, :n].argmax(-1)  # (group, n): </s>'s position left out
        for k, out in zip(rows, best.tolist()):
            outputs[k] = out
    return outputs


def correct_matrix(pairs: list[tuple[list[int], list[int]]], outputs: list, length: int) -> np.ndarray:
    """Which target positions each output of a given source length gets right.

    Args:
        pairs: ``(source, target)`` token-id lists.
        outputs: the model's output for each pair (:func:`reversal_outputs`).
        length: the source length to select.

    Returns:
        ``(sequences of that length, length)`` array: 1.0 where output position i equals target position i, else 0.0
        (also where the output is shorter than the target).
    """
    return np.array(
        [
            [float(i < len(out) and out[i] == target[i]) for i in range(length)]
            for (source, target), out in zip(pairs, outputs)
            if len(source) == length
        ]
    ).reshape(-1, length)


@torch.no_grad()
def fixed_vector_example(index: int) -> tuple[list[str], list[str], Tensor]:
    """One Multi30k test sentence through the shipped fixed-vector model ``models/de-en-rnn-fixed``: what §1 draws.

    Args:
        index: the test sentence (``test_2016_flickr``, 0 … 999).

    Returns:
        ``(source, output, context)``: the source sub-words and the greedy translation's sub-words (without the
        word marker ``▁`` and without ``</s>``), and the context vector C (``Seq2Seq.summary``), shape ``(d_hidden,)``.
    """
    run = load_run(SHIPPED_MODEL.parent / "de-en-rnn-fixed")
    model, tokenizer = run.model.eval(), run.tokenizer
    ids = encode(tokenizer, load_multi30k("test_2016_flickr")[index][0])
    src = torch.tensor([ids + [EOS_ID]])
    memory, src_mask = model.encode(src)
    words = lambda xs: [tokenizer.id_to_token(i).removeprefix("\u2581") for i in xs]  # noqa: E731
    return words(ids), words(greedy_decode(model, src)[0]), Seq2Seq.summary(memory, src_mask)[0]
