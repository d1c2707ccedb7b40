"""``lib.files.lock_folder``: one writer per folder, stale locks taken over, leftovers of interrupted writes removed."""

import os

import pytest

from lib.files import LOCK_FILE, FolderInUse, atomic_write_text, lock_folder


def test_a_held_folder_is_refused_with_the_holders_pid(tmp_path):
    with lock_folder(tmp_path / "run") as folder:
        assert (folder / LOCK_FILE).read_text().strip() == str(os.getpid())
        with pytest.raises(FolderInUse, match=rf"in use by another process \(pid {os.getpid()}"), lock_folder(folder):
            pass
    assert not (tmp_path / "run" / LOCK_FILE).exists()
    with lock_folder(tmp_path / "run"):  # released: it can be held again
        pass


def test_the_lock_of_a_dead_process_is_taken_over_with_a_message(tmp_path):
    (tmp_path / LOCK_FILE).write_text("999999999\n")  # what a killed holder leaves: its pid, no lock
    said = []
    with lock_folder(tmp_path, log=said.append):
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
    assert said == [f"{tmp_path}: took over the lock of process 999999999, which is no longer running"]


def test_temporary_files_of_an_interrupted_write_are_removed_on_the_next_lock(tmp_path):
    (tmp_path / ".checkpoint.pt.k3j_a9.tmp").write_bytes(b"\0" * 1000)  # a write killed before its rename
    atomic_write_text(tmp_path / "notes.tmp", "a file of the reader's that merely ends in .tmp")
    said = []
    with lock_folder(tmp_path, log=said.append):
        pass
    assert sorted(f.name for f in tmp_path.iterdir()) == ["notes.tmp"]
    assert len(said) == 1 and ".checkpoint.pt.k3j_a9.tmp" in said[0]


def test_a_folder_created_for_nothing_is_removed(tmp_path):
    with lock_folder(tmp_path / "new"):
        pass
    assert not (tmp_path / "new").exists()


# --- strict JSON: never a bare NaN (which no JSON parser reads) ---------------------------------------------------


def test_strict_json_writes_null_for_nan_and_infinity_and_can_warn_or_refuse():
    import json
    import math
    import warnings

    from lib.files import strict_json

    value = {"loss": [1.0, math.nan], "best": {"bleu": math.inf}, "ok": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert json.loads(strict_json(value)) == {"loss": [1.0, None], "best": {"bleu": None}, "ok": 2}
    with pytest.warns(UserWarning, match=r"2 NaN or infinite values written as null .* at \$.loss\[1\], \$.best.bleu"):
        strict_json(value, nan="warn")
    with pytest.raises(ValueError, match=r"at \$.loss\[1\], \$.best.bleu"):
        strict_json(value, nan="error")
    with pytest.raises(ValueError, match="nan must be"):
        strict_json(value, nan="NaN")
    assert strict_json({"é": 1}, ensure_ascii=False, separators=(",", ":")) == '{"é":1}\n'
