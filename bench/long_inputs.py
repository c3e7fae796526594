"""Long inputs stay usable: 512 tokens through all-MiniLM-L6-v2 (6 layers x 12 heads), then
the time each view takes to draw that trace, offscreen. The window never waits on the model
(the forward runs in a worker); what it waits on is drawing, measured here per view.
Prints one JSON object.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtWidgets import QApplication  # noqa: E402


def main() -> None:
    app = QApplication.instance() or QApplication([])
    from engine.hf import load_hf_model, minilm_path
    from engine.tracing import trace_text
    from gui.state import AppState
    from gui.views.prepared import wait_until_drawn
    from gui.views.registry import VIEWS

    loaded = load_hf_model(minilm_path())
    text = " ".join(["attention lets every token look at every other token in the sentence ."] * 60)
    start = time.perf_counter()
    trace = trace_text(loaded, text)
    forward_s = time.perf_counter() - start
    tokens = len(trace.source_tokens)
    from gui.views.head_grid import HeadGrid
    from gui.views.registry import ViewSpec

    draw_ms = {}
    for spec in [ViewSpec("Heads grid", HeadGrid)] + VIEWS:
        state = AppState()
        state.set_model(loaded)
        widget = spec.factory(state)
        widget.resize(1200, 800)
        widget.show()
        app.processEvents()
        start = time.perf_counter()
        state.set_trace(trace)         # every view redraws from this signal (prepared in a worker)
        wait_until_drawn(widget)
        widget.grab()                  # ... and paints
        draw_ms[spec.title] = round((time.perf_counter() - start) * 1e3, 1)
        widget.close()
        widget.deleteLater()
        app.processEvents()
    print(json.dumps({"bench": "long_inputs", "model": "all-MiniLM-L6-v2 (6x12)", "tokens": tokens,
                      "forward_with_weights_ms": round(forward_s * 1e3, 1),
                      "view_draw_ms": draw_ms, "slowest_view_ms": max(draw_ms.values()),
                      "note": "views that ignore traces (decoding, training, positions) draw nothing here"}))


if __name__ == "__main__":
    main()
