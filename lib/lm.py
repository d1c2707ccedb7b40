"""Training language models (BERT's masked LM, GPT's causal LM) on single sentences with a step or minute budget.

The seq2seq loop in :mod:`lib.train` trains on (source, target) pairs; BERT and GPT see one token sequence at a
time and differ only in their loss. :func:`train_lm` therefore takes the loss as a function
``loss_fn(model, batch) -> scalar`` and owns the rest: shuffled padded batches, Adam with the warm-up schedule
of :func:`lib.train.noam_lr`, gradient clipping, a tqdm bar, periodic validation and a history.

Determinism: the seed fixes the model's dropout, the batch order and (through ``generator``) any randomness
the loss draws, e.g. BERT's masking, so a step budget gives the same numbers on every run on a given machine.

Source: Adam (β₁ = 0.9, β₂ = 0.98, ε = 1e-9) with warm-up, Vaswani et al. (2017), §5.3, Eq. (3); Devlin et al.
(2019), Appendix A.2 and Radford et al. (2018), §4.1 use warm-up followed by decay as well.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator, Sequence

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from .special_tokens import BOS_ID, EOS_ID, PAD_ID
from .train import noam_lr

__all__ = ["LMTrainConfig", "LMHistory", "pad_batch", "sentence_batches", "gpt_sequences", "unigram_counts", "train_lm"]


@dataclass
class LMTrainConfig:
    """Settings of :func:`train_lm`.

    Attributes:
        max_steps: step budget (optimiser updates); the number that makes a run reproducible.
        minutes: optional wall-clock cap (training time); None = steps only.
        batch_size: sentences per batch.
        peak_lr: learning rate reached after ``warmup`` steps, then ∝ 1/√step (noam_lr).
        warmup: warm-up steps.
        betas, eps: Adam's hyper-parameters.
        clip_norm: gradient-norm clipping (None = off).
        eval_every: validate every this many steps (and at the end).
        seed: seeds torch (dropout, initial weights are the caller's), the batch order and the loss generator.

    Raises:
        ValueError: non-positive sizes or budgets.
    """

    max_steps: int = 1000
    minutes: float | None = None
    batch_size: int = 64
    peak_lr: float = 1e-3
    warmup: int = 100
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-9
    clip_norm: float | None = 1.0
    eval_every: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.batch_size < 1 or self.warmup < 1 or self.eval_every < 1:
            raise ValueError("max_steps, batch_size, warmup and eval_every must be positive")
        if self.peak_lr <= 0 or (self.minutes is not None and self.minutes <= 0):
            raise ValueError("peak_lr and minutes must be positive")
        self.betas = tuple(self.betas)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LMHistory:
    """``entries``: one dict per validation with ``step``, ``minutes``, ``train_loss`` (mean since the last entry),
    ``val_loss`` (or nan) and ``lr``; ``steps`` and ``minutes`` in total."""

    entries: list[dict] = field(default_factory=list)
    steps: int = 0
    minutes: float = 0.0

    def curve(self, key: str = "val_loss") -> tuple[list[int], list[float]]:
        """``(steps, values)`` of one column, for :func:`lib.plots.plot_curves`."""
        return [e["step"] for e in self.entries], [e[key] for e in self.entries]


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> Tensor:
    """Right-pad token-id lists into a ``(batch, longest)`` LongTensor.

    Raises:
        ValueError: no rows.
    """
    if not rows:
        raise ValueError("pad_batch needs at least one row")
    out = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.as_tensor(list(r), dtype=torch.long)
    return out


def sentence_batches(items: Sequence, batch_size: int, seed: int) -> Iterator[list]:
    """Endless shuffled batches of ``items``: a new permutation (seeded by ``seed`` + epoch) every epoch."""
    epoch = 0
    while True:
        order = list(range(len(items)))
        random.Random(seed + epoch).shuffle(order)
        for i in range(0, len(order) - batch_size + 1, batch_size):
            yield [items[j] for j in order[i : i + batch_size]]
        epoch += 1


def gpt_sequences(sentences: Sequence[Sequence[int]], max_len: int) -> list[list[int]]:
    """``<s> u₁ … u_m </s>`` for each tokenised sentence, cut to ``max_len`` tokens (longer ones lose their end).

    Raises:
        ValueError: max_len < 2.
    """
    if max_len < 2:
        raise ValueError(f"max_len must be at least 2, got {max_len}")
    return [([BOS_ID, *s, EOS_ID])[:max_len] for s in sentences]


def unigram_counts(sequences: Sequence[Sequence[int]], vocab_size: int) -> Tensor:
    """How often each id occurs in ``sequences``: ``(vocab_size,)`` float tensor (a unigram model's counts)."""
    counts = torch.zeros(vocab_size, dtype=torch.float64)
    for s in sequences:
        counts += torch.bincount(torch.as_tensor(list(s), dtype=torch.long), minlength=vocab_size).double()
    return counts


def train_lm(
    model: nn.Module,
    train_items: Sequence,
    loss_fn: Callable[[nn.Module, list], Tensor],
    config: LMTrainConfig,
    val_fn: Callable[[nn.Module], float] | None = None,
    progress: bool = True,
) -> LMHistory:
    """Train ``model`` in place with Adam + warm-up until ``config.max_steps`` (or ``config.minutes``) is spent.

    Args:
        model: any module with ``config.d_model`` (for the schedule).
        train_items: training examples (e.g. token-id lists); batches are lists of them.
        loss_fn: ``loss_fn(model, batch_of_items) -> scalar tensor``, called in train mode.
        config: an :class:`LMTrainConfig`.
        val_fn: ``val_fn(model) -> float`` run in eval mode under ``torch.no_grad`` every ``eval_every`` steps.
        progress: show a tqdm bar.

    Returns:
        An :class:`LMHistory`.

    Raises:
        ValueError: fewer training items than one batch.

    Source: Vaswani et al. 2017, §5.3 (Adam, warm-up schedule Eq. (3)).
    """
    if len(train_items) < config.batch_size:
        raise ValueError(f"need at least batch_size={config.batch_size} training items, got {len(train_items)}")
    torch.manual_seed(config.seed)
    d_model = model.config.d_model
    factor = config.peak_lr * math.sqrt(d_model * config.warmup)           # puts noam_lr's peak at peak_lr
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=config.betas, eps=config.eps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: noam_lr(s + 1, d_model, config.warmup, factor))
    history = LMHistory()
    batches = sentence_batches(train_items, config.batch_size, config.seed)
    running, n_running, train_s = 0.0, 0, 0.0

    def validate() -> None:
        nonlocal running, n_running
        val = float("nan")
        if val_fn is not None:
            model.eval()
            with torch.no_grad():
                val = float(val_fn(model))
            model.train()
        history.entries.append(dict(step=history.steps, minutes=round(train_s / 60, 4),
                                     train_loss=running / max(n_running, 1), val_loss=val,
                                     lr=scheduler.get_last_lr()[0]))
        running, n_running = 0.0, 0

    model.train()
    bar = tqdm(total=config.max_steps, disable=not progress, unit="step")
    while history.steps < config.max_steps and (config.minutes is None or train_s < config.minutes * 60):
        start = time.perf_counter()
        loss = loss_fn(model, next(batches))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.clip_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()
        scheduler.step()
        train_s += time.perf_counter() - start
        history.steps += 1
        running += loss.item()
        n_running += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        if history.steps % config.eval_every == 0:
            validate()
    if n_running:
        validate()
    bar.close()
    model.eval()
    history.minutes = train_s / 60
    return history
