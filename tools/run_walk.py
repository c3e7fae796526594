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
of them, or a tensor torch made from one (a torch function mode carries the request through
torch's own operations: the framed ids made a tensor, the embedding, each layer's output, so the
model's forward is followed for what it computes from the text). So the walk enters the rooms
where tiles are made: the pooling (engine.traces), the drawing (gui.drawing, gui.widgets.mosaic)
and the painting (gui.widgets.peak_image).
Each function counts once, at its first call, as a static walk of the calls would see it (a
loop's calls are one call). A *stay* is a run of functions of one module; a *return* is a stay
in a module already left.

Work handed to another thread is read where it was handed over, as a call would be: a job's
functions (and a lane's, inside the job that asked for it) stand together at the point its
``Jobs.start`` / ``call_on_lane`` was reached, not interleaved by the clock with what the GUI
thread did meanwhile. Counted by the clock, the same tree gave 86 or 87 stays from one run to
the next (the overview's pooling on the model lane and the status line's relabelling on the
GUI thread took turns), so the count measured the scheduler as much as the structure.

Two counts are printed. "all": every function the request passed through, as above. "to_tiles":
the walk kept to what leads to the painted tiles (issue 54's "typed text to the painted tiles"),
counted by call: start from the painter (``peak_image.paint``) and every call that handed on the
image it paints before it was first painted (the drawing applied, settled), then go back along
what each kept call read (a value another call returned or an ``__init__`` built, seen in its
arguments, a record's fields or a dict of lists of them: the recorded calls), along what its
callees returned to it (anything but None: a str or a bool cannot be followed, so it counts as
read) and to its caller (a job: the call that handed it over). Left out are calls whose results
go elsewhere: the status line's words, the atlas action, the output row, the notes, the remote
fetches, the Run's progress and stop check, help's event filter. Counted by function, a function called on the way (loaded.device) would have drawn in
every other caller of it (the status line); counted by call it does not. Why both: "all" is what
a newcomer stepping through a Run in a debugger sees, side branches included; "to_tiles" is the
path of the text to the tiles the issue asks to be short. A check whose result is returned
(the memory estimate) stays in: by the conservative rule above its caller reads it.

    .venv/bin/python tools/run_walk.py          # the walk, one JSON line {"all": ..., "to_tiles": ...}
    .venv/bin/python tools/run_walk.py --tiles  # the same, the "to_tiles" walk shown (-v: each function)
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
        # For the count "to the tiles": who handed each value on, and what each function read.
        # Counted by call, not by function: a function called on the way to the tiles and again
        # by the status line leads only its first caller there.
        self.producer: dict[int, int] = {}     # id of a marked value (or a built record) -> the call that gave it
        self.memory_producer: dict = {}        # a marked array's memory -> the call that gave it
        self.built: list = []                  # records an ``__init__`` of the walk built: kept alive for their ids
        self.uses: dict[int, set] = {}         # call -> the calls whose results it read, and its caller
        self.function: list[tuple] = []        # call -> its function's key
        self.names: dict[tuple, str] = {}      # function -> "module:function"
        self.parents: dict[int, int | None] = {}     # id of a job's segment -> the call that handed it over

    def mark(self, value, depth: int = 0, by: int | None = None) -> None:
        """``value`` carries the request on, and so do its fields: a record returned (a trace's
        answer, a drawing) hands its parts on to whoever reads them. ``by``: the function that
        returned it (the first to hand a value on is its producer)."""
        if value is None or isinstance(value, (str, int, float, bool, bytes, type)) or id(value) in self.ids:
            return
        if type(value) is tuple and not value:      # one object in all Python: carries nothing
            return
        self.marks.append(value)
        self.ids.add(id(value))
        if by is not None:
            self.producer.setdefault(id(value), by)
        if _memory(value) is not None:
            self.memory.add(_memory(value))
            if by is not None:
                self.memory_producer.setdefault(_memory(value), by)
        if depth > 0:
            return
        if isinstance(value, (tuple, list)):
            parts = list(value[:16])
        elif isinstance(value, dict):
            parts = list(value.values())[:16]
        else:
            parts = fields(value)
        for part in parts:                   # an array among them by its identity (it has no fields)
            self.mark(part, 1, by)

    def built_by(self, value, by: int) -> None:
        """``value`` was built by ``by`` (an ``__init__`` of the walk): a constructor hands its
        record on as a return would, though Python returns None from it. Not marked: the count
        of all the walk stays what it was."""
        if value is not None and id(value) not in self.producer:
            self.built.append(value)
            self.producer[id(value)] = by

    def sources(self, value, depth: int = 0) -> set:
        """The functions whose results ``value`` holds: itself, its items (a dict of lists of
        recorded calls: two levels) and, for a record, its fields."""
        found = set()
        if id(value) in self.producer:
            found.add(self.producer[id(value)])
        if _memory(value) in self.memory_producer:
            found.add(self.memory_producer[_memory(value)])
        if depth >= 2 or isinstance(value, (str, bytes, int, float, bool, type)) or value is None or _is_array(value):
            return found
        if isinstance(value, (tuple, list)):
            parts = list(value[:16])
        elif isinstance(value, dict):
            parts = list(value.values())[:64]
        elif depth == 0:
            parts = fields(value)
        else:
            parts = []
        for part in parts:
            found |= self.sources(part, depth + 1)
        return found

    def to_tiles(self, painted: str = "gui.widgets.peak_image:paint") -> list[str]:
        """The walk kept to the functions whose results flow into the painted tiles, and the
        calls that lead to them: from ``painted`` back along what each function read and who
        called it (a job: who handed it over). Left out: a function whose results go elsewhere
        (the status line's words, the atlas action, the notes, help) and a check that returns
        nothing the tiles read (the memory estimate)."""
        kept = {c for c, key in enumerate(self.function) if self.names[key] == painted}
        image = set().union(*(self.uses.get(c, set()) for c in kept))     # the calls that made what is painted
        first = min(kept, default=0)
        kept |= {c for c, read in self.uses.items() if read & image and c < first}   # and each that handed it on
        todo = list(kept)
        while todo:
            for source in self.uses.get(todo.pop(), ()):
                if source not in kept:
                    kept.add(source)
                    todo.append(source)
        return self.ordered({self.function[c] for c in kept})

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
        stack = self.stack()
        self.parents[id(child)] = stack[-1][1] if stack else None
        return child

    @property
    def order(self) -> list[str]:
        """The walk's steps, each job's where it was handed over; each function once, at its first step."""
        return self.ordered(None)

    def ordered(self, kept: set | None) -> list[str]:
        """The walk's steps (only the functions in ``kept``, unless None), each job's where it was
        handed over; each function once, at its first step."""
        out, seen = [], set()

        def flatten(segment):
            for entry in list(segment):
                if isinstance(entry, list):
                    flatten(entry)
                elif entry[0] not in seen and (kept is None or entry[0] in kept):
                    seen.add(entry[0])
                    out.append(entry[1])
        flatten(self.root)
        return out

    def stack(self) -> list:
        """This thread's walk calls now running: (frame, call); a job's starts with the call that
        handed it over (frame None)."""
        found = getattr(self.current, "stack", None)
        if found is None:
            found = self.current.stack = []
        return found

    def profile(self, frame, event, arg):
        code = frame.f_code
        if event == "return":
            stack = self.stack()
            call = stack.pop()[1] if stack and stack[-1][0] is frame else None
            if code in self.walking and arg is not None and not isinstance(arg, (str, int, float, bool)):
                with self.lock:
                    self.mark(arg, 0, call)
            if call is not None and code.co_name == "__init__" and code.co_argcount:
                with self.lock:
                    self.built_by(frame.f_locals.get(code.co_varnames[0]), call)
            caller = stack[-1][1] if stack else self.parents.get(id(self.segment()))
            if call is not None and caller is not None and (arg is not None or code.co_name == "__init__"):
                with self.lock:              # what a function returns (or builds), its caller reads
                    self.uses.setdefault(caller, set()).add(call)
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
        key = (code.co_filename, code.co_firstlineno)
        stack = self.stack()
        caller = stack[-1][1] if stack else self.parents.get(id(segment))
        with self.lock:
            call = len(self.function)
            self.function.append(key)
            stack.append((frame, call))
            self.walking.add(code)
            name = f"{'.'.join(rel.with_suffix('').parts)}:{code.co_name}"
            self.names[key] = name
            read = self.uses.setdefault(call, set())
            for a in args:
                read |= self.sources(a)
            if caller is not None:
                read.add(caller)
            if (key, id(segment)) not in self.seen:
                self.seen.add((key, id(segment)))
                segment.append((key, name))

    def on_thread(self, fn, segment: list):
        """``fn`` as handed to another thread, profiled there as it runs (a thread's profile is its
        own), its steps in ``segment``."""
        def run(*args, **kwargs):
            before, stack = getattr(self.current, "segment", None), getattr(self.current, "stack", None)
            self.current.segment = segment
            parent = self.parents.get(id(segment))
            self.current.stack = [] if parent is None else [(None, parent)]
            sys.setprofile(self.profile)
            try:
                with carrying(self):
                    return fn(*args, **kwargs)
            finally:
                sys.setprofile(None)
                self.current.segment, self.current.stack = before, stack
        return run


def carrying(walk: "Walk"):
    """A torch function mode under which what torch makes from a value that carries the request
    carries it on (the framed ids made a tensor, its embedding, each layer's output): the walk
    follows the text through the model's forward, not only through what project functions return.
    Without it the forward was seen only because one function returned the attention modules (the
    sites counted for progress), and lost whole when that moved (e063323)."""
    from torch.overrides import TorchFunctionMode

    class Carrying(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if any(walk.carries(a) for a in (*args, *kwargs.values())):
                stack = walk.stack()
                by = stack[-1][1] if stack else None
                with walk.lock:
                    for part in (out if isinstance(out, (tuple, list)) else (out,)):
                        if hasattr(type(part), "data_ptr"):
                            walk.mark(part, 0, by)
            return out
    return Carrying()


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
    return walked(text).order


def walked(text: str = TEXT) -> Walk:
    """The walk of ``text``, typed and Run in the real window (``.order``: all of it;
    ``.to_tiles()``: what leads to the painted tiles); the window is closed after."""
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
    return walk


def main() -> None:
    os.environ["ATTNSCOPE_SETTINGS"] = str(Path(tempfile.mkdtemp(prefix="attnscope-walk-")) / "settings.ini")
    walk = walked()
    order, tiles = walk.order, walk.to_tiles()
    shown = tiles if "--tiles" in sys.argv else order
    for step in shown if "-v" in sys.argv else loading_walk.stays(shown):        # -v: each function
        print("   ", step)
    print(json.dumps({"all": summary(order), "to_tiles": summary(tiles)}))


if __name__ == "__main__":
    main()
