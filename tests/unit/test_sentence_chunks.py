"""Sentence splitting does bounded work for any line (issue 45: one 0.5 MB line gave nothing in 300 s).

pysbd's rules take time quadratic in the length of what they read, so ``lib.translate.split_sentences`` hands it
pieces of at most ``SENTENCE_CHUNK`` characters, cut after a sentence end where there is one. Checked by what pysbd
is given (never more than a piece), not by a clock; and a long text of plain sentences splits exactly as whole.
"""

from __future__ import annotations

import pytest

import lib.translate as T

SENTENCES = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee!", "Liest die Frau ein Buch?"]


class _Recorder:
    """A segmenter that records the length of every text it is given and splits after ". " as pysbd would."""

    def __init__(self):
        self.lengths: list[int] = []

    def segment(self, text: str) -> list[str]:
        self.lengths.append(len(text))
        return [part + ("." if not part.endswith((".", "!", "?")) else "") for part in text.split(". ") if part]


def test_pysbd_never_reads_more_than_a_piece_of_a_long_line(monkeypatch):
    recorder = _Recorder()
    monkeypatch.setattr(T, "_SEGMENTER", [recorder])
    line = "Ein Mann fährt Fahrrad. " * 20_000  # 480 kB in one line
    sentences = T.split_sentences(line.strip())
    assert len(sentences) == 20_000 and set(sentences) == {"Ein Mann fährt Fahrrad."}
    assert max(recorder.lengths) <= T.SENTENCE_CHUNK
    assert sum(recorder.lengths) == len(line.strip())  # every character read once


def test_a_long_text_of_plain_sentences_splits_as_its_sentences():
    text = " ".join(SENTENCES * 300)  # about 22,000 characters: eleven pieces
    assert len(text) > 10 * T.SENTENCE_CHUNK
    assert T.split_sentences(text) == SENTENCES * 300


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("abc. def. ghi", ["abc.", " def.", " ghi"]),  # after the last sentence end in each piece
        ("abc def ghi jkl", ["abc", " def", " ghi", " jkl"]),  # no sentence end: at the last space
        ("abcdefghijkl", ["abcdefg", "hijkl"]),  # one long word: where the piece is full
        ("short", ["short"]),
    ],
)
def test_pieces_cut_after_a_sentence_end_then_at_a_space(text, pieces):
    assert list(T._chunks(text, size=7)) == pieces
    assert "".join(T._chunks(text, size=7)) == text
