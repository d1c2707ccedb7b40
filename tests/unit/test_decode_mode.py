"""The decoders (and the tokenizer) as a notebook reader calls them, in the middle of a training loop (issue 45).

``greedy_decode``, ``beam_search``, ``translate`` and ``translation_attention`` decode with dropout off, and give the
model back in the mode it came in: a model in training mode stays in training mode (dropout on for the steps that
follow), even when the search raises. A negative length penalty is refused by the library as by the command line;
a source of only padding, and a tokenizer learned from blank texts, are refused in one line.
"""

from __future__ import annotations

import pytest
import torch

from lib.bpe import train_bpe
from lib.decode import beam_search, greedy_decode, in_eval_mode
from lib.special_tokens import PAD_ID
from lib.transformer import Transformer, TransformerConfig
from lib.translate import translate, translation_attention

SENTENCES = ["ein mann fährt fahrrad .", "zwei hunde spielen im schnee .", "eine frau liest ein buch ."]


def _model(seed: int = 0, vocab: int = 40) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(TransformerConfig.tiny(vocab_size=vocab, max_len=64))


def _modes(model: torch.nn.Module) -> set[bool]:
    return {m.training for m in model.modules()}


def _src() -> torch.Tensor:
    src = torch.randint(4, 40, (3, 6), generator=torch.Generator().manual_seed(1))
    src[2, 4:] = PAD_ID
    return src


@pytest.mark.parametrize(
    "search",
    [
        lambda m, s: greedy_decode(m, s, max_len=8),
        lambda m, s: greedy_decode(m, s, max_len=8, use_cache=False),
        lambda m, s: beam_search(m, s, beam_size=3, max_len=8),
    ],
    ids=["greedy", "greedy without cache", "beam"],
)
def test_a_search_decodes_without_dropout_and_gives_the_training_mode_back(search):
    model = _model()
    model.eval()
    expected = search(model, _src())
    assert _modes(model) == {False}
    model.train()
    assert search(model, _src()) == expected  # dropout was off during the search
    assert _modes(model) == {True}  # ... and is on again for the next training step


def test_the_mode_comes_back_when_the_search_raises():
    model = _model().train()
    with pytest.raises(ValueError, match="max_len"):
        greedy_decode(model, _src(), max_len=0)
    assert _modes(model) == {True}


def test_translate_and_its_attention_maps_give_the_mode_back():
    tokenizer = train_bpe(SENTENCES * 3, vocab_size=60)
    model = _model(vocab=tokenizer.get_vocab_size())
    expected = translate(model.eval(), tokenizer, SENTENCES, beam_size=2)
    model.train()
    assert translate(model, tokenizer, SENTENCES, beam_size=2) == expected
    assert _modes(model) == {True}
    maps = translation_attention(model, tokenizer, SENTENCES[0])
    assert maps.source == SENTENCES[0] and _modes(model) == {True}


@pytest.mark.parametrize("alpha", [-0.6, float("nan"), float("inf")])
def test_a_negative_or_infinite_length_penalty_is_refused_everywhere(alpha):
    model = _model()
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        beam_search(model, _src(), beam_size=2, alpha=alpha)
    tokenizer = train_bpe(SENTENCES, vocab_size=60)
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        translate(_model(vocab=tokenizer.get_vocab_size()), tokenizer, SENTENCES, beam_size=2, alpha=alpha)


def test_in_eval_mode_leaves_other_first_arguments_alone():
    @in_eval_mode
    def first(x):
        return x

    assert first("not a model") == "not a model"


def test_a_source_of_only_padding_is_refused_not_translated():
    src = _src()
    src[1] = PAD_ID
    for search in (greedy_decode, beam_search):
        with pytest.raises(ValueError, match=r"src rows \[1\] hold only padding"):
            search(_model(), src)


@pytest.mark.parametrize("texts", [[""], ["", "   ", "\n"]])
def test_a_tokenizer_is_not_learned_from_blank_texts(texts):
    with pytest.raises(ValueError, match="texts hold no characters to learn sub-words from"):
        train_bpe(texts, vocab_size=60)
