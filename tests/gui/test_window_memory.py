"""The window's memory comes back after a Run: a trace keeps a bounded share of the weights
views ask of it, and the Run before it is let go.

On a 4k-token text of a small Llama the window held 5-6 GB more after every Run (0.57 GB
idle, 11.1 GB after the second Run, killed at 18.3 GB): the trace kept every layer a view had
read (a count of 64 layers, 0.5 GB each there) and Head statistics read every head at once
(2.1 GB, under the old 2 GB limit by a hair) and kept that too. bench/window_memory.py gives
the resident memory after each of five Runs.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from attnscope.engine.loading.loaded import LoadedModel  # noqa: F401  (the engine is imported before Qt views)
from attnscope.engine.traces import base, recorded
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_tiny import tiny_folder
from attnscope.engine.traces import reading

TEXT = " ".join(["the big dog sees the small cat ; time flies like an arrow ."] * 40)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return tiny_folder(tmp_path_factory.mktemp("long"), "llama", positions=1024)


def _layer_bytes(trace, kind):
    _, heads, tq, tk = trace.shape(kind)
    return heads * tq * tk * 4


def test_a_trace_keeps_layers_up_to_its_byte_budget_whatever_is_asked(llama, monkeypatch):
    from attnscope.engine.loading import catalog

    loaded = catalog.open_model(str(llama), "cpu")
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 1000)       # nothing is densified by the Run
    trace = trace_text(loaded, TEXT)
    kind = trace.kinds[0]
    one = _layer_bytes(trace, kind)
    monkeypatch.setattr(recorded, "CACHE_BYTES", int(one * 1.5))
    first = reading.layer(trace, kind, 0).copy()
    for layer in range(trace.shape(kind)[0]):
        reading.layer(trace, kind, layer)
    assert trace.held_bytes() <= int(one * 1.5)               # one layer kept, not every one asked
    np.testing.assert_array_equal(reading.layer(trace, kind, 0), first)    # recomputed: the same numbers

    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 2**31)
    monkeypatch.setattr(recorded, "DENSE_LIMIT_BYTES", one)   # every head at once: more than is kept
    whole = reading.weights(trace, kind)
    assert whole.shape == trace.shape(kind)
    assert trace.held_bytes() <= int(one * 1.5)               # handed to the view that asked, not kept


def test_runs_of_a_long_text_leave_no_trace_behind_with_every_heavy_view_open(window_on, llama, qtbot,
                                                                            monkeypatch):
    """Every view that reads whole heads open (Head statistics, Rollout, Head lines, Head detail);
    a long text Run three times: each trace keeps at most its budget, and the one before is gone."""
    w = window_on(str(llama))
    for title in ("Head statistics", "Rollout", "Head lines", "Head detail"):
        w.docks[title].show()
        w.docks[title].raise_()
        w.dock_layout.view(title)
    w.input_bar.live_box.setChecked(False)
    one = None
    gone = []
    for i in range(3):
        w.input_bar.text_edit.setText(TEXT + " again" * i)
        w.run()
        qtbot.waitUntil(lambda: w.state.trace is not None and not w.state.pending
                        and len(reading.query_tokens(w.state.trace, w.state.trace.kinds[0])) > 400, timeout=60000)
        if one is None:   # sized from the trace: views may read every head at once, none of it is kept
            one = _layer_bytes(w.state.trace, w.state.trace.kinds[0])
            monkeypatch.setattr(recorded, "CACHE_BYTES", one // 2)
            monkeypatch.setattr(recorded, "DENSE_LIMIT_BYTES", one // 2)
            monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 4 * one)
            continue
        views = [w.views[t] for t in ("Head statistics", "Rollout", "Head lines", "Head detail")]
        qtbot.waitUntil(lambda: not any(v.draw_jobs.busy for v in views) and not w.run_jobs.busy, timeout=120000)
        assert w.state.trace.held_bytes() <= one // 2
        assert w.views["Head statistics"].table.rowCount() > 0          # drawn, from blocks of rows
        gone.append(weakref.ref(w.state.trace))
    gc.collect()
    assert gone[0]() is None                                            # the second Run's trace: let go
