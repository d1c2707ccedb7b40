"""The trained model that ships in models/de-en: it loads, translates, is small, and scores what it recorded."""

import json
import subprocess
import sys

import pytest
import torch

from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.translate import evaluate_bleu, translate


@pytest.fixture(scope="module")
def shipped():
    return load_run(SHIPPED_MODEL)


def test_shipped_files_are_complete_and_small():
    for name in ("config.json", "model.pt", "tokenizer.json", "history.json", "results.json"):
        assert (SHIPPED_MODEL / name).is_file(), name
    assert (SHIPPED_MODEL / "model.pt").stat().st_size <= 5 * 1024 * 1024
    results = json.loads((SHIPPED_MODEL / "results.json").read_text())
    for key in ("command", "minutes", "machine", "test_bleu_greedy", "bleu_signature", "bleu_at_minutes"):
        assert key in results, key


def test_shipped_model_reaches_its_recorded_test_bleu(shipped, multi30k_dir):
    bleu = evaluate_bleu(shipped.model, shipped.tokenizer, "test_2016_flickr")
    assert bleu.score == pytest.approx(shipped.results["test_bleu_greedy"], abs=0.5)

    # the same BLEU settings (tokenizer, smoothing, case, ...); only sacreBLEU's own version may differ
    def settings(signature):
        return [part for part in signature.split("|") if not part.startswith("version:")]

    assert settings(bleu.signature) == settings(shipped.results["bleu_signature"])


def test_shipped_model_translates_a_simple_sentence(shipped):
    out = translate(shipped.model, shipped.tokenizer, ["Ein Hund läuft durch den Schnee."], beam_size=5)[0]
    assert "dog" in out.lower() and "snow" in out.lower(), out


def test_translate_command_line_reads_stdin_and_writes_stdout():
    proc = subprocess.run(
        [sys.executable, "-m", "lib.translate", "--run", str(SHIPPED_MODEL), "--beam", "3"],
        input="Zwei Männer spielen Fußball.\nEine Frau liest ein Buch.\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and "men" in lines[0].lower() and "book" in lines[1].lower(), lines


def test_translate_command_line_names_a_missing_run(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "lib.translate", "--run", str(tmp_path)],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "missing" in proc.stderr


@pytest.mark.parametrize("name, attention", [("de-en-rnn-fixed", None), ("de-en-rnn-attention", "additive")])
def test_shipped_recurrent_models_reach_their_recorded_test_bleu(name, attention, multi30k_dir):
    # the seq2seq-bottleneck and Bahdanau chapters' models: same data, tokenizer and step budget
    folder = SHIPPED_MODEL.parent / name
    run = load_run(folder)
    assert run.config.architecture == "seq2seq" and run.config.attention == attention
    assert (folder / "model.pt").stat().st_size <= 5 * 1024 * 1024  # float16, with the embedding as int8 rows
    assert torch.load(folder / "model.pt", weights_only=True)["format"] == "int8-rows"
    assert run.results["steps"] == 1500 and "--steps 1500" in run.results["command"]
    bleu = evaluate_bleu(run.model, run.tokenizer, "test_2016_flickr")
    assert bleu.score == pytest.approx(run.results["test_bleu_greedy"], abs=0.5)
