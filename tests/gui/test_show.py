"""attnscope.show (issue 55): the window opened from Python on a model or a trace the script
holds, without a load, returning at once when asked (as under IPython's %gui qt), and closing
cleanly."""
from __future__ import annotations

import pytest

import attnscope
from attnscope.engine.inputs import InputError


def test_show_opens_the_window_on_an_in_memory_model_and_runs_the_text(qtbot, tmp_path):
    import torch
    import transformers

    from tests.helpers.hf_tiny import _bpe_tokenizer

    tokenizer = _bpe_tokenizer("decoder")
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    model = attnscope.load(transformers.LlamaForCausalLM(config), device="cpu", tokenizer=tokenizer)
    window = attnscope.show(model, "the cat sat on the mat", block=False)
    qtbot.addWidget(window)
    assert window.isVisible() and window.state.loaded is model
    qtbot.waitUntil(lambda: window.state.trace is not None, timeout=120000)
    assert window.state.trace.shape("decoder self")[:2] == (2, 4)
    assert window.discard_and_stop()
    window.close()


def test_show_draws_a_trace_with_no_model(qtbot):
    trace = attnscope.trace(attnscope.load("gpt", device="cpu"), "to be or not to be")
    window = attnscope.show(trace, block=False)
    qtbot.addWidget(window)
    assert window.state.trace is trace.raw and window.state.loaded is None
    assert window.discard_and_stop()
    window.close()


@pytest.mark.parametrize("what", [3, "gpt"])
def test_show_refuses_what_is_neither_in_one_sentence(what):
    with pytest.raises(InputError) as caught:
        attnscope.show(what, block=False)
    assert "\n" not in str(caught.value) and str(caught.value).endswith(".")
