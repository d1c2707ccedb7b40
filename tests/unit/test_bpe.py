"""Tests for lib.bpe: special-token ids, round trips, deterministic training, caching, bad input.

Tests on real sentences find Multi30k through ``lib.data.data_dir()`` (set ``MULTI30K_DIR``) and are skipped
with that reason when the files are absent; the others use a tiny made-up corpus.
"""

from __future__ import annotations

import unicodedata

import pytest
import torch

import lib.bpe as tokenize
from lib.bpe import (
    BOS,
    BOS_ID,
    EOS,
    EOS_ID,
    PAD,
    PAD_ID,
    UNK,
    UNK_ID,
    decode,
    encode,
    load_tokenizer,
    multi30k_tokenizer,
    save_tokenizer,
    tokens,
    train_bpe,
)
from lib.data import SHA256, data_dir, load_multi30k

TOY = [
    "Ein Hund läuft über die Wiese.",
    "A dog runs across the meadow.",
    "Zwei Kinder spielen im Park.",
    "Two children play in the park.",
] * 5


@pytest.fixture(scope="module")
def have_data():
    directory = data_dir()
    missing = [name for name in SHA256 if not (directory / name).is_file()]
    if missing:
        pytest.skip(
            f"Multi30k data not found in {directory} (missing {missing}): set MULTI30K_DIR to a folder "
            f"holding the six .gz files"
        )


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tokenizers")


@pytest.fixture(scope="module")
def full_tok(have_data, cache_dir):
    """The 8,000-token Multi30k tokenizer, trained once into a temporary cache folder."""
    return multi30k_tokenizer(8000, cache_dir=cache_dir)


@pytest.fixture(scope="module")
def toy_tok():
    return train_bpe(TOY, vocab_size=60, min_frequency=1)


def test_special_token_ids(toy_tok):
    assert (PAD, BOS, EOS, UNK) == ("<pad>", "<s>", "</s>", "<unk>")
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    for token, i in zip((PAD, BOS, EOS, UNK), range(4)):
        assert toy_tok.token_to_id(token) == i
        assert toy_tok.id_to_token(i) == token


def test_special_token_ids_full(full_tok):
    assert [full_tok.id_to_token(i) for i in range(4)] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert full_tok.get_vocab_size() == 8000


def test_unseen_character_is_unk(toy_tok):
    assert UNK_ID in encode(toy_tok, "Ω")


def test_no_specials_added_by_encode(toy_tok):
    ids = encode(toy_tok, TOY[0])
    assert ids and not set(ids) & {PAD_ID, BOS_ID, EOS_ID, UNK_ID}


def test_round_trip_real_sentences(have_data, full_tok):
    pairs = load_multi30k("train", download=False)[:10] + load_multi30k("val", download=False)[:20]
    sentences = [s for pair in pairs for s in pair]
    for s in sentences:
        ids = encode(full_tok, s)
        assert UNK_ID not in ids
        assert decode(full_tok, ids) == unicodedata.normalize("NFKC", s) == s


def test_round_trip_with_nfkc(have_data, full_tok):
    s = "Ein Hund mit der Nummer\u00a06 nimmt an einem Rennen teil."  # a no-break space, as in train.de
    assert decode(full_tok, encode(full_tok, s)) == "Ein Hund mit der Nummer 6 nimmt an einem Rennen teil."


def test_case_is_kept(toy_tok):
    assert decode(toy_tok, encode(toy_tok, "Ein Hund")) == "Ein Hund"
    assert encode(toy_tok, "Ein") != encode(toy_tok, "ein")


def test_decode_stops_at_eos_and_drops_specials(toy_tok):
    s = TOY[1]
    ids = encode(toy_tok, s)
    other = encode(toy_tok, TOY[2])
    assert decode(toy_tok, [BOS_ID] + ids + [EOS_ID] + other + [PAD_ID, PAD_ID]) == s
    assert decode(toy_tok, torch.tensor([BOS_ID] + ids + [EOS_ID, PAD_ID])) == s
    assert decode(toy_tok, [EOS_ID] + ids) == ""
    with pytest.raises(ValueError, match="one-dimensional"):
        decode(toy_tok, torch.tensor([ids]))


