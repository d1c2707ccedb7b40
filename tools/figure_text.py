"""How large the smallest text of every figure the chapters draw is on the page, measured while they run.

Each notebook is executed (nbclient, in its own folder, outputs discarded: the stored notebook is not touched) with
one extra first cell that wraps matplotlib's ``FigureCanvasBase.print_figure``: every PNG the kernel makes (a figure
a cell shows, each frame of a ``lib.plots.figure_slider``) is first measured with ``lib.plots.smallest_text_pt``, at
the PNG's dpi, on the desktop column (688 px) and on a 390-px phone (358 px). SVG schematics are not PNGs; their
text is held at 9 pt by ``tests/unit/test_diagrams.py``. A table lists every figure under ``--min-pt`` (9) on the
desktop column, with its notebook and cell; the last line counts the figures and the smallest size.

The chapters read Multi30k: set ``MULTI30K_DIR`` to a local copy where there is no network. Trainings take
minutes: point ``ATTENTION_BOOK_TRAIN_CACHE`` at the kept runs of ``make test`` (``.cache/train-memo``) to restore
them instead (the same code, the same figures).

It is a measurement, not a test. Usage::

    python tools/figure_text.py                                    # every notebook of the table of contents
    python tools/figure_text.py chapters/transformer.ipynb --json  # one notebook, JSON records
    ATTENTION_BOOK_TRAIN_CACHE=.cache/train-memo python tools/figure_text.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import nbformat
from colab_cell import toc_notebooks  # tools/ is this script's folder: the notebooks of _toc.yml
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent

#: The first cell of every run: records (the cell's source, desktop pt, phone pt, dpi, width px) for every PNG made.
PROBE = """\
import matplotlib.backend_bases as _backend_bases
from lib.plots import NOTEBOOK_DPI as _DPI, drawn_text_sizes as _sizes, smallest_text_pt as _smallest

_FIGURE_TEXT, _measuring, _cell = [], [False], [""]
_print_figure = _backend_bases.FigureCanvasBase.print_figure
get_ipython().events.register("pre_run_cell", lambda info: _cell.__setitem__(0, info.raw_cell))


def _measured_print_figure(self, filename, dpi=None, *args, format=None, **kw):
    fmt = (format or (filename if isinstance(filename, str) else "") or "png").rsplit(".", 1)[-1].lower()
    if fmt == "png" and not _measuring[0]:
        _measuring[0] = True
        try:
            at = float(dpi) if isinstance(dpi, (int, float)) else _DPI
            _, width = _sizes(self.figure, dpi=at)
            _FIGURE_TEXT.append((_cell[0], round(_smallest(self.figure, dpi=at), 2),
                                 round(_smallest(self.figure, dpi=at, column_px=358), 2), at, round(width)))
        except Exception as err:  # a figure the measure cannot draw is reported, never hidden
            _FIGURE_TEXT.append((_cell[0], None, None, None, repr(err)))
        finally:
            _measuring[0] = False
    return _print_figure(self, filename, dpi, *args, format=format, **kw)


_backend_bases.FigureCanvasBase.print_figure = _measured_print_figure
"""

REPORT = "import json as _json; print(_json.dumps(_FIGURE_TEXT))"


def measure(path: Path, timeout: int = 1800) -> list[dict]:
    """Execute one notebook with the probe; one record per PNG its cells made, with the cell's id.

    Raises:
        RuntimeError: the notebook failed (nbclient's error, first line), or the probe's report is missing.
    """
    nb = nbformat.read(path, as_version=4)
    cells = nb.cells
    nb.cells = [nbformat.v4.new_code_cell(PROBE), *cells, nbformat.v4.new_code_cell(REPORT)]
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute()
    except Exception as err:  # nbclient's CellExecutionError names the exception (ename, evalue)
        why = f"{getattr(err, 'ename', type(err).__name__)}: {getattr(err, 'evalue', err)}".splitlines()[0]
        raise RuntimeError(f"{path.name}: {why}") from err
    report = [o for o in nb.cells[-1].outputs if o.get("name") == "stdout"]
    if not report:
        raise RuntimeError(f"{path.name}: the probe printed no report")
    by_source = {}
    for c in cells:
        by_source.setdefault(c.source, c.get("id", "?"))
    records = []
    for source, desktop, phone, dpi, width in json.loads(report[0]["text"]):
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        records.append({"notebook": name, "cell": by_source.get(source, "?"),
                        "desktop_pt": desktop, "phone_pt": phone, "dpi": dpi, "width_px": width})  # fmt: skip
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: the table of contents)")
    parser.add_argument("--min-pt", type=float, default=9.0, help="list the figures under this size (default 9)")
    parser.add_argument("--json", action="store_true", help="print every record as JSON instead of the table")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or toc_notebooks()
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {missing[0]}")
    records, failed = [], []
    for path in paths:
        try:
            found = measure(path)
        except RuntimeError as err:
            failed.append(str(err))
            print(f"figure_text: {err}", file=sys.stderr)
            continue
        records += found
        print(f"figure_text: {path.name}: {len(found)} figures", file=sys.stderr)
    if args.json:
        print(json.dumps(records, indent=1))
    else:
        small = [r for r in records if r["desktop_pt"] is None or r["desktop_pt"] < args.min_pt]
        print("| notebook | cell | desktop pt | phone pt | dpi | width px |\n|---|---|--:|--:|--:|--:|")
        for r in small:
            row = [r["notebook"], r["cell"], r["desktop_pt"], r["phone_pt"], r["dpi"], r["width_px"]]
            print("| " + " | ".join(map(str, row)) + " |")
        sizes = [r["desktop_pt"] for r in records if r["desktop_pt"] is not None]
        print(f"\n{len(records)} figures in {len(paths) - len(failed)} notebooks; {len(small)} under {args.min_pt} pt "
              f"on the desktop column; smallest {min(sizes, default=float('nan')):.2f} pt")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
