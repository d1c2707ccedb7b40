"""Data parallelism: two gloo processes on loopback train exactly as one process over the combined batches.

The two-process runs are started the way a reader starts them, with ``torchrun --standalone``: this file is
also the worker script (``python -m torch.distributed.run --standalone --nproc_per_node 2 tests/unit/test_ddp.py
--worker FOLDER``). Every process joins with ``lib.training.setup_distributed``, and ``lib.training.train``
shards each global batch, so that the loss history and the weights must equal one process's to 1e-5 (float
sums in another order are all that differs). The batches have an odd number of rows and rows of different
lengths, so the two blocks of a batch hold different numbers of tokens: a plain average of the two blocks'
mean losses would not be the batch's mean (checked below), only the token-weighted one is.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lib import training
from lib.training import TrainConfig, evaluate_loss, shard_batch, train, translation_batches
from lib.transformer import Transformer, TransformerConfig

VOCAB = 40
STEPS = 4
CONFIG = dict(max_tokens=150, warmup=3, peak_lr=3e-3, eval_every_steps=1, amp=False)


def _examples(n: int, seed: int) -> list[tuple[list[int], list[int]]]:
    rng = random.Random(seed)
    return [
        (
            [rng.randrange(4, VOCAB) for _ in range(rng.randint(2, 12))],
            [rng.randrange(4, VOCAB) for _ in range(rng.randint(2, 12))],
        )
        for _ in range(n)
    ]


TRAIN, VAL = _examples(200, 0), _examples(30, 1)


def _run(steps: int, out: Path | None, dropout: float = 0.0, resume: bool = False, log=lambda line: None) -> dict:
    """Train the tiny Transformer for ``steps`` steps; the history and the final weights."""
    from lib.data import make_batches
    from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID

    val = make_batches(VAL, 400, PAD_ID, BOS_ID, EOS_ID, shuffle=False)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(VOCAB, dropout=dropout))
    config = TrainConfig(max_steps=steps, **CONFIG)
    result = train(
        model,
        translation_batches(TRAIN, config.max_tokens, config.seed),
        config,
        evaluate=lambda m: evaluate_loss(m, val),
        out_dir=out,
        resume=resume,
        progress=False,
        log=log,
    )
    history = [(h["step"], h["train_loss"], h["val_loss"], h["tokens"]) for h in result.history]
    return {"history": history, "weights": {k: v.clone() for k, v in model.state_dict().items()}}


def _worker(folder: Path, data: str | None) -> None:
    """One process of the two-process runs (started by torchrun): trains, records what it wrote and logged; with
    the Multi30k folder ``data``, also runs ``python -m lib.train``'s ``main`` in the same two processes."""
    import contextlib
    import io

    import torch.distributed as dist

    from lib import train as cli
    from lib.training import resume as run_folder  # where the checkpoint and the snapshots are written

    torch.set_num_threads(1)
    ranks, device = training.setup_distributed(torch.device("cpu"))
    writes, logs = [], []
    save = run_folder.atomic_torch_save

    def recording_save(obj, path):
        writes.append(Path(path).name)
        return save(obj, path)

    run_folder.atomic_torch_save = recording_save
    record = {"ranks": [ranks.rank, ranks.world_size, ranks.backend], "device": str(device)}
    record["equal"] = _run(STEPS, folder / "equal", log=logs.append)
    # resume under DDP, with dropout (each rank's own random stream): half the steps, then on to all, as all at once
    _run(STEPS // 2, folder / "resumed", dropout=0.1)
    record["resumed"] = _run(STEPS, folder / "resumed", dropout=0.1, resume=True)
    record["straight"] = _run(STEPS, folder / "straight", dropout=0.1)
    record.update(writes=writes, logs=logs)
    if data is not None:  # the command line, in the same processes (starting two more would cost ~20 s of CPU)
        args = ["--preset", "tiny", "--steps", "2", "--max-tokens", "500", "--eval-every", "100"]
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            cli.main([*args, "--data", data, "--out", str(folder / "cli")])
        record["cli_stdout"] = stdout.getvalue()
    torch.save(record, folder / f"rank{ranks.rank}.pt")
    if dist.is_initialized():
        dist.destroy_process_group()


def _torchrun(*args: str, cwd: Path | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    env["OMP_NUM_THREADS"] = "1"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd or root)


def _multi30k() -> str | None:
    from lib.data import SHA256, data_dir

    directory = data_dir()
    return str(directory) if all((directory / name).is_file() for name in SHA256) else None


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    # about 9 s on 2 quiet cores (two torchrun processes): the tests that use it are marked slow
    folder = tmp_path_factory.mktemp("ddp")
    data = _multi30k()
    proc = _torchrun(str(Path(__file__).resolve()), "--worker", str(folder), *(["--data", data] if data else []))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return folder, [torch.load(folder / f"rank{r}.pt", weights_only=True) for r in (0, 1)]


def test_the_token_weighted_shards_are_needed():
    # the test below can fail: on these batches the plain mean of the two blocks' mean losses is not the
    # batch's mean loss, so an unweighted gradient average would give other numbers than one process
    batch = translation_batches(TRAIN, CONFIG["max_tokens"])(0)[0]
    blocks = [shard_batch(batch, r, 2) for r in (0, 1)]
    assert len(batch) % 2 == 1 and blocks[0][0].num_tokens != blocks[1][0].num_tokens
    assert sum(w for _, w in blocks) == pytest.approx(1.0)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(VOCAB)).eval()
    with torch.no_grad():
        whole = training.seq2seq_loss(model, batch).item()
        parts = [training.seq2seq_loss(model, b).item() for b, _ in blocks]
    assert sum(w * p for (_, w), p in zip(blocks, parts)) == pytest.approx(whole, abs=1e-6)
    assert abs(sum(parts) / 2 - whole) > 10 * 1e-5  # ten times the tolerance of the test below


