"""Run one submitted notebook in a bubblewrap sandbox; the grader (:mod:`lib.classroom.grade`) reads what it left.

Each submission runs as ``prlimit ... bwrap ... python -m lib.classroom.sandbox`` (:func:`sandbox_command`): the
whole execution (nbclient and the student's kernel) happens inside `bubblewrap <https://github.com/containers/
bubblewrap>`_ with its own process namespace (``--unshare-pid``: it sees and can signal only its own processes,
and all of them die with the sandbox: ``--die-with-parent``), no network (``--unshare-net``), a new terminal
session (``--new-session``), a fresh ``HOME`` and ``/tmp`` (so no IPython start-up file survives a kernel), and
read-only views of the system's ``/usr``, the Python installation, ``lib`` and the data (the models folder,
``MULTI30K_DIR``). It sees nothing else: not the submissions folder, not the grader's CSV. Its only writable folder
(``/grade``) holds a private copy of its own notebook, the tape of its answers (:mod:`lib.classroom.answers`) and
the summary of the run (``run.json``). When the grader runs as root the sandbox runs as ``nobody``
(``setpriv``), so that the process limit applies. ``prlimit`` limits its memory (address space), processes, CPU
time, file size and open files; the grader also kills it after the notebook's time limit and a margin.

Without bubblewrap (macOS, Windows, a machine without the package) the grader refuses in one line, unless told
``--unsandboxed``: then the same runner runs in a child process (a kernel can still read the teacher's files there),
and every row says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Limits", "SandboxError", "bwrap_path", "sandbox_command", "probe", "run_notebook", "MISSING"]

#: The one line the grader prints where bubblewrap is missing.
MISSING = (
    "bubblewrap (bwrap) is not installed, so submissions cannot run in a sandbox: install it (Debian/Ubuntu: "
    "apt-get install bubblewrap; make does it as root) or pass --unsandboxed to run them without one (only for "
    "notebooks you trust)"
)
_INSIDE = "/grade"
_NOBODY = 65534
_PROBE_S = 60


class SandboxError(RuntimeError):
    """The sandbox itself cannot start (no submission's doing); the message says why in one line."""


@dataclass(frozen=True)
class Limits:
    """What one submission may use.

    Attributes:
        cell_timeout: seconds per cell.
        timeout: seconds for the whole notebook.
        call_timeout: seconds per call of the student's function by a checker.
        memory: bytes of address space per process.
        processes: processes and threads at once (beyond those the sandbox's user already has).
        file_size: bytes per file written.
    """

    cell_timeout: float = 120.0
    timeout: float = 900.0
    call_timeout: float | None = 20.0
    memory: int = 8 * 2**30
    processes: int = 512
    file_size: int = 256 * 2**20


def bwrap_path() -> str | None:
    """Where ``bwrap`` is.

    Returns:
        Its path, or None where it is not installed.
    """
    return shutil.which("bwrap")


def _user_processes(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


def _python_paths() -> list[Path]:
    """The folders of this Python: its environment, its installation, its site-packages, and the folder of each link
    on the way from ``sys.executable`` to the interpreter (a venv's ``bin/python`` links to a pyenv, conda or uv
    interpreter elsewhere)."""
    import site

    paths = [Path(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)]
    paths += [Path(p) for p in site.getsitepackages()]
    executable = Path(sys.executable)
    for _ in range(40):  # at most this many links: a loop of links ends here
        paths.append(executable.parent)
        if not executable.is_symlink():
            break
        executable = executable.parent / os.readlink(executable)
    return paths


def _binds() -> list[str]:
    """bwrap's arguments for the file system: a fresh ``/proc``, ``/dev`` and ``/tmp``, then the read-only views of
    the system, Python, ``lib`` and the data, each at the path it is used by and, where links lead elsewhere, at the
    path they lead to.

    The fresh ``/tmp`` comes first: a view under ``/tmp`` (a checkout or a Python there) is bound on top of it, and
    nothing else of the grader's ``/tmp`` shows.
    """
    import lib

    args = ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(512 * 2**20), "--tmpfs", "/tmp"]
    shown: list[Path] = []  # what the sandbox already shows: nothing is bound under it again
    views: dict[Path, Path] = {}  # where a view shows inside -> what it shows

    def ro(path: Path) -> None:
        try:
            real = path.resolve()
            if not real.exists():
                return
        except OSError:  # a folder on the way that the grading user may not enter: nothing to show of it
            return
        views.setdefault(real, real)
        views.setdefault(Path(os.path.abspath(path)), real)

    for top in ("usr", "bin", "sbin", "lib", "lib32", "lib64"):
        p = Path("/") / top
        if p.is_symlink():
            args.extend(["--symlink", os.readlink(p), str(p)])
            shown.append(p)
        elif p.is_dir():
            ro(p)
    for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "localtime",
                 "ssl", "alternatives", "fonts", "mime.types", "hosts"):  # fmt: skip
        ro(Path("/etc") / name)
    for p in _python_paths():
        ro(p)
    package = Path(lib.__file__).parent
    ro(package)
    ro(package.parent / "models")
    ro(package.resolve().parent / "models")
    data = os.environ.get("MULTI30K_DIR")
    if data:
        ro(Path(data))
    try:
        import platformdirs

        ro(Path(platformdirs.user_cache_dir("attention-book")))
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        pass
    made = {Path("/"), Path("/tmp")}
    for inside, real in sorted(views.items()):  # a folder before what is in it
        if any(inside == s or s in inside.parents for s in shown):
            continue
        for parent in reversed(inside.parents):
            if parent not in made:
                made.add(parent)
                args.extend(["--perms", "0755", "--dir", str(parent)])
        shown.append(inside)
        args.extend(["--ro-bind", str(real), str(inside)])
    return args


