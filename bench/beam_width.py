"""Test BLEU and decoding time against beam width (and length penalty) for a trained translation model.

The decoding chapter shows these figures for the shipped model; decoding the 1,000 test sentences ten times over
takes minutes on 2 CPU cores, so the chapter reads them from the file this script writes (committed as
``models/decoding/beam_width.json``) and re-decodes only the first ``--subset`` sentences live, checking that it gets
the same translations as the ones recorded here.

    python bench/beam_width.py --threads 1 --out models/decoding/beam_width.json

For each width K in ``--widths`` (default 1 to 10; K = 1 is greedy decoding) with the length penalty ``--alpha``, and
for each α in ``--alphas`` at width ``--alpha-beam``: corpus BLEU (sacreBLEU) of the whole split, its brevity penalty,
the mean number of words per translation, the decoding time of the whole split (wall-clock and the process's CPU
time, each the smallest of ``--repeats`` runs with lib.translate.translate's batches of 100 sentences; with
``--threads 1`` the CPU time hardly depends on what else runs on the machine, the wall-clock time does), and the
translations of the first ``--subset`` sentences (decoded on their own, as the chapter decodes them) with their BLEU.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import torch

from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.data import load_multi30k
from lib.files import atomic_write_text, strict_json
from lib.metrics import corpus_bleu
from lib.translate import translate


def _cpu_name() -> str:
    """The processor's model name (from /proc/cpuinfo on Linux), else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", default=str(SHIPPED_MODEL), help="run folder (default: the shipped models/de-en)")
    p.add_argument("--split", default="test_2016_flickr", help="Multi30k split to decode")
    p.add_argument("--widths", type=_ints, default=list(range(1, 11)), help="beam widths, e.g. 1,2,3 (default 1..10)")
    p.add_argument("--alpha", type=float, default=0.6, help="length-penalty exponent of the width sweep")
    p.add_argument("--alphas", type=_floats, default=[0.0, 0.6, 1.0, 1.5], help="α values of the α sweep")
    p.add_argument("--alpha-beam", type=int, default=5, help="beam width of the α sweep")
    p.add_argument("--subset", type=int, default=100, help="first sentences whose translations are recorded")
    p.add_argument("--repeats", type=int, default=1, help="timed decodings of the split per setting (fastest counts)")
    p.add_argument("--limit", type=int, default=None, help="decode only the first N sentences of the split (tests)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    p.add_argument("--out", default=None, help="write the results as JSON here")
    return p


def _check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not args.widths or min(args.widths) < 1:
        p.error(f"--widths must be positive integers, got {args.widths}")
    if args.alpha_beam < 1 or args.subset < 1 or args.repeats < 1:
        p.error("--alpha-beam, --subset and --repeats must be at least 1")
    if args.limit is not None and args.limit < args.subset:
        p.error(f"--limit ({args.limit}) must be at least --subset ({args.subset})")
    if args.threads is not None and args.threads < 1:
        p.error(f"--threads must be at least 1, got {args.threads}")


def measure(model, tokenizer, sources, references, subset, beam, alpha, repeats) -> dict:
    """BLEU, brevity penalty, mean words and fastest decoding time of ``sources``; the first ``subset`` translations."""
    seconds, cpu_seconds = [], []
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        hyps = translate(model, tokenizer, sources, beam_size=beam, alpha=alpha)
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.process_time() - cpu_start)
    bleu = corpus_bleu(hyps, references)
    sub = translate(model, tokenizer, sources[:subset], beam_size=beam, alpha=alpha)
    return {
        "beam": beam,
        "alpha": alpha,
        "bleu": round(bleu.score, 2),
        "brevity_penalty": round(bleu.brevity_penalty, 4),
        "mean_words": round(sum(len(h.split()) for h in hyps) / len(hyps), 3),
        "seconds": round(min(seconds), 2),
        "all_seconds": [round(s, 2) for s in seconds],
        "cpu_seconds": round(min(cpu_seconds), 2),
        "subset_bleu": round(corpus_bleu(sub, references[:subset]).score, 2),
        "subset_hypotheses": sub,
    }


def main(argv: list[str] | None = None) -> dict:
    p = _parser()
    args = p.parse_args(argv)
    _check(p, args)
    if args.threads:
        torch.set_num_threads(args.threads)
    run = load_run(args.run)
    pairs = load_multi30k(args.split)[: args.limit]
    sources, references = [de for de, _ in pairs], [en for _, en in pairs]
    report: dict = {
        "command": "python bench/beam_width.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "run": Path(args.run).name,
        "split": args.split,
        "sentences": len(sources),
        "subset": args.subset,
        "threads": torch.get_num_threads(),
        "machine": f"{_cpu_name()}, {os.cpu_count()} cores",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "torch": torch.__version__,
        "reference_mean_words": round(sum(len(r.split()) for r in references) / len(references), 3),
        "widths": [],
        "alphas": [],
    }
    for beam in args.widths:
        row = measure(run.model, run.tokenizer, sources, references, args.subset, beam, args.alpha, args.repeats)
        report["widths"].append(row)
        print(
            f"beam {beam:2d} (α {args.alpha}): BLEU {row['bleu']:5.2f}  {row['seconds']:6.1f} s  "
            f"{row['cpu_seconds']:6.1f} s CPU  {row['mean_words']:.2f} words  subset BLEU {row['subset_bleu']:.2f}",
            flush=True,
        )
    for alpha in args.alphas:
        row = measure(run.model, run.tokenizer, sources, references, args.subset, args.alpha_beam, alpha, args.repeats)
        report["alphas"].append(row)
        print(
            f"beam {args.alpha_beam} α {alpha:3.1f}: BLEU {row['bleu']:5.2f}  {row['seconds']:6.1f} s  "
            f"{row['mean_words']:.2f} words (references {report['reference_mean_words']:.2f})",
            flush=True,
        )
    if args.out:
        atomic_write_text(args.out, strict_json(report, indent=1, ensure_ascii=False, nan="warn"))
        print(f"written to {args.out}")
    return report


if __name__ == "__main__":
    main()
