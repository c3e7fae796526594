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
  longest gap between ticks is how long the window froze. Median (and spread) over runs:
  a long text run after a long one, and (``gap_after_a_short_text_ms``) the first long run
  after a 128-token one, when every view changes size.
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

Every figure's fixture (the windows, the grids, the Head lines view) is set up first; then
the figures take turns (``round_robin``: ROUNDS rounds, a few repetitions of each figure per
round, the rounds paced over the whole bench), so each figure's repetitions come from every
part of the run instead of from its own minute of a shared host.

How many repetitions: the window's figures spread widely within a run (interquartile range
20-40 % of the median: which view's job a core takes first, where the host is), and a
median's own error shrinks only with the square root of their number. With 27-36 of each
(runs 11-15) the Run-to-drawn and quick-Runs medians moved 10-20 % between runs by that
alone. Per run now: 96 Runs of each model, 96 quick-Run pairs, 216 grid redraws a size,
48 long Runs after a long one and 24 after a short one, 24 Head lines clicks, 12 cold starts.
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
from bench._timing import machine, on_worker, ratio, round_robin, scratch_dir, summary  # noqa: E402

SETTINGS_DIR = scratch_dir("attnscope-bench-settings-")

LONG = " ".join(["attention lets every token look at every other token in the sentence ."] * 60)
MEDIUM = " ".join(["the small dog sees the big cat near the old house ."] * 11)


def _fresh_settings() -> None:
    """A settings file of its own for the next window: the first-start layout, no recent files."""
    fd, path = tempfile.mkstemp(suffix=".ini", dir=SETTINGS_DIR)
    os.close(fd)
    os.environ["ATTNSCOPE_SETTINGS"] = path


def open_window(source: str):
    """The real window on ``source``, shown, its first trace drawn everywhere."""
    from attnscope.gui.window.main_window import MainWindow

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


