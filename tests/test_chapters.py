"""Static checks of every chapter notebook listed in _toc.yml: what a reader of the website would meet.

nbval (``make test``) re-executes the notebooks; these checks read the stored outputs that the website shows.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOC = (ROOT / "_toc.yml").read_text()
NOTEBOOKS = [ROOT / f"{name}.ipynb" for name in re.findall(r"file:\s*(\S+)", TOC) if (ROOT / f"{name}.ipynb").exists()]


def test_every_toc_entry_exists():
    for name in re.findall(r"file:\s*(\S+)", TOC):
        assert (ROOT / f"{name}.ipynb").exists() or (ROOT / f"{name}.md").exists(), name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_ready_for_the_website(path):
    assert path.stat().st_size < 2 * 1024 * 1024, "keep notebooks under 2 MB (lower the figure size/DPI)"
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "".join(code[0]["source"]).startswith("%matplotlib inline"), "figures need the inline backend"
    assert all(c.get("execution_count") for c in code), "every code cell has run (make execute)"
    counts = [c["execution_count"] for c in code]
    assert counts == sorted(counts), "cells were executed top to bottom"
    images = 0
    for cell in code:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"stored error in {path.name}: {out.get('evalue')}"
            data = out.get("data", {})
            text = "".join(data.get("text/plain", ""))
            if text.startswith("<Figure size"):
                assert any(k.startswith("image/") for k in data), "a figure stored as text, not as an image"
            images += any(k.startswith("image/") for k in data)
    assert images >= 2, "every chapter shows figures"
    markdown = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert markdown.count("{exercise}") >= 3, "every chapter ends with at least 3 exercises"
    assert "## Summary" in markdown
