"""The book's one training loop and the paper's recipe (Adam + warm-up, label smoothing) for every model.

    lr(step) = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)

:func:`train` trains any model the book builds, the translation Transformer, the recurrent
encoder–decoders, BERT and GPT: the caller says how to make an epoch's batches and how to turn a batch into
a loss, and the loop owns the rest — Adam with the warm-up schedule, gradient clipping, mixed precision on
CUDA, a step or wall-clock budget, periodic validation, a history, checkpoints it can resume from exactly and
snapshots at given minutes. For translation, :func:`translation_batches` and :func:`seq2seq_loss` (the
default) are the two pieces; the language models of ``lib.lm`` bring their own.

The package, one concern a module (every name below is importable from ``lib.training``):

- ``recipe``: what the chapters show: :func:`noam_lr`, :func:`label_smoothed_cross_entropy`,
  :func:`seq2seq_loss`, :func:`evaluate_loss`, :func:`translation_batches`, :class:`TrainConfig`,
  :class:`TrainResult`.
- ``loop``: :func:`train`, the step and the budget.
- ``device``: :func:`select_device`, :func:`enable_tf32`, :func:`amp_context`.
- ``distributed``: data parallelism under ``torchrun`` (:func:`setup_distributed`, :func:`shard_batch`).
- ``resume``: the checkpoint, the random states and Ctrl-C (:class:`TrainingInterrupted`); a diverged run
  (:class:`TrainingDiverged`) is never saved.
- ``progress`` and ``memo``: the loop's bookkeeping, and the kept runs of the test suite (:data:`TRAIN_CACHE_ENV`).

Source: Vaswani et al. (2017), §5.3 (Adam β₁ = 0.9, β₂ = 0.98, ε = 1e-9; Eq. (3) warm-up schedule)
and §5.4 (label smoothing ε_ls = 0.1; dropout).
"""

from __future__ import annotations

from .device import amp_context, enable_tf32, select_device
from .distributed import Ranks, ranks, setup_distributed, shard_batch
from .loop import TRAIN_CACHE_ENV, train
from .recipe import (
    TrainConfig,
    TrainResult,
    evaluate_loss,
    label_smoothed_cross_entropy,
    noam_lr,
    seq2seq_loss,
    translation_batches,
)
from .resume import CHECKPOINT, RESUMABLE_CHANGES, TrainingDiverged, TrainingInterrupted

__all__ = [
    "TrainingInterrupted",
    "TrainingDiverged",
    "noam_lr",
    "label_smoothed_cross_entropy",
    "TrainConfig",
    "TrainResult",
    "Ranks",
    "ranks",
    "setup_distributed",
    "shard_batch",
    "select_device",
    "enable_tf32",
    "amp_context",
    "evaluate_loss",
    "seq2seq_loss",
    "translation_batches",
    "train",
    "CHECKPOINT",
    "RESUMABLE_CHANGES",
    "TRAIN_CACHE_ENV",
]
