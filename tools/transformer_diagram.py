"""Draw the whole-Transformer diagram of ``lib.diagrams.plot_transformer_diagram`` into a PNG for the intro page.

The Transformer chapter draws the figure in a code cell; the intro (``chapters/intro.md``) is a plain Markdown page
and shows the committed PNG ``chapters/images/transformer_diagram.png`` that this script writes.

Usage (from the repository root)::

    .venv/bin/python tools/transformer_diagram.py              # writes chapters/images/transformer_diagram.png
    .venv/bin/python tools/transformer_diagram.py --out X.png  # writes X.png instead

``tests/unit/test_diagrams.py`` runs it into a temporary folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from anywhere: `import lib` finds this checkout

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from lib.diagrams import plot_transformer_diagram  # noqa: E402
from lib.files import atomic_write  # noqa: E402

DEFAULT_OUT = ROOT / "chapters" / "images" / "transformer_diagram.png"
DPI = 100


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the PNG to write (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.out.suffix.lower() != ".png":
        parser.error(f"--out must name a .png file, got {args.out}")
    if not args.out.parent.is_dir():
        parser.error(f"--out's folder {args.out.parent} does not exist")
    fig = plot_transformer_diagram()
    # No software version in the file: the same code and matplotlib draw the same bytes.
    atomic_write(args.out, lambda f: fig.savefig(f, format="png", dpi=DPI, metadata={"Software": None}))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
