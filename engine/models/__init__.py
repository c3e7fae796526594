"""The model families attnscope builds from scratch, by name.

``FAMILIES`` maps a family name to (model class, config class): the one registry that the
checkpoint loader, the trainer and the GUI use to build a model from a config.
"""
from __future__ import annotations

from attnscope.engine.models.bert import Bert, BertConfig
from attnscope.engine.models.gpt import GPT, GPTConfig
from attnscope.engine.models.translator import Translator, TranslatorConfig

FAMILIES = {
    "translator": (Translator, TranslatorConfig),
    "gpt": (GPT, GPTConfig),
    "bert": (Bert, BertConfig),
}

__all__ = ["FAMILIES", "Bert", "BertConfig", "GPT", "GPTConfig", "Translator", "TranslatorConfig"]
