"""The Decoding panel steps with the worker, replays from history, and never runs two steps at once."""
import numpy as np
import pytest

from attnscope.engine.loading.demo import random_model
from attnscope.gui.state import AppState
from attnscope.gui.views.decoding import DecodingPanel


@pytest.fixture
def panel(qtbot):
    state = AppState()
    state.text = "the big dog sees the small cat ."
    p = DecodingPanel(state)
    qtbot.addWidget(p)
    state.set_model(random_model("translator", seed=2))
    p.resize(1200, 400)
    p.show()
    yield p
    p.close()


def step_and_wait(panel, qtbot, n=1):
    for _ in range(n):
        before = len(panel.history)
        panel.step()
        qtbot.waitUntil(lambda: len(panel.history) > before or panel.ended, timeout=10000)


def test_three_steps_give_three_tokens_and_alignment_rows(panel, qtbot):
    step_and_wait(panel, qtbot, 3)
    n = len(panel.history)
    assert n == 3 or panel.ended
    image = panel.alignment.image.image
    assert image.shape[0] == n
    layer = panel.layer_box.currentIndex()
    for i, rec in enumerate(panel.history):
        np.testing.assert_allclose(image[i, : rec.cross_rows.shape[-1]], rec.cross_rows[layer].mean(0), atol=1e-6)
    L, H, S = panel.history[-1].cross_rows.shape
    assert panel.heads.image.image.shape == (L * H, S)
    assert panel.output.text().count("<b>") == 1


def test_back_shows_the_previous_step_without_recompute(panel, qtbot):
    step_and_wait(panel, qtbot, 2)
    if len(panel.history) < 2:
        pytest.skip("the random model ended after one token")
    calls = []
    panel.jobs.start = lambda *a, **k: calls.append(a)  # any recompute would go through here
    panel.back()
    assert panel.index == 0 and panel.alignment.image.image.shape[0] == 1
    panel.step()  # forward again: from history
    assert panel.index == 1 and calls == []


def test_clicks_while_a_step_runs_are_queued_not_run_together(panel, qtbot):
    panel.step()
    panel.step()
    panel.step()  # two clicks while the first is still starting the session
    assert panel._queued == 2 or len(panel.history) >= 1
    qtbot.waitUntil(lambda: (len(panel.history) == 3 or panel.ended) and not panel.jobs.busy, timeout=10000)
    steps = [r.step for r in panel.history]
    assert steps == list(range(len(steps)))   # no step skipped or doubled


def test_beam_strategy_lists_hypotheses(panel, qtbot):
    panel.strategy.setCurrentText("beam")
    panel.beam_width.setValue(3)
    panel.reset()
    step_and_wait(panel, qtbot, 2)
    assert panel.beams.topLevelItemCount() >= 3
    states = {panel.beams.topLevelItem(i).text(3) for i in range(panel.beams.topLevelItemCount())}
    assert "live" in states


def test_gpt_and_bert(qtbot):
    state = AppState()
    state.text = "the big dog"
    panel = DecodingPanel(state)
    qtbot.addWidget(panel)
    state.set_model(random_model("gpt"))
    step_and_wait(panel, qtbot, 2)
    assert panel.history[0].cross_rows is None and panel.alignment.image.image.shape[0] == len(panel.history)
    state.set_model(random_model("bert"))
    assert "encoder" in panel.output.text() and panel.history == []
    panel.close()


def test_closing_during_play_leaves_no_running_worker(panel, qtbot):
    from attnscope.gui.worker import active_threads
    panel.play_button.setChecked(True)
    qtbot.waitUntil(lambda: len(panel.history) >= 1, timeout=10000)
    panel.close()
    assert not panel.timer.isActive() and not panel.jobs.busy
    panel.jobs.pool.waitForDone(5000)
    assert active_threads() == 0


def test_arrow_keys_step_and_go_back(panel, qtbot):
    from PySide6.QtCore import Qt
    qtbot.keyClick(panel, Qt.Key.Key_Right)
    qtbot.waitUntil(lambda: len(panel.history) == 1 and not panel.jobs.busy, timeout=10000)
    step_and_wait(panel, qtbot)
    qtbot.keyClick(panel, Qt.Key.Key_Left)
    assert panel.index == 0


def test_a_text_cut_to_the_models_length_is_said_under_the_steps(panel, qtbot):
    assert not panel.input_note.isVisible()
    step_and_wait(panel, qtbot)
    assert not panel.input_note.isVisible()          # a short text: nothing to say
    panel.state.text = " ".join(["the big dog sees the small cat ."] * 40)
    panel.reset()
    step_and_wait(panel, qtbot)
    assert panel.input_note.isVisible() and "has 320 tokens" in panel.input_note.text()
    assert panel.input_note.text() == " ".join(panel.session.notes)
    panel.reset()                                    # a new text or model: the note goes with the session
    assert not panel.input_note.isVisible() and panel.input_note.text() == ""


def test_closing_the_window_during_play_stops_play(window, qtbot):
    """The panel sits in a dock, so it gets no closeEvent of its own when the window closes."""
    panel = window.dock_layout.view("Decoding")
    panel.play_button.setChecked(True)
    qtbot.waitUntil(lambda: len(panel.history) >= 1, timeout=10000)
    window.close()
    assert not panel.timer.isActive() and not panel.play_button.isChecked()   # no tick, so no step after


def test_beam_hypotheses_wrap_whole_instead_of_being_cut(panel, qtbot):
    """Hypotheses share their start: a row cut at one side makes finished beams look the same."""
    panel.strategy.setCurrentText("beam")
    panel.beam_width.setValue(3)
    panel.reset()
    step_and_wait(panel, qtbot, 6)
    tree = panel.beams
    tree.setColumnWidth(0, 120)
    tree.doItemsLayout()
    metrics = tree.fontMetrics()
    item = tree.topLevelItem(0)
    text = item.text(0)
    assert metrics.horizontalAdvance(text) > tree.columnWidth(0)   # too wide for one line
    assert tree.visualItemRect(item).height() >= 2 * metrics.lineSpacing()
    assert item.toolTip(0) == text


def test_after_three_steps_every_alignment_row_shows_without_scrolling(window, qtbot):
    """In the default layout (1600x1000) the Decoding dock showed 1 of 3 alignment rows after 3
    steps and had to be scrolled: its plots' size hints made the panel 560 px tall in a 340 px
    dock. The plots now take the height the dock has."""
    window.resize(1600, 1000)
    window.dock_layout.reset()
    dock = window.docks["Decoding"]
    dock.show()
    dock.raise_()
    panel = window.dock_layout.view("Decoding")
    step_and_wait(panel, qtbot, 3)
    assert len(panel.history) == 3
    scroll = panel.parentWidget().parentWidget()
    qtbot.waitUntil(lambda: panel.height() <= scroll.viewport().height())
    assert not scroll.verticalScrollBar().isVisible()
    plot = panel.alignment
    assert plot.isVisible() and plot.height() >= 150           # 3 rows, each taller than a line
    assert plot.mapTo(panel, plot.rect().bottomLeft()).y() <= scroll.viewport().height()
