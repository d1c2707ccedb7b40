"""The bookkeeping of a training run between optimiser steps: budget, history, progress bar, snapshots.

Infrastructure of ``lib.training.train``: the loop takes a step, then tells :class:`Progress`, which counts it,
and validates, logs and saves when their time has come.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from .recipe import TrainConfig, TrainResult
from .resume import Checkpoint, TrainingInterrupted

__all__ = ["Progress"]


class Progress:
    """Where a run stands: steps, tokens and training time (validation excluded) against the budget, the position
    in the batches, the running training loss, the progress bar; and what is due after a step: snapshots at
    given minutes, and validations, each writing a history entry, a log line and the resume checkpoint.

    Args:
        model: the model being trained.
        optimizer: its optimiser.
        scheduler: the learning-rate schedule.
        config: the run's settings (budget, validation interval, snapshot minutes).
        evaluate: ``evaluate(model) -> float``, the history's ``val_loss``; None gives NaN.
        checkpoint: the run folder.
        log: called with one line per validation.
        bar: show a tqdm progress bar (on rank 0).
        rank0: whether this process validates and shows the bar (under data parallelism the others record NaN).
        saved: a resumed run's checkpoint (:meth:`Checkpoint.load`), whose model, optimiser and schedule states
            are loaded here, or None for a new run.

    Attributes:
        result: the run's :class:`TrainResult`, filled in as it trains.
        epoch: the current epoch.
        batch: the number of that epoch's batches consumed.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler: Any,
        config: TrainConfig,
        evaluate: Callable[[nn.Module], float] | None,
        checkpoint: Checkpoint,
        log: Callable[[str], Any],
        bar: bool,
        rank0: bool,
        saved: dict | None = None,
    ) -> None:
        self.model, self.optimizer, self.scheduler, self.config = model, optimizer, scheduler, config
        self.evaluate, self.checkpoint, self.log, self.rank0 = evaluate, checkpoint, log, rank0
        self.result, self.epoch, self.batch = TrainResult(), 0, 0
        if saved is not None:
            model.load_state_dict(saved.pop("model"))
            optimizer.load_state_dict(saved.pop("optimizer"))
            scheduler.load_state_dict(saved.pop("scheduler"))
            self.result, self.epoch, self.batch = TrainResult(**saved["result"]), saved["epoch"], saved["batch"]
            log(f"resumed from {checkpoint.path} at step {self.result.steps} ({self.result.minutes:.1f} min)")
        self.budget_s = None if config.minutes is None else config.minutes * 60.0
        self.eval_every_s = config.eval_every_minutes * 60.0
        self.next_eval = (math.floor(self.result.minutes * 60.0 / self.eval_every_s) + 1) * self.eval_every_s
        self.snapshots = [m for m in config.snapshot_minutes if m * 60.0 > self.result.minutes * 60.0]
        self.train_s = self.result.minutes * 60.0
        self.running_loss, self.running_n = 0.0, 0
        self.bar = tqdm(
            total=self.budget_s if self.budget_s is not None else config.max_steps,
            disable=not (bar and rank0),
            unit="s" if self.budget_s is not None else "step",
            bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} [{elapsed}<{remaining}]{postfix}",
        )
        self.bar.update(self.train_s if self.budget_s is not None else self.result.steps)

    def spent(self) -> str:
        """The budget that is spent: ``"minutes"``, ``"max_steps"``, or ``""`` while neither is.

        Returns:
            The name of the spent budget, or ``""``.
        """
        if self.budget_s is not None and self.train_s >= self.budget_s:
            return "minutes"
        if self.config.max_steps is not None and self.result.steps >= self.config.max_steps:
            return "max_steps"
        return ""

    def count(self, loss: float, step_s: float, tokens: int) -> None:
        """Count a step: its training loss, seconds and target tokens; one batch of the epoch consumed.

        Args:
            loss: the step's loss (of the whole batch).
            step_s: the step's seconds.
            tokens: the batch's target tokens.
        """
        self.train_s += step_s
        self.result.steps += 1
        self.result.tokens += tokens
        self.result.minutes = self.train_s / 60.0
        self.batch += 1
        self.running_loss += loss
        self.running_n += 1
        self.bar.update(min(step_s, max(self.budget_s - self.bar.n, 0.0)) if self.budget_s is not None else 1)
        self.bar.set_postfix(loss=f"{loss:.3f}", refresh=False)

    def after_step(self) -> None:
        """Save the snapshots and run the validation whose time has come."""
        while self.snapshots and self.train_s >= self.snapshots[0] * 60.0:
            self.checkpoint.snapshot(self.model, self.snapshots.pop(0), self.result.steps)
        if self.config.eval_every_steps is not None:
            if self.result.steps % self.config.eval_every_steps == 0:
                self.validate()
        elif self.train_s >= self.next_eval:
            self.validate()
            self.next_eval += self.eval_every_s

    def next_epoch(self) -> None:
        """The epoch's batches are all consumed: on to the first batch of the next epoch."""
        self.epoch, self.batch = self.epoch + 1, 0

    def validate(self) -> None:
        """Evaluate (rank 0, eval mode, no gradients), append a history entry, log it, save the checkpoint."""
        val = float("nan")
        if self.evaluate is not None and self.rank0:
            self.model.eval()
            with torch.no_grad():
                val = float(self.evaluate(self.model))
            self.model.train()
        entry = dict(
            step=self.result.steps,
            minutes=round(self.train_s / 60.0, 4),
            train_loss=self.running_loss / max(self.running_n, 1),
            val_loss=val,
            lr=self.scheduler.get_last_lr()[0],
            tokens=self.result.tokens,
        )
        self.result.history.append(entry)
        self.running_loss, self.running_n = 0.0, 0
        self.log(
            f"step {entry['step']:6d} | {entry['minutes']:6.2f} min | train {entry['train_loss']:.3f} | "
            f"val {val:.3f} | lr {entry['lr']:.2e}"
        )
        self._save()

    def interrupted(self) -> TrainingInterrupted:
        """Ctrl-C after a whole step: save the checkpoint, close the bar.

        Returns:
            The :class:`TrainingInterrupted` for the loop to raise.
        """
        self._save()
        self.bar.close()
        return TrainingInterrupted(self.result.steps, self.checkpoint.path)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:  # an error stops training: the bar's last line must not follow its message
            self.bar.close()

    def finish(self) -> TrainResult:
        """Close the bar, name the budget that ended the run, and validate unless the last step just did.

        Returns:
            The run's :class:`TrainResult`.
        """
        self.bar.close()
        self.result.stopped_by = self.spent()
        if not self.result.history or self.result.history[-1]["step"] != self.result.steps:
            self.validate()
        return self.result

    def _save(self) -> None:
        if self.checkpoint.path is not None:
            state = {
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "result": asdict(self.result),
                "epoch": self.epoch,
                "batch": self.batch,
            }
            self.checkpoint.save(state)
