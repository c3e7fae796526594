"""Traces at any length: every view asks the trace for what it draws, and a long trace is
never held whole. Pooled thumbnails, tiles and rows equal slices of the dense reference for
every kind of attention the seam sees (grouped-query, sliding window, softcap, T5's bias);
whole-kind views of a trace too large are refused with the numbers, and so is a Run that
would not fit; a Run reports its progress and stops when asked; the heads grid pools a long
trace and reads blocks exactly; Head detail becomes a viewport computed from the recording.
"""
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnscope.engine.loading.catalog import open_model
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.base import TraceTooLarge
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces.tracing import RunCancelled, trace_text
from attnscope.gui.widgets.mosaic import GAP_CODE, SINK_OFFSET, SINK_PIXELS, display_codes
from attnscope.engine.decoding.greedy import frame
from tests.helpers.hf_tiny import tiny_folder
from tests.helpers.traces import TEXT
from tests.helpers.views import long_head_detail
from attnscope.engine.traces import reading


def blocks(dense: np.ndarray, size: int, how: str) -> np.ndarray:
    """(..., Tq, Tk) pooled cell by cell the slow way: each pixel the max / mean of its block."""
    from attnscope.engine.traces.pooling import bin_span, bins
    tq, tk = dense.shape[-2:]
    rows, cols = bins(tq, size), bins(tk, size)
    out = np.empty(dense.shape[:-2] + (rows, cols), np.float32)
    for i in range(rows):
        for j in range(cols):
            (a, b), (c, d) = bin_span(tq, rows, i), bin_span(tk, cols, j)
            cell = dense[..., a:b, c:d]
            out[..., i, j] = cell.max(axis=(-1, -2)) if how == "max" else cell.mean(axis=(-1, -2))
    return out


def fresh(trace) -> RecordedTrace:
    """The same recording as a trace that has computed nothing yet (as a long one starts)."""
    return RecordedTrace(trace.calls, model_name=trace.model_name, family=trace.family,
                         source_tokens=trace.source_tokens, target_tokens=trace.target_tokens)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("long")
    found = {arch: open_model(str(tiny_folder(root, arch)), "cpu") for arch in ("llama", "mistral", "gemma2", "t5")}
    found["translator"] = random_model("translator", seed=4)
    return found


@pytest.mark.parametrize("name", ["llama", "mistral", "gemma2", "t5", "translator"])
def test_thumbnails_tiles_and_rows_equal_the_dense_reference(models, name):
    trace = trace_text(models[name], TEXT, target="the dog" if name in ("t5", "translator") else None)
    for kind in trace.kinds:
        dense = reading.weights(trace, kind)                                 # (L, H, Tq, Tk), computed whole (small)
        lazy = fresh(trace)
        _, _, tq, tk = dense.shape
        for how in ("max", "mean"):
            th = reading.thumbnails(lazy, kind, 5, how)
            np.testing.assert_allclose(th.pooled, blocks(dense, 5, how), atol=1e-6)
            np.testing.assert_allclose(th.sink, blocks(dense[..., :1], 5, how)[..., 0], atol=1e-6)  # key 0 apart
        rows, cols = slice(1, tq - 1), slice(2, tk)
        np.testing.assert_allclose(reading.tile(lazy, kind, 1, 3, rows, cols), dense[1, 3, rows, cols], atol=1e-6)   # with lse
        np.testing.assert_allclose(reading.tile(fresh(trace), kind, 0, 2, rows, cols), dense[0, 2, rows, cols], atol=1e-6)
        np.testing.assert_allclose(reading.row(fresh(trace), kind, 1, 1, tq - 1), dense[1, 1, tq - 1], atol=1e-6)
        np.testing.assert_allclose(reading.head(fresh(trace), kind, 1, 0), dense[1, 0], atol=1e-6)


def test_a_whole_kind_view_of_a_trace_too_large_is_refused_with_numbers(monkeypatch):
    import attnscope.engine.traces.base as base
    trace = fresh(trace_text(random_model("gpt", seed=1), TEXT))
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 1000)
    with pytest.raises(TraceTooLarge, match=r"2 layers x 4 heads x .* MiB"):
        reading.weights(trace, "decoder self")
    assert reading.thumbnails(trace, "decoder self", 4).pooled.shape == (2, 4, 4, 4)   # the overview still draws
    need = reading.dense_bytes(trace, "decoder self")
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", need - 2**20 // 200)        # just under: both read the same rounded
    with pytest.raises(TraceTooLarge) as refused:
        reading.weights(trace, "decoder self")
    said = [float(x) for x in re.findall(r"([\d.]+) MiB", str(refused.value))]
    assert len(said) == 2 and said[0] > said[1]                               # never "2.0 GiB, more than the 2.0 GiB"


