"""Small randomly initialised models of each family, for trying the app with no checkpoint.

Their attention is near uniform noise, and the window says so; they exist so every view
can be exercised (and tested) without a trained model.
"""
from __future__ import annotations

import torch

from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.models import Bert, BertConfig, GPT, GPTConfig, Translator, TranslatorConfig
from attnscope.engine.models.tokenizer import Tokenizer
from attnscope.engine.inputs import InputError

_SAMPLE = [
    "the big dog sees the small cat .",
    "the woman gives the man a book because she reads often .",
    "time flies like an arrow and fruit flies like a banana .",
    "attention is all you need , said the paper in 2017 .",
    "der große Hund sieht die kleine Katze .",
    "die Frau gibt dem Mann ein Buch , weil sie oft liest .",
]


def random_model(family: str, seed: int = 0, layers: int = 2, heads: int = 4, width: int = 64) -> LoadedModel:
    """A fresh untrained model of ``family`` with a tiny word-level tokenizer."""
    if family not in ("translator", "gpt", "bert"):          # its own door, before any work
        raise InputError(f"A random model's family is translator, gpt or bert, not {family!r:.40}.")
    torch.manual_seed(seed)
    tok = Tokenizer.train_word_level(_SAMPLE)
    v = tok.vocab_size
    if family == "translator":
        model = Translator(TranslatorConfig(v, v, d_model=width, n_head=heads, n_encoder_layers=layers,
                                            n_decoder_layers=layers, d_ff=4 * width, share_embeddings=True))
    elif family == "gpt":
        model = GPT(GPTConfig(v, n_layer=layers, n_head=heads, n_embd=width))
    else:                                                     # bert: the door above lets three through
        model = Bert(BertConfig(v, hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                                intermediate_size=4 * width))
    model.eval()
    return LoadedModel(f"random {family} (untrained)", family, model, tok, meta={"untrained": True})
