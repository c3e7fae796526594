"""The Training panel runs a short training, draws its loss, keeps probe traces, saves, stops."""
import pytest
from attnscope.gui.worker import active_threads

from attnscope.engine.loading.checkpoint import load_checkpoint
from attnscope.engine.training.timelapse import load_timelapse, timelapse_path
from attnscope.gui.state import AppState
from attnscope.gui.views.training import TrainingPanel

# A wait for training work, far above what it takes (a 40-step tiny run and its corpus took over 60 s at
# load 8-9 on 2 cores); never a hang: pytest-timeout ends a test that passes its limit.
WAIT = 240_000


@pytest.fixture
def panel(qtbot):
    p = TrainingPanel(AppState())
    qtbot.addWidget(p)
    p.size.setCurrentText("tiny")
    p.steps_box.setValue(40)
    p.probe_every.setValue(15)
    p.show()
    yield p
    p.close()                              # cancels a run (the panel's closeEvent) ...
    for jobs in (p.jobs, p.save_jobs):     # ... and none outlives the test: a run left training
        assert jobs.shutdown(60)           # slowed every test after it (issue 53)


def test_short_run_gives_curve_probes_and_a_checkpoint(panel, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    panel.steps_box.setValue(20)       # two probes as with 40 steps, in half the time (240 s ran out
    panel.probe_every.setValue(8)      # at load 18 on 2 cores with 40)
    panel.start()
    qtbot.waitUntil(lambda: panel.trained is not None, timeout=WAIT)
    qtbot.waitUntil(lambda: not panel.jobs.busy, timeout=WAIT)
    assert panel.steps[-1] == 20 and len(panel.steps) == len(panel.losses) >= 2
    x, y = panel.train_curve.getData()
    assert list(x) == panel.steps and len(y) == len(panel.losses)
    assert len(panel.probes) == 2 and [p.step for p in panel.probes] == [8, 16]
    assert panel.lapse_state.trace is panel.probes[-1].trace
    panel.slider.setValue(0)
    assert panel.lapse_state.trace is panel.probes[0].trace and "step 8" in panel.lapse_label.text()
    path = tmp_path / "mine.safetensors"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(path), ""))
    panel.save_dialog(wait=True)
    assert load_checkpoint(path).family == "translator"
    assert [p.step for p in load_timelapse(timelapse_path(path))] == [8, 16]
    assert panel.save_button.isEnabled() and not panel.stop_button.isEnabled()


def _start_long_run(panel, qtbot) -> None:
    """A run far longer than any test, under way (at least one progress record in)."""
    panel.steps_box.setValue(100000)
    panel.start()
    qtbot.waitUntil(lambda: len(panel.steps) >= 1, timeout=WAIT)


def test_stop_keeps_the_model_and_says_stopped_not_done(panel, qtbot):
    _start_long_run(panel, qtbot)
    panel.stop()
    qtbot.waitUntil(lambda: panel.trained is not None and not panel.jobs.busy, timeout=WAIT)
    steps = panel.trained.meta["training"]["steps"]
    assert steps < 100000
    assert panel.status.text().startswith(f"Stopped at step {steps} of 100000")
    assert panel.progress.value() == steps and panel.unsaved
    assert panel.start_button.isEnabled() and panel.save_button.isEnabled()


def test_closing_during_training_leaves_nothing_running(panel, qtbot):
    _start_long_run(panel, qtbot)
    panel.close()
    assert not panel.jobs.busy
    panel.jobs.pool.waitForDone(10000)
    assert active_threads() == 0


def test_an_error_in_the_run_shows_and_gives_the_controls_back(panel, qtbot, monkeypatch):
    import attnscope.engine.training
    import attnscope.engine.training.loops
    from attnscope.gui.worker import job_failures

    def broken(*args, **kwargs):
        raise RuntimeError("element 0 of tensors does not require grad")
        yield  # a generator, as the real trainer

    monkeypatch.setattr(attnscope.engine.training.loops, "train_translator", broken)
    monkeypatch.setattr(attnscope.engine.training, "train_translator", broken)    # the panel asks the package's face
    announced = []
    job_failures().failed.connect(lambda title, message: announced.append(title))
    panel.start()
    qtbot.waitUntil(lambda: "Training failed" in panel.status.text(), timeout=WAIT)
    qtbot.waitUntil(lambda: not panel.jobs.busy)
    assert "does not require grad" in panel.status.text()
    assert announced == ["Training failed"]
    assert panel.start_button.isEnabled() and not panel.stop_button.isEnabled()


