"""The positional lab draws the engine's numbers: clocks, offsets, similarity, learned tables,
prepared in its worker (the GUI thread never runs the torch maths)."""
import threading

import numpy as np
import pytest
import torch

from attnscope.engine.models import positional as P
from attnscope.engine.loading.demo import random_model
from attnscope.gui.state import AppState
from attnscope.gui.views.positional import PositionalLab, clock_depths


@pytest.fixture
def lab(qtbot):
    state = AppState()
    w = PositionalLab(state)
    qtbot.addWidget(w)
    w.resize(1000, 600)
    w.show()
    return w


def test_heatmap_is_the_sinusoidal_table(lab, drawn):
    lab.d_model.setValue(32)
    lab.n_positions.setValue(50)
    drawn(lab)
    expected = P.sinusoidal_encoding(50, 32, 10000.0, dtype=torch.float64).numpy()
    np.testing.assert_allclose(lab.heat.image, expected)


def test_slider_moves_every_clock_to_its_angle(lab, drawn):
    lab.d_model.setValue(64)
    lab.base.setValue(100.0)
    lab.position.setValue(17)
    drawn(lab)
    w = P.angular_frequencies(64, 100.0).numpy()
    depths = clock_depths(64)
    assert len(lab.clocks) == len(depths) and depths[0] == 0 and depths[-1] == 31
    for (plot, point, trail, i) in lab.clocks:
        x, y = point.getData()
        assert x[0] == pytest.approx(np.sin(17 * w[i])) and y[0] == pytest.approx(np.cos(17 * w[i]))
        tx, ty = trail.getData()
        assert len(tx) == 17 and tx[-1] == pytest.approx(np.sin(16 * w[i]))
    lab.position.setValue(40)
    drawn(lab)
    assert lab.clocks[1][1].getData()[0][0] == pytest.approx(np.sin(40 * w[lab.clocks[1][3]]))


def test_offset_error_is_tiny_and_matrix_shown(lab, drawn):
    lab.k.setValue(7)
    lab.depth.setValue(3)
    lab.position.setValue(20)
    drawn(lab)
    assert lab.offset_error < 1e-6
    r = P.rotation_matrix(7, 3, 64).numpy()
    assert f"{r[0, 1]:+.4f}" in lab.matrix_label.text()
    x, y = lab.sim_curve.getData()
    np.testing.assert_allclose(y, P.offset_similarity(20, 99, 64).numpy())
    assert lab.rope_spread < 1e-9


def test_learned_positions_fill_the_learned_view(lab, drawn):
    drawn(lab)
    assert lab.learned is None and "Open a GPT or BERT" in lab.learned_label.text()
    loaded = random_model("gpt")
    lab.state.set_model(loaded)
    drawn(lab)
    table = loaded.model.transformer.wpe.weight.detach()[:100]
    np.testing.assert_allclose(lab.learned, P.pca_2d(table).numpy())
    np.testing.assert_allclose(lab.cos_image.image, P.cosine_matrix(table).numpy())
    lab.use_model.setChecked(True)
    drawn(lab)
    np.testing.assert_allclose(lab.heat.image, table.double().numpy())


def test_rope_curve_uses_a_rope_gpts_own_query_and_key(lab, qtbot):
    from attnscope.engine.loading.loaded import LoadedModel
    from attnscope.engine.models import GPT, GPTConfig
    toy = random_model("gpt")
    torch.manual_seed(0)
    model = GPT(GPTConfig(toy.tokenizer.vocab_size, n_layer=2, n_head=4, n_embd=64, position="rope")).eval()
    lab.state.text = "the big dog"
    lab.state.set_model(LoadedModel("rope gpt", "gpt", model, toy.tokenizer))
    qtbot.waitUntil(lambda: lab.rope_source.startswith("rope gpt"), timeout=10000)
    assert "'the'" in lab.rope_source and lab.rope_spread < 1e-9
    assert "Open a GPT or BERT" in lab.learned_label.text() and "rotary" in lab.learned_label.text()
    first = lab.rope_scatter.getData()[1].copy()
    # A Run with another text: the curve follows the new first token, with no other change.
    from attnscope.engine.traces.tracing import trace_text
    lab.state.text = "cat sees the dog"
    lab.state.set_trace(trace_text(lab.state.loaded, lab.state.text))
    qtbot.waitUntil(lambda: "'cat'" in lab.rope_source, timeout=10000)
    assert not np.allclose(lab.rope_scatter.getData()[1], first)
    assert lab.rope_spread < 1e-9


