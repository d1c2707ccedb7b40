"""Translate German to English with a trained run.

Command line (one German sentence per line in, one English sentence per line out)::

    python -m lib.translate --run models/de-en [--beam 5] < input.de > output.en
    python -m lib.translate --run models/de-en --bleu test_2016_flickr     # score a Multi30k split
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import torch
from torch import Tensor

from .bpe import decode, encode
from .checkpoint import load_run
from .data import load_multi30k, pad_batch
from .decode import beam_search, greedy_decode
from .interfaces import AttentionMaps, EncoderDecoder
from .metrics import BleuResult, corpus_bleu
from .special_tokens import BOS_ID, EOS_ID, PAD_ID

__all__ = ["translate", "evaluate_bleu", "TranslationAttention", "translation_attention"]


@torch.no_grad()
def translate(
    model: EncoderDecoder,
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
    ids = [encode(tokenizer, s)[: limit - 1] + [EOS_ID] for s in sentences]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out: list[str] = [""] * len(ids)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        src = pad_batch([ids[i] for i in chunk], PAD_ID).to(device)
        if beam_size == 1:
            hyps = greedy_decode(model, src)
        else:
            hyps = beam_search(model, src, beam_size=beam_size, alpha=alpha)
        for i, h in zip(chunk, hyps):
            out[i] = decode(tokenizer, h)
    return out


def evaluate_bleu(
    model: EncoderDecoder,
    tokenizer,
    split: str = "test_2016_flickr",
    root=None,
    beam_size: int = 1,
    alpha: float = 0.6,
    device=None,
) -> BleuResult:
    """Translate a Multi30k split's German side and score it with sacreBLEU against the English side.

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``).
        tokenizer: its tokenizer.
        split: a Multi30k split (``lib.data.SPLITS``), by default the 2016 Flickr test set (1,000 pairs).
        root: folder of the Multi30k files; default ``lib.data.data_dir`` (``MULTI30K_DIR`` if set).
        beam_size: 1 = greedy decoding, otherwise beam search with this width.
        alpha: beam search's length-penalty exponent.
        device: where to decode; default: the model's device.

    Returns:
        :class:`lib.metrics.BleuResult`: corpus BLEU in [0, 100] with sacreBLEU's signature.

    Raises:
        ValueError: unknown split (from ``lib.data.load_multi30k``); beam_size < 1.
        FileNotFoundError: the split's files are missing and cannot be downloaded.
        ChecksumError: a file's SHA-256 differs from the expected one.
    """
    pairs = load_multi30k(split, root)
    hyps = translate(model, tokenizer, [de for de, _ in pairs], beam_size=beam_size, alpha=alpha, device=device)
    return corpus_bleu(hyps, [en for _, en in pairs])


@dataclass
class TranslationAttention:
    """A translation with every attention map the model computed for it.

    Attributes:
        source: the source sentence.
        translation: the target sentence (the model's greedy output, or the one forced on it).
        source_tokens: source sub-words plus ``</s>`` (the keys of cross-attention, length seq_s).
        target_tokens: the target sub-words plus ``</s>`` (length seq_t): row t of a decoder or cross map is
            the query that *predicted* ``target_tokens[t]``.
        weights: the model's :class:`lib.interfaces.AttentionMaps` with batch size 1, e.g.
            ``weights.cross[layer][0]`` of shape ``(heads, seq_t, seq_s)``; a recurrent model with attention has
            one cross "layer" with one head.
    """

    source: str
    translation: str
    source_tokens: list[str]
    target_tokens: list[str]
    weights: AttentionMaps

    def cross_map(self, layer: int = -1, head: int | None = None) -> Tensor:
        """One cross-attention map: target tokens (rows) against source tokens (columns).

        Args:
            layer: decoder layer (default the last; a recurrent model has only layer 0).
            head: one head, or None for the mean over the heads.

        Returns:
            ``(seq_t, seq_s)`` tensor; each row sums to 1.

        Raises:
            IndexError: no such layer or head.
        """
        maps = self.weights.cross[layer][0]  # (heads, seq_t, seq_s)
        if head is None:
            return maps.mean(0)
        if not -maps.size(0) <= head < maps.size(0):
            raise IndexError(f"head {head} out of range: the model has {maps.size(0)} heads")
        return maps[head]


@torch.no_grad()
def translation_attention(
    model: EncoderDecoder, tokenizer, source: str, translation: str | None = None
) -> TranslationAttention:
    """Translate ``source`` greedily (or force ``translation``) and return every attention map of the model.

    The one function for the attention maps of a translation, for any model the book trains: the Transformer
    (encoder, decoder and cross maps of every layer) and the recurrent model with attention (its alignment
    α_ij, as one cross map with one head).

    Args:
        model: a trained encoder–decoder (``lib.interfaces.EncoderDecoder``) whose forward accepts
            ``return_attention=True``.
        tokenizer: its tokenizer.
        source: one source sentence.
        translation: a target sentence to score instead of the model's own greedy output.

    Returns:
        A :class:`TranslationAttention` whose token lists label the maps' axes.

    Raises:
        ValueError: the model computes no attention (the fixed-vector model attends to nothing).

    Source: the alignment figures of Bahdanau et al. 2015, Fig. 3; Vaswani et al. 2017, Figures 3–5.
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
    if not weights.kinds():
        raise ValueError("this model computes no attention (a fixed-vector model): there are no maps to show")
    name = tokenizer.id_to_token
    return TranslationAttention(
        source=source,
        translation=decode(tokenizer, tgt_ids),
        source_tokens=[name(i) for i in src_ids],
        target_tokens=[name(i) for i in tgt_ids] + [name(EOS_ID)],
        weights=weights,
    )


def main(argv: list[str] | None = None) -> None:
    """The command line: translate stdin line by line, or score a Multi30k split with ``--bleu``.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
    """
    p = argparse.ArgumentParser(
        prog="python -m lib.translate", description="Translate German to English with a trained run."
    )
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