def test_closing_mid_run_ends_within_one_step(panel, qtbot, monkeypatch):
    """Close stops the trainer inside the run: at most the step under way finishes, and no
    final evaluation runs (the window would wait for it)."""
    import attnscope.engine.training.loops

    calls = {"losses": 0}     # one per training step, several per evaluation
    real_loss = attnscope.engine.training.loops.translator_loss

    def counting_loss(*args, **kwargs):
        calls["losses"] += 1
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(attnscope.engine.training.loops, "translator_loss", counting_loss)
    panel.probe_every.setValue(10000)
    _start_long_run(panel, qtbot)
    at_close = calls["losses"]
    panel.close()
    assert not panel.jobs.running            # close() waited for the thread to let go
    assert calls["losses"] <= at_close + 1   # at most the step under way; no evaluation


def test_a_gpt_trains_the_bundled_gpts_way_and_a_translator_does_not(panel):
    from attnscope.engine.training.records import GPT_RECIPE, TrainConfig

    panel.family.setCurrentText("gpt")
    gpt = panel.config()
    assert (gpt.vocab_size, gpt.repeat_fraction, gpt.batch_size, gpt.lr) == (
        GPT_RECIPE["vocab_size"], GPT_RECIPE["repeat_fraction"], GPT_RECIPE["batch_size"], GPT_RECIPE["lr"])
    panel.family.setCurrentText("translator")
    translator = panel.config()
    assert translator.repeat_fraction == 0.0 and translator.lr == TrainConfig.lr


def test_a_corpus_too_small_says_so_and_gives_the_controls_back(panel, qtbot, tmp_path):
    corpus = tmp_path / "one.txt"
    corpus.write_text("just one line\n", encoding="utf-8")
    panel.family.setCurrentText("gpt")
    panel.corpus.setText(str(corpus))
    panel.start()
    qtbot.waitUntil(lambda: not panel.jobs.busy, timeout=WAIT)
    assert panel.status.text().startswith("Training failed: one.txt has 1 line of text")
    assert panel.trained is None and panel.start_button.isEnabled() and not panel.stop_button.isEnabled()


def test_save_checkpoint_writes_in_the_training_worker(panel, qtbot, tmp_path, monkeypatch):
    """Save Checkpoint asks where, then writes off the GUI thread (the training lane, where the
    model trained); the panel says saved only once the file is there, and nothing is unsaved."""
    import threading

    from PySide6.QtWidgets import QFileDialog

    import attnscope.gui.views.training as training

    panel.steps_box.setValue(20)
    panel.start()
    qtbot.waitUntil(lambda: panel.trained is not None and not panel.jobs.busy, timeout=WAIT)
    assert panel.unsaved
    on_gui, write = [], training._write

    def spy(*args):
        on_gui.append(threading.current_thread() is threading.main_thread())
        return write(*args)
    monkeypatch.setattr(training, "_write", spy)
    path = tmp_path / "saved"                                   # no extension: .safetensors is added
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(path), ""))
    panel.save_dialog(wait=True)
    written = tmp_path / "saved.safetensors"
    assert on_gui == [False] and written.exists() and load_checkpoint(written).family == "translator"
    assert not panel.unsaved and panel.status.text().startswith("Saved") and panel.save_button.isEnabled()


def _window_training(window, qtbot):
    """The window's Training panel, a long run under way in it."""
    window.docks["Training"].show()
    panel = window.dock_layout.view("Training")
    panel.size.setCurrentText("tiny")
    panel.probe_every.setValue(100000)
    _start_long_run(panel, qtbot)
    return panel


def test_closing_the_window_stops_its_training_and_a_discard_asks_once(window, qtbot, monkeypatch):
    """Closing over a run asks once; Discard stops the trainer (within its step) and drops the
    work, so a second close (pytest-qt's, a re-opened session's) asks nothing."""
    from PySide6.QtWidgets import QMessageBox

    panel = _window_training(window, qtbot)
    asked = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: asked.append(box.text()) or QMessageBox.StandardButton.Discard)
    assert window.close() and not window.isVisible()
    qtbot.waitUntil(lambda: not panel.jobs.running, timeout=WAIT)    # the thread let go: nothing trains
    assert not panel.unsaved and window.close()
    assert len(asked) == 1 and "still running" in asked[0]


def test_discard_and_stop_leaves_a_window_that_closes_without_asking(window, qtbot):
    """What the tests' windows do before they close (offscreen no one answers a question): the
    run is stopped and waited for, the work dropped; the close asks nothing (the dialog guard
    in conftest would fail this test if it did)."""
    panel = _window_training(window, qtbot)
    assert panel.unsaved
    assert window.discard_and_stop()
    assert not panel.jobs.running and not panel.unsaved and not window.unsaved_views()
    assert window.close()
