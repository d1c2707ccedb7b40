"""Tests of the break-it exercises of the chapter "Positional encoding": a correct measurement passes, typical
wrong measurements are named.

The chapter's other exercises are tested in ``test_exercises.py``. The correct measurements here are made with
``lib`` along another path than the checker's (the encoding table zeroed in place of ``NoPositionalEncoding``);
``test_exercises.py`` also collects this module's ``CASES``.
"""

import copy
import math

import torch

from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.exercises import check
from lib.positional import sinusoidal_positional_encoding
from lib.special_tokens import EOS_ID
from lib.translate import translate

RUN = load_run(SHIPPED_MODEL)
SENTENCES = ["Ein Mann füttert einen Hund.", "Ein Hund füttert einen Mann."]


def _without_pe():
    broken = copy.deepcopy(RUN.model).eval()
    broken.positional.pe.zero_()  # the table is a buffer: all zeros adds nothing
    return broken


@torch.no_grad()
def no_pe_measurement(model=None, reorder=True):
    model = _without_pe() if model is None else model
    a, b = (model.encode(torch.tensor([RUN.tokenizer.encode(s).ids + [EOS_ID]]))[0][0] for s in SENTENCES)
    perm = [0, 4, 2, 3, 1, 5, 6]  # Mann (1) and Hund (4) trade places
    gap = (b - (a[perm] if reorder else a)).abs().max().item()
    first, second = translate(model, RUN.tokenizer, SENTENCES)
    return gap, first == second


@torch.no_grad()
def raw_positions_measurement(scale=True, position=50):
    d_model = RUN.model.config.d_model
    ids = torch.tensor([RUN.tokenizer.encode(w).ids[0] for w in ("Hund", "Katze")])
    emb = RUN.model.src_embed(ids) * (math.sqrt(d_model) if scale else 1.0)  # (2, d_model)
    raw = emb + position
    sin = emb + sinusoidal_positional_encoding(position + 1, d_model)[position]
    return tuple(torch.cosine_similarity(v[0], v[1], dim=0).item() for v in (raw, sin))


NO_PE = no_pe_measurement()
RAW = raw_positions_measurement()

CASES = {
    "pe_break_no_pe": (
        NO_PE,
        [
            ((no_pe_measurement(model=RUN.model.eval())[0], True), "encoding is still there"),
            ((no_pe_measurement(reorder=False)[0], True), "REORDERED"),
            ((no_pe_measurement(model=RUN.model.eval(), reorder=False)[0], True), "WITH its encoding"),
            ((NO_PE[0], False), "the decoder's cross-attention sees the same set"),
            ((0.5, True), "expected a gap of at most 1e-4"),
            ((NO_PE[0], "yes"), "True or False"),
            (NO_PE[0], "a pair (gap, same)"),
        ],
    ),
    "pe_break_raw_positions": (
        RAW,
        [
            (RAW[::-1], "swapped"),
            ((raw_positions_measurement(scale=False)[0], RAW[1]), "left out the √d_model scale"),
            ((raw_positions_measurement(position=0)[0], RAW[1]), "embeddings alone"),
            ((RAW[0], raw_positions_measurement(scale=False)[1]), "sinusoidal cosine leaves out"),
            ((RAW[0], raw_positions_measurement(position=0)[0]), "add the row PE(50)"),
            ((1.5, 0.3), "between −1 and 1"),
            ((0.9, 0.3), "expected about"),
            ((RAW[0],), "two cosines"),
        ],
    ),
}


def test_the_broken_translator_reads_a_bag_of_words():
    assert NO_PE[0] < 1e-5 and NO_PE[1] is True
    with_pe = translate(RUN.model.eval(), RUN.tokenizer, SENTENCES)
    assert with_pe == ["A man feeding a dog.", "A dog feeding a man."]
    assert RAW[0] > 0.999 and RAW[1] < 0.5


def test_break_it_checkers_never_call_a_function_answer(capsys):
    def boom():
        raise RuntimeError("should not run")

    def spin():
        while True:
            pass

    for name, words in (("pe_break_no_pe", "a pair (gap, same)"), ("pe_break_raw_positions", "should be numbers")):
        for answer in (boom, spin):
            assert check(name, answer) is False
            out = capsys.readouterr().out
            assert out.startswith(f"❌ {name}: ") and words in out


def test_a_missing_model_is_the_checkers_problem_not_the_readers(monkeypatch, capsys):
    from lib.exercises import positional_encoding as checkers

    def missing():
        raise FileNotFoundError("models/de-en")

    monkeypatch.setattr(checkers, "_shipped", missing)
    monkeypatch.setattr(checkers, "_no_pe_reference", checkers._no_pe_reference.__wrapped__)
    assert check("pe_break_no_pe", NO_PE) is False
    assert capsys.readouterr().out.startswith("⚠ pe_break_no_pe: the checker could not run")
