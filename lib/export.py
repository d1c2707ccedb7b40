"""Export a trained Transformer to ONNX, so that a web page can translate with it (onnxruntime-web), no server.

Command line::

    python -m lib.export --run models/de-en --out DIR [--dtype fp16|int8|fp32] [--verify 20]

The export folder holds everything a page needs for greedy decoding, and a manifest that vouches for it::

    encoder.onnx    src (batch, seq_s) int64 → memory (batch, seq_s, d_model) float32,
                    src_mask (batch, 1, 1, seq_s) bool
    decoder.onnx    tgt (batch, seq_t) int64, memory, src_mask → logits (batch, vocab) float32 (the last
                    position's), cross_attention (batch, layers, heads, seq_t, seq_s) float32
    weights.bin     the weights of both graphs, each tensor stored once (the tied embedding serves both)
    tokenizer.json  the run's BPE tokenizer, unchanged
    manifest.json   files, sizes and SHA-256, the ids of the special tokens, max_len, the graphs' inputs and outputs

Design (measured on the shipped model; numbers in models/de-en/README.md):

- **Two graphs, one weight file.** Both graphs keep their weights in ONNX *external data* that points into the
  one ``weights.bin``; a tensor both graphs use (the tied embedding and output matrix, 8,000 × 128, the
  positional table) is written once. A page downloads it once and hands the same bytes to both sessions.
- **The decoder reads the whole prefix, with no key/value cache.** Step t runs the decoder over all t target
  tokens again, O(t²) work for a sentence instead of O(t), but the graph is stateless: a page keeps one list of
  token ids and no per-layer tensors, and the last step's ``cross_attention`` is already the whole
  target × source map the attention explorer shows. For this model (3 decoder layers, d_model 128) and
  sentences of tens of tokens the recomputation costs little next to the fixed cost of a call.
- **Weights stored small, arithmetic in float32.** ``fp16`` stores every matrix as float16 and casts it back
  to float32 in the graph; ``int8`` stores every matrix as int8 with one float32 scale per output channel
  (symmetric, ``DequantizeLinear``); vectors (biases, LayerNorm) stay float32. The activations are float32 in
  every case, so only the weights are rounded.
- **No data-dependent checks in the graphs.** :class:`EncoderGraph` and :class:`DecoderGraph` do what
  :meth:`lib.transformer.Transformer.encode` and :meth:`~lib.transformer.Transformer.decode` do, minus the checks
  that read token values (ids inside the vocabulary), which a traced graph cannot hold;
  :class:`~lib.transformer.Transformer` itself keeps every check.

Source: ONNX external data and ``DequantizeLinear`` (onnx.ai operator docs, opset 13+); the model: Vaswani et al.
2017, §3.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import io
import json
import logging
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from .bpe import decode
from .checkpoint import enclosing_folder, load_run
from .files import FolderInUse, atomic_write, atomic_write_text, lock_folder, sha256_file, strict_json
from .special_tokens import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID
from .transformer import Transformer
from .translate import DOMAIN_RULE, clean_text, plain_text_tokenizer, split_sentences, text_pieces

__all__ = [
    "DTYPES",
    "REQUIRED_PACKAGES",
    "EncoderGraph",
    "DecoderGraph",
    "export_onnx",
    "OnnxTranslator",
    "verify",
    "main",
]

#: How the weights are stored: float32, float16 (cast to float32 in the graph), int8 with per-channel scales.
DTYPES = ("fp32", "fp16", "int8")
#: The packages the export (onnx, onnxscript: torch's dynamo exporter) and its check (onnxruntime) need; their
#: tested versions are pinned in requirements.txt.
REQUIRED_PACKAGES = ("onnx", "onnxscript", "onnxruntime")
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
ENCODER, DECODER, WEIGHTS, TOKENIZER = "encoder.onnx", "decoder.onnx", "weights.bin", "tokenizer.json"
_ALIGN = 64  # every tensor in weights.bin starts at a multiple of 64 bytes
_INPUTS = {ENCODER: ["src"], DECODER: ["tgt", "memory", "src_mask"]}
_OUTPUTS = {ENCODER: ["memory", "src_mask"], DECODER: ["logits", "cross_attention"]}


def _require(*names: str):
    """Import the named optional packages; a missing one is an ImportError that says what to install."""
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ImportError:
            raise ImportError(
                f"lib.export needs the package {name!r}, which is not installed: run `make env`, or "
                f"`pip install -r requirements.txt` (it pins {', '.join(REQUIRED_PACKAGES)})"
            ) from None
    return modules[0] if len(modules) == 1 else modules


class EncoderGraph(nn.Module):
    """What :meth:`Transformer.encode <lib.transformer.Transformer.encode>` computes, as a graph to export.

    The same embedding, positional encoding, encoder stack and padding mask, without the check of the token
    values (ids inside the vocabulary, length within max_len): a traced graph cannot branch on data, and a page
    checks its ids before it calls the graph.

    Args:
        model: the :class:`~lib.transformer.Transformer` (its weights are shared, not copied).

    Raises:
        TypeError: ``model`` is not a Transformer.

    Source: Vaswani et al. 2017, §3.1, §3.4, §3.5.
    """

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        if not isinstance(model, Transformer):
            raise TypeError(f"model must be a lib.transformer.Transformer, got {type(model).__name__}")
        self.model = model

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """Encode source ids.

        Args:
            src: source ids ``(batch, seq_s)``, int64, right-padded with ``pad_id``, ending in ``</s>``.

        Returns:
            memory: ``(batch, seq_s, d_model)``, the encoder output.
            src_mask: ``(batch, 1, 1, seq_s)`` bool, ``True`` = real token.
        """
        m = self.model
        mask = m.source_mask(src)
        memory, _ = m.encoder(m.embed(src, m.src_embed), mask)
        return memory, mask


class DecoderGraph(nn.Module):
    """What :meth:`Transformer.decode <lib.transformer.Transformer.decode>` computes for a whole prefix, as a graph.

    No key/value cache: the whole target prefix is decoded at every step (see the module's docstring). Returns the
    last position's logits (the only ones greedy decoding reads, which saves the output projection of the other
    positions) and the cross-attention weights of every decoder layer.

    Args:
        model: the :class:`~lib.transformer.Transformer` (its weights are shared, not copied).

    Raises:
        TypeError: ``model`` is not a Transformer.

    Source: Vaswani et al. 2017, §3.1 (auto-regressive decoder), §3.2.3 (causal mask).
    """

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        if not isinstance(model, Transformer):
            raise TypeError(f"model must be a lib.transformer.Transformer, got {type(model).__name__}")
        self.model = model

    def forward(self, tgt: Tensor, memory: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
        """Score the token after the prefix ``tgt``.

        Args:
            tgt: target ids ``(batch, seq_t)``, int64, starting with ``<s>``.
            memory: ``(batch, seq_s, d_model)`` from :class:`EncoderGraph`.
            src_mask: ``(batch, 1, 1, seq_s)`` bool from :class:`EncoderGraph`.

        Returns:
            logits: ``(batch, tgt_vocab_size)``, the scores of the token after ``tgt[:, -1]``.
            cross_attention: ``(batch, layers, heads, seq_t, seq_s)``; row t is the query at target position t
            (the one that predicts token t + 1); each row sums to 1 over the real source tokens.
        """
        m = self.model
        t = tgt.size(1)
        causal = torch.ones(t, t, dtype=torch.bool, device=tgt.device).tril()
        x = m.embed(tgt, m.tgt_embed)
        x, _, cross = m.decoder(x, memory, causal, src_mask, None, return_attention=True)
        return m.output(x[:, -1]), torch.stack(cross, dim=1)


def _to_onnx(module: nn.Module, args: tuple, dynamic_shapes: dict, names: str):
    """Export ``module`` with the dynamo exporter; the ONNX ModelProto, its weights inline."""
    progress = io.StringIO()  # the exporter prints its steps; shown only if it fails
    log = logging.getLogger("torch.onnx")  # it also warns that torchvision's operators are not registered
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(progress):
            warnings.simplefilter("ignore")  # the exporter's notes on axis names and deprecations are not ours
            program = torch.onnx.export(
                module.eval(),
                args,
                dynamo=True,
                input_names=_INPUTS[names],
                output_names=_OUTPUTS[names],
                dynamic_shapes=dynamic_shapes,
                external_data=False,
                verbose=False,
            )
    except Exception:
        sys.stderr.write(progress.getvalue())
        raise
    finally:
        log.setLevel(level)
    model = program.model_proto
    # the exporter's notes on every node (stack traces with this machine's paths, FX names) and its inferred
    # shapes of intermediate values: a third of the file, and what would make two exports differ by machine
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    del model.graph.value_info[:]
    del model.metadata_props[:]
    return model


def _channel_axis(name: str, graph) -> int:
    """The axis of an initializer's output channels, read from the node that consumes it."""
    for node in graph.node:
        for position, inp in enumerate(node.input):
            if inp != name:
                continue
            if node.op_type == "MatMul" and position == 1:
                return 1  # x (…, in) @ W (in, out)
            if node.op_type == "Gemm" and position == 1:
                trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
                return 0 if trans_b else 1
    return 0  # Gather (embedding rows), the positional table's rows


