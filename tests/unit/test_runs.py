"""Run folders and the training loop lose nothing and trust nothing: manifests, validation on load, atomic files,
Ctrl-C, and resuming only what can be resumed exactly."""

import json
import os
import random
import shutil
import signal
import stat

import pytest
import torch

from lib.bpe import train_bpe
from lib.checkpoint import (
    SHIPPED_MODEL,
    RunError,
    average_weights,
    load_run,
    quantize_rows,
    save_run,
    snapshot_files,
    update_results,
    write_manifest,
)
from lib.files import atomic_write_text
from lib.training import TrainConfig, TrainingDiverged, TrainingInterrupted, train
from lib.transformer import Transformer, TransformerConfig

TOKENIZER = train_bpe(["ein Hund läuft", "a dog runs", "zwei Männer", "two men"] * 5, vocab_size=40)


def _tiny_run(folder, **config):
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(TOKENIZER.get_vocab_size(), **config))
    save_run(folder, model, TOKENIZER, TrainConfig(max_steps=1), [{"step": 1}], {"note": "test"})
    return model


@pytest.fixture
def shipped_copy(tmp_path):
    return shutil.copytree(SHIPPED_MODEL, tmp_path / "de-en")


def test_the_shipped_models_have_manifests_that_verify():
    runs = 0
    for folder in sorted(SHIPPED_MODEL.parent.iterdir()):
        files = {p.name for p in folder.iterdir()}
        if not files & {"model.pt", "config.json", "manifest.json"}:
            # a chapter's cached measurements (models/decoding, models/modern): JSON results only, no weights
            assert all(name.endswith(".json") for name in files), f"{folder.name}: {sorted(files)}"
            continue
        runs += 1
        manifest = json.loads((folder / "manifest.json").read_text())
        assert set(manifest["files"]) == {"config.json", "model.pt", "tokenizer.json", "history.json", "results.json"}
        load_run(folder)  # raises on any mismatch
    assert runs == 3  # the Transformer and the two recurrent models


def test_flipped_bytes_in_the_weights_are_detected(shipped_copy):
    data = bytearray((shipped_copy / "model.pt").read_bytes())
    for i in range(100_000, 104_000):
        data[i] ^= 0xFF
    (shipped_copy / "model.pt").write_bytes(bytes(data))
    with pytest.raises(RunError, match=r"model\.pt: its SHA-256 differs from the manifest"):
        load_run(shipped_copy)


@pytest.mark.parametrize("field, value", [("num_heads", 8), ("activation", "gelu"), ("norm_first", False)])
def test_an_edited_config_is_detected(shipped_copy, field, value):
    # 8 heads or gelu in a 4-head relu model: same weight shapes, so only the manifest can tell (BLEU 33 instead of 37)
    config = json.loads((shipped_copy / "config.json").read_text())
    config["model"][field] = value
    (shipped_copy / "config.json").write_text(json.dumps(config, indent=2))
    with pytest.raises(RunError, match=r"config\.json: its SHA-256 differs"):
        load_run(shipped_copy)


def test_without_a_manifest_the_config_the_weights_and_the_tokenizer_are_still_checked(tmp_path):
    folder = tmp_path / "run"
    _tiny_run(folder)
    (folder / "manifest.json").unlink()
    with pytest.warns(UserWarning, match="no manifest.json"):
        load_run(folder)
    config = json.loads((folder / "config.json").read_text())
    atomic_write_text(folder / "config.json", json.dumps({**config, "model": {**config["model"], "num_hedas": 8}}))
    with pytest.warns(UserWarning), pytest.raises(RunError, match=r"config\.json: model: .*num_hedas"):
        load_run(folder)
    atomic_write_text(folder / "config.json", json.dumps({**config, "model": {**config["model"], "d_ff": 128}}))
    with pytest.warns(UserWarning), pytest.raises(RunError, match=r"model\.pt: weight .* has shape"):
        load_run(folder)
    atomic_write_text(folder / "config.json", json.dumps(config))
    other = train_bpe(["ein Hund", "a dog"] * 5, vocab_size=30)
    other.save(str(folder / "tokenizer.json"))
    with pytest.warns(UserWarning), pytest.raises(RunError, match=r"tokenizer\.json: has .* tokens but the model"):
        load_run(folder)
    (folder / "config.json").write_text("{not json")
    with pytest.warns(UserWarning), pytest.raises(RunError, match=r"config\.json: not readable JSON"):
        load_run(folder)


