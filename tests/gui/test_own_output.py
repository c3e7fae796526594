"""An encoder-decoder Run without a target prefix and the window's output line show one translation.

Before: the heatmaps framed the model's greedy output at 64 tokens (engine.traces.tracing) and the
output line decoded it again at 40 (engine.decoding.session.model_output), so a long text showed
two different translations. Now both are engine.decoding.greedy's, at OWN_OUTPUT_TOKENS.
"""
from pathlib import Path

import pytest

from attnscope.engine.decoding.greedy import OWN_OUTPUT_TOKENS
from attnscope.engine.interventions import HeadRef, Interventions
from attnscope.engine.kinds import CROSS
from attnscope.engine.loading.checkpoint import load_checkpoint
from attnscope.engine.traces.tracing import trace_text
from attnscope.gui.window.output_line import output_line

TRANSLATOR = Path(__file__).resolve().parents[2] / "resources/checkpoints/translator.safetensors"
LONG = " and ".join(["the big dog sees the small cat"] * 8) + " ."


@pytest.fixture(scope="module")
def translator():
    return load_checkpoint(TRANSLATOR)


def written(loaded, trace) -> str:
    """The trace's target tokens (after the start token) decoded as the output line decodes."""
    tok = loaded.tgt_tokenizer
    return tok.decode([tok.token_id(t) for t in trace.target_tokens[1:]])


@pytest.mark.parametrize("text", ["the dog sees the cat .", LONG])
def test_the_output_line_is_the_translation_the_heatmaps_show(translator, text):
    trace = trace_text(translator, text)
    assert output_line(translator, text) == written(translator, trace)
    if text == LONG:      # past the 40 tokens the output line used to stop at
        assert 40 < len(trace.target_tokens) - 1 <= OWN_OUTPUT_TOKENS


def test_with_interventions_both_are_the_changed_models_translation(translator):
    spec = Interventions().ablate([HeadRef(CROSS, 0, 0), HeadRef(CROSS, 1, 1)])
    trace = trace_text(translator, LONG, interventions=spec)
    assert output_line(translator, LONG, spec) == written(translator, trace)
