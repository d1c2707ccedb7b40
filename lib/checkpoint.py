"""Saving and loading a training run: model weights, tokenizer, configs, history and results in one folder.

A run folder (``runs/NAME`` from ``python -m lib.train``, or the shipped ``models/de-en``) holds::

    config.json     {"model": TransformerConfig or Seq2SeqConfig, "train": TrainConfig or null}
    model.pt        the model's state dict (float32, or float16 to halve the size on disk; optionally the
                    embedding matrices as int8 with one float32 scale per row, see "Storage formats" below)
    tokenizer.json  the joint BPE tokenizer
    history.json    the validation history (one entry per validation)
    results.json    what was measured: command, hardware, minutes, tokens/s, BLEU
    manifest.json   the SHA-256 and size of each file above and every hyper-parameter, written last

Every file is written atomically (``lib.files``), so a crash or a full disk never leaves a fragment in place of
a good file. :func:`load_run` trusts nothing it reads: it checks each file against the manifest (every size, and
at most :data:`MAX_RUN_FILE_BYTES`, before any file is read; then the SHA-256 of each), rejects
unknown or missing config fields, checks the weights against the config and the tokenizer against the
embedding, and raises :class:`RunError` naming the file and the field when anything is wrong. Loading runs no
code from a file: the weights are read with ``torch.load(..., weights_only=True)``.

Storage formats of ``model.pt``. A plain state dict (name → tensor, float32 or float16) is the original
format and is always read. ``save_run(..., int8_embeddings=True)`` writes format ``int8-rows`` version 1
instead, a dict of plain values::

    {"format": "int8-rows", "version": 1,
     "tensors":   {name: tensor},                              every other weight, as saved (e.g. float16)
     "int8_rows": {name: {"values": int8 (rows, cols),         the embedding / output matrices
                          "scales": float32 (rows,)}}}

Each row ``w`` of an embedding matrix is stored as ``values = round(w / scale)`` in [-127, 127] with
``scale = max|w| / 127`` (one scale per token), so the row reads back as ``values * scale`` with an error of
at most ``scale / 2`` per entry. The vocabulary-sized matrices dominate a small model (8,000 × 256 of the
recurrent models' 3.5M weights), so this shrinks them from 16 to about 8 bits per weight. :func:`load_run`
checks the format name, the version, each entry's dtype and shape, and that the scales are finite and
positive, and turns the matrices back into float32: the model never sees int8.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .bpe import load_tokenizer
from .files import atomic_torch_save, atomic_write_text, sha256_file, strict_json
from .interfaces import EncoderDecoder
from .seq2seq import Seq2Seq, Seq2SeqConfig
from .training import CHECKPOINT, TrainConfig
from .transformer import Transformer, TransformerConfig

__all__ = [
    "Run",
    "RunError",
    "save_run",
    "load_run",
    "update_results",
    "write_manifest",
    "quantize_rows",
    "average_weights",
    "snapshot_files",
    "folder_kind",
    "enclosing_folder",
    "SHIPPED_MODEL",
    "INT8_ROWS_FORMAT",
    "INT8_ROWS_VERSION",
    "EMBEDDING_MATRICES",
]

_FILES = ("config.json", "model.pt", "tokenizer.json")
_RECORDS = ("history.json", "results.json")
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
#: The largest file a run may hold (4 GiB; the book's models are about 20 MB): a larger one is refused before it is
#: read, so that a manifest naming a huge (or sparse) file cannot keep :func:`load_run` hashing for minutes.
MAX_RUN_FILE_BYTES = 4 << 30

#: The storage format with int8 embedding rows (see the module docstring) and the version this library reads.
INT8_ROWS_FORMAT = "int8-rows"
INT8_ROWS_VERSION = 1
#: The matrices that ``int8_embeddings=True`` stores as int8 rows: one row per vocabulary entry.
EMBEDDING_MATRICES = ("src_embed.weight", "tgt_embed.weight", "output.weight")

#: The trained German→English model that ships with the book (``models/de-en`` in the repository).
SHIPPED_MODEL = Path(__file__).resolve().parent.parent / "models" / "de-en"


class RunError(ValueError):
    """A run folder that cannot be trusted or used; the message names the folder, the file and the field.

    Args:
        folder: the run folder.
        file: the file at fault (e.g. ``"config.json"``).
        problem: what is wrong, in a sentence.
    """

    def __init__(self, folder: str | Path, file: str, problem: str) -> None:
        self.folder, self.file, self.problem = Path(folder), file, problem
        super().__init__(f"{Path(folder) / file}: {problem}")


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


def write_manifest(path: str | Path) -> Path:
    """Write ``manifest.json`` for a run folder: the SHA-256 of each of its files and its hyper-parameters.

    Args:
        path: the run folder (``config.json``, ``model.pt`` and ``tokenizer.json`` must exist).

    Returns:
        The manifest's path.

    Raises:
        FileNotFoundError: a required file is missing.
    """
    folder = Path(path)
    missing = [f for f in _FILES if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: cannot write a manifest, missing {', '.join(missing)}")
    names = [f for f in (*_FILES, *_RECORDS) if (folder / f).is_file()]
    manifest = {
        "format": MANIFEST_FORMAT,
        "files": {name: sha256_file(folder / name) for name in names},
        "bytes": {name: (folder / name).stat().st_size for name in names},
        "hyper_parameters": json.loads((folder / "config.json").read_text(encoding="utf-8")),
    }
    return atomic_write_text(folder / MANIFEST, strict_json(manifest, indent=2))


def folder_kind(path: str | Path) -> str | None:
    """What a folder is, as its ``manifest.json`` says: a run, an export, or neither.

    A folder is a run when its manifest is a run manifest (:func:`write_manifest`: format, files and
    hyper-parameters) or when it holds a resume checkpoint (a run being trained); an export when its manifest is
    ``lib.export``'s (files and graphs). A ``config.json`` or ``model.pt`` of one's own makes no folder a run.

    Args:
        path: the folder (it need not exist).

    Returns:
        ``"run"``, ``"export"`` or None.
    """
    folder = Path(path)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        manifest = None
    if isinstance(manifest, dict) and isinstance(manifest.get("files"), dict):
        if "hyper_parameters" in manifest:
            return "run"
        if "graphs" in manifest:
            return "export"
    return "run" if (folder / CHECKPOINT).is_file() else None


def enclosing_folder(path: str | Path) -> tuple[Path, str] | None:
    """The nearest run or export folder that is ``path`` or holds it (see :func:`folder_kind`).

    A tool that writes a folder calls it to refuse a destination inside a folder that another tool wrote.

    Args:
        path: a folder (it need not exist).

    Returns:
        ``(folder, kind)`` with kind ``"run"`` or ``"export"``, or None.
    """
    start = Path(path).resolve()
    for folder in (start, *start.parents):
        kind = folder_kind(folder)
        if kind is not None:
            return folder, kind
    return None


def quantize_rows(matrix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantise a matrix to int8 with one scale per row (symmetric, round to nearest).

    Args:
        matrix: ``(rows, cols)`` floating-point weights, e.g. an embedding ``(vocab_size, d_embed)``.

    Returns:
        ``(values, scales)``: ``values`` int8 ``(rows, cols)`` in [-127, 127] and ``scales`` float32
        ``(rows,)``, with ``values * scales[:, None]`` within ``scales / 2`` of ``matrix`` (a row of zeros
        gets scale 1 and values 0).

    Raises:
        ValueError: ``matrix`` is not a 2-D floating-point tensor, or holds a NaN or an infinity.
    """
    if not isinstance(matrix, torch.Tensor) or matrix.dim() != 2 or not matrix.is_floating_point():
        raise ValueError(f"matrix must be a 2-D floating-point tensor, got {getattr(matrix, 'shape', type(matrix))}")
    m = matrix.detach().float().cpu()
    if not torch.isfinite(m).all():
        raise ValueError("matrix holds a NaN or an infinity: it cannot be quantised")
    peak = m.abs().amax(dim=1)
    scales = torch.where(peak > 0, peak / 127, torch.ones_like(peak))
    values = torch.round(m / scales[:, None]).clamp(-127, 127).to(torch.int8)
    return values, scales


