"""tools/lab_server.py: citations read "Vaswani et al. (2017)" in JupyterLab and are written back as roles on save."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("jupyter_server", reason="Jupyter Server is missing: `make lab` installs requirements-lab.txt")

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _load():
    spec = importlib.util.spec_from_file_location("lab_server_tool", ROOT / "tools" / "lab_server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lab_server = _load()
BIB = lab_server.bibliography()


def test_a_narrative_and_a_parenthetical_citation_read_as_author_year():
    source = "As {cite:t}`vaswani2017attention` showed (and {cite:p}`bahdanau2015neural`)."
    shown = lab_server.show_cell(source, BIB)
    assert shown.startswith('As [Vaswani et al. (2017)](bibliography.md#cite:t=vaswani2017attention "')
    assert "[(Bahdanau et al., 2015)](bibliography.md#cite:p=bahdanau2015neural " in shown
    assert "Attention is all you need" in shown, "the tooltip is the full reference"
    assert "{cite" not in shown
    assert lab_server.restore_cell(shown) == source


def test_several_keys_and_a_page_note_round_trip():
    source = "Two works {cite:p}`vaswani2017attention,brown2020language{§2.2}`."
    shown = lab_server.show_cell(source, BIB)
    assert "(Vaswani et al., 2017; Brown et al., 2020, §2.2)" in shown
    assert lab_server.restore_cell(shown) == source


def test_code_unknown_keys_and_existing_links_are_left_alone():
    code = "Write `{cite:t}`vaswani2017attention`` in a chapter.\n\n```\n{cite:t}`vaswani2017attention`\n```"
    assert "{cite:t}`vaswani2017attention`" in lab_server.show_cell(code, BIB).split("\n")[-2]
    assert lab_server.show_cell("See {cite:t}`no_such_key_2099`.", BIB) == "See {cite:t}`no_such_key_2099`."
    # A cell that already holds a link of the shown form would not come back as it was: it is not rewritten.
    tricky = "{cite:t}`vaswani2017attention` and [x](bibliography.md#cite:t=press2017using)"
    assert lab_server.show_cell(tricky, BIB) == tricky


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_citation_of_the_chapter_is_shown_and_comes_back_exactly(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    original = copy.deepcopy(nb)
    assert lab_server.show_citations(nb, BIB) > 0
    left = [c["id"] for c in nb["cells"] if c["cell_type"] == "markdown" and "{cite" in "".join(c["source"])]
    assert not left, f"{path.name}: citations left as roles in cells {left}"
    lab_server.restore_citations(nb)
    for before, after in zip(original["cells"], nb["cells"], strict=True):
        assert "".join(before["source"]) == "".join(after["source"]), f"{path.name}: {before['id']} changed"


def test_the_contents_manager_shows_citations_and_saves_the_roles(tmp_path):
    chapter = ROOT / "chapters" / "preliminaries.ipynb"
    (tmp_path / chapter.name).write_bytes(chapter.read_bytes())
    manager = lab_server.BookContentsManager(root_dir=str(tmp_path))

    async def load_and_save():
        model = await manager.get(chapter.name)
        await manager.save({"type": "notebook", "format": "json", "content": model["content"]}, chapter.name)
        return model

    model = asyncio.run(load_and_save())
    markdown = "\n".join(c["source"] for c in model["content"]["cells"] if c["cell_type"] == "markdown")
    assert "[Sennrich et al. (2016)](bibliography.md#cite:t=sennrich2016neural" in markdown
    assert "{cite" not in markdown
    saved = json.loads((tmp_path / chapter.name).read_text(encoding="utf-8"))
    ours = json.loads(chapter.read_text(encoding="utf-8"))
    assert [("".join(c["source"])) for c in saved["cells"]] == [("".join(c["source"])) for c in ours["cells"]]
