"""Resuming exactly: the run folder's checkpoint, every random state, and Ctrl-C or SIGTERM after a whole step.

A checkpoint holds the weights, Adam's moments, the schedule's step, the history, the position in the batches
(epoch and batch) and the random states of Python, torch's CPU generator and the training device's own
generator (of every rank, under data parallelism), so that a resumed run repeats the uninterrupted one.

Infrastructure of ``lib.training.train``; no chapter displays it.
"""

from __future__ import annotations

import random
import signal
import threading
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from ..files import atomic_torch_save
from .distributed import Ranks
from .recipe import TrainConfig

__all__ = [
    "CHECKPOINT",
    "RESUMABLE_CHANGES",
    "TrainingInterrupted",
    "TrainingDiverged",
    "Checkpoint",
    "DeferredInterrupt",
    "rng_state",
    "set_rng_state",
]

#: Name of the resume checkpoint inside a run folder.
CHECKPOINT = "checkpoint.pt"

#: Settings that may change when a run is resumed: the budget and how often to validate. Any other change
#: (learning rate, batch size, seed, …) would make the resumed run a different run, so resuming refuses it.
RESUMABLE_CHANGES = frozenset({"minutes", "max_steps", "snapshot_minutes", "eval_every_minutes", "eval_every_steps"})


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped ``train`` after a whole optimiser step; the resume checkpoint, if any, is saved.

    Args:
        steps: optimiser steps completed.
        checkpoint: the saved ``checkpoint.pt``, or None when the run had no ``out_dir``.
    """

    def __init__(self, steps: int, checkpoint: Path | None) -> None:
        self.steps, self.checkpoint = steps, checkpoint
        where = f"; checkpoint saved to {checkpoint}" if checkpoint is not None else " (no out_dir: nothing saved)"
        super().__init__(f"training interrupted after {steps} steps{where}")


class TrainingDiverged(ArithmeticError):
    """The loss, the gradient or the weights became NaN or infinite: training stops and saves nothing more.

    Args:
        step: the optimiser step at which it was seen (1 = the first).
        what: what was not finite (e.g. ``"loss"``, ``"gradient norm"``).
        value: its value.
        peak_lr: the schedule's peak learning rate, the likely cause.
    """

    def __init__(self, step: int, what: str, value: float, peak_lr: float) -> None:
        self.step, self.what, self.value = step, what, value
        super().__init__(
            f"training diverged at step {step}: the {what} is {value} (not finite); the likely cause is a learning "
            f"rate too high (peak_lr {peak_lr:g}): lower it or lengthen the warm-up. Nothing of the diverged run "
            "was saved (a checkpoint saved before, if any, is intact)"
        )


def _finite(state: dict) -> bool:
    """Whether every floating-point tensor of a state dict is finite."""
    return all(bool(torch.isfinite(v).all()) for v in state.values() if torch.is_tensor(v) and v.is_floating_point())


class Checkpoint:
    """The run folder of a training run: the resume checkpoint ``checkpoint.pt`` and the snapshots of the weights.

    Under data parallelism every rank calls :meth:`save` and :meth:`load` at the same steps: rank 0 writes and
    reads the files, the other ranks send their random states to it and receive the checkpoint from it (they
    need not see rank 0's disk). Without a folder, nothing is saved.

    Args:
        out_dir: the run folder (rank 0 creates it), or None.
        config: the run's settings, recorded in the checkpoint and compared on resume.
        model: the model, whose ``config.to_dict()`` (if it has one) is recorded and compared too.
        ranks: this process's place in the run.
        device: the training device, whose random generator is saved and restored.

    Attributes:
        path: the checkpoint file, or None without a folder.
    """

    def __init__(
        self, out_dir: str | Path | None, config: TrainConfig, model: nn.Module, ranks: Ranks, device: torch.device
    ) -> None:
        self.folder = Path(out_dir) if out_dir is not None else None
        self.path = self.folder / CHECKPOINT if self.folder is not None else None
        self.config, self.ranks, self.device = config, ranks, device
        self.model_config = model.config.to_dict() if hasattr(model.config, "to_dict") else None
        if self.folder is not None and ranks.is_main:
            self.folder.mkdir(parents=True, exist_ok=True)

    def save(self, state: dict) -> None:
        """Write ``state`` with the settings and every rank's random states to :attr:`path` (atomically).

        Args:
            state: the loop's state: ``model``, ``optimizer`` and ``scheduler`` state dicts, ``result`` (a dict),
                ``epoch`` and ``batch`` (the batches of that epoch consumed).

        Raises:
            TrainingDiverged: a weight is NaN or infinite (the checkpoint on disk is left as it was).
        """
        if self.path is None:
            return
        if not _finite(state["model"]):  # the previous checkpoint, if any, stays: it is the last good one
            raise TrainingDiverged(state["result"]["steps"], "model's weights", float("nan"), self.config.peak_lr)
        rng = rng_state(self.device)
        if self.ranks.distributed:  # every rank's generators, so that each rank resumes its own dropout stream
            rng_ranks: list[Any] = [None] * self.ranks.world_size
            dist.all_gather_object(rng_ranks, rng)
        if not self.ranks.is_main:
            return
        state = {**state, "train_config": self.config.to_dict(), "model_config": self.model_config, "rng": rng}
        if self.ranks.distributed:
            state.update(rng_ranks=rng_ranks, world_size=self.ranks.world_size)
        atomic_torch_save(state, self.path)

    def load(self) -> dict | None:
        """The saved state, with this rank's random states already restored; None when there is no checkpoint.

        Returns:
            The dict :meth:`save` wrote, or None.

        Raises:
            ValueError: the checkpoint was written with other settings or another model (only the budget and the
                validation interval may change), or cannot be read (truncated or damaged); on every rank.
        """
        state, error = None, None
        if self.path is not None and self.ranks.is_main and self.path.exists():
            try:  # random states stay on the CPU
                state = torch.load(self.path, map_location="cpu", weights_only=True)
            except Exception as err:  # a truncated or damaged file: torch's zip reader, pickle or EOF errors
                reason = str(err).split(". ")[0].strip()[:120]
                error = (
                    f"{self.path}: not a readable checkpoint, truncated or damaged ({type(err).__name__}: {reason}); "
                    "delete it to train from the start, or resume from a copy"
                )
            else:
                try:
                    _check_resumable(state, self.config, self.model_config, self.path)
                except ValueError as err:
                    state, error = None, str(err)
        if self.ranks.distributed:
            box = [(state, error)]
            dist.broadcast_object_list(box, src=0)
            state, error = box[0]
        if error is not None:
            raise ValueError(error)
        if state is not None:
            rng = _rank_rng_state(state, self.ranks)
            if rng is not None:
                set_rng_state(rng, self.device, stacklevel=4)
        return state

    def snapshot(self, model: nn.Module, minutes: float, step: int = 0) -> None:
        """Save the model's weights as ``model_{minutes}min.pt`` in the folder (rank 0; nothing without a folder).

        Args:
            model: the model.
            minutes: the training time the snapshot is taken at.
            step: the optimiser steps taken (named by the error when the weights are not finite).

        Raises:
            TrainingDiverged: a weight is NaN or infinite (nothing is written).
        """
        if self.folder is not None and self.ranks.is_main:
            state = model.state_dict()
            if not _finite(state):
                raise TrainingDiverged(step, "model's weights", float("nan"), self.config.peak_lr)
            atomic_torch_save(state, self.folder / f"model_{minutes:g}min.pt")


def rng_state(device: torch.device) -> dict:
    """The random states a resumed run restores: Python's, torch's CPU generator and the training device's own
    generator (dropout on a GPU draws from the GPU's generator, not from the CPU's).

    Args:
        device: the training device.

    Returns:
        ``{"torch": ..., "python": ..., "device": type[, "device_rng": ...]}``.
    """
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "device": device.type}
    if device.type == "cuda":
        state["device_rng"] = torch.cuda.get_rng_state(device)
    elif device.type == "mps":
        state["device_rng"] = torch.mps.get_rng_state()
    return state


def set_rng_state(state: dict, device: torch.device, stacklevel: int = 3) -> None:
    """Restore :func:`rng_state`'s states on ``device``: a device generator only into a device of the same type;
    otherwise a warning says that the resumed run cannot repeat the uninterrupted one exactly.

    Args:
        state: what :func:`rng_state` returned (or a checkpoint of the earlier format, a list of CUDA states).
        device: the training device.
        stacklevel: the warning's ``stacklevel`` (so that it names the caller's line).
    """
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
            stacklevel=stacklevel,
        )


class DeferredInterrupt:
    """Within ``with``, the first Ctrl-C (SIGINT) or SIGTERM (what ``kill``, a job scheduler or a closing session
    sends) only sets ``requested`` (the loop stops after the current step); a second one interrupts at once. Only in
    the main thread (signals go there); elsewhere it does nothing."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> DeferredInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.signal(signum, self._handler) for signum in self.SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}


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


def _rank_rng_state(state: dict, ranks: Ranks) -> dict | None:
    """This rank's saved random states (None for a rank the checkpoint did not have); with another number of
    processes than when saved, a warning."""
    saved_world = state.get("world_size", 1)
    if saved_world != ranks.world_size:
        warnings.warn(
            f"the checkpoint was written by {saved_world} process(es) and is resumed by {ranks.world_size}: the "
            "batches continue exactly, but the dropout streams of the ranks cannot",
            stacklevel=4,
        )
    per_rank = state.get("rng_ranks") or [state["rng"]]
    return per_rank[ranks.rank] if ranks.rank < len(per_rank) else None
