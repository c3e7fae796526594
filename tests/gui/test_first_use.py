"""What a new user trips over (issue 34), driven through the real window and panels."""
from __future__ import annotations

import pytest

from attnscope.engine.loading import catalog
from attnscope.gui.worker import job_failures

GPT = next(str(p) for p in catalog.bundled_checkpoints() if p.stem == "gpt")


def _open(window, title):
    window.docks[title].show()
    window.docks[title].raise_()
    return window.dock_layout.view(title)


@pytest.fixture
def gpt_window(window_on):
    return window_on(GPT)


def test_a_model_that_ends_at_once_says_so_on_the_output_line(gpt_window, qtbot):
    w = gpt_window
    w.input_bar.text_edit.setText("Good night, sweet prince, and they sleep.")
    w.run()
    qtbot.waitUntil(lambda: "ended immediately" in w.output_row.label.text(), timeout=30000)
    assert "([EOS] p = 0." in w.output_row.label.text() and w.output_row.label.isVisible()
    panel = _open(w, "Decoding")
    panel.step()
    qtbot.waitUntil(lambda: panel.ended, timeout=30000)
    assert "ended immediately ([EOS] p = 0." in w.state.output


def test_empty_text_then_step_is_one_calm_message_and_clears_the_views(window, qtbot):
    panel = _open(window, "Decoding")
    detail = _open(window, "Head detail")
    window.state.set_output("der hund")
    before = window.error_box
    failures = []
    job_failures().failed.connect(lambda title, message: failures.append(title))
    window.input_bar.text_edit.setText("")
    window.run()
    assert window.state.trace is None and window.grid.mosaic is None and detail.matrix is None
    assert window.output_row.label.text() == ""
    assert window.banner.isVisible() and "no text" in window.banner.text().lower()
    assert not panel.step_button.isEnabled()
    panel.step()                               # the key press does nothing either
    assert not panel.jobs.busy and panel.session is None
    qtbot.wait(50)
    assert failures == [] and window.error_box is before, window.error_box and window.error_box.text()
    assert "no text" not in panel.output.text().lower()     # said once, in the banner


def test_compare_after_switching_to_a_model_with_no_b_shows_no_difference_panel(qtbot, tmp_path):
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.loading.hf import load_hf_model
    from attnscope.gui.state import AppState
    from attnscope.gui.views.compare import CompareView
    from tests.helpers.hf_tiny import tiny_bert_folder

    state = AppState()
    state.text = "the big dog sees the cat"
    view = CompareView(state)
    qtbot.addWidget(view)
    view.resize(1000, 500)
    view.show()
    state.set_model(load_hf_model(str(tiny_bert_folder(tmp_path, 48, 2, 3))))
    view.run()
    qtbot.waitUntil(lambda: view.result is not None, timeout=20000)
    assert view.split.isVisible() and view.diff_bar.isVisible()
    state.set_model(random_model("translator", seed=0))        # no B for it
    assert "none yet" in view.b_label.text()
    assert not view.split.isVisible() and not view.diff_bar.isVisible() and not view.bar.isVisible()
    assert "no model b" in view.summary.text().lower()


@pytest.fixture
def training(qtbot):
    from attnscope.gui.state import AppState
    from attnscope.gui.views.training import TrainingPanel

    panel = TrainingPanel(AppState())
    qtbot.addWidget(panel)
    panel.size.setCurrentText("tiny")
    panel.show()
    yield panel
    panel.close()


def test_training_says_one_percentage_in_its_text_and_on_its_bar(training):
    from types import SimpleNamespace

    training.progress.setRange(0, 110)
    training._show_progress(3)              # 2.7 %: the text said 3 %, the bar 2%
    assert training.progress.text() == "2 %"
    training._finished(SimpleNamespace(meta={"training": {"steps": 3, "val_loss": 4.0}}))
    assert "(2 %)" in training.status.text()


