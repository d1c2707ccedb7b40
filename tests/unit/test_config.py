"""lib.config: one base for every configuration dataclass (to_dict, a strict from_dict, named presets)."""

import dataclasses
import json

import pytest

from lib.bert import BertConfig
from lib.config import Config
from lib.gpt import GPTConfig
from lib.seq2seq import Seq2SeqConfig
from lib.training import TrainConfig
from lib.transformer import TransformerConfig

CONFIGS = {
    TransformerConfig: TransformerConfig.tiny(100),
    Seq2SeqConfig: Seq2SeqConfig(100),
    GPTConfig: GPTConfig.tiny(100),
    BertConfig: BertConfig.tiny(100),
    TrainConfig: TrainConfig(max_steps=10),
}


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_config_is_a_dataclass_on_the_one_base(cls):
    assert dataclasses.is_dataclass(cls) and issubclass(cls, Config)
    for name in ("to_dict", "from_dict", "preset"):
        assert getattr(cls, name).__qualname__.startswith("Config."), f"{cls.__name__}.{name} is redefined"


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_round_trip_through_json(cls):
    config = CONFIGS[cls]
    assert cls.from_dict(json.loads(json.dumps(config.to_dict()))) == config


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_from_dict_names_unknown_and_missing_fields(cls):
    data = CONFIGS[cls].to_dict()
    with pytest.raises(ValueError, match=r"no field\(s\) \['num_hedas'\]"):
        cls.from_dict({**data, "num_hedas": 8})
    required = [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if required:
        with pytest.raises(ValueError, match=required[0]):
            cls.from_dict({k: v for k, v in data.items() if k != required[0]})
    with pytest.raises(TypeError, match="needs a dict"):
        cls.from_dict([("d_model", 8)])


def test_presets_by_name():
    assert TransformerConfig.preset("multi30k", 8000) == TransformerConfig.multi30k(8000)
    assert GPTConfig.preset("tiny", 50, max_len=16) == GPTConfig.tiny(50, max_len=16)
    assert BertConfig.preset("base").d_model == 768
    for cls in (TransformerConfig, GPTConfig, BertConfig):
        assert cls.PRESETS and all(callable(getattr(cls, name)) for name in cls.PRESETS)
    with pytest.raises(ValueError, match="unknown preset 'huge' for GPTConfig"):
        GPTConfig.preset("huge", 50)


@pytest.mark.parametrize(
    "cls, field",
    [(TransformerConfig, "d_model"), (TransformerConfig, "num_decoder_layers"), (Seq2SeqConfig, "d_hidden")],
)
def test_from_dict_needs_the_sizes_of_the_weights_even_with_a_default(cls, field):
    # TransformerConfig.from_dict without d_model silently took 512: a dict that lacks a size describes no model
    data = {k: v for k, v in CONFIGS[cls].to_dict().items() if k != field}
    with pytest.raises(ValueError, match=rf"needs field\(s\) \['{field}'\]"):
        cls.from_dict(data)


@pytest.mark.parametrize(
    "build",
    [
        lambda: TransformerConfig.tiny(4),
        lambda: TransformerConfig(3, 3),
        lambda: TransformerConfig(100, 2, share_embeddings=False),
        lambda: Seq2SeqConfig(4),
    ],
)
def test_a_vocabulary_of_no_more_than_the_special_tokens_is_refused(build):
    with pytest.raises(ValueError, match=r"vocab_size must (exceed the 4 special tokens|be at least 5)"):
        build()
