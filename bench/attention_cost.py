"""What self-attention costs as the sequence grows: time and memory of lib's explicit attention vs torch's fused kernel.

For n = --min-n, 2·min-n, ..., --max-n (powers of two), random float32 queries, keys and values of shape
(batch, heads, n, d_k) go through

- ``lib.attention.scaled_dot_product_attention``: the explicit path of the book, which builds the
  (batch, heads, n, n) scores, softmax and weights and returns the weights;
- ``torch.nn.functional.scaled_dot_product_attention``: torch's fused kernel, which returns no weights.

It prints one row per n: the median milliseconds per call of each (``lib.cost.median_ms``: the two take
turns, the order alternating), their ratio, the FLOPs of the two matrix products, the MiB of one
weight tensor (batch · heads · n² · 4 bytes, computed) and the peak MiB of tensors each call holds at once
(``lib.cost.peak_tensor_bytes``, measured by watching PyTorch's operations; scratch memory inside a kernel
is not seen). Doubling n should roughly quadruple lib's time once n is large, and exactly quadruples the
weights' memory.

    python bench/attention_cost.py [--min-n 128] [--max-n 4096] [--batch 1] [--heads 4] [--d-k 64]
                                   [--repeats 5] [--threads N] [--no-memory] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import platform

import torch

from lib.cost import attention_cost
from lib.files import atomic_write_text, strict_json


def machine_facts() -> dict:
    """CPU name (Linux /proc/cpuinfo, else ``platform``), torch version and torch's CPU threads."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return dict(cpu=cpu, torch=torch.__version__, python=platform.python_version(), threads=torch.get_num_threads())


def seq_lengths(min_n: int, max_n: int) -> list[int]:
    """min_n, 2·min_n, 4·min_n, ... up to and including max_n (if max_n is reached exactly)."""
    lengths = []
    n = min_n
    while n <= max_n:
        lengths.append(n)
        n *= 2
    return lengths


def print_report(report: dict) -> None:
    """The machine, the settings and one table row per sequence length."""
    m, s = report["machine"], report["settings"]
    print(f"Machine: {m['cpu']} | torch {m['torch']} | threads {m['threads']}")
    print(
        f"Self-attention, float32, no grad: batch {s['batch']}, heads {s['heads']}, d_k {s['d_k']}; "
        f"median of {s['repeats']} calls"
    )
    memory = s["memory"]
    header = f"{'n':>6} {'lib ms':>10} {'torch ms':>10} {'lib/torch':>9} {'GFLOP':>8} {'weight MiB':>11}"
    if memory:
        header += f" {'lib peak MiB':>13} {'torch peak MiB':>15}"
    print(header)
    for r in report["rows"]:
        line = (
            f"{r['seq_len']:>6} {r['lib_ms']:>10.3f} {r['torch_ms']:>10.3f} {r['lib_ms'] / r['torch_ms']:>9.2f} "
            f"{r['flops'] / 1e9:>8.3f} {r['weight_bytes'] / 2**20:>11.3f}"
        )
        if memory:
            line += f" {r['lib_peak_bytes'] / 2**20:>13.3f} {r['torch_peak_bytes'] / 2**20:>15.3f}"
        print(line)
    print("  lib:   lib.attention.scaled_dot_product_attention (explicit; returns the weights)")
    print("  torch: torch.nn.functional.scaled_dot_product_attention (fused; no weights)")
    print("  weight MiB = batch * heads * n^2 * 4 bytes / 2^20 (computed)")
    if memory:
        print("  peak MiB: the largest total of tensors a call holds at once (measured by lib.cost.peak_tensor_bytes)")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-n", type=int, default=128, help="shortest sequence length (default 128)")
    p.add_argument("--max-n", type=int, default=4096, help="longest sequence length; lengths double from --min-n")
    p.add_argument("--batch", type=int, default=1, help="sequences per call (default 1)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--d-k", type=int, default=64, help="features per head (default 64)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per length and contestant (median counts)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    p.add_argument("--json", default=None, help="also write every number to this JSON file")
    args = p.parse_args(argv)
    for name in ("min_n", "max_n", "batch", "heads", "d_k", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be at least 1")
    if args.max_n < args.min_n:
        p.error(f"--max-n ({args.max_n}) must be at least --min-n ({args.min_n})")
    return args


def main(argv=None) -> dict:
    """Run the measurement, print the table and return the report (also written to ``--json``)."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    lengths = seq_lengths(args.min_n, args.max_n)
    rows = attention_cost(
        lengths,
        batch=args.batch,
        heads=args.heads,
        d_k=args.d_k,
        repeats=args.repeats,
        measure_memory=not args.no_memory,
    )
    report = dict(
        machine=machine_facts(),
        settings=dict(
            batch=args.batch,
            heads=args.heads,
            d_k=args.d_k,
            repeats=args.repeats,
            memory=not args.no_memory,
            seq_lens=lengths,
        ),
        rows=[r.to_dict() for r in rows],
    )
    print_report(report)
    if args.json:
        atomic_write_text(args.json, strict_json(report, indent=2, nan="warn"))
        print(f"\nwrote {args.json}")
    return report


if __name__ == "__main__":
    main()