def test_run_files_get_ordinary_permissions_and_no_temporary_file_is_left(tmp_path):
    old = os.umask(0o022)
    try:
        _tiny_run(tmp_path / "run")
    finally:
        os.umask(old)
    files = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert files == ["config.json", "history.json", "manifest.json", "model.pt", "results.json", "tokenizer.json"]
    for name in files:
        assert stat.S_IMODE((tmp_path / "run" / name).stat().st_mode) == 0o644, name


def test_update_results_keeps_the_manifest_valid(tmp_path):
    _tiny_run(tmp_path / "run")
    assert update_results(tmp_path / "run", {"test_bleu_beam": 1.5}) == {"note": "test", "test_bleu_beam": 1.5}
    assert load_run(tmp_path / "run").results["test_bleu_beam"] == 1.5


def test_int8_embedding_rows_read_back_within_half_a_step_and_the_rest_as_saved(tmp_path):
    model = _tiny_run(tmp_path / "f16")  # float32 weights, saved as float32 by _tiny_run
    save_run(tmp_path / "int8", model, TOKENIZER, weights_dtype=torch.float16, int8_embeddings=True)
    saved = torch.load(tmp_path / "int8" / "model.pt", weights_only=True)
    assert (saved["format"], saved["version"]) == ("int8-rows", 1)
    assert set(saved["int8_rows"]) == {"src_embed.weight"}  # tied: the one matrix, stored once
    rows = saved["int8_rows"]["src_embed.weight"]
    assert rows["values"].dtype == torch.int8 and rows["scales"].dtype == torch.float32
    assert set(rows["values"].abs().amax(dim=1).tolist()) == {0, 127}  # the full range; the padding row is 0
    assert all(v.dtype == torch.float16 for v in saved["tensors"].values())

    loaded = load_run(tmp_path / "int8").model.state_dict()
    original = model.state_dict()
    error = (loaded["src_embed.weight"] - original["src_embed.weight"]).abs()
    assert (error <= rows["scales"][:, None] / 2 + 1e-7).all() and error.max() > 0
    assert torch.equal(loaded["output.weight"], loaded["src_embed.weight"])  # still tied after loading
    for name, value in original.items():
        if name not in ("src_embed.weight", "tgt_embed.weight", "output.weight"):
            assert torch.equal(loaded[name], value.half().float()), name


def test_quantize_rows_rounds_to_the_nearest_step_and_keeps_zero_rows():
    matrix = torch.tensor([[1.0, -0.5, 0.25], [0.0, 0.0, 0.0], [-2.54, 0.01, 2.0]])
    values, scales = quantize_rows(matrix)
    assert values.tolist() == [[127, -64, 32], [0, 0, 0], [-127, 0, 100]]  # -63.5 rounds to even: -64
    assert torch.allclose(scales, torch.tensor([1 / 127, 1.0, 2.54 / 127]))
    with pytest.raises(ValueError, match="matrix must be a 2-D floating-point tensor"):
        quantize_rows(torch.ones(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="NaN or an infinity"):
        quantize_rows(torch.tensor([[float("nan")]]))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda s: s.update(version=2), "version 2 is not supported"),
        (lambda s: s.update(format="int4-rows"), "unknown storage format 'int4-rows'"),
        (lambda s: s.update(extra=1), "unknown: \\['extra'\\]"),
        (lambda s: s["int8_rows"]["src_embed.weight"].update(values=torch.zeros(40, 32)), "2-D int8"),
        (lambda s: s["int8_rows"]["src_embed.weight"].update(scales=torch.ones(39)), "one per row"),
        (lambda s: s["int8_rows"]["src_embed.weight"].update(scales=-torch.ones(40)), "finite and positive"),
        (lambda s: s["tensors"].update({"src_embed.weight": torch.zeros(40, 32)}), "stored twice"),
        (
            lambda s: s["int8_rows"].update(
                {"src_embed.weight": dict(values=torch.zeros(41, 32, dtype=torch.int8), scales=torch.ones(41))}
            ),
            r"weight src_embed\.weight has shape \(41, 32\)",
        ),
    ],
)
def test_a_damaged_int8_rows_file_names_the_problem(tmp_path, damage, message):
    model = _tiny_run(tmp_path / "run")
    save_run(tmp_path / "run", model, TOKENIZER, int8_embeddings=True)
    saved = torch.load(tmp_path / "run" / "model.pt", weights_only=True)
    damage(saved)
    torch.save(saved, tmp_path / "run" / "model.pt")
    write_manifest(tmp_path / "run")  # a consistent manifest: only the format checks can tell
    with pytest.raises(RunError, match=r"model\.pt: .*" + message):
        load_run(tmp_path / "run")


