"""The data of the attention explorer: every attention map of a model's translations, as small JSON.

The explorer (``lib/explorer.js``, one ES module used by the website and, through anywidget, by a notebook:
:class:`ExplorerWidget`) draws one map at a time as a heatmap with the tokens on both axes. It reads what
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
does not compute (a recurrent model has only ``cross``), or that ``kinds`` leaves out, is missing.

The website embeds this JSON at build time (the ``{attention-explorer}`` directive of
``tools/sphinxext/book_site.py``, which inlines ``lib/explorer.js``); a notebook shows the same module with live
data as a widget, :func:`explorer_widget` (anywidget, which runs the module's default export ``render``).

Source: the attention figures of Bahdanau et al. 2015 (Fig. 3) and Vaswani et al. 2017 (Figures 3–5).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anywidget
import torch
import traitlets

from .files import strict_json
from .interfaces import EncoderDecoder
from .translate import translation_attention

__all__ = [
    "EXPLORER_FORMAT",
    "EXPLORER_KINDS",
    "EXPLORER_ESM",
    "explorer_data",
    "explorer_json",
    "ExplorerWidget",
    "explorer_widget",
]

#: The version of the JSON layout; the JavaScript reads format 1.
EXPLORER_FORMAT = 1
#: The kinds of attention map, in the order the explorer lists them.
EXPLORER_KINDS = ("encoder", "decoder", "cross")
#: The explorer's one ES module: the website inlines it, the notebook widget runs it.
EXPLORER_ESM = Path(__file__).with_name("explorer.js")


def _rounded(weights: torch.Tensor, decimals: int) -> list:
    """A ``(heads, seq_q, seq_k)`` tensor as nested lists of floats rounded to ``decimals`` places (0 as int)."""
    return [[[round(w, decimals) or 0 for w in row] for row in head] for head in weights.tolist()]


def explorer_data(
    model: EncoderDecoder,
    tokenizer,
    sentences: Sequence[str],
    translations: Sequence[str] | None = None,
    decimals: int = 3,
    kinds: Sequence[str] | None = None,
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
        kinds: the kinds of map to keep, some of ``"encoder"``, ``"decoder"``, ``"cross"`` (default: every kind
            the model computes); fewer kinds make a lighter page.

    Returns:
        ``{"format": 1, "decimals": decimals, "sentences": [...]}``: per sentence the source, the translation,
        ``src_tokens`` (seq_s, ending ``</s>``), ``tgt_tokens`` (seq_t, ending ``</s>``), ``tgt_input_tokens``
        (seq_t, starting ``<s>``) and ``maps``, ``{kind: [layer][head][query][key]}`` for each kind the model
        computes and ``kinds`` keeps (``encoder`` (seq_s, seq_s), ``decoder`` (seq_t, seq_t), ``cross``
        (seq_t, seq_s)).

    Raises:
        ValueError: ``sentences`` is a single str, empty, or holds a blank sentence; ``translations`` has another
            length; ``kinds`` is empty or names an unknown kind, or one the model does not compute; the model
            computes no attention (from :func:`lib.translate.translation_attention`).
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
    if kinds is not None:
        if isinstance(kinds, str):
            kinds = [kinds]
        kinds = list(kinds)
        unknown = [k for k in kinds if k not in EXPLORER_KINDS]
        if not kinds or unknown:
            raise ValueError(f"kinds must be some of {list(EXPLORER_KINDS)}, got {kinds}")
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
        missing = [k for k in kinds or [] if k not in t.weights.kinds()]
        if missing:
            raise ValueError(f"kinds: the model computes only {list(t.weights.kinds())}, not {missing}")
        maps = {
            kind: [_rounded(layer[0], decimals) for layer in getattr(t.weights, kind)]  # batch of one
            for kind in t.weights.kinds()
            if kinds is None or kind in kinds
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
    text = strict_json(data, ensure_ascii=False, separators=(",", ":"), nan="error").rstrip("\n")  # no bare NaN
    return text.replace("<", "\\u003c")


def _check_data(data: dict) -> None:
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict from explorer_data, got {type(data).__name__}")
    if data.get("format") != EXPLORER_FORMAT or not data.get("sentences"):
        raise ValueError(f"data must be what explorer_data returns (format {EXPLORER_FORMAT}, at least one sentence)")


class ExplorerWidget(anywidget.AnyWidget):
    """The attention explorer in a notebook: the website's ES module (``lib/explorer.js``) as an anywidget.

    The module's default export ``render({model, el})`` draws the explorer from the JSON string in ``data_json``
    (the same text :func:`explorer_json` embeds in a web page) and redraws it when ``data`` is set again.

    Args:
        data: what :func:`explorer_data` returns.
        view: the first view, ``{"sentence": i, "kind": "encoder" | "decoder" | "cross", "layer": l,
            "head": h | "mean"}`` (indices from 0; default: cross-attention or the first kind present, the last
            layer, the mean of the heads, the first sentence).
        **kwargs: passed on to ``anywidget.AnyWidget`` (e.g. ``layout``).

    Raises:
        TypeError: ``data`` or ``view`` is not a dict.
        ValueError: ``data`` is not in the explorer's format.
    """

    _esm = EXPLORER_ESM
    data_json = traitlets.Unicode("").tag(sync=True)
    view_json = traitlets.Unicode("{}").tag(sync=True)

    def __init__(self, data: dict, view: dict | None = None, **kwargs) -> None:
        _check_data(data)
        if view is not None and not isinstance(view, dict):
            raise TypeError(f"view must be a dict such as {{'kind': 'encoder', 'head': 0}}, got {type(view).__name__}")
        super().__init__(
            data_json=explorer_json(data), view_json=strict_json(view or {}, nan="error").rstrip("\n"), **kwargs
        )

    @property
    def data(self) -> dict:
        """The data drawn, as :func:`explorer_data` returned it; setting it redraws the explorer.

        Returns:
            The data, a dict (setting it raises TypeError or ValueError as the constructor does).
        """
        return json.loads(self.data_json)

    @data.setter
    def data(self, data: dict) -> None:
        _check_data(data)
        self.data_json = explorer_json(data)


def explorer_widget(
    model: EncoderDecoder,
    tokenizer,
    sentences: Sequence[str],
    kinds: Sequence[str] | None = None,
    view: dict | None = None,
    decimals: int = 3,
) -> ExplorerWidget:
    """Translate sentences and show every attention map in the attention explorer, live in a notebook.

    Args:
        model: a trained encoder–decoder (see :func:`explorer_data`).
        tokenizer: its tokenizer.
        sentences: source sentences, a non-empty list of str.
        kinds: the kinds of map to show (default: every kind the model computes).
        view: the first view (see :class:`ExplorerWidget`).
        decimals: decimal places of each weight, 1 to 6.

    Returns:
        An :class:`ExplorerWidget`; the last expression of a cell displays it.

    Raises:
        ValueError, TypeError: as :func:`explorer_data` and :class:`ExplorerWidget` raise them.
    """
    data = explorer_data(model, tokenizer, sentences, decimals=decimals, kinds=kinds)
    return ExplorerWidget(data, view=view)
