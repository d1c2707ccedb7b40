"""lib.export: the shipped model as ONNX graphs that onnxruntime decodes exactly as lib.translate does.

One fp16 export of models/de-en (about 8 s on 2 quiet CPU cores) serves every test that needs it; those tests are
marked slow. Skipped, with the reason, where onnx, onnxscript or onnxruntime is not installed (`pip install -r
requirements.txt` installs them).
"""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest
import torch

from lib import export
from lib.bpe import decode
from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.data import load_multi30k
from lib.export import DecoderGraph, EncoderGraph, OnnxTranslator, export_onnx
from lib.files import sha256_file
from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID
from lib.translate import DOMAIN_RULE, translate, translation_attention

N_SENTENCES = 20  # the first 20 sentences of the test set, as the issue asks; about 1 s with onnxruntime


def _need_onnx():
    for name in export.REQUIRED_PACKAGES:
        pytest.importorskip(name, reason=f"{name} is not installed (pip install -r requirements.txt)")


@pytest.fixture(scope="module")
def shipped():
    return load_run(SHIPPED_MODEL)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    _need_onnx()
    folder = tmp_path_factory.mktemp("onnx-fp16")
    manifest = export_onnx(SHIPPED_MODEL, folder, "fp16")
    return folder, manifest


@pytest.fixture(scope="module")
def translator(exported):
    return OnnxTranslator(exported[0])


