"""How fast does lib's Transformer train on this machine, and how does it compare with torch's own modules?

Three measurements, printed as a table (and, with ``--json``, written to a file):

1. Training throughput of ``lib.transformer.Transformer`` for each preset, in target tokens per second:
   non-pad target tokens of real Multi30k batches (the book's BPE tokenizer, ``make_batches(...,
   shuffle=True, seed=0)``) divided by the time of forward + label-smoothed loss + backward + gradient
   clipping + Adam step, the same step as ``lib.training.train``. Measured in float32 and, where
   ``mixed_precision`` picks a mixed-precision dtype (CUDA, or a CPU with native bfloat16), also
   under that autocast. From it: the estimated minutes per epoch of the train split.
2. The same for an equivalent model built from ``torch.nn.Transformer`` (same sizes, dropout, pre-/post-LN,
   tied embeddings, sinusoidal positions and masks), on the same batches, and the ratio lib / torch
   (the book's target: at least 0.9).
3. Forward-only CPU timing of ``lib.attention.MultiHeadAttention`` against ``torch.nn.MultiheadAttention``
   with copied weights, at one long sequence, with and without the attention weights returned.

Every comparison is repeated (``--repeats``) with the order of the contestants alternated, and the best
(training) or median (attention) time is kept, so that a busy machine does not favour one side.

    python bench/train_speed.py [--presets multi30k,multi30k_wide] [--steps 30] [--warmup-steps 5]
                                [--max-tokens 3000] [--threads N] [--device cpu|cuda] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time
import warnings

import torch
from torch import Tensor, nn

from lib.attention import MultiHeadAttention
from lib.bpe import multi30k_tokenizer
from lib.data import Batch, encode_pairs, load_multi30k, make_batches
from lib.files import atomic_write_text, strict_json
from lib.positional import sinusoidal_positional_encoding
from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID
from lib.training import TrainConfig, amp_context, label_smoothed_cross_entropy
from lib.transformer import Transformer, TransformerConfig

PRESETS = TransformerConfig.PRESETS

VOCAB_SIZE = 8000  # the book's joint German-English BPE vocabulary
SEED = 0


# --------------------------------------------------------------------------------------------------
# The machine
# --------------------------------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's name from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_has_bf16() -> bool:
    """True when this CPU computes bfloat16 natively (Intel AMX or AVX512-BF16; Linux only)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def mixed_precision(device: torch.device, enabled: bool):
    """``(autocast context, dtype or None)``: lib.training's choice on CUDA; bf16 autocast on a CPU with native
    bfloat16 (which lib.training does not use: this benchmark is where that decision is measured)."""
    if enabled and device.type == "cpu" and cpu_has_bf16():
        return torch.autocast("cpu", dtype=torch.bfloat16), torch.bfloat16
    return amp_context(device, enabled)


def machine_facts(device: torch.device) -> dict:
    """What the numbers depend on: CPU, GPU, torch version, threads, device, native bfloat16."""
    facts = dict(
        cpu=cpu_model(),
        torch=torch.__version__,
        python=platform.python_version(),
        threads=torch.get_num_threads(),
        device=str(device),
        cpu_native_bf16=cpu_has_bf16(),
    )
    if device.type == "cuda":
        facts["gpu"] = torch.cuda.get_device_name(device)
    return facts


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work, so that a timer measures the work and not just its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------------------------------------
# The reference model: the same Transformer assembled from torch.nn.Transformer
# --------------------------------------------------------------------------------------------------


