"""Tests of the chapter "The Transformer"'s exercises (lib/exercises/transformer.py).

Correct answers are written with ``lib`` or torch (not copied from the chapter); the wrong answers are the mistakes
readers make (unbiased variance, normalising over the batch, a tied matrix counted three times, the transposed
causal mask, ...), and each must give ❌ with a message naming the mistake, never a traceback.
"""

import copy
import functools
import math
import re
from pathlib import Path

import nbformat
import numpy as np
import torch
import torch.nn.functional as F

from lib.attention import causal_mask
from lib.exercises import check, list_exercises
from lib.exercises.transformer import _copy_reference, _scale_reference
from lib.training import TrainConfig, noam_lr
from lib.transformer import Transformer, TransformerConfig

ROOT = Path(__file__).resolve().parents[2]


def _stored_cell(chapter: str, needle: str):
    """The one code cell of chapters/<chapter>.ipynb whose source contains ``needle``, with its stored outputs."""
    nb = nbformat.read(ROOT / "chapters" / f"{chapter}.ipynb", as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and needle in c.source]
    assert len(cells) == 1, f"{len(cells)} cells of {chapter} contain {needle!r}"
    return cells[0]


# --- answers, correct and wrong -------------------------------------------------------------------


def layer_norm_correct(x):
    return F.layer_norm(x, x.shape[-1:])


def layer_norm_unbiased(x):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)


def layer_norm_no_eps(x):
    return (x - x.mean(-1, keepdim=True)) / x.std(-1, unbiased=False, keepdim=True)


def layer_norm_batch_axis(x):
    return (x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, unbiased=False, keepdim=True) + 1e-5)


def layer_norm_no_mean(x):
    return x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)


def embedding_params_correct(vocab_size, d_model, shared):
    config = TransformerConfig(
        vocab_size,
        vocab_size,
        d_model=d_model,
        num_heads=1,
        num_encoder_layers=0,
        num_decoder_layers=1,
        d_ff=1,
        share_embeddings=shared,
    )
    model = Transformer(config)
    embed_and_output = {id(p): p for m in (model.src_embed, model.tgt_embed, model.output) for p in m.parameters()}
    return sum(p.numel() for p in embed_and_output.values())


def noam_peak_correct(d_model, warmup):
    return noam_lr(warmup, d_model, warmup)


class _Later(dict):
    """A dict filled on first use: the break-it answers need trained or loaded models; collecting CASES stays cheap."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def _fill(self):
        if not super().__len__():
            self.update(self._make())

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def __len__(self):
        self._fill()
        return super().__len__()

    def __getitem__(self, key):
        self._fill()
        return super().__getitem__(key)


def _runs(masked, unmasked):
    """A tr_break_causal answer built from the reference runs: ``masked(ref)`` and ``unmasked(ref)`` pick each run."""
    return _Later(lambda: {"masked": masked(_copy_reference()), "unmasked": unmasked(_copy_reference())})


def _scaled(loss, factor=1.0):
    return lambda ref: {"loss": ref[loss]["loss"] * factor, "greedy": ref[loss]["greedy"]}


@functools.lru_cache(maxsize=1)
def _no_scale_measured():
    """§1's pair through the shipped model, its embed patched to leave out √d_model (not the checker's way)."""
    from lib.checkpoint import SHIPPED_MODEL, load_run
    from lib.data import collate, encode_pairs
    from lib.positional import sinusoidal_positional_encoding
    from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID

    run = load_run(SHIPPED_MODEL)
    model = copy.deepcopy(run.model)  # the patch below must not reach a cached model
    pair = ("Drei Leute sitzen in einer Höhle.", "Three people sit in a cave.")
    batch = collate(encode_pairs([pair], run.tokenizer), PAD_ID, BOS_ID, EOS_ID)
    model.embed = lambda tokens, table, offset=0: model.positional(table(tokens), offset)  # the scale removed
    with torch.no_grad():
        loss = F.cross_entropy(model(batch.src, batch.tgt_in)[0], batch.tgt_out[0]).item()
        pe = sinusoidal_positional_encoding(batch.src.size(1), model.config.d_model).norm(dim=-1)
        ratio = (pe / model.src_embed(batch.src)[0].norm(dim=-1)).mean().item()
    return {"pe_to_token": ratio, "loss": loss}


def _scale_answer(ratio=None, loss=None):
    """A tr_break_scale answer: the measured values, or a key of the checker's reference for either."""
    return _Later(
        lambda: {
            "pe_to_token": _scale_reference()[ratio] if ratio else _no_scale_measured()["pe_to_token"],
            "loss": loss(_scale_reference()) if loss else _no_scale_measured()["loss"],
        }
    )


