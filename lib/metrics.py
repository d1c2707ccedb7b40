"""BLEU with sacreBLEU, so that the book's scores are comparable with published ones.

Source: Papineni et al. (2002), "BLEU: a Method for Automatic Evaluation of Machine Translation";
Post (2018), "A Call for Clarity in Reporting BLEU Scores" (sacreBLEU and its signature).
"""

from __future__ import annotations

import itertools
import numbers
from dataclasses import dataclass

from sacrebleu.metrics import BLEU

__all__ = ["BleuResult", "corpus_bleu", "BucketBleu", "bleu_by_length"]


def _check_sentences(sentences: object, name: str) -> None:
    """A list (or tuple) of str, one detokenised sentence each; a single str is a mistake, not a corpus."""
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)):
        raise TypeError(f"{name} must be a list of strings (one sentence each), got {type(sentences).__name__}")
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise TypeError(f"{name} must hold strings (detokenised text), {name}[{i}] is {type(sentence).__name__}")


def _check_ints(values: object, name: str) -> None:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of ints, got {type(values).__name__}")
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must hold ints, {name}[{i}] is {value!r}")


@dataclass(frozen=True)
class BleuResult:
    """A corpus BLEU score (0–100) and the sacreBLEU signature that says how it was computed.

    Attributes:
        score: corpus BLEU in [0, 100] (sacreBLEU's scale: 100 × the BLEU of Papineni et al.).
        signature: sacreBLEU's signature string, e.g. ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.x``;
            report it with the score so that others can reproduce it (Post 2018).
        precisions: the four modified n-gram precisions p_1 … p_4, in percent (0–100).
        brevity_penalty: BP in (0, 1]; 1 when the hypotheses are at least as long as the references.

    Source: Papineni et al. 2002, §2 and Eq. (1)–(2); Post 2018 (the signature).
    """

    score: float
    signature: str
    precisions: tuple[float, ...]
    brevity_penalty: float

    def __str__(self) -> str:
        return f"BLEU = {self.score:.2f}  ({self.signature})"


def corpus_bleu(hypotheses: list[str], references: list[str], tokenize: str = "13a") -> BleuResult:
    """Corpus-level BLEU of detokenised hypotheses against one reference each.

    Args:
        hypotheses: system outputs, one plain-text sentence each.
        references: reference translations, aligned with ``hypotheses``.
        tokenize: sacreBLEU's tokenizer (``"13a"``, the WMT standard).

    Returns:
        :class:`BleuResult` with the score in [0, 100], the signature string, the four n-gram
        precisions (%) and the brevity penalty.

    Raises:
        TypeError: hypotheses or references is not a list of strings (a single str included).
        ValueError: the two lists differ in length or are empty; an unknown ``tokenize``.

    Source: Papineni et al. 2002, Eq. (1)–(2); computed by sacreBLEU (Post 2018).
    """
    _check_sentences(hypotheses, "hypotheses")
    _check_sentences(references, "references")
    if len(hypotheses) != len(references):
        raise ValueError(f"got {len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("corpus_bleu needs at least one sentence in hypotheses and references")
    if tokenize not in BLEU.TOKENIZERS:
        raise ValueError(f"tokenize must be one of sacreBLEU's tokenizers {sorted(BLEU.TOKENIZERS)}, got {tokenize!r}")
    metric = BLEU(tokenize=tokenize)
    result = metric.corpus_score(hypotheses, [references])
    return BleuResult(
        score=float(result.score),
        signature=str(metric.get_signature()),
        precisions=tuple(float(p) for p in result.precisions),
        brevity_penalty=float(result.bp),
    )


@dataclass(frozen=True)
class BucketBleu:
    """BLEU of the sentences whose length falls in ``[low, high]`` (inclusive); ``count`` sentences.

    Attributes:
        low: the bucket's shortest length (inclusive), in the unit of the ``lengths`` passed to
            :func:`bleu_by_length`.
        high: the bucket's longest length (inclusive); ``10**9`` for the open last bucket.
        count: the number of sentences in the bucket (at least 1).
        bleu: the corpus BLEU of those sentences (:func:`corpus_bleu`).
    """

    low: int
    high: int
    count: int
    bleu: BleuResult

    @property
    def label(self) -> str:
        """The bucket as an axis label: ``"10–19"``, or ``"30+"`` for the open last bucket."""
        return f"{self.low}–{self.high}" if self.high < 10**9 else f"{self.low}+"


def bleu_by_length(
    hypotheses: list[str],
    references: list[str],
    lengths: list[int],
    edges: list[int],
    tokenize: str = "13a",
) -> list[BucketBleu]:
    """Corpus BLEU per length bucket, e.g. by source length in words (Bahdanau et al. 2015, Fig. 2).

    Args:
        hypotheses, references: as :func:`corpus_bleu`.
        lengths: one length per sentence (any unit: words, sub-words), aligned with the lists.
        edges: increasing bucket starts; bucket k holds lengths in ``[edges[k], edges[k+1] - 1]``, the
            last one everything from ``edges[-1]`` on. Lengths below ``edges[0]`` are left out.
        tokenize: sacreBLEU's tokenizer, as :func:`corpus_bleu`.

    Returns:
        One :class:`BucketBleu` per non-empty bucket, in order.

    Raises:
        TypeError: hypotheses or references not lists of strings; lengths or edges not lists of ints.
        ValueError: lists of different lengths; edges empty or not strictly increasing.
    """
    _check_sentences(hypotheses, "hypotheses")
    _check_sentences(references, "references")
    _check_ints(lengths, "lengths")
    _check_ints(edges, "edges")
    if not len(hypotheses) == len(references) == len(lengths):
        raise ValueError(f"got {len(hypotheses)} hypotheses, {len(references)} references and {len(lengths)} lengths")
    if not edges or any(b <= a for a, b in itertools.pairwise(edges)):
        raise ValueError(f"edges must be a non-empty, strictly increasing list, got {edges}")
    bounds = list(zip(edges, [e - 1 for e in edges[1:]] + [10**9]))
    out = []
    for low, high in bounds:
        idx = [i for i, n in enumerate(lengths) if low <= n <= high]
        if idx:
            bleu = corpus_bleu([hypotheses[i] for i in idx], [references[i] for i in idx], tokenize)
            out.append(BucketBleu(low, high, len(idx), bleu))
    return out
