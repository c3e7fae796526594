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

from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.tracing import trace_text
from attnscope.gui.state import AppState
from attnscope.gui.worker import MODEL, SHARED, Jobs, drawing_lane
from tests.helpers.lanes import lanes_computing  # noqa: F401  (the fixture: each computation's lane)
from tests.helpers.traces import TEXT, fresh_recording
from tests.helpers.views import drawing_views
from attnscope.engine.traces import reading


def test_the_guard_sees_a_drawing_lane_compute_and_the_lane_follows_the_trace(qtbot, lanes_computing):
    trace = fresh_recording(trace_text(random_model("gpt", seed=1), TEXT))
    assert drawing_lane(trace) == MODEL and drawing_lane(None) == SHARED
    jobs = Jobs(None, lane=SHARED)
    done = []
    jobs.start(lambda: reading.layer(trace, "decoder self", 0).shape, on_returned=done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=10000)
    assert SHARED in lanes_computing               # the guard sees a computation off the model lane
    reading.weights(trace, "decoder self")                  # every kind held as arrays: drawn on the shared pool
    assert drawing_lane(trace) == SHARED


def test_every_view_computes_from_a_recording_on_the_model_lane_only(qtbot, drawn, monkeypatch, lanes_computing):
    import attnscope.gui.views.head_detail as detail
    import attnscope.gui.drawing.overview as overview

    monkeypatch.setattr(overview, "EXACT_TOKENS", 8)        # the overview pools: "long" from 9 tokens on
    monkeypatch.setattr(detail, "DETAIL_EXACT", 8)      # Head detail is a viewport, and zooms
    state = AppState()
    state.set_model(random_model("gpt", seed=1))
    views = drawing_views(qtbot, state)
    trace = fresh_recording(trace_text(state.loaded, TEXT))
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
