"""Training a Transformer: the paper's recipe (Adam + warm-up, label smoothing) in one plain loop.

    lr(step) = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)

The loop stops at a wall-clock budget (minutes of training, validation excluded) or a step budget,
validates periodically, writes checkpoints it can resume from, and can save snapshots of the model at
given minutes (to compare budgets from a single run).

Command line::

    python -m lib.train --preset multi30k --minutes 10 --out runs/multi30k

Source: Vaswani et al. (2017), §5.3 (Adam β₁ = 0.9, β₂ = 0.98, ε = 1e-9; Eq. (3) warm-up schedule)
and §5.4 (label smoothing ε_ls = 0.1; dropout).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm.auto import tqdm

from .data import Batch, encode_pairs, load_multi30k, make_batches
from .special_tokens import BOS_ID, EOS_ID, PAD_ID

__all__ = [
    "noam_lr",
    "label_smoothed_cross_entropy",
    "TrainConfig",
    "select_device",
    "evaluate_loss",
    "train",
    "TrainResult",
    "amp_context",
]


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The warm-up schedule: linear increase for ``warmup`` steps, then decay ∝ 1/√step.

    Args:
        step: optimiser step, counted from 1.
        d_model: model width.
        warmup: warm-up steps (4000 in the paper).
        factor: overall scale; the peak (at step = warmup) is factor · (d_model · warmup)^-0.5.

    Returns:
        The learning rate (unitless step size of Adam).

    Raises:
        ValueError: step < 1, warmup < 1 or d_model < 1.

    Source: Vaswani et al. 2017, §5.3, Eq. (3); seed 000.
    """
    if step < 1 or warmup < 1 or d_model < 1:
        raise ValueError(f"need step >= 1, warmup >= 1, d_model >= 1; got {step}, {warmup}, {d_model}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def label_smoothed_cross_entropy(
    logits: Tensor, target: Tensor, epsilon: float = 0.1, ignore_index: int = PAD_ID
) -> Tensor:
    """Mean cross-entropy against a smoothed target: (1 - ε) on the true token, ε spread uniformly over the vocabulary.

    loss = (1 - ε) · (−log p_y) + ε · mean_v(−log p_v), averaged over the non-ignored positions.

    Args:
        logits: ``(batch, seq, vocab)`` unnormalised scores.
        target: ``(batch, seq)`` token ids; positions equal to ``ignore_index`` (padding) are skipped.
        epsilon: smoothing ε_ls in [0, 1) (0.1 in the paper; 0 gives plain cross-entropy).
        ignore_index: id whose positions do not count.

    Returns:
        Scalar tensor (nats per target token).

    Raises:
        ValueError: shapes do not match; epsilon outside [0, 1).

    Source: Szegedy et al. (2016), §7; Vaswani et al. 2017, §5.4.
    """
    if logits.dim() != 3 or logits.shape[:2] != target.shape:
        raise ValueError(f"logits (batch, seq, vocab) {tuple(logits.shape)} and target (batch, seq) {tuple(target.shape)} do not match")
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1),
        ignore_index=ignore_index, label_smoothing=epsilon,
    )


def select_device(name: str | None = None) -> torch.device:
    """The device to train on: ``name`` if given, else CUDA, then Apple MPS, then CPU."""
    if name:
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


@dataclass
class TrainConfig:
    """Optimisation settings. The defaults are the capstone's CPU recipe.

    Attributes:
        max_tokens: batch size in tokens (batch × padded length, source or target side).
        peak_lr: the schedule's maximum, reached at ``warmup`` steps; sets noam_lr's factor.
        warmup: warm-up steps.
        betas, eps: Adam's hyper-parameters (paper: 0.9, 0.98, 1e-9).
        label_smoothing: ε_ls.
        clip_norm: gradient-norm clipping threshold (None = off).
        minutes: wall-clock budget of training (validation excluded); None = no limit.
        max_steps: step budget; None = no limit. At least one budget must be set.
        eval_every_minutes: validate this often (training minutes).
        snapshot_minutes: also save the model's weights when training time passes these minutes.
        seed: seeds Python, torch and the batch order.
        amp: mixed precision on CUDA (bf16 where supported, else fp16 with loss scaling); weights
            stay float32. Ignored on CPU and MPS (see :func:`amp_context`).
        max_len: drop training pairs longer than this many sub-words on either side.
    """

    max_tokens: int = 3000
    peak_lr: float = 1e-3
    warmup: int = 400
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-9
    label_smoothing: float = 0.1
    clip_norm: float | None = 1.0
    minutes: float | None = None
    max_steps: int | None = None
    eval_every_minutes: float = 1.0
    snapshot_minutes: tuple[float, ...] = ()
    seed: int = 0
    amp: bool = True
    max_len: int = 100

    def __post_init__(self) -> None:
        if self.minutes is None and self.max_steps is None:
            raise ValueError("set a budget: minutes or max_steps")
        if self.max_tokens < 1 or self.warmup < 1 or self.peak_lr <= 0:
            raise ValueError("max_tokens, warmup and peak_lr must be positive")
        self.betas = tuple(self.betas)
        self.snapshot_minutes = tuple(sorted(self.snapshot_minutes))

    def lr_factor(self, d_model: int) -> float:
        """noam_lr's factor that puts the peak at ``peak_lr``: peak_lr · √(d_model · warmup)."""
        return self.peak_lr * math.sqrt(d_model * self.warmup)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class TrainResult:
    """What a training run produced: the model (trained in place) and its history.

    ``history``: one dict per validation with ``step``, ``minutes`` (training time), ``train_loss``
    (label-smoothed, mean since the previous entry), ``val_loss`` (plain cross-entropy, nats/token),
    ``lr`` and ``tokens`` (target tokens seen so far).
    """

    history: list[dict] = field(default_factory=list)
    steps: int = 0
    minutes: float = 0.0
    tokens: int = 0
    stopped_by: str = ""

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / max(self.minutes * 60.0, 1e-9)


