"""Tests for lib.data: the checksummed Multi30k loader (local copy, download, errors) and batching.

The real files are found through ``lib.data.data_dir()`` (set ``MULTI30K_DIR`` to a folder holding the six
``.gz`` files); tests that need them are skipped with that reason when they are absent.  No test touches
the network: downloads go through a monkeypatched ``urllib.request.urlopen``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import random
import shutil
import urllib.error
import urllib.request

import pytest
import torch

from lib import data
from lib.data import (
    BASE_URL,
    SHA256,
    SPLITS,
    Batch,
    ChecksumError,
    collate,
    data_dir,
    encode_pairs,
    load_multi30k,
    make_batches,
    token_batches,
)


@pytest.fixture(scope="module")
def local_dir(multi30k_dir):
    """The folder with the six real Multi30k files, or skip (see conftest.py)."""
    return multi30k_dir


@pytest.fixture
def copy_dir(local_dir, tmp_path):
    """A writable copy of the six files in tmp_path."""
    for name in SHA256:
        shutil.copyfile(local_dir / name, tmp_path / name)
    return tmp_path


def _no_network(monkeypatch):
    """Make every urlopen fail as if offline; return the list of URLs that were tried."""
    tried = []

    def fake_urlopen(url, *args, **kwargs):
        tried.append(url)
        raise urllib.error.URLError("no network in tests")

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    return tried


def _serve(monkeypatch, files):
    """Make urlopen serve ``files[name]`` bytes for ``BASE_URL/name``; return the list of URLs requested."""
    requested = []

    def fake_urlopen(url, *args, **kwargs):
        requested.append(url)
        name = url.rsplit("/", 1)[-1]
        if url != f"{BASE_URL}/{name}" or name not in files:
            raise urllib.error.HTTPError(url, 404, "Not Found", None, None)
        return io.BytesIO(files[name])

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    return requested


# --------------------------------------------------------------------------------------------------
# data_dir
# --------------------------------------------------------------------------------------------------


def test_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path / "env"))
    assert data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert data_dir() == tmp_path / "env"
    monkeypatch.delenv("MULTI30K_DIR")
    default = data_dir()
    assert default.name == "multi30k" and "attention-book" in str(default)


def test_sha256_table_matches_splits():
    assert sorted(SHA256) == sorted(f"{s}.{lang}.gz" for s in SPLITS for lang in ("de", "en"))
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in SHA256.values())


# --------------------------------------------------------------------------------------------------
# Loading the real data
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("split, size", [("train", 29_000), ("val", 1_014), ("test_2016_flickr", 1_000)])
def test_split_sizes(local_dir, split, size):
    pairs = load_multi30k(split, download=False)
    assert len(pairs) == size
    assert all(isinstance(de, str) and isinstance(en, str) and de and en for de, en in pairs)
    assert all(s == s.strip() for pair in pairs for s in pair)  # train.de has lines with stray spaces


def test_first_train_pair_matches_files(local_dir):
    with gzip.open(local_dir / "train.de.gz", "rt", encoding="utf-8") as f:
        first_de = f.readline().strip()
    with gzip.open(local_dir / "train.en.gz", "rt", encoding="utf-8") as f:
        first_en = f.readline().strip()
    pairs = load_multi30k("train", download=False)
    assert pairs[0] == (first_de, first_en)
    assert first_de.startswith("Zwei junge") and first_en.startswith("Two young")  # German first
    assert not pairs[-1][0].endswith("\n") and pairs[-1][0] == pairs[-1][0].strip()


def test_repeated_load_is_cached_and_returns_a_copy(local_dir):
    first = load_multi30k("val", download=False)
    first.clear()  # mutating the returned list must not affect the cache
    hits = data._read_pairs.cache_info().hits
    second = load_multi30k("val", download=False)
    assert len(second) == 1_014
    assert data._read_pairs.cache_info().hits == hits + 1


def test_unknown_split_raises():
    with pytest.raises(ValueError, match=r"'training'.*train.*val.*test_2016_flickr"):
        load_multi30k("training")


# --------------------------------------------------------------------------------------------------
# Missing files, downloads, checksums
# --------------------------------------------------------------------------------------------------


def test_missing_data_offline_raises_file_not_found(monkeypatch, tmp_path):
    tried = _no_network(monkeypatch)
    with pytest.raises(FileNotFoundError) as info:
        load_multi30k("train", root=tmp_path)
    message = str(info.value)
    assert "train.de.gz" in message
    assert str(tmp_path) in message
    assert "MULTI30K_DIR" in message
    assert f"{BASE_URL}/train.de.gz" in message
    assert tried == [f"{BASE_URL}/train.de.gz"]
    assert list(tmp_path.iterdir()) == []  # no partial file left behind


def test_missing_data_via_env_var(monkeypatch, tmp_path):
    _no_network(monkeypatch)
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"val\.de\.gz"):
        load_multi30k("val")


def test_download_false_does_not_touch_network(monkeypatch, tmp_path):
    tried = _no_network(monkeypatch)
    with pytest.raises(FileNotFoundError, match=r"test_2016_flickr\.de\.gz.*download=False"):
        load_multi30k("test_2016_flickr", root=tmp_path, download=False)
    assert tried == []


def test_unwritable_directory_raises_file_not_found(monkeypatch, tmp_path):
    _serve(monkeypatch, {})
    not_a_dir = tmp_path / "a_file"
    not_a_dir.write_text("not a folder")
    with pytest.raises(FileNotFoundError, match=r"val\.de\.gz.*not writable"):
        load_multi30k("val", root=not_a_dir)


def test_download_lands_verified_file(monkeypatch, local_dir, tmp_path):
    files = {name: (local_dir / name).read_bytes() for name in ("val.de.gz", "val.en.gz")}
    requested = _serve(monkeypatch, files)
    target = tmp_path / "fresh" / "cache"  # does not exist yet: the loader creates it
    pairs = load_multi30k("val", root=target)
    assert requested == [f"{BASE_URL}/val.de.gz", f"{BASE_URL}/val.en.gz"]
    assert sorted(p.name for p in target.iterdir()) == ["val.de.gz", "val.en.gz"]  # no .part leftovers
    for name, content in files.items():
        assert hashlib.sha256((target / name).read_bytes()).hexdigest() == SHA256[name]
        assert (target / name).read_bytes() == content
    assert pairs == load_multi30k("val", download=False)
    # Second call: the files are there, nothing is downloaded again.
    assert load_multi30k("val", root=target) == pairs
    assert len(requested) == 2


def test_download_with_wrong_bytes_raises_checksum_error(monkeypatch, local_dir, tmp_path):
    good = (local_dir / "val.de.gz").read_bytes()
    _serve(monkeypatch, {"val.de.gz": good[:-1] + bytes([good[-1] ^ 0xFF])})
    with pytest.raises(ChecksumError, match=r"val\.de\.gz"):
        load_multi30k("val", root=tmp_path)
    assert list(tmp_path.iterdir()) == []  # the bad download is not kept


def test_corrupt_file_raises_checksum_error(copy_dir):
    path = copy_dir / "val.en.gz"
    content = bytearray(path.read_bytes())
    content[len(content) // 2] ^= 0x01  # flip one bit in the middle
    path.write_bytes(bytes(content))
    actual = hashlib.sha256(bytes(content)).hexdigest()
    with pytest.raises(ChecksumError) as info:
        load_multi30k("val", root=copy_dir)
    message = str(info.value)
    assert "val.en.gz" in message and SHA256["val.en.gz"] in message and actual in message
    assert "delete" in message
    assert isinstance(info.value, ValueError)
    load_multi30k("test_2016_flickr", root=copy_dir)  # the other splits still load


def test_file_replaced_after_a_cached_read_is_verified_again(copy_dir):
    assert len(load_multi30k("val", root=copy_dir)) == 1_014  # now cached
    path = copy_dir / "val.de.gz"
    content = bytearray(path.read_bytes())
    content[100] ^= 0x01
    path.write_bytes(bytes(content))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a new mtime even on coarse clocks
    with pytest.raises(ChecksumError, match=r"val\.de\.gz"):
        load_multi30k("val", root=copy_dir)


def test_line_count_mismatch_raises(monkeypatch, copy_dir):
    path = copy_dir / "val.en.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.readlines()
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(lines[:-1])
    monkeypatch.setitem(SHA256, "val.en.gz", hashlib.sha256(path.read_bytes()).hexdigest())
    with pytest.raises(ValueError, match=r"line counts.*1014.*1013"):
        load_multi30k("val", root=copy_dir)


# --------------------------------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------------------------------


def test_collate_toy():
    examples = [([5, 6, 7], [8, 9]), ([10], [11, 12, 13])]
    batch = collate(examples, pad_id=0, bos_id=1, eos_id=2)
    assert batch.src.dtype == batch.tgt_in.dtype == batch.tgt_out.dtype == torch.long
    assert batch.src.tolist() == [[5, 6, 7, 2], [10, 2, 0, 0]]
    assert batch.tgt_in.tolist() == [[1, 8, 9, 0], [1, 11, 12, 13]]
    assert batch.tgt_out.tolist() == [[8, 9, 2, 0], [11, 12, 13, 2]]
    assert batch.num_tokens == 7  # 2 + 1 and 3 + 1 (EOS counts, padding does not)
    assert len(batch) == 2
    moved = batch.to("cpu")
    assert isinstance(moved, Batch) and moved is not batch
    assert torch.equal(moved.src, batch.src) and torch.equal(moved.tgt_out, batch.tgt_out)


def test_collate_with_nonzero_pad_id():
    batch = collate([([4], [5, 6]), ([4, 4], [5])], pad_id=9, bos_id=1, eos_id=2)
    assert batch.src.tolist() == [[4, 2, 9], [4, 4, 2]]
    assert batch.tgt_out.tolist() == [[5, 6, 2], [5, 2, 9]]
    assert batch.num_tokens == 5


def test_collate_empty_raises():
    with pytest.raises(ValueError, match="examples"):
        collate([], pad_id=0, bos_id=1, eos_id=2)


def _random_examples(n=600, seed=1):
    rng = random.Random(seed)
    return [([7] * rng.randint(1, 40), [8] * rng.randint(1, 40)) for _ in range(n)]


@pytest.mark.parametrize("max_tokens", [10, 64, 300, 2000])
def test_token_batches_respect_budget_and_cover_all(max_tokens):
    examples = _random_examples()
    for shuffle in (True, False):
        batches = token_batches(examples, max_tokens, shuffle=shuffle, seed=3)
        flat = sorted(i for b in batches for i in b)
        assert flat == list(range(len(examples)))  # every index exactly once
        for b in batches:
            longest = max(max(len(examples[i][0]), len(examples[i][1])) for i in b)
            assert len(b) >= 1
            assert len(b) == 1 or len(b) * (longest + 2) <= max_tokens


def test_token_batches_little_padding_when_sorted():
    examples = _random_examples()
    batches = token_batches(examples, 400, shuffle=False)
    lengths = [max(len(examples[i][0]), len(examples[i][1])) for b in batches for i in b]
    assert lengths == sorted(lengths)  # shortest first, each batch a contiguous run of lengths


def test_token_batches_shuffle_mixes_batch_order():
    examples = _random_examples()
    batches = token_batches(examples, 300, shuffle=True, seed=0)
    longest = [max(max(len(examples[i][0]), len(examples[i][1])) for i in b) for b in batches]
    assert longest != sorted(longest) and longest != sorted(longest, reverse=True)


def test_token_batches_deterministic_per_seed():
    examples = _random_examples()
    assert token_batches(examples, 300, seed=5) == token_batches(examples, 300, seed=5)
    assert token_batches(examples, 300, seed=5) != token_batches(examples, 300, seed=6)
    assert token_batches(examples, 300, shuffle=False, seed=5) == token_batches(examples, 300, shuffle=False, seed=6)


def test_token_batches_edge_cases():
    assert token_batches([], 100) == []
    assert token_batches([([1] * 50, [2] * 50)], 10) == [[0]]  # too long for the budget: a batch of its own
    with pytest.raises(ValueError, match="max_tokens"):
        token_batches(_random_examples(5), 0)


def test_encode_pairs_and_make_batches(local_dir):
    from lib.bpe import encode, train_bpe
    from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID

    pairs = load_multi30k("val", download=False)[:300]
    tok = train_bpe([s for p in pairs for s in p], vocab_size=300)
    examples = encode_pairs(pairs, tok)
    assert len(examples) == len(pairs)
    assert examples[0] == (encode(tok, pairs[0][0]), encode(tok, pairs[0][1]))
    short = encode_pairs(pairs, tok, max_len=20)
    assert 0 < len(short) < len(examples)
    assert all(len(s) <= 20 and len(t) <= 20 for s, t in short)
    assert encode_pairs([], tok) == []
    with pytest.raises(ValueError, match="max_len"):
        encode_pairs(pairs, tok, max_len=0)

    batches = make_batches(examples, 1000, PAD_ID, BOS_ID, EOS_ID, shuffle=True, seed=0)
    assert sum(len(b) for b in batches) == len(examples)
    assert sum(b.num_tokens for b in batches) == sum(len(t) + 1 for _, t in examples)
    for b in batches:
        assert b.src.shape[0] == b.tgt_in.shape[0] == b.tgt_out.shape[0]
        assert b.tgt_in.shape == b.tgt_out.shape
        assert len(b) == 1 or (b.src.numel() <= 1000 and b.tgt_in.numel() <= 1000)
        assert (b.tgt_in[:, 0] == BOS_ID).all()
