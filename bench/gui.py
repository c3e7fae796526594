"""GUI speed: grid redraws per second, run-to-drawn over bare forward, cold start. Prints JSON.

Offscreen (QT_QPA_PLATFORM=offscreen unless set), so numbers measure our drawing code and
Qt's raster engine, not a compositor.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from engine.demo import random_model  # noqa: E402
from engine.trace import AttentionTrace  # noqa: E402
from engine.tracing import trace_text  # noqa: E402
from gui.state import AppState  # noqa: E402
from gui.views.head_grid import HeadGrid  # noqa: E402


def fake_trace(layers: int, heads: int, tokens: int, seed: int) -> AttentionTrace:
    rng = np.random.default_rng(seed)
    w = rng.random((layers, heads, tokens, tokens), dtype=np.float32)
    w /= w.sum(-1, keepdims=True)
    toks = [f"t{i}" for i in range(tokens)]
    return AttentionTrace("bench", "bert", {"encoder self": w}, source_tokens=toks)


def redraws_per_second(app, tokens: int, n: int = 60) -> float:
    state = AppState()
    grid = HeadGrid(state)
    grid.resize(1000, 800)
    grid.show()
    traces = [fake_trace(12, 12, tokens, s) for s in range(4)]
    state.set_trace(traces[0])
    app.processEvents()
    start = time.perf_counter()
    for i in range(n):
        state.set_trace(traces[i % len(traces)])
        grid.plot.grab()  # forces a full render into a pixmap
    elapsed = time.perf_counter() - start
    grid.close()
    return n / elapsed


def run_to_drawn(app, tokens: int = 128, repeats: int = 5) -> dict:
    loaded = random_model("bert", layers=6, heads=12, width=384)
    loaded.model.config.max_position_embeddings  # noqa: B018 (512 by default)
    text = " ".join(["the big dog sees the small cat ."] * (tokens // 8))
    ids = torch.randint(7, loaded.tokenizer.vocab_size, (1, tokens))
    types = torch.zeros_like(ids)
    state = AppState()
    grid = HeadGrid(state)
    grid.resize(1000, 800)
    grid.show()
    with torch.no_grad():
        loaded.model(ids, types, need_weights=True)  # warm up
        bare = []
        for _ in range(repeats):
            t = time.perf_counter()
            loaded.model(ids, types, need_weights=True)
            bare.append(time.perf_counter() - t)
    full = []
    for _ in range(repeats):
        t = time.perf_counter()
        trace = trace_text(loaded, text)
        state.set_trace(trace)
        grid.plot.grab()  # forces a full render into a pixmap
        full.append(time.perf_counter() - t)
    grid.close()
    b, f = float(np.median(bare)), float(np.median(full))
    return {"tokens": trace.shape("encoder self")[-1], "bare_forward_ms": b * 1000, "run_to_drawn_ms": f * 1000,
            "ratio": f / b}


def cold_start_s() -> float:
    """Seconds from launching a fresh interpreter until its window is shown (imports included;
    the time the child then takes to close and exit is not counted)."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from PySide6.QtWidgets import QApplication; app = QApplication([])\n"
            "from gui.main_window import MainWindow\n"
            "w = MainWindow(source='random-translator', device='cpu'); w.show(); app.processEvents()\n"
            "print('shown', flush=True); w.close()") % str(ROOT)
    env = dict(os.environ, ATTNSCOPE_SETTINGS=str(Path("/tmp") / "attnscope-bench-settings.ini"))
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=env, text=True)
    line = child.stdout.readline()
    shown = time.perf_counter() - start
    child.wait()
    if line.strip() != "shown":
        raise RuntimeError("the window did not start")
    return shown


def main() -> None:
    app = QApplication.instance() or QApplication([])
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    result = {
        "bench": "gui",
        "platform": os.environ["QT_QPA_PLATFORM"],
        "grid_redraws_per_s_12x12_64_tokens": redraws_per_second(app, 64),
        "grid_redraws_per_s_12x12_128_tokens": redraws_per_second(app, 128),
        "run_to_all_heads_drawn_6x12": run_to_drawn(app, 128),
        "cold_start_to_window_s": cold_start_s(),
        "goals": {"redraws_per_s": ">= 60", "run_to_drawn_ratio": "<= 1.5", "cold_start_s": "<= 3"},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
