"""Where training runs: the device, TensorFloat-32, mixed precision, and moving a batch there.

Infrastructure of ``lib.training.train``: none of it changes the recipe, only where and in which precision
its arithmetic runs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ..data import Batch

__all__ = ["select_device", "enable_tf32", "amp_context", "model_device", "to_device"]


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


def amp_context(device: torch.device, enabled: bool = True) -> tuple[Any, torch.dtype | None]:
    """Mixed precision on CUDA: autocast to bf16 where supported, else fp16 (with loss scaling in ``train``).

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


def model_device(model: nn.Module) -> torch.device:
    """The device of the model's first parameter (the CPU for a model without parameters).

    Args:
        model: any module.

    Returns:
        A ``torch.device``.
    """
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


def to_device(batch: Any, device: torch.device) -> Any:
    """``batch`` on ``device``: a tensor, a tuple of tensors or anything with ``.to``; other batches as they are.

    On CUDA a :class:`lib.data.Batch` or a tensor goes through pinned (page-locked) memory, from which the copy
    is asynchronous: the CPU runs ahead while it is under way.

    Args:
        batch: a batch as ``batches(epoch)`` gave it.
        device: the training device.

    Returns:
        The batch on ``device`` (lists of token ids unchanged: the loss function builds its tensors).
    """
    if device.type == "cuda":  # from pinned (page-locked) memory the copy is asynchronous: the CPU runs ahead
        if isinstance(batch, Batch):
            return Batch(*(_pinned_to(t, device) for t in (batch.src, batch.tgt_in, batch.tgt_out)), batch.pad_id)
        if isinstance(batch, Tensor):
            return _pinned_to(batch, device)
    if isinstance(batch, Tensor) or hasattr(batch, "to"):
        return batch.to(device)
    if isinstance(batch, tuple) and all(isinstance(x, Tensor) for x in batch):
        return tuple(to_device(x, device) for x in batch)
    return batch  # e.g. lists of token ids: the loss function builds its tensors


def _pinned_to(x: Tensor, device: torch.device) -> Tensor:
    if x.device.type == "cpu" and not x.is_pinned():
        x = x.pin_memory()
    return x.to(device, non_blocking=True)
