"""Sub-word tokens as the book's pictures label them: words, not SentencePiece's marks.

The book's tokenizer (:mod:`lib.bpe`, SentencePiece's Metaspace scheme) writes a word's first piece with the mark
``▁`` (``"▁Hund"``) and a piece that continues a word without it (``"▁Bohr"``, ``"maschine"``). A figure labels
the first as the word (``Hund``) and the second with a leading hyphen (``-maschine``), so that a reader sees words
and can still tell where a word was split; punctuation and special tokens (``"."``, ``"</s>"``) stay as they are.
The attention explorer (``lib/explorer.js``, ``tokenLabel``) labels tokens by the same rule; a test holds the two
to each other. A leaf: the standard library only.

    >>> token_labels(["▁Eine", "▁Bohr", "maschine", ".", "</s>"])
    ['Eine', 'Bohr', '-maschine', '.', '</s>']
    >>> token_labels(["我", "爱", "机器", "学习"])  # no marks: the labels as they are
    ['我', '爱', '机器', '学习']
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["WORD_START", "token_label", "token_labels"]

#: SentencePiece's (Metaspace's) mark of a word's first piece.
WORD_START = "\u2581"


def _starts_a_word_piece(token: str) -> bool:
    """Whether the token begins with a letter or a digit (JavaScript's ``/^[\\p{L}\\p{N}]/u``)."""
    return bool(token) and unicodedata.category(token[0])[0] in "LN"


def token_label(token: str, metaspace: bool = True) -> str:
    """How a figure labels one token.

    Args:
        token: a token as the tokenizer writes it, e.g. ``"▁Hund"``, ``"maschine"``, ``"."``.
        metaspace: whether the tokens it comes from mark word starts (then a piece without the mark that begins
            with a letter or digit continues a word and gets a leading hyphen).

    Returns:
        ``"▁Hund"`` -> ``"Hund"``; a lone ``"▁"`` -> ``"␣"``; ``"maschine"`` -> ``"-maschine"`` (when
        ``metaspace``); anything else as it is; an inner ``▁`` is shown as a space.
    """
    if token.startswith(WORD_START):
        return token[1:].replace(WORD_START, " ") if len(token) > 1 else "␣"
    shown = token.replace(WORD_START, " ")
    return f"-{shown}" if metaspace and _starts_a_word_piece(token) else shown


def token_labels(tokens: Iterable[str], metaspace: bool | None = None) -> list[str]:
    """How a figure labels a sequence of tokens (:func:`token_label` of each).

    Args:
        tokens: the tokens, e.g. ``["▁Ein", "▁Hund", "."]``.
        metaspace: whether the tokens mark word starts; ``None`` (default): they do if any of them starts with
            ``▁``, so that plain words (``["cat", "dog"]``, ``["我", "爱"]``) are left as they are.

    Returns:
        The labels, one per token.
    """
    tokens = [str(t) for t in tokens]
    if metaspace is None:
        metaspace = any(t.startswith(WORD_START) for t in tokens)
    return [token_label(t, metaspace) for t in tokens]
