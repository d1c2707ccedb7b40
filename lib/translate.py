"""Translate German to English with a trained run.

Command line (one German sentence per line in, one English sentence per line out)::

    python -m lib.translate --run models/de-en [--beam 5] < input.de > output.en
    python -m lib.translate --run models/de-en --bleu test_2016_flickr     # score a Multi30k split
"""

from __future__ import annotations

import argparse
import sys

import torch

from .data import load_multi30k
from .decode import beam_search, greedy_decode
from .metrics import BleuResult, corpus_bleu
from dataclasses import dataclass

from .bpe import decode, encode
from .special_tokens import BOS_ID, EOS_ID, PAD_ID
from .transformer import AttentionWeights, Transformer

__all__ = ["translate", "evaluate_bleu", "TranslationAttention", "translation_attention"]


@torch.no_grad()
def translate(
    model: Transformer,
    tokenizer,
    sentences: list[str],
    beam_size: int = 1,
    alpha: float = 0.6,
    batch_size: int = 100,
    device: torch.device | str | None = None,
) -> list[str]:
    """Translate sentences, batching those of similar length together.

    Args:
        model: a trained Transformer.
        tokenizer: its tokenizer.
        sentences: source sentences (plain text).
        beam_size: 1 = greedy decoding, otherwise beam search with this width.
        alpha: beam search's length-penalty exponent.
        batch_size: sentences decoded at once.
        device: default: the model's device.

    Returns:
        The translations, in the order of ``sentences``.

    Raises:
        ValueError: beam_size or batch_size < 1.
    """
    if beam_size < 1 or batch_size < 1:
        raise ValueError(f"beam_size and batch_size must be >= 1, got {beam_size} and {batch_size}")
    device = next(model.parameters()).device if device is None else torch.device(device)
    model.to(device).eval()
    limit = model.config.max_len - 1
    ids = [encode(tokenizer, s)[:limit - 1] + [EOS_ID] for s in sentences]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out: list[str] = [""] * len(ids)
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        width = max(len(ids[i]) for i in chunk)
        src = torch.full((len(chunk), width), PAD_ID, dtype=torch.long)
        for row, i in enumerate(chunk):
            src[row, : len(ids[i])] = torch.tensor(ids[i])
        src = src.to(device)
        if beam_size == 1:
            hyps = greedy_decode(model, src)
        else:
            hyps = beam_search(model, src, beam_size=beam_size, alpha=alpha)
        for i, h in zip(chunk, hyps):
            out[i] = decode(tokenizer, h)
    return out


def evaluate_bleu(
    model: Transformer,
    tokenizer,
    split: str = "test_2016_flickr",
    root=None,
    beam_size: int = 1,
    alpha: float = 0.6,
    device=None,
) -> BleuResult:
    """Translate a Multi30k split's German side and score it with sacreBLEU against the English side."""
    pairs = load_multi30k(split, root)
    hyps = translate(model, tokenizer, [de for de, _ in pairs], beam_size=beam_size, alpha=alpha, device=device)
    return corpus_bleu(hyps, [en for _, en in pairs])


@dataclass
class TranslationAttention:
    """A translation with every attention map the model computed for it.

    ``source_tokens``: source sub-words plus ``</s>`` (the keys of cross-attention, length seq_s).
    ``target_tokens``: the sub-words the decoder produced plus ``</s>`` (length seq_t): row t of a
    decoder map is the query that *predicted* target_tokens[t].
    ``weights``: :class:`~lib.transformer.AttentionWeights` with batch size 1, e.g.
    ``weights.cross[layer][0]`` of shape ``(heads, seq_t, seq_s)``.
    """

    source: str
    translation: str
    source_tokens: list[str]
    target_tokens: list[str]
    weights: AttentionWeights


@torch.no_grad()
def translation_attention(model: Transformer, tokenizer, source: str, translation: str | None = None) -> TranslationAttention:
    """Translate ``source`` greedily (or force ``translation``) and return the attention weights of every layer.

    Args:
        model: a trained Transformer.
        tokenizer: its tokenizer.
        source: one source sentence.
        translation: a target sentence to score instead of the model's own greedy output.

    Returns:
        A :class:`TranslationAttention` whose token lists label the weights' axes.
    """
    model.eval()
    device = next(model.parameters()).device
    src_ids = encode(tokenizer, source)[: model.config.max_len - 1] + [EOS_ID]
    src = torch.tensor([src_ids], device=device)
    if translation is None:
        tgt_ids = greedy_decode(model, src)[0]
    else:
        tgt_ids = encode(tokenizer, translation)[: model.config.max_len - 1]
    tgt_in = torch.tensor([[BOS_ID] + tgt_ids], device=device)
    _, weights = model(src, tgt_in, return_attention=True)
    name = tokenizer.id_to_token
    return TranslationAttention(
        source=source,
        translation=decode(tokenizer, tgt_ids),
        source_tokens=[name(i) for i in src_ids],
        target_tokens=[name(i) for i in tgt_ids] + [name(EOS_ID)],
        weights=weights,
    )


def main(argv=None) -> None:
    from .checkpoint import load_run

    p = argparse.ArgumentParser(prog="python -m lib.translate", description="Translate German to English with a trained run.")
    p.add_argument("--run", required=True, help="run folder (e.g. models/de-en or runs/NAME)")
    p.add_argument("--beam", type=int, default=1, help="beam width (1 = greedy)")
    p.add_argument("--alpha", type=float, default=0.6, help="length-penalty exponent for beam search")
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--device", default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--bleu", metavar="SPLIT", default=None, help="instead of stdin, score this Multi30k split")
    p.add_argument("--data", default=None, help="folder with the Multi30k files (default: MULTI30K_DIR or download)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        run = load_run(args.run, device=args.device or "cpu")
    except FileNotFoundError as err:
        p.error(str(err))
    if args.bleu:
        print(evaluate_bleu(run.model, run.tokenizer, args.bleu, args.data, args.beam, args.alpha))
        return
    lines = [line.rstrip("\n") for line in sys.stdin]
    for line in translate(run.model, run.tokenizer, lines, args.beam, args.alpha, args.batch_size):
        print(line)


if __name__ == "__main__":
    main()
