"""A hostile class graded by ``python -m lib.grade`` in the bubblewrap sandbox (issue 33), every verdict asserted.

Slow (``student_execution``, ``make test-student``): 11 small notebooks of chapter ``preliminaries``, each run in
its own sandbox (about 9 s each on a quiet 2-core machine, 15-40 s on a busy one); then one notebook graded
``--unsandboxed`` and one graded by a user rather than root (bwrap in a user namespace).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from lib.classroom import grade, sandbox

EXERCISES = ["matvec", "softmax_stable", "softmax_temperature", "one_hot"]

MATVEC = """def matvec(W, x):
    if any(len(row) != len(x) for row in W):
        raise ValueError("sizes differ")
    return [sum(w * v for w, v in zip(row, x)) for row in W]
"""
WRONG = "def matvec(W, x):\n    return [0.0 for row in W]\n"

CASES = {
    # name: (cells, student metadata or None)
    "good": ([MATVEC + 'check("matvec", matvec)'], None),
    "blank": (['check("matvec", None)'], None),
    "kill_parent": (
        [
            'check("matvec", None)',
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
            MATVEC + 'check("matvec", matvec)',
        ],
        None,
    ),
    "registry": (
        [
            "import lib.exercises as ex\nfrom lib.exercises import core\n"
            "for e in list(ex.EXERCISES):\n"
            "    ex.EXERCISES[e] = core.Exercise(e, ex.EXERCISES[e].chapter, '', lambda a: None)",
            WRONG + 'check("matvec", matvec)',
        ],
        None,
    ),
    "allclose": (
        [
            "import math, numpy as np, torch\nnp.allclose = lambda *a, **k: True\n"
            "torch.allclose = lambda *a, **k: True\n"
            "math.isclose = lambda *a, **k: True\nnp.testing.assert_allclose = lambda *a, **k: None",
            WRONG + 'check("matvec", matvec)',
        ],
        None,
    ),
    "verdict_and_token": (
        [
            "import lib.exercises as ex\nex._verdict = lambda n, a: f'✅ {n}: correct.'\n"
            "secret = ''.join(In[:2])\nprint(secret)",
            WRONG + 'check("matvec", matvec)',
            # the grader's own recording: a forged 'end' record with no calls, written to the tape
            "import json, glob\nfor t in glob.glob('/grade/*.jsonl'):\n"
            "    open(t, 'a').write(json.dumps({'event': 'start', 'exercise': 'one_hot', 'answer': 'function'}) + '\\n'"
            " + json.dumps({'event': 'end', 'exercise': 'one_hot', 'calls': [], 'observed': []}) + '\\n')",
        ],
        None,
    ),
    "vandal": (
        [
            "import os\nfor top, dirs, files in os.walk('/'):\n"
            "    if top.startswith(('/proc', '/sys', '/dev')): continue\n"
            "    for f in files:\n        if f.endswith('.ipynb') and not top.startswith('/grade'):\n"
            "            try: open(os.path.join(top, f), 'w').write('{}'); os.remove(os.path.join(top, f))\n"
            "            except OSError: pass\n"
            "os.makedirs(os.path.expanduser('~/.ipython/profile_default/startup'), exist_ok=True)\n"
            "open(os.path.expanduser('~/.ipython/profile_default/startup/00.py'), 'w').write("
            "'import numpy as np\\nnp.allclose = lambda *a, **k: True\\n')",
            "import subprocess\nsubprocess.Popen(['setsid', 'sh', '-c', 'sleep 20.33; "
            'for f in $(find / -name "*.csv" 2>/dev/null); do echo hacked > $f; done\'])\n'
            "subprocess.Popen(['sleep', '600.33'])",
            'check("matvec", None)',
        ],
        None,
    ),
    "zed_after_vandal": ([WRONG + 'check("matvec", matvec)'], None),
    "=HYPERLINK(1)": (['check("matvec", None)'], None),
    "claims_good_1": ([WRONG + 'check("matvec", matvec)'], "good"),
    "claims_good_2": (['check("matvec", None)'], "good"),
}


def _write(path, cells, student):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("from lib.exercises import check")]
        + [nbformat.v4.new_code_cell(c) for c in cells]
    )
    nb.metadata["student_edition"] = {"edition": "student", "chapter": "preliminaries", "exercises": EXERCISES}
    if student:
        nb.metadata["student_edition"]["student"] = student
    nbformat.write(nb, str(path))


def _survivors(*marks):
    """The processes of this machine whose command line holds one of ``marks`` (a unique ``sleep`` duration)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or it ended while we looked
            continue
        if any(m.encode() in argv for m in marks):
            found.append((entry.name, argv))
    return found


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.student_execution
@pytest.mark.skipif(
    os.environ.get("STUDENT_EXECUTE") != "1",
    reason="grades 11 notebooks in sandboxes (about 2-3 minutes): set STUDENT_EXECUTE=1",
)
@pytest.mark.bwrap
def test_the_hostile_class_grades_in_one_run(tmp_path, capsys):
    folder = tmp_path / "class"
    folder.mkdir()
    for name, (cells, student) in CASES.items():
        _write(folder / f"{name}.ipynb", cells, student)
    (folder / ".sneaky.ipynb").write_text("{}")
    (folder / "x.ipynb").mkdir()
    (folder / "notes.txt").write_text("hello")
    before = _digests(folder)
    out = tmp_path / "grades.csv"
    start = time.perf_counter()
    assert grade.main([str(folder), "--out", str(out), "--cell-timeout", "30", "--timeout", "120"]) == 0
    seconds = time.perf_counter() - start
    written = out.read_bytes()
    print(f"{len(CASES)} submissions in {seconds:.0f} s")
    rows = grade.read_csv(out)
    got = {(r.student, r.exercise): r for r in rows}
    verdict = {k: r.verdict for k, r in got.items()}
    # the correct notebook is solved, blank ones are not attempted, every cheat is unsolved
    assert verdict[("good", "matvec")] == "✅"
    assert verdict[("blank", "matvec")] == "⏳"
    # checked as blank, then it killed its runner before its real check: crashed, not the earlier ⏳
    assert verdict[("kill_parent", "matvec")] == "error"
    assert got[("kill_parent", "matvec")].message.startswith(
        "crashed in this exercise: the submission's sandbox stopped before its run finished"
    ), got[("kill_parent", "matvec")]
    assert (
        "in cell 3 ('import os, signal'), before check(\"matvec\", ...) in cell 4"
        in got[("kill_parent", "matvec")].message
    )
    assert got[("kill_parent", "softmax_stable")].message.startswith("no cell calls")
    # the grader's checker compares the recorded values, whatever allclose the kernel had
    assert verdict[("allclose", "matvec")] == "❌"
    assert got[("allclose", "matvec")].message.startswith("for W of shape"), got[("allclose", "matvec")]
    # the kernel's patched registry or verdict function never called the function: nothing recorded, nothing solved
    for cheat in ("registry", "verdict_and_token"):
        assert verdict[(cheat, "matvec")] == "❌"
        assert "no record of your function" in got[(cheat, "matvec")].message
    assert verdict[("verdict_and_token", "one_hot")] == "❌"  # the forged record holds no call
    assert "no record of your function" in got[("verdict_and_token", "one_hot")].message
    # the vandal reached no classmate, and its start-up file reached no later kernel
    assert verdict[("vandal", "matvec")] == "⏳"
    assert verdict[("zed_after_vandal", "matvec")] == "❌"
    assert _digests(folder) == before
    # names: the file's, a disagreeing metadata name reported; a formula neutralised in the CSV
    assert verdict[("claims_good_1", "matvec")] == "❌" and verdict[("claims_good_2", "matvec")] == "⏳"
    assert "the notebook's metadata names the student 'good'" in got[("claims_good_1", "matvec")].note
    assert ("'=HYPERLINK(1)", "matvec") in got
    # every file accounted for
    reasons = {r.file.rsplit("/", 1)[-1]: r.message for r in rows if not r.exercise}
    assert reasons == {
        ".sneaky.ipynb": "not graded: a hidden file (its name starts with a dot)",
        "x.ipynb": "not graded: a folder named like a notebook, not a notebook file",
        "notes.txt": "not graded: not a .ipynb file",
    }
    assert {r.student for r in rows if r.exercise} == {n if n[0] != "=" else "'" + n for n in CASES}
    # nothing changes the CSV after the run: the vandal's setsid child (which would, 20 s later) and its leftover
    # sleep died with its sandbox (its own process namespace)
    assert _survivors("20.33", "600.33") == []
    assert out.read_bytes() == written
    # a rerun takes every result from the results folder
    capsys.readouterr()
    assert grade.main([str(folder), "--out", str(out), "--cell-timeout", "30", "--timeout", "120"]) == 0
    assert capsys.readouterr().err.count("kept from an earlier run") == len(CASES)
    assert out.read_bytes() == written


