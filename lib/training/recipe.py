"""The paper's training recipe: the warm-up schedule, label smoothing, the translation loss and the settings.

    lr(step) = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)

:func:`noam_lr` and :func:`label_smoothed_cross_entropy` are the two equations the capstone chapter shows;
:class:`TrainConfig` checks every setting once, where a reader gives it, so the equations need not.

Source: Vaswani et al. (2017), §5.1 (batches), §5.3 (Adam β₁ = 0.9, β₂ = 0.98, ε = 1e-9; Eq. (3) warm-up
schedule) and §5.4 (label smoothing ε_ls = 0.1); Szegedy et al. (2016), §7 (label smoothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import Config
from ..data import Batch, make_batches
from ..special_tokens import BOS_ID, EOS_ID, PAD_ID
from .device import model_device

__all__ = [
    "noam_lr",
    "label_smoothed_cross_entropy",
    "seq2seq_loss",
    "evaluate_loss",
    "translation_batches",
    "TrainConfig",
    "TrainResult",
]


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The learning rate of optimiser step ``step`` (counted from 1): linear warm-up, then decay ∝ 1/√step.

    ``factor`` scales the peak, reached at step = warmup (see :meth:`TrainConfig.lr_factor`).
    Source: Vaswani et al. 2017, §5.3, Eq. (3).
    """
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def label_smoothed_cross_entropy(
    logits: Tensor, target: Tensor, epsilon: float = 0.1, ignore_index: int = PAD_ID
) -> Tensor:
    """Mean cross-entropy against a smoothed target: 1 − ε on the true token, ε spread uniformly over the vocabulary.

    logits: (batch, seq, vocab); target: (batch, seq) ids, positions equal to ``ignore_index`` (padding) skipped.
    Returns nats per target token (NaN when every target is ``ignore_index``: a mean over no token).
    Source: Szegedy et al. 2016, §7; Vaswani et al. 2017, §5.4.
    """
    assert logits.shape[:-1] == target.shape, f"logits {tuple(logits.shape)} and target {tuple(target.shape)} differ"
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        target.reshape(-1),
        ignore_index=ignore_index,
        label_smoothing=epsilon,
    )


def seq2seq_loss(model: nn.Module, batch: Batch, label_smoothing: float = 0.1) -> Tensor:
    """The teacher-forced translation loss of one batch: label-smoothed cross-entropy of ``tgt_out``.

    Args:
        model: an encoder–decoder, ``model(src, tgt_in) -> logits (batch, seq_t, vocab)``.
        batch: a :class:`lib.data.Batch` on the model's device.
        label_smoothing: ε_ls.

    Returns:
        Scalar tensor (nats per target token), see :func:`label_smoothed_cross_entropy`.

    Source: Vaswani et al. 2017, §5.4.
    """
    return label_smoothed_cross_entropy(model(batch.src, batch.tgt_in), batch.tgt_out, label_smoothing)


@torch.no_grad()
def evaluate_loss(model: nn.Module, batches: list[Batch], device: torch.device | str | None = None) -> float:
    """Mean cross-entropy (nats per target token, no smoothing) of an encoder–decoder on ``batches``.

    Args:
        model: any model with ``model(src, tgt_in) -> logits (batch, seq_t, vocab)``.
        batches: padded :class:`lib.data.Batch` es.
        device: where to compute (default: the model's device).

    Returns:
        The loss summed over every non-padding target token, divided by their number (0 tokens → 0).
    """
    device = model_device(model) if device is None else torch.device(device)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for b in batches:
        b = b.to(device)
        logits = model(b.src, b.tgt_in)
        loss = F.cross_entropy(
            logits.reshape(-1, logits.size(-1)).float(), b.tgt_out.reshape(-1), ignore_index=PAD_ID, reduction="sum"
        )
        total += loss.item()
        count += b.num_tokens
    model.train(was_training)
    return total / max(count, 1)


def translation_batches(
    examples: list[tuple[list[int], list[int]]], max_tokens: int, seed: int = 0
) -> Callable[[int], list[Batch]]:
    """The batches of each epoch for ``lib.training.train``: length-sorted, padded, about ``max_tokens`` tokens each.

    Args:
        examples: ``(source ids, target ids)`` pairs without specials (see ``lib.data.encode_pairs``).
        max_tokens: tokens per batch, padding and BOS/EOS included.
        seed: epoch e shuffles with seed ``seed + e``.

    Returns:
        ``batches(epoch) -> list[Batch]`` (``lib.data.make_batches`` with ``shuffle=True``).

    Raises:
        ValueError: no examples, or max_tokens < 1.

    Source: Vaswani et al. 2017, §5.1 (batches of sentence pairs of similar length).
    """
    if not examples:
        raise ValueError("examples is empty: there is nothing to train on")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")

    def batches(epoch: int) -> list[Batch]:
        return make_batches(examples, max_tokens, PAD_ID, BOS_ID, EOS_ID, shuffle=True, seed=seed + epoch)

    return batches


def _finite(value: float | None) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


