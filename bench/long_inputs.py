"""Long inputs stay usable: 512 tokens through all-MiniLM-L6-v2 (6 layers x 12 heads), then
the time each view takes to draw that trace, offscreen. Prints one JSON object.

- forward: what a Run computes (``trace_text``: the forward through the seam with the
  recorder on, every head computed from the recorded queries and keys) against the same
  forward recording nothing (the fused kernel alone); on a worker thread as in the app,
  warmed up, interleaved, medians and spread.
- per view: a new 512-token trace set on the view's AppState (the signal every view redraws
  on), prepared in the view's worker (the Neurons view: its forward on the model thread),
  applied, then the view grabbed (painted). Head lines
  shows all 12 heads of the layer (its "all heads" button clicked once before), the heaviest
  thing it draws. Two traces alternate, so every redraw is of a new trace.

The forward and the views take turns (bench/_timing's ``round_robin``, ROUNDS rounds paced
over 80 s), so both figures come from every part of the run.

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
from bench._timing import machine, on_worker, ratio, round_robin, summary  # noqa: E402

TEXT = " ".join(["attention lets every token look at every other token in the sentence ."] * 60)


class Forward:
    """What a Run computes (``trace_text``) against the same forward recording nothing, on the
    model thread, alternating; ``per_call`` pairs a call."""

    def __init__(self, loaded, per_call: int = 2):
        import torch

        from attnscope.engine.traces.tracing import trace_text

        enc = loaded.tokenizer(TEXT, return_tensors="pt", truncation=True, max_length=loaded.max_len)
        self.traces: list = []

        def forward_no_weights():
            with torch.no_grad():
                loaded.model(**enc)

        def run_trace():
            # The window holds the newest trace (and a view may still hold the one before), so
            # the bench keeps two: keeping every one (75 MB each at 512 tokens) made each new
            # trace fault in fresh memory, and the figure swung from 125 to 242 ms between runs.
            self.traces.append(trace_text(loaded, TEXT + (" again" if len(self.traces) % 2 else "")))
            del self.traces[:-2]

        self.fns = {"forward_no_weights": on_worker(forward_no_weights), "trace_text": on_worker(run_trace)}
        self.times = {name: [] for name in self.fns}
        self.per_call, self.calls = per_call, 0

    def __call__(self, timed: bool) -> None:
        for _ in range(self.per_call):
            names = list(self.fns) if self.calls % 2 == 0 else list(self.fns)[::-1]
            self.calls += 1
            for name in names:
                start = time.perf_counter()
                self.fns[name]()
                if timed:
                    self.times[name].append((time.perf_counter() - start) * 1e3)

    def result(self) -> dict:
        t = self.times
        return {"trace_text_ms": summary(t["trace_text"]), "forward_no_weights_ms": summary(t["forward_no_weights"]),
                "ratio": ratio(t["trace_text"], t["forward_no_weights"])}


class ViewDraws:
    """Each view's new-trace-to-painted time; the views take turns within each call (every
    view has its own AppState), ``per_call`` times."""

    def __init__(self, app, loaded, traces, per_call: int = 2):
        from attnscope.gui.state import AppState
        from attnscope.gui.views.head_grid import HeadGrid
        from attnscope.gui.drawing.prepared import wait_until_drawn
        from attnscope.gui.views.registry import VIEWS, ViewSpec

        self.views = {}
        for spec in [ViewSpec("Heads grid", HeadGrid)] + VIEWS:
            state = AppState()
            state.set_model(loaded)
            state.text = TEXT              # as a Run sets it: the Neurons view recomputes q and k from it
            widget = spec.factory(state)
            widget.resize(1200, 800)
            widget.show()
            state.set_trace(traces[1])
            wait_until_drawn(widget)
            if hasattr(widget, "all_button"):      # Head lines: every head of the layer
                widget.all_button.click()
                wait_until_drawn(widget)
            self.views[spec.title] = (state, widget)
        self.app, self.traces, self.per_call, self.calls = app, traces, per_call, 0
        self.times = {title: [] for title in self.views}

    def __call__(self, timed: bool) -> None:
        from attnscope.gui.drawing.prepared import wait_until_drawn

        for _ in range(self.per_call):   # the untimed first call builds the items
            self.calls += 1
            for title, (state, widget) in self.views.items():
                self.app.processEvents()
                start = time.perf_counter()
                state.set_trace(self.traces[self.calls % 2])   # every view redraws from this signal
                wait_until_drawn(widget)
                widget.grab()                                  # ... and paints
                if timed:
                    self.times[title].append((time.perf_counter() - start) * 1e3)

    def result(self) -> dict:
        draw_ms = {}
        for title, (state, widget) in self.views.items():
            if hasattr(widget, "all_button"):
                assert len(widget.heads()) == state.trace.shape(state.kind)[1], "Head lines lost its all-heads choice"
            draw_ms[title] = summary(self.times[title])
            widget.close()
            widget.deleteLater()
        self.app.processEvents()
        return draw_ms


ROUNDS = 11   # the forward's and the views' repetitions come in this many turns


def main() -> None:
    app = application()
    from attnscope.engine.loading.hf import load_hf_model, minilm_path

    loaded = on_worker(lambda: load_hf_model(minilm_path()))()
    forward = Forward(loaded)
    forward(False)                       # two traces for the views to alternate
    forward(False)
    views = ViewDraws(app, loaded, forward.traces)
    probes = round_robin({"forward": forward, "views": views}, ROUNDS, idle=idle)
    fwd, draw_ms = forward.result(), views.result()
    slowest = max(draw_ms, key=lambda t: draw_ms[t]["median"])
    print(json.dumps({"bench": "long_inputs", "model": "all-MiniLM-L6-v2 (6x12)",
                      "tokens": len(forward.traces[0].source_tokens), "rounds": ROUNDS,
                      "forward": fwd, "forward_with_weights_ms": fwd["trace_text_ms"]["median"],
                      "view_draw_ms": draw_ms, "slowest_view": slowest,
                      "slowest_view_ms": draw_ms[slowest]["median"], "machine": machine(probes),
                      "note": "views that ignore traces (decoding, training, positions) draw nothing here"}))


if __name__ == "__main__":
    main()
