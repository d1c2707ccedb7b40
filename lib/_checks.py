"""The argument checks that the models and the code above them share: integers, and the fields of a model config.

A leaf: it imports nothing from ``lib``, so every layer may use it. The messages name the argument and the value
expected (the book's rule for bad input): ``TypeError`` for a value of the wrong type (a bool is not an int,
though Python says it is), ``ValueError`` for one out of range.
"""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["check_int", "positive_int", "check_model_config"]


def check_int(value: object, name: str, minimum: int | None = None) -> int:
    """``value`` as an int, at least ``minimum`` if one is given.

    Args:
        value: the argument to check.
        name: its name, for the message.
        minimum: the smallest value allowed; None = any int.

    Returns:
        ``int(value)``.

    Raises:
        TypeError: value is a bool, a float (NaN included), a str or anything else that is not an integer.
        ValueError: value < minimum.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


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