def snapshot_files(path: str | Path) -> list[tuple[float, Path]]:
    """The weight snapshots of a run folder (``model_{m}min.pt``, written by ``lib.train --snapshots``), in order.

    Args:
        path: the run folder.

    Returns:
        ``(training minutes, file)`` pairs, sorted by minutes; empty when the folder has none.
    """
    found = []
    for file in Path(path).glob("model_*min.pt"):
        try:
            found.append((float(file.name[len("model_") : -len("min.pt")]), file))
        except ValueError:
            continue  # not a snapshot of lib.train (e.g. "model_finalmin.pt")
    return sorted(found)


def average_weights(files: list[str | Path]) -> dict[str, torch.Tensor]:
    """Checkpoint averaging: the element-wise mean of the weights saved at several points of one run.

    Vaswani et al. (2017, §6.1) translate with "a single model obtained by averaging the last 5 checkpoints".
    Late checkpoints of one run lie close together in weight space, and their mean usually translates a little
    better than any one of them (it smooths the noise of the last updates).

    Args:
        files: two or more files, each holding a state dict (``model_{m}min.pt`` snapshots of
            ``python -m lib.train --snapshots``) or a resume checkpoint (``checkpoint.pt``: its ``"model"``
            entry); all from the same model.

    Returns:
        name → float32 tensor, the mean of the floating-point tensors; integer tensors (none in the book's
        models) must agree and are kept.

    Raises:
        ValueError: fewer than two files; the files hold different tensor names or shapes, or disagreeing
            integer tensors; a file holds no state dict.
        FileNotFoundError: a file is missing.
    """
    if len(files) < 2:
        raise ValueError(f"checkpoint averaging needs at least two files, got {len(files)}")
    total: dict[str, torch.Tensor] = {}
    for i, file in enumerate(files):
        path = Path(file)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such weights file")
        state = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(state, dict) and isinstance(state.get("model"), dict):
            state = state["model"]  # a resume checkpoint
        if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise ValueError(f"{path}: not a state dict (name → tensor) or a resume checkpoint")
        if i == 0:
            total = {k: (v.double() if v.is_floating_point() else v.clone()) for k, v in state.items()}
            continue
        if set(state) != set(total):
            raise ValueError(f"{path}: its tensor names differ from {Path(files[0]).name}'s (another model?)")
        for name, value in state.items():
            if value.shape != total[name].shape:
                raise ValueError(f"{path}: {name} has shape {tuple(value.shape)}, {tuple(total[name].shape)} before")
            if value.is_floating_point():
                total[name] += value.double()
            elif not torch.equal(value, total[name]):
                raise ValueError(f"{path}: integer tensor {name} differs between the files")
    return {k: ((v / len(files)).float() if v.is_floating_point() else v) for k, v in total.items()}


