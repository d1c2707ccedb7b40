"""What attention costs: FLOPs, bytes of the weights, wall-clock time and peak tensor memory.

Scaled dot-product attention over ``n`` keys computes an ``n × n`` matrix of scores per head, so its
work grows as ``O(n² · d_k)`` and the weights it returns take ``O(n²)`` memory. This module counts the
first two exactly (:func:`attention_flops`, :func:`attention_weight_bytes`) and measures the other two on
the machine it runs on (:func:`median_ms`, :func:`peak_tensor_bytes`); :func:`attention_cost` does all of
it for a list of sequence lengths, comparing ``lib``'s explicit attention with torch's fused kernel.
The chapter "Self-attention" and ``bench/attention_cost.py`` use it.

Units: time in milliseconds (ms), memory in bytes (B; 1 MiB = 2**20 B), work in floating-point operations
(FLOPs; one multiply-add = 2 FLOPs).

Source: Vaswani et al. 2017, §4 and Table 1 (self-attention: O(n² · d) operations per layer).
"""

from __future__ import annotations

import functools
import itertools
import statistics
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from .attention import scaled_dot_product_attention
from .efficient import linear_attention, lsh_attention, performer_attention, sliding_window_attention

__all__ = [
    "attention_weight_bytes",
    "attention_flops",
    "median_ms",
    "peak_tensor_bytes",
    "AttentionCost",
    "attention_cost",
    "attention_methods",
    "ScalingPoint",
    "scaling_cost",
    "crossover",
]


def _check_lengths(seq_lens: Any) -> None:
    if isinstance(seq_lens, (str, bytes)) or not isinstance(seq_lens, Sequence):
        raise TypeError(f"seq_lens must be a list of sequence lengths, got {type(seq_lens).__name__}")
    if len(seq_lens) == 0:
        raise ValueError("seq_lens must name at least one sequence length")


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def attention_weight_bytes(
    batch: int, heads: int, seq_q: int, seq_k: int | None = None, dtype: torch.dtype = torch.float32
) -> int:
    """Bytes of one attention-weight tensor ``(batch, heads, seq_q, seq_k)``: batch · heads · seq_q · seq_k · itemsize.

    Args:
        batch: number of sequences.
        heads: number of attention heads.
        seq_q: number of queries.
        seq_k: number of keys (default: ``seq_q``, as in self-attention).
        dtype: element type; float32 (the default) takes 4 bytes, float16 and bfloat16 take 2.

    Returns:
        The size in bytes (an ``int``). For self-attention with float32 this is ``4 · batch · heads · n²``.

    Raises:
        ValueError: a size is not a positive integer, or ``dtype`` is not a torch dtype.
    """
    seq_k = seq_q if seq_k is None else seq_k
    for value, name in ((batch, "batch"), (heads, "heads"), (seq_q, "seq_q"), (seq_k, "seq_k")):
        _positive_int(value, name)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"dtype must be a torch.dtype such as torch.float32, got {dtype!r}")
    return batch * heads * seq_q * seq_k * torch.empty((), dtype=dtype).element_size()


def attention_flops(batch: int, heads: int, seq_q: int, seq_k: int, d_k: int, d_v: int | None = None) -> int:
    """FLOPs of the two matrix products of attention: scores ``Q Kᵀ`` and output ``A V``.

    ``Q Kᵀ`` takes ``seq_q · seq_k · d_k`` multiply-adds per head and ``A V`` takes ``seq_q · seq_k · d_v``;
    one multiply-add counts as 2 FLOPs. The scaling, the mask and the softmax (a few operations per score)
    are not counted, as in ``torch.utils.flop_counter.FlopCounterMode``.

    Args:
        batch, heads: number of sequences and of heads.
        seq_q, seq_k: number of queries and of keys.
        d_k: features per query/key.
        d_v: features per value (default ``d_k``).

    Returns:
        ``2 · batch · heads · seq_q · seq_k · (d_k + d_v)``; for self-attention with d_v = d_k this is
        ``4 · batch · heads · n² · d_k``: quadratic in n, linear in d_k.

    Raises:
        ValueError: a size is not a positive integer.

    Source: Vaswani et al. 2017, Table 1 (O(n² · d) per self-attention layer).
    """
    d_v = d_k if d_v is None else d_v
    for value, name in (
        (batch, "batch"),
        (heads, "heads"),
        (seq_q, "seq_q"),
        (seq_k, "seq_k"),
        (d_k, "d_k"),
        (d_v, "d_v"),
    ):
        _positive_int(value, name)
    return 2 * batch * heads * seq_q * seq_k * (d_k + d_v)


