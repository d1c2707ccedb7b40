"""Print the numeric path `make test` runs the chapters on: one other than this machine's own.

The stored outputs are made by `make execute` on the author's machine, on its own path. `make test` re-runs every
chapter (nbval, then the student edition) with ``ATEN_CPU_CAPABILITY`` set to another of torch's CPU kernel sets, so
that float32 arithmetic happens in another order, as on a reader's CPU with other vector units:

- on a CPU with AVX-512 (torch's ``AVX512``): ``avx2``, the kernels of most AMD and older Intel CPUs. Measured with
  torch 2.13 on an Intel Xeon, it changes the bits of softmax and log-softmax (in every attention layer and every
  loss, so every training run comes out different) at the machine's own speed;
- on any other CPU with vector kernels (``AVX2``, ARM's ``SVE256``, ...): ``default``, torch's kernels without SIMD,
  which also changes sums, means, LayerNorm, exp, tanh, GELU and matrix products, at a cost: on that Xeon the
  capstone's training took about twice as long as on ``avx2`` (too slow for CI there);
- where torch already runs ``DEFAULT`` there is no other path: the line is empty, and stderr says so; the same
  where ``ATEN_CPU_CAPABILITY`` is already set (the path it names stands).

Usage: ``python tools/numeric_path.py`` prints ``ATEN_CPU_CAPABILITY=avx2`` (or ``=default``, or nothing) for the
Makefile's ``NBVAL_NUMERIC``; ``make test NBVAL_NUMERIC=`` runs on the machine's own path instead.
"""

from __future__ import annotations

import os
import sys

import torch

#: torch's capability when ATEN_CPU_CAPABILITY is unset -> another path at about the same speed.
NEAR = {"AVX512": "avx2"}


def other_path(native: str) -> str:
    """The ``ATEN_CPU_CAPABILITY`` value of a path other than ``native`` (torch's name for it), or ``""``."""
    if native == "DEFAULT":
        return ""
    return NEAR.get(native, "default")


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