def test_a_run_that_cannot_fit_is_refused_before_its_forward(monkeypatch):
    import attnscope.engine.runtime.free_memory as free_memory
    import attnscope.engine.traces.estimate as estimate
    from attnscope.engine.traces.estimate import RunTooLarge
    from attnscope.engine.adapters import adapter_for
    loaded = random_model("gpt", seed=1)
    estimate.estimate_run(adapter_for(loaded), frame(adapter_for(loaded), TEXT))   # the model's probe, taken once
    monkeypatch.setattr(free_memory, "available_memory", lambda: 10_000)
    calls = []
    monkeypatch.setattr(loaded.model, "forward", lambda *a, **k: calls.append(1))
    with pytest.raises(RunTooLarge, match=r"tokens: recording .*free"):
        trace_text(loaded, TEXT)
    assert calls == []                           # refused before the forward ran


def test_the_estimate_grows_linearly_for_the_recording():
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.traces.estimate import estimate_run
    loaded = random_model("gpt", seed=1)
    adapter = adapter_for(loaded)
    short, long = (estimate_run(adapter, frame(adapter, " ".join(["dog"] * n))) for n in (10, 40))
    assert long.recording == 4 * short.recording and long.dense == 16 * short.dense
    # the recording is exactly what a Run keeps
    from attnscope.engine.seam import recording
    with torch.no_grad(), recording() as rec:
        adapter.forward(frame(adapter, " ".join(["dog"] * 40)))
    assert long.recording == sum(c.q.nbytes + c.k.nbytes for c in rec.calls.values())


def test_a_run_reports_each_site_and_stops_when_asked():
    loaded = random_model("translator", seed=2)
    seen = []
    trace_text(loaded, TEXT, target="der hund", report=seen.append)
    n = len(seen)
    assert n == 6 and seen[-1] == ("run", 6, 6) and [s[1] for s in seen] == list(range(1, 7))
    with pytest.raises(RunCancelled):
        trace_text(loaded, TEXT, target="der hund", stop=lambda: True)


def long_grid(qtbot, drawn, monkeypatch):
    """The heads grid on the GPT's trace, "long" from 9 tokens on, tiles of 6 pixels: (module, view, trace)."""
    import attnscope.gui.views.head_grid as grid
    import attnscope.gui.drawing.overview as overview
    from attnscope.gui.state import AppState
    monkeypatch.setattr(overview, "EXACT_TOKENS", 8)             # "long" from 9 tokens on
    monkeypatch.setattr(overview, "tile_pixels", lambda layers, heads: 6)
    state = AppState()
    state.set_model(random_model("gpt", seed=1))
    view = grid.HeadGrid(state)
    qtbot.addWidget(view)
    trace = trace_text(state.loaded, TEXT)
    state.set_trace(trace)
    drawn(view)
    return grid, view, trace


def test_the_heads_grid_pools_a_long_trace_and_reads_blocks_exactly(qtbot, drawn, monkeypatch):
    _, view, trace = long_grid(qtbot, drawn, monkeypatch)
    assert view.layout_.tile_h == 6 and "max over a block" in view.readout.text()
    text = view.describe(1, 2, 3, 4)
    (q0, q1), (k0, k1) = view.block(3, 4)
    block = reading.weights(trace, "decoder self")[1, 2, q0:q1, k0:k1]
    assert f"queries {q0}-{q1 - 1} x keys {k0}-{k1 - 1}" in text and f"weight {block.max():.4f}" in text


