"""`python -m lib.train` end to end: a few steps on real Multi30k, then the run folder loads and translates."""

import json
import subprocess
import sys

import pytest
import torch

from lib.checkpoint import load_run
from lib.train import main
from lib.translate import translate


@pytest.mark.slow
def test_train_command_line_writes_a_loadable_run(multi30k_dir, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lib.train",
            "--preset",
            "tiny",
            "--steps",
            "8",
            "--max-tokens",
            "1000",
            "--eval-every",
            "100",
            "--save-dtype",
            "float16",
            "--int8-embeddings",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 8 and results["stopped_by"] == "max_steps"
    saved = torch.load(out / "model.pt", weights_only=True)
    assert saved["format"] == "int8-rows" and saved["int8_rows"]["src_embed.weight"]["values"].dtype == torch.int8
    assert (out / "checkpoint.pt").is_file()
    run = load_run(out)
    assert len(translate(run.model, run.tokenizer, ["Ein Mann."])) == 1


def test_train_command_line_needs_a_budget(tmp_path):
    # the one usage error checked through a real `python -m lib.train` process (its exit status and stderr); the
    # other hostile arguments below call lib.train.main in this process, which goes through the same parser
    proc = subprocess.run(
        [sys.executable, "-m", "lib.train", "--out", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "budget" in proc.stderr


# --- hostile arguments: one-line usage errors before any data is loaded ----------------------------------------


def _cli(*args, env=None, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "lib.train", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture
def usage_error(tmp_path, monkeypatch, capsys):
    """Run ``lib.train.main(argv)`` in this process; the exit status and the stderr of the usage error it must give.

    MULTI30K_DIR points nowhere: if an argument were checked only after the data loaded, the error would be about
    the missing data, not about the option.
    """
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path / "no-data"))
    threads = torch.get_num_threads()

    def run(*argv):
        capsys.readouterr()
        try:
            with pytest.raises(SystemExit) as stop:
                main(list(argv))
        finally:
            torch.set_num_threads(threads)  # in case a regression got as far as --threads
        return stop.value.code, capsys.readouterr().err

    return run


@pytest.mark.parametrize(
    "args, option",
    [
        (["--minutes", "-1"], "--minutes"),
        (["--minutes", "nan"], "--minutes"),
        (["--steps", "0"], "--steps"),
        (["--steps", "5", "--peak-lr", "nan"], "--peak-lr"),
        (["--steps", "5", "--max-tokens", "0"], "--max-tokens"),
        (["--steps", "5", "--label-smoothing", "1.5"], "--label-smoothing"),
        (["--steps", "5", "--dropout", "1.0"], "--dropout"),
        (["--steps", "5", "--eval-every", "0"], "--eval-every"),
        (["--steps", "5", "--snapshots", "5,x"], "--snapshots"),
        (["--steps", "5", "--threads", "0"], "--threads"),
        (["--steps", "5", "--vocab-size", "3"], "--vocab-size"),
        (["--steps", "5", "--device", "gpu9"], "--device"),
        (["--steps", "5", "--data", "/no/such/folder"], "--data"),
        (["--steps", "5", "--resume"], "--resume"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(usage_error, tmp_path, args, option):
    code, err = usage_error(*args, "--out", str(tmp_path / "run"))
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("python -m lib.train: error:") and option in last, err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_an_existing_run_is_never_replaced_without_overwrite(usage_error, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.pt").write_bytes(b"precious")
    (out / "manifest.json").write_text('{"format": 1, "files": {}, "hyper_parameters": {}}')  # a run's manifest
    code, err = usage_error("--steps", "1", "--out", str(out))
    assert code == 2 and "already holds a run" in err and "--overwrite" in err
    assert (out / "model.pt").read_bytes() == b"precious"
    code, err = usage_error("--steps", "1", "--out", str(out), "--resume", "--overwrite")
    assert code == 2 and "contradict" in err


@pytest.mark.slow
def test_overwrite_leaves_nothing_of_the_replaced_run(multi30k_dir, tmp_path):
    # A replaced run's snapshots and records must not mix with the new run's: a snapshot left behind would be
    # read as the new run's (found on a GPU, where a checklist's BLEU curve picked up the old run's snapshots).
    out = tmp_path / "run"
    out.mkdir()
    for name in ("model.pt", "model_1.5min.pt", "model_20min.pt", "history.json", "results.json"):
        (out / name).write_text("from the old run")
    (out / "manifest.json").write_text('{"format": 1, "files": {}, "hyper_parameters": {}}')  # it is a run
    (out / "notes.txt").write_text("the reader's own file")
    args = ["--preset", "tiny", "--steps", "2", "--max-tokens", "500", "--eval-every", "100", "--overwrite"]
    proc = _cli(*args, "--out", str(out), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not list(out.glob("model_*min.pt"))
    assert json.loads((out / "results.json").read_text())["steps"] == 2
    assert [h["step"] for h in json.loads((out / "history.json").read_text())] == [2]
    assert (out / "notes.txt").read_text() == "the reader's own file"


@pytest.mark.slow
@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_ctrl_c_saves_a_checkpoint_and_prints_the_resume_command(multi30k_dir, tmp_path, signum):
    # SIGTERM (kill, a job scheduler, a closing session) is handled like Ctrl-C: it stopped training without a word
    # and lost up to one validation interval
    import signal

    out = tmp_path / "run"
    # --eval-every 0.01 (minutes): the loop logs its first "step N | ..." line less than a second after it starts;
    # Ctrl-C is sent only then, so that the test does not depend on how long the set-up (imports, data, tokenizer)
    # takes on a busy machine. (With --eval-every 2 the test waited two minutes of training.)
    args = ["--preset", "tiny", "--steps", "100000", "--max-tokens", "500", "--eval-every", "0.01", "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "lib.train", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline()  # "model tiny: ... parameters"
        assert line.startswith("model tiny"), line + proc.stderr.read()
        while not line.startswith("step"):  # the first logged step: the deferred Ctrl-C handler is in place
            line = proc.stdout.readline()
            assert line, "the run ended before it logged a step: " + proc.stderr.read()[-2000:]
        proc.send_signal(getattr(signal, signum))
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "checkpoint saved to" in err and "Resume with:" in err
    resume = err.strip().splitlines()[-1].strip()
    assert resume.startswith("python -m lib.train ") and resume.endswith("--resume") and str(out) in resume
    assert (out / "checkpoint.pt").is_file() and not (out / "model.pt").exists()


def test_device_auto_is_the_default_and_cuda_without_a_gpu_is_a_usage_error(usage_error, tmp_path):
    from lib.train import _parser

    args = _parser().parse_args(["--out", "x", "--steps", "1"])
    assert args.device == "auto" and args.amp and args.tf32 and not args.compile
    assert not _parser().parse_args(["--out", "x", "--steps", "1", "--no-amp", "--no-tf32"]).amp
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code, err = usage_error("--steps", "5", "--device", "cuda", "--out", str(tmp_path / "run"))
    assert code == 2 and "torch sees no CUDA device" in err.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_diverging_run_exits_1_with_one_line_and_saves_no_run(multi30k_dir, tmp_path):
    out = tmp_path / "run"
    args = ["--preset", "tiny", "--steps", "20", "--max-tokens", "500", "--eval-every", "100", "--peak-lr", "1e30"]
    proc = _cli(*args, "--out", str(out), timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("python -m lib.train: error: training diverged at step") and "learning rate" in last
    assert "Traceback" not in proc.stderr and not (out / "model.pt").exists() and not (out / "manifest.json").exists()


@pytest.mark.slow
def test_a_vocabulary_size_the_data_cannot_reach_is_a_usage_error(multi30k_dir, tmp_path):
    # train_bpe returned a larger vocabulary than asked (every character is kept); lib.train now says so in one line
    proc = _cli("--steps", "1", "--vocab-size", "5", "--out", str(tmp_path / "run"), timeout=300)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and last.startswith("python -m lib.train: error: --vocab-size 5: vocab_size=5 cannot")
    assert "Traceback" not in proc.stderr and not (tmp_path / "run").exists()


# --- a data file it cannot use: one line naming it, before any training --------------------------------------


def _data_copy(multi30k_dir, tmp_path):
    """A folder of links to the real Multi30k files (so that one can be replaced)."""
    from lib.data import SHA256

    folder = tmp_path / "data"
    folder.mkdir()
    for name in SHA256:
        (folder / name).symlink_to(multi30k_dir / name)
    return folder


def test_a_corrupt_data_file_is_one_line_with_the_checksum_message(multi30k_dir, tmp_path):
    # with the tokenizer cached, a damaged val.de.gz gave a traceback that ended in the right message
    data = _data_copy(multi30k_dir, tmp_path)
    (data / "val.de.gz").unlink()
    (data / "val.de.gz").write_bytes((multi30k_dir / "val.de.gz").read_bytes() + b"x")
    proc = _cli("--steps", "1", "--data", str(data), "--out", str(tmp_path / "run"), timeout=300)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and last.startswith("python -m lib.train: error: --data: Multi30k file"), proc.stderr
    assert "val.de.gz" in last and "SHA-256" in last and "Traceback" not in proc.stderr


def test_an_unreadable_data_file_is_one_line_naming_it(multi30k_dir, tmp_path):
    from permissions import unprivileged

    data = _data_copy(multi30k_dir, tmp_path)
    (data / "train.de.gz").unlink()
    (data / "train.de.gz").write_bytes((multi30k_dir / "train.de.gz").read_bytes())
    (data / "train.de.gz").chmod(0)
    proc = subprocess.run(
        [
            *unprivileged(),
            sys.executable,
            "-m",
            "lib.train",
            "--steps",
            "1",
            "--data",
            str(data),
            "--out",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert last == f"python -m lib.train: error: --data: cannot read {data / 'train.de.gz'}: Permission denied"
