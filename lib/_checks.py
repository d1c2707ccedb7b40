"""The argument checks that the models and the code above them share: ints, model configs, sampling, q/k/v.

A leaf: it imports nothing from ``lib``, so every layer may use it. The messages name the argument and the value
expected (the book's rule for bad input): ``TypeError`` for a value of the wrong type (a bool is not an int,
though Python says it is), ``ValueError`` for one out of range.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "check_int",
    "positive_int",
    "check_model_config",
    "check_sampling",
    "check_new_tokens",
    "check_qkv_tensors",
    "check_probability",
    "check_attention_sizes",
    "check_positional",
    "check_token_ids",
    "check_float_input",
]


def check_int(value: object, name: str, minimum: int | None = None) -> int:
    """``value`` as an int, at least ``minimum`` if given: TypeError for a bool, float or str, ValueError if smaller."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def check_probability(value: object, name: str) -> float:
    """``value``, a probability in [0, 1]: TypeError for a non-number (or a bool), ValueError outside (NaN too)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float in [0, 1], got {value!r} ({type(value).__name__})")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return float(value)


def check_attention_sizes(d_model: object, num_heads: object, num_kv_heads: object, dropout: object) -> None:
    """Multi-head attention's sizes: positive ints, d_model = num_heads · d_k, num_kv_heads | num_heads; a dropout."""
    for name, value in (("d_model", d_model), ("num_heads", num_heads), ("num_kv_heads", num_kv_heads)):
        check_int(value, name, 1)
    check_probability(dropout, "dropout")
    if d_model % num_heads != 0:
        raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads}): d_k = d_model / num_heads")
    if num_heads % num_kv_heads != 0:
        raise ValueError(f"num_kv_heads ({num_kv_heads}) must divide num_heads ({num_heads}): equal groups of heads")


def check_positional(d_model: object, max_len: object, dropout: object) -> None:
    """A positional encoding's sizes: max_len >= 1, d_model a positive even int (sin/cos pairs); a dropout."""
    check_int(max_len, "max_len", 1)
    if check_int(d_model, "d_model", 2) % 2 != 0:
        raise ValueError(f"d_model must be a positive even number (sin/cos pairs), got {d_model}")
    check_probability(dropout, "dropout")


def check_token_ids(ids: Any, name: str, vocab_size: int, max_len: int, offset: int = 0, batch: Any = None) -> None:
    """Token ids: an integer ``(batch, seq_len)`` tensor in [0, vocab_size) whose positions offset … fit max_len."""
    if torch.jit.is_tracing():  # Python-side checks and sizes (see Transformer); under torch.compile ids unread
        raise RuntimeError(f"{name}: lib's models do not support torch.jit.trace; use torch.compile or torch.export")
    if not isinstance(ids, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids (batch, seq_len), got {type(ids).__name__}")
    if ids.dim() != 2 or ids.dtype not in (torch.long, torch.int):
        raise ValueError(f"{name} must be integer token ids (batch, seq_len), got {tuple(ids.shape)} {ids.dtype}")
    if batch is not None and ids.size(0) != batch:
        raise ValueError(f"src and {name} must have the same batch size, got {batch} and {ids.size(0)}")
    if ids.numel() and not torch.compiler.is_compiling() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"{name} holds ids outside [0, vocab_size={vocab_size})")
    if offset + ids.size(1) > max_len:
        raise ValueError(f"{name} has {ids.size(1)} positions from offset {offset}, beyond max_len {max_len}")


