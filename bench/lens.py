"""The logit lens in the window: a Run with the Lens shown, until its table is painted, over
the same Run with the Lens hidden. Prints one JSON object.

The real window on a random Llama of tests/hf_tiny (8 layers, 8 heads, 256 wide, 2,048
positions), 1,024 tokens. Three Runs alternate (bench/_timing's round robin), each timed from
Run to every visible view drawn and the window grabbed: with the Training panel in front (no
work of its own on a Run), with the Lens in front, and with the Lens as it was before
(``replayed``: the whole model run again for each layer, 8 forwards here). The Lens now
reads every layer through the model's final norm and unembedding after one forward of its
own, so the goal is a Lens Run <= 2.5x a Run.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._app import application, idle, spin as _spin  # noqa: E402
from bench._timing import machine, on_worker, ratio, round_robin, scratch_dir, summary  # noqa: E402
from bench.gui import _busy, _settle, open_window  # noqa: E402
from bench.interventions import _text  # noqa: E402

ROUNDS = int(os.environ.get("ATTNSCOPE_BENCH_ROUNDS", "4"))
TOKENS = int(os.environ.get("ATTNSCOPE_BENCH_TOKENS", "1024"))


class LensOverRun:
    def __init__(self, folder: str, tokens: int):
        self.w = w = open_window(folder)
        self.text = on_worker(lambda: _text(w.state.loaded, tokens))()
        self.lens = w.dock_layout.view("Lens")
        self.times = {"run_ms": [], "run_with_lens_ms": [], "run_with_lens_replayed_ms": []}
        self.rows: list[int] = []

    def _run(self, lens_shown: bool) -> float:
        w = self.w
        dock = w.docks["Lens" if lens_shown else "Training"]
        dock.show()
        dock.raise_()
        _settle(w)
        w.input_bar.text_edit.setText(self.text + (" ." if len(self.times["run_ms"]) % 2 else ""))   # a new text each time
        old = w.state.trace
        start = time.perf_counter()
        w.run()
        _spin(lambda: w.state.trace is not old and not _busy(w), timeout_s=600)
        _settle(w)
        w.grab()
        if lens_shown:
            self.rows.append(self.lens.table.rowCount())
        return (time.perf_counter() - start) * 1e3

    def __call__(self, timed: bool) -> None:
        import attnscope.engine.interventions.lens as lens

        reader = lens._reader

        def replayed(adapter, blocks, framed, *_):           # the old Lens: the whole forward again a layer
            def read(hidden):
                swap = blocks[-1].register_forward_hook(
                    lambda _m, _i, out: (hidden, *out[1:]) if isinstance(out, tuple) else hidden)
                try:
                    return adapter.forward(framed)
                finally:
                    swap.remove()
            return read
        for shown, key, read in ((False, "run_ms", reader), (True, "run_with_lens_ms", reader),
                                 (True, "run_with_lens_replayed_ms", replayed)):
            lens._reader = read
            try:
                ms = self._run(shown)
            finally:
                lens._reader = reader
            if timed:
                self.times[key].append(ms)

    def result(self) -> dict:
        self.w.close()
        t = self.times
        return {"run_ms": summary(t["run_ms"]), "run_with_lens_ms": summary(t["run_with_lens_ms"]),
                "run_with_lens_replayed_ms": summary(t["run_with_lens_replayed_ms"]),
                "lens_run_over_run": ratio(t["run_with_lens_ms"], t["run_ms"]),
                "replayed_lens_run_over_run": ratio(t["run_with_lens_replayed_ms"], t["run_ms"]),
                "lens_rows_every_time": sorted(set(self.rows))}


def main() -> None:
    from tests.helpers.hf_tiny import tiny_folder

    application()
    root = scratch_dir("attnscope-bench-lens-")
    folder = str(tiny_folder(root, "llama", width=256, layers=8, heads=8, positions=2048))
    figure = LensOverRun(folder, TOKENS)
    probes = round_robin({"lens": figure}, ROUNDS, idle=idle)
    result = {"bench": "lens", "platform": os.environ["QT_QPA_PLATFORM"], "rounds": ROUNDS, "tokens": TOKENS,
              "model": "tiny random Llama (tests/hf_tiny: 8 layers, 8 heads, 256 wide)",
              **figure.result(), "goal": {"lens_run_over_run": 2.5}, "machine": machine(probes)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