def test_without_bwrap_the_grader_refuses_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    nb = tmp_path / "a.ipynb"
    _write(nb, ['check("matvec", None)'], None)
    with pytest.raises(SystemExit) as info:
        grade.main([str(nb), "--out", str(tmp_path / "grades.csv")])
    assert info.value.code == 2
    assert "bubblewrap (bwrap) is not installed" in capsys.readouterr().err
    assert not (tmp_path / "grades.csv").exists()


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(tmp_path):
    rows = [grade.Row("=HYPERLINK(1)", "c", "e", "❌", "+1", "@x", "-f")]
    grade.write_csv(rows, tmp_path / "g.csv")
    assert grade.read_csv(tmp_path / "g.csv") == [grade.Row("'=HYPERLINK(1)", "c", "e", "❌", "'+1", "'@x", "'-f")]


def test_an_nbformat_3_notebook_is_upgraded(tmp_path):
    from nbformat.v3 import new_code_cell, new_notebook, new_worksheet, writes_json

    nb = new_notebook(worksheets=[new_worksheet(cells=[new_code_cell(input='check("matvec", None)')])])
    path = tmp_path / "old.ipynb"
    path.write_text(writes_json(nb))
    read, problem = grade._read(path)
    assert problem is None and read.metadata.orig_nbformat == 3
    assert read.cells[0].source == 'check("matvec", None)'


