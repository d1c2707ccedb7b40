"""The small experiments the chapters share: synthetic sequence tasks, accuracy by length, and cached runs.

The seq2seq bottleneck chapter asks how much a recurrent encoder–decoder remembers of a sentence, on a task
where the answer is known exactly: reverse a random sequence of symbols (:func:`sequence_task`). A model is
trained on it once (:func:`reversal_experiment`), scored by length (:func:`accuracy_by_length`), and kept on
disk, so that the Bahdanau chapter reuses the same run. This module sits above the models, the training loop
and decoding, which it drives; the models know nothing of it.

The Transformer chapter's break-it exercise trains a tiny Transformer on a noisy copy task with and without the
causal mask (:func:`copy_task_run`); the chapter runs it, and the exercise's checker computes its reference with it.

The modern-Transformer chapter's trainings live here too: the same small translation model with four kinds of
positions, trained on short sentences and scored on long ones (:func:`extrapolation_run`), and the tiny GPT against
a modern decoder of the same size (:func:`language_model_run`). ``bench/modern_transformer.py`` runs them once and
keeps their results in ``models/modern/results.json`` (:func:`load_modern_results`).

Source: the reversal task as a probe of memory, Sutskever et al. (2014), §3.3 (reversing the source);
accuracy against length, Cho et al. (2014b) and Bahdanau et al. (2015), Fig. 2.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import pickle
import random
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import platformdirs
import torch
from torch import Tensor, nn

from .bpe import multi30k_tokenizer
from .data import encode_pairs, load_multi30k, make_batches, pad_batch
from .decode import greedy_decode
from .files import atomic_torch_save, atomic_write_text, strict_json
from .gpt import GPT, GPTConfig, lm_loss
from .lm import gpt_sequences, sentence_batches
from .metrics import bleu_by_length
from .modern import ModernGPT, ModernGPTConfig
from .positional import LearnedPositionalEncoding, NoPositionalEncoding
from .positional_attention import ALiBiMultiHeadAttention, RotaryMultiHeadAttention
from .seq2seq import Seq2Seq, Seq2SeqConfig
from .special_tokens import BOS_ID, EOS_ID, PAD_ID
from .training import TrainConfig, TrainResult, evaluate_loss, seq2seq_loss, train, translation_batches
from .transformer import Transformer, TransformerConfig
from .translate import translate

__all__ = [
    "sequence_task",
    "LengthAccuracy",
    "accuracy_by_length",
    "ReversalExperiment",
    "reversal_experiment",
    "COPY_VOCAB",
    "COPY_LENGTH",
    "COPY_NOISE",
    "copy_batch",
    "copy_task_run",
    "POSITION_KINDS",
    "transformer_with_positions",
    "extrapolation_run",
    "language_model_run",
    "MODERN_RESULTS",
    "load_modern_results",
    "save_modern_results",
]


# --- the synthetic task --------------------------------------------------------------------------


def sequence_task(
    n: int,
    min_len: int,
    max_len: int,
    num_symbols: int = 20,
    kind: str = "reverse",
    seed: int = 0,
) -> list[tuple[list[int], list[int]]]:
    """Random symbol sequences and their targets: the clean test of how much a model remembers.

    Symbols are token ids ``4 … 4 + num_symbols - 1`` (ids 0–3 are PAD, BOS, EOS, UNK as in
    :mod:`lib.bpe`); lengths are uniform in ``[min_len, max_len]``. ``kind="reverse"``: the target is
    the source backwards; ``"copy"``: the source itself. The pairs have no specials, like
    ``lib.data.encode_pairs`` output, so ``lib.training.train`` takes them directly.

    Args:
        n: number of pairs.
        min_len, max_len: shortest and longest source, in symbols (both included).
        num_symbols: size of the alphabet (the ids 4 … 4 + num_symbols − 1).
        kind: ``"reverse"`` (target = source backwards) or ``"copy"`` (target = source).
        seed: seeds a private ``random.Random``; the same seed gives the same pairs.

    Returns:
        ``n`` pairs ``(source, target)``, two lists of token ids of the same length.

    Raises:
        ValueError: ``min_len < 1``, ``max_len < min_len``, ``num_symbols < 2``, unknown kind.
    """
    if min_len < 1 or max_len < min_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if num_symbols < 2:
        raise ValueError(f"num_symbols must be at least 2, got {num_symbols}")
    if kind not in ("reverse", "copy"):
        raise ValueError(f"kind must be 'reverse' or 'copy', got {kind!r}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        src = [4 + rng.randrange(num_symbols) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((src, src[::-1] if kind == "reverse" else list(src)))
    return pairs


@dataclass
class LengthAccuracy:
    """Accuracy of greedy outputs per source length; the lists are aligned, one entry per length.

    Attributes:
        lengths: the source lengths measured, ascending.
        token: mean fraction of target positions predicted right, in [0, 1] (a missing or extra token counts
            as wrong: the denominator is max(len(output), len(target))).
        sequence: fraction of outputs exactly right, in [0, 1].
        count: number of sequences of that length.
    """

    lengths: list[int]
    token: list[float]
    sequence: list[float]
    count: list[int]


@torch.no_grad()
def accuracy_by_length(
    model: nn.Module,
    pairs: list[tuple[list[int], list[int]]],
    batch_size: int = 200,
    device: torch.device | str = "cpu",
) -> LengthAccuracy:
    """Greedy-decode ``pairs``' sources and score the outputs against their targets, per source length.

    Works for any model that ``lib.decode.greedy_decode`` can drive (recurrent or Transformer). Each source
    gets EOS appended, as in training; the model is put in eval mode and moved to ``device``.

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``).
        pairs: ``(source, target)`` token-id lists without specials, e.g. from :func:`sequence_task`.
        batch_size: sentences decoded at once.
        device: where to run the model.

    Returns:
        A :class:`LengthAccuracy` over the source lengths present in ``pairs``.

    Raises:
        ValueError: ``pairs`` is empty.
    """
    if not pairs:
        raise ValueError("pairs is empty")
    model.eval().to(device)
    by_len: dict[int, list[tuple[float, float]]] = {}
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        width = max(len(s) for s, _ in chunk) + 1
        src = pad_batch([s + [EOS_ID] for s, _ in chunk])
        outs = greedy_decode(model, src.to(device), max_len=width + 5)
        for (s, t), o in zip(chunk, outs):
            right = sum(a == b for a, b in zip(o, t))
            by_len.setdefault(len(s), []).append((right / max(len(o), len(t)), float(o == t)))
    lengths = sorted(by_len)
    return LengthAccuracy(
        lengths=lengths,
        token=[sum(a for a, _ in by_len[n]) / len(by_len[n]) for n in lengths],
        sequence=[sum(b for _, b in by_len[n]) / len(by_len[n]) for n in lengths],
        count=[len(by_len[n]) for n in lengths],
    )


# --- the bottleneck experiment, trained once and cached ------------------------------------------


@dataclass
class ReversalExperiment:
    """One model trained on the reversal task and measured.

    Attributes:
        attention: the score function's name, or None for the fixed-vector model.
        accuracy: :class:`LengthAccuracy` on 1,000 fresh test sequences.
        history: the training loop's validation history (``lib.training.TrainResult.history``).
        steps: optimiser steps taken.
        minutes: training time on the machine that ran it (so it varies).
        model: the trained :class:`Seq2Seq` (eval mode, CPU).
        settings: the arguments of :func:`reversal_experiment` (and a format version) that name the cache file.
        cached: True when loaded from the cache instead of trained now.
    """

    attention: str | None
    accuracy: LengthAccuracy
    history: list[dict]
    steps: int
    minutes: float
    model: Seq2Seq
    settings: dict = field(default_factory=dict)
    cached: bool = False


def _cache_root(cache_dir: str | os.PathLike | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    return Path(platformdirs.user_cache_dir("attention-book")) / "seq2seq"


def reversal_experiment(
    attention: str | None,
    steps: int = 600,
    min_len: int = 4,
    max_len: int = 30,
    num_symbols: int = 20,
    d_embed: int = 64,
    d_hidden: int = 128,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> ReversalExperiment:
    """Train a model on sequence reversal and measure its accuracy by length; cached on disk.

    The model sees 20,000 random sequences of lengths ``min_len … max_len`` (a new batch order each
    epoch) for ``steps`` optimiser steps of ``lib.training.train`` (batches of 2,000 tokens, peak
    learning rate 3·10⁻³ after 100 warm-up steps, no label smoothing), then greedily reverses 1,000
    fresh sequences. The first call trains (one to two minutes on one CPU core for the attention model, half
    that without); later calls with the same arguments load the result from ``cache_dir`` (default:
    the user cache folder, ``.../attention-book/seq2seq``), so two chapters can share one run.

    Args:
        attention: None for the fixed-vector model, else a score name from :data:`SCORES`.
        steps: training budget in optimiser steps. Training runs on one CPU thread, so a step budget
            (unlike minutes) gives the same model on any machine with the same kind of CPU; the validation
            history is taken every 0.1 training minutes, so its steps do vary with the machine's speed.
        min_len, max_len, num_symbols: the task (see :func:`sequence_task`).
        d_embed, d_hidden: model sizes (see :class:`Seq2SeqConfig`).
        seed: seeds the data and the training.
        cache_dir: where to keep results; the file name encodes every argument.
        progress: show the training progress bar.

    Returns:
        A :class:`ReversalExperiment`.
    """
    settings = dict(
        attention=attention,
        steps=steps,
        min_len=min_len,
        max_len=max_len,
        num_symbols=num_symbols,
        d_embed=d_embed,
        d_hidden=d_hidden,
        seed=seed,
        version=2,
    )
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    folder = _cache_root(cache_dir)
    path = folder / f"reversal-{attention or 'fixed'}-{key}.pt"
    config = Seq2SeqConfig(
        4 + num_symbols, d_embed=d_embed, d_hidden=d_hidden, attention=attention, dropout=0.0, max_len=2 * max_len + 10
    )
    if path.is_file():
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            model = Seq2Seq(config)
            model.load_state_dict(state["model"])
            return ReversalExperiment(
                attention,
                LengthAccuracy(**state["accuracy"]),
                state["history"],
                state["steps"],
                state["minutes"],
                model.eval(),
                settings,
                cached=True,
            )
        except (OSError, EOFError, RuntimeError, pickle.UnpicklingError, KeyError, TypeError) as err:
            # unreadable, truncated or from another version of this function: say so, then train again
            warnings.warn(
                f"the cached experiment {path} could not be read ({type(err).__name__}: {err}); "
                "training it again (one to two minutes)",
                stacklevel=2,
            )
    with _one_thread():
        torch.manual_seed(seed)
        model = Seq2Seq(config)
        result, accuracy = _train_reversal(model, settings, progress)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        state = dict(
            model=model.state_dict(),
            accuracy=asdict(accuracy),
            history=result.history,
            steps=result.steps,
            minutes=result.minutes,
            settings=settings,
        )
        atomic_torch_save(state, path)
    except OSError as err:  # an unwritable cache only costs a retrain next time
        warnings.warn(
            f"could not write the experiment cache {path} ({err}); it will be trained again next time", stacklevel=2
        )
    return ReversalExperiment(attention, accuracy, result.history, result.steps, result.minutes, model, settings)


def _train_reversal(model: Seq2Seq, settings: dict, progress: bool) -> tuple[TrainResult, LengthAccuracy]:
    seed, min_len, max_len, num_symbols = (settings[k] for k in ("seed", "min_len", "max_len", "num_symbols"))
    pairs = sequence_task(20_000, min_len, max_len, num_symbols, seed=seed)
    val = make_batches(sequence_task(500, min_len, max_len, num_symbols, seed=seed + 1), 4000, PAD_ID, BOS_ID, EOS_ID)
    tconf = TrainConfig(
        max_tokens=2000,
        peak_lr=3e-3,
        warmup=100,
        label_smoothing=0.0,
        max_steps=settings["steps"],
        eval_every_minutes=0.1,
        seed=seed,
    )
    result = train(
        model,
        translation_batches(pairs, tconf.max_tokens, tconf.seed),
        tconf,
        evaluate=lambda m: evaluate_loss(m, val),
        device="cpu",
        progress=progress,
        log=lambda *_: None,
    )
    accuracy = accuracy_by_length(model, sequence_task(1000, min_len, max_len, num_symbols, seed=seed + 2))
    model.eval()
    return result, accuracy


# --- the Transformer chapter's break-it: a tiny model trained with and without the causal mask ---------------
# (exercise tr-break-causal: the chapter runs copy_task_run, and its checker computes the reference with it)

COPY_VOCAB, COPY_LENGTH, COPY_NOISE = 16, 8, 0.3  # ids 4..15: 12 ordinary tokens; 8 per sentence; 30 % noise


def copy_batch(n: int, gen: torch.Generator, noise: float = COPY_NOISE) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` pairs of the copy task: the target copies the source, each token replaced at random with prob. ``noise``.

    Args:
        n: pairs in the batch.
        gen: the random generator (draws the sources, then the noise).
        noise: the probability that a target token is a random token instead of the source's.

    Returns:
        ``(src, tgt_in, tgt_out)``, each ``(n, COPY_LENGTH)``: ``tgt_in`` is ``<s>`` then ``tgt_out`` shifted right.
    """
    src = torch.randint(4, COPY_VOCAB, (n, COPY_LENGTH), generator=gen)
    swap = torch.rand(n, COPY_LENGTH, generator=gen) < noise
    tgt = torch.where(swap, torch.randint(4, COPY_VOCAB, (n, COPY_LENGTH), generator=gen), src)
    return src, torch.cat([torch.full((n, 1), BOS_ID), tgt[:, :-1]], dim=1), tgt


