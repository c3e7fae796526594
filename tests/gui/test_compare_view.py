"""The Compare view: HF BERT against our encoder on the same weights, and two different models."""
import numpy as np

from attnscope.engine.loading.demo import random_model
from attnscope.engine.loading.hf import load_hf_model
from attnscope.gui.state import AppState
from attnscope.gui.views.compare import SAME_WEIGHTS, CompareView
from tests.helpers.hf_tiny import tiny_bert_folder
from attnscope.engine.traces import reading


def test_same_weights_differ_by_rounding_only(qtbot, tmp_path):
    state = AppState()
    state.text, state.pair = "the big dog sees the cat", "a small cat"
    view = CompareView(state)
    qtbot.addWidget(view)
    state.set_model(load_hf_model(str(tiny_bert_folder(tmp_path, 48, 2, 3))))
    assert view.b_source == SAME_WEIGHTS and view.same_button.isEnabled()
    view.run()
    qtbot.waitUntil(lambda: view.result is not None, timeout=20000)
    _, ta, tb, comps = view.result
    comp = comps["encoder self"]
    assert comp["max"] < 1e-5 and view.table.rowCount() == 2 * 3
    view.layer_box.setValue(1)
    view.head_box.setValue(2)
    np.testing.assert_allclose(view.images[2].image, reading.head(ta, "encoder self", 1, 2) - reading.head(tb, "encoder self", 1, 2),
                               atol=1e-7)
    top = float(np.abs(view.images[2].image).max())
    assert view.diff_bar.levels() == (-top, top)           # centred at 0, symmetric, stated
    view.table.sortItems(2)
    assert view.table.item(0, 2).value <= view.table.item(5, 2).value


def test_models_with_other_tokens_give_a_clear_message(qtbot):
    state = AppState()
    state.text = "the big dog"
    view = CompareView(state)
    qtbot.addWidget(view)
    state.set_model(random_model("gpt"))
    assert not view.same_button.isEnabled() and view.b_source is None
    view.set_b(random_model("translator"))
    view.run()
    qtbot.waitUntil(lambda: view.summary.text().startswith("Cannot compare"), timeout=20000)
    assert "different tokens" in view.summary.text()