def median_ms(calls: Mapping[str, Callable[[], Any]], repeats: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median wall-clock milliseconds per call of each function, the functions taking turns.

    Each round calls every function once; the order is reversed every other round, so that a machine that
    slows down or speeds up during the measurement favours none of them. ``warmup`` untimed rounds come
    first (the first call of a kernel pays for allocation and caching).

    Args:
        calls: name → function of no arguments (e.g. ``{"lib": lambda: f(x), "torch": lambda: g(x)}``).
        repeats: timed rounds (>= 1); the median of these counts.
        warmup: untimed rounds before timing (>= 0).

    Returns:
        name → median milliseconds per call (``time.perf_counter``). The numbers depend on the machine and
        on what else runs on it: compare them with each other, do not assert them.

    Raises:
        ValueError: ``calls`` is empty or holds a non-callable; repeats < 1; warmup < 0.
    """
    if not isinstance(calls, Mapping) or not calls:
        raise ValueError("calls must be a non-empty dict name -> function of no arguments")
    for name, fn in calls.items():
        if not callable(fn):
            raise ValueError(f"calls[{name!r}] must be callable, got {type(fn).__name__}")
    _positive_int(repeats, "repeats")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    names = list(calls)
    for _ in range(warmup):
        for name in names:
            calls[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeats):
        for name in names if round_ % 2 == 0 else reversed(names):
            start = time.perf_counter()
            calls[name]()
            times[name].append((time.perf_counter() - start) * 1000.0)
    return {name: statistics.median(t) for name, t in times.items()}


class _LiveTensorBytes(TorchDispatchMode):
    """Counts the bytes of the tensor storages that operations allocate while the mode is active.

    Every ATen operation passes through ``__torch_dispatch__``. A result whose storage is new (not the
    storage of one of the operation's inputs, as a view or an in-place result would be) is counted as
    allocated; it is counted as freed when the last Python tensor that refers to it is garbage-collected.
    """

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, list[int]] = {}  # storage address -> [bytes, Python tensors referring to it]
        self.current = 0
        self.peak = 0

    def _release(self, key: int) -> None:
        entry = self.live.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.current -= entry[0]
            del self.live[key]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = {
            t.untyped_storage().data_ptr() for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)
        }
        out = func(*args, **kwargs)
        for t in pytree.tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
            if nbytes == 0:
                continue
            if key in self.live:  # a view or in-place result of a tensor allocated in here
                self.live[key][1] += 1
            elif key in inputs:  # a view of a tensor that existed before: not allocated here
                continue
            else:
                self.live[key] = [nbytes, 1]
                self.current += nbytes
                self.peak = max(self.peak, self.current)
            weakref.finalize(t, self._release, key)
        return out


def peak_tensor_bytes(fn: Callable[[], Any]) -> int:
    """Peak bytes of the tensors that ``fn()`` allocates and holds at the same time (its result included).

    Measured, deterministically, by watching every PyTorch operation that ``fn`` runs (a
    ``TorchDispatchMode``): a new result tensor adds its storage's bytes, a tensor that is garbage-collected
    subtracts them. Tensors that existed before the call (inputs, parameters) count zero, views count zero.

    What it does not see: scratch memory *inside* one operation's kernel (a fused attention kernel's
    per-thread blocks, a BLAS library's packing buffers) and memory outside PyTorch. It answers "how large
    are the tensors this code keeps alive at once", not "how much RAM did the process use" (the operating
    system's figure, which also counts the allocator's caching and cannot be reset between measurements).

    Args:
        fn: a function of no arguments, e.g. ``lambda: scaled_dot_product_attention(q, k, v)``. Call it
            under ``torch.no_grad()`` to leave out what autograd would save for the backward pass.

    Returns:
        The peak in bytes (an ``int``).

    Raises:
        ValueError: ``fn`` is not callable.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function of no arguments, got {type(fn).__name__}")
    mode = _LiveTensorBytes()
    with mode:
        result = fn()
    del result
    return mode.peak


@dataclass
class AttentionCost:
    """Cost of one attention call at one sequence length (self-attention, ``seq_q = seq_k = seq_len``).

    Attributes:
        seq_len: n, the number of queries and keys.
        flops: FLOPs of ``Q Kᵀ`` and ``A V`` (:func:`attention_flops`).
        weight_bytes: bytes of the weights ``(batch, heads, n, n)`` (:func:`attention_weight_bytes`).
        lib_ms, torch_ms: median ms per call of ``lib.attention.scaled_dot_product_attention`` (explicit:
            scores, softmax, weighted sum; returns the weights) and of torch's fused
            ``F.scaled_dot_product_attention`` (returns no weights); None when not timed.
        lib_peak_bytes, torch_peak_bytes: :func:`peak_tensor_bytes` of the two calls; None when not measured.
    """

    seq_len: int
    flops: int
    weight_bytes: int
    lib_ms: float | None = None
    torch_ms: float | None = None
    lib_peak_bytes: int | None = None
    torch_peak_bytes: int | None = None

    def to_dict(self) -> dict:
        """The row as a plain dict, for JSON and tables.

        Returns:
            ``{field name: value}`` for the seven fields, in declaration order (times in ms, memory in bytes,
            None where not measured).
        """
        return asdict(self)


@torch.no_grad()
def attention_cost(
    seq_lens: Sequence[int],
    batch: int = 1,
    heads: int = 4,
    d_k: int = 64,
    repeats: int = 5,
    warmup: int = 1,
    seed: int = 0,
    time_it: bool = True,
    measure_memory: bool = True,
) -> list[AttentionCost]:
    """Time and memory of self-attention at each sequence length: lib's explicit path vs torch's fused kernel.

    For each n, random float32 queries, keys and values ``(batch, heads, n, d_k)`` (from ``seed``) go
    through ``lib.attention.scaled_dot_product_attention`` and ``torch.nn.functional.scaled_dot_product_attention``
    (no mask, no dropout, no autograd). Both compute softmax(Q Kᵀ / √d_k) V; lib also returns the weights.

    Args:
        seq_lens: the sequence lengths n to measure (positive integers).
        batch, heads, d_k: the other sizes.
        repeats, warmup: passed to :func:`median_ms`.
        seed: seed of the random inputs.
        time_it: measure the times (``lib_ms``, ``torch_ms``).
        measure_memory: measure the peak tensor memory (``lib_peak_bytes``, ``torch_peak_bytes``).

    Returns:
        One :class:`AttentionCost` per n, in the order of ``seq_lens``.

    Raises:
        TypeError: ``seq_lens`` is not a list of lengths.
        ValueError: an empty ``seq_lens`` or a size that is not a positive integer.
    """
    _check_lengths(seq_lens)
    for value, name in ((batch, "batch"), (heads, "heads"), (d_k, "d_k"), (repeats, "repeats")):
        _positive_int(value, name)
    rows = []
    for n in seq_lens:
        _positive_int(n, "each of seq_lens")
        gen = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(batch, heads, n, d_k, generator=gen) for _ in range(3))
        row = AttentionCost(
            seq_len=n,
            flops=attention_flops(batch, heads, n, n, d_k),
            weight_bytes=attention_weight_bytes(batch, heads, n),
        )
        calls = {
            "lib": functools.partial(scaled_dot_product_attention, q, k, v),
            "torch": functools.partial(F.scaled_dot_product_attention, q, k, v),
        }
        if time_it:
            ms = median_ms(calls, repeats=repeats, warmup=warmup)
            row.lib_ms, row.torch_ms = ms["lib"], ms["torch"]
        if measure_memory:
            row.lib_peak_bytes = peak_tensor_bytes(calls["lib"])
            row.torch_peak_bytes = peak_tensor_bytes(calls["torch"])
        rows.append(row)
    return rows


