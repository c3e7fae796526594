"""AttentionTrace from model outputs, and text -> trace for every family."""
import numpy as np
import pytest

from attnscope.engine.loading.demo import random_model
from attnscope.engine.models.outputs import CROSS, DECODER_SELF, ENCODER_SELF
from attnscope.engine.inputs import InputError
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.traces import reading


@pytest.mark.parametrize("family,kinds", [("translator", [ENCODER_SELF, DECODER_SELF, CROSS]),
                                           ("gpt", [DECODER_SELF]), ("bert", [ENCODER_SELF])])
def test_trace_has_the_family_kinds_and_token_labels(family, kinds):
    loaded = random_model(family)
    trace = trace_text(loaded, "the big dog sees the cat .", target="der große Hund" if family == "translator" else None)
    assert trace.kinds == kinds
    for kind in kinds:
        L, H, Tq, Tk = trace.shape(kind)
        assert (L, H) == (2, 4)
        assert (Tq, Tk) == (len(reading.query_tokens(trace, kind)), len(reading.key_tokens(trace, kind)))
        assert reading.weights(trace, kind).dtype == np.float32
        assert np.allclose(reading.weights(trace, kind).sum(-1), 1, atol=1e-5)
    if family == "bert":
        assert trace.source_tokens[0] == "[CLS]" and trace.source_tokens[-1] == "[SEP]"
    if family == "translator":
        assert trace.target_tokens == ["[BOS]", "der", "große", "Hund"]
        assert trace.source_tokens[-1] == "[EOS]"


def test_bad_text_gets_clear_messages():
    loaded = random_model("gpt")
    with pytest.raises(InputError, match="no text"):
        trace_text(loaded, "   ")
    trace = trace_text(loaded, "zebra " * 400)
    assert trace.shape(DECODER_SELF)[2] == loaded.model.config.block_size - 1   # as decoding reads it
    assert any("truncated" in n for n in trace.notes)
    unknown, = [n for n in trace.notes if "'zebra'" in n]
    assert unknown.count("'zebra'") == 1 and "..." not in unknown   # each unknown word said once


def test_bert_sentence_pair_segments():
    loaded = random_model("bert")
    trace = trace_text(loaded, "time flies like an arrow", pair="fruit flies like a banana")
    assert trace.source_tokens.count("[SEP]") == 2