def copy_task_run(forward: Callable | None = None, steps: int = 200, seed: int = 0) -> dict[str, float]:
    """Train ``TransformerConfig.tiny`` on the noisy copy task with ``forward``; its training loss and greedy accuracy.

    Args:
        forward: ``forward(model, src, tgt_in) -> logits (batch, seq_t, vocab)``; None = the model's own
            (``Transformer.forward``, with the causal mask).
        steps: Adam steps (learning rate 3e-3) on batches of 64 fresh noisy pairs.
        seed: seeds the weights and the batches.

    Returns:
        ``{"loss": the mean training loss of the last 10 steps (nats per token), "greedy": the fraction of target
        tokens that greedy decoding with the same forward gets right on 256 noise-free test pairs}``.
    """
    forward = forward or (lambda model, src, tgt_in: model(src, tgt_in))
    with _one_thread():  # a tiny model: a second thread gains nothing, and on a busy CPU it costs minutes
        torch.manual_seed(seed)
        model = Transformer(TransformerConfig.tiny(COPY_VOCAB))
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        gen = torch.Generator().manual_seed(seed)
        losses = []
        for _ in range(steps):
            src, tgt_in, tgt_out = copy_batch(64, gen)
            loss = nn.functional.cross_entropy(forward(model, src, tgt_in).flatten(0, 1), tgt_out.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        src, _, tgt_out = copy_batch(256, torch.Generator().manual_seed(seed + 1), noise=0.0)
        with torch.no_grad():
            ys = torch.full((256, 1), BOS_ID)
            for _ in range(COPY_LENGTH):  # greedy: feed back the model's own best token
                ys = torch.cat([ys, forward(model, src, ys)[:, -1].argmax(-1, keepdim=True)], dim=1)
        return {"loss": float(np.mean(losses[-10:])), "greedy": (ys[:, 1:] == tgt_out).float().mean().item()}


# --- the modern-Transformer chapter: positions that extrapolate, and a modern decoder ----------------------------

POSITION_KINDS = ("sinusoidal", "learned", "rope", "alibi")

# Where the chapter's trained results are kept (committed with the book; ``bench/modern_transformer.py`` writes it).
MODERN_RESULTS = Path(__file__).resolve().parent.parent / "models" / "modern" / "results.json"

_MODERN_VERSION = 1


def transformer_with_positions(config: TransformerConfig, kind: str, seed: int = 0) -> Transformer:
    """A :class:`lib.transformer.Transformer` whose positions are sinusoidal, learned, rotary (RoPE) or ALiBi.

    The model is built from ``config`` under ``torch.manual_seed(seed)``, so every kind starts from the same
    weights; then ``"learned"`` replaces the sinusoidal table by a learned one (``model.positional``), and
    ``"rope"`` and ``"alibi"`` drop the table and swap every *self*-attention of the encoder and the decoder for
    :class:`~lib.positional_attention.RotaryMultiHeadAttention` or
    :class:`~lib.positional_attention.ALiBiMultiHeadAttention` with the same weights (cross-attention compares a
    target position with source positions and keeps plain attention).

    Args:
        config: the model's sizes.
        kind: one of :data:`POSITION_KINDS`.
        seed: seeds the initial weights.

    Returns:
        The model (train mode).

    Raises:
        TypeError: config is not a ``TransformerConfig``.
        ValueError: an unknown kind; RoPE with an odd d_k.

    Source: Vaswani et al. 2017, §3.5 (sinusoidal and learned); Su et al. 2021, Eq. (34) (RoPE); Press et al.
    2022, §3 (ALiBi).
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
    if kind not in POSITION_KINDS:
        raise ValueError(f"kind must be one of {POSITION_KINDS}, got {kind!r}")
    torch.manual_seed(seed)
    model = Transformer(config)
    c = config
    if kind == "learned":
        model.positional = LearnedPositionalEncoding(c.d_model, c.max_len, c.dropout)
    elif kind in ("rope", "alibi"):
        cls = RotaryMultiHeadAttention if kind == "rope" else ALiBiMultiHeadAttention
        model.positional = NoPositionalEncoding(c.d_model, c.max_len, c.dropout)
        for layer in [*model.encoder.layers, *model.decoder.layers]:
            swapped = cls(c.d_model, c.num_heads, c.attention_dropout, fused=c.fused_attention)
            swapped.load_state_dict(layer.self_attn.state_dict())
            layer.self_attn = swapped
    return model.train()


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Run the block on one torch thread (the same numbers on any core count, and fastest at these small sizes),
    then restore the caller's setting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _recording(loss_fn, losses: list[float]):
    def record(model: nn.Module, batch):
        loss = loss_fn(model, batch)
        losses.append(round(loss.item(), 6))
        return loss

    return record


def _length(pair: tuple[list[int], list[int]]) -> int:
    return max(len(pair[0]), len(pair[1]))


def extrapolation_run(
    kind: str,
    steps: int = 300,
    short: int = 16,
    edges: tuple[int, ...] = (1, 13, 17, 21, 25, 29),
    max_tokens: int = 1000,
    seed: int = 0,
    measure: bool = True,
    progress: bool = False,
) -> dict:
    """Train a small German→English Transformer on the short Multi30k pairs only, then score it by length.

    The model: ``TransformerConfig.multi30k`` with 2 + 2 layers, d_model 64 and d_ff 256 (4 heads, pre-LN,
    dropout 0.1, 64 positions), positions as ``kind`` (:func:`transformer_with_positions`). It trains on the
    training pairs whose source and target both have at most ``short`` sub-words (64 % of them) for ``steps``
    steps of ``lib.training.train`` (batches of ``max_tokens`` tokens, peak learning rate 2·10⁻³ after 100
    warm-up steps, label smoothing 0.1), on one CPU thread, so the same arguments give the same numbers on the
    same kind of machine. It is then scored on the validation and 2016 test pairs (2,014, of every length),
    bucketed by the longer side's length: cross-entropy per target token (teacher forcing, no smoothing) and
    the corpus BLEU of greedy translations.

    Args:
        kind: one of :data:`POSITION_KINDS`.
        steps: optimiser steps.
        short: the longest pair trained on, in sub-words (the longer of source and target).
        edges: bucket starts for the scores (as ``lib.metrics.bleu_by_length``); the last bucket is open.
        max_tokens: tokens per training batch.
        seed: seeds the weights, the batch order and dropout.
        measure: score the trained model by length (False: train only, for a quick reproduction of the
            first steps).
        progress: show the training progress bar.

    Returns:
        A JSON-ready dict: ``kind``; ``settings`` (the arguments); ``parameters``; ``step_losses`` (the
        training loss of every step, label-smoothed); ``history`` (``lib.training.TrainResult.history``,
        ``val_loss`` = cross-entropy on the short validation pairs, every 100 steps); ``minutes`` (training
        time on this machine); with ``measure``, ``buckets``: one dict per length bucket with ``low``, ``high``
        (``None`` for the open last one), ``pairs``, ``tokens``, ``loss`` (nats per target token) and ``bleu``.

    Raises:
        ValueError: an unknown kind; steps, short or max_tokens < 1; edges not increasing.
        FileNotFoundError: the Multi30k files are missing and cannot be downloaded.

    Source: the experiment of Press et al. 2022, "Train Short, Test Long", §2 and Figure 1 (train on short
    inputs, evaluate on longer ones), on the book's translation task.
    """
    if kind not in POSITION_KINDS:
        raise ValueError(f"kind must be one of {POSITION_KINDS}, got {kind!r}")
    for name, value in (("steps", steps), ("short", short), ("max_tokens", max_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    edges = tuple(edges)
    if not edges or any(b <= a for a, b in itertools.pairwise(edges)):
        raise ValueError(f"edges must be a non-empty, strictly increasing sequence, got {edges}")
    settings = dict(steps=steps, short=short, edges=list(edges), max_tokens=max_tokens, seed=seed)
    tokenizer = multi30k_tokenizer()
    vocab = tokenizer.get_vocab_size()
    train_pairs = [p for p in encode_pairs(load_multi30k("train"), tokenizer) if _length(p) <= short]
    val_short = [p for p in encode_pairs(load_multi30k("val"), tokenizer) if _length(p) <= short]
    val_batches = make_batches(val_short, 4000, PAD_ID, BOS_ID, EOS_ID, shuffle=False)
    config = TransformerConfig.multi30k(
        vocab, d_model=64, d_ff=256, num_encoder_layers=2, num_decoder_layers=2, max_len=64
    )
    with _one_thread():
        model = transformer_with_positions(config, kind, seed)
        losses: list[float] = []
        tconf = TrainConfig(
            max_tokens=max_tokens,
            peak_lr=2e-3,
            warmup=100,
            label_smoothing=0.1,
            max_steps=steps,
            eval_every_steps=100,
            seed=seed,
        )
        smoothing = tconf.label_smoothing
        result = train(
            model,
            translation_batches(train_pairs, max_tokens, seed),
            tconf,
            loss_fn=_recording(lambda m, b: seq2seq_loss(m, b, smoothing), losses),
            evaluate=lambda m: evaluate_loss(m, val_batches),
            device="cpu",
            progress=progress,
            log=lambda *_: None,
        )
        out = dict(
            kind=kind,
            settings=settings,
            parameters=sum(p.numel() for p in model.parameters()),
            step_losses=losses,
            history=result.history,
            minutes=round(result.minutes, 3),
        )
        if measure:
            out["buckets"] = _score_by_length(model, tokenizer, list(edges))
    return out


@torch.no_grad()
def _score_by_length(model: Transformer, tokenizer, edges: list[int]) -> list[dict]:
    """Loss per target token and greedy BLEU of the validation and test pairs, per length bucket."""
    model.eval()
    texts = load_multi30k("val") + load_multi30k("test_2016_flickr")
    pairs = encode_pairs(texts, tokenizer)
    lengths = [_length(p) for p in pairs]
    hypotheses = translate(model, tokenizer, [de for de, _ in texts], beam_size=1, batch_size=100)
    bleu = bleu_by_length(hypotheses, [en for _, en in texts], lengths, edges)
    buckets = []
    for b in bleu:
        chosen = [p for p, n in zip(pairs, lengths) if b.low <= n <= b.high]
        batches = make_batches(chosen, 4000, PAD_ID, BOS_ID, EOS_ID, shuffle=False)
        buckets.append(
            dict(
                low=b.low,
                high=b.high if b.high < 10**9 else None,
                pairs=b.count,
                tokens=sum(batch.num_tokens for batch in batches),
                loss=round(evaluate_loss(model, batches), 5),
                bleu=round(b.bleu.score, 3),
            )
        )
    return buckets


def language_model_run(
    kind: str, steps: int = 300, batch_size: int = 32, seed: int = 0, validate: bool = True, progress: bool = False
) -> dict:
    """Train the book's tiny GPT or the modern decoder of the same size on Multi30k's English sentences.

    Both models have d_model 128, 4 heads, 2 layers and 48 positions and the same number of parameters within
    0.01 % (``GPTConfig.tiny`` and ``ModernGPTConfig.tiny``): ``"gpt"`` is GPT-2's block (pre-LN LayerNorm,
    learned positions, GELU feed-forward, multi-head attention), ``"modern"`` Llama's (RMSNorm, RoPE, SwiGLU,
    grouped-query attention with 2 key/value heads). Both see the same batches — 32 sentences ``<s> … </s>``
    of the 29,000 training captions, a new shuffle each epoch — for the same ``steps`` with the same schedule
    (peak learning rate 2·10⁻³ after 100 warm-up steps, as the BERT/GPT chapter), on one CPU thread.

    Args:
        kind: ``"gpt"`` or ``"modern"``.
        steps: optimiser steps.
        batch_size: sentences per batch.
        seed: seeds the weights, the batch order and dropout.
        validate: compute the validation loss every 50 steps (False: train only, for a quick reproduction of the
            first steps; the history's ``val_loss`` is then NaN).
        progress: show the training progress bar.

    Returns:
        A JSON-ready dict: ``kind``, ``settings``, ``parameters``, ``step_losses`` (the training loss of every
        step), ``history`` (``val_loss`` = cross-entropy per token on the 1,014 validation sentences, every 50
        steps) and ``minutes`` (training time on this machine).

    Raises:
        ValueError: an unknown kind; steps or batch_size < 1.
        FileNotFoundError: the Multi30k files are missing and cannot be downloaded.

    Source: Radford et al. 2018, §3.1 (the language-model loss); Touvron et al. 2023, "LLaMA", §2.2 (the modern
    block).
    """
    if kind not in ("gpt", "modern"):
        raise ValueError(f"kind must be 'gpt' or 'modern', got {kind!r}")
    for name, value in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    settings = dict(steps=steps, batch_size=batch_size, seed=seed)
    tokenizer = multi30k_tokenizer()
    vocab = tokenizer.get_vocab_size()
    english = [
        [t.ids for t in tokenizer.encode_batch([en for _, en in load_multi30k(s)], add_special_tokens=False)]
        for s in ("train", "val")
    ]
    config = GPTConfig.tiny(vocab) if kind == "gpt" else ModernGPTConfig.tiny(vocab)
    train_seqs, val_seqs = (gpt_sequences(ids, config.max_len) for ids in english)
    val_batch = pad_batch(val_seqs)

    def lm_step(model: nn.Module, batch: list[list[int]]):
        x = pad_batch(batch)
        return lm_loss(model(x), x)

    with _one_thread():
        torch.manual_seed(seed)
        model = GPT(config) if kind == "gpt" else ModernGPT(config)
        losses: list[float] = []
        result = train(
            model,
            sentence_batches(train_seqs, batch_size, seed),
            TrainConfig(max_steps=steps, peak_lr=2e-3, warmup=100, eval_every_steps=50, seed=seed),
            loss_fn=_recording(lm_step, losses),
            evaluate=(lambda m: lm_loss(m(val_batch), val_batch).item()) if validate else None,
            device="cpu",
            progress=progress,
            log=lambda *_: None,
        )
    return dict(
        kind=kind,
        settings=settings,
        parameters=model.num_parameters(),
        step_losses=losses,
        history=result.history,
        minutes=round(result.minutes, 3),
    )


def load_modern_results(path: str | os.PathLike | None = None) -> dict:
    """The cached results of the modern-Transformer chapter's trainings (written by ``bench/modern_transformer.py``).

    Args:
        path: the JSON file; default :data:`MODERN_RESULTS` (``models/modern/results.json``).

    Returns:
        ``{"version", "extrapolation": {kind: extrapolation_run(...)}, "language_models": {kind:
        language_model_run(...)}, "machine", "total_minutes"}``.

    Raises:
        FileNotFoundError: no such file (the message gives the command that writes it).
        ValueError: the file is not this version's JSON.
    """
    path = Path(MODERN_RESULTS if path is None else path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no cached results at {path}; write them with `python bench/modern_transformer.py --out {path}` "
            "(about 20 minutes on one CPU core)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON ({err}); write it again with bench/modern_transformer.py") from None
    if not isinstance(data, dict) or data.get("version") != _MODERN_VERSION:
        raise ValueError(
            f"{path} is not version {_MODERN_VERSION} of the modern-Transformer results; write it again with "
            "bench/modern_transformer.py"
        )
    return data


def save_modern_results(extrapolation: dict, language_models: dict, path: str | os.PathLike, **extra) -> Path:
    """Write the chapter's results as JSON, atomically (what :func:`load_modern_results` reads).

    Args:
        extrapolation: ``{kind: extrapolation_run(kind)}``.
        language_models: ``{kind: language_model_run(kind)}``.
        path: the JSON file to write.
        **extra: other JSON-ready fields to keep (the machine, the total time).

    Returns:
        The path written.
    """
    data = dict(version=_MODERN_VERSION, extrapolation=extrapolation, language_models=language_models, **extra)
    return atomic_write_text(path, strict_json(data, indent=1, ensure_ascii=False, nan="error"))  # no bare NaN
