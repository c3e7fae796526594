"""The window's resident memory after each Run of a long text: it comes back after a Run.

A small random Llama (4 layers x 8 heads, 256 wide, 2.4 M parameters, with a chat template, read
as a chat) is opened in the main window, as a user opens a folder; a 4,000-token text file is
opened (File > Open Text File), with every view that reads whole heads shown (Head detail, Head
statistics, Head lines, Rollout, Lens). It is Run five times (each a slightly different text), a
recording of the second Run saved and opened between the second and the third. After each step
the window settles (every job finished, the event loop idle) and its resident memory is read
from /proc.

Goals (checked; the bench exits 1 on a miss):
- after every Run, the window holds at most 2.5 GB (it held 5.4-6.0 GB after the first Run, 11.1
  GB after the second and was killed at 18.3 GB before the trace kept a byte budget);
- Runs 2 to 5 are within 0.5 GB of each other: memory comes back after a Run.

The process sets malloc as attnscope's main() does (engine.runtime.memory.keep_freed_memory), so
what the heap keeps is counted. Prints one JSON object.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._timing import machine, scratch_dir  # noqa: E402  (sets malloc as main() does)
from bench._app import application, spin  # noqa: E402

GOAL_GB = 2.5
SPREAD_GOAL_GB = 0.5
RUNS = 5
VIEWS = ("Head detail", "Head statistics", "Head lines", "Rollout", "Lens")
WORDS = ("the big dog sees the small cat . time flies like an arrow ; fruit flies like a banana . "
         "attention is all you need").split()


def resident_gb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1e6
    return float("nan")


def model_folder(root: Path) -> Path:
    """The tiny chat Llama of the tests, made 256 wide, 4 layers x 8 heads, 8k positions."""
    import tests.helpers.hf_tiny as tiny

    plain = tiny.tiny_folder

    def larger(folder, arch, seed=0, **_sizes):
        return plain(folder, arch, seed, width=256, layers=4, heads=8, positions=8192)
    tiny.tiny_folder = larger
    try:
        return tiny.tiny_chat_folder(root)
    finally:
        tiny.tiny_folder = plain


def long_text(path: Path) -> Path:
    """63 lines of 28 words, line breaks kept: about 4,000 tokens of the tiny BPE."""
    rng = random.Random(0)
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(28)) for _ in range(63)) + "\n")
    return path


def main() -> None:
    root = scratch_dir("attnscope-window-memory-")
    os.environ["ATTNSCOPE_SETTINGS"] = str(root / "settings.ini")
    app = application()
    folder, text = model_folder(root / "models"), long_text(root / "long.txt")

    from attnscope.gui.window.main_window import MainWindow
    from attnscope.gui.worker import active_threads
    from attnscope.engine.traces import reading

    window = MainWindow(source=str(folder), device="cpu")
    window.resize(1600, 1000)
    window.show()
    spin(lambda: window.state.trace is not None, 300)

    def settle() -> float:
        spin(lambda: active_threads() == 0 and not window.state.pending, 900)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            app.processEvents()
        return round(resident_gb(), 3)

    idle = settle()
    window.input_bar.live_box.setChecked(False)
    window.input_bar.chat_box.setChecked(True)
    for title in VIEWS:
        window.docks[title].show()
        window.docks[title].raise_()
        window.dock_layout.view(title)
    settle()
    window.input_bar.open_text(str(text))
    after, steps, tokens = [], [], 0
    for i in range(RUNS):
        if i == 2:   # a recording saved, opened, then replaced by the next Run
            from attnscope.engine.traces.recording_file import save_recording

            path = save_recording(window.state.trace, root / "run.recording.safetensors", replace=True)
            window.recordings.open(str(path))
            steps.append({"step": "recording opened", "rss_gb": settle()})
        if i:
            window.input_bar.text_edit.setPlainText(window.input_bar.text_edit.toPlainText() + (" x" if i % 2 else " y"))
            window.run()
        gb = settle()
        trace = window.state.trace
        tokens = len(reading.query_tokens(trace, trace.kinds[0]))
        after.append(gb)
        steps.append({"step": f"run {i + 1}", "rss_gb": gb, "trace_keeps_mb": round(trace.held_bytes() / 2**20, 1)})
    window.close()
    later = after[1:]
    goals = {"every_run_at_most_gb": GOAL_GB, "runs_2_to_5_within_gb": SPREAD_GOAL_GB}
    met = {"every_run_at_most_gb": max(after) <= GOAL_GB,
           "runs_2_to_5_within_gb": max(later) - min(later) <= SPREAD_GOAL_GB}
    print(json.dumps({"bench": "window_memory", "tokens": tokens, "idle_rss_gb": idle, "steps": steps,
                      "max_after_run_gb": max(after), "spread_runs_2_5_gb": round(max(later) - min(later), 3),
                      "goals": goals, "met": met, "machine": machine()}))
    if not all(met.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
