"""The grader's sandbox wherever the checkout and Python live, and a sandbox that cannot start (issue 41).

- The sandbox's file system: a fresh ``/tmp`` first, then every folder of this Python (its environment, its
  installation, each link on the way to the interpreter) shown read-only on top of it.
- A class graded from a checkout under ``/tmp`` (``lib`` and a venv there), once with the venv's ``python`` linked to
  this environment's and once linked straight to a pyenv interpreter in a home folder (as uv's venvs link to theirs):
  each notebook sees its checkout's ``lib`` and ``python``, and nothing else of the grader's ``/tmp``.
- A sandbox that cannot start (a bound path that is missing, a flag bwrap does not know): the command says why in one
  line, quoting bwrap, and writes no row that blames a submission; also when it stops starting mid-class.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

import lib
from lib.classroom import grade, sandbox

ROOT = Path(lib.__file__).resolve().parents[1]
EXERCISES = ["matvec", "softmax_stable", "softmax_temperature", "one_hot"]
MATVEC = """def matvec(W, x):
    if any(len(row) != len(x) for row in W):
        raise ValueError("sizes differ")
    return [sum(w * v for w, v in zip(row, x)) for row in W]
"""


def _write(path, *cells):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in ("from lib.exercises import check", *cells)]
    )
    nb.metadata["student_edition"] = {"edition": "student", "chapter": "preliminaries", "exercises": EXERCISES}
    nbformat.write(nb, str(path))
    return path


def _shown(args, path):
    """Whether the bwrap arguments ``args`` bind ``path``, or a folder that holds it, into the sandbox."""
    binds = [Path(args[i + 2]) for i, a in enumerate(args) if a == "--ro-bind"]
    return any(path == b or b in path.parents for b in binds)


# --- the sandbox's file system --------------------------------------------------------------------------------


def test_the_fresh_tmp_comes_before_every_view_and_every_folder_of_this_python_is_shown():
    args = sandbox._binds()
    tmpfs = args.index("--tmpfs")
    assert args[tmpfs + 1] == "/tmp"
    assert tmpfs < args.index("--ro-bind"), "a view bound before the fresh /tmp would be hidden under it"
    executable = Path(sys.executable)
    while True:  # each link on the way to the interpreter, and the interpreter
        assert _shown(args, Path(os.path.abspath(executable.parent))), executable
        if not executable.is_symlink():
            break
        executable = executable.parent / os.readlink(executable)
    for path in (sys.prefix, sys.base_prefix, Path(sys.executable).resolve(), Path(lib.__file__).parent):
        assert _shown(args, Path(path)) and _shown(args, Path(path).resolve()), path
    inside = [Path(args[i + 2]) for i, a in enumerate(args) if a == "--ro-bind"]
    assert len(inside) == len(set(inside)) and not any(a in b.parents for a in inside for b in inside), (
        "each folder is bound once, and nothing is bound inside a view"
    )


# --- a class graded from a checkout under /tmp ----------------------------------------------------------------


def _pyenv_python():
    """A pyenv interpreter of this Python's version (its site-packages fit this environment's), or None."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    version = "{}.{}".format(*sys.version_info[:2])
    found = sorted(pyenv.glob(f"versions/{version}.*/bin/python{version}"))
    exact = [p for p in found if p.parent.parent.name == "{}.{}.{}".format(*sys.version_info[:3])]
    return (exact or found or [None])[0]


