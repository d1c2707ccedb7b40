"""The book's one training loop, :func:`train`: the step of the paper's recipe, repeated until a budget is spent.

Each optimiser step: ``loss = loss_fn(model, batch)``, backward, clip the gradient norm, an Adam step, a step of
the warm-up schedule (``lib.training.recipe``). Around it, what a run on a real machine needs, each in its own
module: the device and mixed precision (``device``), data parallelism (``distributed``), checkpoints, random
states and Ctrl-C (``resume``), the budget, history and progress bar (``progress``) and the kept runs (``memo``).

Data parallelism: when ``torch.distributed`` is initialised (``torchrun``, see
:func:`lib.training.distributed.setup_distributed`), every process iterates over the same global batches and
trains on its block of each one (:func:`lib.training.distributed.shard_batch`); ``DistributedDataParallel``
averages the gradients, and each block's loss is scaled by its share of the batch's tokens times the number of
processes, so the averaged gradient is the gradient of the whole batch's mean loss: the same update as one
process over the whole batch. Every rank keeps a full copy of the model and of Adam's moments; rank 0 alone
validates, logs and writes files, the others' history has NaN for ``val_loss``. Each rank's dropout draws from
its own seed, ``config.seed + rank``.

Kept runs: when the environment variable ``ATTENTION_BOOK_TRAIN_CACHE`` (:data:`TRAIN_CACHE_ENV`) names a
folder, a step-budgeted run without ``out_dir`` (and without compilation or data parallelism) is kept there when
it ends, and a later call with the same model, batches, settings, functions and library code restores it
(weights, result, random states, log lines) instead of training again (``lib.training.memo``). The test suite
uses it; unset, every call trains.

Source: Vaswani et al. 2017, §5.3 (Adam, Eq. (3)) and §5.4 (regularisation).
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR

from ..data import Batch
from .device import amp_context, model_device, to_device
from .distributed import Replica, ranks
from .memo import TrainMemo
from .progress import Progress
from .recipe import TrainConfig, TrainResult, noam_lr, seq2seq_loss
from .resume import Checkpoint, DeferredInterrupt, TrainingDiverged

__all__ = ["TRAIN_CACHE_ENV", "train"]

#: Environment variable naming a folder in which :func:`train` keeps the runs it finished, to hand them back when
#: called again with the same model, batches, settings and library code (``lib.training.memo``). Unset, the
#: default for readers, every call trains. The test suite sets it so that the student edition, executed after the
#: chapters, does not train the chapters' models a second time.
TRAIN_CACHE_ENV = "ATTENTION_BOOK_TRAIN_CACHE"


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

    Every ``eval_every_steps`` steps (or ``eval_every_minutes``) and at the end, ``evaluate(model)`` runs in eval
    mode without gradients, and a history entry, a log line and (with ``out_dir``) the resume checkpoint are
    written. Data parallelism under ``torchrun`` and kept runs (:data:`TRAIN_CACHE_ENV`): see the module.

    Args:
        model: the model (trained in place); its ``config.d_model`` scales the schedule.
        batches: ``batches(epoch) -> iterable of batches`` for epoch 0, 1, 2, … (e.g. ``translation_batches``).
        config: a :class:`TrainConfig` (budget, schedule, clipping, seed).
        loss_fn: ``loss_fn(model, batch) -> scalar tensor``; default :func:`seq2seq_loss` with ``config``'s ε_ls.
        evaluate: ``evaluate(model) -> float``, the history's ``val_loss``; None = no validation (NaN).
        out_dir: where to write ``checkpoint.pt`` and the snapshots ``model_{m}min.pt``; None = nowhere.
        resume: continue from ``out_dir/checkpoint.pt`` if it exists, at the same batch, random states restored.
        device: where to train; default: where the model is.
        progress: show a tqdm progress bar.
        log: called with one line of text per validation.
        compile: run the forward through ``torch.compile`` (the saved weights keep the model's own names).
        prefetch: build the next epoch's batches in a background thread; default: on CUDA. Same run either way.

    Returns:
        A :class:`TrainResult` with the history.

    Raises:
        ValueError: resume without out_dir; a model without ``config.d_model``; resuming with other settings than
            the checkpoint's (only the budget and the validation interval may change); an epoch with no batches;
            a :class:`lib.data.Batch` whose targets are all padding.
        TrainingInterrupted: Ctrl-C or SIGTERM, after the step under way and, with ``out_dir``, the checkpoint
            are done.
        TrainingDiverged: the loss or the gradient norm became NaN or infinite (the message names the step and
            the learning rate); no checkpoint or snapshot with non-finite weights is written.

    Source: Vaswani et al. 2017, §5.3 (Adam, Eq. (3)) and §5.4 (regularisation).
    """
    d_model, device = _checked(model, out_dir, resume, device)
    loss_fn = partial(seq2seq_loss, label_smoothing=config.label_smoothing) if loss_fn is None else loss_fn
    dp = ranks()
    log = log if dp.is_main else _quiet
    keep = os.environ.get(TRAIN_CACHE_ENV) if out_dir is None and not compile and not dp.distributed else None
    memo = TrainMemo.open(keep, model, batches, config, (loss_fn, evaluate), device, log)
    if memo.kept is not None:  # this very run was kept: restored, not trained again
        return memo.kept
    checkpoint = Checkpoint(out_dir, config, model, dp, device)
    random.seed(config.seed)
    torch.manual_seed(config.seed + dp.rank)
    model.to(device).train()
    replica = Replica(model, device, dp, compile)  # what loss_fn calls, this rank's share of each batch
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=config.betas, eps=config.eps)
    factor = config.lr_factor(d_model)
    scheduler = LambdaLR(optimizer, lambda s: noam_lr(s + 1, d_model, config.warmup, factor))
    amp, amp_dtype = amp_context(device, config.amp)
    scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)  # loss scaling for fp16 only
    saved = checkpoint.load() if resume else None  # None: a new run; else this rank's random states are restored
    run = Progress(model, optimizer, scheduler, config, evaluate, checkpoint, memo.log, progress, dp.is_main, saved)
    with DeferredInterrupt() as stop, _Epochs(batches, prefetch, device) as epochs, run:
        while not run.spent():
            for batch in epochs(run.epoch, start=run.batch):
                if run.spent():
                    break
                start = time.perf_counter()
                tokens = _target_tokens(batch)  # of the global batch
                batch, share = replica.shard(batch)
                batch = to_device(batch, device)
                with amp:
                    loss = loss_fn(replica.net, batch)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(replica.weigh(loss, share)).backward()
                if config.clip_norm is not None:
                    scaler.unscale_(optimizer)
                    norm = float(nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm))
                    if not math.isfinite(norm) and not scaler.is_enabled():  # fp16's scaler skips such steps
                        raise TrainingDiverged(run.result.steps + 1, "gradient norm", norm, config.peak_lr)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                if device.type == "cuda":
                    torch.cuda.synchronize()
                loss_value, step_s, interrupted = replica.agree(
                    loss, share, time.perf_counter() - start, stop.requested
                )
                if not math.isfinite(loss_value):  # the same on every rank: agreed by all
                    raise TrainingDiverged(run.result.steps + 1, "loss", loss_value, config.peak_lr)
                run.count(loss_value, step_s, tokens)
                if interrupted:  # Ctrl-C: this step is done; save the checkpoint and stop
                    raise run.interrupted()
                run.after_step()  # the snapshots and the validation whose time has come
            else:
                run.next_epoch()
    result = run.finish()  # the last validation, unless the last step had one
    model.eval()
    memo.save(model, result, device)
    return result