# name -> (correct answer, [(wrong answer, words the ❌ message must contain), ...])
CASES = {
    "layer_norm_last_axis": (
        layer_norm_correct,
        [
            (layer_norm_unbiased, "unbiased variance"),
            (layer_norm_no_eps, "forgot ε"),
            (layer_norm_batch_axis, "as BatchNorm does"),
            (layer_norm_no_mean, "forgot to subtract the mean"),
            (lambda x: F.layer_norm(x, x.shape[-1:])[..., :-1], "LayerNorm keeps the shape"),
            (lambda x: F.layer_norm(x, x.shape[-1:]) * 2, "expected [-1.41421"),  # no known mistake
            (3.0, "expected a function"),
        ],
    ),
    "tied_embedding_params": (
        embedding_params_correct,
        [
            (lambda v, d, shared: 3 * v * d, "count once"),
            (lambda v, d, shared: v * d if shared else 2 * v * d, "there are three"),
            (lambda v, d, shared: v * d + v if shared else 3 * v * d, "no bias"),
            (lambda v, d, shared: 2 * v * d if shared else 3 * v * d, "shared matrix twice"),
            (lambda v, d, shared: v * d, "three separate"),
            (lambda v, d, shared: 42, "Hint"),
        ],
    ),
    "noam_peak": (
        noam_peak_correct,
        [
            (lambda d, w: w**-0.5, "forgot the factor d_model^-0.5"),
            (lambda d, w: d**-0.5 * w**-1.5, "at step 1"),
            (lambda d, w: (d * w) ** 0.5, "inverse of the peak"),
            (lambda d, w: 0.001, "Hint"),
        ],
    ),
    "decoder_causal_mask": (
        causal_mask,
        [
            (lambda n: ~causal_mask(n), "inverted the meaning"),
            (lambda n: causal_mask(n).T, "transpose"),
            (lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1), "attend to itself"),
            (lambda n: torch.zeros(n, n).masked_fill(~causal_mask(n), float("-inf")), "additive mask"),
            (lambda n: causal_mask(n + 1), "expected (4, 4)"),
            (lambda n: causal_mask(n).int() * 2, "values other than True/False"),
        ],
    ),
    "tr_break_causal": (
        _runs(lambda r: r["masked"], lambda r: r["unmasked"]),
        [
            (_runs(lambda r: r["unmasked"], lambda r: r["masked"]), "swapped the two runs"),
            (_runs(lambda r: r["masked"], lambda r: r["masked"]), "the mask is still there"),
            (_runs(lambda r: {"loss": 0.5, "greedy": 0.95}, lambda r: r["unmasked"]), "with its defaults"),
            (_runs(lambda r: r["masked"], _scaled("unmasked", 0.5)), "not as the reference's did"),
            (_runs(lambda r: r["masked"], lambda r: {"loss": 3.0, "greedy": 0.1}), "did not fall below"),
            (_runs(lambda r: r["masked"], lambda r: {"loss": 0.2}), 'with "loss" and "greedy"'),
            ({"masked": 1.0}, "expected a dict"),
            (0.2, "expected a dict"),
        ],
    ),
    "tr_break_scale": (
        _scale_answer(),
        [
            (_scale_answer(ratio="ratio_scaled"), "ratio with the scale"),
            (_Later(lambda: {"pe_to_token": 1 / _scale_reference()["ratio"], "loss": 7.0}), "divided the token's"),
            (_scale_answer(loss=lambda r: r["loss_intact"]), "intact model's loss"),
            (_scale_answer(loss=lambda r: r["loss"] * r["tokens"]), "summed over the 9"),
            (_scale_answer(loss=lambda r: r["loss_src_only"]), "encoder only"),
            (_scale_answer(loss=lambda r: r["loss_tgt_only"]), "decoder only"),
            (_scale_answer(loss=lambda r: 3.0), "Hint"),
            ({"pe_to_token": 6.5}, "expected a dict"),
            ([6.5, 7.9], "expected a dict"),
        ],
    ),
}


