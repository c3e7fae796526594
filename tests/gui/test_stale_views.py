"""One rule for what a view shows (issue 53), tried in sequence as a user works: a view drawn
from a trace that is no longer current is greyed with the sentence why, until its new drawing
lands; hovering it reads nothing old. Head detail and Head statistics were the offenders: they
kept the previous text's picture and numbers, not greyed, while a long text ran and after Esc
during a remote fetch."""
import threading

import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt

import attnscope.gui.window.engine_calls
from attnscope.gui.drawing.prepared import STALE_NOTE, STOPPED_NOTE

LONG = " ".join(["the small cat sees the big dog and the dog sees the cat ."] * 12)


def _open(window, *titles):
    for title in titles:
        window.docks[title].show()
        window.docks[title].raise_()
    return [window.dock_layout.view(title) for title in titles]


def _veiled(view, sentence: str) -> bool:
    cover = view.stale_cover
    return (view.stale and cover is not None and cover.isVisible() and cover.text() == sentence
            and cover.geometry() == view.stale_target().rect())


_QTBOT = []


def _greyed(view, sentence: str) -> bool:
    """Stale, and greyed with ``sentence`` once the veil's short delay is over (no flicker for a short Run)."""
    if not view.stale:
        return False
    _QTBOT[-1].waitUntil(lambda: _veiled(view, sentence), timeout=5000)
    return True


@pytest.fixture(autouse=True)
def _bot(qtbot):
    _QTBOT.append(qtbot)
    yield
    _QTBOT.pop()


def _current(view) -> bool:
    return not view.stale and (view.stale_cover is None or not view.stale_cover.isVisible())


def _gated_runs(monkeypatch):
    """Runs that wait for the test's word before they compute (a long text that takes a minute, held)."""
    gate = threading.Event()
    run = attnscope.gui.window.engine_calls.timed_trace

    def held(*args, **kwargs):
        gate.wait(30)
        return run(*args, **kwargs)
    monkeypatch.setattr(attnscope.gui.window.engine_calls, "timed_trace", held)
    return gate


def test_head_detail_and_statistics_are_greyed_while_stale_and_current_after(window_on, qtbot, drawn, monkeypatch):
    window = window_on("random-gpt")
    detail, stats = _open(window, "Head detail", "Head statistics")
    drawn(detail, stats)
    assert _current(detail) and _current(stats)
    detail._on_hover(detail.item.vb.mapViewToScene(pg.Point(0.5, 0.5)))
    assert "query 0" in detail.readout.text()

    # 1. a long text, held in its Run: both greyed with the overview's sentence, the readout gone
    gate = _gated_runs(monkeypatch)
    window.input_bar.text_edit.setText(LONG)
    window.run()
    assert window.state.pending
    assert _greyed(detail, STALE_NOTE) and _greyed(stats, STALE_NOTE)
    assert detail.readout.text().strip() == ""
    old_cells = stats.table.rowCount()
    assert old_cells > 0                              # the old numbers stay, under the veil

    # 2. Esc: the Run stops; what is shown is the last finished Run's, which is the trace on screen
    window.stop_run()
    gate.set()
    qtbot.waitUntil(lambda: not window.run_jobs.busy, timeout=20000)
    assert _current(detail) and _current(stats)

    # 3. a Run of another text: greyed until each view's new drawing lands, then current
    gate = _gated_runs(monkeypatch)
    window.input_bar.text_edit.setText(LONG)
    window.run()
    assert _greyed(detail, STALE_NOTE) and _greyed(stats, STALE_NOTE)
    gate.set()
    qtbot.waitUntil(lambda: window.state.text == LONG and not window.run_jobs.busy, timeout=30000)
    drawn(detail, stats)
    assert _current(detail) and _current(stats)
    assert detail.drawing.trace is window.state.trace

    # 4. a new trace whose drawings are stopped before they land (Esc during a remote fetch):
    #    greyed with the sentence that says so, never shown as current
    window.input_bar.text_edit.setText("the cat sees the dog .")
    window.run()
    qtbot.waitUntil(lambda: window.state.text == "the cat sees the dog ." and not window.run_jobs.busy,
                    timeout=30000)
    drawn(detail, stats)
    window.state.set_trace(window.state.trace)        # its drawings asked for ...
    for view in (detail, stats):
        view.draw_jobs.cancel()                       # ... and stopped, as RemoteFetches.stop does
    assert _greyed(detail, STOPPED_NOTE) and _greyed(stats, STOPPED_NOTE)
    for view in (detail, stats):                      # a click on the veil draws it
        qtbot.mouseClick(view.stale_cover, Qt.MouseButton.LeftButton)
    drawn(detail, stats)
    assert _current(detail) and _current(stats)

    # 5. a model change: greyed while it loads, then the new model's Run, current
    gate, load = threading.Event(), attnscope.gui.window.engine_calls.open_model

    def held_load(source, device, report=None, stop=None):   # a load that takes a while, held
        gate.wait(30)
        return (yield from load(source, device, report, stop))
    monkeypatch.setattr(attnscope.gui.window.engine_calls, "open_model", held_load)
    with qtbot.waitSignal(window.state.model_changed, timeout=30000):
        window.opening.open_source("random-gpt")
        assert window.state.pending and _greyed(detail, STALE_NOTE) and _greyed(stats, STALE_NOTE)
        gate.set()
    qtbot.waitUntil(lambda: window.state.trace is not None and not window.run_jobs.busy, timeout=30000)
    drawn(detail, stats)
    assert _current(detail) and _current(stats)


