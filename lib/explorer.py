"""The data of the attention explorer: every attention map of a model's translations, as small JSON.

The explorer (``tools/explorer/explorer.js``, one ES module used by the website and, through anywidget, by a
notebook) draws one map at a time as a heatmap with the tokens on both axes. It reads what
:func:`explorer_data` returns::

    {"format": 1, "decimals": 3, "sentences": [{
        "source": "Ein Hund läuft.", "translation": "A dog runs.",
        "src_tokens": ["▁Ein", "▁Hund", "▁läuft", ".", "</s>"],             # keys of encoder and cross maps
        "tgt_tokens": ["▁A", "▁dog", "▁runs", ".", "</s>"],                 # rows of decoder and cross maps
        "tgt_input_tokens": ["<s>", "▁A", "▁dog", "▁runs", "."],            # keys of decoder maps
        "maps": {"encoder": [layer][head][query][key], "decoder": ..., "cross": ...}}]}

Row t of a decoder or cross map is the query at the position that *predicted* ``tgt_tokens[t]`` (its input
token is ``tgt_input_tokens[t]``), as :class:`lib.translate.TranslationAttention` labels them. Weights are
rounded to ``decimals`` places, so a row sums to 1 within ``seq_k * 0.5 * 10**-decimals``; a kind the model
does not compute (a recurrent model has only ``cross``) is left out.

Source: the attention figures of Bahdanau et al. 2015 (Fig. 3) and Vaswani et al. 2017 (Figures 3–5).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import torch

from .interfaces import EncoderDecoder
from .translate import translation_attention

__all__ = ["EXPLORER_FORMAT", "explorer_data", "explorer_json"]

#: The version of the JSON layout; the JavaScript reads format 1.
EXPLORER_FORMAT = 1


def _rounded(weights: torch.Tensor, decimals: int) -> list:
    """A ``(heads, seq_q, seq_k)`` tensor as nested lists of floats rounded to ``decimals`` places (0 as int)."""
    return [[[round(w, decimals) or 0 for w in row] for row in head] for head in weights.tolist()]


def explorer_data(
    model: EncoderDecoder,
    tokenizer,
    sentences: Sequence[str],
    translations: Sequence[str] | None = None,
    decimals: int = 3,
) -> dict:
    """Translate sentences greedily (or score given translations) and collect every attention map for the explorer.

    Args:
        model: a trained encoder–decoder whose forward accepts ``return_attention=True`` (the Transformer or the
            recurrent model with attention).
        tokenizer: its tokenizer.
        sentences: source sentences, a non-empty list of non-blank str.
        translations: one target sentence per source sentence to force on the model (default: its own greedy
            translation).
        decimals: decimal places of each weight, 1 to 6 (3 keeps a 20-token sentence's 36 Transformer maps near
            70 kB of JSON).

    Returns:
        ``{"format": 1, "decimals": decimals, "sentences": [...]}``: per sentence the source, the translation,
        ``src_tokens`` (seq_s, ending ``</s>``), ``tgt_tokens`` (seq_t, ending ``</s>``), ``tgt_input_tokens``
        (seq_t, starting ``<s>``) and ``maps``, ``{kind: [layer][head][query][key]}`` for each kind the model
        computes (``encoder`` (seq_s, seq_s), ``decoder`` (seq_t, seq_t), ``cross`` (seq_t, seq_s)).

    Raises:
        ValueError: ``sentences`` is a single str, empty, or holds a blank sentence; ``translations`` has another
            length; the model computes no attention (from :func:`lib.translate.translation_attention`).
        TypeError: a sentence or translation is not a str, or ``decimals`` is not an int.

    Source: Bahdanau et al. 2015, Fig. 3; Vaswani et al. 2017, Figures 3–5.
    """
    if isinstance(sentences, str):
        raise ValueError("sentences must be a list of str, got a single str (pass [sentence])")
    sentences = list(sentences)
    if not sentences:
        raise ValueError("sentences must hold at least one sentence, got an empty list")
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise TypeError(f"decimals must be an int, got {type(decimals).__name__}")
    if not 1 <= decimals <= 6:
        raise ValueError(f"decimals must be in 1..6, got {decimals}")
    if translations is not None:
        if isinstance(translations, str):
            raise ValueError("translations must be a list of str, got a single str")
        translations = list(translations)
        if len(translations) != len(sentences):
            raise ValueError(
                f"translations must have one entry per sentence: {len(sentences)} sentences, "
                f"{len(translations)} translations"
            )
    for name, texts in (("sentences", sentences), ("translations", translations or [])):
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"{name}[{i}] must be a str, got {type(text).__name__}")
            if name == "sentences" and not text.strip():
                raise ValueError(f"sentences[{i}] is blank: there is nothing to attend to")

    out = []
    for i, source in enumerate(sentences):
        forced = translations[i] if translations is not None else None
        t = translation_attention(model, tokenizer, source, forced)
        maps = {
            kind: [_rounded(layer[0], decimals) for layer in getattr(t.weights, kind)]  # batch of one
            for kind in t.weights.kinds()
        }
        out.append(
            {
                "source": t.source,
                "translation": t.translation,
                "src_tokens": t.source_tokens,
                "tgt_tokens": t.target_tokens,
                "tgt_input_tokens": ["<s>", *t.target_tokens[:-1]],
                "maps": maps,
            }
        )
    return {"format": EXPLORER_FORMAT, "decimals": decimals, "sentences": out}


def explorer_json(data: dict) -> str:
    """The explorer's data as compact JSON, safe to embed in an HTML ``<script type="application/json">``.

    Args:
        data: what :func:`explorer_data` returns.

    Returns:
        JSON text without spaces, non-ASCII kept, ``<`` written as ``\\u003c`` (so a ``</script>`` in a token
        cannot end the script element).

    Raises:
        TypeError: ``data`` is not a dict.
    """
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict from explorer_data, got {type(data).__name__}")
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