def _checked(
    model: nn.Module, out_dir: str | Path | None, resume: bool, device: torch.device | str | None
) -> tuple[int, torch.device]:
    """:func:`train`'s checks of its arguments, once at its entry: the width that scales the schedule, and the
    device to train on."""
    if resume and out_dir is None:
        raise ValueError("resume=True needs out_dir")
    d_model = getattr(getattr(model, "config", None), "d_model", None)
    if not isinstance(d_model, int) or d_model < 1:
        raise ValueError("model.config.d_model must be a positive int: the learning-rate schedule is scaled by it")
    return d_model, model_device(model) if device is None else torch.device(device)


def _target_tokens(batch: Any) -> int:
    """The batch's target tokens (0 for a batch that does not count them), computed where the batch is, before it
    moves to the device; a :class:`lib.data.Batch` without any is refused: its mean loss would be 0/0."""
    tokens = getattr(batch, "num_tokens", 0)
    if isinstance(batch, Batch) and tokens == 0:
        raise ValueError(
            f"a batch's targets are all padding (pad_id {batch.pad_id}): there is no target token to score"
        )
    return tokens


class _Epochs:
    """``batches(epoch)`` for the loop; with ``prefetch`` (default: on CUDA), a thread builds epoch e + 1 as e trains.

    Building an epoch (bucketing, padding, shuffling) takes about a second for Multi30k: nothing on a CPU, where
    an epoch trains for minutes, but on a GPU with large batches an epoch trains in seconds and the GPU would
    wait. The batches are the same either way (``batches`` is a function of the epoch); a context manager, so
    that the thread is let go whatever ends the loop.
    """

    def __init__(self, batches: Callable[[int], Iterable[Any]], prefetch: bool | None, device: torch.device) -> None:
        self.batches = batches
        ahead = device.type == "cuda" if prefetch is None else prefetch
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="next-epoch") if ahead else None
        self.pending: tuple[int, Future] | None = None

    def __call__(self, epoch: int, start: int = 0) -> Iterator[Any]:
        """Epoch ``epoch``'s batches from the ``start``-th on (a resumed run trained on those before)."""
        if self.pending is not None and self.pending[0] == epoch:
            current = self.pending[1].result()
        else:
            current = self.batches(epoch)
        if self.pool is not None:
            self.pending = (epoch + 1, self.pool.submit(lambda: list(self.batches(epoch + 1))))
        return _from(current, start, epoch)

    def __enter__(self) -> _Epochs:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def _from(batches: Iterable[Any], start: int, epoch: int) -> Iterator[Any]:
    """The batches from the ``start``-th on (those before are drawn and passed over); an epoch without any is an
    error."""
    seen = 0
    for seen, batch in enumerate(batches, 1):
        if seen > start:
            yield batch
    if seen == 0:
        raise ValueError(f"batches({epoch}) gave no batches: there is nothing to train on")


def _quiet(line: str) -> None:
    """The log of ranks other than 0: they print nothing."""
