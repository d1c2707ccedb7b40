"""The plumbing of the chapter on BERT and GPT and of its deeper dive on all-MiniLM-L6-v2.

The chapter shows the ideas (the masks, the embeddings, the masking statistics, the losses); the fill-in-the-blank
probe, the fine-tuning task built from word order, and the layer-by-layer comparison of ``lib.bert.Bert`` with
Hugging Face ``transformers`` live here.
"""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor

from ..bert import Bert, BertClassifier, BertVocab, pack_pair
from ..interfaces import AttentionMaps
from ..lm import collate_pairs, sentence_batches
from ..training import TrainConfig, TrainResult, train

__all__ = ["fill_in", "shuffled", "order_task", "fine_tune", "compare_with_transformers"]


@torch.no_grad()
def fill_in(
    bert: Bert, vocab: BertVocab, tokenizer: Tokenizer, token_ids: Sequence[int], position: int, k: int = 3
) -> list[tuple[str, float]]:
    """BERT's ``k`` most probable fillers for one token of a sentence, hidden behind ``[MASK]``.

    Args:
        bert: a (pre-trained) ``lib.bert.Bert`` with its MLM head.
        vocab: the ``BertVocab`` that gives the ids of ``[CLS]``, ``[SEP]`` and ``[MASK]``.
        tokenizer: the tokenizer that turns ids back into sub-words.
        token_ids: the sentence's token ids, without ``[CLS]`` and ``[SEP]``.
        position: the index in ``token_ids`` of the token to hide.
        k: how many fillers to return.

    Returns:
        ``[(sub-word, probability), ...]``, the ``k`` most probable first.
    """
    x = torch.tensor([[vocab.cls_id, *token_ids, vocab.sep_id]])  # (1, seq)
    x[0, position + 1] = vocab.mask_id
    probs = torch.softmax(bert.mlm_logits(bert(x)[0, position + 1]), -1)  # (vocab,)
    top = probs.topk(k)
    return [(tokenizer.id_to_token(int(i)), float(p)) for p, i in zip(top.values, top.indices)]


def shuffled(ids: Sequence[int], rng: random.Random) -> list[int]:
    """``ids`` in a random order that differs from the original (unchanged when all tokens are equal).

    Args:
        ids: token ids.
        rng: the random generator that draws the order.

    Returns:
        A new list: a shuffle of ``ids``, drawn again until it differs from ``ids``.
    """
    if len(set(ids)) < 2:
        return list(ids)
    while True:
        out = list(ids)
        rng.shuffle(out)
        if out != list(ids):
            return out


def order_task(
    sentences: Sequence[Sequence[int]], vocab: BertVocab, max_len: int, seed: int
) -> list[tuple[tuple[list[int], list[int]], int]]:
    """The fine-tuning task "original word order or shuffled?": every second sentence shuffled, labelled 1.

    Args:
        sentences: token ids of each sentence.
        vocab: the ``BertVocab`` of the model (``[CLS]``, ``[SEP]``).
        max_len: BERT's number of positions; longer inputs are cut (``lib.bert.pack_pair``).
        seed: the seed of the shuffles.

    Returns:
        ``[((ids, segment ids), label), ...]``: label 0 for the sentences at even indices (kept), 1 for the
        others (shuffled at the level of sub-word tokens).
    """
    rng = random.Random(seed)
    return [
        (pack_pair(s if i % 2 == 0 else shuffled(s, rng), None, vocab, max_len), i % 2) for i, s in enumerate(sentences)
    ]


def fine_tune(
    base: Bert,
    train_rows: Sequence[tuple[tuple[list[int], list[int]], int]],
    val_rows: Sequence[tuple[tuple[list[int], list[int]], int]],
    steps: int,
    seed: int,
    batch_size: int = 32,
    peak_lr: float = 5e-4,
) -> TrainResult:
    """Fine-tune ``base`` with a two-class linear layer on ``[CLS]`` (``lib.bert.BertClassifier``), all weights trained.

    Args:
        base: the encoder to start from (pre-trained, or freshly initialised for a control); it is trained in place.
        train_rows: ``((ids, segment ids), label)`` training examples (e.g. from :func:`order_task`).
        val_rows: the same for validation.
        steps: optimiser steps (warm-up 10, validation every 10).
        seed: the seed of the classifier's initialisation and of the batches.
        batch_size: examples per step.
        peak_lr: the schedule's peak learning rate.

    Returns:
        The ``TrainResult``; its history's ``val_loss`` holds the validation *accuracy* after every 10 steps.
    """
    val_x, val_seg = collate_pairs([row for row, _ in val_rows])  # (n, seq) each
    val_y = torch.tensor([label for _, label in val_rows])

    def classify_step(model: BertClassifier, batch: list) -> Tensor:
        x, seg = collate_pairs([row for row, _ in batch])
        return F.cross_entropy(model(x, seg), torch.tensor([label for _, label in batch]))

    def val_accuracy(model: BertClassifier) -> float:
        return (model(val_x, val_seg).argmax(-1) == val_y).float().mean().item()

    torch.manual_seed(seed)
    classifier = BertClassifier(base, num_classes=2)
    config = TrainConfig(max_steps=steps, peak_lr=peak_lr, warmup=10, eval_every_steps=10, seed=seed)
    return train(
        classifier,
        sentence_batches(train_rows, batch_size, seed),
        config,
        loss_fn=classify_step,
        evaluate=val_accuracy,
        progress=False,
        log=lambda line: None,
    )


@torch.no_grad()
def compare_with_transformers(model: Bert, ids: Tensor, folder: str) -> tuple[AttentionMaps, float]:
    """Run ``model`` and Hugging Face's ``BertModel`` (the reference) on the same ids; their largest difference.

    Needs the optional ``transformers`` package (``make pretrained`` installs it).

    Args:
        model: a ``lib.bert.Bert`` holding the weights of the checkpoint in ``folder`` (``lib.pretrained``).
        ids: ``(batch, seq)`` token ids, right-padded with 0 (``lib.pretrained.encode_sentences``).
        folder: the checkpoint's folder (``config.json`` and weights), e.g. ``lib.pretrained.minilm_dir()``.

    Returns:
        ``(maps, worst)``: ``model``'s attention maps, and the largest absolute difference between the two models'
        hidden states (the embeddings and every layer's output) and attention weights.
    """
    from transformers import BertModel  # optional: only the pretrained extra installs it
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Loading weights" bar in the page
    with contextlib.redirect_stderr(io.StringIO()):  # transformers' loading messages
        reference = BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    states, maps = model.hidden_states(ids)
    ref = reference(input_ids=ids, attention_mask=(ids != 0).long(), output_hidden_states=True, output_attentions=True)
    worst = max(
        [(a - b).abs().max().item() for a, b in zip(states, ref.hidden_states)]
        + [(a - b).abs().max().item() for a, b in zip(maps.encoder, ref.attentions)]
    )
    return maps, worst