def _store_weights(model, dtype: str) -> None:
    """Store every float matrix of ``model`` as ``dtype``, with a node that restores float32 (in place)."""
    onnx = _require("onnx")
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    restore = []
    for init in list(graph.initializer):
        if dtype == "fp32" or init.data_type != TensorProto.FLOAT or len(init.dims) < 2:
            continue
        w = numpy_helper.to_array(init)
        name = init.name
        graph.initializer.remove(init)
        if dtype == "fp16":
            graph.initializer.append(numpy_helper.from_array(w.astype(np.float16), f"{name}.fp16"))
            restore.append(helper.make_node("Cast", [f"{name}.fp16"], [name], to=TensorProto.FLOAT))
        else:  # int8, symmetric, one scale per output channel
            axis = _channel_axis(name, graph)
            peak = np.abs(w).max(axis=1 - axis)
            scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
            q = np.clip(np.rint(w / np.expand_dims(scale, 1 - axis)), -127, 127).astype(np.int8)
            graph.initializer.append(numpy_helper.from_array(q, f"{name}.int8"))
            graph.initializer.append(numpy_helper.from_array(scale, f"{name}.scale"))
            restore.append(helper.make_node("DequantizeLinear", [f"{name}.int8", f"{name}.scale"], [name], axis=axis))
    nodes = restore + list(graph.node)  # the restoring nodes first: every consumer comes after them
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)


