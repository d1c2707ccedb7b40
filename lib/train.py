"""Train a translation model on Multi30k from the command line: ``python -m lib.train``.

    python -m lib.train --preset multi30k --minutes 10 --out runs/multi30k
    python -m lib.train --arch rnn --attention additive --steps 1500 --out runs/rnn-attention
    torchrun --standalone --nproc_per_node 4 -m lib.train --device cuda --steps 4000 --out runs/4gpu

It builds the model (a Transformer preset, or a recurrent encoder–decoder), the tokenizer and the batches,
trains with the book's one loop (``lib.training.train``), optionally scores the test split with BLEU, and
writes a run folder (``lib.checkpoint.save_run``) that ``python -m lib.translate --run`` reads. Its
``results.json`` gives ``minutes`` (training time, the budget's clock) and ``wall_minutes`` (the whole call of the
loop, validations and checkpoints included).

Started by ``torchrun``, each process trains on its share of every batch (data parallelism, see
``lib.training``): ``--max-tokens`` stays the size of the whole batch, rank 0 writes the run folder and
prints, and ``results.json`` records ``world_size`` and ``backend``.

Source: the recipe of Vaswani et al. (2017), §5 (see ``lib.training``).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from .bpe import multi30k_tokenizer
from .checkpoint import enclosing_folder, save_run, snapshot_files
from .data import ChecksumError, encode_pairs, load_multi30k, make_batches
from .files import FolderInUse, lock_folder, strict_json
from .seq2seq import SCORES, Seq2Seq, Seq2SeqConfig
from .special_tokens import BOS_ID, EOS_ID, PAD_ID
from .training import (
    CHECKPOINT,
    Ranks,
    TrainConfig,
    TrainingDiverged,
    TrainingInterrupted,
    amp_context,
    enable_tf32,
    evaluate_loss,
    select_device,
    setup_distributed,
    train,
    translation_batches,
)
from .transformer import Transformer, TransformerConfig
from .translate import evaluate_bleu

__all__ = ["main"]


# --- command line --------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m lib.train",
        description="Train a Transformer (or a recurrent encoder–decoder) on Multi30k German→English. "
        "Every argument is checked before any data is loaded; an existing run folder is never replaced "
        "without --overwrite; Ctrl-C (or SIGTERM) saves a checkpoint and prints the command that resumes it.",
    )
    p.add_argument(
        "--arch",
        default="transformer",
        choices=("transformer", "rnn"),
        help="transformer (lib.transformer) or rnn (lib.seq2seq's GRU encoder–decoder)",
    )
    p.add_argument(
        "--preset",
        default="multi30k",
        choices=TransformerConfig.PRESETS,
        help="Transformer size preset (default: multi30k)",
    )
    p.add_argument(
        "--attention",
        default="additive",
        choices=("none", *SCORES),
        help="rnn only: the attention score, or none for the fixed-vector model (default: additive)",
    )
    p.add_argument("--d-embed", type=int, default=256, help="rnn only: embedding size")
    p.add_argument(
        "--d-hidden", type=int, default=256, help="rnn only: decoder state size (encoder: half per direction)"
    )
    p.add_argument(
        "--out", required=True, type=_folder, help="run directory to write (model, tokenizer, config, history)"
    )
    p.add_argument("--minutes", type=float, default=None, help="training budget in minutes (validation excluded)")
    p.add_argument("--steps", type=int, default=None, help="training budget in optimiser steps")
    p.add_argument("--vocab-size", type=int, default=8000, help="joint BPE vocabulary size")
    p.add_argument(
        "--max-tokens",
        type=int,
        default=TrainConfig.max_tokens,
        help="tokens per batch, the whole batch: under torchrun each process takes its share (on a GPU, "
        "larger batches, e.g. 12000, keep it busy)",
    )
    p.add_argument("--peak-lr", type=float, default=TrainConfig.peak_lr)
    p.add_argument("--warmup", type=int, default=TrainConfig.warmup)
    p.add_argument("--label-smoothing", type=float, default=TrainConfig.label_smoothing)
    p.add_argument("--dropout", type=float, default=None, help="override the preset's dropout")
    p.add_argument("--eval-every", type=float, default=None, help="validate every N training minutes")
    p.add_argument("--snapshots", default="", help="comma-separated minutes at which to save model snapshots")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument(
        "--device",
        default="auto",
        help="auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps; under torchrun, cuda means one GPU per "
        "process (cuda:LOCAL_RANK)",
    )
    p.add_argument(
        "--amp",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="mixed precision on CUDA: bf16 autocast (fp16 with loss scaling on GPUs without bf16); no effect on CPU",
    )
    p.add_argument(
        "--tf32",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="TensorFloat-32 for the float32 matrix products on CUDA; no effect on CPU",
    )
    p.add_argument(
        "--compile", action="store_true", help="torch.compile the model (worth it on a GPU; compiling takes time)"
    )
    p.add_argument(
        "--data", default=None, help="folder with the Multi30k .gz files (default: MULTI30K_DIR or download)"
    )
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument(
        "--overwrite", action="store_true", help="replace the run already in OUT (without it, an existing run is kept)"
    )
    p.add_argument(
        "--save-dtype",
        choices=("float32", "float16"),
        default="float32",
        help="precision of the saved model.pt (float16 halves it)",
    )
    p.add_argument(
        "--int8-embeddings",
        action="store_true",
        help="store the embedding/output matrices of model.pt as int8 with a scale per row (about half their size)",
    )
    p.add_argument("--bleu", action="store_true", help="after training, decode the test set greedily and report BLEU")
    return p


#: The files a run folder holds (its snapshots aside): --overwrite removes them from a run, and a folder that is
#: not a run but holds one of them is never written into (they are someone else's).
_RUN_FILES = (
    "config.json",
    "model.pt",
    "checkpoint.pt",
    "manifest.json",
    "tokenizer.json",
    "history.json",
    "results.json",
)


def _folder(value: str) -> str:
    """``--out``'s type: a folder's name, not an empty or blank string (which would mean the current folder)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must name a folder, got an empty string")
    return value