def _checkout(interpreter):
    """A checkout in a new folder of ``/tmp``: a copy of ``lib`` and a venv whose ``python`` links to ``interpreter``.

    The venv's site-packages is a link to this environment's (so that it has nbclient, ipykernel, numpy), as
    Homebrew's Python links its site-packages elsewhere; a file beside them the sandbox must not show.
    """
    folder = Path(tempfile.mkdtemp(prefix="grade-checkout-", dir="/tmp"))
    shutil.copytree(ROOT / "lib", folder / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    venv = folder / ".venv"
    version = "{}.{}".format(*sys.version_info[:2])
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / f"python{version}").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(interpreter)
    packages = Path(nbformat.__file__).resolve().parents[1]
    (venv / "lib" / f"python{version}" / "site-packages").symlink_to(packages)
    home = Path(interpreter).resolve().parent
    (venv / "pyvenv.cfg").write_text(
        f"home = {home}\ninclude-system-site-packages = false\nversion = {'.'.join(map(str, sys.version_info[:3]))}\n"
    )
    (folder / "secret.txt").write_text("the teacher's")
    return folder


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.parametrize("python", ["venv", "pyenv"])
def test_a_class_graded_from_a_checkout_under_tmp(python, tmp_path):
    """``venv``: the checkout's venv links to this environment's python; ``pyenv``: straight to a pyenv interpreter."""
    interpreter = Path(sys.executable) if python == "venv" else _pyenv_python()
    if interpreter is None:
        pytest.skip(f"no pyenv interpreter of Python {sys.version_info[0]}.{sys.version_info[1]} in ~/.pyenv/versions")
    folder = _checkout(interpreter)
    try:
        venv_python = str(folder / ".venv" / "bin" / "python")
        secret = tmp_path / "grader-secret.txt"  # the grader's /tmp (pytest's folder is there)
        secret.write_text("the teacher's")
        checks = (
            "import os, sys, lib\n"
            f"assert lib.__file__.startswith({str(folder)!r}), lib.__file__\n"
            f"assert sys.executable == {venv_python!r}, sys.executable\n"
            f"assert sorted(os.listdir({str(folder)!r})) == ['.venv', 'lib'], os.listdir({str(folder)!r})\n"
            f"assert not os.path.exists({str(secret)!r}), 'the grader\\'s /tmp shows'\n"
            "assert os.environ['HOME'] == '/tmp/home'\n"
            "os.makedirs(os.environ['HOME'], exist_ok=True)\n"  # the fresh /tmp is writable, and HOME can be made there
            "open(os.path.join(os.environ['HOME'], 'scratch.txt'), 'w').write('the student')\n"
            'check("softmax_stable", None)'
        )
        (tmp_path / "class").mkdir()
        _write(tmp_path / "class" / "ada.ipynb", MATVEC + 'check("matvec", matvec)', checks)
        out = tmp_path / "grades.csv"
        command = [venv_python, "-m", "lib.grade", "class", "--out", str(out), "--cell-timeout", "60"]
        env = dict(os.environ, PYTHONPATH=str(folder), JUPYTER_PREFER_ENV_PATH="1")
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        rows = grade.read_csv(out)
        # softmax_stable ⏳, not error: every assert of the second cell held (else its message says which failed)
        assert [(r.exercise, r.verdict) for r in rows] == [
            ("matvec", "✅"),
            ("softmax_stable", "⏳"),
            ("softmax_temperature", "⏳"),
            ("one_hot", "⏳"),
        ], [r.message for r in rows]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- a sandbox that cannot start ------------------------------------------------------------------------------


@pytest.mark.bwrap
@pytest.mark.parametrize(
    "broken, said",
    [
        (["--ro-bind", "/no/such/folder", "/no/such/folder"], "bwrap: Can't find source path /no/such/folder"),
        (["--no-such-flag"], "bwrap: Unknown option --no-such-flag"),
    ],
)
def test_a_sandbox_that_cannot_start_stops_the_command_in_one_line(broken, said, tmp_path, monkeypatch, capsys):
    binds = sandbox._binds
    monkeypatch.setattr(sandbox, "_binds", lambda: [*binds(), *broken])
    nb = _write(tmp_path / "ada.ipynb", MATVEC + 'check("matvec", matvec)')
    out = tmp_path / "grades.csv"
    with pytest.raises(SystemExit) as info:
        grade.main([str(nb), "--out", str(out)])
    assert info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1, errors
    assert errors[0].startswith("python -m lib.grade: error: the sandbox cannot start, so no submission was graded: ")
    assert said in errors[0] and errors[0].endswith("(exit status 1)"), errors[0]
    assert not out.exists() and not out.with_suffix(".results").exists()


@pytest.mark.bwrap
def test_a_sandbox_that_stops_starting_mid_class_is_not_blamed_on_the_submission(tmp_path, monkeypatch, capsys):
    """The probe passes, then every sandbox fails: the first submission that runs stops the command, without rows."""
    command = sandbox.sandbox_command
    calls = []

    def breaks_after_the_probe(workdir, inner, limits, **kwargs):
        calls.append(inner)
        args = command(workdir, inner, limits, **kwargs)
        if len(calls) > 1:
            args.insert(args.index("bwrap") + 1, "--no-such-flag")
        return args

    monkeypatch.setattr(sandbox, "sandbox_command", breaks_after_the_probe)
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ada.ipynb").write_text("{ not JSON")  # graded without a sandbox: its rows come first and are kept
    _write(folder / "ben.ipynb", MATVEC + 'check("matvec", matvec)')
    out = tmp_path / "grades.csv"
    with pytest.raises(SystemExit) as info:
        grade.main([str(folder), "--out", str(out)])
    assert info.value.code == 2
    assert len(calls) == 3, "the probe, ben's sandbox, and the probe again"
    err = capsys.readouterr().err
    assert f"error: the sandbox stopped starting while grading {folder / 'ben.ipynb'}: bwrap: Unknown option" in err
    assert "ben: " not in err, "no line of rows for ben"
    assert not out.exists()
    kept = list(out.with_suffix(".results").iterdir())
    assert len(kept) == 1 and "not a notebook: invalid JSON" in kept[0].read_text(encoding="utf-8")
