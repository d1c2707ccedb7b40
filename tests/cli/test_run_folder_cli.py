"""The run folder is one unit: no tool writes into a run it did not create, and a run in use is locked.

Each case was found by trying the command lines against run folders (issue 34): ``lib.export --out RUN`` replaced
the run's manifest, ``lib.train --out ''`` trained into the current folder, ``--overwrite`` deleted a reader's own
``config.json``, and two ``lib.train --resume`` on one run both trained. All of these stop before any data is
loaded (``MULTI30K_DIR`` points nowhere), so the tests are fast.
"""

import json

import pytest

from lib import export, train
from lib.files import lock_folder

RUN_MANIFEST = {"format": 1, "files": {}, "hyper_parameters": {"model": {}, "train": None}}


def _fake_run(folder, manifest=RUN_MANIFEST):
    """A folder that looks like a run to the tools' checks (its manifest says so); nothing in it loads."""
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    for name in ("config.json", "model.pt", "tokenizer.json"):
        (folder / name).write_text(f"the run's {name}")
    return folder


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``tool.main(argv)`` in this process: (exit status, last line of stderr); the data points nowhere."""
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path / "no-data"))

    def run(tool, *argv):
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            code = tool.main(list(argv))
            raise SystemExit(code)
        err = capsys.readouterr().err
        assert "Traceback" not in err
        return stop.value.code, (err.strip().splitlines() or [""])[-1]

    return run


@pytest.mark.parametrize("inside", [False, True])
def test_export_never_writes_into_a_run(cli, tmp_path, inside):
    run = _fake_run(tmp_path / "run")
    before = {f.name: f.read_bytes() for f in run.iterdir()}
    out = run / "web" if inside else run
    code, err = cli(export, "--run", str(run), "--out", str(out))
    assert code == 2 and err.startswith("python -m lib.export: error: argument --out:") and str(run) in err, err
    assert {f.name: f.read_bytes() for f in run.iterdir()} == before and not (run / "web").exists()


@pytest.mark.parametrize("tool, extra", [(train, ["--steps", "1"]), (export, ["--run", "models/de-en"])])
@pytest.mark.parametrize("out", ["", "  "])
def test_an_empty_out_is_a_usage_error(cli, tool, extra, out):
    code, err = cli(tool, *extra, "--out", out)
    assert code == 2 and "argument --out: must name a folder" in err, err


def test_train_never_writes_inside_a_run_or_into_an_export(cli, tmp_path):
    run = _fake_run(tmp_path / "run")
    code, err = cli(train, "--steps", "1", "--out", str(run / "sub"), "--overwrite")
    assert code == 2 and "is inside the run folder" in err and not (run / "sub").exists(), err
    web = _fake_run(tmp_path / "web", {"format": 1, "files": {}, "graphs": {}})
    code, err = cli(train, "--steps", "1", "--out", str(web), "--overwrite")
    assert code == 2 and "export folder" in err and (web / "config.json").read_text() == "the run's config.json"


def test_overwrite_never_deletes_files_of_a_folder_that_is_not_a_run(cli, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text('{"my": "settings"}')
    for extra in ([], ["--overwrite"], ["--resume"]):
        code, err = cli(train, "--steps", "1", "--out", str(mine), *extra)
        assert code == 2 and ("config.json" in err or "nothing to resume" in err), err
        assert (mine / "config.json").read_text() == '{"my": "settings"}'
    assert "no run's manifest.json says it is a run" in err_of(cli, mine)


def err_of(cli, folder):
    return cli(train, "--steps", "1", "--out", str(folder), "--overwrite")[1]


def test_a_run_in_use_is_refused_with_the_holders_pid(cli, tmp_path):
    # a second `lib.train --resume` while the first holds the run: one line naming the folder and the pid, exit 1
    run = _fake_run(tmp_path / "run")
    (run / "checkpoint.pt").write_bytes(b"the first process's checkpoint")
    with lock_folder(run):
        code, err = cli(train, "--steps", "1", "--out", str(run), "--resume")
        assert code == 1 and err.startswith("python -m lib.train: error:") and "in use" in err and str(run) in err
    assert (run / "checkpoint.pt").read_bytes() == b"the first process's checkpoint"


@pytest.mark.parametrize("tool, extra", [(train, ["--steps", "1"]), (export, ["--run", "models/de-en"])])
def test_an_out_that_cannot_be_created_is_a_one_line_error(cli, tmp_path, tool, extra):
    # the output folder was checked only after the data had loaded, and its error was a traceback
    (tmp_path / "a-file").write_text("not a folder")
    code, err = cli(tool, *extra, "--out", str(tmp_path / "a-file" / "run"))
    assert code == 2 and "--out" in err and "cannot write" in err and str(tmp_path / "a-file") in err, err
