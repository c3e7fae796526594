"""File > Export Trace in the window: the choices come with their estimates, a choice past the
limit is offered disabled with the engine's sentence, and the file is written by a worker: the
GUI thread returns at once, the file appears while the event loop spins, and Cancel, Esc or
closing the window stop it with no file left behind."""
import threading

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut

from attnscope.engine.inspection import export
from attnscope.gui.window import trace_export
from attnscope.gui.window.trace_export import TraceExportDialog, TraceExporter
from attnscope.engine.traces import reading


def _dialog(window, qtbot) -> TraceExportDialog:
    window.export_trace_dialog()
    dialog = window.findChild(TraceExportDialog)
    qtbot.waitUntil(lambda: dialog.export_button.isEnabled() and "estimating" not in dialog.sizes["head"].text()
                    and len(dialog.estimates) == 2, timeout=20000)
    return dialog


@pytest.fixture
def gated(window, monkeypatch):
    """The window's trace computes each block only once the test opens the gate (a long export
    in slow motion); the gate opens by itself after 20 s, so a failing test never hangs the
    model thread."""
    gate = threading.Event()
    trace = window.state.trace
    tile = reading.tile

    def slow_tile(t, *args):
        if t is trace:
            gate.wait(20)
        return tile(t, *args)
    yield trace, gate, lambda: monkeypatch.setattr(reading, "tile", slow_tile)
    gate.set()


def _save_as(monkeypatch, path):
    monkeypatch.setattr(trace_export.QFileDialog, "getSaveFileName", lambda *a, **k: (str(path), ""))


def test_export_trace_writes_the_chosen_head_in_a_worker(window, qtbot, tmp_path, monkeypatch, gated):
    trace, gate, slow = gated
    kind = trace.kinds[-1]
    window.state.select(kind, 1, 2)
    dialog = _dialog(window, qtbot)
    assert dialog.buttons["head"].isChecked() and f"{kind}, layer 1, head 2" in dialog.buttons["head"].text()
    assert "as float32" in dialog.sizes["kind"].text() and dialog.buttons["trace"].isEnabled()
    path = tmp_path / "head.npz"
    _save_as(monkeypatch, path)
    slow()
    dialog.accept()                                   # returns at once: the writing waits for the gate
    exporter = TraceExporter.of(window)
    assert exporter.busy and exporter.progress.isVisible() and not path.exists()
    gate.set()
    qtbot.waitUntil(lambda: not exporter.busy, timeout=20000)
    with np.load(path) as f:
        np.testing.assert_allclose(f["weights"], reading.head(trace, kind, 1, 2), atol=1e-6)
    assert "Saved" in window.statusBar().currentMessage() and not exporter.progress.isVisible()


@pytest.mark.parametrize("how", ["cancel button", "esc", "closing the window"])
def test_a_stopped_export_leaves_no_file(window, qtbot, tmp_path, monkeypatch, gated, how):
    trace, gate, slow = gated
    dialog = _dialog(window, qtbot)
    dialog.buttons["kind"].setChecked(True)
    _save_as(monkeypatch, tmp_path / "every.csv")
    dialog.format_box.setCurrentIndex(dialog.format_box.findData("csv"))
    slow()
    dialog.accept()
    exporter = TraceExporter.of(window)
    qtbot.waitUntil(lambda: any(".part" in p.name for p in tmp_path.iterdir()), timeout=20000)  # the partial file
    if how == "cancel button":
        qtbot.mouseClick(exporter.progress.cancel_button, Qt.MouseButton.LeftButton)
    elif how == "esc":
        esc = next(s for s in window.findChildren(QShortcut) if s.key() == QKeySequence(Qt.Key.Key_Escape))
        esc.activated.emit()
    else:
        window.close()
    gate.set()
    qtbot.waitUntil(lambda: not exporter.jobs.running and list(tmp_path.iterdir()) == [], timeout=20000)
    if how != "closing the window":
        assert "cancelled" in window.statusBar().currentMessage() and not exporter.progress.isVisible()


def test_a_choice_past_the_limit_is_offered_disabled_with_the_sentence(window, qtbot, monkeypatch):
    kind = window.state.kind
    L, H, tq, tk = window.state.trace.shape(kind)
    monkeypatch.setattr(export, "EXPORT_LIMIT_BYTES", 4 * tq * tk + 1)     # one head fits, no more
    dialog = _dialog(window, qtbot)
    assert dialog.buttons["head"].isEnabled() and dialog.buttons["head"].isChecked()
    assert not dialog.buttons["kind"].isEnabled() and "over the export limit" in dialog.sizes["kind"].text()
    assert "more than the" in dialog.buttons["kind"].toolTip() and "Save Recording" in dialog.buttons["kind"].toolTip()
    dialog.reject()
