"""The book's one training loop: the paper's recipe (Adam + warm-up, label smoothing) for every model.

    lr(step) = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)

:func:`train` trains any model the book builds, the translation Transformer, the recurrent
encoder–decoders, BERT and GPT: the caller says how to make an epoch's batches and how to turn a batch into
a loss, and the loop owns the rest — Adam with the warm-up schedule, gradient clipping, mixed precision on
CUDA, a step or wall-clock budget, periodic validation, a history, checkpoints it can resume from exactly and
snapshots at given minutes. For translation, :func:`translation_batches` and :func:`seq2seq_loss` (the
default) are the two pieces; the language models of ``lib.lm`` bring their own.

Source: Vaswani et al. (2017), §5.3 (Adam β₁ = 0.9, β₂ = 0.98, ε = 1e-9; Eq. (3) warm-up schedule)
and §5.4 (label smoothing ε_ls = 0.1; dropout).
"""

from __future__ import annotations

import math
import random
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
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
    "select_device",
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
    if isinstance(batch, Tensor) or hasattr(batch, "to"):
        return batch.to(device)
    if isinstance(batch, tuple) and all(isinstance(x, Tensor) for x in batch):
        return tuple(x.to(device) for x in batch)
    return batch  # e.g. lists of token ids: the loss function builds its tensors


def _rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"].cpu())
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


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
) -> TrainResult:
    """Train ``model`` in place until the budget in ``config`` is spent: the book's one training loop.

    Each optimiser step: ``loss = loss_fn(model, batch)`` (under autocast on CUDA), backward, clip the
    gradient norm, an Adam step, a step of the warm-up schedule. Every ``eval_every_steps`` steps (or
    ``eval_every_minutes`` of training time) and at the end, ``evaluate(model)`` runs in eval mode without
    gradients and a history entry is written; with ``out_dir``, a resume checkpoint too.

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

    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    random.seed(config.seed)
    torch.manual_seed(config.seed)

    model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=config.betas, eps=config.eps)
    factor = config.lr_factor(d_model)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: noam_lr(s + 1, d_model, config.warmup, factor))
    amp_ctx, amp_dtype = amp_context(device, config.amp)
    scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)

    result, epoch, skip = TrainResult(), 0, 0
    ckpt = out / CHECKPOINT if out is not None else None
    model_config = model.config.to_dict() if hasattr(model.config, "to_dict") else None
    if resume and ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=True)
        _check_resumable(state, config, model_config, ckpt)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        result = TrainResult(**state["result"])
        epoch, skip = state["epoch"], state["batch"]
        _set_rng_state(state["rng"])
        log(f"resumed from {ckpt} at step {result.steps} ({result.minutes:.1f} min)")

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
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "result": asdict(result),
            "epoch": epoch,
            "batch": position,
            "train_config": config.to_dict(),
            "model_config": model_config,
            "rng": _rng_state(),
        }
        atomic_torch_save(state, ckpt)

    def validate() -> None:
        nonlocal running_loss, running_n
        val = float("nan")
        if evaluate is not None:
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
    with stop:
        while not budget_spent():
            seen = 0
            for position, batch in enumerate(batches(epoch)):
                seen += 1
                if position < skip:  # resuming inside this epoch: these batches were trained on already
                    continue
                if budget_spent():
                    break
                start = time.perf_counter()
                batch = _to_device(batch, device)
                with amp_ctx:
                    loss = loss_fn(model, batch)
                optimizer.zero_grad(set_to_none=True)
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
                train_s += step_s
                result.steps += 1
                result.tokens += getattr(batch, "num_tokens", 0)
                result.minutes = train_s / 60.0
                position += 1
                running_loss += loss.item()
                running_n += 1
                bar.update(min(step_s, max(budget_s - bar.n, 0.0)) if budget_s is not None else 1)
                bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
                if stop.requested:  # Ctrl-C: finish this step, save, then stop
                    if ckpt is not None:
                        save_checkpoint()
                    bar.close()
                    raise TrainingInterrupted(result.steps, ckpt)
                while snapshots and train_s >= snapshots[0] * 60.0:
                    m = snapshots.pop(0)
                    if out is not None:
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
    return result