def _externalize(models: list, location: str) -> bytes:
    """Move the weights of ``models`` into one blob, each distinct tensor once; returns the blob (in place)."""
    from onnx import TensorProto, numpy_helper

    blob = bytearray()
    where: dict[tuple, tuple[int, int]] = {}  # (data type, dims, sha256) -> (offset, length)
    for model in models:
        for init in model.graph.initializer:
            raw = numpy_helper.from_array(numpy_helper.to_array(init)).raw_data
            if len(raw) < 1024:  # scalars, shapes, biases: kept in the graph
                continue
            key = (init.data_type, tuple(init.dims), hashlib.sha256(raw).hexdigest())
            if key not in where:
                blob.extend(b"\0" * (-len(blob) % _ALIGN))
                where[key] = (len(blob), len(raw))
                blob.extend(raw)
            offset, length = where[key]
            init.ClearField("raw_data")
            for field in ("float_data", "int32_data", "int64_data", "double_data"):
                init.ClearField(field)
            init.data_location = TensorProto.EXTERNAL
            del init.external_data[:]
            for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
                entry = init.external_data.add()
                entry.key, entry.value = k, v
    return bytes(blob)


def _io(model) -> dict:
    """Each input's and output's name, element type and shape (symbolic axes by name) of an ONNX model."""
    from onnx import helper

    def describe(values):
        out = []
        for v in values:
            t = v.type.tensor_type
            dims = [d.dim_param or d.dim_value for d in t.shape.dim]
            out.append({"name": v.name, "type": helper.tensor_dtype_to_np_dtype(t.elem_type).name, "shape": dims})
        return out

    return {"inputs": describe(model.graph.input), "outputs": describe(model.graph.output)}


