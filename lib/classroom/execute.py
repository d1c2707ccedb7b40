"""Execute a notebook cell by cell with nbclient, with limits per cell and per notebook (the grader's runner).

:mod:`lib.classroom.sandbox` runs :func:`_execute` inside the sandbox; :mod:`lib.classroom.grade` reads the
:class:`_Run` it leaves (through the sandbox's ``run.json``).
"""

from __future__ import annotations

import copy
import math
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__: list[str] = []


@dataclass
class _Run:
    """What executing a notebook left: its cells (with outputs), which ran, where it stopped, the records."""

    cells: list[Any]
    ran: set[int]
    stopped: str | None  # why the cells after `stopped_at` did not run
    stopped_at: int | None
    cut_by_deadline: set[int]  # cells whose limit was the time the notebook had left, not --cell-timeout
    records: list[tuple[int, dict]]
    setup_error: str | None
    seconds: float
    timeout: float


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _error_of(cell: Any) -> dict | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def _execute(
    nb: Any,
    *,
    cell_timeout: float,
    timeout: float,
    kernel: str,
    setup_source: str,
    after_cell: Any = None,
) -> _Run:
    """Execute ``nb`` (an nbformat notebook, changed in place) after the hidden set-up cell ``setup_source``.

    The sandbox's runner passes the cell that records the answers on a tape (:mod:`lib.classroom.answers`);
    ``after_cell(i)`` is called after each code cell ran (or stopped the run).
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    setup = nbformat.v4.new_code_cell(setup_source)
    cells = list(nb.cells)
    for cell in cells:
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    run_nb = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.get("metadata", {})), cells=[setup, *cells])
    workdir = tempfile.mkdtemp(prefix="lib-grade-")
    env = dict(os.environ, PYTHONHASHSEED="0")
    client = NotebookClient(
        run_nb,
        timeout=max(1, math.ceil(cell_timeout)),
        kernel_name=kernel,
        allow_errors=True,
        interrupt_on_timeout=True,
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": workdir}},
    )
    ran: set[int] = set()
    cut_by_deadline: set[int] = set()
    stopped, stopped_at, setup_error = None, None, None
    killed = threading.Event()
    start = time.monotonic()
    deadline = start + timeout
    watchdog = None
    try:
        with client.setup_kernel(env=env, cwd=workdir):
            process = getattr(getattr(client.km, "provisioner", None), "process", None)
            if process is not None:  # the last resort: a cell that an interrupt does not stop

                def kill() -> None:
                    killed.set()
                    process.kill()

                watchdog = threading.Timer(timeout + cell_timeout + 10, kill)
                watchdog.daemon = True
                watchdog.start()
            client.execute_cell(setup, 0)
            deadline = time.monotonic() + timeout  # the student's cells get the whole limit
            err = _error_of(setup)
            if err is not None:
                setup_error = f"{err.get('ename')}: {_first_line(str(err.get('evalue', '')))}"
            for i, cell in enumerate(cells):
                if setup_error or cell.get("cell_type") != "code":
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    stopped, stopped_at = f"the notebook ran past its limit of {timeout:g} s", i
                    break
                if left < cell_timeout:
                    cut_by_deadline.add(i)
                client.timeout = max(1, math.ceil(min(cell_timeout, left)))
                try:
                    client.execute_cell(cell, i + 1)
                except DeadKernelError:
                    if after_cell is not None:
                        after_cell(i)
                    ran.add(i)
                    if killed.is_set():
                        stopped = f"the notebook ran past its limit of {timeout:g} s and its kernel was stopped"
                    else:
                        stopped = "the kernel stopped (exit, os._exit, a crash or out of memory)"
                    stopped_at = i
                    break
                except Exception as err:  # broad on purpose: whatever nbclient raises, the others are graded
                    if after_cell is not None:
                        after_cell(i)
                    ran.add(i)
                    stopped = f"the grader could not run a cell ({type(err).__name__}: {_first_line(str(err))})"
                    stopped_at = i
                    break
                ran.add(i)
                if after_cell is not None:
                    after_cell(i)
    except Exception as err:  # broad on purpose: a kernel that does not start must not stop the class's grading
        if not ran and not stopped:
            setup_error = f"the kernel failed ({type(err).__name__}: {_first_line(str(err))})"
    finally:
        if watchdog is not None:
            watchdog.cancel()
        shutil.rmtree(workdir, ignore_errors=True)
    # the records of the answers are on the tape (lib.classroom.answers), read by the grader outside the sandbox
    return _Run(cells, ran, stopped, stopped_at, cut_by_deadline, [], setup_error, time.monotonic() - start, timeout)
