"""GUI responsiveness, timed the way a user waits. Prints one JSON object.

- ``longest_event_loop_gap_ms_512_tokens``: the real window on all-MiniLM-L6-v2 with every
  view open (each dock floating, so each one paints), a 512-token text run; a 10 ms QTimer
  on the GUI thread records its ticks from Run until every view has drawn and painted. The
  longest gap between ticks is how long the window froze. Median (and spread) over runs.
- ``tenth_of_ten_quick_runs_over_one_run``: ten Runs clicked back to back (128 tokens,
  MiniLM, every view open); the time from the tenth click to its trace on screen, over the
  same for a single Run. Interleaved in one loop.
- ``head_lines_all_heads_128_tokens_ms``: Head lines with all 12 heads of a MiniLM layer at
  128 tokens: from the click on "all heads" to the widget painted (a grab), with the
  worker's preparation and the GUI thread's part apart.
- ``grid_redraws_per_s_12x12_*``: new traces into the heads grid, each drawn and grabbed.

Offscreen (QT_QPA_PLATFORM=offscreen unless set): our code and Qt's raster engine, no
compositor. pyqtgraph's options are the app's own (antialiasing as the window sets it).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("ATTNSCOPE_SETTINGS", "/tmp/attnscope-bench-settings.ini")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from PySide6.QtCore import QCoreApplication, QEventLoop, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

LONG = " ".join(["attention lets every token look at every other token in the sentence ."] * 60)
MEDIUM = " ".join(["the small dog sees the big cat near the old house ."] * 11)


def _spin(until, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not until():
        if time.monotonic() > deadline:
            raise TimeoutError("the window did not finish in time")
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)


def _summary(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1), "n": len(values)}


def window_with_every_view():
    from engine import catalog
    from gui.main_window import MainWindow

    w = MainWindow(source=catalog.MINILM, device="cpu")
    w.resize(1400, 900)
    w.show()
    _spin(lambda: w.state.trace is not None and not w.run_jobs.busy)
    for title, dock in w.docks.items():
        dock.setFloating(True)
        dock.resize(700, 450)
        dock.show()
        w.view(title)
    _settle(w)
    return w


def _busy(w) -> bool:
    from gui.views.prepared import PreparedView
    jobs = [w.run_jobs, w.model_jobs] + [v.draw_jobs for v in w.views.values() if isinstance(v, PreparedView)]
    jobs += [v.jobs for v in w.views.values() if hasattr(v, "jobs")]
    return any(j.busy for j in jobs)


def _settle(w) -> None:
    _spin(lambda: not _busy(w))
    for _ in range(5):   # the paint events that follow the last drawing
        QCoreApplication.processEvents()


def _run_and_wait(w, text: str) -> float:
    """Click Run with ``text``; seconds until its trace is drawn and painted everywhere."""
    old = w.state.trace
    w.text_edit.setText(text)
    start = time.perf_counter()
    w.run()
    _spin(lambda: w.state.trace is not old and not _busy(w))
    _settle(w)
    return time.perf_counter() - start


def longest_gap(w, repeats: int = 3) -> dict:
    gaps, totals = [], []
    for i in range(repeats):
        ticks: list[float] = []
        timer = QTimer()
        timer.setInterval(10)
        timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
        timer.start()
        QCoreApplication.processEvents()
        ticks.append(time.perf_counter())
        total = _run_and_wait(w, LONG + (" again" * i))
        timer.stop()
        gaps.append(float(np.diff(ticks).max()) * 1000)
        totals.append(total * 1000)
    return {"tokens": len(w.state.trace.source_tokens), "gap_ms": _summary(gaps),
            "run_to_every_view_painted_ms": _summary(totals)}


def quick_runs(w, repeats: int = 3) -> dict:
    singles, tenths = [], []
    for i in range(repeats):       # interleaved: one single run, then ten quick ones
        singles.append(_run_and_wait(w, MEDIUM + f" {i}") * 1000)
        old = w.state.trace
        for j in range(10):
            w.text_edit.setText(MEDIUM + f" {i} {j} .")
            start = time.perf_counter()
            w.run()
        _spin(lambda: w.state.trace is not old and w.state.text.endswith(f" {i} 9 .") and not _busy(w))
        _settle(w)
        tenths.append((time.perf_counter() - start) * 1000)
    return {"tokens": len(w.state.trace.source_tokens), "single_run_ms": _summary(singles),
            "tenth_of_ten_ms": _summary(tenths),
            "ratio": round(statistics.median(tenths) / statistics.median(singles), 2)}


def head_lines_paint(app, repeats: int = 5) -> dict:
    from engine.hf import load_hf_model, minilm_path
    from engine.tracing import trace_text
    from gui.state import AppState
    from gui.views.head_lines import HeadLines

    loaded = load_hf_model(minilm_path())
    trace = trace_text(loaded, MEDIUM)
    state = AppState()
    state.set_model(loaded)
    state.set_trace(trace)
    view = HeadLines(state)
    view.resize(900, 1000)
    view.show()
    _spin(lambda: not view.draw_jobs.busy)
    totals, prepare, apply_, grab = [], [], [], []
    n_heads = trace.shape("encoder self")[1]
    for i in range(repeats):
        view.set_heads([0])
        _spin(lambda: not view.draw_jobs.busy)
        app.processEvents()
        start = time.perf_counter()
        view.set_heads(list(range(n_heads)))
        _spin(lambda: not view.draw_jobs.busy)   # prepared in the worker, applied here
        applied = time.perf_counter()
        view.plot.grab()
        end = time.perf_counter()
        t = time.perf_counter()
        from gui.views.head_lines import lines_drawing
        lines_drawing(trace, "encoder self", state.layer, list(range(n_heads)), view.threshold.value(),
                      False, False, "all", None)
        prepare.append((time.perf_counter() - t) * 1000)
        totals.append((end - start) * 1000)
        apply_.append((applied - start) * 1000)
        grab.append((end - applied) * 1000)
    lines = sum(view.drawn.values())
    view.close()
    return {"tokens": len(trace.source_tokens), "heads": n_heads, "lines": lines,
            "click_to_painted_ms": _summary(totals), "of_which_prepare_in_worker_ms": _summary(prepare),
            "until_applied_ms": _summary(apply_), "paint_grab_ms": _summary(grab)}


def grid_redraws_per_second(app, tokens: int, n: int = 30) -> float:
    from engine.trace import AttentionTrace
    from gui.state import AppState
    from gui.views.head_grid import HeadGrid

    rng = np.random.default_rng(0)
    traces = []
    for _ in range(4):
        w = rng.random((12, 12, tokens, tokens), dtype=np.float32)
        w /= w.sum(-1, keepdims=True)
        traces.append(AttentionTrace("bench", "bert", {"encoder self": w}, source_tokens=[f"t{i}" for i in range(tokens)]))
    state = AppState()
    grid = HeadGrid(state)
    grid.resize(1000, 800)
    grid.show()
    start = time.perf_counter()
    for i in range(n):
        state.set_trace(traces[i % len(traces)])
        _spin(lambda: not grid.draw_jobs.busy)
        grid.plot.grab()  # a full render into a pixmap
    elapsed = time.perf_counter() - start
    grid.close()
    return round(n / elapsed, 1)


def main() -> None:
    app = QApplication.instance() or QApplication([])
    from gui.theme import apply_theme
    apply_theme(False)
    w = window_with_every_view()
    gap = longest_gap(w)
    quick = quick_runs(w)
    w.close()
    result = {
        "bench": "gui",
        "platform": os.environ["QT_QPA_PLATFORM"],
        "cores": os.cpu_count(),
        "longest_event_loop_gap_512_tokens": gap,
        "tenth_of_ten_quick_runs_over_one_run": quick,
        "head_lines_all_heads_128_tokens": head_lines_paint(app),
        "grid_redraws_per_s_12x12_64_tokens": grid_redraws_per_second(app, 64),
        "grid_redraws_per_s_12x12_128_tokens": grid_redraws_per_second(app, 128),
        "goals": {"gap_ms": "<= 100", "tenth_over_one": "<= 2", "head_lines_click_to_painted_ms": "<= 100"},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
