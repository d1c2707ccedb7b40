"""Every figure a chapter's code draws carries real alt text: cell metadata ``mystnb.image.alt``, which myst-nb
writes into the ``<img>`` (without it, the alt is the image's file path, which a screen reader reads as a hash)."""

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
IMAGE_TYPES = ("image/png", "image/svg+xml")
FILE_LIKE = (".png", ".svg", "/_images/")


def _toc_files(node):
    """Every ``file`` entry of the table of contents, depth first."""
    if isinstance(node, dict):
        yield from ([node["file"]] if "file" in node else [])
        yield from (f for value in node.values() for f in _toc_files(value))
    elif isinstance(node, list):
        yield from (f for item in node for f in _toc_files(item))


TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
NOTEBOOKS = [f for f in _toc_files(TOC) if (ROOT / f"{f}.ipynb").exists()]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[Path(f).name for f in NOTEBOOKS])
def test_every_image_output_has_alt_text(notebook):
    nb = json.loads((ROOT / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        outputs = cell.get("outputs", []) if cell["cell_type"] == "code" else []
        if not any(k in o.get("data", {}) for o in outputs for k in IMAGE_TYPES):
            continue
        where = f"{notebook}.ipynb, cell {cell.get('id')}"
        alt = cell["metadata"].get("mystnb", {}).get("image", {}).get("alt")
        assert isinstance(alt, str), f"{where}: an image output without metadata mystnb.image.alt"
        assert len(alt.split()) >= 8, f"{where}: alt text of fewer than 8 words: {alt!r}"
        assert not any(s in alt for s in FILE_LIKE), f"{where}: alt text looks like a file name: {alt!r}"
