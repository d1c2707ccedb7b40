"""The GPU checklist: what a session with a CUDA GPU runs to verify (and measure) the book's GPU recipe.

First run on one H100 on 2026-11-24 (figures: ``models/de-en/README.md`` and ``results.json``). It runs, in order:

1. the GPU tests: ``pytest -m gpu tests/unit/test_runs.py tests/unit/test_ddp.py`` (resume restores the GPU's random
   state; bf16, TF32, pinned batches and torch.compile train; a one-GPU NCCL torchrun);
2. the capstone recipe (``--preset multi30k``) on the GPU for ``--minutes`` of training each, in a few
   variants (the CPU recipe's 3,000-token batches; larger batches; with ``--compile``), with snapshots, and
   test BLEU (test_2016_flickr, greedy and beam 5, sacreBLEU) against minutes: the issue's goal is at least
   37 beam-5 within 3 minutes on one H100;
3. resume on CUDA: N steps in one go against N/2, stop, ``--resume`` to N (the histories must agree closely;
   bitwise equality is not promised on a GPU);
4. a one-GPU NCCL torchrun (``torchrun --standalone --nproc_per_node 1 -m lib.train --device cuda``) against
   the plain run of the same steps.

Everything goes to ``--out`` (default ``runs/gpu-checklist``): one run folder per training, and
``checklist.json`` with every figure; a markdown table is printed for models/de-en/README.md.

    python bench/gpu_checklist.py                     # about 25 minutes on one H100
    python bench/gpu_checklist.py --quick             # 1-minute trainings, one variant: a smoke test
    python bench/gpu_checklist.py --parts variants --variants 1,2   # a part of it (a lease's 10-minute calls)
    python bench/gpu_checklist.py --device cpu --minutes 0.2 --steps 20 --parts variants,resume,nccl
                                                      # a dry run of the script itself, without a GPU
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

from lib.files import atomic_write_text, strict_json

ROOT = Path(__file__).resolve().parent.parent

#: The checklist's parts, in the order they run.
PARTS = ("tests", "variants", "resume", "nccl")

#: name -> extra arguments of python -m lib.train (all: --preset multi30k --device cuda, bf16 autocast, TF32).
VARIANTS = {
    "bf16, 3k-token batches (the CPU recipe)": [],
    "bf16, 12k-token batches": ["--max-tokens", "12000", "--warmup", "200", "--peak-lr", "2e-3"],
    "bf16, 12k-token batches, torch.compile": [
        "--max-tokens",
        "12000",
        "--warmup",
        "200",
        "--peak-lr",
        "2e-3",
        "--compile",
    ],
}


def _run(command: list[str], log: Path) -> float:
    """Run a command from the repository root, its output to ``log`` and the screen; its wall seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    print("$", " ".join(command), flush=True)
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run(command, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - start
    print(log.read_text()[-1500:], flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}) after {seconds:.0f} s; see {log}")
    return seconds


def _train(out: Path, *args: str, device: str = "cuda", launcher: list[str] | None = None) -> dict:
    """``python -m lib.train --preset multi30k --device DEVICE ARGS --out OUT``; its results.json."""
    launcher = launcher or [sys.executable]
    command = [*launcher, "-m", "lib.train", "--preset", "multi30k", "--device", device, *args, "--out", str(out)]
    _run(command, out.with_suffix(".log"))
    return json.loads((out / "results.json").read_text())


def _bleu_curve(folder: Path, beam: int, device: str = "cuda") -> dict:
    """Test BLEU (greedy and beam) of each snapshot of a run and of its final model, decoded on ``device``."""
    from lib.checkpoint import load_run, snapshot_files
    from lib.translate import evaluate_bleu

    run = load_run(folder, device=device)
    curve = {}
    for minutes, snap in [*snapshot_files(folder), (None, None)]:
        if snap is not None:
            run.model.load_state_dict(torch.load(snap, map_location=device, weights_only=True))
            minutes = f"{minutes:g}"
        else:
            run = load_run(folder, device=device)
            minutes = f"{run.results['minutes']:g} (final)"
        greedy = evaluate_bleu(run.model, run.tokenizer, "test_2016_flickr", beam_size=1, device=device)
        row = {"greedy": round(greedy.score, 2)}
        if beam > 1:
            row[f"beam{beam}"] = round(
                evaluate_bleu(run.model, run.tokenizer, "test_2016_flickr", beam_size=beam, device=device).score, 2
            )
        curve[minutes] = row
        print(f"{folder.name}: {minutes} min {row}", flush=True)
    curve["signature"] = greedy.signature
    return curve


def _history(folder: Path) -> list[dict]:
    return json.loads((folder / "history.json").read_text())


def _same_history(a: list[dict], b: list[dict], tol: float) -> dict:
    """The largest difference of validation loss at the steps both histories have.

    Validation loss, not training loss: a history's train_loss is the mean since the previous record, so a run
    resumed at step N averages a different window from the run that went straight through.
    """
    steps = {h["step"]: h for h in a}
    shared = [(steps[h["step"]], h) for h in b if h["step"] in steps]
    worst = max((abs(x["val_loss"] - y["val_loss"]) for x, y in shared), default=float("nan"))
    return {"steps_compared": [x["step"] for x, _ in shared], "max_loss_difference": worst, "ok": worst <= tol}