def test_snapshot_files_are_in_order_of_training_minutes(tmp_path):
    for name in ("model_10min.pt", "model_5min.pt", "model_2.5min.pt", "model.pt", "model_finalmin.pt"):
        (tmp_path / name).write_bytes(b"")
    assert snapshot_files(tmp_path) == [(m, tmp_path / f"model_{m:g}min.pt") for m in (2.5, 5.0, 10.0)]


def test_average_weights_is_the_elementwise_mean_of_snapshots_and_checkpoints(tmp_path):
    torch.manual_seed(0)
    models = [Transformer(TransformerConfig.tiny(30)) for _ in range(3)]
    torch.save(models[0].state_dict(), tmp_path / "model_1min.pt")
    torch.save(models[1].state_dict(), tmp_path / "model_2min.pt")
    torch.save({"model": models[2].state_dict(), "step": 7}, tmp_path / "checkpoint.pt")  # a resume checkpoint
    files = [tmp_path / "model_1min.pt", tmp_path / "model_2min.pt", tmp_path / "checkpoint.pt"]
    averaged = average_weights(files)
    states = [m.state_dict() for m in models]
    assert set(averaged) == set(states[0])
    for name, value in averaged.items():
        expected = (states[0][name] + states[1][name] + states[2][name]) / 3
        torch.testing.assert_close(value, expected, rtol=1e-6, atol=1e-7)
    assert all(any(not torch.equal(averaged[k], state[k]) for k in averaged) for state in states)  # none of them
    models[0].load_state_dict(averaged)  # loads into the same architecture


def test_average_weights_refuses_what_cannot_be_averaged(tmp_path):
    torch.manual_seed(0)
    torch.save(Transformer(TransformerConfig.tiny(30)).state_dict(), tmp_path / "a.pt")
    torch.save(Transformer(TransformerConfig.tiny(40)).state_dict(), tmp_path / "b.pt")
    torch.save([1, 2], tmp_path / "c.pt")
    with pytest.raises(ValueError, match="at least two"):
        average_weights([tmp_path / "a.pt"])
    with pytest.raises(ValueError, match="shape"):
        average_weights([tmp_path / "a.pt", tmp_path / "b.pt"])
    with pytest.raises(ValueError, match="not a state dict"):
        average_weights([tmp_path / "a.pt", tmp_path / "c.pt"])
    with pytest.raises(FileNotFoundError, match=r"missing\.pt"):
        average_weights([tmp_path / "a.pt", tmp_path / "missing.pt"])


def test_a_full_disk_leaves_the_previous_files_intact(tmp_path, monkeypatch):
    _tiny_run(tmp_path / "run")
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.name != "manifest.json"}

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match=r"no space left on the device while writing .*config\.json; the previous"):
        _tiny_run(tmp_path / "run")
    monkeypatch.undo()
    after = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    assert "manifest.json" not in after  # a half-rewritten run is not vouched for
    assert after == before  # every file as it was, and no temporary file left


# --- the training loop: Ctrl-C, and what may change on resume --------------------------------------------------


