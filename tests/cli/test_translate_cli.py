"""``python -m lib.translate`` and ``lib.translate.translate`` lose no line and are never silently wrong.

Each hostile input a review found (Windows or old-Mac line ends, a byte-order mark, a non-UTF-8 locale, an
undecodable byte, text that looks like a special token, blank lines, a line longer than the model's limit, absurd
arguments) has a test here that failed on the code before the fix. They use the shipped model and a few real
test sentences, greedy, to stay fast; the command line runs in-process where the exit status and the locale do
not matter, and as a subprocess where they do.
"""

from __future__ import annotations

import codecs
import dataclasses
import io
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import unicodedata
import warnings
from pathlib import Path

import pytest
import torch

import lib.translate as T
from lib.bpe import encode
from lib.checkpoint import SHIPPED_MODEL, load_run, update_results
from lib.data import load_multi30k
from lib.explorer import explorer_data
from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID

CLI = [sys.executable, "-m", "lib.translate"]


@pytest.fixture(scope="module")
def shipped():
    return load_run(SHIPPED_MODEL)


@pytest.fixture(scope="module")
def sentences(multi30k_dir):
    """Five real test sentences (with ä, ü, ö, ß: NFD changes them)."""
    return [de for de, _ in load_multi30k("test_2016_flickr")[:5]]


@pytest.fixture(scope="module")
def clean(shipped, sentences):
    """Their greedy translations from the clean input: what every hostile variant must reproduce."""
    return T.translate(shipped.model, shipped.tokenizer, sentences)


def run_cli(monkeypatch, capsysbinary, shipped, data: bytes, *args: str) -> tuple[int, list[str], str]:
    """Run ``main`` in-process on ``data`` as stdin, with the shipped run already loaded; (status, lines, stderr)."""
    monkeypatch.setattr(T, "load_run", lambda *a, **k: shipped)
    # newline="\n" is how Python opens stdin on POSIX: "\r" is not a line end and is kept in the line
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="\n"))
    code = T.main(["--run", str(SHIPPED_MODEL), *args])
    out, err = capsysbinary.readouterr()
    return code or 0, out.decode("utf-8").split("\n")[:-1], err.decode("utf-8")


def source_rows(monkeypatch, shipped, sentences: list[str], run_model: bool = True) -> list[list[int]]:
    """The source id rows the decoder receives when ``sentences`` are translated (padding removed)."""
    rows: list[list[int]] = []

    def spy(model, src, *args, **kwargs):
        rows.extend([i for i in row if i != PAD_ID] for row in src.tolist())
        return real(model, src, *args, **kwargs) if run_model else [[] for _ in range(src.size(0))]

    real = T.greedy_decode
    monkeypatch.setattr(T, "greedy_decode", spy)
    T.translate(shipped.model, shipped.tokenizer, sentences)
    return rows


# --- 1. line ends, byte-order mark, Unicode normalisation ----------------------------------------------------


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(lambda text: text.replace("\n", "\r\n").encode(), id="crlf"),
        pytest.param(lambda text: text.replace("\n", "\r").encode(), id="cr-only"),
        pytest.param(lambda text: codecs.BOM_UTF8 + text.encode(), id="utf8-bom"),
        pytest.param(lambda text: unicodedata.normalize("NFD", text).encode(), id="nfd"),
        pytest.param(lambda text: text.replace("\n", "\r\n").encode("utf-16"), id="utf16-bom"),
    ],
)
def test_line_ends_bom_and_normalisation_give_the_clean_output(
    variant, shipped, sentences, clean, monkeypatch, capsysbinary
):
    code, lines, err = run_cli(monkeypatch, capsysbinary, shipped, variant("\n".join(sentences) + "\n"))
    assert (code, lines) == (0, clean), err


def test_the_library_cleans_carriage_returns_bom_and_nfd(shipped, sentences, clean):
    dirty = [
        sentences[0] + "\r",
        "\ufeff" + sentences[1],
        unicodedata.normalize("NFD", sentences[2]),
        "  " + sentences[3] + "\t",
        sentences[4],
    ]
    assert T.translate(shipped.model, shipped.tokenizer, dirty) == clean


