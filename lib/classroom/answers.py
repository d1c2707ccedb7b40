"""Record a student's answers inside the sandbox; replay them to the checkers in the grader (record and replay).

Why this design (issue 33): a verdict made inside the student's kernel can be changed by the student's code (a
patched ``numpy.allclose``, checker registry or verdict function, a stolen token). So the kernel only *records*;
the grader decides. Every checker reaches the reader's function through :func:`lib.exercises.core.call_answer`
(and the two measurements it makes besides the values through :func:`lib.exercises.core.observed`), so:

- in the sandbox, ``check(name, answer)`` runs the checker as usual (the student sees the line), with
  :data:`lib.exercises.core.ANSWER_HOOK` set to a :class:`Recorder` that stores, for each call, a digest of the
  inputs and what the function did (returned a value, raised, timed out, was still ``...``), as plain data (JSON with
  arrays as ``.npy`` bytes, never pickle), in a tape file (:func:`start_recording`);
- in the grader, :func:`replay` runs the *trusted* checker again, with a :class:`Replayer` as the hook that
  returns the recorded outcome for the same inputs. An input the tape does not hold makes the answer unsolved.

The checker is the same code in both places; no checker needed rewriting. What a student can do to the tape is
write outputs for inputs: no more than a function that returns those outputs could (including calling ``lib`` to
compute them, which a student can always do). The measurements of :func:`~lib.exercises.core.observed` (the peak
tensor memory of ``ea_linear_attention``, the training mode after ``cap_greedy_decode``) are recorded inside the
sandbox: a student set on cheating could forge them (the values themselves are still checked outside).
Answers that are not functions are recorded as plain data too (every exercise of the book asks for a function).
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import hashlib
import io
import json
import numbers
import os
import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from .. import exercises
from ..exercises import core

__all__ = [
    "encode",
    "decode",
    "digest",
    "same_random_state",
    "Recorder",
    "Replayer",
    "start_recording",
    "read_tape",
    "replay",
]

_MAX_DEPTH = 20
_TORCH_OK = (torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)


def _npy(a: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _from_npy(text: str) -> np.ndarray:
    return np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


def encode(x: Any, depth: int = 0) -> Any:
    """``x`` as JSON-able plain data that :func:`decode` turns back into an equal value of the same type.

    Numbers, strings, None, lists, tuples, dicts, numpy arrays and scalars, and tensors (their dtype kept) round-trip;
    anything else becomes ``{"opaque": type name}`` (decoded as an empty object of a class with that name).

    Args:
        x: the value.
        depth: the nesting depth so far (deeper than 20 is opaque).

    Returns:
        Plain data (every dict has one key, the tag).
    """
    if depth > _MAX_DEPTH:
        return {"opaque": type(x).__name__}
    if x is None or isinstance(x, (bool, str)):
        return {"v": x}
    if x is Ellipsis:
        return {"ellipsis": True}
    if isinstance(x, int):
        return {"int": str(int(x))}
    if isinstance(x, float):
        return {"float": repr(float(x))}  # numpy's float64 is a float whose repr is "np.float64(...)"
    if isinstance(x, torch.Tensor):
        t = x.detach().cpu()
        if t.dtype not in _TORCH_OK:  # float16, bfloat16, complex: numpy has no .npy form for all of them
            t = t.float()
        return {"tensor": _npy(t.resolve_conj().numpy()), "dtype": str(x.dtype).removeprefix("torch.")}
    if isinstance(x, np.ndarray) and x.dtype.kind in "biufc":
        return {"ndarray": _npy(x)}
    if isinstance(x, np.generic) and np.asarray(x).dtype.kind in "biufc":
        return {"npscalar": _npy(np.asarray(x))}
    if isinstance(x, (list, tuple)):
        return {type(x).__name__ if type(x) in (list, tuple) else "list": [encode(v, depth + 1) for v in x]}
    if isinstance(x, dict):
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]}
    if isinstance(x, numbers.Real):
        return {"float": repr(float(x))}
    return {"opaque": type(x).__name__}


def decode(data: Any, depth: int = 0) -> Any:
    """The value :func:`encode` made ``data`` from.

    Args:
        data: plain data from :func:`encode` (read from an untrusted tape).
        depth: the nesting depth so far.

    Returns:
        The value.

    Raises:
        ValueError: ``data`` is not what :func:`encode` writes.
    """
    if depth > _MAX_DEPTH + 1 or not isinstance(data, dict) or len(data) not in (1, 2):
        raise ValueError("not an encoded answer")
    if "v" in data and (data["v"] is None or isinstance(data["v"], (bool, str))):
        return data["v"]
    if "ellipsis" in data:
        return Ellipsis
    if isinstance(data.get("int"), str):
        return int(data["int"])
    if isinstance(data.get("float"), str):
        return float(data["float"])
    if isinstance(data.get("tensor"), str):
        t = torch.from_numpy(_from_npy(data["tensor"]).copy())
        dtype = getattr(torch, str(data.get("dtype", "")), None)
        return t.to(dtype) if isinstance(dtype, torch.dtype) else t
    if isinstance(data.get("ndarray"), str):
        return _from_npy(data["ndarray"])
    if isinstance(data.get("npscalar"), str):
        return _from_npy(data["npscalar"])[()]
    for kind in ("list", "tuple"):
        if isinstance(data.get(kind), list):
            values = [decode(v, depth + 1) for v in data[kind]]
            return values if kind == "list" else tuple(values)
    if isinstance(data.get("dict"), list):
        return {_hashable(decode(k, depth + 1)): decode(v, depth + 1) for k, v in data["dict"]}
    if isinstance(data.get("opaque"), str):
        name = data["opaque"] if data["opaque"].isidentifier() else "object"
        return type(name, (), {"__repr__": lambda self: f"<{name}>"})()
    raise ValueError("not an encoded answer")


def _hashable(key: Any) -> Any:
    try:
        hash(key)
    except TypeError:
        return repr(key)
    return key


def _digest_form(x: Any, depth: int = 0) -> Any:
    if isinstance(x, torch.nn.Module) and depth < _MAX_DEPTH:
        state = dict(x.state_dict().items())
        return {"module": type(x).__name__, "training": x.training, "state": _digest_form(state, depth + 1)}
    if isinstance(x, (list, tuple)) and depth < _MAX_DEPTH:
        return {type(x).__name__: [_digest_form(v, depth + 1) for v in x]}
    if isinstance(x, dict) and depth < _MAX_DEPTH:
        return {"dict": [[_digest_form(k, depth + 1), _digest_form(v, depth + 1)] for k, v in x.items()]}
    return encode(x, depth)


def digest(args: tuple) -> str:
    """A digest of the values of a call's arguments (the key that a recorded outcome is replayed under).

    Args:
        args: the arguments the checker passes to the reader's function.

    Returns:
        A hex SHA-256 of their plain-data form (a module: its type, training mode and weights).
    """
    text = json.dumps(_digest_form(args), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _outcome(real: Callable[..., Any], fn: Any, args: tuple, copy_args: bool) -> tuple[dict, Any, BaseException | None]:
    """Call ``real`` and return (the outcome as plain data, the value, the exception to re-raise)."""
    try:
        value = real(fn, *args, copy_args=copy_args)
    except core.AnswerRaised as err:
        e = err.original
        builtin = next((c.__name__ for c in type(e).__mro__ if getattr(builtins, c.__name__, None) is c), "Exception")
        return {"raised": type(e).__name__, "builtin": builtin, "message": str(e)}, None, err
    except core.AnswerStopped as err:
        return {"stopped": err.message}, None, err
    except core.NotSolved as err:
        return {"not_solved": err.function_name}, None, err
    except AssertionError as err:
        return {"assertion": str(err)}, None, err
    return {"value": encode(value)}, value, None


@contextlib.contextmanager
def same_random_state(name: str) -> Iterator[None]:
    """Run a check with Python's, numpy's and torch's global generators seeded from the exercise's name.

    A checker that draws its inputs without a seed of its own then draws the same inputs where the answers are
    recorded (the sandbox) and where they are replayed (the grader), so the inputs' digests match; the generators'
    states are restored afterwards (the student's notebook goes on with its own).

    Args:
        name: the exercise.

    Yields:
        Nothing.
    """
    seed = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "big")
    py_state, np_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)


class Recorder:
    """The hook of :data:`lib.exercises.core.ANSWER_HOOK` inside the sandbox: it calls and records.

    Attributes:
        calls: ``[[digest, outcome], ...]`` in the order of the calls.
        observed: ``[[what, encoded value], ...]`` in the order of the measurements.
    """

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []
        self.observed: list[list[Any]] = []

    def call(self, fn: Any, args: tuple, copy_args: bool, real: Callable[..., Any]) -> Any:
        """Call the reader's function as :func:`~lib.exercises.core.call_answer` does, and record the outcome.

        Args:
            fn: the reader's function.
            args: its arguments.
            copy_args: passed on to ``real``.
            real: the call :func:`~lib.exercises.core.call_answer` makes without a hook.

        Returns:
            What the function returned.

        Raises:
            AnswerRaised: the function raised (and the other exceptions of ``call_answer``).
        """
        key = digest(args)
        outcome, value, err = _outcome(real, fn, args, copy_args)
        self.calls.append([key, outcome])
        if err is not None:
            raise err
        return value

    def observe(self, what: str, measure: Callable[[], Any]) -> Any:
        """Measure, and record the measurement.

        Args:
            what: what is measured.
            measure: a function of no arguments that measures it.

        Returns:
            The measurement.
        """
        value = measure()
        self.observed.append([what, encode(value)])
        return value


class Replayer:
    """The hook of :data:`lib.exercises.core.ANSWER_HOOK` in the grader: it returns what the tape recorded.

    Args:
        calls: the recorded ``[[digest, outcome], ...]``.
        observed: the recorded ``[[what, value], ...]``.
    """

    def __init__(self, calls: list, observed: list) -> None:
        self.calls: dict[str, list[dict]] = {}
        for key, outcome in calls:
            self.calls.setdefault(key, []).append(outcome)
        self.seen: dict[str, int] = {}
        self.observed: dict[str, list[Any]] = {}
        for what, value in observed:
            self.observed.setdefault(what, []).append(value)
        self.measured: dict[str, int] = {}

    def call(self, fn: Any, args: tuple, copy_args: bool, real: Callable[..., Any]) -> Any:
        """The recorded outcome of the reader's function on ``args`` (raised again if it was an exception).

        Args:
            fn: the reader's function.
            args: its arguments.
            copy_args: passed on to ``real``.
            real: the call :func:`~lib.exercises.core.call_answer` makes without a hook.

        Returns:
            The recorded value.

        Raises:
            AnswerStopped: nothing was recorded for these inputs, or the function ran past its limit.
            AnswerRaised: the function raised (an exception of the recorded type and message).
            NotSolved: the function was still the starter's.
            AssertionError: it returned None.
            ValueError: a damaged record.
        """
        key = digest(args)
        outcomes = self.calls.get(key)
        if not outcomes:
            raise core.AnswerStopped(
                "the grader has no record of your function on one of the checker's inputs (the check did not run "
                "to the end in your notebook)"
            )
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        outcome = outcomes[min(n, len(outcomes) - 1)]
        if "value" in outcome:
            return decode(outcome["value"])
        if "raised" in outcome:
            base = getattr(builtins, str(outcome.get("builtin")), Exception)
            if not (isinstance(base, type) and issubclass(base, Exception)):
                base = Exception
            name = str(outcome["raised"])
            cls = base if base.__name__ == name else type(name if name.isidentifier() else "Error", (base,), {})
            try:
                original = cls(str(outcome.get("message", "")))
            except Exception:  # an exception class whose constructor wants other arguments
                original = type(name if name.isidentifier() else "Error", (Exception,), {})(outcome.get("message"))
            raise core.AnswerRaised(original)
        if "stopped" in outcome:
            raise core.AnswerStopped(str(outcome["stopped"]))
        if "not_solved" in outcome:
            raise core.NotSolved(str(outcome["not_solved"]))
        if "assertion" in outcome:
            raise AssertionError(str(outcome["assertion"]))
        raise ValueError("a damaged record")

    def observe(self, what: str, measure: Callable[[], Any]) -> Any:
        """The recorded measurement (not measured again: the reader's function is not here).

        Args:
            what: what is measured.
            measure: not called.

        Returns:
            The recorded measurement.

        Raises:
            AnswerStopped: nothing was recorded.
        """
        values = self.observed.get(what, [])
        n = self.measured.get(what, 0)
        self.measured[what] = n + 1
        if n >= len(values):
            raise core.AnswerStopped(f"the grader has no record of the {what} of your function")
        return decode(values[n])


class _RecordedFunction:
    """What the checker gets in the grader in place of the student's function (it is called through the hook)."""

    def __call__(self, *args: Any) -> Any:
        raise core.AnswerStopped("the grader has no record of this call")


def start_recording(tape: str, call_limit: float | None) -> None:
    """Run in the student's kernel, in the sandbox, before the first cell: record every ``check`` on ``tape``.

    Replaces :func:`lib.exercises.check` (the name the chapters import) by a wrapper that appends a ``start`` line
    (the exercise, and what kind of answer), runs the real ``check`` with a :class:`Recorder` (the student sees
    the usual line) and appends an ``end`` line with the recorded calls. A ``start`` without its ``end`` is a check
    that hung or stopped the kernel. Nothing here is secret: the grader trusts only values, never verdicts.

    Args:
        tape: the file the lines are appended to (JSON Lines).
        call_limit: seconds one call of the student's function may run (None: no limit).

    Returns:
        None.
    """
    import functools

    real_check = exercises.check

    def write(line: dict) -> None:
        with open(tape, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
            f.flush()
            os.fsync(f.fileno())

    @functools.wraps(real_check)
    def check(name: str, answer: Any) -> bool:
        if not (isinstance(name, str) and name in exercises.EXERCISES):
            return real_check(name, answer)
        kind = "function" if callable(answer) else "value"
        start: dict[str, Any] = {"event": "start", "exercise": name, "answer": kind}
        if kind == "value":
            start["value"] = encode(answer)
        write(start)
        recorder = Recorder()
        core.ANSWER_HOOK = recorder
        try:
            with same_random_state(name):
                ok = real_check(name, answer)
        finally:
            core.ANSWER_HOOK = None
        write({"event": "end", "exercise": name, "calls": recorder.calls, "observed": recorder.observed})
        return ok

    exercises.check = check
    core.TIME_LIMIT_S = call_limit


def read_tape(path: str | os.PathLike, limit: int = 256 * 2**20) -> list[tuple[int, dict]]:
    """The lines of a tape (untrusted: a line that is not a JSON object is skipped).

    Args:
        path: the tape; a missing file is an empty tape.
        limit: bytes read at most.

    Returns:
        ``[(line number, record), ...]``.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(limit)
    except OSError:
        return []
    records = []
    for k, line in enumerate(text.splitlines()):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict) and isinstance(record.get("exercise"), str):
            records.append((k, record))
    return records


def replay(name: str, start: dict, end: dict) -> str:
    """The line :func:`lib.exercises.check` prints for the recorded answer, decided here by the trusted checker.

    Args:
        name: the exercise.
        start: its tape's ``start`` record.
        end: the matching ``end`` record.

    Returns:
        The line (``"✅ name: correct. ..."``, ``"❌ ..."``, ``"⏳ ..."``, ``"⚠ ..."``).
    """
    if start.get("answer") == "value":
        try:
            answer = decode(start.get("value"))
        except (ValueError, RecursionError):
            answer = None
    else:
        answer = _RecordedFunction()
    calls = end.get("calls") if isinstance(end.get("calls"), list) else []
    observed = end.get("observed") if isinstance(end.get("observed"), list) else []
    calls = [c for c in calls if isinstance(c, list) and len(c) == 2 and isinstance(c[1], dict)]
    observed = [o for o in observed if isinstance(o, list) and len(o) == 2]
    saved = core.ANSWER_HOOK, core.TIME_LIMIT_S
    core.ANSWER_HOOK = Replayer(calls, observed)
    try:
        with contextlib.redirect_stdout(io.StringIO()), same_random_state(name):
            exercises.check(name, answer)
    finally:
        core.ANSWER_HOOK, core.TIME_LIMIT_S = saved
    line = exercises.RESULTS.pop(name, "")
    return line
