"""How far the book's trained numbers move between machines and seeds: the spread its tolerances must cover.

A chapter that trains a model and then states a number ("0.93 of the symbols right", "training loss 1.70") states
what one machine computed. Another CPU (other vector units, so other orders of float32 sums), another BLAS, another
thread count or a GPU trains a slightly different model, and so does another seed. This script retrains each
*claim* below under several seeds and several of torch's numeric paths on this machine, and prints, for every
number, its range: the tolerance a chapter's assert needs is at least the spread across paths, and a claim that
should hold for any reader has to hold across seeds too.

    python bench/numeric_spread.py                                   # every claim, seeds 0-3, three paths
    python bench/numeric_spread.py --claims copy_task --seeds 0,1 --paths native,default --json runs/spread.json

A *path* is one setting of ``ATEN_CPU_CAPABILITY`` (torch's kernels for this CPU's widest vector units,
``native``; ``avx2``; ``default``: no SIMD), the way ``make test`` runs the notebooks on a path other than the
machine's own; each run is its own process, with its own empty cache folder (``XDG_CACHE_HOME``), so nothing a
previous run trained is reused.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def copy_task(seed: int) -> dict[str, float]:
    """The Transformer chapter's break-it exercise: the copy task trained with and without the causal mask."""
    from lib.exercises.transformer import _no_mask_forward
    from lib.experiments import copy_task_run

    masked, unmasked = copy_task_run(seed=seed), copy_task_run(_no_mask_forward, seed=seed)
    return {
        "masked loss": masked["loss"],
        "masked greedy": masked["greedy"],
        "unmasked loss": unmasked["loss"],
        "unmasked greedy": unmasked["greedy"],
    }