def test_export_graphs_compute_what_encode_and_decode_compute(shipped):
    """The export wrappers skip only the checks: same memory, mask and last-position logits as the model."""
    model = shipped.model
    src = torch.tensor([[5, 6, 7, 8, EOS_ID, PAD_ID], [9, 10, 11, 12, 13, EOS_ID]])
    tgt = torch.tensor([[BOS_ID, 20, 21], [BOS_ID, 22, 23]])
    with torch.no_grad():
        memory, mask = model.encode(src)
        got_memory, got_mask = EncoderGraph(model)(src)
        logits, cross = DecoderGraph(model)(tgt, memory, mask)
        expected = model.decode(tgt, memory, mask)[:, -1]
        _, maps = model(src, tgt, return_attention=True)
    torch.testing.assert_close(got_memory, memory)
    assert torch.equal(got_mask, mask)
    torch.testing.assert_close(logits, expected, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(cross, torch.stack(maps.cross, dim=1))
    assert cross.shape == (2, 3, 4, 3, 6)  # (batch, layers, heads, seq_t, seq_s)


@pytest.mark.slow
def test_onnx_greedy_equals_lib_translate_on_the_test_set(translator, shipped, multi30k_dir):
    german = [de for de, _ in load_multi30k("test_2016_flickr")[:N_SENTENCES]]
    expected = translate(shipped.model, shipped.tokenizer, german)  # what `python -m lib.translate` prints
    got = translator.translate(german)
    mismatches = [(i, e, g) for i, (e, g) in enumerate(zip(expected, got)) if e != g]
    assert not mismatches, mismatches
    assert len(set(got)) > N_SENTENCES // 2  # real, different translations, not one string repeated


@pytest.mark.slow
def test_cross_attention_matches_torch_and_rows_sum_to_one(translator, shipped):
    sentence = "Ein Hund läuft durch den Schnee."
    reference = translation_attention(shipped.model, shipped.tokenizer, sentence)
    src_ids = shipped.tokenizer.token_to_id
    ids = [src_ids(t) for t in reference.source_tokens[:-1]]  # without </s>, which greedy() appends
    out, cross = translator.greedy(ids)
    assert decode(shipped.tokenizer, out) == reference.translation
    want = torch.stack([w[0] for w in reference.weights.cross]).numpy()  # (layers, heads, seq_t, seq_s)
    assert cross.shape == want.shape
    np.testing.assert_allclose(cross, want, atol=0.02)  # fp16 weights, float32 arithmetic
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_manifest_lists_every_file_with_its_checksum_and_the_ids(exported):
    folder, manifest = exported
    assert json.loads((folder / "manifest.json").read_text()) == manifest
    assert set(manifest["files"]) == {"encoder.onnx", "decoder.onnx", "weights.bin", "tokenizer.json"}
    for name, entry in manifest["files"].items():
        assert sha256_file(folder / name) == entry["sha256"], name
        assert (folder / name).stat().st_size == entry["bytes"], name
    assert manifest["special_tokens"] == {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    assert manifest["vocab_size"] == 8000 and manifest["max_len"] == 256
    assert manifest["domain"] == DOMAIN_RULE  # the live page flags out-of-domain input by lib.translate's rule
    assert [i["name"] for i in manifest["graphs"]["decoder.onnx"]["inputs"]] == ["tgt", "memory", "src_mask"]
    assert [o["name"] for o in manifest["graphs"]["decoder.onnx"]["outputs"]] == ["logits", "cross_attention"]
    assert (folder / "tokenizer.json").read_bytes() == (SHIPPED_MODEL / "tokenizer.json").read_bytes()


@pytest.mark.slow
def test_weights_are_fp16_and_the_tied_embedding_is_stored_once(exported, shipped):
    import onnx

    folder, manifest = exported
    state = shipped.model.state_dict()  # src_embed, tgt_embed and output hold one tied 8000 x 128 matrix
    matrices = sum(v.numel() for v in state.values() if v.dim() >= 2) - 2 * 8000 * 128 + 256 * 128  # + the PE table
    vectors = sum(v.numel() for v in state.values() if v.dim() == 1 and v.numel() >= 256)  # float32, > 1 KB
    # every matrix once at 2 bytes, the long vectors at 4, at most 64 bytes of alignment per tensor
    fp16 = 2 * matrices + 4 * vectors
    assert fp16 <= manifest["files"]["weights.bin"]["bytes"] <= fp16 + 64 * len(state)
    where = {}
    for name in ("encoder.onnx", "decoder.onnx"):
        graph = onnx.load(folder / name, load_external_data=False).graph
        for init in graph.initializer:
            if tuple(init.dims) == (8000, 128):
                assert init.data_type == onnx.TensorProto.FLOAT16
                where[name] = {e.key: e.value for e in init.external_data}
    assert where["encoder.onnx"] == where["decoder.onnx"]  # one copy in weights.bin, read by both graphs


@pytest.mark.slow
def test_a_damaged_file_is_refused(exported, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(exported[0], folder)
    data = bytearray((folder / "weights.bin").read_bytes())
    data[1000] ^= 0xFF
    (folder / "weights.bin").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"weights\.bin: SHA-256 differs"):
        OnnxTranslator(folder)
    (folder / "manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"no manifest\.json"):
        OnnxTranslator(folder)


@pytest.mark.slow
def test_greedy_rejects_ids_outside_the_vocabulary(translator):
    with pytest.raises(ValueError, match="ids in"):
        translator.greedy([5, 8000])
    with pytest.raises(ValueError, match="at most 255"):
        translator.greedy([5] * 256)


def test_bad_arguments(tmp_path, shipped):
    with pytest.raises(ValueError, match="dtype must be one of"):
        export_onnx(SHIPPED_MODEL, tmp_path, "bf16")
    with pytest.raises(TypeError, match="Transformer"):
        EncoderGraph(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="Transformer"):
        DecoderGraph(None)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--run", str(SHIPPED_MODEL), "--out", "x", "--dtype", "bf16"], "argument --dtype: must be one of"),
        (["--run", "no/such/run", "--out", "x"], "argument --run: no/such/run is not a run folder"),
        (["--run", str(SHIPPED_MODEL), "--out", "x", "--verify", "-1"], "argument --verify: must be >= 0"),
        (["--out", "x"], "the following arguments are required: --run"),
    ],
)
def test_command_line_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        export.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("python -m lib.export: error:") and message in err[-1], err


def test_command_line_says_what_to_install_when_onnx_is_missing(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # `import onnxscript` now raises ImportError
    assert export.main(["--run", str(SHIPPED_MODEL), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "needs the package 'onnxscript'" in err and "pip install -r requirements.txt" in err
    assert not (tmp_path / "out").exists()  # nothing written