# The generic checks (each correct answer passes, each wrong one fails naming its mistake) run over these
# CASES in test_exercises.py.


def test_registry_lists_the_chapter_exercises():
    names = [ex.name for ex in list_exercises("transformer")]
    assert names == [
        "layer_norm_last_axis",
        "tied_embedding_params",
        "noam_peak",
        "decoder_causal_mask",
        "tr_break_causal",
        "tr_break_scale",
    ]


def test_answers_in_other_forms_are_accepted(capsys):
    assert check("layer_norm_last_axis", lambda x: F.layer_norm(x, x.shape[-1:]).numpy())
    assert check("decoder_causal_mask", lambda n: np.tril(np.ones((n, n), dtype=int)))
    assert check("noam_peak", lambda d, w: torch.tensor((d * w) ** -0.5))
    assert check("tied_embedding_params", lambda v, d, shared: np.int64(v * d * (1 if shared else 3)))


def test_seed_numbers_behind_the_checkers():
    # seed 001: the output layer 512 × 10,000; the capstone's schedule peaks at TrainConfig.peak_lr.
    assert embedding_params_correct(10000, 512, True) == 5_120_000
    assert embedding_params_correct(10000, 512, False) == 15_360_000
    recipe = TrainConfig(max_steps=1)
    assert math.isclose(noam_lr(recipe.warmup, 128, recipe.warmup, recipe.lr_factor(128)), recipe.peak_lr)
    assert torch.allclose(
        layer_norm_correct(torch.tensor([1.0, 3.0, 3.0, 5.0])), torch.tensor([-1.41421, 0.0, 0.0, 1.41421]), atol=1e-4
    )


#: How far copy_task_run's numbers move between numeric paths at one seed (bench/numeric_spread.py --claims
#: copy_task, seeds 0-3, ATEN_CPU_CAPABILITY native (AVX-512), avx2 and default: loss ≤ 0.024, greedy ≤ 0.021),
#: plus the 0.005 of the chapter's two-decimal print.
_COPY_SPREAD = {"loss": 0.03, "greedy": 0.03}


def test_the_copy_task_reference_is_the_chapters_run():
    # The checker's reference is lib.experiments.copy_task_run, the function the chapter's reader runs, with the
    # chapter's forward_no_mask; its numbers are the ones the chapter stores ("masked    training loss 1.70   greedy
    # accuracy 0.71"), within what another CPU changes (the chapter's cell does not ask nbval to compare them).
    cell = _stored_cell("transformer", "copy_task_run(forward_no_mask)")
    assert "nbval-ignore-output" in cell.metadata.get("tags", [])
    text = "".join(o.get("text", "") for o in cell.outputs)
    stored = {
        name: {"loss": float(loss), "greedy": float(greedy)}
        for name, loss, greedy in re.findall(r"(\w+)\s+training loss ([\d.]+)\s+greedy accuracy ([\d.]+)", text)
    }
    assert set(stored) == {"masked", "unmasked"}, text
    ref = _copy_reference()
    for name in stored:
        for key, tol in _COPY_SPREAD.items():
            assert abs(ref[name][key] - stored[name][key]) <= tol, (name, key, ref[name][key], stored[name][key])


def test_break_it_references_show_what_breaks():
    runs = _copy_reference()
    masked, unmasked = runs["masked"], runs["unmasked"]
    assert unmasked["loss"] < 0.5 * masked["loss"]  # the unmasked model reads the next token
    assert masked["greedy"] > 0.6 and unmasked["greedy"] < 0.3  # ... and cannot decode (chance: 1/12)
    ref = _scale_reference()
    assert ref["ratio"] > 5 and ref["ratio_scaled"] < 1  # the encoding swamps the unscaled token
    assert ref["loss"] > 10 * ref["loss_intact"] and abs(ref["loss_intact"] - 0.5430) < 1e-3  # §1's L / T
    assert math.isclose(_no_scale_measured()["loss"], ref["loss"], abs_tol=1e-4)
