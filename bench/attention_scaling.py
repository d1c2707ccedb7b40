"""How efficient attention scales: time and memory against sequence length for full, sparse, linear and LSH attention.

For n = --min-n, 2·min-n, ..., --max-n (powers of two), random float32 queries, keys and values of shape
(batch, heads, n, d_k) go through six self-attentions (``lib.cost.attention_methods``):

- ``full (lib)``: ``lib.attention.scaled_dot_product_attention`` (explicit; builds and returns the n × n weights);
- ``full (torch fused)``: ``torch.nn.functional.scaled_dot_product_attention`` (exact, O(n) memory,
  FlashAttention-style);
- ``sliding window``: ``lib.efficient.sliding_window_attention`` (±--window positions, Longformer);
- ``linear (elu+1)``: ``lib.efficient.linear_attention`` (Katharopoulos et al. 2020);
- ``Performer``: ``lib.efficient.performer_attention`` with --features random features (FAVOR+);
- ``LSH``: ``lib.efficient.lsh_attention`` with chunks of --bucket-size, n / bucket-size buckets (Reformer).

It prints one row per n: the median milliseconds per call of each method (``lib.cost.median_ms``: the methods
take turns) and the peak MiB of tensors each call holds at once (``lib.cost.peak_tensor_bytes``). A method
whose median exceeded --max-ms at one length is not run at longer ones ("-" in the table), so that a sweep to
n = 16384 takes minutes, not hours. At the end it states the crossover: the shortest measured n from which
linear attention is faster than full attention (lib's, and torch's fused kernel), if it is.

    python bench/attention_scaling.py [--min-n 256] [--max-n 16384] [--batch 1] [--heads 4] [--d-k 64]
                                      [--window 64] [--features 256] [--bucket-size 64] [--hashes 1]
                                      [--repeats 3] [--max-ms 2000] [--threads N] [--no-memory] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import torch

from lib.cost import attention_methods, crossover, scaling_cost
from lib.files import atomic_write_text, strict_json

# machine_facts and seq_lengths are shared with bench/attention_cost.py (bench/ is a folder of scripts).
_spec = importlib.util.spec_from_file_location("attention_cost", Path(__file__).resolve().parent / "attention_cost.py")
_attention_cost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_attention_cost)
machine_facts, seq_lengths = _attention_cost.machine_facts, _attention_cost.seq_lengths

LINEAR = "linear (elu+1)"
FULL = "full (lib)"
FUSED = "full (torch fused)"


def table(report: dict, what: str) -> dict[str, list]:
    """method → the ``what`` ("ms" or "peak_bytes") at each of the report's lengths (None where not measured)."""
    lengths = report["settings"]["seq_lens"]
    out: dict[str, list] = {}
    for row in report["rows"]:
        out.setdefault(row["method"], [None] * len(lengths))[lengths.index(row["seq_len"])] = row[what]
    return out


def crossovers(report: dict) -> dict[str, int | None]:
    """The shortest n from which linear attention stays faster than full (lib) and than torch's fused kernel."""
    lengths = report["settings"]["seq_lens"]
    ms = table(report, "ms")
    return {other: crossover(lengths, ms[other], ms[LINEAR]) for other in (FULL, FUSED) if other in ms and LINEAR in ms}


