"""The small experiments the chapters share: synthetic sequence tasks, accuracy by length, and cached runs.

The seq2seq bottleneck chapter asks how much a recurrent encoder–decoder remembers of a sentence, on a task
where the answer is known exactly: reverse a random sequence of symbols (:func:`sequence_task`). A model is
trained on it once (:func:`reversal_experiment`), scored by length (:func:`accuracy_by_length`), and kept on
disk, so that the Bahdanau chapter reuses the same run. This module sits above the models, the training loop
and decoding, which it drives; the models know nothing of it.

Source: the reversal task as a probe of memory, Sutskever et al. (2014), §3.3 (reversing the source);
accuracy against length, Cho et al. (2014b) and Bahdanau et al. (2015), Fig. 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import random
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import platformdirs
import torch
from torch import nn

from .data import make_batches, pad_batch
from .decode import greedy_decode
from .files import atomic_torch_save
from .seq2seq import Seq2Seq, Seq2SeqConfig
from .special_tokens import BOS_ID, EOS_ID, PAD_ID
from .training import TrainConfig, TrainResult, evaluate_loss, train, translation_batches

__all__ = [
    "sequence_task",
    "LengthAccuracy",
    "accuracy_by_length",
    "ReversalExperiment",
    "reversal_experiment",
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
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same model on any core count (and, for these small sizes, fastest)
    try:
        torch.manual_seed(seed)
        model = Seq2Seq(config)
        result, accuracy = _train_reversal(model, settings, progress)
    finally:
        torch.set_num_threads(threads)
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
