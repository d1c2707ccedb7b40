"""Print the numeric path `make test` runs the chapters on: one other than this machine's own.

The stored outputs are made by `make execute` on the author's machine, on its own path. `make test` re-runs every
chapter (nbval, then the student edition) with ``ATEN_CPU_CAPABILITY=default``, torch's CPU kernels without SIMD,
so that float32 sums happen in another order, as on a reader's CPU with other vector units or on a GPU: sums,
means, LayerNorm, exp, tanh, softmax and even matrix products come out with other last bits (the capstone and
BERT/GPT chapters take about a quarter longer). ``avx2`` on an AVX-512 CPU would be faster but changes only
softmax and log-softmax among these (measured with torch 2.13 on an Intel Xeon), so it is not the path chosen.
Where torch already runs ``DEFAULT`` there is no other path: the line is empty, and stderr says so; the same
where ``ATEN_CPU_CAPABILITY`` is already set (the path it names stands).

Usage: ``python tools/numeric_path.py`` prints ``ATEN_CPU_CAPABILITY=default`` (or nothing) for the
Makefile's ``NBVAL_NUMERIC``; ``make test NBVAL_NUMERIC=`` runs on the machine's own path instead.
"""

from __future__ import annotations

import os
import sys

import torch


def other_path(native: str) -> str:
    """The ``ATEN_CPU_CAPABILITY`` value of a path other than ``native`` (torch's name for it), or ``""``."""
    return "" if native == "DEFAULT" else "default"


def main() -> int:
    chosen = os.environ.get("ATEN_CPU_CAPABILITY")
    if chosen:
        print(f"numeric_path: ATEN_CPU_CAPABILITY={chosen} is set, and stands", file=sys.stderr)
        return 0
    native = torch.backends.cpu.get_cpu_capability()
    other = other_path(native)
    if other:
        print(f"ATEN_CPU_CAPABILITY={other}")
    else:
        print(f"numeric_path: torch runs {native} here, with no other CPU path: the machine's own", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
