"""One rule for threads (gui/worker.py): attention computed from a recording (torch maths that
grows with T squared) runs on the MODEL lane only.

Every computation from a recording passes AttentionCall.scores (engine/seam/call.py): the test
notes the lane of each call. Every view that prepares a drawing then draws a recorded trace
that has computed nothing yet (as a long one starts: thumbnails, blocks, strongest keys and row
blocks all computed from the recording), Head detail's zoom of a long head included; no call may
come from another lane. Once the trace holds its kinds as arrays, drawings go back to the
shared pool (numpy, several at once).
"""
from __future__ import annotations

import pytest

import attnscope.gui.worker as worker
from attnscope.engine.loading.demo import random_model
from attnscope.engine.seam.call import AttentionCall
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces.tracing import trace_text
from attnscope.gui.state import AppState
from attnscope.gui.views.registry import VIEWS
from attnscope.gui.worker import MODEL, SHARED, Jobs, drawing_lane

TEXT = "the big dog sees the small cat and the cat sees the big dog because it is small"


@pytest.fixture
def lanes_computing(monkeypatch) -> list:
    """The lane (None: a thread of no lane) of every computation from a recording from now on."""
    seen: list = []
    real = AttentionCall.scores

    def scores(call, *args, **kwargs):
        seen.append(getattr(worker._CURRENT, "lane", None))
        return real(call, *args, **kwargs)
    monkeypatch.setattr(AttentionCall, "scores", scores)
    return seen


def fresh_recording(loaded) -> RecordedTrace:
    """A recorded trace of TEXT that has computed no weights yet."""
    trace = trace_text(loaded, TEXT)
    return RecordedTrace(trace.calls, model_name=trace.model_name, family=trace.family,
                         source_tokens=trace.source_tokens, target_tokens=trace.target_tokens)


def drawing_views(qtbot, state) -> list:
    """The overview and every view that prepares drawings, on ``state``, shown (tests/gui/test_remote_window.py
    draws a remote trace with them too)."""
    from attnscope.gui.views.head_grid import HeadGrid

    views = [HeadGrid(state)] + [spec.factory(state) for spec in VIEWS]
    views = [v for v in views if hasattr(v, "draw_jobs")]
    for view in views:
        qtbot.addWidget(view)
        view.resize(500, 400)
        view.show()
    return views


def test_the_guard_sees_a_drawing_lane_compute_and_the_lane_follows_the_trace(qtbot, lanes_computing):
    trace = fresh_recording(random_model("gpt", seed=1))
    assert drawing_lane(trace) == MODEL and drawing_lane(None) == SHARED
    jobs = Jobs(None, lane=SHARED)
    done = []
    jobs.start(lambda: trace.layer("decoder self", 0).shape, on_returned=done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=10000)
    assert SHARED in lanes_computing               # the guard sees a computation off the model lane
    trace.weights("decoder self")                  # every kind held as arrays: drawn on the shared pool
    assert drawing_lane(trace) == SHARED


def test_every_view_computes_from_a_recording_on_the_model_lane_only(qtbot, drawn, monkeypatch, lanes_computing):
    import attnscope.gui.views.head_detail as detail
    import attnscope.gui.views.head_grid as grid

    monkeypatch.setattr(grid, "EXACT_TOKENS", 8)        # the overview pools: "long" from 9 tokens on
    monkeypatch.setattr(detail, "DETAIL_EXACT", 8)      # Head detail is a viewport, and zooms
    state = AppState()
    state.set_model(random_model("gpt", seed=1))
    views = drawing_views(qtbot, state)
    trace = fresh_recording(state.loaded)
    lanes_computing.clear()                              # the Run itself (here on the test's thread)
    state.set_trace(trace)
    drawn(*views)
    head_detail = next(v for v in views if isinstance(v, detail.HeadDetail))
    assert head_detail.drawing is not None and head_detail.drawing.long
    head_detail.item.vb.setRange(xRange=(0, 6), yRange=(0, 6), padding=0)
    head_detail._zoom()
    qtbot.waitUntil(lambda: not head_detail.zoom_jobs.busy, timeout=10000)
    assert len(views) >= 5 and trace.held_bytes() > 0      # the drawings computed weights, on the model lane
    assert lanes_computing and set(lanes_computing) == {MODEL}, sorted(set(map(str, lanes_computing)))