def test_a_pooled_grid_draws_the_first_key_apart_and_reads_it_exactly(qtbot, drawn, monkeypatch):
    grid, view, trace = long_grid(qtbot, drawn, monkeypatch)
    thumbs, offset = view.drawing.thumbs, view.drawing.offset
    weights = reading.weights(trace, "decoder self")                              # (L, H, T, T)
    assert offset == SINK_OFFSET and view.layout_.tile_w == thumbs.pooled.shape[3] + offset
    for qi in range(thumbs.pooled.shape[2]):                              # the strip: key 0 alone, max of each row block
        (q0, q1), _ = view.block(qi, 0)
        np.testing.assert_allclose(thumbs.sink[:, :, qi], weights[:, :, q0:q1, 0].max(-1), atol=1e-5)
    y, x = view.layout_.tile_origin(1, 2)
    strip = view.mosaic[y:y + view.layout_.tile_h, x:x + SINK_PIXELS]
    assert (strip == display_codes(thumbs.sink[1, 2])[:, None]).all()
    assert (view.mosaic[y:y + view.layout_.tile_h, x + SINK_PIXELS] == GAP_CODE).all()
    assert view.cell_at_scene(view.scene_pos_of(1, 2, 3, -1)) == (1, 2, 3, -1)
    assert view.cell_at_scene(view.scene_pos_of(1, 2, 3, 0)) == (1, 2, 3, 0)
    (q0, q1), _ = view.block(3, 0)
    text = view.describe(1, 2, 3, -1)
    assert "key 0" in text and f"weight {weights[1, 2, q0:q1, 0].max():.4f}" in text
    assert "key 0" in view.readout.text() and "alone" in view.readout.text()


def test_the_overview_pooling_says_how_far_it_is_and_stops_between_layers(qtbot, drawn, monkeypatch):
    import attnscope.gui.drawing.overview as overview
    from attnscope.engine.traces.base import RunCancelled
    grid, view, trace = long_grid(qtbot, drawn, monkeypatch)
    for lazy in (fresh(trace), trace):                  # recorded, then dense (computed whole)
        seen = []
        overview.overview_drawing(lazy, "decoder self", 0.0, report=seen.append)
        assert seen == [("overview", i, 2) for i in range(1, 2)]        # 2 layers: said between them
        asked = []                                      # stop() is asked before each layer: true at the second
        with pytest.raises(RunCancelled):
            overview.overview_drawing(lazy, "decoder self", 0.0, stop=lambda: asked.append(1) or len(asked) > 1)
        assert len(asked) == 2
    view.drawing_progress(("overview", 3, 16))
    assert "3 of 16 layers" in view.readout.text()


def test_head_detail_is_a_viewport_on_a_long_head(qtbot, drawn, monkeypatch):
    from attnscope.engine.traces.viewport import viewport_weights
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch, pixels=6)
    state.select("decoder self", 1, 2)
    drawn(view)
    dense = reading.weights(trace, "decoder self")[1, 2]
    t = dense.shape[0]
    assert view.image.image.shape == (6, 6) and view.drawing.long == (t, t)
    np.testing.assert_allclose(view.image.image, blocks(dense, 6, "max"), atol=1e-6)
    view.item.setRange(xRange=(2, 7), yRange=(3, 9), padding=0)        # zoom in: 5 x 6 cells, fewer than the pixels
    qtbot.waitUntil(lambda: view.zoom_image.image is not None and not view.zoom_jobs.busy, timeout=10000)
    (r0, r1), (c0, c1) = view.zoom_block
    assert (r0, c0) == (3, 2) and view.zoom_image.image.shape == (r1 - r0, c1 - c0)
    np.testing.assert_allclose(view.zoom_image.image, dense[r0:r1, c0:c1], atol=1e-6)   # one cell a pixel, exact
    np.testing.assert_allclose(viewport_weights(trace, "decoder self", 1, 2, "one head", (0, t), (0, t), (t, t)), dense,
                               atol=1e-6)
    view._on_hover(view.item.vb.mapViewToScene(__import__("pyqtgraph").Point(c0 + 0.5, r0 + 0.5)))
    assert f"{dense[r0, c0]:.4f}" in view.readout.text()


def test_another_head_of_a_long_text_opens_where_the_last_was_zoomed(qtbot, drawn, monkeypatch):
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch, pixels=6)
    view.item.setRange(xRange=(2, 7), yRange=(3, 9), padding=0)
    qtbot.waitUntil(lambda: view.zoom_block is not None and not view.zoom_jobs.busy, timeout=10000)
    shown = view.item.vb.viewRange()
    state.select("decoder self", 1, 3)                                  # the next head: same place
    drawn(view)
    assert np.allclose(view.item.vb.viewRange(), shown)
    qtbot.waitUntil(lambda: view.zoom_image.image is not None and not view.zoom_jobs.busy and not
                    view.zoom_timer.isActive(), timeout=10000)
    (r0, r1), (c0, c1) = view.zoom_block
    np.testing.assert_allclose(view.zoom_image.image, reading.weights(trace, "decoder self")[1, 3, r0:r1, c0:c1], atol=1e-6)
    state.set_trace(trace_text(state.loaded, TEXT + " again"))          # a new text: the whole map again
    drawn(view)
    (x0, x1), (y0, y1) = view.item.vb.viewRange()
    assert x0 < 0 and x1 >= view.drawing.long[1]


