"""Rows a view asks of a remote trace come by one more job, with the window's progress and Stop
like a Run (gui.window.remote_fetches): said before it goes, the busy label while it is out, Esc drops
it and leaves the trace as it was. Run through nnsight's local stand-in (ATTNSCOPE_NDIF=local)."""
import threading

import pytest

pytest.importorskip("nnsight")

from tests.helpers.hf_tiny import tiny_folder  # noqa: E402

TEXT = "the big dog sees the small cat and the cat sees the big dog"


def test_a_views_fetch_shows_progress_and_esc_stops_it_keeping_nothing(window, qtbot, tmp_path, monkeypatch,
                                                                       drawn):
    import attnscope.gui.views.head_detail as detail
    import attnscope.gui.drawing.overview as overview
    import attnscope.gui.worker as worker
    from attnscope.engine.remote import RemoteTrace, trace_remote

    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")
    monkeypatch.setattr(overview, "EXACT_TOKENS", 8)         # "long" from 9 tokens on: views ask for rows
    monkeypatch.setattr(detail, "DETAIL_EXACT", 8)
    window.opening.open_source(f"ndif:{tiny_folder(tmp_path, 'llama')}")
    qtbot.waitUntil(lambda: isinstance(window.state.trace, RemoteTrace) and not window.run_jobs.busy
                    and worker.active_threads() == 0, timeout=30000)
    said = []
    window.opening.remote_notices.said.connect(said.append)
    trace = trace_remote(window.state.loaded, TEXT, rows=3, say=window.opening.remote_notices.said.emit)
    before = (trace.rows_fetched, trace.jobs, trace.received, trace.held_bytes())
    gate, sent = threading.Event(), threading.Event()
    run = trace.session.run

    def held_back(*args, **kwargs):                      # the server's answer waits until the test lets it go
        sent.set()
        gate.wait(30)
        return run(*args, **kwargs)
    monkeypatch.setattr(trace.session, "run", held_back)
    window.state.set_trace(trace)
    qtbot.waitUntil(lambda: window.status_line.busy_label.text().startswith("fetching from "), timeout=30000)
    assert sent.is_set() and "(Esc stops)" in window.status_line.busy_label.text()
    qtbot.waitUntil(lambda: bool(said), timeout=10000)
    assert "will travel back" in said[-1] and "the last job took" in said[-1]    # said before it went
    window.stop_run()                                    # Esc
    gate.set()
    qtbot.waitUntil(lambda: worker.active_threads() == 0 and window.status_line.busy_label.text() == "", timeout=30000)
    assert (trace.rows_fetched, trace.jobs, trace.received, trace.held_bytes()) == before   # nothing kept
    assert "stopped" in window.statusBar().currentMessage() and window.last_error is None
    # drawn again: the job goes and its rows are kept
    window.state.set_trace(trace)
    qtbot.waitUntil(lambda: worker.active_threads() == 0 and trace.jobs > before[1], timeout=30000)
    qtbot.waitUntil(lambda: window.status_line.busy_label.text() == "", timeout=10000)
    assert len(trace.rows_fetched) > 1 and window.last_error is None
