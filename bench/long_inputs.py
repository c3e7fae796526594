"""Long inputs stay usable: 512 tokens through all-MiniLM-L6-v2 (6 layers x 12 heads), then
the time each view takes to draw that trace, offscreen. Prints one JSON object.

- forward: what a Run computes (``trace_text``: transformers' eager forward with the
  weights, the AttentionTrace) against the same eager forward asking for no weights; on a
  worker thread as in the app, warmed up, interleaved, medians and spread.
- per view: a new 512-token trace set on the view's AppState (the signal every view redraws
  on), prepared in the view's worker, applied, then the view grabbed (painted). Head lines
  shows all 12 heads of the layer (its "all heads" button clicked once before), the heaviest
  thing it draws. Two traces alternate, so every redraw is of a new trace.

The application has the window's own options (bench/_app.py: Fusion, pyqtgraph antialiasing
on, as gui.app.run_app sets them). The window never waits on the model (the forward runs in
a worker); what it waits on is drawing, measured here per view.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._app import application, idle  # noqa: E402
from bench._timing import Pacer, interleaved, machine, on_worker, ratio, summary  # noqa: E402

TEXT = " ".join(["attention lets every token look at every other token in the sentence ."] * 60)


def forward(loaded, repeats: int = 21) -> tuple[dict, list]:
    import torch

    from engine.tracing import trace_text

    enc = loaded.tokenizer(TEXT, return_tensors="pt", truncation=True, max_length=loaded.max_len)
    traces = []

    def eager_no_weights():
        with torch.no_grad():
            loaded.model(**enc)

    def run_trace():
        # The window holds the newest trace (and a view may still hold the one before), so
        # the bench keeps two: keeping every one (75 MB each at 512 tokens) made each new
        # trace fault in fresh memory, and the figure swung from 125 to 242 ms between runs.
        traces.append(trace_text(loaded, TEXT + (" again" if len(traces) % 2 else "")))
        del traces[:-2]

    times = interleaved({"eager_no_weights": on_worker(eager_no_weights), "trace_text": on_worker(run_trace)}, repeats,
                        pacer=Pacer(repeats))
    return ({"trace_text_ms": summary(times["trace_text"]), "eager_no_weights_ms": summary(times["eager_no_weights"]),
             "ratio": ratio(times["trace_text"], times["eager_no_weights"])}, traces[-2:])


def view_draws(app, loaded, traces, repeats: int = 21) -> dict:
    """Each view's new-trace-to-painted time. The views take turns within each round (every
    view has its own AppState), and the rounds are paced, so each view's repetitions are
    spread over the whole loop, not packed into a few seconds of one host mood."""
    from gui.state import AppState
    from gui.views.head_grid import HeadGrid
    from gui.views.prepared import wait_until_drawn
    from gui.views.registry import VIEWS, ViewSpec

    views = {}
    for spec in [ViewSpec("Heads grid", HeadGrid)] + VIEWS:
        state = AppState()
        state.set_model(loaded)
        widget = spec.factory(state)
        widget.resize(1200, 800)
        widget.show()
        state.set_trace(traces[1])
        wait_until_drawn(widget)
        if hasattr(widget, "all_button"):      # Head lines: every head of the layer
            widget.all_button.click()
            wait_until_drawn(widget)
        views[spec.title] = (state, widget)
    times = {title: [] for title in views}
    pacer = Pacer(repeats + 1, idle=idle)
    for i in range(repeats + 1):
        pacer.wait()
        for title, (state, widget) in views.items():
            app.processEvents()
            start = time.perf_counter()
            state.set_trace(traces[i % 2])     # every view redraws from this signal (prepared in a worker)
            wait_until_drawn(widget)
            widget.grab()                      # ... and paints
            times[title].append((time.perf_counter() - start) * 1e3)
    draw_ms = {}
    for title, (state, widget) in views.items():
        if hasattr(widget, "all_button"):
            assert len(widget.heads()) == state.trace.shape(state.kind)[1], "Head lines lost its all-heads choice"
        draw_ms[title] = summary(times[title][1:])   # the first builds the items
        widget.close()
        widget.deleteLater()
    app.processEvents()
    return draw_ms


def main() -> None:
    app = application()
    from engine.hf import load_hf_model, minilm_path

    loaded = on_worker(lambda: load_hf_model(minilm_path()))()
    fwd, traces = forward(loaded)
    draw_ms = view_draws(app, loaded, traces)
    slowest = max(draw_ms, key=lambda t: draw_ms[t]["median"])
    print(json.dumps({"bench": "long_inputs", "model": "all-MiniLM-L6-v2 (6x12)", "tokens": len(traces[0].source_tokens),
                      "forward": fwd, "forward_with_weights_ms": fwd["trace_text_ms"]["median"],
                      "view_draw_ms": draw_ms, "slowest_view": slowest,
                      "slowest_view_ms": draw_ms[slowest]["median"], "machine": machine(),
                      "note": "views that ignore traces (decoding, training, positions) draw nothing here"}))


if __name__ == "__main__":
    main()