def export_onnx(run_dir: str | Path, out_dir: str | Path, dtype: str = "fp16") -> dict:
    """Export a run's Transformer as an encoder graph and a decoder graph for greedy decoding in a browser.

    Writes ``encoder.onnx``, ``decoder.onnx``, ``weights.bin`` (shared by both), ``tokenizer.json`` and, last,
    ``manifest.json`` into ``out_dir``, each atomically; the old manifest is removed first, so a folder whose
    export was interrupted has no manifest that vouches for it.

    Args:
        run_dir: a run folder (``models/de-en``), loaded and verified with :func:`lib.checkpoint.load_run`.
        out_dir: the export folder (created if needed).
        dtype: how the weights are stored: ``"fp16"`` (default), ``"int8"`` or ``"fp32"`` (see the module).

    Returns:
        The manifest (also written as ``manifest.json``): files with bytes and SHA-256, dtype, vocabulary size,
        special-token ids, max_len, the decoding rule, the graphs' inputs and outputs, and the versions used.

    Raises:
        ValueError: an unknown ``dtype``; a run whose model is not a Transformer (``lib.checkpoint.RunError``,
            a ValueError, for a damaged run).
        FileNotFoundError: ``run_dir`` is not a complete run folder.
        ImportError: onnx or onnxscript is not installed (the message says what to install).

    Source: Vaswani et al. 2017, §3 (the model); ONNX external data (onnx.ai, "External Data").
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    onnx, _ = _require("onnx", "onnxscript")
    run = load_run(run_dir)
    model = run.model
    if not isinstance(model, Transformer):
        raise ValueError(f"{run_dir}: only a Transformer run can be exported, got {type(model).__name__}")
    model.eval()
    c = model.config
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)

    dim = torch.export.Dim
    batch, seq_s, seq_t = dim("batch", max=1024), dim("seq_s", max=c.max_len), dim("seq_t", max=c.max_len)
    # example inputs of size > 1 on every axis, so that no axis is specialised to a constant
    src = torch.tensor([[5, 6, 7, 8, EOS_ID, PAD_ID], [5, 6, 7, 8, 9, EOS_ID]])
    tgt = torch.tensor([[BOS_ID, 5, 6], [BOS_ID, 7, 8]])
    with torch.no_grad():
        memory, src_mask = EncoderGraph(model)(src)
    start = time.perf_counter()
    encoder = _to_onnx(EncoderGraph(model), (src,), {"src": {0: batch, 1: seq_s}}, ENCODER)
    decoder = _to_onnx(
        DecoderGraph(model),
        (tgt, memory, src_mask),
        {"tgt": {0: batch, 1: seq_t}, "memory": {0: batch, 1: seq_s}, "src_mask": {0: batch, 3: seq_s}},
        DECODER,
    )
    export_seconds = time.perf_counter() - start
    for graph in (encoder, decoder):
        _store_weights(graph, dtype)
    blob = _externalize([encoder, decoder], WEIGHTS)
    atomic_write(out / WEIGHTS, lambda f: f.write(blob))
    for name, graph in ((ENCODER, encoder), (DECODER, decoder)):
        atomic_write(out / name, lambda f, g=graph: f.write(g.SerializeToString()))
    atomic_write_text(out / TOKENIZER, (Path(run_dir) / TOKENIZER).read_text(encoding="utf-8"))

    files = {
        name: {"bytes": (out / name).stat().st_size, "sha256": sha256_file(out / name)}
        for name in (ENCODER, DECODER, WEIGHTS, TOKENIZER)
    }
    source_manifest = Path(run_dir) / "manifest.json"
    manifest = {
        "format": MANIFEST_FORMAT,
        "dtype": dtype,
        "files": files,
        "total_bytes": sum(f["bytes"] for f in files.values()),
        "graphs": {ENCODER: _io(encoder), DECODER: _io(decoder)},
        "external_data": WEIGHTS,
        "vocab_size": c.tgt_vocab_size,
        "special_tokens": dict(zip(SPECIAL_TOKENS, (PAD_ID, BOS_ID, EOS_ID, UNK_ID))),
        "max_len": c.max_len,
        "model": {"d_model": c.d_model, "heads": c.num_heads, "decoder_layers": c.num_decoder_layers},
        "decoding": (
            "greedy: src = ids of the NFC-normalised, stripped text (at most max_len - 1, no control ids) + [</s>]; "
            "tgt starts as [<s>]; for at most min(floor(1.5 * len(src)) + 10, max_len) steps append "
            "argmax(logits) and stop after </s>"
        ),
        # lib.translate's out-of-domain rule, so that the live page flags what the command line flags
        "domain": DOMAIN_RULE,
        "source": {
            "run": Path(run_dir).name,
            "manifest_sha256": sha256_file(source_manifest) if source_manifest.is_file() else None,
        },
        "versions": {
            "torch": torch.__version__,
            "onnx": onnx.__version__,
            "onnxscript": importlib.import_module("onnxscript").__version__,
            "opset": next(o.version for o in encoder.opset_import if o.domain == ""),
        },
        "export_seconds": round(export_seconds, 1),
    }
    atomic_write_text(out / MANIFEST, strict_json(manifest, indent=2))
    return manifest


class OnnxTranslator:
    """Greedy translation with the exported graphs and onnxruntime: what a web page does, in Python.

    Checks every file against the manifest before it loads anything. Reads a text as :func:`lib.translate.translate`
    does (NFC, control tokens as text, a too-long text in pieces), so the two give the same translations.

    Args:
        folder: an export folder written by :func:`export_onnx`.
        threads: onnxruntime's intra-op threads (1 matches a browser page without cross-origin isolation).

    Attributes:
        manifest: the folder's manifest.
        load_seconds: the wall time of loading: manifest, checksums, tokenizer, both sessions.

    Raises:
        FileNotFoundError: no manifest or a listed file is missing.
        ValueError: a file's SHA-256 or the manifest's format differs.
        ImportError: onnxruntime is not installed.
    """

    def __init__(self, folder: str | Path, threads: int = 1) -> None:
        start = time.perf_counter()
        ort = _require("onnxruntime")
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        if not (self.folder / MANIFEST).is_file():
            raise FileNotFoundError(f"{self.folder} has no {MANIFEST}: export one with `python -m lib.export`")
        self.manifest = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
        if self.manifest.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"{self.folder / MANIFEST}: not an export manifest of format {MANIFEST_FORMAT}")
        for name, entry in self.manifest["files"].items():
            if not (self.folder / name).is_file():
                raise FileNotFoundError(f"{self.folder / name} is listed in the manifest but missing")
            if sha256_file(self.folder / name) != entry["sha256"]:
                raise ValueError(f"{self.folder / name}: SHA-256 differs from the manifest (damaged or changed)")
        self.tokenizer = Tokenizer.from_file(str(self.folder / TOKENIZER))
        self._plain = plain_text_tokenizer(self.tokenizer)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.encoder = ort.InferenceSession(str(self.folder / ENCODER), options, providers=["CPUExecutionProvider"])
        self.decoder = ort.InferenceSession(str(self.folder / DECODER), options, providers=["CPUExecutionProvider"])
        self.max_len = int(self.manifest["max_len"])
        self.load_seconds = time.perf_counter() - start

    def greedy(self, src_ids: Sequence[int]) -> tuple[list[int], np.ndarray]:
        """Greedy decoding of one source sentence, as :func:`lib.decode.greedy_decode` does for a batch of one.

        Args:
            src_ids: source ids without ``</s>`` (at most ``max_len - 1``; ``</s>`` is appended here).

        Returns:
            ids: the target ids without ``<s>`` and ``</s>``.
            cross: ``(layers, heads, len(ids) + 1, len(src_ids) + 1)`` float32, the cross-attention of the last
            step; row t is the query that predicted target token t (the last row predicted ``</s>``, if reached).

        Raises:
            ValueError: more than ``max_len - 1`` ids, or an id outside the vocabulary.
        """
        vocab = int(self.manifest["vocab_size"])
        if len(src_ids) > self.max_len - 1 or any(not 0 <= int(i) < vocab for i in src_ids):
            raise ValueError(f"src_ids must be at most {self.max_len - 1} ids in [0, {vocab})")
        src = np.array([[*src_ids, EOS_ID]], dtype=np.int64)
        memory, src_mask = self.encoder.run(None, {"src": src})
        steps = min(int(1.5 * src.shape[1]) + 10, self.max_len)
        tgt = [BOS_ID]
        cross = None
        for _ in range(steps):
            feed = {"tgt": np.array([tgt], dtype=np.int64), "memory": memory, "src_mask": src_mask}
            logits, cross = self.decoder.run(None, feed)
            token = int(logits[0].argmax())
            tgt.append(token)
            if token == EOS_ID:
                break
        ids = tgt[1:]
        return (ids[:-1] if ids[-1] == EOS_ID else ids), cross[0]

    def translate(self, sentences: Sequence[str]) -> list[str]:
        """Translate sentences one by one, as ``python -m lib.translate`` reads and writes them (greedy).

        Args:
            sentences: German sentences.

        Returns:
            One English translation per sentence (``""`` for a blank one; a paragraph sentence by sentence and a
            too-long sentence in pieces, joined with spaces).

        Raises:
            ValueError: ``sentences`` is a single str.
        """
        if isinstance(sentences, str):
            raise ValueError("sentences must be a list of str, got a single str (pass [sentence])")
        out = []
        for sentence in sentences:
            pieces = [  # sentence by sentence, as lib.translate.translate
                p
                for s in split_sentences(clean_text(sentence))
                for p in text_pieces(self._plain, s, self.max_len - 1)[0]
            ]
            texts = [decode(self.tokenizer, self.greedy(p)[0]) for p in pieces]
            out.append(texts[0] if len(texts) == 1 else " ".join(t for t in texts if t))
        return out


def verify(folder: str | Path, run_dir: str | Path, sentences: Sequence[str]) -> dict:
    """Compare the export's greedy translations with :func:`lib.translate.translate`'s, and time them.

    Args:
        folder: an export folder.
        run_dir: the run it was exported from.
        sentences: German sentences.

    Returns:
        ``{"agree": n, "total": n, "mismatches": [(i, torch, onnx), ...], "load_seconds": s,
        "seconds_per_sentence": s, "first_sentence_seconds": s}`` (onnxruntime, CPU, one thread).
    """
    from .translate import translate

    run = load_run(run_dir)
    reference = translate(run.model, run.tokenizer, list(sentences))
    translator = OnnxTranslator(folder)
    times, got = [], []
    for sentence in sentences:
        start = time.perf_counter()
        got.append(translator.translate([sentence])[0])
        times.append(time.perf_counter() - start)
    mismatches = [(i, r, g) for i, (r, g) in enumerate(zip(reference, got)) if r != g]
    return {
        "agree": len(sentences) - len(mismatches),
        "total": len(sentences),
        "mismatches": mismatches,
        "load_seconds": translator.load_seconds,
        "first_sentence_seconds": times[0] if times else None,
        "seconds_per_sentence": sum(times) / len(times) if times else None,
    }


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m lib.export",
        description=(
            "Export a trained Transformer run to ONNX for greedy translation in a web page (onnxruntime-web): "
            "encoder.onnx, decoder.onnx, one shared weights.bin, tokenizer.json and manifest.json."
        ),
    )
    p.add_argument("--run", required=True, help="run folder (e.g. models/de-en)")
    p.add_argument("--out", required=True, type=_folder, help="export folder (created if needed; not inside a run)")
    p.add_argument("--dtype", default="fp16", help=f"weight storage: {', '.join(DTYPES)} (default fp16)")
    p.add_argument(
        "--verify",
        type=int,
        default=0,
        metavar="N",
        help="then translate the first N sentences of the Multi30k test set with onnxruntime and compare them with "
        "lib.translate's greedy output (exit 1 if any differs)",
    )
    return p


def _folder(value: str) -> str:
    """``--out``'s type: a folder's name, not an empty or blank string (which would mean the current folder)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must name a folder, got an empty string")
    return value


