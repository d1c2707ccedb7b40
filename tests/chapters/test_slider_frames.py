"""Issue 31: every figure a chapter stores fits the page's 688-px column, and the frames of every kernel-free slider
(``lib.plots.figure_slider``) are drawn like the chapters' other figures: PNGs at the notebook's 100 dpi, so their
9-pt labels are 9 pt on the page (at the 80 dpi sliders used before, 7.2 pt). The PNG header gives the width
(bytes 16–20) and the pHYs chunk the dots per metre."""

import base64
import json
import struct
from pathlib import Path

import pytest

from lib.plots import NOTEBOOK_DPI, PAGE_COLUMN_PX

from test_alt_text import NOTEBOOKS, SLIDER_DATA  # tests/chapters is on the path (no __init__.py)

ROOT = Path(__file__).resolve().parents[2]


def png_width_and_dpi(png: bytes) -> tuple[int, int]:
    """A PNG's width in pixels and its resolution in dots per inch (rounded)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width = struct.unpack(">I", png[16:20])[0]
    at = png.index(b"pHYs") + 4
    return width, round(struct.unpack(">I", png[at : at + 4])[0] * 0.0254)


def _sliders(notebook: str) -> list[dict]:
    nb = json.loads((ROOT / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    html = ["".join(o.get("data", {}).get("text/html", "")) for c in nb["cells"] for o in c.get("outputs", [])]
    return [json.loads(raw.replace("<\\/", "</")) for h in html for raw in SLIDER_DATA.findall(h)]


def test_png_width_and_dpi_reads_what_matplotlib_wrote():
    import io

    from matplotlib.figure import Figure

    buf = io.BytesIO()
    Figure(figsize=(3, 1)).savefig(buf, format="png", dpi=80)
    assert png_width_and_dpi(buf.getvalue()) == (240, 80)


def test_the_chapters_have_sliders():
    assert sum(len(_sliders(nb)) for nb in NOTEBOOKS) >= 12


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[Path(f).name for f in NOTEBOOKS])
def test_slider_frames_are_drawn_at_the_notebooks_dpi_for_the_column(notebook):
    for slider in _sliders(notebook):
        for label, frame in zip(slider["labels"], slider["frames"]):
            width, dpi = png_width_and_dpi(base64.b64decode(frame.split(",", 1)[1]))
            assert dpi == NOTEBOOK_DPI and width <= PAGE_COLUMN_PX, (
                f"{notebook}: the frame {label!r} is {width} px at {dpi} dpi: re-execute the chapter"
            )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[Path(f).name for f in NOTEBOOKS])
def test_every_stored_png_fits_the_column(notebook):
    """Every figure a chapter stores is at most the column's 688 px wide, so the page shows it at its own size and
    its 9-pt text stays 9 pt (``lib.plots`` narrows a wider ``figsize`` to 6.6 in; a title or legend that spills out
    of the figure widens the tight PNG past it)."""
    nb = json.loads((ROOT / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    wide = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            png = out.get("data", {}).get("image/png")
            if png:
                width, _ = png_width_and_dpi(base64.b64decode("".join(png)))
                if width > PAGE_COLUMN_PX:
                    wide.append(f"cell {i}: {width} px")
    assert not wide, f"{notebook}: figures wider than the {PAGE_COLUMN_PX}-px column: {wide}"
