"""Issue 31: every colour map the book draws with is readable with red–green colour blindness.

The maps named in lib/, tools/ and the chapters' code cells (``cmap="…"``, a ``cmap: str = "…"`` default,
``get_cmap("…")``, ``colormaps["…"]``) are all in SAFE: the viridis family (sequential, even in lightness, made for
colour-blind readers), single-hue sequential maps, and diverging maps whose two ends are red/blue or orange/purple.
A red–green map (``RdYlGn``, ``PiYG``) or a rainbow (``jet``, ``hsv``, ``Spectral``, ``turbo``) fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import pytest

ROOT = Path(__file__).resolve().parents[2]

SAFE = {
    # perceptually uniform, sequential, colour-blind-safe
    "viridis", "cividis", "magma", "inferno", "plasma",
    # one hue, light to dark
    "Blues", "Greys", "Purples", "Oranges",
    # diverging, blue against red or purple against orange: no green end
    "RdBu", "RdBu_r", "PuOr", "PuOr_r", "coolwarm",
}  # fmt: skip

NAMED = re.compile(r"""(?:cmap\s*(?::\s*str\s*)?=\s*|get_cmap\(\s*|colormaps\[\s*)(["'])(?P<name>[A-Za-z0-9_]+)\1""")


def _named_maps(text: str) -> list[str]:
    return [m.group("name") for m in NAMED.finditer(text)]


def _sources() -> dict[str, str]:
    """The code of lib/, tools/ and every chapter's code cells (not their outputs), by file."""
    texts = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for d in ("lib", "tools")
             for p in (ROOT / d).rglob("*.py")}  # fmt: skip
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        texts[nb.relative_to(ROOT).as_posix()] = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "code"
        )
    return texts


def test_the_pattern_finds_each_way_of_naming_a_map():
    code = 'imshow(a, cmap="RdYlGn")\ndef f(cmap: str = "jet"): ...\nplt.get_cmap(\'hsv\')\ncolormaps["turbo"]'
    assert _named_maps(code) == ["RdYlGn", "jet", "hsv", "turbo"]


def test_every_named_map_is_colour_blind_safe():
    used = {(name, path) for path, text in _sources().items() for name in _named_maps(text)}
    assert len({name for name, _ in used}) >= 4, f"the scan found too few maps to be looking at the code: {used}"
    unsafe = sorted((name, path) for name, path in used if name not in SAFE)
    assert not unsafe, f"colour maps that red–green colour-blind readers cannot read, or rainbows: {unsafe}"


@pytest.mark.parametrize("name", sorted(SAFE))
def test_each_safe_map_exists_in_matplotlib(name):
    assert name in matplotlib.colormaps, f"{name} is not a matplotlib colour map"