def test_the_veil_takes_the_mouse_so_old_cells_are_not_read(window_on, qtbot, drawn, monkeypatch):
    """While greyed, a mouse over Head detail's map reads nothing (the veil has it)."""
    window = window_on("random-gpt")
    detail, = _open(window, "Head detail")
    drawn(detail)
    gate = _gated_runs(monkeypatch)
    window.input_bar.text_edit.setText(LONG)
    window.run()
    qtbot.waitUntil(lambda: detail.stale_cover is not None and detail.stale_cover.isVisible(), timeout=5000)
    centre = detail.plot.mapFromScene(detail.item.vb.mapViewToScene(pg.Point(0.5, 0.5)))
    under = detail.plot.childAt(centre)
    assert under is detail.stale_cover or detail.stale_cover.isAncestorOf(under)
    gate.set()
    window.stop_run()
    qtbot.waitUntil(lambda: not window.run_jobs.busy, timeout=20000)


def test_head_detail_readout_follows_a_head_opened_elsewhere(window, qtbot, drawn):
    """The Why panel's head link (or the grid) opens another head: the readout of the head shown
    before goes (it kept L3.H3's 0.8304 under L2.H1)."""
    detail, = _open(window, "Head detail")
    drawn(detail)
    detail._on_hover(detail.item.vb.mapViewToScene(pg.Point(0.5, 0.5)))
    assert "weight" in detail.readout.text()
    kind = window.state.kind
    window.state.select_head(kind, 1, 1)
    assert detail.readout.text().strip() == ""
    drawn(detail)
    assert (detail.drawing.layer, detail.drawing.head) == (1, 1)


def test_lines_about_a_run_or_a_model_go_with_it(window, qtbot):
    """Patching's status (an error about the previous model's tokens) goes with a model change;
    an ndif: Run's "Running ... on 13 tokens" goes when its Run is over."""
    patching, = _open(window, "Patching")
    patching.status.setText("The answer ' cat' is not one token of random translator.")
    with qtbot.waitSignal(window.state.model_changed, timeout=30000):
        window.opening.open_source("random-gpt")
    assert "not one token" not in patching.status.text()
    qtbot.waitUntil(lambda: window.state.trace is not None and not window.run_jobs.busy, timeout=30000)
    window.state.begin_request()
    window.opening.remote_notices.said.emit("Running some-model on 13 tokens: 2 MB will travel back.")
    assert window.statusBar().currentMessage().startswith("Running some-model")
    window.state.end_request()
    assert window.statusBar().currentMessage() == ""


def test_a_remote_recording_does_not_promise_fetches():
    """A recording of an ndif: Run, opened from its file, has no model to fetch rows with: its Run's
    note says what the file holds instead of "others are fetched when a view asks"."""
    from types import SimpleNamespace

    from attnscope.gui.window.remote_fetches import PART_FILE, WHOLE_FILE, shown_notes

    run_note = ("Run on NDIF: 1,024 bytes came back in 1.0 s; q of query rows 4,000-4,012 is here, others are "
                "fetched when a view asks.")
    trace = SimpleNamespace(notes=[run_note, "Opened from the recording r.safetensors."])
    assert shown_notes(SimpleNamespace(recording=None), trace)[0] == run_note        # the live Run: true
    whole = shown_notes(SimpleNamespace(recording="r.safetensors"), trace)
    assert "fetched when a view asks" not in " ".join(whole) and WHOLE_FILE in whole[0]
    trace.notes.append("Opened from the recording r: query rows 4,000-4,012 of 4,013 are exact; no model is here "
                       "to fetch the others.")
    assert PART_FILE in shown_notes(SimpleNamespace(recording="r"), trace)[0]
