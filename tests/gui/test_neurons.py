"""The neuron view's q and k reproduce the trace's weights for every family."""
import numpy as np
import pytest

from attnscope.engine.loading.demo import random_model
from attnscope.engine.inspection.neurons import query_keys
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.traces import reading


@pytest.mark.parametrize("family, kind", [("translator", "encoder self"), ("translator", "decoder self"),
                                          ("translator", "cross"), ("gpt", "decoder self"), ("bert", "encoder self")])
def test_softmax_of_q_dot_k_is_the_trace(family, kind):
    loaded = random_model(family, seed=3)
    trace = trace_text(loaded, "the big dog sees the small cat .", target="der große hund")
    qk = query_keys(trace, kind, layer=1, head=2)
    head = reading.head(qk.trace, kind, 1, 2)
    for qi in range(head.shape[0]):
        row = qk.row(qi)
        np.testing.assert_allclose(row["weights"], head[qi], atol=1e-5)
        np.testing.assert_allclose(row["product"].sum(-1) / np.sqrt(qk.queries.shape[1]), row["scores"], rtol=1e-5)
        assert row["masked"].tolist() == (head[qi] == 0).tolist()


def test_hf_bert_neurons(tmp_path):
    from attnscope.engine.loading.hf import load_hf_model
    from tests.helpers.hf_tiny import tiny_bert_folder
    loaded = load_hf_model(str(tiny_bert_folder(tmp_path, 48, 2, 3)))
    qk = query_keys(trace_text(loaded, "the big dog", pair="a cat"), "encoder self", layer=1, head=1)
    np.testing.assert_allclose(qk.row(2)["weights"], reading.head(qk.trace, "encoder self", 1, 1)[2], atol=1e-5)


def run_into_a_neuron_view(qtbot, family: str, seed: int):
    """A Neurons view on a random ``family`` model, right after a Run set its trace."""
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.gui.state import AppState
    from attnscope.gui.views.neuron import NeuronView
    state = AppState()
    state.set_model(random_model(family, seed=seed))
    state.text = "the big dog sees the small cat"
    view = NeuronView(state)
    qtbot.addWidget(view)
    state.set_trace(trace_text(state.loaded, state.text))
    return state, view


def test_neuron_view_draws_the_softmax_of_the_chosen_query(qtbot):
    state, view = run_into_a_neuron_view(qtbot, "gpt", seed=1)
    state.select_head("decoder self", 1, 3)
    qtbot.waitUntil(lambda: view.data is not None and view.head_box.value() == 3 and not view.jobs.busy, timeout=10000)
    view.query_box.setCurrentIndex(4)
    np.testing.assert_allclose(view.images["softmax"].image[:, 0], reading.head(state.trace, "decoder self", 1, 3)[4], atol=1e-5)
    assert view.images["q * k"].image.shape == (7, 16)


def test_waiting_for_a_view_to_be_drawn_waits_for_its_forward(qtbot):
    """Export and the benches grab a view right after wait_until_drawn: for the Neurons view,
    whose q and k come from a forward on the model thread, that is after the forward."""
    from attnscope.gui.drawing.prepared import wait_until_drawn
    state, view = run_into_a_neuron_view(qtbot, "bert", seed=2)
    assert view.jobs.busy                       # the forward is queued, nothing is drawn yet
    assert wait_until_drawn(view)
    assert view.data is not None and not view.jobs.busy
    np.testing.assert_allclose(view.images["softmax"].image[:, 0],
                               reading.head(state.trace, "encoder self", state.layer, state.head)[0], atol=1e-5)


def test_a_trace_read_from_a_file_says_it_has_no_queries(tmp_path):
    from attnscope.engine.inspection.export import load_npz, save_npz
    trace = trace_text(random_model("gpt", seed=1), "the big dog")
    with pytest.raises(ValueError, match="read from a file"):
        query_keys(load_npz(save_npz(trace, tmp_path / "t.npz")), "decoder self", 0, 0)


def test_merged_words_give_the_merged_trace_rows():
    """With word pieces merged, a word's softmax in the neuron view is the trace's row."""
    from attnscope.engine.models.tokenizer import Tokenizer
    from attnscope.engine.loading.loaded import LoadedModel
    from attnscope.engine.models import Bert, BertConfig
    import torch
    tok = Tokenizer.train_bpe(["playing dogs and cats play together, the dogs are playing"] * 30, vocab_size=40)
    torch.manual_seed(0)
    model = Bert(BertConfig(tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32)).eval()
    trace = trace_text(LoadedModel("bpe", "bert", model, tok), "playing zebras", merge_subwords=True)
    assert len(trace.source_tokens) < len(reading.pieces(trace)["source"])      # some words are several pieces
    qk = query_keys(trace, "encoder self", 0, 1)
    head = reading.head(trace, "encoder self", 0, 1)
    for wi in range(head.shape[0]):
        np.testing.assert_allclose(qk.row(wi)["weights"], head[wi], atol=1e-6)
