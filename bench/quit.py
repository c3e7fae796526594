"""Quit, whatever runs. Prints one JSON object.

The app as a user starts it (bench/_quit_child.py: ``main.main`` with ``--model``), on a
random model with Llama-3.2-1B's attention shape (bench/long_context.build), brought to one
of three moments and quit:

- ``idle``: after the first Run, its output written;
- ``run``: inside a Run of ATTNSCOPE_BENCH_TOKENS (4,096) tokens, a forward of seconds;
- ``lens``: the same Run done, the Lens view computing (its forward, then each layer read).

With an X display (run under ``xvfb-run``) the parent presses Ctrl+Q on the window with
xdotool and measures, from the key: ``window_gone_s`` (the window no longer mapped, as X
sees it) and ``process_gone_s`` (the process has exited). Without one, the child closes its
window itself (what Ctrl+Q calls) and ``window_gone_s`` is when close() returned. Goal:
window 0.3 s, process 1 s. ATTNSCOPE_BENCH_ROUNDS rounds of each (default 3).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROUNDS = int(os.environ.get("ATTNSCOPE_BENCH_ROUNDS", "3"))
TOKENS = int(os.environ.get("ATTNSCOPE_BENCH_TOKENS", "4096"))
SCENARIOS = tuple(os.environ.get("ATTNSCOPE_BENCH_SCENARIOS", "idle,run,lens").split(","))
CHILD = Path(__file__).with_name("_quit_child.py")
GIVE_UP_S = 600


def _main_window(pid: int) -> str | None:
    """The X id of the app's main window (its title starts 'attnscope: '), once it is mapped."""
    out = subprocess.run(["xdotool", "search", "--all", "--onlyvisible", "--pid", str(pid), "--name", "^attnscope: "],
                         capture_output=True, text=True)
    return (out.stdout.split() or [None])[-1]


def _mapped(window: str) -> bool:
    """Whether X still shows ``window`` (False once it is unmapped or destroyed)."""
    out = subprocess.run(["xwininfo", "-id", window], capture_output=True, text=True)
    return "IsViewable" in out.stdout


def one(scenario: str, folder: Path, text_file: Path, settings: Path) -> dict:
    on_x = bool(os.environ.get("DISPLAY")) and shutil.which("xdotool") is not None
    env = dict(os.environ, ATTNSCOPE_SETTINGS=str(settings), QT_QPA_PLATFORM="xcb" if on_x else "offscreen")
    child = subprocess.Popen([sys.executable, str(CHILD), scenario, str(folder), str(text_file)]
                             + ([] if on_x else ["self"]), stdout=subprocess.PIPE, text=True, env=env)
    guard = threading.Timer(GIVE_UP_S, child.kill)     # a child that never gets ready (an error dialog)
    guard.start()
    line = child.stdout.readline()
    if not line:
        raise RuntimeError(f"the app never reached the {scenario!r} moment (see its stderr)")
    marks = json.loads(line)
    if on_x:
        window = None
        while window is None:
            window = _main_window(child.pid)
        subprocess.run(["xdotool", "windowfocus", "--sync", window], check=True)
        quit_at = time.monotonic()
        subprocess.run(["xdotool", "key", "ctrl+q"], check=True)   # a real key press (XTEST), as a user's
        gone_at = exited = None
        while exited is None or gone_at is None:
            if gone_at is None and not _mapped(window):
                gone_at = time.monotonic()
            if exited is None and child.poll() is not None:
                exited = time.monotonic()
            time.sleep(0.002)
    else:
        marks.update(json.loads(child.stdout.readline()))
        quit_at, gone_at = marks["quit"], marks["closed"]
        child.wait()
        exited = time.monotonic()
    guard.cancel()
    return {"window_gone_s": round(gone_at - quit_at, 3), "process_gone_s": round(exited - quit_at, 3),
            "exit_code": child.returncode, "on_x": on_x}


def main() -> None:
    from bench.long_context import build, text_of
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory(prefix="attnscope-quit-") as tmp:
        folder = Path(tmp) / "llama-1b-shape"
        build(folder)
        text_file = Path(tmp) / "long.txt"
        text_file.write_text(text_of(AutoTokenizer.from_pretrained(folder), TOKENS))
        results = {}
        for scenario in SCENARIOS:
            rounds = [one(scenario, folder, text_file, Path(tmp) / f"settings-{scenario}-{i}.ini")
                      for i in range(ROUNDS)]
            results[scenario] = {"window_gone_s": [r["window_gone_s"] for r in rounds],
                                 "process_gone_s": [r["process_gone_s"] for r in rounds],
                                 "exit_codes": sorted({r["exit_code"] for r in rounds})}
        print(json.dumps({"bench": "quit", "tokens": TOKENS, "rounds": ROUNDS, "on_x": rounds[0]["on_x"],
                          "load_average": os.getloadavg()[0], "goal": {"window_gone_s": 0.3, "process_gone_s": 1.0},
                          **results}))


if __name__ == "__main__":
    main()
