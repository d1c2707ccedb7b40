"""What the rest of ``lib`` needs from a model: the attention-maps container and the encoder–decoder protocol.

Every model in the book returns its attention weights in one container, :class:`AttentionMaps`, when asked
with the one keyword ``return_attention=True``:

=====================  =============  ==============  ==============
model                  ``encoder``    ``decoder``     ``cross``
=====================  =============  ==============  ==============
Transformer            every layer    every layer     every layer
Seq2Seq (attention)    –              –               one "layer", one head
Seq2Seq (fixed)        –              –               –
GPT (decoder-only)     –              every layer     –
BERT (encoder-only)    every layer    –               –
=====================  =============  ==============  ==============

Decoding (``lib.decode``), translation (``lib.translate``) and run folders (``lib.checkpoint``) work with
any model that has the methods of :class:`EncoderDecoder`: the Transformer and both recurrent models do.

Every model config checks the types of its fields with :func:`check_config_types` before it checks their
values, so that a hand-edited JSON config (``"d_model": "512"``, ``"norm_first": 1``) fails with a message that
names the field instead of a traceback from inside torch.

This module imports only torch: models import it, and so does everything above them.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from torch import Tensor, nn

__all__ = ["AttentionMaps", "DecoderCache", "ModelConfig", "EncoderDecoder", "check_config_types"]


@dataclass
class AttentionMaps:
    """The attention weights a model computed, one ``(batch, heads, seq_q, seq_k)`` tensor per layer.

    Every row (one query) is non-negative and sums to 1 over the keys it may attend to (0 on masked keys).

    Attributes:
        encoder: encoder self-attention, one ``(batch, heads, seq_s, seq_s)`` per layer (BERT's layers here).
        decoder: decoder (causal) self-attention, one ``(batch, heads, seq_t, seq_t)`` per layer (GPT's here).
        cross: decoder-to-encoder attention, one ``(batch, heads, seq_t, seq_s)`` per layer; a recurrent
            model with attention has one entry with one head (Bahdanau et al. 2015's α_ij).
    """

    encoder: list[Tensor] = field(default_factory=list)
    decoder: list[Tensor] = field(default_factory=list)
    cross: list[Tensor] = field(default_factory=list)

    def kinds(self) -> list[str]:
        """The names of the non-empty fields, in the order encoder, decoder, cross.

        Returns:
            e.g. ``["encoder", "decoder", "cross"]`` for a Transformer, ``["cross"]`` for Bahdanau's model.
        """
        return [name for name in ("encoder", "decoder", "cross") if getattr(self, name)]

    def select(self, index: int | slice) -> AttentionMaps:
        """The same maps for some sentences of the batch only (e.g. ``maps.select(0)`` keeps a batch of one).

        Args:
            index: a batch index or slice; an int keeps the batch dimension (size 1).

        Returns:
            A new :class:`AttentionMaps` whose tensors are views of these.

        Raises:
            TypeError: ``index`` is neither an int nor a slice.
        """
        if isinstance(index, bool) or not isinstance(index, (int, slice)):
            raise TypeError(f"index must be an int or a slice of the batch, got {type(index).__name__}")
        pick = slice(index, index + 1) if isinstance(index, int) else index
        return AttentionMaps(*([w[pick] for w in getattr(self, name)] for name in ("encoder", "decoder", "cross")))


@runtime_checkable
class DecoderCache(Protocol):
    """What one decoder layer keeps between decoding steps (``lib.transformer.LayerCache``,
    ``lib.seq2seq.DecoderState``)."""

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows ``index`` (beam search follows its surviving hypotheses).

        Args:
            index: ``(new_batch,)`` long tensor of rows to keep, in their new order.
        """


class ModelConfig(Protocol):
    """The fields of a model's config that decoding, training and run folders read."""

    max_len: int
    d_model: int
    share_embeddings: bool

    def to_dict(self) -> dict[str, Any]:
        """The config as a JSON-ready dict.

        Returns:
            ``{field: value}``.
        """


@runtime_checkable
class EncoderDecoder(Protocol):
    """A sequence-to-sequence model that ``lib.decode``, ``lib.translate`` and ``lib.checkpoint`` can drive.

    ``lib.transformer.Transformer`` and ``lib.seq2seq.Seq2Seq`` implement it: both encode the source once and
    then compute next-token logits for target prefixes, optionally one step at a time with a cache.
    """

    config: Any

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """Read the source once.

        Args:
            src: right-padded source ids ``(batch, seq_s)``.

        Returns:
            ``(memory, src_mask)``: the encoder states ``(batch, seq_s, d)`` and a bool mask of the real
            source tokens (``True`` = may attend), in the shape the model's :meth:`decode` expects.
        """

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: list[Any] | None = None,
        offset: int = 0,
    ) -> Tensor:
        """Next-token logits for target ids, teacher-forced or step by step with a cache.

        Args:
            tgt: target ids ``(batch, seq_t)``; with a ``cache``, only the positions from ``offset`` on.
            memory: from :meth:`encode`.
            src_mask: from :meth:`encode`.
            cache: from :meth:`new_cache`, extended in place; None = no cache.
            offset: position of ``tgt[:, 0]`` in the target.

        Returns:
            logits ``(batch, seq_t, vocab)``.
        """

    def new_cache(self) -> list[DecoderCache]:
        """An empty cache for step-by-step decoding.

        Returns:
            One :class:`DecoderCache` per decoder layer.
        """

    def __call__(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Teacher-forced forward pass: logits ``(batch, seq_t, vocab)`` for ``src`` and ``tgt``."""

    def parameters(self, recurse: bool = True) -> Any:
        """The model's parameters (``torch.nn.Module.parameters``).

        Args:
            recurse: include the parameters of submodules (torch's default True).

        Returns:
            An iterator over the ``nn.Parameter`` tensors (a tied matrix appears once).
        """

    def eval(self) -> nn.Module:
        """Evaluation mode (``torch.nn.Module.eval``): dropout off.

        Returns:
            The model itself.
        """


# The annotations check_config_types knows: a value must be an instance of one of the types, and never a bool
# where a number belongs (True is an int to Python, but ``num_heads=True`` is a mistake).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "int": (numbers.Integral,),
    "float": (numbers.Real,),
    "bool": (bool,),
    "str": (str,),
    "None": (type(None),),
}


def check_config_types(config: Any) -> None:
    """Every field of a config dataclass against its annotation (int, float, bool, str, X | None), before its values.

    A bool is no int or float here (``num_heads=True`` is a mistake), and ``"512"`` no int; other annotations are
    not checked. Raises TypeError naming the field, the expected type and the value.
    """
    for f in dataclasses.fields(config):
        annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        names = annotation.replace(" ", "").split("|")
        if not set(names) <= _FIELD_TYPES.keys():
            continue  # an annotation this check does not know
        allowed: tuple[type, ...] = ()
        for name in names:
            allowed += _FIELD_TYPES[name]
        value = getattr(config, f.name)
        if (isinstance(value, bool) and "bool" not in names) or not isinstance(value, allowed):
            raise TypeError(
                f"{type(config).__name__}.{f.name} must be {' or '.join(names)}, got {value!r} ({type(value).__name__})"
            )