def save_run(
    path: str | Path,
    model: EncoderDecoder,
    tokenizer,
    train_config: TrainConfig | None = None,
    history: list[dict] | None = None,
    results: dict | None = None,
    weights_dtype: torch.dtype = torch.float32,
    int8_embeddings: bool = False,
) -> Path:
    """Write a run folder that :func:`load_run` and ``python -m lib.translate --run`` can read.

    Each file is written atomically; ``manifest.json`` comes last, so a folder whose writing was interrupted
    has no manifest that vouches for it.

    Args:
        path: the folder (created if needed).
        model: the trained :class:`~lib.transformer.Transformer` or :class:`~lib.seq2seq.Seq2Seq`.
        tokenizer: its ``tokenizers.Tokenizer``.
        train_config: how it was trained (optional).
        history: the validation history (optional).
        results: what was measured (optional).
        weights_dtype: ``torch.float16`` halves the file (tied matrices are stored once).
        int8_embeddings: store the embedding and output matrices (:data:`EMBEDDING_MATRICES`) as int8 with
            one float32 scale per row, format ``int8-rows`` (see the module docstring); the other weights
            keep ``weights_dtype``. With float16 this takes the recurrent models from 6.4 to 4.4 MB.

    Returns:
        The folder's path.

    Raises:
        ValueError: a weight of the model is NaN or infinite (nothing is written).
        OSError: the folder cannot be created or written, or the disk is full (said plainly; the files
            written before stay intact).
    """
    bad = [k for k, v in model.state_dict().items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise ValueError(
            f"the model's weight {bad[0]} holds NaN or infinite values ({len(bad)} such weights): "
            "a diverged model is not saved (retrain with a lower learning rate)"
        )
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    config = {"model": model.config.to_dict(), "train": None if train_config is None else train_config.to_dict()}
    state = {k: (v.to(weights_dtype) if v.is_floating_point() else v) for k, v in model.state_dict().items()}
    if model.config.share_embeddings:  # one copy of the tied matrix is enough
        state = {k: v for k, v in state.items() if k not in ("tgt_embed.weight", "output.weight")}
    if int8_embeddings:
        weights = model.state_dict()  # quantise the float32 weights, not their weights_dtype rounding
        rows = {}
        for name in [k for k in EMBEDDING_MATRICES if k in state]:
            values, scales = quantize_rows(weights[name])
            rows[name] = {"values": values, "scales": scales}
            del state[name]
        state = {"format": INT8_ROWS_FORMAT, "version": INT8_ROWS_VERSION, "tensors": state, "int8_rows": rows}
    (out / MANIFEST).unlink(missing_ok=True)  # a half-rewritten folder must not look verified
    atomic_write_text(out / "config.json", strict_json(config, indent=2))
    atomic_torch_save(state, out / "model.pt")
    atomic_write_text(out / "tokenizer.json", tokenizer.to_str(pretty=True))
    if history is not None:
        atomic_write_text(out / "history.json", strict_json(history, indent=1))
    if results is not None:
        atomic_write_text(out / "results.json", strict_json(results, indent=2))
    write_manifest(out)
    return out


def update_results(path: str | Path, updates: dict[str, Any]) -> dict:
    """Add or change entries of a run's ``results.json`` (e.g. a benchmark's BLEU) and refresh the manifest.

    Args:
        path: the run folder.
        updates: the entries to set.

    Returns:
        The new results.
    """
    folder = Path(path)
    file = folder / "results.json"
    results = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
    results.update(updates)
    atomic_write_text(file, strict_json(results, indent=2))
    write_manifest(folder)
    return results


def _read_json(folder: Path, name: str) -> Any:
    try:
        return json.loads((folder / name).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunError(folder, name, f"not readable JSON ({err})") from None


def _verify_manifest(folder: Path) -> None:
    if not (folder / MANIFEST).is_file():
        warnings.warn(
            f"{folder} has no {MANIFEST}: its files cannot be checked for damage "
            "(lib.checkpoint.write_manifest writes one)",
            stacklevel=3,
        )
        return
    manifest = _read_json(folder, MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise RunError(folder, MANIFEST, f"not a manifest of format {MANIFEST_FORMAT}")
    files = manifest.get("files")
    if not isinstance(files, dict) or not set(_FILES) <= set(files):
        raise RunError(folder, MANIFEST, f"must list the SHA-256 of {', '.join(_FILES)}")
    unknown = sorted(set(files) - {*_FILES, *_RECORDS})
    if unknown:
        raise RunError(folder, MANIFEST, f"lists {', '.join(unknown)}, not a file of a run ({', '.join(_FILES)})")
    sizes = manifest.get("bytes", {})  # manifests written before sizes were recorded have none
    if not isinstance(sizes, dict):
        raise RunError(folder, MANIFEST, '"bytes" must map file names to sizes')
    for name in files:
        if not (folder / name).is_file():
            raise RunError(folder, name, "is listed in the manifest but missing")
        size = (folder / name).stat().st_size  # sizes first: nothing is read before every size is checked
        if size > MAX_RUN_FILE_BYTES:
            raise RunError(folder, name, f"is {size:,} bytes, more than a run's file may be ({MAX_RUN_FILE_BYTES:,})")
        if name in sizes and sizes[name] != size:
            raise RunError(folder, name, f"is {size:,} bytes, the manifest says {sizes[name]:,}: changed or damaged")
    for name, expected in files.items():
        if sha256_file(folder / name) != expected:
            raise RunError(
                folder,
                name,
                "its SHA-256 differs from the manifest: the file was changed or damaged after the run was saved "
                "(restore it, or retrain)",
            )


def _model_config(folder: Path, config: Any) -> TransformerConfig | Seq2SeqConfig:
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise RunError(folder, "config.json", 'must be a JSON object with a "model" object')
    unknown = sorted(set(config) - {"model", "train"})
    if unknown:
        raise RunError(folder, "config.json", f"unknown top-level field(s) {unknown}; expected model and train")
    cls = Seq2SeqConfig if config["model"].get("architecture") == "seq2seq" else TransformerConfig
    try:
        return cls.from_dict(config["model"])
    except (TypeError, ValueError) as err:
        raise RunError(folder, "config.json", f"model: {err}") from None


def _dequantize(folder: Path, saved: dict) -> dict[str, torch.Tensor]:
    """The plain state dict held by a ``model.pt`` of format ``int8-rows``, the int8 rows back in float32."""

    def fail(problem: str) -> RunError:
        return RunError(folder, "model.pt", f"format {INT8_ROWS_FORMAT!r}: {problem}")

    if saved.get("format") != INT8_ROWS_FORMAT:
        raise RunError(
            folder, "model.pt", f"unknown storage format {saved.get('format')!r}; expected {INT8_ROWS_FORMAT!r}"
        )
    if saved.get("version") != INT8_ROWS_VERSION:
        raise fail(f"version {saved.get('version')!r} is not supported (this library reads {INT8_ROWS_VERSION})")
    unknown = sorted(set(saved) - {"format", "version", "tensors", "int8_rows"})
    tensors, rows = saved.get("tensors"), saved.get("int8_rows")
    if unknown or not isinstance(tensors, dict) or not isinstance(rows, dict):
        raise fail(f'must hold exactly format, version, "tensors" and "int8_rows" (unknown: {unknown})')
    if not all(isinstance(v, torch.Tensor) for v in tensors.values()):
        raise fail('"tensors" must map names to tensors')
    state = dict(tensors)
    for name, entry in rows.items():
        values = entry.get("values") if isinstance(entry, dict) else None
        scales = entry.get("scales") if isinstance(entry, dict) else None
        if not isinstance(values, torch.Tensor) or values.dtype != torch.int8 or values.dim() != 2:
            raise fail(f"{name}: values must be a 2-D int8 tensor")
        if not isinstance(scales, torch.Tensor) or scales.dtype != torch.float32 or scales.shape != values.shape[:1]:
            raise fail(f"{name}: scales must be float32 of shape ({values.size(0)},), one per row")
        if not (torch.isfinite(scales).all() and (scales > 0).all()):
            raise fail(f"{name}: scales must be finite and positive")
        if name in state:
            raise fail(f"{name} is stored twice, as int8 rows and as a tensor")
        state[name] = values.float() * scales[:, None]
    return state


def _load_state(folder: Path, model: torch.nn.Module, share_embeddings: bool) -> dict[str, torch.Tensor]:
    try:
        state = torch.load(folder / "model.pt", map_location="cpu", weights_only=True)
    except Exception as err:  # a damaged file raises RuntimeError, pickle or zip errors, ...: all mean the same
        raise RunError(folder, "model.pt", f"not a readable state dict ({type(err).__name__}: {err})") from None
    if isinstance(state, dict) and "format" in state:
        state = _dequantize(folder, state)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise RunError(folder, "model.pt", "must hold a state dict of tensors")
    state = {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
    if share_embeddings and "src_embed.weight" in state:
        state.setdefault("tgt_embed.weight", state["src_embed.weight"])
        state.setdefault("output.weight", state["src_embed.weight"])
    expected = model.state_dict()
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        raise RunError(
            folder, "model.pt", f"does not fit config.json: missing weights {missing[:5]}, unexpected {unexpected[:5]}"
        )
    for name, value in state.items():
        if value.is_floating_point() and not torch.isfinite(value).all():
            raise RunError(
                folder,
                "model.pt",
                f"weight {name} holds NaN or infinite values: the training diverged and the model cannot translate "
                "(retrain it with a lower learning rate)",
            )
        if value.shape != expected[name].shape:
            raise RunError(
                folder,
                "model.pt",
                f"weight {name} has shape {tuple(value.shape)}, config.json implies {tuple(expected[name].shape)}",
            )
    return state


def load_run(path: str | Path, device: torch.device | str = "cpu") -> Run:
    """Load and validate a run folder written by :func:`save_run`.

    Args:
        path: the run folder.
        device: where to put the model.

    Returns:
        A :class:`Run` with the model in eval mode (float32).

    Raises:
        FileNotFoundError: the folder or one of ``config.json``, ``model.pt``, ``tokenizer.json`` is missing.
        RunError: the folder or a file cannot be read (its permissions); a file differs from the manifest;
            ``config.json`` is not valid JSON, names an unknown field or lacks a required one; the weights do not
            fit the config or hold a NaN or an infinity; the tokenizer's size differs from the model's vocabulary.
            ``RunError`` is a ``ValueError``; its message names the file and the field.
    """
    folder = Path(path)
    try:
        present = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    except OSError as err:  # a folder it may not list (its permissions): every file would look missing
        raise RunError(folder, "", f"cannot be read ({err.strerror or err}): check its permissions") from None
    missing = [f for f in _FILES if f not in present or not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{folder} is not a complete run folder: missing {', '.join(missing)} "
            "(train one with `python -m lib.train --out DIR ...`)"
        )
    for name in sorted({*_FILES, MANIFEST, "history.json", "results.json"} & present):
        try:  # one line naming the file, not a PermissionError traceback from wherever it is first read
            with (folder / name).open("rb"):
                pass
        except OSError as err:
            raise RunError(folder, name, f"cannot be read ({err.strerror or err}): check its permissions") from None
    _verify_manifest(folder)
    config = _read_json(folder, "config.json")
    mconf = _model_config(folder, config)
    try:
        train_config = None if config.get("train") is None else TrainConfig.from_dict(config["train"])
    except (TypeError, ValueError) as err:
        raise RunError(folder, "config.json", f"train: {err}") from None
    model = Seq2Seq(mconf) if isinstance(mconf, Seq2SeqConfig) else Transformer(mconf)
    model.load_state_dict(_load_state(folder, model, mconf.share_embeddings))
    model.to(device).eval()
    try:
        tokenizer = load_tokenizer(folder / "tokenizer.json")
    except Exception as err:  # the tokenizers library raises its own exception type for a damaged file
        raise RunError(folder, "tokenizer.json", f"not a usable tokenizer ({err})") from None
    vocab = mconf.vocab_size if isinstance(mconf, Seq2SeqConfig) else mconf.src_vocab_size
    if tokenizer.get_vocab_size() != vocab:
        raise RunError(
            folder,
            "tokenizer.json",
            f"has {tokenizer.get_vocab_size():,} tokens but the model's embedding has {vocab:,} rows: "
            "the tokenizer belongs to another run",
        )
    history = _read_json(folder, "history.json") if (folder / "history.json").is_file() else []
    results = _read_json(folder, "results.json") if (folder / "results.json").is_file() else {}
    return Run(
        model=model,
        tokenizer=tokenizer,
        config=mconf,
        train_config=train_config,
        history=history,
        results=results,
        path=folder,
    )