def test_a_new_run_does_not_show_the_last_runs_time_lapse_while_it_prepares(training, qtbot):
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.traces.tracing import trace_text

    old = trace_text(random_model("translator", seed=0), "the big dog")
    training.lapse_state.set_trace(old)
    training.lapse_label.setText("time-lapse 2/2: step 30, loss 3.000")
    training.steps_box.setValue(100000)
    training.probe_every.setValue(100000)
    training.start()
    assert training.lapse_state.trace is None and training.grid.mosaic is None
    assert training.lapse_label.text().startswith("time-lapse: probe traces appear here")


def test_closing_the_window_during_training_asks_first(window, qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    panel = _open(window, "Training")
    panel.size.setCurrentText("tiny")
    panel.steps_box.setValue(100000)
    panel.start()
    qtbot.waitUntil(lambda: len(panel.steps) >= 1, timeout=240000)   # the corpus first: > 60 s at load 8-14
    asked = []

    def answer(box, button):
        asked.append(box.text())
        return button
    monkeypatch.setattr(QMessageBox, "exec", lambda box: answer(box, QMessageBox.StandardButton.Cancel))
    assert not window.close() and window.isVisible() and panel.jobs.busy
    assert "still running" in asked[0]
    monkeypatch.setattr(QMessageBox, "exec", lambda box: answer(box, QMessageBox.StandardButton.Discard))
    assert window.close()
    qtbot.waitUntil(lambda: not panel.jobs.running, timeout=60000)    # the run it started has stopped
    assert not panel.unsaved and window.close() and len(asked) == 2  # discarded: a second close asks nothing


CLOSE_DURING_FORWARD = r"""
import sys, threading
sys.path.insert(0, {root!r})
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import attnscope.gui.window.engine_calls as calls
import attnscope.gui.window.main_window as mw
from attnscope.gui.app import run_app

entered = threading.Event()

def stuck_forward(*args, **kwargs):          # a forward that cannot stop inside itself
    entered.set()
    threading.Event().wait()

real_init = mw.MainWindow.__init__

def init(self, *args, **kwargs):
    real_init(self, *args, **kwargs)
    def close_when_stuck():
        if entered.is_set():
            self.close()
        else:
            QTimer.singleShot(20, close_when_stuck)
    def run_stuck():
        if self.state.loaded is None:
            QTimer.singleShot(20, run_stuck)
            return
        calls.timed_trace = stuck_forward
        self.input_bar.text_edit.setText("a forward that never ends")
        self.run()
        close_when_stuck()
    QTimer.singleShot(0, run_stuck)

mw.MainWindow.__init__ = init
print("exit", run_app(type("Args", (), {{"model": "random-gpt", "device": "cpu"}})()), flush=True)
"""


def test_closing_during_a_forward_ends_the_process_without_waiting_for_it(tmp_path):
    """The window's process used to outlive its window by the forward's length (5 s), or
    for ever for a forward that never ends; it ends without it now."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "close.py"
    script.write_text(CLOSE_DURING_FORWARD.format(root=str(Path(__file__).resolve().parents[2])))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", ATTNSCOPE_SETTINGS=str(tmp_path / "settings.ini"))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "settings.ini").exists()      # closeEvent saved the settings before the end


def test_a_prompt_longer_than_the_context_is_noted_once_in_the_banner(gpt_window, qtbot):
    w = gpt_window
    context = w.state.loaded.meta.get("config", {}).get("block_size", 256)
    w.input_bar.text_edit.setText(" ".join(["to be or not to be"] * (context // 2)))
    w.run()
    qtbot.waitUntil(lambda: w.banner.isVisible() and w.banner.text().strip() != "", timeout=30000)
    panel = _open(w, "Decoding")
    panel.step()
    qtbot.waitUntil(lambda: len(panel.history) >= 1 or panel.ended, timeout=30000)
    assert panel.session.notes                         # the session knows it was cut ...
    assert not panel.input_note.isVisible()            # ... and the banner has said it already