CHEAP = [MATVEC + 'check("matvec", matvec)']
LEFTOVERS = "import subprocess\nsubprocess.Popen(['setsid', 'sleep', '600.77'])\nsubprocess.Popen(['sleep', '600.78'])"


@pytest.mark.student_execution
@pytest.mark.skipif(os.environ.get("STUDENT_EXECUTE") != "1", reason="starts a kernel: set STUDENT_EXECUTE=1")
def test_unsandboxed_grades_in_a_child_process_and_says_so_on_every_row(tmp_path):
    nb = tmp_path / "trusted.ipynb"
    _write(nb, CHEAP, None)
    rows, seconds = grade.grade_submission(nb, cell_timeout=30, timeout=120, sandboxed=False)
    assert seconds > 0
    assert [(r.exercise, r.verdict) for r in rows] == [
        ("matvec", "✅"),
        ("softmax_stable", "⏳"),
        ("softmax_temperature", "⏳"),
        ("one_hot", "⏳"),
    ]
    assert all(r.note == grade.UNSANDBOXED for r in rows)


def _nobody_can_use_bwrap():
    probe = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bwrap", "--ro-bind", "/", "/", "true"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def _as_nobody(command, env):
    """``command`` as the user nobody (from root), seeing this Python and the book.

    A folder on their way that others may not enter (``/root``, 0700) is covered by an empty one in a mount
    namespace, with only those paths bound back into it.
    """
    import lib

    if os.geteuid() != 0:
        return command
    keep = sorted({p.resolve() for p in (Path(sys.base_prefix), Path(sys.prefix), Path(lib.__file__).parents[1])})
    closed = {}
    for path in keep:
        top = next((a for a in reversed(path.parents[:-1]) if not a.stat().st_mode & 0o001), None)
        if top is not None:
            closed.setdefault(top, []).append(path)
    outer = ["bwrap", "--dev-bind", "/", "/"]
    for top, paths in closed.items():
        outer += ["--tmpfs", str(top)]
        for path in paths:
            for parent in reversed(path.parents[: len(path.parents) - len(top.parents) - 1]):  # not 0700
                outer += ["--perms", "0755", "--dir", str(parent)]
            outer += ["--ro-bind", str(path), str(path)]
    outer += ["--clearenv", *(a for k, v in env.items() for a in ("--setenv", k, v)), "--"]
    return [*outer, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", *command]


@pytest.mark.student_execution
@pytest.mark.skipif(os.environ.get("STUDENT_EXECUTE") != "1", reason="starts a kernel: set STUDENT_EXECUTE=1")
@pytest.mark.bwrap
def test_as_a_user_the_sandbox_uses_a_user_namespace_and_no_process_outlives_it():
    """The grader run by a user (not root): bwrap makes its namespaces in a user namespace, without setpriv."""
    if os.geteuid() == 0 and not _nobody_can_use_bwrap():
        pytest.skip("this kernel does not let a user make a user namespace (kernel.unprivileged_userns_clone)")
    import lib

    folder = Path(tempfile.mkdtemp(prefix="grade-as-user-"))  # in /tmp: a user can reach it, pytest's is root's
    try:
        folder.chmod(0o777)
        nb = folder / "user.ipynb"
        _write(nb, [*CHEAP, LEFTOVERS], None)
        script = (
            "import json, os, sys\nfrom lib.classroom import grade\nassert os.geteuid() != 0\n"
            "rows, _ = grade.grade_submission(sys.argv[1], cell_timeout=30, timeout=120)\n"
            "print(json.dumps([[r.exercise, r.verdict, r.message] for r in rows]))"
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(folder),
            "PYTHONPATH": str(Path(lib.__file__).resolve().parents[1]),
            "JUPYTER_PREFER_ENV_PATH": "1",
            "LANG": "C.UTF-8",
        }
        command = _as_nobody([sys.executable, "-c", script, str(nb)], env)
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        rows = json.loads(done.stdout.strip().splitlines()[-1])
        assert [r[:2] for r in rows] == [
            ["matvec", "✅"],
            ["softmax_stable", "⏳"],
            ["softmax_temperature", "⏳"],
            ["one_hot", "⏳"],
        ], rows
        # the notebook started a sleep in its own session and a plain one: both died with the sandbox
        assert _survivors("600.77", "600.78") == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