def _lm_setup(interrupt_at=None, dropout=0.1):
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.tiny(30, dropout=dropout))
    data = torch.randint(4, 30, (64, 6))

    def batches(epoch):
        g = torch.Generator().manual_seed(epoch)
        order = torch.randperm(64, generator=g)
        return [data[order[i : i + 8]] for i in range(0, 64, 8)]

    calls = {"n": 0}

    def loss_fn(m, x):
        calls["n"] += 1
        if calls["n"] == interrupt_at:
            signal.raise_signal(signal.SIGINT)  # as if the reader pressed Ctrl-C during this step
        logits = m(x, x)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 30), x.reshape(-1))

    return model, batches, loss_fn


def test_ctrl_c_finishes_the_step_saves_and_the_resumed_run_is_exact(tmp_path):
    config = TrainConfig(max_steps=12, warmup=2, eval_every_steps=4, amp=False)
    straight, batches, loss_fn = _lm_setup()
    train(straight, batches, config, loss_fn=loss_fn, progress=False, log=lambda _: None)

    model, batches, loss_fn = _lm_setup(interrupt_at=10)
    # the handler before the run: Python's default, or SIG_IGN in a background job of a non-interactive shell
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(TrainingInterrupted, match="after 10 steps; checkpoint saved") as stop:
        train(model, batches, config, loss_fn=loss_fn, out_dir=tmp_path, progress=False, log=lambda _: None)
    assert stop.value.steps == 10 and stop.value.checkpoint == tmp_path / "checkpoint.pt"
    assert signal.getsignal(signal.SIGINT) is before  # the handler is restored

    model, batches, loss_fn = _lm_setup()
    resumed = train(
        model, batches, config, loss_fn=loss_fn, out_dir=tmp_path, resume=True, progress=False, log=lambda _: None
    )
    assert resumed.steps == 12 and resumed.history[-1]["val_loss"] != resumed.history[-1]["val_loss"]  # no evaluate
    for (name, p), q in zip(straight.state_dict().items(), model.state_dict().values(), strict=True):
        assert torch.equal(p, q), name


@pytest.mark.parametrize(
    "change, named", [(dict(peak_lr=2e-3), "peak_lr"), (dict(seed=1), "seed"), (dict(max_tokens=100), "max_tokens")]
)
def test_resuming_with_other_settings_is_refused_and_names_them(tmp_path, change, named):
    config = TrainConfig(max_steps=2, warmup=2, amp=False)
    model, batches, loss_fn = _lm_setup()
    train(model, batches, config, loss_fn=loss_fn, out_dir=tmp_path, progress=False, log=lambda _: None)
    other = TrainConfig(max_steps=4, warmup=2, amp=False, **change)
    with pytest.raises(ValueError, match=f"cannot resume .*{named}"):
        train(model, batches, other, loss_fn=loss_fn, out_dir=tmp_path, resume=True, progress=False)
    # a longer budget is fine
    more = TrainConfig(max_steps=4, warmup=2, amp=False, eval_every_steps=2)
    assert (
        train(
            model, batches, more, loss_fn=loss_fn, out_dir=tmp_path, resume=True, progress=False, log=lambda _: None
        ).steps
        == 4
    )


def test_resuming_a_different_model_is_refused(tmp_path):
    config = TrainConfig(max_steps=1, warmup=2, amp=False)
    model, batches, loss_fn = _lm_setup()
    train(model, batches, config, loss_fn=loss_fn, out_dir=tmp_path, progress=False, log=lambda _: None)
    torch.manual_seed(0)
    wider = Transformer(TransformerConfig.tiny(30, d_ff=128))
    with pytest.raises(ValueError, match="model d_ff: 64 in the checkpoint, 128 now"):
        train(
            wider,
            batches,
            TrainConfig(max_steps=2, warmup=2, amp=False),
            loss_fn=loss_fn,
            out_dir=tmp_path,
            resume=True,
            progress=False,
        )


def test_no_pickle_is_loaded_anywhere_in_lib():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "lib"
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "weights_only=False" not in text, path
        assert "import pickle" not in text or "UnpicklingError" in text, path  # only to name the error
        assert "pickle.load" not in text, path


