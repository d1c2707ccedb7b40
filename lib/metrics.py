"""BLEU with sacreBLEU, so that the book's scores are comparable with published ones.

Source: Papineni et al. (2002), "BLEU: a Method for Automatic Evaluation of Machine Translation";
Post (2018), "A Call for Clarity in Reporting BLEU Scores" (sacreBLEU and its signature).
"""

from __future__ import annotations

from dataclasses import dataclass

from sacrebleu.metrics import BLEU

__all__ = ["BleuResult", "corpus_bleu"]


@dataclass(frozen=True)
class BleuResult:
    """A corpus BLEU score (0–100) and the sacreBLEU signature that says how it was computed."""

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
        ValueError: the two lists differ in length, are empty, or hold non-strings.

    Source: Papineni et al. 2002, Eq. (1)–(2); computed by sacreBLEU (Post 2018).
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"got {len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("corpus_bleu needs at least one sentence")
    if not all(isinstance(s, str) for s in [*hypotheses, *references]):
        raise ValueError("hypotheses and references must be lists of strings (detokenised text)")
    metric = BLEU(tokenize=tokenize)
    result = metric.corpus_score(hypotheses, [references])
    return BleuResult(
        score=float(result.score),
        signature=str(metric.get_signature()),
        precisions=tuple(float(p) for p in result.precisions),
        brevity_penalty=float(result.bp),
    )
