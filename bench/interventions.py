"""Interventions in the window: an ablation toggled until every visible view is repainted,
over a plain Run of the same text. Prints one JSON object.

The real window (first-start layout: the heads grid, Head detail, Head statistics in front)
on a tiny random Llama of tests/hf_tiny (4 layers, 8 heads, 256 wide, 2,048 positions), at
128 and 1,024 tokens. Two things alternate in one loop (the order swapping each call,
bench/_timing's rules):

- ``plain_run``: Run clicked, the model as it is;
- ``toggle_ablation``: Shift-click's effect, head (1, 2) of the decoder switched off or back
  on (``AppState.set_interventions``), which re-runs the window with the change; the toggles
  that switched it off are also given apart (``switch_off``: the Runs with the ablation).

Each is timed from the click to the trace drawn in every visible view and the window grabbed
(painted). An ablation is an output hook at the seam (the fused kernel still runs) and the
marks on the grid are one path item, so the goal is <= 1.2x a plain Run.
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

HEAD = (1, 2)
ROUNDS = int(os.environ.get("ATTNSCOPE_BENCH_ROUNDS", "6"))


def _text(loaded, tokens: int) -> str:
    """Words of the tiny tokenizer until the prompt is ``tokens`` long."""
    from attnscope.engine.adapters import adapter_for

    words = "the big dog sees the small cat . time flies like an arrow ; fruit flies like a banana ."
    text = words
    while len(adapter_for(loaded).frame(text).target_ids) < tokens:
        text += " " + words
    ids = adapter_for(loaded).frame(text).target_ids
    while len(ids) > tokens:
        text = text.rsplit(" ", 1)[0]
        ids = adapter_for(loaded).frame(text).target_ids
    return text


class ToggleOverRun:
    def __init__(self, folder: str, tokens: int, per_call: int):
        from attnscope.engine.interventions import HeadRef

        self.w = w = open_window(folder)
        self.text = on_worker(lambda: _text(w.state.loaded, tokens))()
        self.tokens = len(on_worker(lambda: __import__("attnscope.engine.adapters", fromlist=["adapter_for"])
                                    .adapter_for(w.state.loaded).frame(self.text).target_ids)())
        w.input_bar.text_edit.setText(self.text)
        self._wait(w.run)
        self.head = HeadRef("decoder self", *HEAD)
        self.times = {"plain_run": [], "toggle_ablation": [], "switch_off": []}
        self.per_call, self.calls = per_call, 0
        self.marked: list[bool] = []      # after each toggle: the grid marks exactly the ablated tile

    def _wait(self, click) -> float:
        w = self.w
        old = w.state.trace
        start = time.perf_counter()
        click()
        _spin(lambda: w.state.trace is not old and not _busy(w))
        _settle(w)
        w.grab()
        return (time.perf_counter() - start) * 1e3

    def _plain(self, timed: bool) -> None:
        ms = self._wait(self.w.run)
        if timed:
            self.times["plain_run"].append(ms)

    def _toggle(self, timed: bool) -> None:
        state = self.w.state
        ms = self._wait(lambda: state.set_interventions(state.interventions.toggle(self.head)))
        self.marked.append(self.w.grid.marks.tiles == ([HEAD] if state.interventions.mode(self.head) else []))
        if timed:
            self.times["toggle_ablation"].append(ms)
            if state.interventions.mode(self.head):      # this toggle switched the head off
                self.times["switch_off"].append(ms)

    def __call__(self, timed: bool) -> None:
        for _ in range(self.per_call):
            pair = (self._plain, self._toggle) if self.calls % 2 == 0 else (self._toggle, self._plain)
            self.calls += 1
            for fn in pair:
                fn(timed)

    def result(self) -> dict:
        self.w.close()
        t = self.times
        return {"tokens": self.tokens, "plain_run_ms": summary(t["plain_run"]),
                "toggle_ablation_ms": summary(t["toggle_ablation"]),
                "toggle_over_plain_run": ratio(t["toggle_ablation"], t["plain_run"]),
                "switch_off_ms": summary(t["switch_off"]),
                "switch_off_over_plain_run": ratio(t["switch_off"], t["plain_run"]),
                "grid_marked_the_ablated_tile_after_every_toggle": all(self.marked) and bool(self.marked)}


def main() -> None:
    from tests.helpers.hf_tiny import tiny_folder

    application()
    root = scratch_dir("attnscope-bench-interventions-")
    folder = str(tiny_folder(root, "llama", width=256, layers=4, heads=8, positions=2048))
    figures = {128: ToggleOverRun(folder, 128, per_call=4), 1024: ToggleOverRun(folder, 1024, per_call=2)}
    probes = round_robin({str(n): f for n, f in figures.items()}, ROUNDS, idle=idle)
    result = {"bench": "interventions", "platform": os.environ["QT_QPA_PLATFORM"], "rounds": ROUNDS,
              "model": "tiny random Llama (tests/hf_tiny: 4 layers, 8 heads, 256 wide)",
              "ablated_head": {"kind": "decoder self", "layer": HEAD[0], "head": HEAD[1]},
              **{f"{n}_tokens": f.result() for n, f in figures.items()},
              "goal": "toggle_over_plain_run <= 1.2"}
    result["machine"] = machine(probes)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
