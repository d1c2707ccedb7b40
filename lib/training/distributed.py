"""Data parallelism: N processes, one model copy each, the same update as one process over the whole batch.

Started by ``torchrun --nproc_per_node N -m lib.train ...``, each of the N processes joins the run
(:func:`setup_distributed`), builds the same global batches, trains on its own block of each batch's rows
(:func:`shard_batch`), and torch's ``DistributedDataParallel`` averages the gradients, weighted so that the
update equals one process's update over the whole batch. Rank 0 alone writes files and logs. Without
``torchrun`` nothing of this runs: :class:`Replica` is then the model itself and the loop is the one-process loop.

Infrastructure of ``lib.training.train``; no chapter displays it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from ..data import Batch

__all__ = ["Ranks", "ranks", "setup_distributed", "shard_batch", "Replica"]


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


class _Forward:
    """What ``loss_fn`` receives under data parallelism or ``torch.compile``: calling it runs the wrapper's
    forward (which prepares the gradient all-reduce, or runs the compiled graph); every other attribute is the
    model's own (``config``, ``mlm_loss``, …), so loss functions written for the bare model work unchanged."""

    def __init__(self, model: nn.Module, forward: Callable[..., Any]) -> None:
        self._model, self._forward = model, forward

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._forward(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


class Replica:
    """This process's copy of the model: what ``loss_fn`` calls, this rank's block of each batch, and one
    agreement of the ranks per step. In a one-process run it is the model itself and each method a no-op.

    Args:
        model: the model, on ``device``.
        device: the training device.
        ranks: this process's place in the run (:func:`ranks`).
        compile: run the forward through ``torch.compile``.

    Attributes:
        net: what ``loss_fn`` receives: the model, or its data-parallel and/or compiled wrapper (whose other
            attributes are the model's own).
    """

    def __init__(self, model: nn.Module, device: torch.device, ranks: Ranks, compile: bool = False) -> None:
        self.ranks = ranks
        net: Any = model
        if ranks.distributed:
            net = DistributedDataParallel(
                model, device_ids=[device] if device.type == "cuda" else None, broadcast_buffers=False
            )
        if compile:
            net = torch.compile(net)
        self.net = net if net is model else _Forward(model, net)

    @property
    def rank0(self) -> bool:
        """True on rank 0, the one process that validates, logs and writes files."""
        return self.ranks.is_main

    def shard(self, batch: Any) -> tuple[Any, float]:
        """This rank's block of the global batch and its share of the batch's loss (see :func:`shard_batch`).

        Args:
            batch: the global batch.

        Returns:
            ``(block, share)``; in a one-process run ``(batch, 1.0)``.
        """
        if not self.ranks.distributed:
            return batch, 1.0
        return shard_batch(batch, self.ranks.rank, self.ranks.world_size)

    def weigh(self, loss: Tensor, share: float) -> Tensor:
        """The loss to differentiate: DDP divides the summed gradients by world_size, so the block's loss is
        scaled by share · world_size and Σ_rank share · ∇loss remains.

        Args:
            loss: the mean loss of this rank's block.
            share: the block's share of the batch (:meth:`shard`).

        Returns:
            The scaled loss; in a one-process run ``loss`` itself.
        """
        return loss * (share * self.ranks.world_size) if self.ranks.distributed else loss

    def agree(self, loss: Tensor, share: float, step_s: float, stop: bool) -> tuple[float, float, bool]:
        """One all-reduce per step so that every rank takes the same decisions: the global batch's mean loss
        (Σ share · block loss), the mean step time (the minutes budget and validation times), and whether any
        rank got Ctrl-C.

        Args:
            loss: the mean loss of this rank's block.
            share: the block's share of the batch.
            step_s: this rank's seconds for the step.
            stop: whether this rank got Ctrl-C.

        Returns:
            ``(loss, seconds, stop)`` agreed by all ranks; in a one-process run ``(loss.item(), step_s, stop)``.
        """
        if not self.ranks.distributed:
            return loss.item(), step_s, stop
        world_size = self.ranks.world_size
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