def main(argv: list[str] | None = None) -> dict:
    """Run the checklist; returns (and writes) the figures.

    Args:
        argv: command-line arguments (see ``--help``).

    Returns:
        The checklist's figures (also written to ``OUT/checklist.json``).
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/gpu-checklist")
    p.add_argument("--minutes", type=float, default=3.0, help="training minutes of each variant")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--steps", type=int, default=400, help="steps of the resume and NCCL checks")
    p.add_argument("--quick", action="store_true", help="1-minute trainings of the first variant only")
    p.add_argument("--skip-tests", action="store_true", help="the same as leaving tests out of --parts")
    p.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"comma-separated parts to run, of {', '.join(PARTS)} (default: all)",
    )
    p.add_argument("--variants", default=None, help="comma-separated indices of the variants to train (default: all)")
    p.add_argument("--device", default="cuda", help="cuda (default), or cpu for a dry run of the script")
    args = p.parse_args(argv)
    parts = {x.strip() for x in args.parts.split(",") if x.strip()}
    if not parts <= set(PARTS):
        p.error(f"--parts takes {', '.join(PARTS)}; got {args.parts!r}")
    if args.skip_tests or args.device == "cpu":
        parts.discard("tests")
    names = list(VARIANTS)
    try:
        chosen = [names[int(i)] for i in args.variants.split(",")] if args.variants else names
    except (ValueError, IndexError):
        p.error(f"--variants takes indices 0 to {len(names) - 1}, comma-separated; got {args.variants!r}")
    if args.device != "cpu" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this checklist needs a GPU (--device cpu runs a dry run)")
    device = args.device
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    minutes = 1.0 if args.quick else args.minutes
    variants = {name: VARIANTS[name] for name in (chosen[:1] if args.quick else chosen)}
    report: dict = {
        "gpu": torch.cuda.get_device_name() if device != "cpu" else "none (a dry run on the CPU)",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "minutes_per_variant": minutes,
    }

    if "tests" in parts:
        tests = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "tests/unit/test_runs.py", "tests/unit/test_ddp.py"]
        report["gpu_tests_seconds"] = round(_run(tests, out / "gpu_tests.log"), 1)

    snapshots = ",".join(f"{m:g}" for m in (0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 15, 20) if m < minutes)
    report["variants"] = {}
    for name, extra in variants.items() if "variants" in parts else ():
        folder = out / f"variant{names.index(name)}"
        snap = ["--snapshots", snapshots] if snapshots else []
        results = _train(
            folder, "--minutes", f"{minutes:g}", "--eval-every", "0.25", *snap, *extra, "--overwrite", device=device
        )
        report["variants"][name] = {
            "args": extra,
            "steps": results["steps"],
            "tokens_per_second": results["tokens_per_second"],
            "final_val_loss": results["final_val_loss"],
            "bleu_at_minutes": _bleu_curve(folder, args.beam, device),
        }

    steps, half = args.steps, args.steps // 2
    common = ["--eval-every", "100", "--overwrite"]  # minutes: validation only at the end
    if parts & {"resume", "nccl"}:
        _train(out / "straight", "--steps", str(steps), *common, device=device)
    if "resume" in parts:
        _train(out / "resumed", "--steps", str(half), *common, device=device)
        _train(out / "resumed", "--steps", str(steps), "--eval-every", "100", "--resume", device=device)
        report["resume"] = _same_history(_history(out / "straight"), _history(out / "resumed"), tol=2e-2)

    if "nccl" in parts:
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"]
        nccl = _train(out / "nccl1", "--steps", str(steps), *common, device=device, launcher=torchrun)
        report["nccl_one_gpu"] = {
            "backend": nccl["backend"],
            "world_size": nccl["world_size"],
            "tokens_per_second": nccl["tokens_per_second"],
            **_same_history(_history(out / "straight"), _history(out / "nccl1"), tol=2e-2),
        }

    atomic_write_text(out / "checklist.json", strict_json(report, indent=2, nan="warn"))
    print(f"\n{report['gpu']}, torch {report['torch']}: test_2016_flickr BLEU against training minutes\n")
    print("| variant | tokens/s | minutes | greedy | beam |")
    print("|---|---:|---:|---:|---:|")
    for name, v in report["variants"].items():
        for m, row in v["bleu_at_minutes"].items():
            if m != "signature":
                beam = row.get(f"beam{args.beam}", "")
                print(f"| {name} | {v['tokens_per_second']:,.0f} | {m} | {row['greedy']} | {beam} |")
    print(f"\nresume: {report.get('resume')}\nNCCL, one GPU: {report.get('nccl_one_gpu')}")
    print(f"written: {out / 'checklist.json'}")
    return report


if __name__ == "__main__":
    main()
