"""lib.show: the one way a chapter displays lib's code (a public definition, its docstrings left out)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from lib.attention import MultiHeadAttention, scaled_dot_product_attention
from lib.show import show, source_without_docstring
from lib.transformer import PositionwiseFeedForward

ROOT = Path(__file__).resolve().parents[2]
SHOW_CALL = re.compile(r"\bshow\(([\w.]+)\)")


def test_the_docstring_goes_and_the_code_stays():
    text = source_without_docstring(scaled_dot_product_attention)
    assert text.startswith("def scaled_dot_product_attention(query, key, value, mask=None, dropout_p=0.0):\n")
    assert '"""' not in text and "Source:" not in text
    assert "torch.softmax(scores, dim=-1" in text and "# (..., seq_q, seq_k)" in text  # code and shape comments
    ast.parse(text)  # still a valid definition
    # a class: its own docstring and every method's go; a one-line method keeps its body
    cls = source_without_docstring(PositionwiseFeedForward)
    assert '"""' not in cls and "def forward(self, x: Tensor) -> Tensor:\n        return self.linear2(" in cls


def test_a_method_is_dedented_and_rendered_as_python():
    text = source_without_docstring(MultiHeadAttention.split_heads)
    assert text.startswith("def split_heads(self, x):\n")
    code = show(MultiHeadAttention.split_heads)
    assert code.data == text and 'class="highlight"' in code._repr_html_()


def test_private_names_are_refused():
    from lib.positional_attention import _self_attention_positions

    with pytest.raises(ValueError, match="private"):
        source_without_docstring(_self_attention_positions)
    assert source_without_docstring(MultiHeadAttention.__init__).startswith("def __init__(")  # a constructor is fine


def _code_cells(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def test_chapters_display_lib_through_show_only():
    shown = 0
    for notebook in sorted((ROOT / "chapters").glob("*.ipynb")):
        for source in _code_cells(notebook):
            if "getsource(" in source:  # source text may be asserted on, never displayed or sliced for display
                assert "Code(" not in source and "display(" not in source, f"{notebook.name}: display with lib.show"
            for name in SHOW_CALL.findall(source):
                assert not any(part.startswith("_") for part in name.split(".")), f"{notebook.name} shows {name}"
                shown += 1
    assert shown >= 30, f"only {shown} displays of lib code found: has the display helper changed?"
