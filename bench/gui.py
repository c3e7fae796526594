"""GUI responsiveness, timed the way a user waits. Prints one JSON object.

- ``cold_start``: ``attnscope`` (the default model, then ``--model minilm``) started as a
  child process (bench/_cold_start.py drives the real entry point), timed from the spawn
  until the first heads are drawn and painted, with the phases (window shown, model
  loaded, trace arrived, heads drawn). The two models alternate; files are in the page cache.
- ``run_to_all_heads_drawn``: the real window in its first-start layout (the heads grid and
  the docks in front: Head detail, Head statistics), Run clicked: worker forward, the
  signal, every visible view prepared, applied and the window grabbed (painted). The
  baseline is the bare ``trace_text`` call the worker makes (on the app's model thread, no Qt),
  timed in the same loop.
  MiniLM at 128 tokens, and the default model at its longest input (max_len tokens).
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
compositor. QApplication and pyqtgraph options are the app's own (bench/_app.py's
``app_options`` mirrors gui.app.run_app: Fusion, antialiasing on). Settings come from a fresh temporary
file, so every window starts in the first-start layout. Medians and spread (bench/_timing).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from PySide6.QtCore import QCoreApplication, QTimer  # noqa: E402

from bench._app import application, idle, spin as _spin  # noqa: E402
from bench._timing import Pacer, interleaved, machine, on_worker, ratio, summary  # noqa: E402

SETTINGS_DIR = Path(tempfile.mkdtemp(prefix="attnscope-bench-settings-"))

LONG = " ".join(["attention lets every token look at every other token in the sentence ."] * 60)
MEDIUM = " ".join(["the small dog sees the big cat near the old house ."] * 11)


def _fresh_settings() -> None:
    """A settings file of its own for the next window: the first-start layout, no recent files."""
    fd, path = tempfile.mkstemp(suffix=".ini", dir=SETTINGS_DIR)
    os.close(fd)
    os.environ["ATTNSCOPE_SETTINGS"] = path


def open_window(source: str):
    """The real window on ``source``, shown, its first trace drawn everywhere."""
    from gui.main_window import MainWindow

    _fresh_settings()
    w = MainWindow(source=source, device="cpu")
    w.show()
    _spin(lambda: w.state.trace is not None and not w.run_jobs.busy)
    _settle(w)
    return w


# ---- cold start ------------------------------------------------------------------------
PHASES = ("interpreter_up", "window_shown", "model_loaded", "trace_arrived", "heads_drawn")


def _cold_start_once(args: list[str]) -> dict:
    env = dict(os.environ)
    _fresh_settings()
    env["ATTNSCOPE_SETTINGS"] = os.environ["ATTNSCOPE_SETTINGS"]
    start = time.monotonic()
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "_cold_start.py"), *args], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"cold start {args} failed: {out.stderr[-2000:]}")
    marks = json.loads(lines[-1])
    return {k: (marks[k] - start) * 1e3 for k in PHASES} | {"tokens": marks["tokens"], "model": marks["model"]}


def cold_start(repeats: int = 7) -> dict:
    """``attnscope`` and ``attnscope --model minilm``, alternating, spawn to first heads painted."""
    from engine import catalog

    runs = {"default": [], "minilm": []}
    args = {"default": [], "minilm": ["--model", catalog.MINILM]}
    for name in runs:               # warm-up: the page cache holds the files afterwards
        _cold_start_once(args[name])
    pacer = Pacer(repeats)
    for r in range(repeats):
        pacer.wait()
        for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            runs[name].append(_cold_start_once(args[name]))
    result = {}
    for name, rows in runs.items():
        phases = {}
        for a, b in zip(PHASES, PHASES[1:]):
            phases[f"{a}_to_{b}_ms"] = summary([row[b] - row[a] for row in rows], 0)
        result[name] = {"model": rows[0]["model"], "tokens": rows[0]["tokens"],
                        "spawn_to_window_shown_ms": summary([row["window_shown"] for row in rows], 0),
                        "spawn_to_first_heads_drawn_ms": summary([row["heads_drawn"] for row in rows], 0),
                        "phases": phases}
    return result


# ---- one Run in the real window ------------------------------------------------------------
def _text_of(loaded, tokens: int) -> tuple[str, int]:
    """A text of ``tokens`` input tokens for ``loaded`` (or its longest input, if shorter)."""
    from engine.tracing import trace_text
    from gui.main_window import DEFAULT_TEXT

    sentence = DEFAULT_TEXT.get(loaded.family, DEFAULT_TEXT[loaded.role])
    text = sentence
    while True:
        trace = trace_text(loaded, text)
        n = len(trace.source_tokens or trace.target_tokens)
        if n >= tokens or (n < len(text.split()) // 2):   # reached, or the model truncates
            return text, n
        text += " " + sentence


def run_to_all_heads_drawn(source: str, tokens: int, repeats: int = 31) -> dict:
    """Run clicked in the real window; phases until every visible view is drawn and painted.
    The baseline, the bare trace_text the worker calls, runs in the same loop."""
    from engine.tracing import trace_text
    from gui.views.prepared import PreparedView

    w = open_window(source)
    loaded = w.state.loaded
    text, n_tokens = on_worker(lambda: _text_of(loaded, tokens))()
    w.text_edit.setText(text)
    visible = [t for t, v in w.views.items() if v.isVisible() and isinstance(v, PreparedView)]
    phases = {"click_to_trace_ms": [], "of_which_forward_in_worker_ms": [], "trace_to_grid_applied_ms": [],
              "trace_to_every_visible_view_applied_ms": [], "paint_grab_ms": []}
    arrived: list[float] = []
    w.state.trace_changed.connect(lambda _t: arrived.append(time.perf_counter()))

    def window_run() -> None:
        old_trace, old_grid = w.state.trace, w.grid.drawing
        arrived.clear()
        start = time.perf_counter()
        w.run()
        grid_at = []

        def done() -> bool:
            if not grid_at and w.grid.drawing is not old_grid:
                grid_at.append(time.perf_counter())
            return w.state.trace is not old_trace and bool(grid_at) and not _busy(w)

        _spin(done)
        applied = time.perf_counter()
        w.grab()   # the window with its docks, rendered: the paint
        end = time.perf_counter()
        phases["click_to_trace_ms"].append((arrived[0] - start) * 1e3)
        phases["of_which_forward_in_worker_ms"].append(w.last_forward_s * 1e3)
        phases["trace_to_grid_applied_ms"].append((grid_at[0] - arrived[0]) * 1e3)
        phases["trace_to_every_visible_view_applied_ms"].append((applied - arrived[0]) * 1e3)
        phases["paint_grab_ms"].append((end - applied) * 1e3)

    def bare_trace() -> None:
        trace_text(loaded, text)

    times = interleaved({"bare_trace_text": on_worker(bare_trace), "window_run": window_run}, repeats,
                        pacer=Pacer(repeats, idle=idle))
    for values in phases.values():
        del values[0]   # the warm-up round
    w.close()
    return {"model": loaded.name, "tokens": n_tokens, "visible_views": ["Heads overview", *[t for t in visible
                                                                                            if t != "Heads overview"]],
            "run_to_all_heads_drawn_ms": summary(times["window_run"]),
            "baseline_bare_trace_text_ms": summary(times["bare_trace_text"]),
            "over_baseline": ratio(times["window_run"], times["bare_trace_text"], 2),
            "phases": {k: summary(v) for k, v in phases.items()}}


def window_with_every_view():
    from engine import catalog

    w = open_window(catalog.MINILM)
    w.resize(1400, 900)
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


def longest_gap(w, repeats: int = 25) -> dict:
    gaps, totals = [], []
    pacer = Pacer(repeats, idle=idle)
    for i in range(repeats):
        pacer.wait()
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
    return {"tokens": len(w.state.trace.source_tokens), "gap_ms": summary(gaps),
            "run_to_every_view_painted_ms": summary(totals)}


def quick_runs(w, repeats: int = 7) -> dict:
    singles, tenths = [], []
    pacer = Pacer(repeats, idle=idle)
    for i in range(repeats):       # interleaved: one single run, then ten quick ones
        pacer.wait()
        singles.append(_run_and_wait(w, MEDIUM + f" {i}") * 1000)
        old = w.state.trace
        for j in range(10):
            w.text_edit.setText(MEDIUM + f" {i} {j} .")
            start = time.perf_counter()
            w.run()
        _spin(lambda: w.state.trace is not old and w.state.text.endswith(f" {i} 9 .") and not _busy(w))
        _settle(w)
        tenths.append((time.perf_counter() - start) * 1000)
    return {"tokens": len(w.state.trace.source_tokens), "single_run_ms": summary(singles),
            "tenth_of_ten_ms": summary(tenths),
            "ratio": ratio(tenths, singles, 2)}


def head_lines_paint(app, repeats: int = 11) -> dict:
    from engine.hf import load_hf_model, minilm_path
    from engine.tracing import trace_text
    from gui.state import AppState
    from gui.views.head_lines import HeadLines

    loaded = on_worker(lambda: load_hf_model(minilm_path()))()
    trace = on_worker(lambda: trace_text(loaded, MEDIUM))()
    state = AppState()
    state.set_model(loaded)
    state.set_trace(trace)
    view = HeadLines(state)
    view.resize(900, 1000)
    view.show()
    _spin(lambda: not view.draw_jobs.busy)
    totals, prepare, apply_, grab = [], [], [], []
    n_heads = trace.shape("encoder self")[1]
    pacer = Pacer(repeats, idle=idle)
    for i in range(repeats):
        pacer.wait()
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
            "click_to_painted_ms": summary(totals), "of_which_prepare_in_worker_ms": summary(prepare),
            "until_applied_ms": summary(apply_), "paint_grab_ms": summary(grab)}


def grid_redraws(app, tokens: int, n: int = 81) -> tuple[float, dict]:
    """Redraws per second (from the median redraw) and the redraw times in ms."""
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
    times = []
    pacer = Pacer(n + 1, idle=idle)
    for i in range(n + 1):
        pacer.wait()
        start = time.perf_counter()
        state.set_trace(traces[i % len(traces)])
        _spin(lambda: not grid.draw_jobs.busy)
        grid.plot.grab()  # a full render into a pixmap
        times.append((time.perf_counter() - start) * 1e3)
    grid.close()
    times = times[1:]  # the first one builds the items
    return round(1e3 / statistics.median(times), 1), summary(times)


def main() -> None:
    from engine import catalog

    cold = cold_start()
    app = application()
    runs = {"default": run_to_all_heads_drawn(catalog.default_source(), 128),
            "minilm": run_to_all_heads_drawn(catalog.MINILM, 128)}
    grid64, grid64_ms = grid_redraws(app, 64)
    grid128, grid128_ms = grid_redraws(app, 128)
    w = window_with_every_view()
    gap = longest_gap(w)
    quick = quick_runs(w)
    w.close()
    result = {
        "bench": "gui",
        "platform": os.environ["QT_QPA_PLATFORM"],
        "cores": os.cpu_count(),
        "machine": machine(),
        "cold_start_to_first_heads_drawn": cold,
        "run_to_all_heads_drawn": runs,
        "longest_event_loop_gap_512_tokens": gap,
        "tenth_of_ten_quick_runs_over_one_run": quick,
        "head_lines_all_heads_128_tokens": head_lines_paint(app),
        "grid_redraws_per_s_12x12_64_tokens": grid64,
        "grid_redraws_per_s_12x12_128_tokens": grid128,
        "grid_redraw_ms_12x12": {"64_tokens": grid64_ms, "128_tokens": grid128_ms},
        "goals": {"gap_ms": "<= 100", "tenth_over_one": "<= 2", "head_lines_click_to_painted_ms": "<= 100",
                  "run_to_all_heads_drawn_ms": "<= 100 at 128 tokens"},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
