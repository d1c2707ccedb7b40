"""Saving and loading a training run: model weights, tokenizer, configs, history and results in one folder.

A run folder (``runs/NAME`` from ``python -m lib.train``, or the shipped ``models/de-en``) holds::

    config.json     {"model": TransformerConfig or Seq2SeqConfig, "train": TrainConfig or null}
    model.pt        the model's state dict (float32, or float16 to halve the size on disk)
    tokenizer.json  the joint BPE tokenizer
    history.json    the validation history (one entry per validation)
    results.json    what was measured: command, hardware, minutes, tokens/s, BLEU
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .bpe import load_tokenizer, save_tokenizer
from .interfaces import EncoderDecoder
from .seq2seq import Seq2Seq, Seq2SeqConfig
from .training import TrainConfig
from .transformer import Transformer, TransformerConfig

__all__ = ["Run", "save_run", "load_run", "SHIPPED_MODEL"]

_FILES = ("config.json", "model.pt", "tokenizer.json")

#: The trained German→English model that ships with the book (``models/de-en`` in the repository).
SHIPPED_MODEL = Path(__file__).resolve().parent.parent / "models" / "de-en"


@dataclass
class Run:
    """A loaded run: the model (eval mode, float32), its tokenizer, configs, history and results.

    Attributes:
        model: the :class:`~lib.transformer.Transformer` or :class:`~lib.seq2seq.Seq2Seq`, in eval mode.
        tokenizer: its ``tokenizers.Tokenizer``.
        config: the model's config.
        train_config: how it was trained (``lib.training.TrainConfig``), or None when not recorded.
        history: the validation history (one dict per validation).
        results: what was measured (command, hardware, minutes, BLEU).
        path: the run folder it was loaded from.
    """

    model: Transformer | Seq2Seq
    tokenizer: object
    config: TransformerConfig | Seq2SeqConfig
    train_config: TrainConfig | None = None
    history: list[dict] = field(default_factory=list)
    results: dict = field(default_factory=dict)
    path: Path | None = None


def save_run(
    path: str | Path,
    model: EncoderDecoder,
    tokenizer,
    train_config: TrainConfig | None = None,
    history: list[dict] | None = None,
    results: dict | None = None,
    weights_dtype: torch.dtype = torch.float32,
) -> Path:
    """Write a run folder that :func:`load_run` and ``python -m lib.translate --run`` can read.

    Args:
        path: the folder (created if needed).
        model: the trained :class:`~lib.transformer.Transformer` or :class:`~lib.seq2seq.Seq2Seq`.
        tokenizer: its ``tokenizers.Tokenizer``.
        train_config: how it was trained (optional).
        history: the validation history (optional).
        results: what was measured (optional).
        weights_dtype: ``torch.float16`` halves the file (tied matrices are stored once).

    Returns:
        The folder's path.

    Raises:
        OSError: the folder cannot be created or written.
    """
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    config = {"model": model.config.to_dict(), "train": None if train_config is None else train_config.to_dict()}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    state = {k: (v.to(weights_dtype) if v.is_floating_point() else v) for k, v in model.state_dict().items()}
    if model.config.share_embeddings:  # one copy of the tied matrix is enough
        state = {k: v for k, v in state.items() if k not in ("tgt_embed.weight", "output.weight")}
    torch.save(state, out / "model.pt")
    save_tokenizer(tokenizer, out / "tokenizer.json")
    if history is not None:
        (out / "history.json").write_text(json.dumps(history, indent=1) + "\n")
    if results is not None:
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return out


def load_run(path: str | Path, device: torch.device | str = "cpu") -> Run:
    """Load a run folder written by :func:`save_run`.

    Args:
        path: the run folder.
        device: where to put the model.

    Returns:
        A :class:`Run` with the model in eval mode (float32).

    Raises:
        FileNotFoundError: the folder or one of ``config.json``, ``model.pt``, ``tokenizer.json`` is missing.
        ValueError: ``config.json`` names a field the model's or training config does not know (see
            ``lib.config.Config.from_dict``).
    """
    folder = Path(path)
    missing = [f for f in _FILES if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{folder} is not a complete run folder: missing {', '.join(missing)} "
            "(train one with `python -m lib.train --out DIR ...`)"
        )
    config = json.loads((folder / "config.json").read_text())
    if config["model"].get("architecture") == "seq2seq":  # a recurrent encoder–decoder (lib.seq2seq)
        mconf = Seq2SeqConfig.from_dict(config["model"])
        model = Seq2Seq(mconf)
    else:
        mconf = TransformerConfig.from_dict(config["model"])
        model = Transformer(mconf)
    state = torch.load(folder / "model.pt", map_location="cpu", weights_only=True)
    state = {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
    if mconf.share_embeddings:
        state.setdefault("tgt_embed.weight", state["src_embed.weight"])
        state.setdefault("output.weight", state["src_embed.weight"])
    model.load_state_dict(state)
    model.to(device).eval()

    def read(name, default):
        f = folder / name
        return json.loads(f.read_text()) if f.is_file() else default

    return Run(
        model=model,
        tokenizer=load_tokenizer(folder / "tokenizer.json"),
        config=mconf,
        train_config=None if config.get("train") is None else TrainConfig.from_dict(config["train"]),
        history=read("history.json", []),
        results=read("results.json", {}),
        path=folder,
    )
