"""The loader's rules (engine.loading.check, build; engine.inputs): the size estimate counts what the models really build, the memory check
refuses what does not fit (saying how much it needs), texts that are not Unicode are named."""
import dataclasses

import pytest

from attnscope.engine.loading.build import check_tensors
from attnscope.engine.runtime import free_memory
from attnscope.engine.loading.demo import random_model
from attnscope.engine.errors import ModelLoadError
from attnscope.engine.inputs import text_problem
from attnscope.engine.loading.check import check_config, check_model_size, parameter_count
from attnscope.engine.traces import reading


@pytest.mark.parametrize("family", ["translator", "gpt", "bert"])
def test_parameter_count_matches_the_built_model(family):
    loaded = random_model(family)
    assert parameter_count(family, dataclasses.asdict(loaded.model.config)) == loaded.n_parameters


@pytest.mark.parametrize("family, config", [
    ("translator", dict(src_vocab_size=30, tgt_vocab_size=40, d_model=32, n_head=4, norm_first=True)),
    ("gpt", dict(vocab_size=50, n_embd=32, n_head=4, bias=False, position="rope")),
    ("gpt", dict(vocab_size=50, n_embd=48, n_head=4, n_layer=3, block_size=16)),
])
def test_parameter_count_matches_other_shapes(family, config):
    from attnscope.engine.models import FAMILIES
    model_cls, config_cls = FAMILIES[family]
    model = model_cls(config_cls(**config))
    real = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert parameter_count(family, dataclasses.asdict(model.config)) == real


def test_parameter_count_matches_hugging_face_bert():
    from attnscope.engine.loading.hf import BERT_DEFAULTS, load_hf_model, minilm_path
    loaded = load_hf_model(minilm_path())
    config = {k: getattr(loaded.model.config, k) for k in BERT_DEFAULTS}
    assert parameter_count("hf-bert", config) == sum(p.numel() for p in loaded.model.parameters())


def test_a_model_that_does_not_fit_is_refused_with_its_size(monkeypatch):
    config = dataclasses.asdict(random_model("gpt").model.config)
    check_model_size("gpt", config, "small.safetensors")
    monkeypatch.setattr(free_memory, "available_memory", lambda: 1 << 20)
    with pytest.raises(ModelLoadError, match=r"small.safetensors: this model \(0.\d million parameters\) would need about "
                                             r"[\d.]+ MiB of memory, and about 1.0 MiB is free"):
        check_model_size("gpt", config, "small.safetensors")


def test_available_memory_is_positive_and_below_the_machine():
    free = free_memory.available_memory()
    assert 0 < free < 1 << 50


@pytest.mark.parametrize("key, value, phrase", [
    ("n_head", 0, "from 1 to"), ("n_embd", 10**9, "the model width"), ("n_layer", True, "whole number"),
    ("dropout", float("nan"), "dropout"), ("position", "spiral", "'learned', 'rope'"), ("n_head", 5, "not divisible"),
])
def test_config_messages_say_what_would_work(key, value, phrase):
    config = {**dataclasses.asdict(random_model("gpt").model.config), key: value}
    with pytest.raises(ModelLoadError) as err:
        check_config("gpt", config, "m.safetensors")
    assert str(err.value).startswith("m.safetensors: ") and phrase in str(err.value)


def test_text_problems():
    assert text_problem("the dog 😀") is None
    assert "byte 0xff" in text_problem("a\udcffb")
    assert "U+D800" in text_problem("a\ud800b")


@pytest.mark.parametrize("text, phrase", [("a\udcffb", "byte 0xff"), ("a\ud800b", r"U\+D800"),
                                          (b"the \xff dog", "not valid UTF-8"), (42, "not int")])
def test_the_engine_refuses_text_that_is_not_unicode_at_its_own_door(text, phrase):
    """A script calling the engine directly (no CLI, no window) gets InputError, not a raw
    TypeError or UnicodeEncodeError from the tokenizer."""
    from attnscope.engine.decoding.session import DecodeSession
    from attnscope.engine.inputs import InputError
    from attnscope.engine.traces.tracing import trace_text

    for loaded in (random_model("gpt", layers=1, heads=2, width=16), random_model("bert", layers=1, heads=2, width=16)):
        with pytest.raises(InputError, match=phrase):
            trace_text(loaded, text)
    with pytest.raises(InputError, match=phrase):
        DecodeSession(random_model("translator", layers=1, heads=2, width=16), text)


def test_the_engine_reads_utf8_bytes_as_text():
    from attnscope.engine.traces.tracing import trace_text

    loaded = random_model("gpt", layers=1, heads=2, width=16)
    from_bytes, from_text = trace_text(loaded, "the dog".encode()), trace_text(loaded, "the dog")
    kind = from_text.kinds[0]
    assert reading.key_tokens(from_bytes, kind) == reading.key_tokens(from_text, kind)


@pytest.mark.parametrize("raw, phrases", [
    ({"model_type": "llama", "hidden_size": 30, "num_attention_heads": 4}, ["hidden size (30)", "attention heads (4)"]),
    ({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3},
     ["num_attention_heads 4 and num_key_value_heads 3", "should divide 4 (1, 2, 4)"]),
    ({"model_type": "gpt2", "n_embd": 30, "n_head": 4}, ["n_embd 30 and n_head 4", "n_head should divide 30"]),
    ({"model_type": "bert", "hidden_size": 30, "num_attention_heads": 4}, ["hidden_size 30 and num_attention_heads 4"]),
])
def test_hugging_face_head_counts_that_do_not_divide_are_said_in_the_configs_terms(raw, phrases):
    """Not transformers' "Class validation error for validator ..." or "look at the above report!"."""
    from attnscope.engine.loading.hf import HFModelError, check_hf_sizes, hf_config

    with pytest.raises(HFModelError) as err:
        check_hf_sizes(hf_config(raw, "m"), "m")
    message = str(err.value)
    assert "validator" not in message and "report" not in message
    for phrase in phrases:
        assert phrase in message


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_weights_with_nan_or_infinity_are_refused_and_large_finite_ones_are_not(dtype):
    import torch
    dt = getattr(torch, dtype)
    big = torch.full((64,), torch.finfo(dt).max / 2, dtype=dt)          # finite, but its sum overflows
    check_tensors("f", [("big", big), ("small", torch.randn(8, 8).to(dt))])
    for bad in (float("nan"), float("inf"), -float("inf")):
        t = torch.randn(8, 8).to(dt)
        t[3, 5] = bad
        with pytest.raises(ModelLoadError, match="the weights w hold NaN or infinite values"):
            check_tensors("f", [("w", t)])
    both = torch.randn(8, 8).to(dt)
    both[0, 0], both[1, 1] = float("inf"), -float("inf")               # +inf and -inf: their sum is NaN
    with pytest.raises(ModelLoadError):
        check_tensors("f", [("w", both)])