def test_a_view_that_needs_every_head_says_why_it_draws_nothing(qtbot, drawn, monkeypatch):
    """Rollout past its three T x T maps says so with the numbers, in the view, and no error
    dialog appears (it and Head statistics needed every head at once; both now go by row blocks)."""
    import attnscope.engine.traces.base as base
    from attnscope.gui.state import AppState
    from attnscope.gui.views.rollout import RolloutView
    from attnscope.gui.worker import job_failures
    failures = []
    job_failures().failed.connect(lambda title, message: failures.append(message))
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 1000)
    state = AppState()
    state.set_model(random_model("gpt", seed=1))
    view = RolloutView(state)
    qtbot.addWidget(view)
    state.set_trace(fresh(trace_text(state.loaded, TEXT)))
    drawn(view)
    said = view.note.text()
    assert "MiB" in said and "Rollout of" in said and "maps" in said and view.drawing is None
    sizes = [float(x) for x in re.findall(r"([\d.]+) MiB", said)]
    assert len(sizes) == 2 and sizes[0] > sizes[1]                  # sizes told apart, never "0.0 MiB ... 0.0 MiB"
    assert failures == []


def test_the_forward_hands_each_rows_log_sum_exp_to_the_recording(models):
    """The fused kernel computes every row's log-sum-exp anyway: the Run keeps it, so tiles
    and pooled overviews need no pass over whole rows (a causal prompt with no padding)."""
    trace = trace_text(models["llama"], TEXT)
    call = trace.calls["decoder self"][1]
    assert call.lse is not None and call.lse.shape == call.q.shape[:3]
    np.testing.assert_allclose(call.lse[0].numpy(), torch.logsumexp(call.scores(0), -1).numpy(), atol=1e-5)


def test_head_detail_goes_to_a_position_or_a_token(qtbot, drawn, monkeypatch):
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch)
    tokens = reading.query_tokens(trace, "decoder self")
    first = view.go_to("cat", span=2)
    assert tokens[first] == "cat" and view.go_to("cat", span=2) == tokens.index("cat", first + 1)
    assert view.go_to("12", span=2) == 12
    (x0, x1), (y0, y1) = view.item.vb.viewRange()
    assert y0 <= 12 <= y1 and y1 - y0 < 8
    assert view.go_to("zebra") is None and "No token" in view.readout.text()


def test_log_colour_shows_weights_near_one_over_t():
    """At thousands of tokens a weight is ~1/T: the log scale maps 1e-4..1 to 0..1, 0 stays 0."""
    from attnscope.gui.display import display_weights
    w = np.array([[0.0, 1e-5, 1e-4, 1e-2, 1.0]], np.float32)
    np.testing.assert_allclose(display_weights(w, log_scale=True), [[0.0, 0.0, 0.0, 0.5, 1.0]], atol=1e-6)
    np.testing.assert_allclose(display_weights(w), w)


def test_a_decoding_session_that_cannot_fit_is_refused_with_numbers(monkeypatch):
    import attnscope.engine.decoding.cost as cost
    from attnscope.engine.decoding.session import DecodeSession, DecodeSettings
    from attnscope.engine.traces.estimate import RunTooLarge
    loaded = random_model("gpt", seed=1)
    DecodeSession(loaded, TEXT, DecodeSettings(max_new_tokens=5))               # fits
    monkeypatch.setattr(cost, "available_memory", lambda: 1000)
    with pytest.raises(RunTooLarge, match=r"Decoding .* tokens .*its cache .* free"):
        DecodeSession(loaded, TEXT, DecodeSettings(strategy="beam", beam_width=4, max_new_tokens=5))


def test_the_colour_bar_reads_decades_when_the_colours_are_logarithmic(qtbot, drawn, monkeypatch):
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch, pixels=6)
    assert view.colorbar.axis._tickLevels is None                       # 0 .. 1, pyqtgraph's own numbers
    view.log_box.setChecked(True)
    drawn(view)
    ticks = view.colorbar.axis._tickLevels[0]                           # (position on the bar, label)
    assert ticks == [(1.0, "1"), (0.75, "0.1"), (0.5, "0.01"), (0.25, "0.001"), (0.0, "1e-4")]
    view.log_box.setChecked(False)
    drawn(view)
    assert view.colorbar.axis._tickLevels is None