def test_a_damaged_tokenizer_cache_is_named_and_rebuilt(multi30k_dir, tmp_path):
    from lib.bpe import multi30k_tokenizer

    first = multi30k_tokenizer(500, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("multi30k-bpe500-*.json")
    assert stat.S_IMODE(cached.stat().st_mode) & 0o044 == 0o044  # readable by others, as ordinary files are
    cached.write_text(cached.read_text()[:1000])  # truncated: "EOF while parsing" in the tokenizers library
    with pytest.warns(UserWarning, match=rf"{cached.name}.*cannot be read.*training the tokenizer again"):
        again = multi30k_tokenizer(500, cache_dir=tmp_path)
    assert again.get_vocab() == first.get_vocab()
    assert multi30k_tokenizer(500, cache_dir=tmp_path).get_vocab() == first.get_vocab()  # the rebuilt cache loads


# --- random states across devices: what a checkpoint saves, and where each state goes back --------------------


def _draws():
    return torch.rand(3), random.random()


def test_the_rng_state_holds_the_training_devices_generator_and_restores_exactly():
    from lib.training.resume import rng_state, set_rng_state

    state = rng_state(torch.device("cpu"))
    assert state["device"] == "cpu" and "device_rng" not in state and "cuda" not in state
    first = _draws()
    set_rng_state(state, torch.device("cpu"))
    again = _draws()
    assert torch.equal(first[0], again[0]) and first[1] == again[1]


def _fake_cuda(monkeypatch):
    """torch.cuda's generator functions, recorded: the state handling is checked on a machine without a GPU."""
    calls = []
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device="cuda": torch.full((16,), 7, dtype=torch.uint8))
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device="cuda": calls.append((state, device)))
    return calls


def test_on_cuda_the_cuda_state_goes_into_the_cuda_generator_and_the_cpu_state_into_the_cpu_one(monkeypatch):
    from lib.training.resume import rng_state, set_rng_state

    calls = _fake_cuda(monkeypatch)
    cuda = torch.device("cuda", 1)
    state = rng_state(cuda)
    assert state["device"] == "cuda" and torch.equal(state["device_rng"], torch.full((16,), 7, dtype=torch.uint8))
    cpu_state = state["torch"].clone()
    torch.rand(5)  # move the CPU generator on
    set_rng_state(state, cuda)
    assert len(calls) == 1 and calls[0][1] == cuda and torch.equal(calls[0][0], state["device_rng"])
    assert torch.equal(torch.get_rng_state(), cpu_state)
    # a checkpoint of the earlier format: every CUDA device's state in a list; device 1 gets the second
    old = {"torch": cpu_state, "python": random.getstate(), "cuda": [torch.zeros(16, dtype=torch.uint8), cpu_state]}
    set_rng_state(old, cuda)
    assert torch.equal(calls[1][0], cpu_state) and calls[1][1] == cuda


def test_a_checkpoint_saved_on_cuda_resumes_on_cpu_with_a_warning(tmp_path):
    # the checkpoint of a GPU run (earlier format: a list of CUDA states) resumed on a machine without a GPU
    config = TrainConfig(max_steps=2, warmup=2, amp=False)
    model, batches, loss_fn = _lm_setup()
    train(model, batches, config, loss_fn=loss_fn, out_dir=tmp_path, progress=False, log=lambda _: None)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    state["rng"] = {"torch": state["rng"]["torch"], "python": state["rng"]["python"], "cuda": [torch.zeros(16)]}
    torch.save(state, tmp_path / "checkpoint.pt")
    more = TrainConfig(max_steps=3, warmup=2, amp=False)
    model, batches, loss_fn = _lm_setup()
    with pytest.warns(UserWarning, match="saved while training on cuda and is resumed on cpu.*dropout"):
        resumed = train(
            model, batches, more, loss_fn=loss_fn, out_dir=tmp_path, resume=True, progress=False, log=lambda _: None
        )
    assert resumed.steps == 3


