"""tools/lab_server.py: citations read "Vaswani et al. (2017)" in JupyterLab and are written back as roles on save;
the website's ``{attention-explorer}`` directive shows as a note with the code that draws it live, and is saved back."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("jupyter_server", reason="Jupyter Server is missing: `make lab` installs requirements-lab.txt")

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
DIRECTIVE = re.compile(r"(?ms)^```\{attention-explorer\}\n.*?^```$")


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
def test_every_citation_and_explorer_of_the_chapter_is_shown_and_comes_back_exactly(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    original = copy.deepcopy(nb)
    assert lab_server.show_markup(nb, BIB) > 0
    left = [c["id"] for c in nb["cells"] if c["cell_type"] == "markdown" and "{cite" in "".join(c["source"])]
    assert not left, f"{path.name}: citations left as roles in cells {left}"
    shown = [_uncommented("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown"]
    left = [text[:80] for text in shown if "{attention-explorer}" in text]
    assert not left, f"{path.name}: attention explorers left as directives (jupyterlab-myst: Unknown Directive): {left}"
    lab_server.restore_markup(nb)
    for before, after in zip(original["cells"], nb["cells"], strict=True):
        assert "".join(before["source"]) == "".join(after["source"]), f"{path.name}: {before['id']} changed"


def _load_and_save(tmp_path, name: str) -> tuple[Path, dict]:
    """Copy chapter ``name`` into tmp_path, load and save it through the contents manager; (chapter, loaded model)."""
    chapter = ROOT / "chapters" / f"{name}.ipynb"
    (tmp_path / chapter.name).write_bytes(chapter.read_bytes())
    manager = lab_server.BookContentsManager(root_dir=str(tmp_path))

    async def load_and_save():
        model = await manager.get(chapter.name)
        await manager.save({"type": "notebook", "format": "json", "content": model["content"]}, chapter.name)
        return model

    return chapter, asyncio.run(load_and_save())


def test_the_contents_manager_shows_citations_and_saves_the_roles(tmp_path):
    chapter, model = _load_and_save(tmp_path, "preliminaries")
    markdown = "\n".join(c["source"] for c in model["content"]["cells"] if c["cell_type"] == "markdown")
    assert "[Sennrich et al. (2016)](bibliography.md#cite:t=sennrich2016neural" in markdown
    assert "{cite" not in markdown
    saved = json.loads((tmp_path / chapter.name).read_text(encoding="utf-8"))
    ours = json.loads(chapter.read_text(encoding="utf-8"))
    assert [("".join(c["source"])) for c in saved["cells"]] == [("".join(c["source"])) for c in ours["cells"]]


def _uncommented(text: str) -> str:
    """``text`` without its MyST comment lines (what jupyterlab-myst shows)."""
    return "\n".join(line for line in text.split("\n") if not line.startswith("%"))


def _explorer_cell(name: str) -> str:
    nb = json.loads((ROOT / "chapters" / name).read_text(encoding="utf-8"))
    return next("".join(c["source"]) for c in nb["cells"] if c.get("id") == "attention-explorer")


@pytest.mark.parametrize("name", ["bahdanau_attention.ipynb", "multihead_attention.ipynb"])
def test_an_attention_explorer_shows_as_a_note_with_the_portable_code_and_comes_back(name):
    source = _explorer_cell(name)
    (directive,) = DIRECTIVE.findall(source)
    shown = lab_server.show_cell(source, BIB)
    visible = _uncommented(shown)
    assert "{attention-explorer}" not in visible, "the directive would show as jupyterlab-myst's Unknown Directive"
    assert source[: source.index("```{attention-explorer}")] in shown, "the text before the directive is kept"
    note = shown[shown.index(lab_server.EXPLORER_OPENING) :]
    assert note.endswith("\n```\n:::\n"), "the note closes where the directive closed"
    # The note holds the portable notebooks' text and code (tools/portable.py), the directive in comments.
    lines = directive.split("\n")
    options = dict(line[1:].split(": ", 1) for line in lines[1:-1] if line.startswith(":"))
    body = "\n".join(line for line in lines[1:-1] if not line.startswith(":"))
    code = lab_server._portable_tool.attention_explorer_code(options, body)
    assert f"{lab_server._portable_tool.EXPLORER_NOTE}\n\n```python\n{code}\n```" in visible
    assert "\n".join("% " + line for line in lines) in shown
    compile(code, name, "exec")
    for sentence in body.split("\n"):
        assert json.dumps(sentence, ensure_ascii=False) in code
    assert lab_server.restore_cell(shown) == source


def test_the_saved_directive_is_the_commented_one_whatever_the_note_says():
    source = _explorer_cell("capstone.ipynb")
    shown = lab_server.show_cell(source, BIB)
    # Text typed into the note (and its code) is not saved: the directive comes back as it was.
    edited = shown.replace("draws it live:", "draws it live (I ran it):").replace("run.tokenizer", "tok")
    assert lab_server.restore_cell(edited) == source
    # A sentence changed in the commented directive is saved in the directive.
    edited = shown.replace("% Ein Mann trinkt", "% Eine Frau trinkt")
    assert edited != shown
    assert lab_server.restore_cell(edited) == source.replace("Ein Mann trinkt", "Eine Frau trinkt")
    # Without its marker line, the note is a note (JupyterLab's reader deleted the marker: their choice).
    unmarked = shown.replace(lab_server.EXPLORER_MARKER + "\n", "")
    assert lab_server.restore_cell(unmarked) == unmarked


def test_explorers_in_code_blocks_or_other_directives_and_cells_already_holding_a_note_are_left_alone():
    directive = "```{attention-explorer}\nEin Hund läuft.\n```"
    in_code = f"Write it so:\n\n````markdown\n{directive}\n````\n"
    assert lab_server.show_cell(in_code, BIB) == in_code
    nested = f"::::{{tip}}\n{directive}\n::::"
    assert lab_server.show_cell(nested, BIB) == nested
    # A note of the shown form already in the cell would come back as a directive: the cell is not rewritten.
    shown = lab_server.show_cell(directive, BIB)
    assert shown != directive and lab_server.restore_cell(shown) == directive
    assert lab_server.show_cell(shown, BIB) == shown
    # Two explorers and a citation in one cell: all shown, all restored.
    cell = f"{directive}\n\nAs {{cite:t}}`vaswani2017attention` showed.\n\n{directive.replace('Hund', 'Katze')}"
    shown = lab_server.show_cell(cell, BIB)
    assert _uncommented(shown).count(lab_server.EXPLORER_OPENING) == 2 and "Vaswani et al. (2017)" in shown
    assert "{attention-explorer}" not in _uncommented(shown)
    assert lab_server.restore_cell(shown) == cell


def test_the_contents_manager_shows_an_explorer_as_a_note_and_saves_the_directive(tmp_path):
    chapter, model = _load_and_save(tmp_path, "bahdanau_attention")
    cell = next(c for c in model["content"]["cells"] if c["id"] == "attention-explorer")
    assert lab_server.EXPLORER_OPENING in cell["source"] and "{attention-explorer}" not in _uncommented(cell["source"])
    saved = json.loads((tmp_path / chapter.name).read_text(encoding="utf-8"))
    ours = json.loads(chapter.read_text(encoding="utf-8"))
    assert [("".join(c["source"])) for c in saved["cells"]] == [("".join(c["source"])) for c in ours["cells"]]
