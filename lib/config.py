"""One base class for the book's configuration dataclasses: conversion to and from JSON, and named presets.

Every config in ``lib`` (``TransformerConfig``, ``Seq2SeqConfig``, ``GPTConfig``, ``BertConfig``,
``TrainConfig``) is a ``@dataclass`` that inherits :class:`Config`, so that a run folder can store it as a
plain dict and read it back, and so that a size can be asked for by name::

    TransformerConfig.preset("multi30k", vocab_size=8000)      # same as TransformerConfig.multi30k(8000)

This module imports nothing from ``lib``: models, training and checkpoints all build on it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

__all__ = ["Config"]

C = TypeVar("C", bound="Config")


class Config:
    """Mixin for configuration dataclasses: ``to_dict``, a strict ``from_dict`` and ``preset``.

    A subclass lists its preset names in the class variable ``PRESETS``; each name is a classmethod that
    builds that configuration (e.g. ``TransformerConfig.tiny``), and in ``SHAPE_FIELDS`` the fields with a
    default that a dict must still give (the sizes of the weights).
    """

    PRESETS: ClassVar[tuple[str, ...]] = ()
    #: Fields that :meth:`from_dict` requires although they have a default: the sizes that fix the shapes of the
    #: weights (a dict without ``d_model`` describes no model; taking the default 512 built another one).
    SHAPE_FIELDS: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (tuples stay tuples; ``json`` writes them as lists).

        Returns:
            ``{field name: value}`` for every dataclass field.
        """
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[C], data: dict[str, Any]) -> C:
        """Rebuild a config from :meth:`to_dict`'s output, refusing fields this class does not know.

        Args:
            data: ``{field name: value}``; fields with a default may be missing, except those in
                ``SHAPE_FIELDS`` (the sizes of the weights).

        Returns:
            The config (its ``__post_init__`` validates the values).

        Raises:
            TypeError: ``data`` is not a dict.
            ValueError: ``data`` names a field the class does not have, or lacks one without a default or one
                of ``SHAPE_FIELDS`` (the message names them), or a value fails the class's own validation.
        """
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_dict needs a dict, got {type(data).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ValueError(f"{cls.__name__} has no field(s) {unknown}; known fields: {sorted(fields)}")
        required = [
            name
            for name, f in fields.items()
            if (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.init)
            or name in cls.SHAPE_FIELDS
        ]
        missing = [name for name in required if name not in data]
        if missing:
            raise ValueError(f"{cls.__name__} needs field(s) {missing}, which the dict lacks")
        return cls(**data)

    @classmethod
    def preset(cls: type[C], name: str, *args: Any, **overrides: Any) -> C:
        """The named preset, e.g. ``TransformerConfig.preset("tiny", 100)``; ValueError for a name not in PRESETS."""
        if name not in cls.PRESETS:
            raise ValueError(f"unknown preset {name!r} for {cls.__name__}; choose one of {list(cls.PRESETS)}")
        return getattr(cls, name)(*args, **overrides)
