"""Nothing stale, nothing waits (issue 40, the window): tried in sequence as a user would.

A new Run cancels every job still working for the old text (its continuation, the Lens, the
interventions' measure), inside their forwards; the same Run asked twice runs once; results
shown while newer ones are computed are marked; a recording opened over a model is what the
title, the status bar, the output line, the Lens and the Interventions panel describe."""
import threading

import numpy as np
import pytest

import attnscope.gui.window.engine_calls
import attnscope.gui.window.main_window
from attnscope.engine.interventions import HeadRef
from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.traces.base import RunCancelled

FIRST, SECOND = "the dog sees the cat .", "a cat sleeps on the mat ."
CAP = 400     # forwards an endless fake job makes before it gives up on its own (never, when cancelled)


def _show(window, *titles):
    for title in titles:
        window.docks[title].show()
        window.docks[title].raise_()
    return [window.dock_layout.view(t) for t in titles]


def _run(window, qtbot, text):
    window.input_bar.text_edit.setText(text)
    window.run()
    qtbot.waitUntil(lambda: window.state.trace is not None and window.state.text == text
                    and not window.run_jobs.busy, timeout=30000)


def _endless(name: str, ended: dict, started: threading.Event, real):
    """A job for FIRST that keeps the model thread (forward after forward, as the 244 M Llama's
    lens did for ~90 s); for any other text the real function."""
    from attnscope.engine.traces.tracing import trace_text

    def fake(loaded, text, *args, **kwargs):
        if text != FIRST:
            return real(loaded, text, *args, **kwargs)
        started.set()
        try:
            for _ in range(CAP):
                trace_text(loaded, text)
        except RunCancelled:
            ended[name] = "cancelled"
            raise
        ended[name] = "ran to its end"
        return real(loaded, text, *args, **kwargs)
    return fake


def test_a_new_run_cancels_the_old_texts_lens_output_and_measure_inside_their_forwards(window_on, qtbot,
                                                                                      monkeypatch):
    import attnscope.engine.interventions
    import attnscope.engine.interventions.lens as lens_module
    import attnscope.gui.window.output_line

    w = window_on("random-gpt")
    lens, panel = _show(w, "Lens", "Interventions")
    ended, started = {}, threading.Event()
    for module, name in ((lens_module, "logit_lens"), (attnscope.engine.interventions, "intervention_effect"),
                         (attnscope.gui.window.output_line, "output_line")):
        monkeypatch.setattr(module, name, _endless(name, ended, started, getattr(module, name)))
    w.state.set_interventions(w.state.interventions.ablate([HeadRef(DECODER_SELF, 0, 0)], "zero"))
    w.input_bar.text_edit.setText(FIRST)
    w.run()
    qtbot.waitUntil(started.is_set, timeout=30000)     # one of them holds the model thread for FIRST
    _run(w, qtbot, SECOND)
    qtbot.waitUntil(lambda: bool(ended) and not lens.jobs.busy and not panel.jobs.busy
                    and not w.output_jobs.busy, timeout=30000)
    assert set(ended.values()) == {"cancelled"}, ended
    assert lens.lens is not None and lens.current()


def test_the_same_run_asked_twice_while_it_runs_is_started_once(window, qtbot, monkeypatch):
    gate, texts = threading.Event(), []
    real = attnscope.gui.window.engine_calls.timed_trace

    def gated(loaded, text, *args, **kwargs):      # text: the input bar's Prompt, checked once
        texts.append(text.text)
        gate.wait(20)
        return real(loaded, text, *args, **kwargs)

    monkeypatch.setattr(attnscope.gui.window.engine_calls, "timed_trace", gated)
    window.input_bar.text_edit.setText(FIRST)
    window.run()
    qtbot.waitUntil(lambda: len(texts) == 1)
    window.run()                       # Ctrl+Enter again, the live timer, a model signal: the same request
    window.input_bar.merge_box.toggled.emit(False)
    gate.set()
    qtbot.waitUntil(lambda: not window.run_jobs.busy and window.state.text == FIRST, timeout=30000)
    assert texts == [FIRST]