def main(argv: list[str] | None = None) -> int:
    """The command line: export a run, optionally verify the export against lib.translate.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 = exported (and, with ``--verify``, every sentence agrees); 1 = a sentence differs,
        a needed package is missing or the export folder is in use by another process; 2 = bad arguments (an
        ``--out`` that is, or is inside, a run folder among them: the export never writes into a run).
    """
    p = _parser()
    args = p.parse_args(argv)
    if args.dtype not in DTYPES:
        p.error(f"argument --dtype: must be one of {', '.join(DTYPES)}, got {args.dtype!r}")
    if args.verify < 0:
        p.error(f"argument --verify: must be >= 0, got {args.verify}")
    run = Path(args.run)
    if not (run / "model.pt").is_file() or not (run / "config.json").is_file():
        p.error(f"argument --run: {run} is not a run folder (no model.pt or config.json)")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        p.error(f"argument --out: {args.out} exists and is not a folder")
    owner = enclosing_folder(args.out)
    if owner is not None and (owner[1] != "export" or owner[0] != Path(args.out).resolve()):
        where = "is" if owner[0] == Path(args.out).resolve() else "is inside"
        p.error(f"argument --out: {args.out} {where} the {owner[1]} folder {owner[0]}: choose a folder outside it")
    try:
        _require("onnx", "onnxscript", *(["onnxruntime"] if args.verify else []))
    except ImportError as err:
        print(f"python -m lib.export: error: {err}", file=sys.stderr)
        return 1
    try:
        with lock_folder(args.out):
            manifest = export_onnx(run, args.out, args.dtype)
    except FolderInUse as err:
        print(f"python -m lib.export: error: {err}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError) as err:
        p.error(f"argument --run: {err}")
    except OSError as err:  # --out cannot be created or written (a file on its path, no permission, a full disk)
        p.error(f"argument --out: cannot write to {args.out} ({err.strerror or err})")
    sizes = ", ".join(f"{name} {f['bytes'] / 1e6:.2f} MB" for name, f in manifest["files"].items())
    print(f"exported {run} ({args.dtype}) to {args.out}: {sizes}; total {manifest['total_bytes'] / 1e6:.2f} MB")
    if not args.verify:
        return 0
    from .data import load_multi30k

    sentences = [de for de, _ in load_multi30k("test_2016_flickr")[: args.verify]]
    result = verify(args.out, run, sentences)
    print(
        f"onnxruntime greedy = lib.translate greedy for {result['agree']}/{result['total']} test sentences; "
        f"load {result['load_seconds'] * 1000:.0f} ms, {result['seconds_per_sentence'] * 1000:.1f} ms per sentence "
        "(CPU, 1 thread)"
    )
    for i, ref, got in result["mismatches"]:
        print(f"  sentence {i}: torch {ref!r}\n  {' ' * len(str(i))}          onnx  {got!r}")
    return 0 if not result["mismatches"] else 1


if __name__ == "__main__":
    sys.exit(main())