def bottleneck(seed: int) -> dict[str, float]:
    """The seq2seq bottleneck chapter's fixed-vector reversal model: accuracy by length, and C's two halves."""
    import torch

    from lib.book.seq2seq_bottleneck import correct_matrix, reversal_outputs, teacher_forced_outputs
    from lib.experiments import reversal_experiment, sequence_task

    model = reversal_experiment(None, seed=seed).model
    pairs = sequence_task(1000, 4, 30, 20, seed=seed + 2)

    def zero_context(memory, src_mask):
        return torch.zeros_like(memory)

    def zero_backward(memory, src_mask):
        memory = memory.clone()
        memory[:, 0, memory.size(-1) // 2 :] = 0
        return memory

    experiment = reversal_experiment(None, seed=seed)
    token = dict(zip(experiment.accuracy.lengths, experiment.accuracy.token))
    greedy = reversal_outputs(model, pairs)
    intact = teacher_forced_outputs(model, pairs)
    at_12 = correct_matrix(pairs, intact, 12)
    half = correct_matrix(pairs, teacher_forced_outputs(model, pairs, zero_backward), 12)
    by_position = {n: correct_matrix(pairs, greedy, n).mean(0) for n in (6, 20, 30)}
    return {
        "token accuracy, lengths 4-6": sum(token[n] for n in (4, 5, 6)) / 3,
        "token accuracy, lengths 10-14": sum(token[n] for n in range(10, 15)) / 5,
        "token accuracy, lengths 25-30": sum(token[n] for n in range(25, 31)) / 6,
        "token accuracy, max over 15-30": max(token[n] for n in range(15, 31)),
        "symbols right per sequence, min 5-30": min(n * token[n] for n in range(5, 31)),
        "symbols right per sequence, max 5-30": max(n * token[n] for n in range(5, 31)),
        "length 6, lowest position": float(by_position[6].min()),
        "length 30, first three positions": float(by_position[30][:3].mean()),
        "length 30, positions 10-30": float(by_position[30][9:].mean()),
        "teacher-forced, length 8": float(correct_matrix(pairs, intact, 8).mean()),
        "teacher-forced, length 8, C = 0": float(
            correct_matrix(pairs, teacher_forced_outputs(model, pairs, zero_context), 8).mean()
        ),
        "length 12, first three, ←h_1 = 0": float(half[:, :3].mean()),
        "length 12, last three, ←h_1 = 0": float(half[:, -3:].mean()),
        "length 12, first three, intact": float(at_12[:, :3].mean()),
        "length 12, last three, intact": float(at_12[:, -3:].mean()),
    }


def scores(seed: int) -> dict[str, float]:
    """The Bahdanau chapter's four score functions on the reduced reversal task (200 steps, lengths 4 to 12)."""
    import numpy as np

    from lib.book.bahdanau_attention import largest_weights
    from lib.experiments import reversal_experiment, sequence_task
    from lib.seq2seq import SCORES

    pairs = sequence_task(1000, 4, 12, seed=seed + 2)
    numbers = {}
    for name in SCORES:
        run = reversal_experiment(name, steps=200, max_len=12, seed=seed)
        numbers[f"{name}: token accuracy"] = float(np.mean(run.accuracy.token))
        numbers[f"{name}: largest weight"] = largest_weights(run.model, pairs).mean().item()
    return numbers


#: Every claim: a name and the function that retrains its model with a seed and returns its numbers.
CLAIMS: dict[str, Callable[[int], dict[str, float]]] = {
    "copy_task": copy_task,
    "bottleneck": bottleneck,
    "scores": scores,
}

#: The numeric paths: name -> ATEN_CPU_CAPABILITY (None: torch's choice for this CPU).
PATHS = {"native": None, "avx512": "avx512", "avx2": "avx2", "default": "default"}


def _one(claim: str, seed: int, path: str, keep: Path | None) -> dict:
    """Run one claim with one seed on one path in a fresh process with its own cache folder; its numbers.

    The cache folder is new and removed after the run, or ``keep/<path>`` (kept: a second run with the same seed and
    path loads what the first trained, for more numbers of the same models)."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if PATHS[path] is not None:
        env["ATEN_CPU_CAPABILITY"] = PATHS[path]
    with tempfile.TemporaryDirectory(prefix="spread-cache-") as fresh:
        env["XDG_CACHE_HOME"] = str(keep / path) if keep else fresh
        code = (
            "import json, sys, torch; sys.path.insert(0, 'bench'); import numeric_spread as s; "
            f"out = s.CLAIMS[{claim!r}]({seed}); "
            "print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(), 'numbers': out}))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise SystemExit(f"numeric_spread: {claim} seed {seed} on {path} failed: {tail[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _names(text: str, known: dict) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown {unknown or 'empty list'}; choose from {', '.join(known)}")
    return names


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must be integers separated by commas, got {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError("no seed given")
    return seeds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--claims", type=lambda t: _names(t, CLAIMS), default=list(CLAIMS), help="claims, e.g. copy_task")
    p.add_argument("--seeds", type=_seeds, default=[0, 1, 2, 3], help="seeds, e.g. 0,1,2,3 (default)")
    p.add_argument(
        "--paths",
        type=lambda t: _names(t, PATHS),
        default=["native", "avx2", "default"],
        help="numeric paths (ATEN_CPU_CAPABILITY): native, avx512, avx2, default (default: native,avx2,default)",
    )
    p.add_argument("--json", type=Path, help="also write every run's numbers to this file")
    p.add_argument("--keep", type=Path, help="keep what each path trained in this folder, to be loaded by a later run")
    args = p.parse_args(argv)

    runs = []
    for claim in args.claims:
        for seed in args.seeds:
            for path in args.paths:
                result = _one(claim, seed, path, args.keep)
                runs.append(dict(claim=claim, seed=seed, path=path, **result))
                numbers = ", ".join(f"{k} {v:.4f}" for k, v in result["numbers"].items())
                print(f"{claim} seed {seed} {path} ({result['capability']}): {numbers}", flush=True)
    print()
    for claim in args.claims:
        print(f"== {claim}: range over paths at each seed (widest), and over all seeds and paths")
        mine = [r for r in runs if r["claim"] == claim]
        for name in mine[0]["numbers"]:
            per_seed = []
            for seed in args.seeds:
                values = [r["numbers"][name] for r in mine if r["seed"] == seed]
                per_seed.append(max(values) - min(values))
            every = [r["numbers"][name] for r in mine]
            seed0 = [r["numbers"][name] for r in mine if r["seed"] == args.seeds[0]]
            print(
                f"  {name:34s} seed {args.seeds[0]}: {min(seed0):.4f} … {max(seed0):.4f}   across paths ≤ "
                f"{max(per_seed):.4f}   all: {min(every):.4f} … {max(every):.4f}"
            )
    if args.json:
        from lib.files import atomic_write_text, strict_json

        atomic_write_text(args.json, strict_json(runs, indent=1, ensure_ascii=False, nan="warn") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