# --- 2. UTF-8 whatever the locale ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [
        # the C locale; PYTHONUTF8=0 keeps Python 3.7+ from switching to UTF-8 mode by itself, so stdin is ASCII
        pytest.param({"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}, id="C-locale"),
        pytest.param({"LC_ALL": "POSIX", "LANG": "POSIX", "PYTHONUTF8": "0"}, id="POSIX-locale"),
        # a Latin-1 terminal: the UTF-8 bytes of "Männer" were silently read as "MÃ¤nner"
        pytest.param({"PYTHONIOENCODING": "latin-1"}, id="latin-1"),
    ],
)
def test_stdin_and_stdout_are_utf8_whatever_the_locale(env, shipped):
    german = ["Zwei Männer spielen Fußball.", "Ein Mann sitzt in einem Café."]
    expected = T.translate(shipped.model, shipped.tokenizer, german)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LANG")}
    proc = subprocess.run(
        [*CLI, "--run", str(SHIPPED_MODEL)],
        input="\n".join(german).encode("utf-8") + b"\n",
        capture_output=True,
        env={**base, **env},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stdout.decode("utf-8").splitlines() == expected


# --- 3. an undecodable byte costs one line, not all of them ------------------------------------------------


def test_an_undecodable_line_gives_an_empty_line_a_message_and_exit_status_1(
    shipped, sentences, monkeypatch, capsysbinary
):
    # in-process (main returns the exit status); the mixed-input test below checks it as a real process's status
    expected = T.translate(shipped.model, shipped.tokenizer, sentences[:3])  # the same batch as the CLI's
    data = "\n".join(sentences[:2]).encode() + b"\nEine Frau \xff liest.\n" + sentences[2].encode() + b"\n"
    code, lines, err = run_cli(monkeypatch, capsysbinary, shipped, data)
    assert code == 1 and lines == [*expected[:2], "", expected[2]], err
    assert "line 3" in err and "UTF-8" in err and "Traceback" not in err


# --- 4. text that looks like a special token is text ------------------------------------------------------


@pytest.mark.parametrize("literal", ["</s>", "<pad>", "<s>", "<unk>"])
def test_special_token_text_is_translated_as_text(literal, shipped, monkeypatch):
    sentence = f"Ein Hund {literal} läuft über die Wiese."
    (row,) = source_rows(monkeypatch, shipped, [sentence])
    # EOS only where translate appends it; no PAD or BOS from the text
    assert row[-1] == EOS_ID and not {PAD_ID, BOS_ID, EOS_ID} & set(row[:-1]), row
    # the shipped vocabulary never saw "<" or ">": each bracket is one unknown character, the letters are text
    assert shipped.tokenizer.token_to_id("<") is None and row.count(UNK_ID) == 2, row
    (english,) = T.translate(shipped.model, shipped.tokenizer, [sentence])
    assert "dog" in english.lower(), english


def test_the_callers_tokenizer_still_matches_special_tokens(shipped):
    # the fix works on a copy: the caller's tokenizer is left as it was
    T.translate(shipped.model, shipped.tokenizer, ["Ein Hund </s> läuft."])
    assert EOS_ID in shipped.tokenizer.encode("</s>", add_special_tokens=False).ids


# --- 5. a blank line gives a blank line --------------------------------------------------------------------


def test_blank_sentences_give_blank_translations_without_running_the_model(shipped, monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("the model ran for blank input")

    monkeypatch.setattr(T, "greedy_decode", no_model)
    assert T.translate(shipped.model, shipped.tokenizer, ["", "   ", "\t\r", "\ufeff"]) == ["", "", "", ""]


def test_blank_lines_stay_blank_between_translated_lines(shipped, sentences, monkeypatch, capsysbinary):
    expected = T.translate(shipped.model, shipped.tokenizer, sentences[:2])  # the same batch as the CLI's
    data = f"{sentences[0]}\n\n   \n{sentences[1]}\n".encode()
    assert run_cli(monkeypatch, capsysbinary, shipped, data)[:2] == (0, [expected[0], "", "", expected[1]])


# --- 6. a line longer than the model's limit is split, said, and loses nothing ---------------------------------


@pytest.fixture(scope="module")
def long_text(multi30k_dir):
    """Thirty test sentences on one line: about 500 sub-words, twice the shipped model's limit of 255."""
    return " ".join(de for de, _ in load_multi30k("test_2016_flickr")[:30])


def test_a_paragraph_is_translated_sentence_by_sentence_on_one_line(shipped, long_text, monkeypatch):
    # a paragraph of many sentences under the limit came back as one English sentence; thirty sentences (over the limit)
    # were cut only because of their length
    thirty = [de for de, _ in load_multi30k("test_2016_flickr")[:30]]
    assert len(encode(shipped.tokenizer, long_text)) > shipped.config.max_len
    one_by_one = T.translate(shipped.model, shipped.tokenizer, ["Ein Hund.", *thirty])  # the same batch
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no sentence is over the limit: nothing to warn about
        out = T.translate(shipped.model, shipped.tokenizer, ["Ein Hund.", long_text])
    assert out == [one_by_one[0], " ".join(one_by_one[1:])]
    twelve = " ".join(thirty[:12])
    assert len(encode(shipped.tokenizer, twelve)) < shipped.config.max_len  # within the limit: read whole before
    rows = source_rows(monkeypatch, shipped, [twelve])
    assert sorted(r[:-1] for r in rows) == sorted(encode(shipped.tokenizer, t) for t in thirty[:12])  # one row each
    monkeypatch.undo()
    assert T.translate(shipped.model, shipped.tokenizer, [twelve]) == [" ".join(one_by_one[1:13])]
    whole = T.translate(shipped.model, shipped.tokenizer, [twelve], by_sentence=False)[0]
    assert whole.count(".") < 12  # read at once, the paragraph loses sentences (what the review saw)


def test_the_sentence_splitter_keeps_abbreviations_ordinals_and_initials():
    assert T.split_sentences("Ein Hund rennt. Eine Frau singt! Zwei Männer spielen Fußball?") == [
        "Ein Hund rennt.",
        "Eine Frau singt!",
        "Zwei Männer spielen Fußball?",
    ]
    for one in [
        "Dr. Müller geht am 3. Mai nach Hause.",
        "Ein Mann läuft an einem Schild vorbei, auf dem E.S.E. Electronics steht.",  # a test sentence
    ]:
        assert T.split_sentences(one) == [one]
    assert T.split_sentences("") == []


def test_no_multi30k_test_sentence_is_split(shipped, multi30k_dir):
    test = [de for de, _ in load_multi30k("test_2016_flickr")]
    assert [t for t in test if len(T.split_sentences(T.clean_text(t))) != 1] == []


def test_a_too_long_sentence_without_sentence_ends_is_cut_at_the_limit(shipped, long_text, monkeypatch):
    words = long_text.replace(".", ",")  # one sentence of about 500 sub-words
    with pytest.warns(UserWarning, match="sentence 0"):
        rows = source_rows(monkeypatch, shipped, [words], run_model=False)
    assert len(rows) >= 2 and all(len(r) <= shipped.config.max_len for r in rows)  # EOS included
    # nothing is lost: the pieces hold every sub-word of the text
    assert sum(len(r) - 1 for r in rows) == len(encode(shipped.tokenizer, words))


def test_too_long_error_names_the_sentence(shipped, long_text):
    with pytest.raises(ValueError, match=r"sentences\[2\] has \d+ sub-word tokens"):
        T.translate(shipped.model, shipped.tokenizer, ["Ein Hund.", "", long_text.replace(".", ",")], too_long="error")


def test_sentences_within_the_limit_are_never_cut(shipped, sentences, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = source_rows(monkeypatch, shipped, [" ".join(sentences)])  # five sentences, one line, ~100 sub-words
    assert sorted(r[:-1] for r in rows) == sorted(encode(shipped.tokenizer, t) for t in sentences)  # one row each


def test_one_output_line_per_input_line_whatever_the_input(shipped, sentences, long_text):
    lines = [
        sentences[0].encode(),
        b"",
        long_text.replace(".", ",").encode(),  # one sentence over the limit
        "Ein Hund </s> läuft.".encode(),
        b"   ",
        b"Eine Frau \xff liest.",
        (sentences[1] + " \t").encode(),
        sentences[2].encode(),
    ]
    proc = subprocess.run(
        [*CLI, "--run", str(SHIPPED_MODEL)],
        input=b"\r\n".join(lines) + b"\r\n",
        capture_output=True,
        timeout=120,
        env=os.environ,
    )
    out, err = proc.stdout.decode("utf-8").split("\n"), proc.stderr.decode()
    assert out[-1] == "" and len(out[:-1]) == len(lines), out
    text = [line.decode("utf-8", errors="replace") for line in lines]
    with pytest.warns(UserWarning, match="sentence 2"):  # the same sentences in the same batch, in-process
        expected = T.translate(shipped.model, shipped.tokenizer, [*text[:5], "", *text[6:]])
    assert out[:-1] == expected and expected[1] == expected[4] == expected[5] == ""
    assert expected[3] and len(expected[2].split()) > 20, expected[2:4]
    assert "line 3:" in err and "pieces" in err and "line 6:" in err and proc.returncode == 1, err


# --- 7, 8. arguments are checked first, each with a one-line error ---------------------------------------------


@pytest.mark.parametrize(
    "args, name",
    [
        (["--beam", "0"], "--beam"),
        (["--beam", "65"], "--beam"),
        (["--beam", "1000"], "--beam"),
        (["--batch-size", "0"], "--batch-size"),
        (["--alpha", "nan"], "--alpha"),
        (["--alpha", "inf"], "--alpha"),
        (["--alpha", "-1"], "--alpha"),
        (["--threads", "0"], "--threads"),
        (["--threads", "-3"], "--threads"),
        (["--bleu", "nosuch"], "--bleu"),
        (["--device", "nonsense"], "--device"),
    ],
)
def test_bad_arguments_stop_before_anything_is_loaded(args, name, monkeypatch, capsys):
    def no_loading(*a, **k):
        raise AssertionError("the run was loaded before the arguments were checked")

    monkeypatch.setattr(T, "load_run", no_loading)
    monkeypatch.setattr(T, "load_multi30k", no_loading)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Ein Hund.\n")))
    with pytest.raises(SystemExit) as exc:
        T.main(["--run", str(SHIPPED_MODEL), *args])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith(f"python -m lib.translate: error: argument {name}"), err


@pytest.mark.filterwarnings("ignore::UserWarning")  # load_run may warn about a damaged folder before failing
@pytest.mark.parametrize("what", ["missing", "file", "incomplete", "damaged"])
def test_a_bad_run_folder_is_a_one_line_error_naming_it(what, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    if what == "file":
        run.write_text("not a folder")
    elif what == "incomplete":
        run.mkdir()
        (run / "config.json").write_text("{}")
    elif what == "damaged":
        run.mkdir()
        for name in ("config.json", "model.pt", "tokenizer.json"):
            (run / name).write_text("not what it should be")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Ein Hund.\n")))
    with pytest.raises(SystemExit) as exc:
        T.main(["--run", str(run)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith("python -m lib.translate: error: argument --run:") and str(run) in err


def test_help_explains_the_beam_cap_and_the_exit_status(capsys):
    with pytest.raises(SystemExit):
        T.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "beam x batch" in text and "exit status" in text and text.isascii()
    assert "default: the run's own, beam_alpha in its results.json" in text  # where --alpha's default comes from


# --- the length penalty: the one the run recorded, unless --alpha says otherwise ---------------------------------


def _alphas(monkeypatch, capsysbinary, run, *args: str) -> tuple[set[float], str]:
    """The alphas beam search was given for one line, and stderr (the run given as already loaded)."""
    alphas = set()

    def spy(model, src, beam_size, alpha):
        alphas.add(alpha)
        return [[] for _ in range(src.size(0))]

    monkeypatch.setattr(T, "beam_search", spy)
    code, _, err = run_cli(monkeypatch, capsysbinary, run, b"Ein Hund rennt.\n", *args)
    assert code == 0, err
    return alphas, err


def test_the_default_length_penalty_is_the_one_the_run_recorded(shipped, monkeypatch, capsysbinary):
    # `--beam 5` used alpha 0.6, not the 1.5 the shipped model's 40.7 BLEU was measured with: it gave 40.1
    assert shipped.results["beam_alpha"] == 1.5  # read from models/de-en/results.json by load_run
    alphas, err = _alphas(monkeypatch, capsysbinary, shipped, "--beam", "5")
    note = "length penalty alpha 1.5, as the run recorded (beam_alpha in its results.json; --alpha sets another)"
    assert alphas == {1.5} and err == note + "\n"
    alphas, err = _alphas(monkeypatch, capsysbinary, shipped, "--beam", "5", "--alpha", "0.6")
    assert alphas == {0.6} and err == ""  # an explicit --alpha wins
    alphas, err = _alphas(monkeypatch, capsysbinary, dataclasses.replace(shipped, results={}), "--beam", "5")
    assert alphas == {T.DEFAULT_ALPHA} == {0.6} and err == ""  # a run that records none


@pytest.mark.parametrize("bad", ["1.5", -1, None, True, float("nan"), float("inf"), [1.5]])
def test_a_bad_recorded_length_penalty_is_a_one_line_error_naming_the_file(bad, shipped, monkeypatch, capsys):
    monkeypatch.setattr(T, "load_run", lambda *a, **k: dataclasses.replace(shipped, results={"beam_alpha": bad}))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Ein Hund.\n")))
    with pytest.raises(SystemExit) as exc:
        T.main(["--run", str(SHIPPED_MODEL), "--beam", "5"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1] == (
        f"python -m lib.translate: error: argument --run: {SHIPPED_MODEL / 'results.json'}: beam_alpha must be a "
        f"finite number >= 0, got {bad!r} (fix it, or give --alpha)"
    )


def test_a_run_folders_recorded_length_penalty_is_read_from_its_results_json(tmp_path, monkeypatch, capsysbinary):
    run = tmp_path / "run"
    shutil.copytree(SHIPPED_MODEL, run)
    update_results(run, {"beam_alpha": -1})  # the manifest is written again: the folder still loads
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Ein Hund.\n")))
    with pytest.raises(SystemExit) as exc:
        T.main(["--run", str(run), "--beam", "2"])
    err = capsysbinary.readouterr().err.decode()
    assert exc.value.code == 2 and err.splitlines()[-1].startswith(
        f"python -m lib.translate: error: argument --run: {run / 'results.json'}: beam_alpha must be"
    ), err
    for args in (["--beam", "2", "--alpha", "1"], []):  # an explicit --alpha, or greedy decoding: not used
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Ein Hund.\n")))
        assert T.main(["--run", str(run), *args]) == 0
        out, err = capsysbinary.readouterr()
        assert out.count(b"\n") == 1 and err == b""


def test_beam_search_decodes_at_most_max_hypotheses_at_once(shipped, sentences, monkeypatch):
    batches = []

    def fake_beam(model, src, beam_size, alpha):
        batches.append(src.size(0) * beam_size)
        return [[] for _ in range(src.size(0))]

    monkeypatch.setattr(T, "beam_search", fake_beam)
    out = T.translate(shipped.model, shipped.tokenizer, sentences * 4, beam_size=64, batch_size=100)
    assert len(out) == 20 and sum(batches) == 20 * 64 and max(batches) <= T.MAX_HYPOTHESES, batches
    batches.clear()
    T.translate(shipped.model, shipped.tokenizer, sentences * 20, beam_size=5, batch_size=100)
    assert batches == [500], batches  # the default batch of 100 at beam 5 is left as it was


def test_widest_allowed_beam_runs(shipped, sentences, monkeypatch, capsysbinary):
    code, lines, _ = run_cli(
        monkeypatch, capsysbinary, shipped, sentences[0].encode() + b"\n", "--beam", str(T.MAX_BEAM)
    )
    assert code == 0 and len(lines) == 1 and lines[0]


# --- the public API is unchanged for clean input -------------------------------------------------------------

# Recorded with lib/translate.py before this hardening (the first three test sentences), re-recorded with the same
# code each time models/de-en was replaced (last: the 1,500-token averaged model).
BEFORE = {
    1: [
        "A man in an orange hat is shopping for something.",
        "A bourk runs across lush green grass in front of a white fence.",
        "A girl in a karate uniform is breaking a board with a spi.",
    ],
    5: [
        "A man in an orange hat buying something.",
        "A terrier walks across lush green grass in front of a white fence.",
        "A girl in a karate uniform is breaking a board.",
    ],
}


@pytest.mark.parametrize("beam", [1, 5])
def test_clean_input_translates_as_before_with_the_positional_api(beam, shipped, sentences):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert T.translate(shipped.model, shipped.tokenizer, sentences[:3], beam, 0.6, 100, None) == BEFORE[beam]


LIVE_PAGE = Path(__file__).resolve().parents[2] / "chapters" / "translate_live.md"


def test_the_live_pages_worked_mistake_is_what_the_shipped_model_does(shipped, multi30k_dir):
    """chapters/translate_live.md explains test sentence 1's greedy mistake; each fact it states is checked here.

    The translations it quotes are BEFORE's (which the test above checks against the model); the page is read with
    its line breaks folded into spaces.
    """
    page = " ".join(LIVE_PAGE.read_text(encoding="utf-8").split())
    german, reference = load_multi30k("test_2016_flickr")[1]
    assert german.startswith("Ein Boston Terrier") and f'"{reference}"' in page
    assert f'"{BEFORE[1][1]}"' in page and f'"{BEFORE[5][1]}"' in page, "the page quotes other translations"
    train = [de for de, _ in load_multi30k("train")]
    assert len(train) == 29_000 and "29,000 training pairs" in page
    assert sum("Boston Terrier" in de for de in train) == 0 and "never occurs" in page
    assert sum("Terrier" in de for de in train) == 6 and "*Terrier* is in six German sentences" in page
    assert sum("Boston" in de for de in train) == 3 and "*Boston* in three" in page

    s = explorer_data(shipped.model, shipped.tokenizer, [german], kinds=["cross"])["sentences"][0]
    name = ["▁Bo", "st", "on", "▁T", "err", "ier"]
    assert s["src_tokens"][1:7] == name and f"`{' '.join(name)}`" in page
    assert s["tgt_tokens"][1:4] == ["▁bo", "ur", "k"]
    maps = s["maps"]["cross"]  # [layer][head][query][key]
    assert len(maps) == 3 and len(maps[-1]) == 4 and "layer 2 (last), mean of 4 heads" in page
    on_the_name = torch.tensor(maps[-1]).mean(0)[1:4, 1:7].sum(-1)  # rows ▁bo, ur, k; keys ▁Bo … ier
    assert (on_the_name > 0.7).all() and "more than 70 % of its weight" in page, on_the_name


@pytest.mark.parametrize("bad", ["Ein Hund.", ["Ein Hund.", None]])
def test_translate_rejects_a_bare_string_or_a_non_string(bad, shipped):
    with pytest.raises(ValueError, match="sentences"):
        T.translate(shipped.model, shipped.tokenizer, bad)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"alpha": float("nan"), "beam_size": 2}, "alpha"),
        ({"too_long": "truncate"}, "too_long"),
        ({"max_hypotheses": 0}, "max_hypotheses"),
        ({"beam_size": 0}, "beam_size"),
    ],
)
def test_translate_rejects_bad_arguments(kwargs, match, shipped):
    with pytest.raises(ValueError, match=match):
        T.translate(shipped.model, shipped.tokenizer, ["Ein Hund."], **kwargs)


# --- streaming, Ctrl-C, progress, invisible lines (issue 34) ----------------------------------------------------


def test_a_line_of_invisible_characters_stays_blank(shipped, monkeypatch):
    # a line of zero-width spaces was translated ("The cord.") where a whitespace-only line stays blank
    invisible = ["\u200b", "\u200b \u200d\u2060", "\u00ad", "\u200c\t\u200e"]
    monkeypatch.setattr(T, "greedy_decode", lambda *a, **k: pytest.fail("the model ran for invisible input"))
    assert T.translate(shipped.model, shipped.tokenizer, invisible) == [""] * len(invisible)


@pytest.fixture(scope="module")
def forty(multi30k_dir):
    """Forty real test sentences."""
    return [de for de, _ in load_multi30k("test_2016_flickr")[:40]]


class _Stdout:
    """A stdout whose ``buffer`` records, at each flush, the lines written so far and the batches decoded by then."""

    def __init__(self, decoded):
        self.lines, self.flushes, self.decoded = b"", [], decoded
        self.buffer = self

    def write(self, data):
        self.lines += data if isinstance(data, bytes) else data.encode()

    def flush(self):
        self.flushes.append((self.lines.count(b"\n"), len(self.decoded)))


def _streaming_cli(monkeypatch, shipped, lines, *args, interrupt_at=None):
    decoded = []
    real = T.greedy_decode

    def counting(model, src, *a, **k):
        decoded.append(src.size(0))
        if len(decoded) == interrupt_at:
            raise KeyboardInterrupt  # as if the reader pressed Ctrl-C during this batch
        return real(model, src, *a, **k)

    monkeypatch.setattr(T, "greedy_decode", counting)
    monkeypatch.setattr(T, "load_run", lambda *a, **k: shipped)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("\n".join(lines).encode() + b"\n")))
    stdout = _Stdout(decoded)
    monkeypatch.setattr(sys, "stdout", stdout)
    code = T.main(["--run", str(SHIPPED_MODEL), *args])
    return code, stdout, decoded


def test_translations_are_written_as_soon_as_they_and_the_lines_before_are_done(shipped, forty, monkeypatch):
    # nothing was written until the whole input was translated (18 minutes of silence for 50,000 lines)
    lines = forty
    expected = T.translate(shipped.model, shipped.tokenizer, lines)
    code, stdout, decoded = _streaming_cli(monkeypatch, shipped, lines, "--batch-size", "4")
    assert code == 0 and stdout.lines.decode().split("\n")[:-1] == expected
    assert len(decoded) == 10 and max(decoded) == 4  # batching kept: ten batches of four
    first = next(n_decoded for n_lines, n_decoded in stdout.flushes if n_lines > 0)
    assert first <= T.STREAM_BATCHES  # the first lines came out within the first window of batches


def test_ctrl_c_keeps_the_lines_written_and_says_how_many(shipped, forty, monkeypatch, capsys):
    # Ctrl-C 40 s into a 3,000-line job gave a traceback and 0 lines: all finished work was lost
    lines = forty
    expected = T.translate(shipped.model, shipped.tokenizer, lines)
    code, stdout, _ = _streaming_cli(monkeypatch, shipped, lines, "--batch-size", "4", interrupt_at=7)
    written = stdout.lines.decode().split("\n")[:-1]
    assert code == 130 and written == expected[: len(written)] and len(written) >= 4 * T.STREAM_BATCHES
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"interrupted: {len(written)} of 40 lines translated and written"


@pytest.mark.parametrize("terminal", [False, True])
def test_a_progress_bar_on_stderr_only_for_a_long_input_on_a_terminal(shipped, forty, monkeypatch, capsys, terminal):
    monkeypatch.setattr(T, "PROGRESS_LINES", 10)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal, raising=False)
    code, stdout, _ = _streaming_cli(monkeypatch, shipped, forty[:12], "--batch-size", "6")
    err = capsys.readouterr().err
    assert code == 0 and stdout.lines.count(b"\n") == 12
    assert ("12/12" in err and "line" in err) == terminal, err