class TorchTransformer(nn.Module):
    """The equivalent of ``lib.transformer.Transformer`` built from ``torch.nn.Transformer``.

    One token embedding shared by source, target and output projection, multiplied by √d_model, plus the
    sinusoidal positional encoding, then dropout; ``nn.Transformer`` with the config's sizes, dropout,
    ReLU and ``norm_first``, batch first. Masks: source padding is hidden from the encoder and from the
    cross-attention; the decoder's self-attention is causal.

    Differences from lib that remain: ``nn.Transformer`` always ends both stacks with a LayerNorm, which
    lib does only for pre-LN (``norm_first=True``; all capstone presets are pre-LN, so they match there).

    Args:
        config: a :class:`lib.transformer.TransformerConfig` with ``share_embeddings=True``.

    Shapes: ``src (batch, seq_s)``, ``tgt (batch, seq_t)`` token ids → logits ``(batch, seq_t, vocab)``.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        if not config.share_embeddings:
            raise ValueError("TorchTransformer needs share_embeddings=True (one joint vocabulary)")
        self.config = config
        self.embed = nn.Embedding(config.tgt_vocab_size, config.d_model, padding_idx=config.pad_id)
        self.register_buffer("pe", sinusoidal_positional_encoding(config.max_len, config.d_model), persistent=False)
        self.dropout = nn.Dropout(config.dropout)
        with warnings.catch_warnings():
            # torch warns that its inference-only nested-tensor fast path is off for pre-LN; we train.
            warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
            self.transformer = nn.Transformer(
                d_model=config.d_model,
                nhead=config.num_heads,
                num_encoder_layers=config.num_encoder_layers,
                num_decoder_layers=config.num_decoder_layers,
                dim_feedforward=config.d_ff,
                dropout=config.dropout,
                activation=config.activation,
                layer_norm_eps=config.layer_norm_eps,
                batch_first=True,
                norm_first=config.norm_first,
            )
        # nn.Transformer uses one dropout everywhere; lib has a separate (default 0) dropout on the
        # attention weights. nn.MultiheadAttention keeps that probability in its `dropout` attribute.
        for layer in list(self.transformer.encoder.layers) + list(self.transformer.decoder.layers):
            for module in layer.modules():
                if isinstance(module, nn.MultiheadAttention):
                    module.dropout = config.attention_dropout
        nn.init.normal_(self.embed.weight, mean=0.0, std=config.d_model**-0.5)
        with torch.no_grad():
            self.embed.weight[config.pad_id].zero_()

    def num_parameters(self) -> int:
        """Number of trainable parameters (the tied embedding counts once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def embed_tokens(self, tokens: Tensor) -> Tensor:
        """Token ids ``(batch, seq)`` → ``(batch, seq, d_model)``: embedding · √d_model + PE, then dropout."""
        x = self.embed(tokens) * math.sqrt(self.config.d_model)
        return self.dropout(x + self.pe[: tokens.size(1)])

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        src_padding = src == self.config.pad_id  # torch's convention: True = ignore this key
        seq_t = tgt.size(1)
        future = torch.ones(seq_t, seq_t, dtype=torch.bool, device=tgt.device).triu(1)  # True = blocked
        x = self.transformer(
            self.embed_tokens(src),
            self.embed_tokens(tgt),
            tgt_mask=future,
            tgt_is_causal=True,
            src_key_padding_mask=src_padding,
            memory_key_padding_mask=src_padding,
        )
        return x @ self.embed.weight.T  # output projection tied to the embedding


# --------------------------------------------------------------------------------------------------
# Training throughput
# --------------------------------------------------------------------------------------------------


def load_batches(max_tokens: int, data_root: str | None) -> tuple[list[Batch], int]:
    """One epoch of Multi30k training batches, as ``lib.training.translation_batches`` makes them for epoch 0.

    The book's tokenizer (``multi30k_tokenizer(8000)``), pairs longer than ``TrainConfig.max_len``
    dropped, ``make_batches(..., shuffle=True, seed=0)``.

    Returns:
        the batches and the tokenizer's vocabulary size.
    """
    tokenizer = multi30k_tokenizer(VOCAB_SIZE, root=data_root)
    examples = encode_pairs(load_multi30k("train", data_root), tokenizer, max_len=TrainConfig.max_len)
    batches = make_batches(examples, max_tokens, PAD_ID, BOS_ID, EOS_ID, shuffle=True, seed=SEED)
    return batches, tokenizer.get_vocab_size()


class TrainingRun:
    """A model with its optimizer and precision: what one contestant of the throughput race needs.

    Args:
        name: label for the table, e.g. ``"lib fp32"``.
        model: lib's or torch's Transformer (moved to ``device``, put in training mode).
        device: where to train.
        amp: use the mixed precision that ``mixed_precision`` chooses for ``device``.
    """

    def __init__(self, name: str, model: nn.Module, device: torch.device, amp: bool) -> None:
        self.name = name
        self.model = model.to(device).train()
        self.device = device
        # lib.training's defaults; a constant learning rate (the schedule costs nothing measurable).
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=TrainConfig.betas, eps=TrainConfig.eps)
        self.autocast, self.amp_dtype = mixed_precision(device, amp)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp_dtype == torch.float16)
        self.label_smoothing = TrainConfig.label_smoothing
        self.clip_norm = TrainConfig.clip_norm

    def step(self, batch: Batch) -> None:
        """One optimisation step on ``batch`` (already on the device), as in ``lib.training.train``."""
        with self.autocast:
            logits = self.model(batch.src, batch.tgt_in)
        loss = label_smoothed_cross_entropy(logits, batch.tgt_out, self.label_smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def time_steps(self, batches: list[Batch]) -> float:
        """Seconds to train on ``batches``, one step each."""
        synchronize(self.device)
        start = time.perf_counter()
        for batch in batches:
            self.step(batch)
        synchronize(self.device)
        return time.perf_counter() - start


def build_runs(preset: str, vocab_size: int, device: torch.device, torch_amp: bool) -> list[TrainingRun]:
    """The contestants for one preset: lib fp32, torch fp32, lib with autocast (if any), torch with autocast (if asked).

    Every model starts from the same seed; lib and torch initialise their weights differently, which
    does not matter for speed.
    """
    config = TransformerConfig.preset(preset, vocab_size)
    amp_dtype = mixed_precision(device, True)[1]
    runs = []
    torch.manual_seed(SEED)
    runs.append(TrainingRun("lib fp32", Transformer(config), device, amp=False))
    torch.manual_seed(SEED)
    runs.append(TrainingRun("torch fp32", TorchTransformer(config), device, amp=False))
    if amp_dtype is not None:
        short = str(amp_dtype).replace("torch.", "").replace("bfloat16", "bf16").replace("float16", "fp16")
        torch.manual_seed(SEED)
        runs.append(TrainingRun(f"lib {short}", Transformer(config), device, amp=True))
        if torch_amp:
            torch.manual_seed(SEED)
            runs.append(TrainingRun(f"torch {short}", TorchTransformer(config), device, amp=True))
    return runs


def benchmark_training(
    preset: str,
    batches: list[Batch],
    vocab_size: int,
    steps: int,
    warmup_steps: int,
    repeats: int,
    device: torch.device,
    torch_amp: bool = False,
) -> dict:
    """Target tokens per second of every contestant for one preset, and minutes per epoch.

    Each contestant first trains on ``warmup_steps`` untimed batches; then, ``repeats`` times, every
    contestant trains on the same ``steps`` batches, the order reversed on every other repeat. The best
    (shortest) time of each contestant counts.

    Returns:
        dict with ``parameters`` (lib, torch), ``epoch_target_tokens``, per contestant ``tokens_per_s``,
        ``seconds_per_step``, ``minutes_per_epoch``, ``amp_dtype`` and all ``repeat_seconds``, and
        ``lib_over_torch_fp32`` (≥ 0.9 is the book's target).
    """
    if len(batches) < warmup_steps + steps:
        raise ValueError(f"need {warmup_steps + steps} batches, the epoch has only {len(batches)}")
    warmup = [b.to(device) for b in batches[:warmup_steps]]
    timed = [b.to(device) for b in batches[warmup_steps : warmup_steps + steps]]
    timed_tokens = sum(b.num_tokens for b in timed)
    epoch_tokens = sum(b.num_tokens for b in batches)

    runs = build_runs(preset, vocab_size, device, torch_amp)
    for run in runs:
        for batch in warmup:
            run.step(batch)
    seconds = {run.name: [] for run in runs}
    for repeat in range(repeats):
        order = runs if repeat % 2 == 0 else list(reversed(runs))
        for run in order:
            seconds[run.name].append(run.time_steps(timed))

    results = {}
    for run in runs:
        best = min(seconds[run.name])
        tokens_per_s = timed_tokens / best
        results[run.name] = dict(
            amp_dtype=None if run.amp_dtype is None else str(run.amp_dtype),
            tokens_per_s=tokens_per_s,
            seconds_per_step=best / steps,
            minutes_per_epoch=epoch_tokens / tokens_per_s / 60.0,
            repeat_seconds=seconds[run.name],
        )
    return dict(
        parameters=dict(lib=runs[0].model.num_parameters(), torch=runs[1].model.num_parameters()),
        epoch_batches=len(batches),
        epoch_target_tokens=epoch_tokens,
        timed_target_tokens=timed_tokens,
        runs=results,
        lib_over_torch_fp32=results["lib fp32"]["tokens_per_s"] / results["torch fp32"]["tokens_per_s"],
    )


# --------------------------------------------------------------------------------------------------
# Attention forward pass
# --------------------------------------------------------------------------------------------------


def torch_attention_like(lib_mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """A ``torch.nn.MultiheadAttention`` (batch first) holding the same weights as ``lib_mha``.

    torch keeps W^Q, W^K, W^V stacked in one ``in_proj_weight`` of shape ``(3 d_model, d_model)``.
    """
    d_model = lib_mha.d_model
    ref = nn.MultiheadAttention(d_model, lib_mha.num_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([lib_mha.w_q.weight, lib_mha.w_k.weight, lib_mha.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([lib_mha.w_q.bias, lib_mha.w_k.bias, lib_mha.w_v.bias]))
        ref.out_proj.weight.copy_(lib_mha.w_o.weight)
        ref.out_proj.bias.copy_(lib_mha.w_o.bias)
    return ref.eval()


def median_ms(calls: dict, repeats: int, warmup: int = 2) -> dict:
    """Median milliseconds per call of each function in ``calls`` (name → function of no arguments).

    The functions take turns (order reversed every other round), after ``warmup`` untimed rounds.
    """
    for _ in range(warmup):
        for fn in calls.values():
            fn()
    times = {name: [] for name in calls}
    names = list(calls)
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else reversed(names):
            start = time.perf_counter()
            calls[name]()
            times[name].append((time.perf_counter() - start) * 1000.0)
    return {name: statistics.median(t) for name, t in times.items()}


@torch.no_grad()
def benchmark_attention(d_model: int, num_heads: int, batch: int, seq_len: int, repeats: int) -> dict:
    """Forward-pass milliseconds of lib's vs torch's multi-head self-attention on the CPU (eval, no grad).

    Case ``weights``: lib (``fused=False``, ``return_attention=True``) vs torch (``need_weights=True``,
    ``average_attn_weights=False``); both return the per-head weights ``(batch, heads, seq, seq)``.
    Case ``fused``: lib (``fused=True``, ``return_attention=False``) vs torch (``need_weights=False``).

    Returns:
        per case: ``lib_ms``, ``torch_ms``, ``torch_over_lib`` (> 1: lib is faster) and
        ``max_abs_diff`` of the outputs (a check that both compute the same thing).
    """
    torch.manual_seed(SEED)
    lib_plain = MultiHeadAttention(d_model, num_heads, fused=False).eval()
    lib_fused = MultiHeadAttention(d_model, num_heads, fused=True).eval()
    lib_fused.load_state_dict(lib_plain.state_dict())
    ref = torch_attention_like(lib_plain)
    x = torch.randn(batch, seq_len, d_model)

    cases = {
        "weights": (
            lambda: lib_plain(x, x, x, return_attention=True),
            lambda: ref(x, x, x, need_weights=True, average_attn_weights=False),
        ),
        "fused": (lambda: lib_fused(x, x, x, return_attention=False), lambda: ref(x, x, x, need_weights=False)),
    }
    results = dict(d_model=d_model, num_heads=num_heads, batch=batch, seq_len=seq_len)
    for case, (lib_call, torch_call) in cases.items():
        max_abs_diff = (lib_call()[0] - torch_call()[0]).abs().max().item()
        ms = median_ms({"lib": lib_call, "torch": torch_call}, repeats)
        results[case] = dict(
            lib_ms=ms["lib"],
            torch_ms=ms["torch"],
            torch_over_lib=ms["torch"] / ms["lib"],
            max_abs_diff=max_abs_diff,
        )
    return results


# --------------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------------


def print_report(report: dict) -> None:
    """Print the machine facts and the two tables."""
    m, s = report["machine"], report["settings"]
    print(
        f"Machine: {m['cpu']} | torch {m['torch']} | threads {m['threads']} | device {m['device']}"
        f" | CPU native bf16: {'yes' if m['cpu_native_bf16'] else 'no'}" + (f" | GPU {m['gpu']}" if "gpu" in m else "")
    )
    print()
    print(
        f"Training throughput: best of {s['repeats']} x {s['steps']} Multi30k batches "
        f"(after {s['warmup_steps']} warm-up), max_tokens {s['max_tokens']}; "
        f"tokens = non-pad target tokens"
    )
    print(f"{'preset':<14} {'params':>8}  {'model':<12} {'tokens/s':>9} {'s/step':>7} {'min/epoch':>9}")
    for preset, r in report["training"].items():
        print(
            f"{preset:<14} {r['parameters']['lib'] / 1e6:>7.2f}M  (epoch: {r['epoch_batches']} batches, "
            f"{r['epoch_target_tokens']:,} target tokens)"
        )
        for name, run in r["runs"].items():
            print(
                f"{'':<14} {'':>8}  {name:<12} {run['tokens_per_s']:>9.0f} {run['seconds_per_step']:>7.3f} "
                f"{run['minutes_per_epoch']:>9.2f}"
            )
        ratio = r["lib_over_torch_fp32"]
        verdict = "meets" if ratio >= 0.9 else "BELOW"
        print(f"{'':<14} {'':>8}  lib/torch fp32 = {ratio:.2f} ({verdict} the book's target of 0.9)")
    print()
    print(
        "Attention forward on the CPU (eval, no grad, self-attention), median ms per call; "
        "torch/lib > 1 means lib is faster"
    )
    print(
        f"{'d_model':>7} {'heads':>5} {'batch':>5} {'seq':>5}  {'case':<8} {'lib ms':>9} {'torch ms':>9} "
        f"{'torch/lib':>9} {'max|diff|':>9}"
    )
    for a in report["attention"]:
        for case in ("weights", "fused"):
            c = a[case]
            print(
                f"{a['d_model']:>7} {a['num_heads']:>5} {a['batch']:>5} {a['seq_len']:>5}  {case:<8} "
                f"{c['lib_ms']:>9.2f} {c['torch_ms']:>9.2f} {c['torch_over_lib']:>9.2f} {c['max_abs_diff']:>9.1e}"
            )
    print("  weights: lib fused=False, return_attention=True vs torch need_weights=True, average_attn_weights=False")
    print("  fused:   lib fused=True,  return_attention=False vs torch need_weights=False")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--presets",
        default="multi30k,multi30k_wide",
        help=f"comma-separated TransformerConfig presets, from {', '.join(PRESETS)}",
    )
    p.add_argument("--steps", type=int, default=30, help="timed training steps per repeat")
    p.add_argument("--warmup-steps", type=int, default=5, help="untimed training steps before timing")
    p.add_argument("--repeats", type=int, default=3, help="repeats of every training timing (best counts)")
    p.add_argument("--max-tokens", type=int, default=TrainConfig.max_tokens, help="tokens per batch")
    p.add_argument("--torch-amp", action="store_true", help="also time the torch model under autocast")
    p.add_argument("--seq-len", type=int, default=512, help="sequence length of the attention timing")
    p.add_argument("--attn-batch", type=int, default=8, help="batch size of the attention timing")
    p.add_argument("--attn-heads", type=int, default=8, help="heads of the attention timing")
    p.add_argument("--attn-d-models", default="512,256", help="comma-separated d_model values of the attention timing")
    p.add_argument("--attn-repeats", type=int, default=10, help="timed calls per attention case (median counts)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default=None,
        help="where to train (default: cuda if available, else cpu); attention is timed on the CPU",
    )
    p.add_argument(
        "--data", default=None, help="folder with the Multi30k .gz files (default: MULTI30K_DIR or download)"
    )
    p.add_argument("--json", default=None, help="also write every number to this JSON file")
    args = p.parse_args(argv)
    args.presets = [name.strip() for name in args.presets.split(",") if name.strip()]
    unknown = [name for name in args.presets if name not in PRESETS]
    if unknown:
        p.error(f"unknown preset(s) {unknown}; choose from {list(PRESETS)}")
    args.attn_d_models = [int(d) for d in args.attn_d_models.split(",") if d.strip()]
    for name in ("steps", "repeats", "max_tokens", "seq_len", "attn_batch", "attn_heads", "attn_repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup_steps < 0:
        p.error("--warmup-steps must be at least 0")
    return args


def main(argv=None) -> dict:
    """Run the benchmark, print the report and return it as a dict (also written to ``--json``)."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    report = dict(
        machine=machine_facts(device),
        settings=dict(
            presets=args.presets,
            steps=args.steps,
            warmup_steps=args.warmup_steps,
            repeats=args.repeats,
            max_tokens=args.max_tokens,
            seq_len=args.seq_len,
            attn_batch=args.attn_batch,
            attn_heads=args.attn_heads,
            attn_repeats=args.attn_repeats,
        ),
        training={},
        attention=[],
    )
    batches, vocab_size = load_batches(args.max_tokens, args.data)
    report["settings"]["vocab_size"] = vocab_size
    for preset in args.presets:
        report["training"][preset] = benchmark_training(
            preset, batches, vocab_size, args.steps, args.warmup_steps, args.repeats, device, args.torch_amp
        )
    for d_model in args.attn_d_models:
        report["attention"].append(
            benchmark_attention(d_model, args.attn_heads, args.attn_batch, args.seq_len, args.attn_repeats)
        )
    print_report(report)
    if args.json:
        atomic_write_text(args.json, strict_json(report, indent=2, nan="warn"))
        print(f"\nwrote {args.json}")
    return report


if __name__ == "__main__":
    main()