def sandbox_command(workdir: Path, inner: list[str], limits: Limits, *, sandboxed: bool = True) -> list[str]:
    """The command that runs ``inner`` in the sandbox, with ``workdir`` as its only writable folder (``/grade``).

    Args:
        workdir: the submission's private folder (its notebook copy; the tape and ``run.json`` are written there).
        inner: the command to run inside (``python -m lib.classroom.sandbox ...``).
        limits: the limits.
        sandboxed: False: ``inner`` as it is under ``prlimit`` (``--unsandboxed``).

    Returns:
        The argument list.
    """
    import lib

    root = Path(lib.__file__).resolve().parents[1]
    as_root = os.geteuid() == 0
    uid = _NOBODY if (as_root and sandboxed) else os.geteuid()
    nproc = _user_processes(uid) + limits.processes
    cpu = int(limits.timeout + limits.cell_timeout + 60)
    prlimit = [
        "prlimit",
        f"--as={limits.memory}",
        f"--nproc={nproc}",
        f"--cpu={cpu}",
        f"--fsize={limits.file_size}",
        "--core=0",
        "--nofile=1024",
        "--",
    ]
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp/home" if sandboxed else str(workdir / "home"),
        "PYTHONPATH": str(root),
        "PYTHONHASHSEED": "0",
        "JUPYTER_PREFER_ENV_PATH": "1",
        "MPLBACKEND": "Agg",
        "LANG": "C.UTF-8",
    }
    for key in ("MULTI30K_DIR", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TZ"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    if not sandboxed:
        return [*prlimit, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *inner]
    args = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--new-session", "--die-with-parent", "--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    args += _binds()
    args += ["--bind", str(workdir), _INSIDE, "--chdir", f"{_INSIDE}/work"]
    if as_root:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--"]
        args += ["setpriv", f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups", "--inh-caps=-all"]
        args += ["--bounding-set=-all"]
    else:
        args += ["--"]
    return [*prlimit, *args, *inner]


def _workdir(sandboxed: bool) -> Path:
    """A fresh private folder for one sandbox (with ``work`` and ``home``), owned by the user the sandbox runs as."""
    workdir = Path(tempfile.mkdtemp(prefix="lib-grade-"))
    (workdir / "work").mkdir()
    (workdir / "home").mkdir()
    if os.geteuid() == 0 and sandboxed:
        for p in (workdir, workdir / "work", workdir / "home"):
            os.chown(p, _NOBODY, _NOBODY)
    return workdir


def probe(*, sandboxed: bool = True) -> str | None:
    """Start one sandbox with nothing of a student's in it: its Python imports the runner and prints ``ok``.

    The grader runs it before the first submission, and again when a submission's sandbox stopped before its runner
    wrote anything: it tells a sandbox that cannot start (a path bound into it that is missing, a flag the kernel
    refuses) from a notebook that killed its runner.

    Args:
        sandboxed: False: the runner without bubblewrap (``--unsandboxed``).

    Returns:
        None when it printed ``ok``; else why not, in one line: the last line bwrap, setpriv or Python wrote, and
        the exit status.
    """
    workdir = _workdir(sandboxed)
    inner = [sys.executable, "-c", "import lib.classroom.sandbox; print('ok')"]
    command = sandbox_command(workdir, inner, Limits(), sandboxed=sandboxed)
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_PROBE_S,
            cwd=str(workdir / "work") if not sandboxed else None,
        )
    except OSError as err:
        return f"cannot run {command[0]}: {err.strerror or err}"
    except subprocess.TimeoutExpired:
        return f"it printed nothing in {_PROBE_S} s"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if done.returncode == 0 and done.stdout.strip() == "ok":
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    said = lines[-1][:300] if lines else f"it printed {done.stdout.strip()[:100]!r}"
    return f"{said} (exit status {done.returncode})"


def run_notebook(
    nb: Any, limits: Limits, *, sandboxed: bool = True, kernel: str = "python3", network: bool = False
) -> dict[str, Any]:
    """Execute ``nb`` (an nbformat notebook) in a fresh sandbox and return what it left.

    Args:
        nb: the notebook (written to the sandbox's private folder as its only notebook).
        limits: the limits.
        sandboxed: False: without bubblewrap (``--unsandboxed``).
        kernel: the Jupyter kernel's name.
        network: without the sandbox, allow network connections (the sandbox never has a network).

    Returns:
        ``{"run": the runner's summary (``run.json``) or None when the sandbox stopped before writing it,
        "tape": the tape's path (read it before the folder goes: see ``cleanup``), "seconds": wall time,
        "exit": the sandbox's exit status, "log": the end of its stderr, "cleanup": a function that removes the
        folder}``.
    """
    import nbformat

    workdir = _workdir(sandboxed)
    nbformat.write(nb, str(workdir / "submission.ipynb"))
    if os.geteuid() == 0 and sandboxed:
        os.chown(workdir / "submission.ipynb", _NOBODY, _NOBODY)
    base = _INSIDE if sandboxed else str(workdir)
    spec = {
        "notebook": f"{base}/submission.ipynb",
        "tape": f"{base}/tape.jsonl",
        "out": f"{base}/run.json",
        "cell_timeout": limits.cell_timeout,
        "timeout": limits.timeout,
        "call_timeout": limits.call_timeout,
        "kernel": kernel,
        "refuse_network": not sandboxed and not network,
    }
    inner = [sys.executable, "-m", "lib.classroom.sandbox", json.dumps(spec)]
    command = sandbox_command(workdir, inner, limits, sandboxed=sandboxed)
    start = time.monotonic()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=str(workdir / "work") if not sandboxed else None,
        )
        try:
            code = process.wait(timeout=limits.timeout + limits.cell_timeout + 90)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - 4000))
        tail = log.read().decode("utf-8", "replace")
    seconds = time.monotonic() - start
    run = None
    try:
        with open(workdir / "run.json", encoding="utf-8") as f:
            run = json.loads(f.read(64 * 2**20))
        if not isinstance(run, dict):
            run = None
    except (OSError, ValueError, RecursionError):
        run = None
    return {
        "run": run,
        "tape": workdir / "tape.jsonl",
        "seconds": seconds,
        "exit": code,
        "log": tail,
        "cleanup": lambda: shutil.rmtree(workdir, ignore_errors=True),
    }


