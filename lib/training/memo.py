"""A content-addressed store of finished training runs, for the test suite and the student edition.

When the environment variable ``ATTENTION_BOOK_TRAIN_CACHE`` (``lib.training.TRAIN_CACHE_ENV``) names a folder,
``lib.training.train`` keeps each step-budgeted run it finishes there, and a later call with the same model,
batches, settings, functions and library code restores it (weights, result, random states, log lines) instead
of training again: the student edition, executed after the chapters, does not train the chapters' models a
second time. Unset, the default for readers, every call trains.

Infrastructure: only ``lib.training.loop`` imports this module (an import-linter contract), with one call when
a run starts (:meth:`TrainMemo.open`) and one when it ends (:meth:`TrainMemo.save`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pickle
import types
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..files import atomic_torch_save
from .recipe import TrainConfig, TrainResult
from .resume import rng_state, set_rng_state

__all__ = ["TrainMemo"]

_LIB = Path(__file__).resolve().parents[1]


class TrainMemo:
    """The kept run of one call of ``train``: restored at the start when it was kept, kept at the end if not.

    The file's name is a SHA-256 digest of everything the run depends on: the model's class, its settings (the
    plain attributes of every submodule, which equal weights do not show: a dropout rate, scaled or unscaled
    scores) and its initial weights, the training settings, the first epoch's batches, the code of ``loss_fn`` and
    ``evaluate`` and the values they reach (closures, defaults, globals), the source of every module of ``lib``
    and ``lib.training`` (the model, the loop, the data code), torch's version, its number of threads and the
    device. Calling ``train`` again with all of these equal gives back the trained weights and the last step's
    gradients, the result, the random states the run ended with and its log lines, instead of training again.
    Only step-budgeted runs are kept (with a minutes budget the run depends on the machine's speed), and not a
    run that changed what its functions reach (a loss recorded into a list): restoring would not repeat that.

    Args:
        log: the run's log.
        path: the kept run's file, or None for a memo that keeps nothing.
        functions: ``loss_fn`` and ``evaluate``.
        reachable: the digest of what they reach before the run (did the run change it?).

    Attributes:
        kept: the restored result when the run was kept, else None.
        log: the log to train with: ``log``, also recording each line when the run is to be kept.
    """

    def __init__(
        self,
        log: Callable[[str], Any],
        path: Path | None = None,
        functions: tuple[Callable[..., Any] | None, ...] = (),
        reachable: str = "",
    ) -> None:
        self.path, self.functions, self.reachable = path, functions, reachable
        self.kept: TrainResult | None = None
        self.lines: list[str] = []
        self.log = log if path is None else _recording(log, self.lines)

    @classmethod
    def open(
        cls,
        folder: str | None,
        model: nn.Module,
        batches: Callable[[int], Iterable[Any]],
        config: TrainConfig,
        functions: tuple[Callable[..., Any] | None, ...],
        device: torch.device,
        log: Callable[[str], Any],
    ) -> TrainMemo:
        """The memo of this run, with the kept run restored into ``model``, the random states and ``log``.

        Args:
            folder: where runs are kept; None or empty: nowhere (the memo keeps nothing).
            model: the model, before training.
            batches: the run's ``batches(epoch)``.
            config: the run's settings; a minutes budget keeps nothing.
            functions: ``loss_fn`` and ``evaluate``.
            device: the training device.
            log: the run's log, given the kept run's lines when it is restored.

        Returns:
            A :class:`TrainMemo`; its ``kept`` is the restored result, or None when the run must train.
        """
        if not folder or config.minutes is not None or config.max_steps is None:
            return cls(log)
        h = hashlib.sha256(b"train-memo 1")
        for source in sorted([*_LIB.glob("*.py"), *_LIB.glob("training/*.py")]):
            h.update(source.relative_to(_LIB).as_posix().encode() + source.read_bytes())
        h.update(f"{torch.__version__}|{torch.get_num_threads()}|{device}|{type(model).__qualname__}".encode())
        h.update(json.dumps(config.to_dict(), sort_keys=True, default=repr).encode())
        _settings_digest(h, model)
        _digest(h, model.state_dict())
        for fn in functions:
            _code_digest(h, fn)
        reachable = _reachable_digest(functions)
        h.update(reachable.encode())
        _digest(h, list(batches(0)))
        memo = cls(log, Path(folder) / f"train-{h.hexdigest()[:24]}.pt", functions, reachable)
        memo.kept = memo._load(model, device, log)
        return memo

    def _load(self, model: nn.Module, device: torch.device, log: Callable[[str], Any]) -> TrainResult | None:
        """The kept run, restored into ``model`` (weights, eval mode), the random states and ``log``; None if none."""
        if self.path is None or not self.path.is_file():
            return None
        try:
            saved = torch.load(self.path, map_location="cpu", weights_only=True)
            model.to(device).load_state_dict(saved["model"])
            params = dict(model.named_parameters())
            for name, grad in saved["grads"].items():  # the last step's gradients, as training leaves them
                params[name].grad = grad.to(device)
            result = TrainResult(**saved["result"])
            set_rng_state(saved["rng"], device, stacklevel=5)
            lines = list(saved["log"])
        except (OSError, EOFError, RuntimeError, pickle.UnpicklingError, KeyError, TypeError) as err:
            warnings.warn(f"the kept training run {self.path} could not be read ({err}); training again", stacklevel=4)
            return None
        for line in lines:
            log(line)
        model.eval()
        return result

    def save(self, model: nn.Module, result: TrainResult, device: torch.device) -> None:
        """Keep the finished run (an unwritable folder only costs a new training next time).

        Not kept when the run changed something its ``loss_fn`` or ``evaluate`` reach (e.g. a loss recorded into a
        list): restoring the weights would not repeat that. A memo that keeps nothing does nothing.

        Args:
            model: the trained model.
            result: the run's result.
            device: the training device, whose random generator is kept.
        """
        if self.path is None or _reachable_digest(self.functions) != self.reachable:
            return
        grads = {name: p.grad.detach().cpu() for name, p in model.named_parameters() if p.grad is not None}
        state = {
            "model": model.state_dict(),
            "grads": grads,
            "result": asdict(result),
            "rng": rng_state(device),
            "log": self.lines,
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_torch_save(state, self.path)
        except OSError as err:
            warnings.warn(f"could not keep the training run in {self.path} ({err})", stacklevel=3)


_PLAIN = (bool, int, float, str, type(None))


def _settings_digest(h: Any, model: nn.Module) -> None:
    """Feed ``h`` the settings that a model's weights do not show: for every submodule, its class and its plain
    attributes (numbers, strings, flags and dataclass configs such as a ``config``), e.g. the dropout rate or
    whether dot-product scores are scaled, which two models with equal weights can differ in."""
    for name, module in model.named_modules():
        plain = sorted(
            (key, repr(value))
            for key, value in vars(module).items()
            if not key.startswith("_")
            and key != "training"
            and (isinstance(value, _PLAIN) or (dataclasses.is_dataclass(value) and not isinstance(value, type)))
        )
        h.update(f"M{name}|{type(module).__qualname__}|{plain}".encode())


def _digest(h: Any, obj: Any) -> None:
    """Feed ``h`` with the content of ``obj``: tensors by their bytes, containers and dataclasses by their items."""
    if isinstance(obj, Tensor):
        t = obj.detach().cpu().contiguous().reshape(-1)
        h.update(f"T{t.dtype}{tuple(obj.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(type(obj).__qualname__.encode())
        for f in dataclasses.fields(obj):
            _digest(h, getattr(obj, f.name))
    elif isinstance(obj, dict):
        h.update(f"D{len(obj)}".encode())
        for k in obj:
            h.update(repr(k).encode())
            _digest(h, obj[k])
    elif isinstance(obj, (list, tuple)):
        h.update(f"L{len(obj)}".encode())
        if all(isinstance(x, (int, float, str, bool)) or x is None for x in obj):
            h.update(repr(obj).encode())
        else:
            for x in obj:
                _digest(h, x)
    else:  # numbers, strings, None; other objects by their repr (an address in it only makes the run train again)
        h.update(repr(obj).encode())


def _reachable_digest(functions: tuple[Callable[..., Any] | None, ...]) -> str:
    """A digest of the values that ``functions`` reach: the contents of their closures, defaults and partial
    arguments, and the plain or container globals their code names (tensors by their bytes, models by their
    weights), following the functions among them. Two runs whose loss or evaluation captures different data
    differ here; a run that appends to a captured list changes it."""
    h = hashlib.sha256()
    seen: set[int] = set()
    stack: list[Any] = [fn for fn in functions if fn is not None]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        values: list[Any] = []
        if isinstance(fn, functools.partial):
            values += [fn.func, *fn.args, *fn.keywords.values()]
        fn = getattr(fn, "__func__", fn)  # a bound method: its function
        code = getattr(fn, "__code__", None)
        if code is not None:
            values += [cell.cell_contents for cell in fn.__closure__ or () if _cell_filled(cell)]
            values += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
            names = set()
            codes = [code]
            while codes:
                c = codes.pop()
                names.update(c.co_names)
                codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
            module_globals = getattr(fn, "__globals__", {})
            values += [module_globals[n] for n in sorted(names) if n in module_globals]
        for value in values:
            if callable(value) and not isinstance(value, (type, nn.Module)):
                h.update(b"F")
                _code_digest(h, value)
                stack.append(value)
            elif isinstance(value, nn.Module):
                _settings_digest(h, value)
                _digest(h, value.state_dict())
            elif isinstance(value, (Tensor, list, tuple, dict, set, *_PLAIN)) or (
                dataclasses.is_dataclass(value) and not isinstance(value, type)
            ):
                _digest(h, sorted(value, key=repr) if isinstance(value, set) else value)
            # modules, classes and other objects: their code is lib's (digested) or the caller's own
    return h.hexdigest()


def _cell_filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def _code_digest(h: Any, fn: Callable[..., Any] | None) -> None:
    """Feed ``h`` with what identifies ``fn``: its qualified name and the bytecode of it and of its nested code."""
    h.update(f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}".encode())
    stack = [fn.__code__] if hasattr(fn, "__code__") else []
    while stack:
        code = stack.pop()
        h.update(code.co_code + repr(code.co_names).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                stack.append(const)
            else:
                h.update(repr(const).encode())


def _recording(log: Callable[[str], Any], lines: list[str]) -> Callable[[str], Any]:
    """``log``, also appending each line to ``lines``."""

    def record(line: str) -> Any:
        lines.append(line)
        return log(line)

    return record