def print_report(report: dict) -> None:
    """The machine, the settings, a time table, a memory table and the crossovers."""
    m, s = report["machine"], report["settings"]
    print(f"Machine: {m['cpu']} | torch {m['torch']} | threads {m['threads']}")
    print(
        f"Self-attention, float32, no grad: batch {s['batch']}, heads {s['heads']}, d_k {s['d_k']}; window "
        f"±{s['window']}, {s['features']} Performer features, LSH chunks of {s['bucket_size']} "
        f"({s['hashes']} hash round(s)); median of {s['repeats']} calls; a method slower than {s['max_ms']} ms "
        f"is not run at longer lengths"
    )
    lengths = s["seq_lens"]
    sections = [("ms per call", "ms", 1.0, "{:>10.2f}")]
    if s["memory"]:
        sections.append(("peak MiB", "peak_bytes", 2**20, "{:>10.2f}"))
    for title, what, unit, fmt in sections:
        values = table(report, what)
        names = list(values)
        print(f"\n{title}")
        print(f"{'n':>6} " + " ".join(f"{name[:18]:>18}" for name in names))
        for i, n in enumerate(lengths):
            cells = [("-" if values[name][i] is None else fmt.format(values[name][i] / unit).strip()) for name in names]
            print(f"{n:>6} " + " ".join(f"{c:>18}" for c in cells))
    print()
    for other, n in report["crossover"].items():
        if n is None:
            print(f"Crossover: linear attention is not faster than {other} at the longest length where both ran.")
        else:
            print(f"Crossover: linear attention is faster than {other} from n = {n} on (in this measurement).")
    if s["memory"]:
        print(
            "  peak MiB: the largest total of tensors a call holds at once (lib.cost.peak_tensor_bytes; "
            "scratch memory inside a kernel is not seen)"
        )


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-n", type=int, default=256, help="shortest sequence length (default 256)")
    p.add_argument("--max-n", type=int, default=16384, help="longest sequence length; lengths double from --min-n")
    p.add_argument("--batch", type=int, default=1, help="sequences per call (default 1)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--d-k", type=int, default=64, help="features per head (default 64)")
    p.add_argument("--window", type=int, default=64, help="sliding window: positions each side (default 64)")
    p.add_argument("--features", type=int, default=256, help="Performer: random features m (default 256)")
    p.add_argument("--bucket-size", type=int, default=64, help="LSH: chunk length (default 64)")
    p.add_argument("--hashes", type=int, default=1, help="LSH: hash rounds (default 1)")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per length and method (median counts)")
    p.add_argument(
        "--max-ms",
        type=float,
        default=2000.0,
        help="a method slower than this (ms per call) is not run at longer lengths (default 2000)",
    )
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    p.add_argument("--json", default=None, help="also write every number to this JSON file")
    args = p.parse_args(argv)
    for name in ("min_n", "max_n", "batch", "heads", "d_k", "window", "features", "bucket_size", "hashes", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.max_ms <= 0:
        p.error("--max-ms must be positive")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be at least 1")
    if args.max_n < args.min_n:
        p.error(f"--max-n ({args.max_n}) must be at least --min-n ({args.min_n})")
    lengths = seq_lengths(args.min_n, args.max_n)
    bad = [n for n in lengths if n > args.bucket_size and n % args.bucket_size]
    if bad:
        p.error(f"--bucket-size ({args.bucket_size}) must divide every length longer than it, not {bad}")
    return args


def main(argv=None) -> dict:
    """Run the measurement, print the tables and the crossovers, return the report (also written to ``--json``)."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    lengths = seq_lengths(args.min_n, args.max_n)
    methods = attention_methods(
        window=args.window, num_features=args.features, bucket_size=args.bucket_size, num_hashes=args.hashes
    )
    points = scaling_cost(
        lengths,
        methods,
        batch=args.batch,
        heads=args.heads,
        d_k=args.d_k,
        repeats=args.repeats,
        max_ms=args.max_ms,
        measure_memory=not args.no_memory,
    )
    report = dict(
        machine=machine_facts(),
        settings=dict(
            batch=args.batch,
            heads=args.heads,
            d_k=args.d_k,
            window=args.window,
            features=args.features,
            bucket_size=args.bucket_size,
            hashes=args.hashes,
            repeats=args.repeats,
            max_ms=args.max_ms,
            memory=not args.no_memory,
            seq_lens=lengths,
        ),
        rows=[p.to_dict() for p in points],
    )
    report["crossover"] = crossovers(report)
    print_report(report)
    if args.json:
        atomic_write_text(args.json, strict_json(report, indent=2, nan="warn"))
        print(f"\nwrote {args.json}")
    return report


if __name__ == "__main__":
    main()