@pytest.mark.slow
def test_two_gloo_processes_train_as_one_process_over_the_combined_batches(two_processes):
    _, (rank0, rank1) = two_processes
    assert rank0["ranks"] == [0, 2, "gloo"] and rank1["ranks"] == [1, 2, "gloo"]
    one = _run(STEPS, None)
    assert [h[0] for h in rank0["equal"]["history"]] == list(range(1, STEPS + 1))
    for a, b in zip(one["history"], rank0["equal"]["history"], strict=True):
        assert a[0] == b[0] and a[3] == b[3]  # step, tokens seen (of the global batches)
        assert a[1] == pytest.approx(b[1], abs=1e-5) and a[2] == pytest.approx(b[2], abs=1e-5)  # train, val loss
    for name, w in one["weights"].items():
        assert torch.equal(rank0["equal"]["weights"][name], rank1["equal"]["weights"][name]), name  # one model
        if name.endswith("w_k.bias"):
            # softmax ignores a number added to every score of a row, so the key bias's gradient is zero but for
            # rounding, and Adam (ε = 1e-9) turns that rounding into full-size steps: noise in any two runs
            continue
        torch.testing.assert_close(rank0["equal"]["weights"][name], w, atol=1e-5, rtol=0, msg=name)
    # both ranks agree on the training loss (one all-reduce); only rank 0 validates
    assert [h[1] for h in rank1["equal"]["history"]] == [h[1] for h in rank0["equal"]["history"]]
    assert all(h[2] != h[2] for h in rank1["equal"]["history"])  # NaN


@pytest.mark.slow
def test_only_rank_0_writes_and_logs(two_processes):
    folder, (rank0, rank1) = two_processes
    assert rank1["writes"] == [] and rank1["logs"] == []
    assert set(rank0["writes"]) == {"checkpoint.pt"} and len(rank0["logs"]) == STEPS
    state = torch.load(folder / "equal" / "checkpoint.pt", weights_only=True)
    assert state["world_size"] == 2 and len(state["rng_ranks"]) == 2
    assert not torch.equal(state["rng_ranks"][0]["torch"], state["rng_ranks"][1]["torch"])  # a stream per rank


@pytest.mark.slow
def test_resume_under_two_processes_is_exact(two_processes):
    # 2 steps, stop, resume to 4 (every rank restores its own random states and Adam's moments): the same
    # history and bit-identical weights on both ranks as 4 steps in one go, dropout included
    _, ranks = two_processes
    for record in ranks:
        straight, resumed = record["straight"], record["resumed"]
        assert [h[0] for h in resumed["history"]] == list(range(1, STEPS + 1))
        for a, b in zip(straight["history"], resumed["history"], strict=True):
            assert (a[0], a[1], a[3]) == (b[0], b[1], b[3])
        for name, w in straight["weights"].items():
            assert torch.equal(resumed["weights"][name], w), name
    assert ranks[0]["resumed"]["history"] == ranks[0]["straight"]["history"]  # validation too (rank 0 only)


@pytest.mark.slow
def test_train_command_line_under_torchrun(multi30k_dir, two_processes):
    folder, (rank0, rank1) = two_processes
    results = json.loads((folder / "cli" / "results.json").read_text())
    assert results["world_size"] == 2 and results["backend"] == "gloo" and results["steps"] == 2
    assert results["command"].startswith("torchrun --nproc_per_node 2 -m lib.train ")
    assert "2 processes (gloo)" in rank0["cli_stdout"] and rank1["cli_stdout"] == ""  # rank 1 prints nothing
    state = torch.load(folder / "cli" / "checkpoint.pt", weights_only=True)
    assert state["world_size"] == 2 and state["result"]["steps"] == 2