def test_results_of_the_previous_text_are_marked_until_the_new_ones_come(window_on, qtbot, monkeypatch):
    import attnscope.engine.interventions.lens as lens_module
    import attnscope.gui.window.output_line

    w = window_on("random-gpt")
    lens, = _show(w, "Lens")
    _run(w, qtbot, FIRST)
    qtbot.waitUntil(lambda: lens.lens is not None and lens.current() and not w.output_jobs.busy
                    and w.state.output_for == w.state.trace_id, timeout=30000)
    assert not lens.mark.isVisible() and lens.table.isEnabled() and w.output_row.label.isEnabled()
    old_output = w.output_row.label.text()
    gate = threading.Event()
    for module, name in ((lens_module, "logit_lens"), (attnscope.gui.window.output_line, "output_line")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, **k: (gate.wait(20), _real(*a, **k))[1])
    _run(w, qtbot, SECOND)               # the new heads are in; its lens and output are on their way
    assert lens.lens is not None and not lens.current()
    assert lens.mark.isVisible() and "previous text" in lens.mark.text() and not lens.table.isEnabled()
    assert w.output_row.label.text() == old_output and old_output        # kept, not blanked ...
    assert w.output_row.mark.isVisible() and not w.output_row.label.isEnabled()   # ... and marked
    gate.set()
    qtbot.waitUntil(lambda: lens.current() and w.state.output_for == w.state.trace_id and not w.output_jobs.busy,
                    timeout=30000)
    assert not lens.mark.isVisible() and lens.table.isEnabled()
    assert not w.output_row.mark.isVisible() and w.output_row.label.isEnabled()


def test_a_recording_opened_over_a_model_is_what_every_line_describes(window_on, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.traces.recording_file import save_recording
    from attnscope.engine.traces.tracing import trace_text

    path = tmp_path / "translator-run.safetensors"
    save_recording(trace_text(random_model("translator"), "the big dog ."), path)
    w = window_on("random-gpt")
    lens, panel, decoding = _show(w, "Lens", "Interventions", "Decoding")
    qtbot.waitUntil(lambda: lens.lens is not None and w.output_row.label.text() != "" and not w.output_jobs.busy,
                    timeout=30000)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))
    w.recordings.open_dialog()
    qtbot.waitUntil(lambda: w.state.trace is not None and w.state.trace.family == "translator"
                    and not w.file_jobs.busy, timeout=30000)
    assert "translator-run.safetensors" in w.windowTitle() and "recording" in w.windowTitle()
    assert w.state.recording == str(path) and w.state.trace_model is None
    assert "recording" in w.status_line.model_label.text() and "parameters" not in w.status_line.params_label.text()
    assert w.status_line.device_label.text() == "no model" and w.status_line.time_label.text() == ""
    assert "recording" in w.output_row.label.text() and not w.output_row.mark.isVisible()
    assert lens.lens is None and "recording" in lens.note.text() and lens.table.rowCount() == 0
    assert "recording" in panel.head_label.text() and not panel.zero_button.isEnabled()
    assert "recording" in decoding.output.text() and not decoding.step_button.isEnabled()
    assert "noise" not in w.banner.text() and "text box is not its text" in w.banner.text()   # notes about the recording, not the model
    _run(w, qtbot, FIRST)                                # a Run replaces the recording: the model again
    assert w.state.recording is None and w.windowTitle() == f"attnscope: {w.state.loaded.name}"
    assert "parameters" in w.status_line.params_label.text() and "recording" not in w.output_row.label.text()
    assert decoding.step_button.isEnabled() and "recording" not in decoding.output.text()
    qtbot.waitUntil(lambda: lens.lens is not None and lens.current(), timeout=30000)


def test_head_statistics_mechanism_forward_ends_when_its_drawing_is_superseded(qtbot):
    """The induction and previous-token scores need a forward of their own (once per model): a
    newer request ends it at its next attention site, as a Run's, and nothing is kept for it."""
    import attnscope.engine.inspection.analysis as analysis
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.gui.views.head_stats import stats_drawing

    loaded = random_model("gpt")
    trace = trace_text(loaded, "the cat sat on the mat")
    kind = trace.kinds[0]
    sites = []
    with pytest.raises(RunCancelled):
        stats_drawing(trace, kind, loaded, stop=lambda: sites.append(1) or True)
    assert sites and loaded.model not in analysis._MECHANISMS
    drawn = stats_drawing(trace, kind, loaded, stop=lambda: False)
    assert not np.isnan(drawn.stats["induction"]).any() and loaded.model in analysis._MECHANISMS