def _errors(cells: list[Any], indices: Any) -> dict[str, dict[str, str]]:
    """The error output of each of the cells ``indices`` that has one, as ``run.json`` holds it."""
    errors = {}
    for i in indices:
        err = next((o for o in cells[i].get("outputs", []) if o.get("output_type") == "error"), None)
        if err is not None:
            errors[str(i)] = {"ename": str(err.get("ename", "")), "evalue": str(err.get("evalue", ""))[:2000]}
    return errors


def _inside(spec: dict[str, Any]) -> None:
    """The runner inside the sandbox: execute the notebook, write ``run.json`` (cells' errors, where it stopped).

    ``run.json`` is also written after every cell, with ``"finished": false``: when the kernel kills this runner
    (and so the sandbox), the grader still knows which cells ran and which cell each tape line came from.
    """
    import nbformat

    from ..files import atomic_write_text
    from .execute import _execute

    nb = nbformat.read(spec["notebook"], as_version=4)
    setup = (
        "import lib.classroom.answers\n"
        f"lib.classroom.answers.start_recording({spec['tape']!r}, {spec['call_timeout']!r})"
    )
    if spec.get("refuse_network"):  # no network namespace without the sandbox: the guard of lib.classroom.grade
        setup += "\nimport lib.classroom.grade\nlib.classroom.grade._refuse_network()"
    tape_lines: list[list[int]] = []
    done: list[int] = []
    start = time.monotonic()

    def after_cell(i: int) -> None:
        try:
            with open(spec["tape"], "rb") as f:
                tape_lines.append([i, f.read().count(b"\n")])
        except OSError:
            tape_lines.append([i, 0])
        done.append(i)
        progress = {
            "finished": False,
            "ran": done,
            "errors": _errors(nb.cells, done),
            "tape_lines": tape_lines,
            "seconds": time.monotonic() - start,
        }
        atomic_write_text(spec["out"], json.dumps(progress))

    run = _execute(
        nb,
        cell_timeout=spec["cell_timeout"],
        timeout=spec["timeout"],
        kernel=spec["kernel"],
        setup_source=setup,
        after_cell=after_cell,
    )
    summary = {
        "finished": True,
        "ran": sorted(run.ran),
        "stopped": run.stopped,
        "stopped_at": run.stopped_at,
        "cut_by_deadline": sorted(run.cut_by_deadline),
        "setup_error": run.setup_error,
        "seconds": run.seconds,
        "errors": _errors(run.cells, range(len(run.cells))),
        "tape_lines": tape_lines,
    }
    atomic_write_text(spec["out"], json.dumps(summary))


if __name__ == "__main__":
    _inside(json.loads(sys.argv[1]))