@torch.no_grad()
def evaluate_loss(model: nn.Module, batches: list[Batch], device: torch.device | str = "cpu") -> float:
    """Mean cross-entropy (nats per target token, no smoothing) of ``model`` on ``batches``."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for b in batches:
        b = b.to(device)
        logits = model(b.src, b.tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), b.tgt_out.reshape(-1),
                               ignore_index=PAD_ID, reduction="sum")
        total += loss.item()
        count += b.num_tokens
    model.train(was_training)
    return total / max(count, 1)


def amp_context(device: torch.device, enabled: bool = True):
    """Mixed precision on CUDA: autocast to bf16 where supported, else fp16 (with loss scaling in :func:`train`).

    Returns ``(context manager, dtype or None)``. On CPU and MPS it returns a disabled context: measured
    with ``bench/train_speed.py`` on a CPU with native bfloat16 (Intel AMX), bf16 autocast trained the
    capstone model about 25 % *slower* than float32, so the book keeps CPUs in float32.
    """
    if enabled and device.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype), dtype
    return torch.autocast(device.type, enabled=False), None


def _save_checkpoint(path: Path, model, optimizer, scheduler, result: TrainResult, epoch: int, config: TrainConfig) -> None:
    state = {
        "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
        "result": asdict(result), "epoch": epoch, "train_config": config.to_dict(),
        "rng": {"torch": torch.get_rng_state(), "python": random.getstate()},
    }
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train(
    model: nn.Module,
    train_examples: list[tuple[list[int], list[int]]],
    val_batches: list[Batch],
    config: TrainConfig,
    out_dir: str | Path | None = None,
    resume: bool = False,
    device: torch.device | str | None = None,
    progress: bool = True,
    log=print,
) -> TrainResult:
    """Train ``model`` on token-id pairs until the budget in ``config`` is spent.

    Args:
        model: a :class:`~lib.transformer.Transformer` or :class:`~lib.seq2seq.Seq2Seq` (trained in place): any
            module with ``forward(src, tgt_in) -> logits (batch, seq_t, V)`` and ``config.d_model``.
        train_examples: ``(source ids, target ids)`` pairs without specials (see :func:`lib.data.encode_pairs`).
        val_batches: batches for the periodic validation loss.
        config: a :class:`TrainConfig`.
        out_dir: where to write ``checkpoint.pt`` and snapshots (``model_{m}min.pt``); None = nowhere.
        resume: continue from ``out_dir/checkpoint.pt`` if it exists.
        device: default :func:`select_device`.
        progress: show a tqdm progress bar.
        log: called with one line of text per validation.

    Returns:
        A :class:`TrainResult` with the history.

    Raises:
        ValueError: empty training data; resume without out_dir.

    Source: Vaswani et al. 2017, §5.
    """
    if not train_examples:
        raise ValueError("train_examples is empty")
    if resume and out_dir is None:
        raise ValueError("resume=True needs out_dir")
    device = select_device(None if device is None else str(device))
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    random.seed(config.seed)
    torch.manual_seed(config.seed)

    model.to(device).train()
    d_model = model.config.d_model
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=config.betas, eps=config.eps)
    factor = config.lr_factor(d_model)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: noam_lr(s + 1, d_model, config.warmup, factor))
    amp_ctx, amp_dtype = amp_context(device, config.amp)
    scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)

    result, epoch = TrainResult(), 0
    ckpt = out / "checkpoint.pt" if out is not None else None
    if resume and ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        result = TrainResult(**state["result"])
        epoch = state["epoch"]
        torch.set_rng_state(state["rng"]["torch"])
        random.setstate(state["rng"]["python"])
        log(f"resumed from {ckpt} at step {result.steps} ({result.minutes:.1f} min)")

    budget_s = None if config.minutes is None else config.minutes * 60.0
    max_steps = config.max_steps
    eval_every_s = config.eval_every_minutes * 60.0
    next_eval = (math.floor(result.minutes * 60.0 / eval_every_s) + 1) * eval_every_s
    snapshots = [m for m in config.snapshot_minutes if m * 60.0 > result.minutes * 60.0]
    train_s = result.minutes * 60.0
    running_loss, running_n = 0.0, 0

    def budget_spent() -> str:
        if budget_s is not None and train_s >= budget_s:
            return "minutes"
        if max_steps is not None and result.steps >= max_steps:
            return "max_steps"
        return ""

    def validate() -> None:
        nonlocal running_loss, running_n
        val = evaluate_loss(model, val_batches, device) if val_batches else float("nan")
        entry = dict(
            step=result.steps, minutes=round(train_s / 60.0, 4),
            train_loss=running_loss / max(running_n, 1), val_loss=val,
            lr=scheduler.get_last_lr()[0], tokens=result.tokens,
        )
        result.history.append(entry)
        running_loss, running_n = 0.0, 0
        log(f"step {entry['step']:6d} | {entry['minutes']:6.2f} min | train {entry['train_loss']:.3f} | "
            f"val {val:.3f} (ppl {math.exp(min(val, 50)):.1f}) | lr {entry['lr']:.2e}")
        if ckpt is not None:
            _save_checkpoint(ckpt, model, optimizer, scheduler, result, epoch, config)

    total = budget_s if budget_s is not None else max_steps
    bar = tqdm(total=total, disable=not progress, unit="s" if budget_s is not None else "step",
               bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} [{elapsed}<{remaining}]{postfix}")
    bar.update(train_s if budget_s is not None else result.steps)
    while not budget_spent():
        batches = make_batches(train_examples, config.max_tokens, PAD_ID, BOS_ID, EOS_ID,
                               shuffle=True, seed=config.seed + epoch)
        for batch in batches:
            if budget_spent():
                break
            start = time.perf_counter()
            batch = batch.to(device)
            with amp_ctx:
                logits = model(batch.src, batch.tgt_in)
            loss = label_smoothed_cross_entropy(logits, batch.tgt_out, config.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if config.clip_norm is not None:
                scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            if device.type == "cuda":
                torch.cuda.synchronize()
            step_s = time.perf_counter() - start
            train_s += step_s
            result.steps += 1
            result.tokens += batch.num_tokens
            result.minutes = train_s / 60.0
            running_loss += loss.item()
            running_n += 1
            bar.update(min(step_s, max(budget_s - bar.n, 0.0)) if budget_s is not None else 1)
            bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
            while snapshots and train_s >= snapshots[0] * 60.0:
                m = snapshots.pop(0)
                if out is not None:
                    torch.save(model.state_dict(), out / f"model_{m:g}min.pt")
            if train_s >= next_eval:
                validate()
                next_eval += eval_every_s
        else:
            epoch += 1
    bar.close()
    result.stopped_by = budget_spent()
    if not result.history or result.history[-1]["step"] != result.steps:
        validate()
    model.eval()
    return result


# --- command line --------------------------------------------------------------------------------

def _parse_args(argv=None) -> argparse.Namespace:
    from .transformer import PRESETS

    from .seq2seq import SCORES

    p = argparse.ArgumentParser(prog="python -m lib.train", description="Train a Transformer (or a recurrent "
                                "encoder–decoder) on Multi30k German→English.")
    p.add_argument("--arch", default="transformer", choices=("transformer", "rnn"),
                   help="transformer (lib.transformer) or rnn (lib.seq2seq's GRU encoder–decoder)")
    p.add_argument("--preset", default="multi30k", choices=PRESETS, help="Transformer size preset (default: multi30k)")
    p.add_argument("--attention", default="additive", choices=("none", *SCORES),
                   help="rnn only: the attention score, or none for the fixed-vector model (default: additive)")
    p.add_argument("--d-embed", type=int, default=256, help="rnn only: embedding size")
    p.add_argument("--d-hidden", type=int, default=256, help="rnn only: decoder state size (encoder: half per direction)")
    p.add_argument("--out", required=True, help="run directory to write (model, tokenizer, config, history)")
    p.add_argument("--minutes", type=float, default=None, help="training budget in minutes (validation excluded)")
    p.add_argument("--steps", type=int, default=None, help="training budget in optimiser steps")
    p.add_argument("--vocab-size", type=int, default=8000, help="joint BPE vocabulary size")
    p.add_argument("--max-tokens", type=int, default=TrainConfig.max_tokens, help="tokens per batch")
    p.add_argument("--peak-lr", type=float, default=TrainConfig.peak_lr)
    p.add_argument("--warmup", type=int, default=TrainConfig.warmup)
    p.add_argument("--label-smoothing", type=float, default=TrainConfig.label_smoothing)
    p.add_argument("--dropout", type=float, default=None, help="override the preset's dropout")
    p.add_argument("--eval-every", type=float, default=None, help="validate every N training minutes")
    p.add_argument("--snapshots", default="", help="comma-separated minutes at which to save model snapshots")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--device", default=None, help="cuda, mps or cpu (default: best available)")
    p.add_argument("--no-amp", action="store_true", help="disable mixed precision on CUDA (bf16/fp16 autocast)")
    p.add_argument("--data", default=None, help="folder with the Multi30k .gz files (default: MULTI30K_DIR or download)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--save-dtype", choices=("float32", "float16"), default="float32",
                   help="precision of the saved model.pt (float16 halves it)")
    p.add_argument("--bleu", action="store_true", help="after training, decode the test set greedily and report BLEU")
    args = p.parse_args(argv)
    if args.minutes is None and args.steps is None:
        p.error("give a budget: --minutes M and/or --steps N")
    return args


def _cpu_name() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> None:
    from .checkpoint import save_run
    from .bpe import multi30k_tokenizer
    from .transformer import Transformer, TransformerConfig

    args = _parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    snapshots = tuple(float(m) for m in args.snapshots.split(",") if m.strip())
    tconf = TrainConfig(
        max_tokens=args.max_tokens, peak_lr=args.peak_lr, warmup=args.warmup,
        label_smoothing=args.label_smoothing, minutes=args.minutes, max_steps=args.steps,
        eval_every_minutes=args.eval_every or max((args.minutes or 10) / 20, 0.25),
        snapshot_minutes=snapshots, seed=args.seed, amp=not args.no_amp,
    )
    tokenizer = multi30k_tokenizer(args.vocab_size, root=args.data)
    overrides = {} if args.dropout is None else {"dropout": args.dropout}
    torch.manual_seed(args.seed)
    if args.arch == "rnn":
        from .seq2seq import Seq2Seq, Seq2SeqConfig

        mconf = Seq2SeqConfig(tokenizer.get_vocab_size(), d_embed=args.d_embed, d_hidden=args.d_hidden,
                              attention=None if args.attention == "none" else args.attention, **overrides)
        model, name = Seq2Seq(mconf), f"rnn ({args.attention} attention)"
    else:
        mconf = TransformerConfig.preset(args.preset, tokenizer.get_vocab_size(), **overrides)
        model, name = Transformer(mconf), args.preset
    train_ex = encode_pairs(load_multi30k("train", args.data), tokenizer, max_len=tconf.max_len)
    val_ex = encode_pairs(load_multi30k("val", args.data), tokenizer)
    val_batches = make_batches(val_ex, 4000, PAD_ID, BOS_ID, EOS_ID, shuffle=False)
    device = select_device(args.device)
    print(f"model {name}: {model.num_parameters():,} parameters | {len(train_ex):,} training pairs | "
          f"device {device} | threads {torch.get_num_threads()}")
    result = train(model, train_ex, val_batches, tconf, out_dir=args.out, resume=args.resume, device=device)
    info = dict(
        command="python -m lib.train " + " ".join(argv if argv is not None else __import__("sys").argv[1:]),
        device=str(device), threads=torch.get_num_threads(), machine=_cpu_name(),
        steps=result.steps, minutes=round(result.minutes, 2), tokens_per_second=round(result.tokens_per_second, 1),
        final_val_loss=result.history[-1]["val_loss"], stopped_by=result.stopped_by,
    )
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
    info["amp"] = str(amp_context(device, tconf.amp)[1])
    if args.bleu:
        from .translate import evaluate_bleu

        model.to(device)
        bleu = evaluate_bleu(model, tokenizer, "test_2016_flickr", root=args.data, beam_size=1, device=device)
        info["test_bleu_greedy"] = round(bleu.score, 2)
        info["bleu_signature"] = bleu.signature
        print(bleu)
    save_run(args.out, model.cpu(), tokenizer, train_config=tconf, history=result.history, results=info,
             weights_dtype=getattr(torch, args.save_dtype))
    print(json.dumps(info, indent=2))


if __name__ == "__main__":
    main()