class ColdStart:
    """``attnscope`` and ``attnscope --model minilm``, spawn to first heads painted; each call
    starts both, the order alternating (the untimed first call fills the page cache)."""

    def __init__(self):
        from attnscope.engine.loading import catalog

        self.args = {"default": [], "minilm": ["--model", catalog.MINILM]}
        self.rows = {name: [] for name in self.args}
        self.calls = 0

    def __call__(self, timed: bool) -> None:
        names = list(self.args) if self.calls % 2 == 0 else list(self.args)[::-1]
        self.calls += 1
        for name in names:
            row = _cold_start_once(self.args[name])
            if timed:
                self.rows[name].append(row)

    def result(self) -> dict:
        result = {}
        for name, rows in self.rows.items():
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
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.gui.window.input_bar import DEFAULT_TEXT

    sentence = DEFAULT_TEXT.get(loaded.family, DEFAULT_TEXT[loaded.role])
    text = sentence
    while True:
        trace = trace_text(loaded, text)
        n = len(trace.source_tokens or trace.target_tokens)
        if n >= tokens or (n < len(text.split()) // 2):   # reached, or the model truncates
            return text, n
        text += " " + sentence


class RunToAllHeadsDrawn:
    """Run clicked in the real window; phases until every visible view is drawn and painted.
    The baseline, the bare trace_text the worker calls, alternates with it in each call."""

    def __init__(self, source: str, tokens: int, per_call: int = 8):
        from attnscope.engine.traces.tracing import trace_text
        from attnscope.gui.drawing.prepared import PreparedView

        self.w = w = open_window(source)
        self.loaded = loaded = w.state.loaded
        self.text, self.tokens = on_worker(lambda: _text_of(loaded, tokens))()
        w.input_bar.text_edit.setText(self.text)
        self.visible = [t for t, v in w.views.items() if v.isVisible() and isinstance(v, PreparedView)]
        self.phases = {"click_to_trace_ms": [], "of_which_forward_in_worker_ms": [], "trace_to_grid_applied_ms": [],
                       "trace_to_every_visible_view_applied_ms": [], "paint_grab_ms": []}
        self.times = {"bare_trace_text": [], "window_run": []}
        self.arrived: list[float] = []
        w.state.trace_changed.connect(lambda _t: self.arrived.append(time.perf_counter()))
        self.bare = on_worker(lambda: trace_text(loaded, self.text))
        self.per_call, self.calls = per_call, 0

    def _window_run(self, timed: bool) -> None:
        w = self.w
        old_trace, old_grid = w.state.trace, w.grid.drawing
        self.arrived.clear()
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
        if timed:
            self.times["window_run"].append((end - start) * 1e3)
            self.phases["click_to_trace_ms"].append((self.arrived[0] - start) * 1e3)
            self.phases["of_which_forward_in_worker_ms"].append(w.last_forward_s * 1e3)
            self.phases["trace_to_grid_applied_ms"].append((grid_at[0] - self.arrived[0]) * 1e3)
            self.phases["trace_to_every_visible_view_applied_ms"].append((applied - self.arrived[0]) * 1e3)
            self.phases["paint_grab_ms"].append((end - applied) * 1e3)

    def _bare(self, timed: bool) -> None:
        start = time.perf_counter()
        self.bare()
        if timed:
            self.times["bare_trace_text"].append((time.perf_counter() - start) * 1e3)

    def __call__(self, timed: bool) -> None:
        for _ in range(self.per_call):
            pair = (self._bare, self._window_run) if self.calls % 2 == 0 else (self._window_run, self._bare)
            self.calls += 1
            for fn in pair:
                fn(timed)

    def result(self) -> dict:
        self.w.close()
        times = self.times
        return {"model": self.loaded.name, "tokens": self.tokens,
                "visible_views": ["Heads overview", *[t for t in self.visible if t != "Heads overview"]],
                "run_to_all_heads_drawn_ms": summary(times["window_run"]),
                "baseline_bare_trace_text_ms": summary(times["bare_trace_text"]),
                "over_baseline": ratio(times["window_run"], times["bare_trace_text"], 2),
                "phases": {k: summary(v) for k, v in self.phases.items()}}


def window_with_every_view():
    from attnscope.engine.loading import catalog

    w = open_window(catalog.MINILM)
    w.resize(1400, 900)
    for title, dock in w.docks.items():
        dock.setFloating(True)
        dock.resize(700, 450)
        dock.show()
        w.dock_layout.view(title)
    _settle(w)
    return w


def _busy(w) -> bool:
    from attnscope.gui.drawing.prepared import PreparedView
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
    w.input_bar.text_edit.setText(text)
    start = time.perf_counter()
    w.run()
    _spin(lambda: w.state.trace is not old and not _busy(w))
    _settle(w)
    return time.perf_counter() - start


class LongestGap:
    """Runs of a 512-token text in the window with every view open; a 10 ms QTimer on the GUI
    thread ticks meanwhile, and the longest gap between ticks is how long the window froze.
    Each call runs, ``per_call`` times, a 128-token text (untimed), then the long text three
    times: the first long Run after a short one (every view changes size: axes, images) is
    reported apart from the two after a long one."""

    def __init__(self, w, per_call: int = 2):
        self.w, self.calls, self.per_call = w, 0, per_call
        self.gaps = {"after_short": [], "after_long": []}
        self.totals = []

    def _gap(self, text: str) -> tuple[float, float]:
        ticks: list[float] = []
        timer = QTimer()
        timer.setInterval(10)
        timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
        timer.start()
        QCoreApplication.processEvents()
        ticks.append(time.perf_counter())
        total = _run_and_wait(self.w, text)
        timer.stop()
        self.tokens = len(self.w.state.trace.source_tokens)   # this text's (other figures run other texts after)
        return float(np.diff(ticks).max()) * 1000, total * 1000

    def __call__(self, timed: bool) -> None:
        for _ in range(self.per_call):
            self._once(timed)

    def _once(self, timed: bool) -> None:
        self.calls += 1
        _run_and_wait(self.w, MEDIUM + f" short {self.calls}")
        for i, after in enumerate(("after_short", "after_long", "after_long")):
            gap, total = self._gap(LONG + f" {self.calls} {i}")
            if timed:
                self.gaps[after].append(gap)
                self.totals.append(total)

    def result(self) -> dict:
        return {"tokens": self.tokens, "gap_ms": summary(self.gaps["after_long"]),
                "gap_after_a_short_text_ms": summary(self.gaps["after_short"]),
                "run_to_every_view_painted_ms": summary(self.totals)}


class QuickRuns:
    """One Run, then ten clicked back to back (128 tokens, every view open): the tenth's
    click to its trace drawn everywhere, over the single Run's; ``per_call`` times a call."""

    def __init__(self, w, per_call: int = 8):
        self.w, self.calls, self.per_call = w, 0, per_call
        self.singles, self.tenths = [], []

    def __call__(self, timed: bool) -> None:
        for _ in range(self.per_call):
            self._once(timed)

    def _once(self, timed: bool) -> None:
        w, i = self.w, self.calls
        self.calls += 1
        single = _run_and_wait(w, MEDIUM + f" {i}") * 1000
        old = w.state.trace
        for j in range(10):
            w.input_bar.text_edit.setText(MEDIUM + f" {i} {j} .")
            start = time.perf_counter()
            w.run()
        _spin(lambda: w.state.trace is not old and w.state.text.endswith(f" {i} 9 .") and not _busy(w))
        _settle(w)
        if timed:
            self.singles.append(single)
            self.tenths.append((time.perf_counter() - start) * 1000)

    def result(self) -> dict:
        return {"tokens": len(self.w.state.trace.source_tokens), "single_run_ms": summary(self.singles),
                "tenth_of_ten_ms": summary(self.tenths), "ratio": ratio(self.tenths, self.singles, 2)}


class HeadLinesPaint:
    """Head lines on MiniLM at 128 tokens: from the click on all 12 heads to the widget
    painted (a grab), with the worker's preparation and the GUI thread's part apart."""

    def __init__(self, app, per_call: int = 2):
        from attnscope.engine.loading.hf import load_hf_model, minilm_path
        from attnscope.engine.traces.tracing import trace_text
        from attnscope.gui.state import AppState
        from attnscope.gui.views.head_lines import HeadLines

        loaded = on_worker(lambda: load_hf_model(minilm_path()))()
        self.trace = trace = on_worker(lambda: trace_text(loaded, MEDIUM))()
        self.state = state = AppState()
        state.set_model(loaded)
        state.set_trace(trace)
        self.view = view = HeadLines(state)
        view.resize(900, 1000)
        view.show()
        _spin(lambda: not view.draw_jobs.busy)
        self.app, self.per_call = app, per_call
        self.n_heads = trace.shape("encoder self")[1]
        self.totals, self.prepare, self.apply, self.grab = [], [], [], []

    def __call__(self, timed: bool) -> None:
        from attnscope.gui.views.head_lines import lines_drawing

        view, heads = self.view, list(range(self.n_heads))
        for _ in range(self.per_call):
            view.set_heads([0])
            _spin(lambda: not view.draw_jobs.busy)
            self.app.processEvents()
            start = time.perf_counter()
            view.set_heads(heads)
            _spin(lambda: not view.draw_jobs.busy)   # prepared in the worker, applied here
            applied = time.perf_counter()
            view.plot.grab()
            end = time.perf_counter()
            t = time.perf_counter()
            lines_drawing(self.trace, "encoder self", self.state.layer, heads, view.threshold.value(),
                          False, False, "all", None)
            prepared = time.perf_counter()
            if timed:
                self.prepare.append((prepared - t) * 1000)
                self.totals.append((end - start) * 1000)
                self.apply.append((applied - start) * 1000)
                self.grab.append((end - applied) * 1000)

    def result(self) -> dict:
        lines = sum(self.view.drawn.values())
        self.view.close()
        return {"tokens": len(self.trace.source_tokens), "heads": self.n_heads, "lines": lines,
                "click_to_painted_ms": summary(self.totals), "of_which_prepare_in_worker_ms": summary(self.prepare),
                "until_applied_ms": summary(self.apply), "paint_grab_ms": summary(self.grab)}


class GridRedraws:
    """New traces into a 12 x 12 heads grid, each drawn and grabbed (a full render)."""

    def __init__(self, tokens: int, per_call: int = 18):
        from attnscope.engine.traces.dense import DenseTrace
        from attnscope.gui.state import AppState
        from attnscope.gui.views.head_grid import HeadGrid

        rng = np.random.default_rng(0)
        self.traces = []
        for _ in range(4):
            w = rng.random((12, 12, tokens, tokens), dtype=np.float32)
            w /= w.sum(-1, keepdims=True)
            self.traces.append(DenseTrace("bench", "bert", {"encoder self": w},
                                              source_tokens=[f"t{i}" for i in range(tokens)]))
        self.state = AppState()
        self.grid = HeadGrid(self.state)
        self.grid.resize(1000, 800)
        self.grid.show()
        self.per_call, self.calls, self.times = per_call, 0, []

    def __call__(self, timed: bool) -> None:
        grid = self.grid
        for _ in range(self.per_call):   # the untimed first call builds the items
            self.calls += 1
            start = time.perf_counter()
            self.state.set_trace(self.traces[self.calls % len(self.traces)])
            _spin(lambda: not grid.draw_jobs.busy)
            grid.plot.grab()
            if timed:
                self.times.append((time.perf_counter() - start) * 1e3)

    def result(self) -> tuple[float, dict]:
        """Redraws per second (from the median redraw) and the redraw times in ms."""
        self.grid.close()
        return round(1e3 / statistics.median(self.times), 1), summary(self.times)


ROUNDS = 12   # every figure's repetitions come in this many turns, spread over the whole bench


def main() -> None:
    from attnscope.engine.loading import catalog

    app = application()
    cold = ColdStart()
    runs = {"default": RunToAllHeadsDrawn(catalog.default_source(), 128),
            "minilm": RunToAllHeadsDrawn(catalog.MINILM, 128)}
    grids = {64: GridRedraws(64), 128: GridRedraws(128)}
    w = window_with_every_view()
    gap, quick = LongestGap(w), QuickRuns(w)
    head_lines = HeadLinesPaint(app)
    probes = round_robin({"cold_start": cold, "run_default": runs["default"], "run_minilm": runs["minilm"],
                 "grid_64": grids[64], "grid_128": grids[128], "gap": gap, "quick": quick,
                 "head_lines": head_lines}, ROUNDS, idle=idle)
    (grid64, grid64_ms), (grid128, grid128_ms) = grids[64].result(), grids[128].result()
    result = {
        "bench": "gui",
        "platform": os.environ["QT_QPA_PLATFORM"],
        "cores": os.cpu_count(),
        "rounds": ROUNDS,
        "cold_start_to_first_heads_drawn": cold.result(),
        "run_to_all_heads_drawn": {name: run.result() for name, run in runs.items()},
        "longest_event_loop_gap_512_tokens": gap.result(),
        "tenth_of_ten_quick_runs_over_one_run": quick.result(),
        "head_lines_all_heads_128_tokens": head_lines.result(),
        "grid_redraws_per_s_12x12_64_tokens": grid64,
        "grid_redraws_per_s_12x12_128_tokens": grid128,
        "grid_redraw_ms_12x12": {"64_tokens": grid64_ms, "128_tokens": grid128_ms},
        "goals": {"gap_ms": "<= 100", "tenth_over_one": "<= 2", "head_lines_click_to_painted_ms": "<= 100",
                  "run_to_all_heads_drawn_ms": "<= 100 at 128 tokens"},
    }
    w.close()
    result["machine"] = machine(probes)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