def test_the_lab_shows_the_sizes_it_draws(qtbot, drawn):
    from attnscope.engine.loading.demo import random_model
    from attnscope.gui.state import AppState
    from attnscope.gui.views.positional import PositionalLab

    state = AppState()
    state.set_model(random_model("gpt", width=48))
    lab = PositionalLab(state)
    qtbot.addWidget(lab)
    lab.show()
    lab.d_model.setValue(33)                     # an odd width has no sine/cosine pairs
    assert lab.d_model.value() % 2 == 0
    lab.use_model.setChecked(True)               # the GPT's learned table: its sizes, its knobs only
    drawn(lab)
    assert lab.d_model.value() == 48 and not lab.d_model.isEnabled() and not lab.base.isEnabled()
    lab.use_model.setChecked(False)
    drawn(lab)
    assert lab.d_model.isEnabled()


def test_the_labs_maths_runs_off_the_gui_thread(lab, drawn, monkeypatch):
    """Structure, not time: the preparing function and every engine.models.positional function it
    reaches run in the worker, whatever the user moves."""
    import attnscope.gui.views.positional as lab_module

    loaded = random_model("gpt")                 # built here first: its own position modules are not the lab's
    calls = []

    def spy_on(module, name):
        real = getattr(module, name)

        def spy(*args, **kwargs):
            calls.append((name, threading.current_thread() is threading.main_thread()))
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, spy)

    spy_on(lab_module, "lab_drawing")
    for name in ("angular_frequencies", "sinusoidal_encoding", "rotation_matrix", "shift_encoding",
                 "offset_similarity", "rope_scores", "pca_2d", "cosine_matrix", "position_table"):
        spy_on(P, name)
    drawn(lab)
    lab.state.set_model(loaded)
    lab.use_model.setChecked(True)
    for pos in range(5, 40, 5):                  # a slider drag: superseding requests
        lab.position.setValue(pos)
    lab.k.setValue(9)
    drawn(lab)
    names = {name for name, _ in calls}
    assert {"lab_drawing", "sinusoidal_encoding", "shift_encoding", "rope_scores", "pca_2d",
            "position_table"} <= names
    assert not any(on_gui for _, on_gui in calls)
    assert lab.position_label.text() == "pos 35" and lab.error_label.text().startswith("max |R(k) PE(35) - PE(44)|")


def test_a_failed_rope_forward_is_said_and_the_other_tabs_still_draw(lab, drawn, monkeypatch):
    import attnscope.gui.views.positional as lab_module
    from attnscope.engine.loading.loaded import LoadedModel
    from attnscope.engine.models import GPT, GPTConfig
    from attnscope.gui.worker import job_failures

    def broken(loaded, text):
        raise ValueError("no query for you")
    monkeypatch.setattr(lab_module, "_rope_vectors", broken)
    dialogs = []
    said = lambda title, message: dialogs.append((title, message))  # noqa: E731
    job_failures().failed.connect(said)
    toy = random_model("gpt")
    model = GPT(GPTConfig(toy.tokenizer.vocab_size, n_layer=1, n_head=2, n_embd=32, position="rope")).eval()
    lab.state.text = "the big dog"
    lab.n_positions.setValue(40)
    lab.state.set_model(LoadedModel("rope gpt", "gpt", model, toy.tokenizer))
    drawn(lab)
    job_failures().failed.disconnect(said)
    assert lab.rope_label.text() == "RoPE vectors unavailable: no query for you"
    assert dialogs == [(lab_module.TITLE, "no query for you")]
    assert lab.heat.image.shape == (40, 64) and "rotary" in lab.learned_label.text()
