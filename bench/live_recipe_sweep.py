"""Warm-up and peak learning rate for a short training budget: greedy validation BLEU after N steps.

The capstone's live section trains for a fixed number of steps (650, about 5 minutes on 2 CPU cores). This
script trains the ``multi30k`` preset for ``--steps`` steps with each (warm-up, peak learning rate) pair and
decodes the Multi30k validation set greedily (the test set is not looked at). On a GPU it trains in float32
(``--no-amp --no-tf32``) so that a step is the CPU's step, several runs at a time.

    python bench/live_recipe_sweep.py --device cuda --parallel 4      # 8 recipes, about 2 minutes on one H100
    python bench/live_recipe_sweep.py --device cpu --parallel 1 --configs 400:1e-3,200:3e-3   # about 12 min

Other levers at one schedule: each ``--extra`` is a variant, further ``lib.train`` arguments (``""`` is the
plain recipe), run with every schedule of ``--configs``:

    python bench/live_recipe_sweep.py --configs 200:3e-3 --extra "" --extra "--dropout 0" \
        --extra "--label-smoothing 0" --extra "--vocab-size 4000" --threads 2

Tokens per batch is compared at equal training tokens, not equal steps: twice the batch for half the steps, the
warm-up halved with them (the same tokens seen before the peak):

    python bench/live_recipe_sweep.py --steps 325 --configs 100:3e-3 --extra "--max-tokens 6000" --threads 1
    python bench/live_recipe_sweep.py --steps 1300 --configs 400:3e-3 --extra "--max-tokens 1500" --threads 1

Writes one JSON line per recipe to ``--out`` (default ``runs/live_recipe_sweep.jsonl``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lib.files import strict_json

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIGS = "400:1e-3,100:1e-3,100:2e-3,200:2e-3,100:3e-3,50:2e-3,200:3e-3,150:1.5e-3"
_EVAL = (
    "import json, sys\n"
    "from lib.checkpoint import load_run\n"
    "from lib.translate import evaluate_bleu\n"
    "run = load_run(sys.argv[1], device=sys.argv[2])\n"
    "bleu = evaluate_bleu(run.model, run.tokenizer, 'val', device=sys.argv[2])\n"
    "print(json.dumps({'val_bleu': round(bleu.score, 2), 'val_loss': run.results['final_val_loss'],"
    " 'signature': bleu.signature}))\n"
)


def _parse_configs(text: str) -> list[tuple[int, float]]:
    configs = []
    for item in text.split(","):
        warmup, _, peak = item.partition(":")
        configs.append((int(warmup), float(peak)))
    return configs


def main(argv: list[str] | None = None) -> list[dict]:
    """Run the sweep; returns one record per recipe (also appended to ``--out``)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=650)
    p.add_argument("--configs", default=DEFAULT_CONFIGS, help="comma-separated WARMUP:PEAK_LR pairs")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--parallel", type=int, default=1, help="runs at a time")
    p.add_argument("--threads", type=int, default=None, help="CPU threads of each run")
    p.add_argument("--out", default="runs/live_recipe_sweep.jsonl")
    p.add_argument(
        "--extra",
        action="append",
        default=None,
        help='further lib.train arguments of one variant, e.g. "--dropout 0" (repeat for more; "" = none)',
    )
    args = p.parse_args(argv)
    extras = [shlex.split(e) for e in (args.extra or [""])]
    reserved = {"--steps", "--warmup", "--peak-lr", "--out", "--device", "--preset", "--eval-every"}
    for e in extras:
        if reserved & set(e):
            p.error(f"--extra {shlex.join(e)!r}: the sweep sets {', '.join(sorted(reserved & set(e)))} itself")
    try:
        configs = _parse_configs(args.configs)
    except ValueError:
        p.error(f"--configs takes WARMUP:PEAK_LR pairs, e.g. 400:1e-3,200:3e-3; got {args.configs!r}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    gpu = ["--no-amp", "--no-tf32"] if args.device.startswith("cuda") else []
    threads = ["--threads", str(args.threads)] if args.threads else []
    # the tokenizer once (it is cached), so that parallel runs do not each train it
    tok = "from lib.bpe import multi30k_tokenizer; multi30k_tokenizer(8000)"
    subprocess.run([sys.executable, "-c", tok], check=True, cwd=ROOT, env=env)
    work = Path(tempfile.mkdtemp(prefix="live-sweep-"))

    def one(job: tuple[int, tuple[int, float], list[str]]) -> dict:
        number, (warmup, peak), extra = job
        folder = work / f"{number}_w{warmup}_p{peak:g}"
        command = [sys.executable, "-m", "lib.train", "--preset", "multi30k", "--device", args.device, *gpu,
                   *threads, "--steps", str(args.steps), "--warmup", str(warmup), "--peak-lr", f"{peak:g}",
                   "--eval-every", "100", *extra, "--out", str(folder)]  # fmt: skip
        record: dict = {"steps": args.steps, "warmup": warmup, "peak_lr": peak, "device": args.device}
        if extra:
            record["extra"] = shlex.join(extra)
        proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
        if proc.returncode == 0:
            proc = subprocess.run(
                [sys.executable, "-c", _EVAL, str(folder), args.device], capture_output=True, text=True, env=env
            )
        if proc.returncode:
            record["error"] = proc.stderr[-800:]
        else:
            record.update(json.loads(proc.stdout.strip().splitlines()[-1]))
        with open(out, "a") as f:
            f.write(strict_json(record, nan="warn"))  # one line
        print(record, flush=True)
        return record

    with ThreadPoolExecutor(max(1, args.parallel)) as pool:
        jobs = [(i, c, e) for i, (c, e) in enumerate(itertools.product(configs, extras))]
        return list(pool.map(one, jobs))


if __name__ == "__main__":
    main()