def test_a_checkpoint_saved_on_cpu_resumed_on_cuda_warns(monkeypatch):
    from lib.training.resume import rng_state, set_rng_state

    calls = _fake_cuda(monkeypatch)
    state = rng_state(torch.device("cpu"))
    with pytest.warns(UserWarning, match="saved while training on cpu and is resumed on cuda:0: .* the cuda generator"):
        set_rng_state(state, torch.device("cuda", 0))
    assert calls == []


@pytest.mark.gpu
def test_resume_on_cuda_restores_the_gpu_generator(tmp_path):
    # dropout on the GPU draws from the GPU's generator: interrupted at step 2 and resumed, the run must match
    config = TrainConfig(max_steps=4, warmup=2, eval_every_steps=2, amp=True)
    straight, batches, loss_fn = _lm_setup()
    full = train(straight, batches, config, loss_fn=loss_fn, device="cuda", progress=False, log=lambda _: None)
    model, batches, loss_fn = _lm_setup()
    half = TrainConfig(max_steps=2, warmup=2, eval_every_steps=2, amp=True)
    train(model, batches, half, loss_fn=loss_fn, out_dir=tmp_path, device="cuda", progress=False, log=lambda _: None)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["rng"]["device"] == "cuda"
    model, batches, loss_fn = _lm_setup()
    resumed = train(
        model,
        batches,
        config,
        loss_fn=loss_fn,
        out_dir=tmp_path,
        resume=True,
        device="cuda",
        progress=False,
        log=lambda _: None,
    )
    assert [h["step"] for h in resumed.history] == [2, 4]
    # bitwise equality is not promised on a GPU (atomic adds in the embedding's backward), closeness is
    assert resumed.history[-1]["train_loss"] == pytest.approx(full.history[-1]["train_loss"], abs=1e-4)
    for p, q in zip(straight.state_dict().values(), model.state_dict().values(), strict=True):
        torch.testing.assert_close(p, q, atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
def test_the_gpu_recipe_bf16_tf32_pinned_batches_and_compile_trains():
    from lib.training import enable_tf32
    from lib.training.device import to_device

    matmul = torch.backends.cuda.matmul
    before = getattr(matmul, "fp32_precision", None)
    enable_tf32(True)
    try:
        batch = torch.randint(4, 30, (8, 6))
        moved = to_device(batch, torch.device("cuda"))
        assert moved.is_cuda and torch.equal(moved.cpu(), batch)
        config = TrainConfig(max_steps=6, warmup=2, eval_every_steps=3, amp=True)
        results = []
        for compile in (False, True):
            # No dropout: compiled code draws its dropout masks from its own random streams, so with dropout the
            # two runs would differ by their masks rather than by their arithmetic.
            model, batches, loss_fn = _lm_setup(dropout=0.0)
            results.append(
                train(
                    model,
                    batches,
                    config,
                    loss_fn=loss_fn,
                    device="cuda",
                    compile=compile,
                    progress=False,
                    log=lambda _: None,
                )
            )
        eager, compiled = (r.history[-1]["train_loss"] for r in results)
        assert compiled == pytest.approx(eager, rel=2e-2)  # bf16: close, not equal
    finally:
        if before is not None:
            matmul.fp32_precision = before
        else:
            enable_tf32(False)


# --- a diverging run is never saved as good (issue 34) ------------------------------------------------------------


@pytest.mark.parametrize("clip_norm", [1.0, None])
def test_a_diverging_run_stops_naming_the_step_and_the_learning_rate(tmp_path, clip_norm):
    # --peak-lr 1e30 made the loss NaN from step 3; training went on and saved NaN weights under a valid manifest
    config = TrainConfig(max_steps=12, warmup=2, eval_every_steps=1, peak_lr=1e30, amp=False, clip_norm=clip_norm)
    model, batches, loss_fn = _lm_setup()
    with pytest.raises(TrainingDiverged, match=r"^training diverged at step \d+: .*learning rate.*peak_lr 1e\+30"):
        train(model, batches, config, loss_fn=loss_fn, out_dir=tmp_path, progress=False, log=lambda _: None)
    if (tmp_path / "checkpoint.pt").exists():  # a checkpoint of the steps before, never of non-finite weights
        state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["model"]
        assert all(torch.isfinite(v).all() for v in state.values() if v.is_floating_point())
        assert state.keys() == model.state_dict().keys()


def test_non_finite_weights_are_neither_saved_nor_loaded(tmp_path):
    model = _tiny_run(tmp_path / "run")
    with torch.no_grad():
        model.src_embed.weight[5, 0] = float("nan")
    with pytest.raises(ValueError, match=r"src_embed\.weight holds NaN or infinite values"):
        save_run(tmp_path / "nan", model, TOKENIZER)
    assert not (tmp_path / "nan").exists()
    # a run whose weights are NaN however they got there (an older version, another tool) is refused on loading
    state = torch.load(tmp_path / "run" / "model.pt", weights_only=True)
    state["src_embed.weight"][5, 0] = float("inf")
    torch.save(state, tmp_path / "run" / "model.pt")
    write_manifest(tmp_path / "run")
    with pytest.raises(RunError, match=r"model\.pt: weight src_embed\.weight holds NaN or infinite values"):
        load_run(tmp_path / "run")


def test_every_json_of_a_run_is_strict_json(tmp_path):
    # results.json held a bare NaN, which is not JSON: browsers, jq and strict parsers refuse the file
    model = Transformer(TransformerConfig.tiny(TOKENIZER.get_vocab_size()))
    history = [{"step": 1, "val_loss": float("nan")}]
    save_run(tmp_path, model, TOKENIZER, history=history, results={"final_val_loss": float("nan"), "x": float("inf")})
    update_results(tmp_path, {"bleu": float("nan")})

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    for file in tmp_path.glob("*.json"):
        json.loads(file.read_text(), parse_constant=refuse)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results == {"final_val_loss": None, "x": None, "bleu": None}
    assert load_run(tmp_path).history == [{"step": 1, "val_loss": None}]


def _manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def test_a_manifest_records_every_files_size(tmp_path):
    _tiny_run(tmp_path / "run")
    manifest = _manifest(tmp_path / "run")
    assert manifest["bytes"] == {name: (tmp_path / "run" / name).stat().st_size for name in manifest["files"]}


def test_a_manifest_naming_a_huge_file_outside_the_run_is_refused_before_anything_is_read(tmp_path):
    """A sparse 64-GiB file listed in the manifest: refused by name at once, never hashed (a hang, issue 45)."""
    _tiny_run(tmp_path / "run")
    folder = tmp_path / "run"
    with open(folder / "huge.bin", "wb") as f:
        f.truncate(64 << 30)
    manifest = _manifest(folder)
    manifest["files"]["huge.bin"] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunError, match=r"manifest\.json: lists huge\.bin, not a file of a run"):
        load_run(folder)


def test_a_file_of_another_size_than_the_manifest_says_is_refused_before_it_is_hashed(tmp_path, monkeypatch):
    _tiny_run(tmp_path / "run")
    folder = tmp_path / "run"
    with open(folder / "model.pt", "r+b") as f:
        f.truncate(64 << 30)  # a sparse 64-GiB model.pt: hashing it would take minutes
    hashed = []
    monkeypatch.setattr("lib.checkpoint.sha256_file", lambda path: hashed.append(path) or "0" * 64)
    with pytest.raises(RunError, match=r"model\.pt: is 68,719,476,736 bytes, more than a run's file may be"):
        load_run(folder)
    assert hashed == []
    monkeypatch.setattr("lib.checkpoint.MAX_RUN_FILE_BYTES", 1 << 40)
    with pytest.raises(RunError, match=r"model\.pt: is 68,719,476,736 bytes, the manifest says [\d,]+: changed"):
        load_run(folder)
    assert hashed == []


def test_a_manifest_without_sizes_still_loads(shipped_copy):
    """The shipped runs' manifests were written before sizes were recorded: their files are hashed as before."""
    assert "bytes" not in _manifest(shipped_copy)
    load_run(shipped_copy)
