"""Writing files so that nothing is lost: atomic replacement, flushed to disk, a plain message when the disk is full.

A file is written to a unique temporary file in the same folder, flushed and ``fsync``-ed, given ordinary
permissions (0666 minus the umask, like ``open``), and only then renamed over the target with ``os.replace``,
which is atomic on POSIX and Windows. A crash, a full disk or a second process writing the same file therefore
leaves either the old file or the new one, never a fragment; two writers never share a temporary file.

This module imports nothing from ``lib`` (only torch, for :func:`atomic_torch_save`): training, run folders and
the experiment cache use it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import torch

__all__ = ["atomic_write", "atomic_write_text", "atomic_torch_save", "sha256_file"]


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
    return atomic_write(path, lambda f: torch.save(obj, f))


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
