"""Train the modern-Transformer chapter's models once and keep their results in models/modern/results.json.

Four small German→English Transformers, the same but for their positions (sinusoidal, learned, RoPE, ALiBi),
trained on the short Multi30k pairs only and scored by length (``lib.experiments.extrapolation_run``); the
book's tiny GPT and a modern decoder of the same size, trained on the same English sentences for the same steps
(``lib.experiments.language_model_run``). Everything runs on one CPU thread with fixed seeds and step counts, so
the numbers are the same on every machine of the same kind; the chapter loads the file and re-trains only the
first few steps, to check them. About 8 CPU-minutes (one thread per run; --jobs runs them side by side).

    MULTI30K_DIR=/path/to/multi30k python bench/modern_transformer.py [--out models/modern/results.json]
"""

from __future__ import annotations

import argparse
import multiprocessing
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lib.experiments import (  # noqa: E402 (after the path set-up: bench/ is a folder of scripts)
    MODERN_RESULTS,
    POSITION_KINDS,
    extrapolation_run,
    language_model_run,
    save_modern_results,
)


def _run(job: tuple[str, str, int]) -> tuple[dict, float]:
    what, kind, steps = job
    start = time.perf_counter()
    result = extrapolation_run(kind, steps=steps) if what == "translation" else language_model_run(kind, steps=steps)
    return result, round((time.perf_counter() - start) / 60, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=MODERN_RESULTS, help="the JSON file to write")
    parser.add_argument("--translation-steps", type=int, default=300, help="steps of each translation model")
    parser.add_argument("--lm-steps", type=int, default=300, help="steps of each language model")
    parser.add_argument("--kinds", nargs="+", default=list(POSITION_KINDS), choices=POSITION_KINDS)
    parser.add_argument(
        "--jobs", type=int, default=1, help="runs at once, in separate processes (each on one thread: same numbers)"
    )
    args = parser.parse_args(argv)
    if args.translation_steps < 1 or args.lm_steps < 1 or args.jobs < 1:
        parser.error("--translation-steps, --lm-steps and --jobs must be positive")
    start = time.perf_counter()
    # the slowest first (ALiBi computes its weights without the fused kernel), so that the jobs end together
    jobs = [("translation", k, args.translation_steps) for k in sorted(args.kinds, key=lambda k: k != "alibi")]
    jobs += [("lm", k, args.lm_steps) for k in ("gpt", "modern")]
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        done = pool.map(_run, jobs, chunksize=1)
    extrapolation, language_models, wall = {}, {}, {}
    for (what, kind, _), (result, minutes) in zip(jobs, done):
        wall[f"{what}-{kind}"] = minutes
        if what == "translation":
            extrapolation[kind] = result
            row = "  ".join(f"{b['loss']:.3f}/{b['bleu']:.1f}" for b in result["buckets"])
            print(f"{kind:>10}: {minutes:5.2f} min  loss/BLEU by bucket: {row}")
        else:
            language_models[kind] = result
            print(
                f"{kind:>10}: {minutes:5.2f} min  {result['parameters']:,} parameters, "
                f"final validation loss {result['history'][-1]['val_loss']:.4f}"
            )
    extrapolation = {k: extrapolation[k] for k in args.kinds}
    total = round((time.perf_counter() - start) / 60, 2)
    machine = dict(
        processor=platform.processor() or platform.machine(), torch=torch.__version__, threads=1, jobs=args.jobs
    )
    path = save_modern_results(
        extrapolation, language_models, args.out, machine=machine, wall_minutes=wall, total_minutes=total
    )
    print(f"wrote {path} ({total:.1f} minutes in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
