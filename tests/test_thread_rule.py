"""One rule for threads (gui/worker.py): torch runs on the MODEL lane only.

Every worker thread of another lane runs its job under a watch that notes each torch call
(a TorchFunctionMode: modes are per thread, so the model thread's own work is not watched).
Every view that prepares a drawing then draws a recorded trace that has computed nothing yet
(as a long one starts: thumbnails, blocks, strongest keys and row blocks all computed from the
recording), Head detail's zoom of a long head included; no torch call may land off the model lane.
"""
from __future__ import annotations

import pytest
from torch.overrides import TorchFunctionMode

import gui.worker as worker
from engine.loading.demo import random_model
from engine.traces.recorded import RecordedTrace
from engine.traces.tracing import trace_text
from gui.state import AppState
from gui.views.registry import VIEWS
from gui.worker import MODEL, SHARED, Jobs

TEXT = "the big dog sees the small cat and the cat sees the big dog because it is small"


class _Watch(TorchFunctionMode):
    def __init__(self, seen: list, lane: str):
        super().__init__()
        self.seen, self.lane = seen, lane

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append((self.lane, getattr(func, "__name__", str(func))))
        return func(*args, **(kwargs or {}))


@pytest.fixture
def off_model_lane(monkeypatch) -> list:
    """The torch calls made by jobs of any lane but MODEL: (lane, function name)."""
    seen: list = []
    real = worker._Task.run

    def run(task) -> None:
        if task.lane == MODEL:
            return real(task)
        with _Watch(seen, task.lane):
            return real(task)
    monkeypatch.setattr(worker._Task, "run", run)
    return seen


def fresh_recording(loaded) -> RecordedTrace:
    """A recorded trace of TEXT that has computed no weights yet."""
    trace = trace_text(loaded, TEXT)
    return RecordedTrace(trace.calls, model_name=trace.model_name, family=trace.family,
                         source_tokens=trace.source_tokens, target_tokens=trace.target_tokens)


def test_the_watch_sees_torch_on_a_drawing_lane(qtbot, off_model_lane):
    import torch

    jobs = Jobs(None, lane=SHARED)
    done = []
    jobs.start(lambda: float(torch.ones(4).sum()), on_returned=done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=10000)
    assert done == [4.0] and (SHARED, "sum") in off_model_lane


def test_every_view_draws_a_recording_with_torch_on_the_model_lane_only(qtbot, drawn, monkeypatch, off_model_lane):
    import gui.views.head_detail as detail
    import gui.views.head_grid as grid

    monkeypatch.setattr(grid, "EXACT_TOKENS", 8)        # the overview pools: "long" from 9 tokens on
    monkeypatch.setattr(detail, "DETAIL_EXACT", 8)      # Head detail is a viewport, and zooms
    state = AppState()
    state.set_model(random_model("gpt", seed=1))
    views = [grid.HeadGrid(state)] + [spec.factory(state) for spec in VIEWS]
    views = [v for v in views if hasattr(v, "draw_jobs")]
    for view in views:
        qtbot.addWidget(view)
        view.resize(500, 400)
        view.show()
    trace = fresh_recording(state.loaded)
    state.set_trace(trace)
    drawn(*views)
    head_detail = next(v for v in views if isinstance(v, detail.HeadDetail))
    assert head_detail.drawing is not None and head_detail.drawing.long
    head_detail.item.vb.setRange(xRange=(0, 6), yRange=(0, 6), padding=0)
    head_detail._zoom()
    qtbot.waitUntil(lambda: not head_detail.zoom_jobs.busy, timeout=10000)
    assert len(views) >= 5 and trace.held_bytes() > 0      # the drawings computed weights, on the model lane
    assert off_model_lane == [], sorted(set(off_model_lane))
