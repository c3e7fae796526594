"""The walk of one typed text to the painted tiles of the heads overview: which rooms (modules)
it stays in, in order.

Why: a newcomer who follows a Run from the text box to the overview's painted tiles should pass
each room once, in order (the input bar, the request, the engine's Run, the trace, the state,
the view's drawing, the painting), not go back and forth between them. This prints that walk
so it can be kept short (issue 47 asks for 35 stays or fewer, with at most 12 returns).

How: the real window (offscreen, the bundled GPT, every dock hidden: the overview alone) has a
new text typed and Run; the profile follows it on the GUI thread, on every worker thread the
Run's jobs run on (the output line's job left out: it writes the continuation, not the tiles),
on the lanes' threads ``call_on_lane`` hands work to (a drawing prepared on the model's
thread), and on threads of our own. A project function (gui/, engine/) is part of the walk
when one of its arguments, ``self`` included, carries the request on: the text typed, anything
a function of the walk returned (the trace, a drawing), a field of such a record (a drawing's
mosaic; a numpy array also as a view of it, which pyqtgraph keeps), or an object that holds one
of them. So the walk enters the rooms where tiles are made: the pooling (engine.traces),
the drawing (gui.drawing, gui.widgets.mosaic) and the painting (gui.widgets.peak_image).
Each function counts once, at its first call, as a static walk of the calls would see it (a
loop's calls are one call). A *stay* is a run of functions of one module; a *return* is a stay
in a module already left.

Work handed to another thread is read where it was handed over, as a call would be: a job's
functions (and a lane's, inside the job that asked for it) stand together at the point its
``Jobs.start`` / ``call_on_lane`` was reached, not interleaved by the clock with what the GUI
thread did meanwhile. Counted by the clock, the same tree gave 86 or 87 stays from one run to
the next (the overview's pooling on the model lane and the status line's relabelling on the
GUI thread took turns), so the count measured the scheduler as much as the structure.

    .venv/bin/python tools/run_walk.py          # prints the walk and one JSON line (-v: each function)
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


def _is_array(value) -> bool:
    """A numpy array or a torch tensor (a trace's ``shape`` is a method: a trace is a record)."""
    return hasattr(type(value), "__array_interface__") or hasattr(type(value), "data_ptr")


def _memory(value):
    """A numpy array's first byte and size, shared by its views; None for anything else."""
    face = getattr(value, "__array_interface__", None) if _is_array(value) else None
    return (face["data"][0], getattr(value, "nbytes", 0)) if isinstance(face, dict) and face["data"][0] else None


def fields(value) -> list:
    """A record's fields: its ``__dict__``'s values, or its slots' (a frozen dataclass with slots
    has no ``__dict__``); none for an array (data, not a record) or a type."""
    if _is_array(value) or isinstance(value, type):
        return []
    try:
        found = list(vars(value).values())[:64]
    except TypeError:
        found = []
    for cls in type(value).__mro__[:-1]:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and not name.startswith("__"):
                try:
                    found.append(object.__getattribute__(value, name))
                except AttributeError:
                    pass
    return found[:64]


class Walk:
    def __init__(self, text: str):
        self.text = text
        self.marks: list = [text]          # kept alive, so that their ids stay theirs
        self.ids: set[int] = {id(text)}
        self.memory: set = set()           # where marked numpy arrays keep their numbers: their views share it
        self.seen: set = set()
        self.root: list = []               # the GUI thread's walk: steps, and jobs' segments where handed over
        self.current = threading.local()   # .segment: where this thread's steps go
        self.walking: set = set()          # code objects in the walk (their return values carry on)
        self.lock = threading.Lock()

    def mark(self, value, depth: int = 0) -> None:
        """``value`` carries the request on, and so do its fields: a record returned (a trace's
        answer, a drawing) hands its parts on to whoever reads them."""
        if value is None or isinstance(value, (str, int, float, bool, bytes, type)) or id(value) in self.ids:
            return
        if type(value) is tuple and not value:      # one object in all Python: carries nothing
            return
        self.marks.append(value)
        self.ids.add(id(value))
        if _memory(value) is not None:
            self.memory.add(_memory(value))
        if depth > 0:
            return
        if isinstance(value, (tuple, list)):
            parts = list(value[:16])
        elif isinstance(value, dict):
            parts = list(value.values())[:16]
        else:
            parts = fields(value)
        for part in parts:                   # an array among them by its identity (it has no fields)
            self.mark(part, 1)

    def carries(self, value, depth: int = 0) -> bool:
        if id(value) in self.ids:
            return True
        if _memory(value) in self.memory:        # a view of a marked array (pyqtgraph keeps a view of it)
            return True
        if isinstance(value, str):
            return value == self.text
        if isinstance(value, (tuple, list)) and depth == 0:
            return any(self.carries(v, 1) for v in value[:8])
        if depth == 0 and not isinstance(value, type):
            return any(self.carries(v, 1) for v in fields(value))
        return False

    def segment(self) -> list:
        """This thread's segment (the GUI thread's: the root; a thread of no job's: one of its own,
        placed where it first stepped in)."""
        found = getattr(self.current, "segment", None)
        if found is None:
            if threading.current_thread() is threading.main_thread():
                found = self.root
            else:
                found = []
                with self.lock:
                    self.root.append(found)
            self.current.segment = found
        return found

    def hand_over(self) -> list:
        """A job handed to another thread from here: its segment, placed at this point of the walk."""
        child: list = []
        self.segment().append(child)
        return child

    @property
    def order(self) -> list[str]:
        """The walk's steps, each job's where it was handed over; each function once, at its first step."""
        out, seen = [], set()

        def flatten(segment):
            for entry in list(segment):
                if isinstance(entry, list):
                    flatten(entry)
                elif entry[0] not in seen:
                    seen.add(entry[0])
                    out.append(entry[1])
        flatten(self.root)
        return out

    def profile(self, frame, event, arg):
        code = frame.f_code
        if event == "return":
            if code in self.walking and arg is not None and not isinstance(arg, (str, int, float, bool)):
                with self.lock:
                    self.mark(arg)
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
        args = [frame.f_locals.get(n) for n in names]       # ``self`` too: a method of what carries the request
        if not any(self.carries(a) for a in args):
            return
        segment = self.segment()
        with self.lock:
            self.walking.add(code)
            key = (code.co_filename, code.co_firstlineno)
            if (key, id(segment)) not in self.seen:
                self.seen.add((key, id(segment)))
                segment.append((key, f"{'.'.join(rel.with_suffix('').parts)}:{code.co_name}"))

    def on_thread(self, fn, segment: list):
        """``fn`` as handed to another thread, profiled there as it runs (a thread's profile is its
        own), its steps in ``segment``."""
        def run(*args, **kwargs):
            before = getattr(self.current, "segment", None)
            self.current.segment = segment
            sys.setprofile(self.profile)
            try:
                return fn(*args, **kwargs)
            finally:
                sys.setprofile(None)
                self.current.segment = before
        return run


class _Lane:
    """A lane's pool whose work is profiled: what ``call_on_lane`` hands over (a drawing prepared on
    the model's thread) runs under the walk's profile."""

    def __init__(self, pool, walk: Walk):
        self.pool, self.walk = pool, walk

    def start(self, fn, *rest):
        if callable(fn) and not hasattr(fn, "setAutoDelete"):
            fn = self.walk.on_thread(fn, self.walk.hand_over())
        return self.pool.start(fn, *rest)

    def __getattr__(self, name):
        return getattr(self.pool, name)


def summary(order: list[str]) -> dict:
    return {**loading_walk.summary(order), "functions": len(order)}


def measure(text: str = TEXT) -> list[str]:
    """The functions the walk of ``text``, typed and Run in the real window, passed, in order
    (``module:function``); the window is closed after."""
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
    bar = getattr(window, "input_bar", window)     # the text box and the live switch live in the input bar
    bar.live_box.setChecked(False)

    walk = Walk(text)
    task_run, task_init = worker._Task.run, worker._Task.__init__

    def handed_over(task, *args, **kwargs):     # on the thread that starts the job: its place in the walk
        task_init(task, *args, **kwargs)
        task.walk_segment = walk.hand_over()

    def profiled_run(task):               # the worker threads are Qt's: each job is profiled as it runs
        if "output" in getattr(task.func, "__name__", ""):       # the output line's job: not the tiles' walk
            return task_run(task)
        segment = getattr(task, "walk_segment", None)
        if segment is None:                   # a job started before the walk began
            segment = walk.hand_over()
        walk.on_thread(task_run, segment)(task)
    worker._Task.__init__ = handed_over
    worker._Task.run = profiled_run
    lane_pool = worker.lane_pool
    worker.lane_pool = lambda lane: _Lane(lane_pool(lane), walk)    # call_on_lane's work, on its lane
    threading.setprofile(walk.profile)                               # a thread of our own (the estimate's)
    sys.setprofile(walk.profile)
    try:
        bar.text_edit.setText(text)
        window.run()
        spin(lambda: window.state.trace is not None and window.state.text == text and not window.state.pending, 120)
        spin(lambda: not window.grid.draw_jobs.busy, 120)
        window.grid.plot.grab()                                    # painted
    finally:
        sys.setprofile(None)
        threading.setprofile(None)          # type: ignore[arg-type]
        worker._Task.run, worker._Task.__init__ = task_run, task_init
        worker.lane_pool = lane_pool
    window.discard_and_stop()             # its jobs stopped, then the window gone: nothing of it left behind
    window.close()
    window.deleteLater()
    from PySide6.QtCore import QCoreApplication, QEvent
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return walk.order


def main() -> None:
    os.environ["ATTNSCOPE_SETTINGS"] = str(Path(tempfile.mkdtemp(prefix="attnscope-walk-")) / "settings.ini")
    order = measure()
    for step in order if "-v" in sys.argv else loading_walk.stays(order):        # -v: each function
        print("   ", step)
    print(json.dumps(summary(order)))


if __name__ == "__main__":
    main()
