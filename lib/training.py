"""The book's one training loop: the paper's recipe (Adam + warm-up, label smoothing) for every model.

    lr(step) = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)

:func:`train` trains any model the book builds, the translation Transformer, the recurrent
encoder–decoders, BERT and GPT: the caller says how to make an epoch's batches and how to turn a batch into
a loss, and the loop owns the rest — Adam with the warm-up schedule, gradient clipping, mixed precision on
CUDA, a step or wall-clock budget, periodic validation, a history, checkpoints it can resume from exactly and
snapshots at given minutes. For translation, :func:`translation_batches` and :func:`seq2seq_loss` (the
default) are the two pieces; the language models of ``lib.lm`` bring their own.

Data parallelism: started by ``torchrun --nproc_per_node N -m lib.train ...``, each of the N processes joins the
run (:func:`setup_distributed`), builds the same global batches, trains on its own block of each batch's rows
(:func:`shard_batch`), and torch's ``DistributedDataParallel`` averages the gradients, weighted so that the
update equals one process's update over the whole batch. Rank 0 alone writes files and logs. Without
``torchrun`` nothing of this runs and the loop is the one-process loop.

Source: Vaswani et al. (2017), §5.3 (Adam β₁ = 0.9, β₂ = 0.98, ε = 1e-9; Eq. (3) warm-up schedule)
and §5.4 (label smoothing ε_ls = 0.1; dropout).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import pickle
import random
import signal
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from .config import Config
from .data import Batch, make_batches
from .files import atomic_torch_save
from .special_tokens import BOS_ID, EOS_ID, PAD_ID

__all__ = [
    "TrainingInterrupted",
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
]

#: Name of the resume checkpoint inside a run folder.
CHECKPOINT = "checkpoint.pt"

#: Settings that may change when a run is resumed: the budget and how often to validate. Any other change
#: (learning rate, batch size, seed, …) would make the resumed run a different run, so resuming refuses it.
RESUMABLE_CHANGES = frozenset({"minutes", "max_steps", "snapshot_minutes", "eval_every_minutes", "eval_every_steps"})

#: Environment variable naming a folder in which :func:`train` keeps the runs it finished, to hand them back when
#: called again with the same model, batches, settings and library code (see :func:`_TrainMemo`). Unset, the
#: default for readers, every call trains. The test suite sets it so that the student edition, executed after the
#: chapters, does not train the chapters' models a second time.
TRAIN_CACHE_ENV = "ATTENTION_BOOK_TRAIN_CACHE"


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`train` after a whole optimiser step; the resume checkpoint, if any, is saved.

    Args:
        steps: optimiser steps completed.
        checkpoint: the saved ``checkpoint.pt``, or None when the run had no ``out_dir``.
    """

    def __init__(self, steps: int, checkpoint: Path | None) -> None:
        self.steps, self.checkpoint = steps, checkpoint
        where = f"; checkpoint saved to {checkpoint}" if checkpoint is not None else " (no out_dir: nothing saved)"
        super().__init__(f"training interrupted after {steps} steps{where}")


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The warm-up schedule: linear increase for ``warmup`` steps, then decay ∝ 1/√step.

    Args:
        step: optimiser step, counted from 1.
        d_model: model width.
        warmup: warm-up steps (4000 in the paper).
        factor: overall scale; the peak (at step = warmup) is factor · (d_model · warmup)^-0.5.

    Returns:
        The learning rate (unitless step size of Adam).

    Raises:
        ValueError: step < 1, warmup < 1 or d_model < 1.

    Source: Vaswani et al. 2017, §5.3, Eq. (3).
    """
    if step < 1 or warmup < 1 or d_model < 1:
        raise ValueError(f"need step >= 1, warmup >= 1, d_model >= 1; got {step}, {warmup}, {d_model}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def label_smoothed_cross_entropy(
    logits: Tensor, target: Tensor, epsilon: float = 0.1, ignore_index: int = PAD_ID
) -> Tensor:
    """Mean cross-entropy against a smoothed target: (1 - ε) on the true token, ε spread uniformly over the vocabulary.

    loss = (1 - ε) · (−log p_y) + ε · mean_v(−log p_v), averaged over the non-ignored positions.

    Args:
        logits: ``(batch, seq, vocab)`` unnormalised scores.
        target: ``(batch, seq)`` token ids; positions equal to ``ignore_index`` (padding) are skipped.
        epsilon: smoothing ε_ls in [0, 1) (0.1 in the paper; 0 gives plain cross-entropy).
        ignore_index: id whose positions do not count.

    Returns:
        Scalar tensor (nats per target token).

    Raises:
        ValueError: shapes do not match; epsilon outside [0, 1); every target is ``ignore_index`` (the mean
            over no token would be NaN).

    Source: Szegedy et al. (2016), §7; Vaswani et al. 2017, §5.4.
    """
    if logits.dim() != 3 or logits.shape[:2] != target.shape:
        raise ValueError(
            f"logits (batch, seq, vocab) {tuple(logits.shape)} and target (batch, seq) {tuple(target.shape)} "
            "do not match"
        )
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
    if not bool((target != ignore_index).any()):
        raise ValueError(f"target holds only ignore_index ({ignore_index}): there is no target token to score")
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        target.reshape(-1),
        ignore_index=ignore_index,
        label_smoothing=epsilon,
    )


def select_device(name: str | None = None) -> torch.device:
    """The device to train on: ``name`` if given, else CUDA, then Apple MPS, then CPU.

    Args:
        name: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or None (pick the best available).

    Returns:
        A ``torch.device``.

    Raises:
        ValueError: ``name`` is not a device torch knows.
    """
    if name:
        try:
            return torch.device(name)
        except RuntimeError as err:
            raise ValueError(f"unknown device {name!r}: {err}") from None
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def enable_tf32(enabled: bool = True) -> None:
    """Let float32 matrix products and convolutions on CUDA use TensorFloat-32 (a 10-bit mantissa).

    On Ampere and later GPUs (A100, H100) TF32 runs float32 matmuls several times faster at about 1e-3
    relative precision; it matters for what runs outside bf16 autocast (or everything with ``amp=False``).
    It changes nothing on a CPU.

    Args:
        enabled: True for TF32, False for full float32 ("ieee").
    """
    precision = "tf32" if enabled else "ieee"
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9: mixing with the older flags below is an error
        matmul.fp32_precision = precision
        # cuDNN's conv and RNN flags together: torch raises if they differ when a legacy flag is read later
        torch.backends.cudnn.conv.fp32_precision = precision
        torch.backends.cudnn.rnn.fp32_precision = precision
    else:
        matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled


# --- data parallelism ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranks:
    """Where this process stands in a data-parallel run.

    Attributes:
        rank: this process's index, 0 … world_size − 1; rank 0 writes every file and prints every line.
        world_size: number of processes (1 without ``torchrun``).
        backend: ``"gloo"`` (CPU) or ``"nccl"`` (CUDA) when ``torch.distributed`` is initialised, else None.
    """

    rank: int = 0
    world_size: int = 1
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        """True on rank 0, the one process that writes files and logs."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """True when ``torch.distributed`` is initialised, even with one process (``torchrun --nproc_per_node 1``)."""
        return self.backend is not None


def ranks() -> Ranks:
    """This process's place in the data-parallel run: rank 0 of 1 when ``torch.distributed`` is not initialised.

    Returns:
        A :class:`Ranks`.
    """
    if dist.is_available() and dist.is_initialized():
        return Ranks(dist.get_rank(), dist.get_world_size(), str(dist.get_backend()))
    return Ranks()


def setup_distributed(device: torch.device) -> tuple[Ranks, torch.device]:
    """Join the data-parallel run that ``torchrun`` started, one process per device; without torchrun, do nothing.

    ``torchrun`` sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` in each
    process's environment; the process group is initialised from them (``init_method="env://"``) with the
    backend of the device: NCCL on CUDA, gloo otherwise. On CUDA each process takes the GPU of its local rank.

    Args:
        device: the device chosen for training; ``cuda`` becomes ``cuda:LOCAL_RANK``.

    Returns:
        ``(ranks, device)``: this process's :class:`Ranks` and the device it trains on.

    Raises:
        ValueError: ``WORLD_SIZE``, ``RANK`` or ``LOCAL_RANK`` is not an integer, or on CUDA the local rank has
            no GPU (more processes on this machine than GPUs).
    """
    if "WORLD_SIZE" not in os.environ or dist.is_initialized():
        return ranks(), device
    try:
        world_size, rank = int(os.environ["WORLD_SIZE"]), int(os.environ.get("RANK", "0"))
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError:
        raise ValueError(
            "WORLD_SIZE, RANK and LOCAL_RANK must be integers (torchrun sets them); got "
            f"{os.environ.get('WORLD_SIZE')!r}, {os.environ.get('RANK')!r}, {os.environ.get('LOCAL_RANK')!r}"
        ) from None
    if device.type == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise ValueError(
                f"local rank {local_rank} has no GPU: this machine has {torch.cuda.device_count()}; "
                "start at most that many processes per machine (--nproc_per_node)"
            )
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method="env://", world_size=world_size, rank=rank)
    return ranks(), device


def _bounds(rows: int, rank: int, world_size: int) -> tuple[int, int]:
    """Rank ``rank``'s block of ``rows`` rows: sizes differ by at most one, the first blocks the larger."""
    q, r = divmod(rows, world_size)
    start = rank * q + min(rank, r)
    return start, start + q + (rank < r)


def shard_batch(batch: Any, rank: int, world_size: int) -> tuple[Any, float]:
    """This rank's share of a global batch: a contiguous block of its rows and the share of the loss it carries.

    The rows are split as evenly as possible (block sizes differ by at most one). The weight is the block's
    share of the batch's target tokens for a :class:`lib.data.Batch` (the loss is a mean over tokens), else
    its share of the rows; the weights of all ranks sum to 1, so Σ_rank weight · (mean loss of the block) is
    the mean loss of the whole batch, and so is its gradient. A rank left without rows (a batch with fewer
    rows than processes) gets the first row with weight 0: it still runs the forward and backward pass that
    ``DistributedDataParallel`` waits for, but adds nothing.

    Args:
        batch: a :class:`lib.data.Batch`, a tensor ``(batch, ...)``, a tuple of tensors sharing their first
            dimension, or a list of examples.
        rank: this process's rank, 0 … world_size − 1.
        world_size: number of processes.

    Returns:
        ``(block, weight)``: the block, of the same kind as ``batch``, and its weight in [0, 1].

    Raises:
        ValueError: world_size < 1, or rank outside [0, world_size).
        TypeError: a batch of another kind.
    """
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= rank < world_size; got rank {rank}, world_size {world_size}")
    if isinstance(batch, (Batch, Tensor, list)):
        rows = len(batch)
    elif isinstance(batch, tuple) and batch and all(isinstance(x, Tensor) for x in batch):
        rows = len(batch[0])
    else:
        raise TypeError(
            f"cannot split a batch of type {type(batch).__name__} among processes: use a lib.data.Batch, a "
            "tensor, a tuple of tensors or a list"
        )
    start, stop = _bounds(rows, rank, world_size)
    empty = start == stop
    if empty:
        start, stop = 0, 1

    def block(x: Any) -> Any:
        return x[start:stop]

    if isinstance(batch, Batch):
        shard = Batch(block(batch.src), block(batch.tgt_in), block(batch.tgt_out), batch.pad_id)
        weight = shard.num_tokens / max(batch.num_tokens, 1)
    elif isinstance(batch, tuple):
        shard, weight = tuple(block(x) for x in batch), (stop - start) / rows
    else:
        shard, weight = block(batch), (stop - start) / rows
    return shard, 0.0 if empty else weight


class _Replica:
    """What ``loss_fn`` receives under data parallelism or ``torch.compile``: calling it runs the wrapper's
    forward (which prepares the gradient all-reduce, or runs the compiled graph); every other attribute is the
    model's own (``config``, ``mlm_loss``, …), so loss functions written for the bare model work unchanged."""

    def __init__(self, model: nn.Module, forward: Callable[..., Any]) -> None:
        self._model, self._forward = model, forward

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._forward(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


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


def _model_device(model: nn.Module) -> torch.device:
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


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
    device = _model_device(model) if device is None else torch.device(device)
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


def translation_batches(
    examples: list[tuple[list[int], list[int]]], max_tokens: int, seed: int = 0
) -> Callable[[int], list[Batch]]:
    """The batches of each epoch for :func:`train`: length-sorted, padded, about ``max_tokens`` tokens each.

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


def amp_context(device: torch.device, enabled: bool = True) -> tuple[Any, torch.dtype | None]:
    """Mixed precision on CUDA: autocast to bf16 where supported, else fp16 (with loss scaling in :func:`train`).

    On CPU and MPS it returns a disabled context: measured with ``bench/train_speed.py`` on a CPU with native
    bfloat16 (Intel AMX), bf16 autocast trained the capstone model about 25 % *slower* than float32, so the
    book keeps CPUs in float32.

    Args:
        device: the training device.
        enabled: False turns autocast off everywhere.

    Returns:
        ``(context manager, dtype or None)``.
    """
    if enabled and device.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype), dtype
    return torch.autocast(device.type, enabled=False), None


def _to_device(batch: Any, device: torch.device) -> Any:
    if device.type == "cuda":  # from pinned (page-locked) memory the copy is asynchronous: the CPU runs ahead
        if isinstance(batch, Batch):
            return Batch(*(_pinned_to(t, device) for t in (batch.src, batch.tgt_in, batch.tgt_out)), batch.pad_id)
        if isinstance(batch, Tensor):
            return _pinned_to(batch, device)
    if isinstance(batch, Tensor) or hasattr(batch, "to"):
        return batch.to(device)
    if isinstance(batch, tuple) and all(isinstance(x, Tensor) for x in batch):
        return tuple(_to_device(x, device) for x in batch)
    return batch  # e.g. lists of token ids: the loss function builds its tensors


def _pinned_to(x: Tensor, device: torch.device) -> Tensor:
    if x.device.type == "cpu" and not x.is_pinned():
        x = x.pin_memory()
    return x.to(device, non_blocking=True)


def _rng_state(device: torch.device) -> dict:
    """The random states a resumed run restores: Python's, torch's CPU generator and the training device's own
    generator (dropout on a GPU draws from the GPU's generator, not from the CPU's)."""
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "device": device.type}
    if device.type == "cuda":
        state["device_rng"] = torch.cuda.get_rng_state(device)
    elif device.type == "mps":
        state["device_rng"] = torch.mps.get_rng_state()
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    """Restore :func:`_rng_state`'s states on ``device``: a device generator only into a device of the same type;
    otherwise a warning says that the resumed run cannot repeat the uninterrupted one exactly."""
    torch.set_rng_state(state["torch"].cpu())
    random.setstate(state["python"])
    saved, device_rng = state.get("device"), state.get("device_rng")
    if saved is None:  # checkpoints written before the device was recorded: every CUDA device's state, or none
        saved = "cuda" if "cuda" in state else "cpu"
        index = device.index if device.index is not None else 0
        device_rng = state["cuda"][index] if saved == "cuda" and index < len(state["cuda"]) else None
    if saved == device.type and device_rng is not None:
        if device.type == "cuda":
            torch.cuda.set_rng_state(device_rng.cpu(), device)
        elif device.type == "mps":
            torch.mps.set_rng_state(device_rng.cpu())
    elif saved != device.type:
        warnings.warn(
            f"the checkpoint was saved while training on {saved} and is resumed on {device}: the Python and CPU "
            f"random states are restored, the {saved if saved != 'cpu' else device.type} generator's cannot be, so "
            "dropout will not repeat an uninterrupted run exactly",
            stacklevel=3,
        )


class _DeferredInterrupt:
    """Within ``with``, the first Ctrl-C only sets ``requested`` (the loop stops after the current step); a second
    one interrupts at once. Only in the main thread (signals go there); elsewhere it does nothing."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> _DeferredInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _check_resumable(state: dict, config: TrainConfig, model_config: dict | None, ckpt: Path) -> None:
    """Refuse to resume with other settings than the checkpoint's, naming each one that differs."""
    saved = state.get("train_config") or {}
    now = config.to_dict()
    changed = [
        f"{k}: {saved.get(k)!r} in the checkpoint, {now.get(k)!r} now"
        for k in sorted(set(saved) | set(now))
        if k not in RESUMABLE_CHANGES and _plain(saved.get(k)) != _plain(now.get(k))
    ]
    saved_model = state.get("model_config")
    if saved_model is not None and model_config is not None:
        changed += [
            f"model {k}: {saved_model.get(k)!r} in the checkpoint, {model_config.get(k)!r} now"
            for k in sorted(set(saved_model) | set(model_config))
            if _plain(saved_model.get(k)) != _plain(model_config.get(k))
        ]
    if changed:
        raise ValueError(
            f"cannot resume {ckpt} with other settings ({'; '.join(changed)}); only "
            f"{', '.join(sorted(RESUMABLE_CHANGES))} may change. Start a new run instead."
        )


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


class _TrainMemo:
    """Where :func:`train` keeps a finished run when the environment variable :data:`TRAIN_CACHE_ENV` names a folder.

    The file's name is a SHA-256 digest of everything the run depends on: the model's class, its settings (the
    plain attributes of every submodule, which equal weights do not show: a dropout rate, scaled or unscaled
    scores) and its initial weights, the training settings, the first epoch's batches, the code of ``loss_fn`` and
    ``evaluate`` and the values they reach (closures, defaults, globals), the source of every module of ``lib``
    (the model, the loop, the data code), torch's version, its number of threads and the device.
    Calling :func:`train` again with all of these equal gives back the trained weights and the last step's
    gradients, the result, the random states the run ended with and its log lines, instead of training again.
    Only step-budgeted runs without a run folder, resumption, compilation or data parallelism are kept (with a
    minutes budget the run depends on the machine's speed), and not a run that changed what its functions reach
    (a loss recorded into a list): restoring would not repeat that.
    """

    def __init__(
        self, folder: Path, key: str, functions: tuple[Callable[..., Any] | None, ...] = (), reachable: str = ""
    ) -> None:
        self.path = folder / f"train-{key}.pt"
        self.functions = functions
        self.reachable = reachable  # _reachable_digest(functions) before the run: did the run change it?

    @classmethod
    def open(
        cls,
        model: nn.Module,
        batches: Callable[[int], Iterable[Any]],
        config: TrainConfig,
        functions: tuple[Callable[..., Any] | None, ...],
        device: torch.device,
    ) -> _TrainMemo | None:
        """The memo of this run, or None when :data:`TRAIN_CACHE_ENV` is unset or the budget is in minutes."""
        folder = os.environ.get(TRAIN_CACHE_ENV, "")
        if not folder or config.minutes is not None or config.max_steps is None:
            return None
        h = hashlib.sha256(b"train-memo 1")
        for source in sorted(Path(__file__).resolve().parent.glob("*.py")):
            h.update(source.name.encode() + source.read_bytes())
        h.update(f"{torch.__version__}|{torch.get_num_threads()}|{device}|{type(model).__qualname__}".encode())
        h.update(json.dumps(config.to_dict(), sort_keys=True, default=repr).encode())
        _settings_digest(h, model)
        _digest(h, model.state_dict())
        for fn in functions:
            _code_digest(h, fn)
        reachable = _reachable_digest(functions)
        h.update(reachable.encode())
        _digest(h, list(batches(0)))
        return cls(Path(folder), h.hexdigest()[:24], functions, reachable)

    def load(self, model: nn.Module, device: torch.device, log: Callable[[str], Any]) -> TrainResult | None:
        """The kept run, restored into ``model`` (weights, eval mode), the random states and ``log``; None if none."""
        if not self.path.is_file():
            return None
        try:
            saved = torch.load(self.path, map_location="cpu", weights_only=True)
            model.to(device).load_state_dict(saved["model"])
            params = dict(model.named_parameters())
            for name, grad in saved["grads"].items():  # the last step's gradients, as training leaves them
                params[name].grad = grad.to(device)
            result = TrainResult(**saved["result"])
            _set_rng_state(saved["rng"], device)
            lines = list(saved["log"])
        except (OSError, EOFError, RuntimeError, pickle.UnpicklingError, KeyError, TypeError) as err:
            warnings.warn(f"the kept training run {self.path} could not be read ({err}); training again", stacklevel=3)
            return None
        for line in lines:
            log(line)
        model.eval()
        return result

    def save(self, model: nn.Module, result: TrainResult, lines: list[str], device: torch.device) -> None:
        """Keep the finished run (an unwritable folder only costs a new training next time).

        Not kept when the run changed something its ``loss_fn`` or ``evaluate`` reach (e.g. a loss recorded into a
        list): restoring the weights would not repeat that.
        """
        if _reachable_digest(self.functions) != self.reachable:
            return
        grads = {name: p.grad.detach().cpu() for name, p in model.named_parameters() if p.grad is not None}
        state = {
            "model": model.state_dict(),
            "grads": grads,
            "result": asdict(result),
            "rng": _rng_state(device),
            "log": lines,
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_torch_save(state, self.path)
        except OSError as err:
            warnings.warn(f"could not keep the training run in {self.path} ({err})", stacklevel=3)


_PLAIN = (bool, int, float, str, type(None))


def _settings_digest(h: Any, model: nn.Module) -> None:
    """Feed ``h`` the settings that a model's weights do not show: for every submodule, its class and its plain
    attributes (numbers, strings, flags and dataclass configs such as a ``config``), e.g. the dropout rate or
    whether dot-product scores are scaled, which two models with equal weights can differ in."""
    for name, module in model.named_modules():
        plain = sorted(
            (key, repr(value))
            for key, value in vars(module).items()
            if not key.startswith("_")
            and key != "training"
            and (isinstance(value, _PLAIN) or (dataclasses.is_dataclass(value) and not isinstance(value, type)))
        )
        h.update(f"M{name}|{type(module).__qualname__}|{plain}".encode())


def _digest(h: Any, obj: Any) -> None:
    """Feed ``h`` with the content of ``obj``: tensors by their bytes, containers and dataclasses by their items."""
    if isinstance(obj, Tensor):
        t = obj.detach().cpu().contiguous().reshape(-1)
        h.update(f"T{t.dtype}{tuple(obj.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(type(obj).__qualname__.encode())
        for f in dataclasses.fields(obj):
            _digest(h, getattr(obj, f.name))
    elif isinstance(obj, dict):
        h.update(f"D{len(obj)}".encode())
        for k in obj:
            h.update(repr(k).encode())
            _digest(h, obj[k])
    elif isinstance(obj, (list, tuple)):
        h.update(f"L{len(obj)}".encode())
        if all(isinstance(x, (int, float, str, bool)) or x is None for x in obj):
            h.update(repr(obj).encode())
        else:
            for x in obj:
                _digest(h, x)
    else:  # numbers, strings, None; other objects by their repr (an address in it only makes the run train again)
        h.update(repr(obj).encode())


def _reachable_digest(functions: tuple[Callable[..., Any] | None, ...]) -> str:
    """A digest of the values that ``functions`` reach: the contents of their closures, defaults and partial
    arguments, and the plain or container globals their code names (tensors by their bytes, models by their
    weights), following the functions among them. Two runs whose loss or evaluation captures different data
    differ here; a run that appends to a captured list changes it."""
    h = hashlib.sha256()
    seen: set[int] = set()
    stack: list[Any] = [fn for fn in functions if fn is not None]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        values: list[Any] = []
        if isinstance(fn, functools.partial):
            values += [fn.func, *fn.args, *fn.keywords.values()]
        fn = getattr(fn, "__func__", fn)  # a bound method: its function
        code = getattr(fn, "__code__", None)
        if code is not None:
            values += [cell.cell_contents for cell in fn.__closure__ or () if _cell_filled(cell)]
            values += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
            names = set()
            codes = [code]
            while codes:
                c = codes.pop()
                names.update(c.co_names)
                codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
            module_globals = getattr(fn, "__globals__", {})
            values += [module_globals[n] for n in sorted(names) if n in module_globals]
        for value in values:
            if callable(value) and not isinstance(value, (type, nn.Module)):
                h.update(b"F")
                _code_digest(h, value)
                stack.append(value)
            elif isinstance(value, nn.Module):
                _settings_digest(h, value)
                _digest(h, value.state_dict())
            elif isinstance(value, (Tensor, list, tuple, dict, set, *_PLAIN)) or (
                dataclasses.is_dataclass(value) and not isinstance(value, type)
            ):
                _digest(h, sorted(value, key=repr) if isinstance(value, set) else value)
            # modules, classes and other objects: their code is lib's (digested) or the caller's own
    return h.hexdigest()


def _cell_filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def _code_digest(h: Any, fn: Callable[..., Any] | None) -> None:
    """Feed ``h`` with what identifies ``fn``: its qualified name and the bytecode of it and of its nested code."""
    h.update(f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}".encode())
    stack = [fn.__code__] if hasattr(fn, "__code__") else []
    while stack:
        code = stack.pop()
        h.update(code.co_code + repr(code.co_names).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                stack.append(const)
            else:
                h.update(repr(const).encode())


class _Epochs:
    """``batches(epoch)`` for the loop; with ``ahead``, a background thread builds epoch e + 1 while epoch e trains.

    Building an epoch (bucketing, padding, shuffling) takes about a second for Multi30k: nothing on a CPU, where
    an epoch trains for minutes, but on a GPU with large batches an epoch trains in seconds and the GPU would
    wait. The batches are the same either way (``batches`` is a function of the epoch); a context manager, so
    that the thread is let go whatever ends the loop.
    """

    def __init__(self, batches: Callable[[int], Iterable[Any]], ahead: bool) -> None:
        self.batches = batches
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="next-epoch") if ahead else None
        self.pending: tuple[int, Future] | None = None

    def __call__(self, epoch: int) -> Iterable[Any]:
        if self.pending is not None and self.pending[0] == epoch:
            current = self.pending[1].result()
        else:
            current = self.batches(epoch)
        if self.pool is not None:
            self.pending = (epoch + 1, self.pool.submit(lambda: list(self.batches(epoch + 1))))
        return current

    def __enter__(self) -> _Epochs:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def _recording(log: Callable[[str], Any], lines: list[str]) -> Callable[[str], Any]:
    """``log``, also appending each line to ``lines``."""

    def record(line: str) -> Any:
        lines.append(line)
        return log(line)

    return record


def _quiet(line: str) -> None:
    """The log of ranks other than 0: they print nothing."""


def _agree(loss: Tensor, share: float, step_s: float, stop: bool, world_size: int) -> tuple[float, float, bool]:
    """One all-reduce per step so that every rank takes the same decisions: the global batch's mean loss
    (Σ share · block loss), the mean step time (the minutes budget and validation times), and whether any rank
    got Ctrl-C."""
    stats = torch.stack(
        [
            loss.detach().double() * share,
            torch.tensor(step_s / world_size, dtype=torch.float64, device=loss.device),
            torch.tensor(float(stop), dtype=torch.float64, device=loss.device),
        ]
    )
    dist.all_reduce(stats)
    loss_value, step_s, stopped = stats.tolist()
    return loss_value, step_s, stopped > 0


def _load_checkpoint(ckpt: Path, config: TrainConfig, model_config: dict | None, dp: Ranks) -> dict | None:
    """The resume checkpoint, or None when there is none. Under data parallelism rank 0 reads it and sends it
    to the others (they need not see rank 0's disk), and a refusal reaches every rank."""
    state, error = None, None
    if dp.is_main and ckpt.exists():
        state = torch.load(ckpt, map_location="cpu", weights_only=True)  # random states must stay on the CPU
        try:
            _check_resumable(state, config, model_config, ckpt)
        except ValueError as err:
            state, error = None, str(err)
    if dp.distributed:
        box = [(state, error)]
        dist.broadcast_object_list(box, src=0)
        state, error = box[0]
    if error is not None:
        raise ValueError(error)
    return state


def _rank_rng_state(state: dict, dp: Ranks) -> dict | None:
    """This rank's saved random states (None for a rank the checkpoint did not have); with another number of
    processes than when saved, a warning."""
    saved_world = state.get("world_size", 1)
    if saved_world != dp.world_size:
        warnings.warn(
            f"the checkpoint was written by {saved_world} process(es) and is resumed by {dp.world_size}: the "
            "batches continue exactly, but the dropout streams of the ranks cannot",
            stacklevel=3,
        )
    per_rank = state.get("rng_ranks") or [state["rng"]]
    return per_rank[dp.rank] if dp.rank < len(per_rank) else None


def train(
    model: nn.Module,
    batches: Callable[[int], Iterable[Any]],
    config: TrainConfig,
    loss_fn: Callable[[nn.Module, Any], Tensor] | None = None,
    evaluate: Callable[[nn.Module], float] | None = None,
    out_dir: str | Path | None = None,
    resume: bool = False,
    device: torch.device | str | None = None,
    progress: bool = True,
    log: Callable[[str], Any] = print,
    compile: bool = False,
    prefetch: bool | None = None,
) -> TrainResult:
    """Train ``model`` in place until the budget in ``config`` is spent: the book's one training loop.

    Each optimiser step: ``loss = loss_fn(model, batch)`` (under autocast on CUDA), backward, clip the
    gradient norm, an Adam step, a step of the warm-up schedule. Every ``eval_every_steps`` steps (or
    ``eval_every_minutes`` of training time) and at the end, ``evaluate(model)`` runs in eval mode without
    gradients and a history entry is written; with ``out_dir``, a resume checkpoint too.

    Data parallelism: when ``torch.distributed`` is initialised (``torchrun``, see :func:`setup_distributed`),
    every process iterates over the same global batches and trains on its block of each one
    (:func:`shard_batch`); ``DistributedDataParallel`` averages the gradients, and each block's loss is scaled
    by its share of the batch's tokens times the number of processes, so the averaged gradient is the gradient
    of the whole batch's mean loss: the same update as one process over the whole batch. Every rank keeps a
    full copy of the model and of Adam's moments; rank 0 alone validates, logs and writes files, the others'
    history has NaN for ``val_loss``. Each rank's dropout draws from its own seed, ``config.seed + rank``.

    Kept runs: when the environment variable ``ATTENTION_BOOK_TRAIN_CACHE`` (:data:`TRAIN_CACHE_ENV`) names a
    folder, a step-budgeted run without ``out_dir`` is kept there when it ends, and a later call with the same
    model, batches, settings, functions and library code restores it (weights, result, random states, log lines)
    instead of training again. The test suite uses it; unset, every call trains.

    Args:
        model: the model (trained in place); its ``config.d_model`` scales the schedule.
        batches: ``batches(epoch) -> iterable of batches`` for epoch 0, 1, 2, … (e.g.
            :func:`translation_batches`, or ``lib.lm.sentence_batches``). A batch is moved to ``device`` when it
            is a tensor, a tuple of tensors or has a ``.to`` method; other batches (lists of token ids) are
            given to ``loss_fn`` as they are.
        config: a :class:`TrainConfig` (budget, schedule, clipping, seed).
        loss_fn: ``loss_fn(model, batch) -> scalar tensor`` called in train mode; default
            :func:`seq2seq_loss` with ``config.label_smoothing`` (batches of :class:`lib.data.Batch`).
        evaluate: ``evaluate(model) -> float``, the validation number of the history (``val_loss``), e.g.
            ``lambda m: evaluate_loss(m, val_batches)``; None = no validation (NaN).
        out_dir: where to write the resume checkpoint ``checkpoint.pt`` and snapshots (``model_{m}min.pt``);
            None = nowhere.
        resume: continue from ``out_dir/checkpoint.pt`` if it exists, at the same batch of the same epoch,
            with every random state restored.
        device: where to train; default: where the model is.
        progress: show a tqdm progress bar.
        log: called with one line of text per validation.
        compile: run the model's forward through ``torch.compile`` (worth it on a GPU; the first steps pay
            the compilation). The saved weights keep the model's own names.
        prefetch: build the next epoch's batches in a background thread while this epoch trains; default: on
            CUDA (a GPU would otherwise wait for them), not on a CPU (where the thread would take the cores'
            time). The batches, and so the run, are the same either way.

    Returns:
        A :class:`TrainResult` with the history.

    Raises:
        ValueError: resume without out_dir; resuming with other settings than the checkpoint's (only the budget
            and the validation interval may change); an epoch with no batches; a model without
            ``config.d_model``.
        TrainingInterrupted: Ctrl-C (SIGINT) arrived; the loop finished the current step and, with ``out_dir``,
            saved the resume checkpoint first. A second Ctrl-C interrupts at once.

    Source: Vaswani et al. 2017, §5.3 (Adam, Eq. (3)) and §5.4 (regularisation).
    """
    if resume and out_dir is None:
        raise ValueError("resume=True needs out_dir")
    d_model = getattr(getattr(model, "config", None), "d_model", None)
    if not isinstance(d_model, int) or d_model < 1:
        raise ValueError("model.config.d_model must be a positive int: the learning-rate schedule is scaled by it")
    device = _model_device(model) if device is None else torch.device(device)
    if loss_fn is None:
        smoothing = config.label_smoothing

        def loss_fn(m: nn.Module, b: Batch) -> Tensor:
            return seq2seq_loss(m, b, smoothing)

    dp = ranks()
    if not dp.is_main:
        progress, log = False, _quiet
    memo = None
    if out_dir is None and not resume and not compile and not dp.distributed:
        memo = _TrainMemo.open(model, batches, config, (loss_fn, evaluate), device)
    lines: list[str] = []
    if memo is not None:
        kept = memo.load(model, device, log)
        if kept is not None:
            return kept
        log = _recording(log, lines)
    out = Path(out_dir) if out_dir is not None else None
    if out is not None and dp.is_main:
        out.mkdir(parents=True, exist_ok=True)
    random.seed(config.seed)
    torch.manual_seed(config.seed + dp.rank)

    model.to(device).train()
    net: Any = model  # what loss_fn calls: the model, or its data-parallel and/or compiled wrapper
    if dp.distributed:
        net = DistributedDataParallel(
            model, device_ids=[device] if device.type == "cuda" else None, broadcast_buffers=False
        )
    if compile:
        net = torch.compile(net)
    if net is not model:
        net = _Replica(model, net)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=config.betas, eps=config.eps)
    factor = config.lr_factor(d_model)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: noam_lr(s + 1, d_model, config.warmup, factor))
    amp_ctx, amp_dtype = amp_context(device, config.amp)
    scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)

    result, epoch, skip = TrainResult(), 0, 0
    ckpt = out / CHECKPOINT if out is not None else None
    model_config = model.config.to_dict() if hasattr(model.config, "to_dict") else None
    state = _load_checkpoint(ckpt, config, model_config, dp) if resume and ckpt is not None else None
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        result = TrainResult(**state["result"])
        epoch, skip = state["epoch"], state["batch"]
        rng = _rank_rng_state(state, dp)
        if rng is not None:
            _set_rng_state(rng, device)
        log(f"resumed from {ckpt} at step {result.steps} ({result.minutes:.1f} min)")
        del state

    budget_s = None if config.minutes is None else config.minutes * 60.0
    eval_every_s = config.eval_every_minutes * 60.0
    next_eval = (math.floor(result.minutes * 60.0 / eval_every_s) + 1) * eval_every_s
    snapshots = [m for m in config.snapshot_minutes if m * 60.0 > result.minutes * 60.0]
    train_s = result.minutes * 60.0
    running_loss, running_n = 0.0, 0
    position = 0  # batches of the current epoch consumed so far

    def budget_spent() -> str:
        if budget_s is not None and train_s >= budget_s:
            return "minutes"
        if config.max_steps is not None and result.steps >= config.max_steps:
            return "max_steps"
        return ""

    def save_checkpoint() -> None:
        rng = _rng_state(device)
        if dp.distributed:  # every rank's generators, so that each rank resumes its own dropout stream
            rng_ranks: list[Any] = [None] * dp.world_size
            dist.all_gather_object(rng_ranks, rng)
        if not dp.is_main:
            return
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "result": asdict(result),
            "epoch": epoch,
            "batch": position,
            "train_config": config.to_dict(),
            "model_config": model_config,
            "rng": rng,
        }
        if dp.distributed:
            state.update(rng_ranks=rng_ranks, world_size=dp.world_size)
        atomic_torch_save(state, ckpt)

    def validate() -> None:
        nonlocal running_loss, running_n
        val = float("nan")
        if evaluate is not None and dp.is_main:
            model.eval()
            with torch.no_grad():
                val = float(evaluate(model))
            model.train()
        entry = dict(
            step=result.steps,
            minutes=round(train_s / 60.0, 4),
            train_loss=running_loss / max(running_n, 1),
            val_loss=val,
            lr=scheduler.get_last_lr()[0],
            tokens=result.tokens,
        )
        result.history.append(entry)
        running_loss, running_n = 0.0, 0
        log(
            f"step {entry['step']:6d} | {entry['minutes']:6.2f} min | train {entry['train_loss']:.3f} | "
            f"val {val:.3f} | lr {entry['lr']:.2e}"
        )
        if ckpt is not None:
            save_checkpoint()

    total = budget_s if budget_s is not None else config.max_steps
    bar = tqdm(
        total=total,
        disable=not progress,
        unit="s" if budget_s is not None else "step",
        bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} [{elapsed}<{remaining}]{postfix}",
    )
    bar.update(train_s if budget_s is not None else result.steps)
    stop = _DeferredInterrupt()
    ahead = device.type == "cuda" if prefetch is None else prefetch
    with stop, _Epochs(batches, ahead) as epochs:
        while not budget_spent():
            seen = 0
            for position, batch in enumerate(epochs(epoch)):
                seen += 1
                if position < skip:  # resuming inside this epoch: these batches were trained on already
                    continue
                if budget_spent():
                    break
                start = time.perf_counter()
                tokens = getattr(batch, "num_tokens", 0)  # of the global batch
                if dp.distributed:
                    batch, share = shard_batch(batch, dp.rank, dp.world_size)
                batch = _to_device(batch, device)
                with amp_ctx:
                    loss = loss_fn(net, batch)
                optimizer.zero_grad(set_to_none=True)
                if dp.distributed:  # DDP divides the summed gradients by world_size: Σ_rank share · ∇loss remains
                    scaler.scale(loss * (share * dp.world_size)).backward()
                else:
                    scaler.scale(loss).backward()
                if config.clip_norm is not None:
                    scaler.unscale_(optimizer)
                    nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                if device.type == "cuda":
                    torch.cuda.synchronize()
                step_s = time.perf_counter() - start
                if dp.distributed:  # the ranks agree on the batch's loss, on the clock, and on Ctrl-C
                    loss_value, step_s, interrupted = _agree(loss, share, step_s, stop.requested, dp.world_size)
                else:
                    loss_value, interrupted = loss.item(), stop.requested
                train_s += step_s
                result.steps += 1
                result.tokens += tokens
                result.minutes = train_s / 60.0
                position += 1
                running_loss += loss_value
                running_n += 1
                bar.update(min(step_s, max(budget_s - bar.n, 0.0)) if budget_s is not None else 1)
                bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
                if interrupted:  # Ctrl-C: finish this step, save, then stop
                    if ckpt is not None:
                        save_checkpoint()
                    bar.close()
                    raise TrainingInterrupted(result.steps, ckpt)
                while snapshots and train_s >= snapshots[0] * 60.0:
                    m = snapshots.pop(0)
                    if out is not None and dp.is_main:
                        atomic_torch_save(model.state_dict(), out / f"model_{m:g}min.pt")
                if config.eval_every_steps is not None:
                    if result.steps % config.eval_every_steps == 0:
                        validate()
                elif train_s >= next_eval:
                    validate()
                    next_eval += eval_every_s
            else:
                if seen == 0:
                    raise ValueError(f"batches({epoch}) gave no batches: there is nothing to train on")
                epoch, skip, position = epoch + 1, 0, 0
    bar.close()
    result.stopped_by = budget_spent()
    if not result.history or result.history[-1]["step"] != result.steps:
        validate()
    model.eval()
    if memo is not None:
        memo.save(model, result, lines, device)
    return result