def test_tokens_are_subword_strings(have_data, full_tok):
    s = "Ein Hund läuft über die Wiese."
    pieces = tokens(full_tok, s)
    assert all(isinstance(p, str) for p in pieces)
    assert pieces[0] == "▁Ein" and pieces[1] == "▁Hund"
    assert len(pieces) == len(encode(full_tok, s))
    assert "".join(pieces).replace("▁", " ").strip() == s


def test_training_is_deterministic(have_data):
    pairs = load_multi30k("train", download=False)[:1000]
    texts = [de for de, _ in pairs] + [en for _, en in pairs]  # 2,000 sentences
    first = train_bpe(texts, vocab_size=1000)
    second = train_bpe(texts, vocab_size=1000)
    assert first.get_vocab_size() == 1000
    assert first.get_vocab() == second.get_vocab()
    assert first.to_str() == second.to_str()  # merges (and their order) too


def test_save_and_load_round_trip(toy_tok, tmp_path):
    path = tmp_path / "sub" / "toy.json"
    save_tokenizer(toy_tok, path)
    loaded = load_tokenizer(path)
    assert loaded.get_vocab() == toy_tok.get_vocab()
    assert encode(loaded, TOY[0]) == encode(toy_tok, TOY[0])
    assert [p.name for p in path.parent.iterdir()] == ["toy.json"]  # no temporary file left


def test_load_tokenizer_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.json"):
        load_tokenizer(tmp_path / "nope.json")


def test_multi30k_tokenizer_is_cached(full_tok, cache_dir, monkeypatch):
    path = cache_dir / "multi30k-bpe8000-v2.json"
    assert path.is_file()
    mtime = path.stat().st_mtime_ns

    def no_training(*args, **kwargs):
        raise AssertionError("multi30k_tokenizer retrained instead of loading its cache")

    monkeypatch.setattr(tokenize, "train_bpe", no_training)
    again = multi30k_tokenizer(8000, cache_dir=cache_dir)
    assert again.get_vocab() == full_tok.get_vocab()
    assert path.stat().st_mtime_ns == mtime


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"vocab_size": 4}, "vocab_size"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"vocab_size": 100.0}, "vocab_size"),
        ({"min_frequency": 0}, "min_frequency"),
    ],
)
def test_train_bpe_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        train_bpe(TOY, **kwargs)


def test_train_bpe_bad_texts():
    with pytest.raises(ValueError, match="texts"):
        train_bpe([], vocab_size=50)
    with pytest.raises(ValueError, match="texts"):
        train_bpe("a single string", vocab_size=50)
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        train_bpe(["ok", 5], vocab_size=50)


def test_multi30k_tokenizer_bad_vocab_size(tmp_path):
    with pytest.raises(ValueError, match="vocab_size"):
        multi30k_tokenizer(vocab_size=3, cache_dir=tmp_path)


def test_encode_and_tokens_reject_non_strings(toy_tok):
    with pytest.raises(ValueError, match="text"):
        encode(toy_tok, 5)
    with pytest.raises(ValueError, match="text"):
        tokens(toy_tok, ["a"])


def test_a_vocabulary_size_below_the_characters_of_the_texts_is_refused():
    # train_bpe(vocab_size=5) returned 13 tokens: the trainer keeps every character whatever the size asked
    # (here e, i, n, H, u, d, a, o, g and the word-start mark)
    with pytest.raises(ValueError, match=r"vocab_size=5 cannot be reached: .* 10 distinct characters .* at least 14"):
        train_bpe(["ein Hund", "a dog"], vocab_size=5)
    assert train_bpe(["ein Hund", "a dog"], vocab_size=14, min_frequency=1).get_vocab_size() == 14