# --------------------------------------------------------------------------------------------
# Efficient attention against sequence length: time and memory of lib.efficient's methods
# --------------------------------------------------------------------------------------------


def attention_methods(
    window: int = 64,
    num_features: int = 256,
    bucket_size: int = 64,
    num_hashes: int = 1,
    seed: int = 0,
) -> dict[str, Callable[[Tensor, Tensor, Tensor], Any]]:
    """The contestants of :func:`scaling_cost`: name → ``f(q, k, v)`` (self-attention, no mask).

    - ``full (lib)``: ``lib.attention.scaled_dot_product_attention`` (explicit, returns the weights);
    - ``full (torch fused)``: ``torch.nn.functional.scaled_dot_product_attention`` (exact, O(n) memory);
    - ``sliding window``: ``lib.efficient.sliding_window_attention`` with ``window`` each side;
    - ``linear (elu+1)``: ``lib.efficient.linear_attention``;
    - ``Performer``: ``lib.efficient.performer_attention`` with ``num_features``;
    - ``LSH``: ``lib.efficient.lsh_attention`` with chunks of ``bucket_size`` (``num_buckets = n / bucket_size``,
      rounded up to an even number, as Reformer keeps the chunk fixed and lets the buckets grow with n).

    Args:
        window: w of the sliding window, positions each side a query sees (>= 1).
        num_features: m, the number of Performer random features (>= 1).
        bucket_size: LSH chunk length in positions (>= 1); capped at n for short sequences.
        num_hashes: LSH hash rounds (>= 1).
        seed: seed of the Performer projection and the LSH rotations.

    Returns:
        ``{name: f}`` for the six methods above, in that order; each ``f(q, k, v)`` takes
        ``(batch, heads, n, d_k)`` tensors and returns what the method returns: ``(output, weights or None)``
        for the ``lib`` functions (output ``(batch, heads, n, d_k)``, weights ``(batch, heads, n, n)`` only for
        ``full (lib)``), the output tensor alone for torch's fused kernel. Only the time and memory are used.

    Raises:
        ValueError: a size < 1.
    """
    for value, name in (
        (window, "window"),
        (num_features, "num_features"),
        (bucket_size, "bucket_size"),
        (num_hashes, "num_hashes"),
    ):
        _positive_int(value, name)

    def lsh(q, k, v):
        n = q.size(-2)
        c = min(bucket_size, n)
        buckets = max(n // c, 1)
        buckets += buckets % 2 if buckets > 1 else 0
        return lsh_attention(q, None, v, num_buckets=buckets, num_hashes=num_hashes, bucket_size=c, seed=seed)

    return {
        "full (lib)": lambda q, k, v: scaled_dot_product_attention(q, k, v),
        "full (torch fused)": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
        "sliding window": lambda q, k, v: sliding_window_attention(q, k, v, window),
        "linear (elu+1)": lambda q, k, v: linear_attention(q, k, v),
        "Performer": lambda q, k, v: performer_attention(q, k, v, num_features, seed=seed),
        "LSH": lsh,
    }


@dataclass
class ScalingPoint:
    """One method at one sequence length.

    Attributes:
        method: the name in :func:`attention_methods`.
        seq_len: n.
        ms: median milliseconds per call (:func:`median_ms`), None when skipped.
        peak_bytes: :func:`peak_tensor_bytes` of one call, None when skipped or not measured.
    """

    method: str
    seq_len: int
    ms: float | None = None
    peak_bytes: int | None = None

    def to_dict(self) -> dict:
        """The point as a plain dict, for JSON and tables.

        Returns:
            ``{"method": str, "seq_len": int, "ms": float | None, "peak_bytes": int | None}``.
        """
        return asdict(self)


@torch.no_grad()
def scaling_cost(
    seq_lens: Sequence[int],
    methods: Mapping[str, Callable[[Tensor, Tensor, Tensor], Any]] | None = None,
    batch: int = 1,
    heads: int = 4,
    d_k: int = 64,
    repeats: int = 3,
    warmup: int = 1,
    max_ms: float | None = 1000.0,
    measure_memory: bool = True,
    seed: int = 0,
) -> list[ScalingPoint]:
    """Time and peak tensor memory of each attention method at each sequence length (self-attention, float32).

    At each n, random ``(batch, heads, n, d_k)`` queries, keys and values (from ``seed``) go through every
    method still in the race; the methods take turns (:func:`median_ms`). A method whose median time
    exceeded ``max_ms`` at one length is skipped at the longer ones (its points get ``ms=None``), which keeps a
    sweep to long sequences short: the quadratic methods drop out first.

    Args:
        seq_lens: increasing sequence lengths.
        methods: name → ``f(q, k, v)``; default :func:`attention_methods` ``()``.
        batch, heads, d_k: the other sizes.
        repeats, warmup: passed to :func:`median_ms`.
        max_ms: the time limit per call beyond which a method is not run at longer lengths (None: no limit).
        measure_memory: also run :func:`peak_tensor_bytes` once per method and length.
        seed: seed of the inputs.

    Returns:
        One :class:`ScalingPoint` per method and length, ordered by length, then by method.

    Raises:
        TypeError: ``seq_lens`` is not a list of lengths.
        ValueError: empty or non-increasing ``seq_lens``; a size < 1; an empty ``methods``.
    """
    _check_lengths(seq_lens)
    for n in seq_lens:
        _positive_int(n, "each of seq_lens")
    if any(b <= a for a, b in itertools.pairwise(seq_lens)):
        raise ValueError(f"seq_lens must increase, got {list(seq_lens)}")
    for value, name in ((batch, "batch"), (heads, "heads"), (d_k, "d_k"), (repeats, "repeats")):
        _positive_int(value, name)
    methods = attention_methods() if methods is None else methods
    if not methods:
        raise ValueError("methods must name at least one method")
    active = list(methods)
    points = []
    for n in seq_lens:
        gen = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(batch, heads, n, d_k, generator=gen) for _ in range(3))
        calls = {name: functools.partial(methods[name], q, k, v) for name in active}
        ms = median_ms(calls, repeats=repeats, warmup=warmup) if calls else {}
        for name in methods:
            point = ScalingPoint(name, n)
            if name in calls:
                point.ms = ms[name]
                if measure_memory:
                    point.peak_bytes = peak_tensor_bytes(calls[name])
            points.append(point)
        if max_ms is not None:
            active = [name for name in active if ms[name] <= max_ms]
    return points


def crossover(seq_lens: Sequence[int], slower: Sequence[float | None], faster: Sequence[float | None]) -> int | None:
    """The shortest measured length from which ``faster``'s time stays below ``slower``'s.

    ``faster`` (e.g. linear attention) must beat ``slower`` (e.g. full attention) at the returned n and at
    every longer n where both were measured; a length where ``slower`` was not measured (None: it dropped out
    because it was too slow) counts as won by ``faster``.

    Args:
        seq_lens: the lengths, increasing.
        slower, faster: the times at those lengths (None = not measured).

    Returns:
        That n, or None when ``faster`` is still slower at the longest length where both were measured, or it
        was never measured.

    Raises:
        ValueError: the three sequences differ in length.
    """
    if not (len(seq_lens) == len(slower) == len(faster)):
        raise ValueError(
            f"seq_lens, slower and faster must have one entry per length, got {len(seq_lens)}, "
            f"{len(slower)} and {len(faster)}"
        )
    result = None
    for n, a, b in reversed(list(zip(seq_lens, slower, faster))):
        if b is None:
            if result is None:
                continue
            break
        if a is not None and b >= a:
            break
        result = n
    return result