def test_shard_batch_splits_rows_evenly_and_weights_sum_to_one():
    from lib.data import Batch

    tgt = torch.tensor([[5, 6, 0], [5, 0, 0], [5, 6, 7], [5, 6, 0], [5, 0, 0]])
    batch = Batch(tgt, tgt, tgt)
    blocks = [shard_batch(batch, r, 3) for r in range(3)]
    assert [len(b) for b, _ in blocks] == [2, 2, 1]  # sizes differ by at most one, the first the larger
    assert torch.equal(torch.cat([b.tgt_out for b, _ in blocks]), tgt)
    assert [w for _, w in blocks] == [3 / 9, 5 / 9, 1 / 9]  # each block's share of the 9 target tokens
    rows, weight = shard_batch(torch.arange(6).reshape(3, 2), 1, 2)
    assert rows.tolist() == [[4, 5]] and weight == 1 / 3
    assert shard_batch([1, 2, 3, 4], 1, 2) == ([3, 4], 0.5)
    x, y = shard_batch((torch.arange(4), torch.arange(4) * 10), 0, 2)[0]
    assert x.tolist() == [0, 1] and y.tolist() == [0, 10]
    # fewer rows than processes: the last rank runs on the first row with weight 0
    block, weight = shard_batch(Batch(tgt[:1], tgt[:1], tgt[:1]), 1, 2)
    assert len(block) == 1 and weight == 0.0
    with pytest.raises(ValueError, match="rank"):
        shard_batch(batch, 2, 2)
    with pytest.raises(TypeError, match="cannot split a batch of type dict"):
        shard_batch({"x": tgt}, 0, 2)


def test_tf32_switch():
    from lib.training import enable_tf32

    matmul = torch.backends.cuda.matmul
    if not hasattr(matmul, "fp32_precision"):
        pytest.skip("torch < 2.9: TF32 is set with the older allow_tf32 flags")
    cudnn = torch.backends.cudnn
    before = matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.rnn.fp32_precision
    try:
        enable_tf32(True)
        assert matmul.fp32_precision == cudnn.conv.fp32_precision == cudnn.rnn.fp32_precision == "tf32"
        enable_tf32(False)
        assert matmul.fp32_precision == cudnn.conv.fp32_precision == cudnn.rnn.fp32_precision == "ieee"
    finally:
        matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.rnn.fp32_precision = before
    assert cudnn.allow_tf32  # restored: the legacy flag is readable again (torch.export in later tests reads it)


class _Wrapped(torch.nn.Module):
    """A stand-in for torch.compile's wrapper: a module around the model that counts the forward calls (its
    weights' names gain a prefix, as ``_orig_mod.`` with torch.compile)."""

    def __init__(self, model):
        super().__init__()
        self.inner, self.calls = model, 0

    def forward(self, *args):
        self.calls += 1
        return self.inner(*args)


@pytest.mark.parametrize(
    "backend",
    # real dynamo: seconds of tracing (10-30 s on a busy machine) for little beyond what the stand-in shows;
    # RUN_SLOW=1 runs it
    ["stand-in", pytest.param("eager", marks=[pytest.mark.slow, pytest.mark.expensive])],
)
def test_compile_runs_the_compiled_forward_and_keeps_the_weight_names(tmp_path, monkeypatch, backend):
    real = torch.compile
    compiled = []

    def fake_compile(model, **kw):
        compiled.append(_Wrapped(model) if backend == "stand-in" else real(model, backend="eager", **kw))
        return compiled[-1]

    monkeypatch.setattr(torch, "compile", fake_compile)

    def loss_fn(m, batch):
        assert type(m).__name__ == "_Forward" and m.config.d_model == 32  # other attributes: the model's own
        return training.seq2seq_loss(m, batch)

    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(VOCAB))
    config = TrainConfig(max_steps=2, **{**CONFIG, "eval_every_steps": 2})
    train(
        model,
        translation_batches(TRAIN, config.max_tokens),
        config,
        loss_fn=loss_fn,
        out_dir=tmp_path,
        compile=True,
        progress=False,
        log=lambda line: None,
    )
    assert len(compiled) == 1 and (backend != "stand-in" or compiled[0].calls == 2)
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["model"]
    assert set(saved) == set(model.state_dict())  # no prefix of the wrapper


@pytest.mark.gpu
def test_one_gpu_nccl_torchrun(multi30k_dir, tmp_path):
    out = tmp_path / "run"
    args = ["--preset", "tiny", "--steps", "5", "--max-tokens", "1000", "--device", "cuda", "--out", str(out)]
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([*command, "-m", "lib.train", *args], capture_output=True, text=True, env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["backend"] == "nccl" and results["world_size"] == 1
    assert results["amp"] in ("torch.bfloat16", "torch.float16")


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    _worker(Path(sys.argv[2]), sys.argv[4] if sys.argv[3:4] == ["--data"] else None)