def positive_int(value: Any, name: str) -> int:
    """``value``, a positive int (>= 1): a size such as a window, a chunk or a number of features.

    Args:
        value: the argument to check.
        name: its name, for the message.

    Returns:
        ``value``.

    Raises:
        TypeError: value is a bool, a float, a str or anything else that is not an int.
        ValueError: value < 1.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive integer (>= 1), got {value!r} ({type(value).__name__})")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {value!r}")
    return value


def check_model_config(config: Any, sizes: tuple[str, ...], activations: tuple[str, ...] = ()) -> None:
    """The values every language-model config checks: sizes, heads, dropout, padding id and activation.

    Call it from the config's ``__post_init__``, after ``lib.interfaces.check_config_types`` (the types), for a
    config with the fields ``d_model``, ``num_heads``, ``dropout``, ``pad_id`` and ``vocab_size`` (and
    ``activation`` when ``activations`` is given).

    Args:
        config: the config dataclass being built (``lib.bert.BertConfig``, ``lib.gpt.GPTConfig``, ...).
        sizes: the names of its fields that must be positive, in the order they are checked.
        activations: the allowed values of ``config.activation``; () = the config has no such field.

    Raises:
        ValueError: a size < 1; d_model not divisible by num_heads; dropout outside [0, 1); pad_id outside
            [0, vocab_size); an activation not in ``activations``.
    """
    for name in sizes:
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be positive, got {getattr(config, name)}")
    if config.d_model % config.num_heads != 0:
        raise ValueError(f"d_model ({config.d_model}) must be divisible by num_heads ({config.num_heads})")
    if not 0.0 <= config.dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {config.dropout}")
    if not 0 <= config.pad_id < config.vocab_size:
        raise ValueError(f"pad_id must be in [0, vocab_size={config.vocab_size}), got {config.pad_id}")
    if activations and config.activation not in activations:
        raise ValueError(f"activation must be one of {activations}, got {config.activation!r}")


def check_sampling(temperature: object, top_k: object, generator: object) -> None:
    """The sampling arguments of ``lib.gpt.generate`` and ``lib.decode``'s samplers.

    Args:
        temperature: T ≥ 0, finite (0 = greedy).
        top_k: an int ≥ 1, or None.
        generator: a ``torch.Generator``, or None.

    Raises:
        TypeError: temperature not a number; top_k not an int; generator not a ``torch.Generator``.
        ValueError: temperature < 0 or not finite; top_k < 1.
    """
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"temperature must be a number >= 0, got {temperature!r}")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be >= 0 (0 = greedy) and finite, got {temperature}")
    if top_k is not None and check_int(top_k, "top_k") < 1:
        raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")


def check_new_tokens(max_new_tokens: object, eos_id: object) -> None:
    """The length arguments of ``lib.gpt.generate`` and ``lib.decode.generate``.

    Args:
        max_new_tokens: an int ≥ 0.
        eos_id: an int, or None.

    Raises:
        TypeError: max_new_tokens or eos_id not an int.
        ValueError: max_new_tokens < 0.
    """
    if check_int(max_new_tokens, "max_new_tokens") < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if eos_id is not None:
        check_int(eos_id, "eos_id")


def check_qkv_tensors(query: object, key: object, value: object) -> None:
    """Query, key and value are floating-point tensors ``(..., seq, features)`` of one dtype, on one device.

    Only what every attention function needs; how their sizes must fit is the caller's (a broadcast batch, equal
    leading dimensions, self-attention's ``seq_q == seq_k``, ...).

    Args:
        query: ``(..., seq_q, d_k)``.
        key: ``(..., seq_k, d_k)``.
        value: ``(..., seq_k, d_v)``.

    Raises:
        TypeError: query, key or value is not a ``torch.Tensor``.
        ValueError: fewer than 2 dimensions; not floating point; key or value of another dtype or device than query.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() < 2:
            raise ValueError(f"{name} needs at least 2 dimensions (..., seq, features), got shape {tuple(t.shape)}")
        if not t.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    for name, t in (("key", key), ("value", value)):
        if t.dtype != query.dtype or t.device != query.device:
            raise ValueError(
                f"query, key and value must share one dtype and device, got query {query.dtype} on {query.device} "
                f"and {name} {t.dtype} on {t.device}"
            )


def check_float_input(t: Tensor, name: str, expected: torch.dtype) -> None:
    """A floating-point input has the dtype of the module's weights (``expected``), unless autocast mixes them.

    Args:
        t: the input tensor (already known to be floating point).
        name: the argument's name, for the message.
        expected: the weights' dtype.

    Raises:
        ValueError: another dtype outside ``torch.autocast`` (torch would fail deep inside a matmul).
    """
    if t.dtype != expected and not torch.is_autocast_enabled(t.device.type):
        raise ValueError(
            f"{name} must be {expected}, the dtype of the model's weights, got {t.dtype}: convert it with "
            f".to({expected}) (or the model with .to({t.dtype}), or run under torch.autocast)"
        )