def _overwritten_files(out: Path) -> list[Path]:
    """The files of the run in ``out`` that ``--overwrite`` removes: its model, checkpoint, records and snapshots.

    Other files in the folder (notes, a reader's own files) are kept.
    """
    return [out / n for n in _RUN_FILES if (out / n).is_file()] + [file for _, file in snapshot_files(out)]


def _configs(args: argparse.Namespace, p: argparse.ArgumentParser) -> tuple[TrainConfig, dict, torch.device]:
    """Check every argument (one-line usage errors, exit 2) before anything slow; build the configs."""
    if args.minutes is None and args.steps is None:
        p.error("give a budget: --minutes M and/or --steps N")
    if args.minutes is not None and not (math.isfinite(args.minutes) and args.minutes > 0):
        p.error(f"--minutes must be a positive number, got {args.minutes}")
    for name in ("steps", "threads", "vocab_size", "d_embed", "d_hidden"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    if args.vocab_size <= 4:
        p.error(f"--vocab-size must exceed the 4 special tokens, got {args.vocab_size}")
    if args.dropout is not None and not (math.isfinite(args.dropout) and 0.0 <= args.dropout < 1.0):
        p.error(f"--dropout must be in [0, 1), got {args.dropout}")
    if args.eval_every is not None and not (math.isfinite(args.eval_every) and args.eval_every > 0):
        p.error(f"--eval-every must be a positive number of minutes, got {args.eval_every}")
    try:
        snapshots = tuple(float(m) for m in args.snapshots.split(",") if m.strip())
    except ValueError:
        p.error(f"--snapshots must be comma-separated minutes, e.g. 5,10,20; got {args.snapshots!r}")
    try:
        tconf = TrainConfig(
            max_tokens=args.max_tokens,
            peak_lr=args.peak_lr,
            warmup=args.warmup,
            label_smoothing=args.label_smoothing,
            minutes=args.minutes,
            max_steps=args.steps,
            eval_every_minutes=args.eval_every or max((args.minutes or 10) / 20, 0.25),
            snapshot_minutes=snapshots,
            seed=args.seed,
            amp=args.amp,
        )
    except ValueError as err:  # the message names the setting; say it with the option's name
        p.error(_option_names(str(err)))
    overrides = {} if args.dropout is None else {"dropout": args.dropout}
    try:
        device = select_device(None if args.device == "auto" else args.device)
    except ValueError as err:
        p.error(f"--device: {err}")
    if device.type == "cuda" and not torch.cuda.is_available():
        p.error(f"--device {args.device}: torch sees no CUDA device on this machine")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        p.error(f"--out {out} is a file, not a folder")
    if args.resume and args.overwrite:
        p.error("--resume and --overwrite contradict each other: choose one")
    owner = enclosing_folder(out)
    if owner is not None and owner[0] != out.resolve():
        p.error(f"--out {out} is inside the {owner[1]} folder {owner[0]}: choose a folder outside it")
    if owner is not None and owner[1] != "run":
        p.error(f"--out {out} is an {owner[1]} folder (lib.export's), not a run: choose another folder")
    if args.resume and os.environ.get("RANK", "0") == "0" and not (out / CHECKPOINT).is_file():
        p.error(f"--resume: {out / CHECKPOINT} does not exist (nothing to resume)")
    existing = [f for f in _RUN_FILES if (out / f).exists()]
    if existing and owner is None:
        p.error(
            f"--out {out} holds {', '.join(existing)} but no run's manifest.json says it is a run: "
            "these files are never replaced, even with --overwrite; choose another folder"
        )
    if existing and not (args.resume or args.overwrite):
        p.error(
            f"--out {out} already holds a run ({', '.join(existing)}); pass --resume to continue it, "
            "--overwrite to replace it, or choose another folder"
        )
    if args.data is not None and not Path(args.data).is_dir():
        p.error(f"--data {args.data} is not a folder")
    return tconf, overrides, device


def _option_names(message: str) -> str:
    for field_name, option in (
        ("max_steps", "--steps"),
        ("minutes", "--minutes"),
        ("max_tokens", "--max-tokens"),
        ("peak_lr", "--peak-lr"),
        ("warmup", "--warmup"),
        ("label_smoothing", "--label-smoothing"),
        ("eval_every_minutes", "--eval-every"),
        ("snapshot_minutes", "--snapshots"),
    ):
        if message.startswith(field_name):
            return option + message[len(field_name) :]
    return message


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


def main(argv: list[str] | None = None) -> None:
    """Train a model on Multi30k and write a run folder (see the module docstring).

    Exit status: 0 trained and saved; 2 a usage error (nothing was loaded or written); 1 the run folder is in use
    by another process (its lock, see ``lib.files.lock_folder``) or training diverged (a NaN or infinite loss or
    gradient; one line names the step and the learning rate, and no run is saved); 130 interrupted with Ctrl-C or
    SIGTERM, after the step under way (the checkpoint is saved and the command that resumes it is printed). Under
    ``torchrun`` every process checks the arguments before any joins the run, and only rank 0 locks, prints and
    writes.

    Args:
        argv: the command-line arguments (default ``sys.argv[1:]``).

    Raises:
        SystemExit: 2 for a usage error, 1 for a run folder in use or a diverged run, 130 after Ctrl-C or SIGTERM
            (see above).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    p = _parser()
    args = p.parse_args(argv)
    tconf, overrides, device = _configs(args, p)
    with contextlib.ExitStack() as held:
        if os.environ.get("RANK", "0") == "0":  # rank 0 writes the folder: it holds it until the run is saved
            try:
                held.enter_context(lock_folder(args.out))
            except FolderInUse as err:
                print(f"{p.prog}: error: {err}", file=sys.stderr)
                raise SystemExit(1) from None
            except OSError as err:
                p.error(f"--out {args.out}: cannot write there ({err.strerror or err})")
        _train_and_save(args, argv, p, tconf, overrides, device)


def _train_and_save(
    args: argparse.Namespace,
    argv: list[str],
    p: argparse.ArgumentParser,
    tconf: TrainConfig,
    overrides: dict,
    device: torch.device,
) -> None:
    """The body of :func:`main` once the arguments are checked and the run folder is held."""
    try:  # after every check: no process writes anything before all have checked their arguments
        dp, device = setup_distributed(device)
    except ValueError as err:
        p.error(str(err))
    say = print if dp.is_main else _silent
    if args.threads:
        torch.set_num_threads(args.threads)
    if device.type == "cuda":
        enable_tf32(args.tf32)
    if dp.is_main:  # rank 0 trains the tokenizer (or reads the cache); the others read what it wrote
        try:
            tokenizer = multi30k_tokenizer(args.vocab_size, root=args.data)
        except (ChecksumError, FileNotFoundError) as err:
            p.error(f"--data: {err}")
        except OSError as err:  # a data file it may not read (its permissions)
            p.error(f"--data: cannot read {err.filename or args.data}: {err.strerror or err}")
        except ValueError as err:  # a size the data cannot reach: below its special tokens and characters
            p.error(f"--vocab-size {args.vocab_size}: {err}")
    if dp.distributed:
        dist.barrier()
    if not dp.is_main:
        tokenizer = multi30k_tokenizer(args.vocab_size, root=args.data)
    torch.manual_seed(args.seed)
    if args.arch == "rnn":
        mconf = Seq2SeqConfig(
            tokenizer.get_vocab_size(),
            d_embed=args.d_embed,
            d_hidden=args.d_hidden,
            attention=None if args.attention == "none" else args.attention,
            **overrides,
        )
        model, name = Seq2Seq(mconf), f"rnn ({args.attention} attention)"
    else:
        mconf = TransformerConfig.preset(args.preset, tokenizer.get_vocab_size(), **overrides)
        model, name = Transformer(mconf), args.preset
    try:  # a damaged file (the tokenizer may come from its cache without reading the data) or one it cannot read
        train_ex = encode_pairs(load_multi30k("train", args.data), tokenizer, max_len=tconf.max_len)
        val_ex = encode_pairs(load_multi30k("val", args.data), tokenizer)
    except (ChecksumError, FileNotFoundError) as err:
        p.error(f"--data: {err}")
    except OSError as err:
        p.error(f"--data: cannot read {err.filename or args.data}: {err.strerror or err}")
    val_batches = make_batches(val_ex, 4000, PAD_ID, BOS_ID, EOS_ID, shuffle=False)
    parallel = f" | {dp.world_size} processes ({dp.backend})" if dp.distributed else ""
    say(
        f"model {name}: {model.num_parameters():,} parameters | {len(train_ex):,} training pairs | "
        f"device {device} | threads {torch.get_num_threads()}{parallel}"
    )
    if args.overwrite and dp.is_main:  # everything the replaced run wrote, so that none of it mixes with this run
        for f in _overwritten_files(Path(args.out)):
            f.unlink(missing_ok=True)
    launcher = f"torchrun --nproc_per_node {dp.world_size}" if dp.distributed else "python"
    started = time.perf_counter()
    try:
        result = train(
            model,
            translation_batches(train_ex, tconf.max_tokens, tconf.seed),
            tconf,
            evaluate=lambda m: evaluate_loss(m, val_batches),
            out_dir=args.out,
            resume=args.resume,
            device=device,
            progress=dp.is_main,
            log=say,
            compile=args.compile,
        )
    except TrainingInterrupted as stop:
        again = [a for a in argv if a not in ("--resume", "--overwrite")] + ["--resume"]
        if dp.is_main:
            print(f"\n{stop}.\nResume with:\n  {launcher} -m lib.train {shlex.join(again)}", file=sys.stderr)
        _leave(dp)
        raise SystemExit(130) from None
    except TrainingDiverged as err:  # nothing of the diverged run is saved: no run folder that load_run accepts
        if dp.is_main:
            print(f"\n{p.prog}: error: {err}", file=sys.stderr)
        _leave(dp)
        raise SystemExit(1) from None
    except ValueError as err:  # e.g. resuming with other settings than the checkpoint's
        _leave(dp)
        p.error(str(err))
    if not dp.is_main:
        _leave(dp)
        return
    info = dict(
        command=f"{launcher} -m lib.train " + shlex.join(argv),
        device=str(device),
        threads=torch.get_num_threads(),
        machine=_cpu_name(),
        world_size=dp.world_size,
        backend=dp.backend,
        steps=result.steps,
        minutes=round(result.minutes, 2),
        wall_minutes=round((time.perf_counter() - started) / 60.0, 2),
        tokens_per_second=round(result.tokens_per_second, 1),
        final_val_loss=result.history[-1]["val_loss"],
        stopped_by=result.stopped_by,
    )
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["tf32"] = args.tf32
    info["amp"] = str(amp_context(device, tconf.amp)[1])
    if args.compile:
        info["compile"] = True
    if args.bleu:
        model.to(device)
        bleu = evaluate_bleu(model, tokenizer, "test_2016_flickr", root=args.data, beam_size=1, device=device)
        info["test_bleu_greedy"] = round(bleu.score, 2)
        info["bleu_signature"] = bleu.signature
        print(bleu)
    save_run(
        args.out,
        model.cpu(),
        tokenizer,
        train_config=tconf,
        history=result.history,
        results=info,
        weights_dtype=getattr(torch, args.save_dtype),
        int8_embeddings=args.int8_embeddings,
    )
    print(strict_json(info, indent=2), end="")
    _leave(dp)


def _silent(*args: object, **kwargs: object) -> None:
    """``print`` of the ranks other than 0."""


def _leave(dp: Ranks) -> None:
    """Leave the data-parallel run (when there is one) so that every process exits cleanly."""
    if dp.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