@pytest.fixture
def ctrl_c_works():
    """SIGINT handled as in a terminal during the test, even when pytest runs as a script's background job: that
    starts with SIGINT ignored, and so does every process it starts (how Ctrl-C was lost on another machine)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _ctrl_c(swallowed=False):
    """A real Ctrl-C to this process, now; ``swallowed``: caught and dropped, as an atexit callback or a ``__del__``
    does (``raise_signal`` runs the handler before it returns)."""
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        if not swallowed:
            raise


_MOMENTS = {  # where a Ctrl-C comes: (the function it comes in, at its n-th call, the lines then written or None)
    "loading the run": ("load_run", 1, 0),
    "in the first batch": ("greedy_decode", 1, None),  # 12 lines: 3 batches of 4 (they are not yet written)
    "in the first batch, swallowed": ("greedy_decode", 1, None),
    "writing line 5": ("_write", 5, 5),
    "writing the last line": ("_write", 12, 12),
    "at the end of the input": ("take", 2, 12),  # the second take finds the end of the input
    "at the end of the input, swallowed": ("take", 2, 12),
}


@pytest.fixture(scope="module")
def twelve(shipped, forty):
    """Twelve test sentences and their greedy translations."""
    return forty[:12], T.translate(shipped.model, shipped.tokenizer, forty[:12])


@pytest.mark.parametrize("moment", list(_MOMENTS))
def test_a_ctrl_c_at_any_moment_ends_with_status_130_and_the_finished_lines(
    moment, shipped, twelve, monkeypatch, capsysbinary, ctrl_c_works
):
    # a Ctrl-C swallowed on its way (by an atexit callback, a __del__) was lost: status 0 after the last line; one
    # while the run was loaded was a traceback
    (lines, expected), (name, at, count) = twelve, _MOMENTS[moment]
    owner = T._StdinLines if name == "take" else T
    real, calls = getattr(owner, name), []

    def spy(*args, **kwargs):
        calls.append(1)
        if len(calls) == at:
            _ctrl_c(swallowed="swallowed" in moment)
        return shipped if name == "load_run" else real(*args, **kwargs)

    monkeypatch.setattr(T, "load_run", lambda *a, **k: shipped)
    monkeypatch.setattr(owner, name, spy)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("\n".join(lines).encode() + b"\n")))
    code = T.main(["--run", str(SHIPPED_MODEL), "--batch-size", "4"])
    out, err = (text.decode() for text in capsysbinary.readouterr())
    out = out.split("\n")[:-1]
    assert code == 130 and "Traceback" not in err, err
    assert out == expected[: len(out)] and (count is None or len(out) == count)
    said = "nothing was written" if moment == "loading the run" else f"{len(out)} of 12 lines translated and written"
    assert err.strip().splitlines()[-1] == f"interrupted: {said}", err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # main put the previous handler back


def test_a_ctrl_c_that_was_ignored_when_it_started_stays_ignored(shipped, forty, monkeypatch, capsysbinary):
    # a script's background job (`cmd &`) starts with SIGINT ignored: a Ctrl-C in its terminal is not for it
    real = T.greedy_decode

    def spy(*args, **kwargs):
        _ctrl_c()
        return real(*args, **kwargs)

    monkeypatch.setattr(T, "greedy_decode", spy)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code, out, _ = run_cli(monkeypatch, capsysbinary, shipped, "\n".join(forty[:8]).encode() + b"\n")
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 0 and len(out) == 8


def _started(proc, timeout=300):
    """The first line the process writes: proof that it runs main, with its Ctrl-C handler (a hang guard only)."""
    assert select.select([proc.stdout], [], [], timeout)[0], "no output"
    return proc.stdout.readline()


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["between batches", "waiting for input", "after the last line"])
def test_ctrl_c_in_a_real_process_keeps_the_finished_lines(moment, forty, ctrl_c_works):
    # exit status 0 where pytest ran as a script's background job (`cmd &`): this process then started with SIGINT
    # ignored, and took it only while a line was written; and Python's second-long shutdown dropped a late Ctrl-C
    lines = forty * 10 if moment == "between batches" else forty[:3]
    proc = subprocess.Popen(
        [*CLI, "--run", str(SHIPPED_MODEL), "--batch-size", "8"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        proc.stdin.write(("\n".join(lines) + "\n").encode())  # 400 lines (24 kB) fit in a pipe's buffer
        if moment == "after the last line":
            proc.stdin.close()  # else stdin stays open: the process cannot end before the Ctrl-C, whenever it comes
        else:
            proc.stdin.flush()
        first = [_started(proc)]
        while moment != "between batches" and len(first) < len(lines):
            first.append(proc.stdout.readline())
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)  # what it writes after the Ctrl-C fits in the pipes' buffers (64 kB)
        rest, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
    written, err = (b"".join(first) + rest).decode().split("\n")[:-1], err.decode()
    assert "Traceback" not in err and "Exception ignored" not in err, err[-2000:]
    if moment == "after the last line" and proc.returncode == 0:
        assert len(written) == len(lines)  # it had ended, or settled its status, before the Ctrl-C came
        return
    assert proc.returncode == 130 and 1 <= len(written) <= len(lines) and all(written), err[-2000:]
    said = err.strip().splitlines()[-1]
    if moment == "after the last line":
        assert said == "interrupted: 3 of 3 lines translated and written"
    else:  # stdin is still open: the total is not known
        match = re.fullmatch(r"interrupted: (\d+) of (\d+) lines read so far translated and written", said)
        assert match, said
        n, read = int(match[1]), int(match[2])
        assert n == len(written) <= read <= len(lines) and (moment == "between batches" or n == 3), said


# --- streaming stdin: a pipe's lines are translated as they arrive ----------------------------------------------


def test_a_pipes_lines_are_taken_as_they_arrive():
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb", buffering=0) as stdin:
        os.write(write_end, b"Ein Hund.\r\nEine \xff Katze.\n")
        os.write(write_end, b"\xef\xbb\xbf")  # not at the start: not a byte-order mark, part of line 3
        reader = T._StdinLines(stdin)
        # two lines have arrived: take gives them without waiting for more (reading to the end would block here)
        assert reader.take(100) == [
            ("Ein Hund.", None),
            ("", "line 2: not valid UTF-8 (byte 0xff at byte 6): wrote an empty line"),
        ]
        assert reader.total is None
        os.write(write_end, "Ein Mann\rläuft.".encode())
        os.close(write_end)
        assert reader.take(1) == [("\ufeffEin Mann", None)]
        assert reader.take(100) == [("läuft.", None)] and reader.take(100) == []
        assert reader.total == 4


def test_stdin_from_a_pipe_streams_translations_before_the_input_ends(shipped, sentences):
    # the whole of stdin was read before anything was translated: a producer that writes a line and waits saw nothing
    expected = T.translate(shipped.model, shipped.tokenizer, sentences[:2])
    proc = subprocess.Popen(
        [*CLI, "--run", str(SHIPPED_MODEL)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        proc.stdin.write((sentences[0] + "\n").encode())
        proc.stdin.flush()  # stdin stays open: the translation of line 1 must come before the input ends
        ready = select.select([proc.stdout], [], [], 300)[0]  # a hang guard only: the model loads in seconds
        assert ready, "no translation while stdin was still open"
        assert proc.stdout.readline().decode().rstrip("\n") == expected[0]
        proc.stdin.write((sentences[1] + "\n").encode())
        proc.stdin.close()
        rest, err = proc.stdout.read(), proc.stderr.read()
        assert proc.wait(timeout=300) == 0, err.decode()
    finally:
        proc.kill()
    assert rest.decode().split("\n")[:-1] == expected[1:]


def test_a_progress_bar_for_a_long_piped_input_gets_its_total_at_the_end(shipped, forty, monkeypatch, capsys):
    monkeypatch.setattr(T, "PROGRESS_LINES", 10)
    monkeypatch.setattr(T, "load_run", lambda *a, **k: shipped)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    read_end, write_end = os.pipe()
    os.write(write_end, ("\n".join(forty[:12]) + "\n").encode())
    os.close(write_end)
    with os.fdopen(read_end, "rb", buffering=0) as raw:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(raw)))
        monkeypatch.setattr(sys.stdin, "isatty", lambda: False, raising=False)
        code = T.main(["--run", str(SHIPPED_MODEL), "--batch-size", "6"])
    out, err = capsys.readouterr()
    assert code == 0 and out.count("\n") == 12 and "12/12" in err, err


# --- out of domain: still translated, flagged by one rule the live page shares ------------------------------------


def _note(shipped, text):
    plain = T.plain_text_tokenizer(shipped.tokenizer)
    return T.domain_note(plain.encode(T.clean_text(text), add_special_tokens=False).tokens)


def test_at_most_one_percent_of_the_test_set_looks_out_of_domain(shipped, multi30k_dir):
    test = [de for de, _ in load_multi30k("test_2016_flickr")]
    flagged = [t for t in test if _note(shipped, t)]
    assert 0 < len(flagged) <= len(test) // 100, flagged


@pytest.mark.parametrize(
    "text, reason",
    [
        ("Die Bundesregierung hat am Mittwoch neue Steuergesetze beschlossen.", "21 sub-words for 8 words"),
        ("Zwölf, dreizehn, vierzehn, 1999.", "19 sub-words for 4 words"),
        ("Guten Morgen, wie geht es Ihnen?", "a question"),
        ("Ich liebe dich.", "first/second person"),
        ("The quick brown fox jumps over the lazy dog.", "looks like English"),
        ("A man is riding a bike.", "looks like English"),
    ],
)
def test_obvious_out_of_domain_input_is_flagged(shipped, text, reason):
    assert reason in (_note(shipped, text) or ""), _note(shipped, text)


@pytest.mark.parametrize("text", ["Ein Hund rennt über die Wiese.", "Zwei Männer spielen an einem Strand Fußball.", ""])
def test_captions_are_not_flagged(shipped, text):
    assert _note(shipped, text) is None


def test_the_cli_translates_out_of_domain_lines_and_names_them_on_stderr(shipped, sentences, monkeypatch, capsysbinary):
    # German the model has never seen came back as fluent nonsense with no sign
    lines = [sentences[0], "Zwölf, dreizehn, vierzehn, 1999.", "", "The quick brown fox jumps over the lazy dog."]
    code, out, err = run_cli(monkeypatch, capsysbinary, shipped, ("\n".join(lines) + "\n").encode())
    assert code == 0 and out == T.translate(shipped.model, shipped.tokenizer, lines) and out[1] and out[3]
    notes = [line for line in err.splitlines() if "out of the model's domain" in line]
    assert [n.split(":")[0] for n in notes] == ["line 2", "line 4"], err


_DOMAIN_JS = Path(__file__).resolve().parents[2] / "tools" / "explorer" / "domain.js"
_NODE_SCRIPT = """
import { readFileSync } from "node:fs";
const { domainNote, sentences } = await import(process.argv[1]);
const data = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify({
  notes: data.tokens.map((t) => domainNote(t, data.rule)),
  sentences: data.paragraphs.map(sentences),
}));
"""


@pytest.mark.skipif(
    shutil.which("node") is None, reason="Node.js is absent (make vendor installs npm, and with it node, as root)"
)
def test_the_live_pages_rule_flags_what_the_cli_flags(shipped, multi30k_dir):
    """tools/explorer/domain.js (the live page) = lib.translate.domain_note, on the same tokens and the same rule."""
    plain = T.plain_text_tokenizer(shipped.tokenizer)
    texts = [de for de, _ in load_multi30k("test_2016_flickr")] + [
        "Die Bundesregierung hat am Mittwoch neue Steuergesetze beschlossen.",
        "Zwölf, dreizehn, vierzehn, 1999.",
        "Guten Morgen, wie geht es Ihnen?",
        "„Ich?“ — (nein!) ...",
        "The quick brown fox jumps over the lazy dog.",
    ]
    tokens = [plain.encode(T.clean_text(t), add_special_tokens=False).tokens for t in texts]
    paragraphs = ["Ein Hund rennt. Eine Frau singt! Zwei Männer spielen Fußball?", "Ein Hund.", ""]
    data = {"tokens": tokens, "rule": T.DOMAIN_RULE, "paragraphs": paragraphs}
    done = subprocess.run(
        ["node", "--input-type=module", "-e", _NODE_SCRIPT, _DOMAIN_JS.as_uri()],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(done.stdout)
    want = [T.domain_note(t) for t in tokens]
    assert got["notes"] == want and sum(n is not None for n in want[-5:]) == 5
    assert got["sentences"] == [T.split_sentences(p) for p in paragraphs]


# --- files it cannot read, stdin and stdout it cannot use: one line each -----------------------------------------


@pytest.mark.parametrize("what", ["config.json", "model.pt", "tokenizer.json", "the folder"])
def test_an_unreadable_run_file_is_one_line_naming_it(what, tmp_path):
    from permissions import unprivileged

    run = tmp_path / "run"
    shutil.copytree(SHIPPED_MODEL, run)
    (run if what == "the folder" else run / what).chmod(0)
    proc = subprocess.run(
        [*unprivileged(), *CLI, "--run", str(run)], input=b"Ein Hund.\n", capture_output=True, timeout=120
    )
    (run if what == "the folder" else run / what).chmod(0o755)
    err = proc.stderr.decode()
    name = run if what == "the folder" else run / what
    assert proc.returncode == 2 and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1] == (
        f"python -m lib.translate: error: argument --run: {name}: cannot be read (Permission denied): "
        "check its permissions"
    )


def test_a_closed_stdin_or_stdout_is_a_usage_error():
    for fd, name in [(0, "stdin"), (1, "stdout")]:
        proc = subprocess.run(
            [*CLI, "--run", str(SHIPPED_MODEL)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if fd == 0 else None,
            stderr=subprocess.PIPE,
            preexec_fn=lambda fd=fd: os.close(fd),
            timeout=120,
        )
        err = proc.stderr.decode()
        assert proc.returncode == 2 and err.strip().splitlines()[-1].startswith(
            f"python -m lib.translate: error: {name} is closed"
        ), err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full (a Linux device) on this machine")
def test_stdout_on_a_full_disk_is_one_line_and_exit_status_1(sentences):
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [*CLI, "--run", str(SHIPPED_MODEL)],
            input="\n".join(sentences).encode(),
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "Traceback" not in err and "Exception ignored" not in err, err
    assert err.strip().splitlines()[-1] == (
        "python -m lib.translate: error: cannot write to stdout (No space left on device): 0 lines were written"
    )


def test_a_reader_that_stops_reading_ends_it_quietly(sentences):
    proc = subprocess.Popen(
        [*CLI, "--run", str(SHIPPED_MODEL)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # as `| head -0` does
    _, err = proc.communicate(("\n".join(sentences) + "\n").encode(), timeout=120)
    assert proc.returncode == 141 and err.decode() == "", err.decode()
