"""The walk of one typed text to the painted tiles of the heads overview: which rooms (modules)
it stays in, in order.

Why: a newcomer who follows a Run from the text box to the overview's painted tiles should pass
each room once, in order (the input bar, the request, the engine's Run, the trace, the state,
the view's drawing, the painting), not go back and forth between them. This prints that walk
so it can be kept short (issue 47 asks for 35 stays or fewer, with at most 12 returns).

How: the real window (offscreen, the bundled GPT, every dock hidden: the overview alone) has a
new text typed and Run; the profile follows it on the GUI thread and on every worker thread the
Run's jobs run on (the output line's job left out: it writes the continuation, not the tiles). A project function (gui/, engine/) is part of the walk when one of its arguments
carries the request on: the text typed, or anything a function of the walk returned (the
trace, a drawing), or an object that holds one of them. Each function counts once, at its
first call, as a static walk of the calls would see it (a loop's calls are one call). A
*stay* is a run of functions of one module; a *return* is a stay in a module already left.

    .venv/bin/python tools/run_walk.py          # prints the walk and one JSON line
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
PROJECT = ("gui", "engine")

from tools import loading_walk  # noqa: E402  (stays and returns counted one way)
TEXT = "The walk of one typed text to the tiles painted on the screen, step by step."


class Walk:
    def __init__(self, text: str):
        self.marks: list = [text]
        self.seen: set = set()
        self.order: list[str] = []
        self.walking: set = set()          # code objects in the walk (their return values carry on)
        self.lock = threading.Lock()

    def carries(self, value, depth: int = 0) -> bool:
        if any(value is m for m in self.marks):
            return True
        if isinstance(value, str):
            return value == self.marks[0]
        if isinstance(value, (tuple, list)) and depth == 0:
            return any(self.carries(v, 1) for v in value[:8])
        if depth == 0 and hasattr(value, "__dict__") and not isinstance(value, type):
            try:
                return any(self.carries(v, 1) for v in list(vars(value).values())[:64])
            except TypeError:
                return False
        return False

    def profile(self, frame, event, arg):
        code = frame.f_code
        if event == "return":
            if code in self.walking and arg is not None and not isinstance(arg, (str, int, float, bool)):
                with self.lock:
                    self.marks.append(arg)
            return
        if event != "call":
            return
        try:
            rel = Path(code.co_filename).resolve().relative_to(ROOT)
        except ValueError:
            return
        if rel.parts[0] not in PROJECT:
            return
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        args = [frame.f_locals.get(n) for n in names if n != "self"]
        if not any(self.carries(a) for a in args):
            return
        with self.lock:
            self.walking.add(code)
            key = (code.co_filename, code.co_firstlineno)
            if key not in self.seen:
                self.seen.add(key)
                self.order.append(f"{'.'.join(rel.with_suffix('').parts)}:{code.co_name}")


def summary(order: list[str]) -> dict:
    return {**loading_walk.summary(order), "functions": len(order)}


def main() -> None:
    os.environ["ATTNSCOPE_SETTINGS"] = str(Path(tempfile.mkdtemp(prefix="attnscope-walk-")) / "settings.ini")
    from bench._app import application, spin

    application()
    import attnscope.gui.worker as worker
    from attnscope.engine.loading import catalog
    from attnscope.gui.window.main_window import MainWindow

    source = next(str(p) for p in catalog.bundled_checkpoints() if "gpt" in p.stem)
    window = MainWindow(source=source, device="cpu")
    for dock in window.docks.values():    # the overview alone: a dock's view, never built, walks no way of its own
        dock.hide()
    window.resize(1600, 1000)
    window.show()
    spin(lambda: window.state.trace is not None and not window.state.pending, 120)
    spin(lambda: worker.active_threads() == 0, 120)
    window.live_box.setChecked(False)

    walk = Walk(TEXT)
    task_run = worker._Task.run

    def profiled_run(task):               # the worker threads are Qt's: each job is profiled as it runs
        if "output" in getattr(task.func, "__name__", ""):       # the output line's job: not the tiles' walk
            return task_run(task)
        sys.setprofile(walk.profile)
        try:
            task_run(task)
        finally:
            sys.setprofile(None)
    worker._Task.run = profiled_run
    sys.setprofile(walk.profile)
    try:
        window.text_edit.setText(TEXT)
        window.run()
        spin(lambda: window.state.trace is not None and window.state.text == TEXT and not window.state.pending, 120)
        spin(lambda: not window.grid.draw_jobs.busy, 120)
        window.grid.plot.grab()                                    # painted
    finally:
        sys.setprofile(None)
        worker._Task.run = task_run
    for room in loading_walk.stays(walk.order):
        print("   ", room)
    print(json.dumps(summary(walk.order)))
    window.close()


if __name__ == "__main__":
    main()