@dataclass
class TrainConfig(Config):
    """Optimisation settings of :func:`train`. The defaults are the capstone's CPU recipe.

    Attributes:
        max_tokens: translation batches: tokens per batch (batch × padded length), see
            :func:`translation_batches`.
        peak_lr: the schedule's maximum, reached at ``warmup`` steps; sets noam_lr's factor.
        warmup: warm-up steps.
        betas: Adam's β₁, β₂ (paper: 0.9, 0.98).
        eps: Adam's ε (paper: 1e-9).
        label_smoothing: ε_ls of the default loss :func:`seq2seq_loss`.
        clip_norm: gradient-norm clipping threshold (None = off).
        minutes: wall-clock budget of training (validation excluded); None = no limit.
        max_steps: step budget; None = no limit. At least one budget must be set; a step budget gives the
            same model on any machine, a minutes budget does not.
        eval_every_minutes: validate this often (training minutes), unless ``eval_every_steps`` is set.
        eval_every_steps: validate every this many optimiser steps (None: use ``eval_every_minutes``).
        snapshot_minutes: also save the model's weights when training time passes these minutes.
        seed: seeds Python, torch and the batch order.
        amp: mixed precision on CUDA (bf16 where supported, else fp16 with loss scaling); weights
            stay float32. Ignored on CPU and MPS (see :func:`amp_context`).
        max_len: translation data: drop training pairs longer than this many sub-words on either side.

    Raises:
        ValueError: no budget; a size, rate or budget that is not a positive finite number; label
            smoothing outside [0, 1); betas outside [0, 1); a negative snapshot time.

    Source: Vaswani et al. 2017, §5.3–§5.4.
    """

    max_tokens: int = 3000
    peak_lr: float = 1e-3
    warmup: int = 400
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-9
    label_smoothing: float = 0.1
    clip_norm: float | None = 1.0
    minutes: float | None = None
    max_steps: int | None = None
    eval_every_minutes: float = 1.0
    eval_every_steps: int | None = None
    snapshot_minutes: tuple[float, ...] = ()
    seed: int = 0
    amp: bool = True
    max_len: int = 100

    def __post_init__(self) -> None:
        if self.minutes is None and self.max_steps is None:
            raise ValueError("set a budget: minutes or max_steps")
        for name in ("max_tokens", "warmup", "max_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("max_steps", "eval_every_steps"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive int or None, got {value!r}")
        for name in ("peak_lr", "eps", "eval_every_minutes"):
            value = getattr(self, name)
            if not _finite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        if self.minutes is not None and (not _finite(self.minutes) or self.minutes <= 0):
            raise ValueError(f"minutes must be a positive finite number or None, got {self.minutes!r}")
        if self.clip_norm is not None and (not _finite(self.clip_norm) or self.clip_norm <= 0):
            raise ValueError(f"clip_norm must be a positive finite number or None, got {self.clip_norm!r}")
        if not _finite(self.label_smoothing) or not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing!r}")
        self.betas = tuple(self.betas)
        if len(self.betas) != 2 or not all(_finite(b) and 0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        self.snapshot_minutes = tuple(sorted(self.snapshot_minutes))
        if any(not _finite(m) or m <= 0 for m in self.snapshot_minutes):
            raise ValueError(f"snapshot_minutes must be positive, got {self.snapshot_minutes!r}")

    def lr_factor(self, d_model: int) -> float:
        """noam_lr's factor that puts the peak at ``peak_lr``: peak_lr · √(d_model · warmup).

        Args:
            d_model: the model width the schedule is scaled by.

        Returns:
            The factor for :func:`noam_lr`.
        """
        return self.peak_lr * math.sqrt(d_model * self.warmup)


@dataclass
class TrainResult:
    """What a training run produced: the model (trained in place) and its history.

    Attributes:
        history: one dict per validation with ``step``, ``minutes`` (training time), ``train_loss`` (mean
            since the previous entry), ``val_loss`` (what the ``evaluate`` function returned, e.g. plain
            cross-entropy in nats/token; NaN without one), ``lr`` and ``tokens`` (target tokens seen so far,
            for batches that count them).
        steps: optimiser steps taken.
        minutes: training time (validation excluded).
        tokens: target tokens seen.
        stopped_by: ``"max_steps"`` or ``"minutes"``: the budget that ended the run.
    """

    history: list[dict] = field(default_factory=list)
    steps: int = 0
    minutes: float = 0.0
    tokens: int = 0
    stopped_by: str = ""

    @property
    def tokens_per_second(self) -> float:
        """Target tokens per second of training time."""
        return self.tokens / max(self.minutes * 60.0, 1e-9)

    def curve(self, key: str = "val_loss") -> tuple[list[int], list[float]]:
        """One column of the history against the step, for ``lib.plots.plot_curves``.

        Args:
            key: a history field, e.g. ``"val_loss"`` or ``"train_loss"``.

        Returns:
            ``(steps, values)``.

        Raises:
            KeyError: no history entry has ``key``.
        """
        if self.history and key not in self.history[0]:
            raise KeyError(f"history has no {key!r}; it has {sorted(self.history[0])}")
        return [e["step"] for e in self.history], [e[key] for e in self.history]
