"""Jobs: run engine work off the GUI thread, one job at a time per Jobs, newest wins.

The engine yields plain data (traces, progress records); callbacks receive it on the GUI
thread. Why our own QRunnable and not a library worker: every error must reach the window
(superqt's generator worker swallows RuntimeError as "worker deleted", which left the
training panel stuck), a superseded request must never run, and a job must be stoppable
inside a step, not only between yields.

- ``start`` supersedes: the running job is cancelled (its late results are dropped) and the
  new one waits until the old one's thread lets go, so one Jobs never runs two jobs at once
  (a decoding session is a generator that one thread at a time may advance). Requests made
  while waiting replace each other: of ten quick Runs, only the newest runs.
- ``stop`` asks the running job to end early but keeps its result (training's Stop).
- A job function with a ``stop`` parameter gets ``stop=<callable>``, true once the job is
  stopped or cancelled, so a long step can end within itself; one with a ``report``
  parameter gets ``report=<callable>``, whose argument reaches ``on_yielded`` as a yielded
  value does (progress from inside a call that cannot yield, such as a model load).
- Every error goes to ``on_error`` (to put the view back in order) and to ``job_failures``,
  whose ``failed(title, message)`` signal the main window shows as a dialog; a Jobs made with
  ``announce=False`` leaves its errors to ``on_error`` alone (a panel that says them itself).

Each Jobs runs on a lane (``MODEL``, ``TRAINING`` or ``SHARED``), because of how torch uses
the CPU: its kernels run on OpenMP, which gives every thread that runs torch a team of helper
threads, as many as there are cores, and two threads running torch at once make two teams
fight for them. Measured on 2 cores (issue 47; bundled translator, a 64-token forward on one
long-lived thread, median of 30): alone 17 ms; with a second thread pooling a recorded
trace's thumbnails meanwhile 43-99 ms; that thread with ``torch.set_num_threads(1)`` 40 ms;
the same pooling queued on the forward's own thread, between forwards, 17 ms. But numpy
drawing wants the other core: sending every drawing of a recorded trace to the model thread
made a Run in the window with every view open take 1.4 s from Run to painted at 512 tokens
(MiniLM), against 0.4-1.0 s with the drawings side by side on the pool. Hence one rule:

**Attention computed from a recording (torch maths that grows with T squared) runs on the
MODEL lane; SHARED never computes it.** tests/gui/test_thread_rule.py holds it: every view draws
a fresh recording, and each computation from it (AttentionCall.scores) is noted with its lane.

- ``MODEL``: every job that runs a model or other torch maths (open, Run, decode, compare,
  the Positions lab, an export's numbers) queues on one thread that never exits, so its team
  lives as long as the process. Jobs of different views take turns there. So does the drawing
  of a trace that still computes a kind from its recording (``drawing_lane``: a long Run):
  views prepare it there whole, one after another, each with the whole team.
- ``TRAINING``: a run takes minutes, and Runs must not wait for it: a thread of its own,
  which exits a few seconds after the run (taking its team with it).
- ``SHARED``: drawing of arrays held whole (a trace that holds its kinds: a short Run, a file),
  writing files, on Qt's global pool, several threads at once: numpy, and torch only to pool
  such host arrays. A job there that needs the model hands that part to the model thread and
  waits (``call_on_lane``).
"""
from __future__ import annotations

import inspect
import sys
import threading
import time
import traceback
import weakref
from collections import deque
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QRunnable, QThreadPool, QTimer, Signal, Slot
import shiboken6

_LIVE: "weakref.WeakSet[Jobs]" = weakref.WeakSet()
_RUNNING: set = set()   # tasks the pool runs: alive until their run() returns, whoever drops them
MIN_THREADS = 4   # the shared pool: one slow drawing never leaves the other views' drawings waiting

MODEL, TRAINING, SHARED = "model", "training", "shared"   # lanes (see the module's docstring)
_EXPIRY_MS = {MODEL: -1, TRAINING: 3000}                    # -1: the thread never exits
_LANES: dict[str, QThreadPool] = {}


def lane_pool(lane: str) -> QThreadPool:
    """The thread pool behind ``lane``: Qt's global pool for SHARED, else a pool of one thread."""
    if lane == SHARED:
        pool = QThreadPool.globalInstance()
        if pool.maxThreadCount() < MIN_THREADS:
            pool.setMaxThreadCount(MIN_THREADS)
        return pool
    pool = _LANES.get(lane)
    if pool is None:
        if lane not in _EXPIRY_MS:
            raise ValueError(f"no lane named {lane!r}: use MODEL, TRAINING or SHARED")
        pool = _LANES[lane] = QThreadPool()
        pool.setMaxThreadCount(1)
        pool.setExpiryTimeout(_EXPIRY_MS[lane])
        pool.setObjectName(f"attnscope-{lane}")
    return pool


_CURRENT = threading.local()   # .lane: the lane whose job this thread is running now


def call_on_lane(lane: str, fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` on ``lane``'s thread; the caller waits for its value (or its
    error, raised here). Called from that lane's own thread it runs at once. For worker
    threads only: the GUI thread must never wait."""
    if getattr(_CURRENT, "lane", None) == lane:
        return fn(*args, **kwargs)
    done, box = threading.Event(), {}

    def run() -> None:
        _CURRENT.lane = lane
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            _CURRENT.lane = None
            done.set()

    lane_pool(lane).start(run)
    done.wait()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def drawing_lane(trace) -> str:
    """Where a drawing of ``trace`` is prepared: MODEL while the trace computes any of its kinds
    from the recording (torch maths on the model's device), SHARED once it holds them as arrays."""
    recording = None if trace is None else trace.recording
    return MODEL if recording is not None and any(recording.computes_on_demand(k) for k in trace.kinds) else SHARED


def active_threads() -> int:
    """How many threads of every lane are running a job now (0 once all work has ended)."""
    return QThreadPool.globalInstance().activeThreadCount() + sum(p.activeThreadCount() for p in _LANES.values())


_COLLECTOR = None     # pyqtgraph's GarbageCollector, once a Jobs exists (see collect_on_gui_thread)


def collect_on_gui_thread() -> None:
    """From now on, Python's cyclic garbage collector runs on the GUI thread only, from a timer
    (pyqtgraph's GarbageCollector: automatic collection off, a 1 s timer collects each generation
    past its threshold). Called on the GUI thread when the first Jobs is made: from then on
    worker threads allocate.

    Why: CPython collects cycles in whichever thread crosses its allocation threshold, and here
    that is almost always a worker: a window opening the bundled GPT and running twice collected
    on worker threads 137 times and on the GUI thread 9. A cycle that holds a Qt object (a state
    or view a caller let go, a plot item dropped from its scene) is then destroyed on a worker
    while the GUI thread paints or dispatches to it: a segfault inside Qt's event loop, with no
    Python frame above it (`make test` crashed so, about one full run in five under load)."""
    global _COLLECTOR
    if _COLLECTOR is None:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        _COLLECTOR = GarbageCollector(interval=1.0)


def collect_if_due() -> None:
    """Collect now what the timer would (the generations past their thresholds): for code that
    runs no event loop for a while on the GUI thread (a test suite between two windows)."""
    if _COLLECTOR is not None:
        _COLLECTOR.check()


class _JobFailures(QObject):
    """One place where every job's error is announced (the window shows them as dialogs)."""
    failed = Signal(str, str)      # title, message


_FAILURES: _JobFailures | None = None


def job_failures() -> _JobFailures:
    global _FAILURES
    if _FAILURES is None or not shiboken6.isValid(_FAILURES):
        _FAILURES = _JobFailures()
    return _FAILURES


def error_message(exc: BaseException) -> str:
    """The user's sentence: our own errors speak for themselves (ValueError and kin carry
    a worded message); anything else also names its type, since its text may be terse."""
    text = str(exc).strip()
    if isinstance(exc, (ValueError, OSError, MemoryError)) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Pacer(QObject):
    """Hands what the workers deliver to the GUI thread one piece per turn of the event loop.

    Why: when a Run's trace arrives, every open view prepares its drawing at once, and their
    results land on the GUI thread together; Qt then runs every queued delivery (each view's
    apply, tens of ms at 512 tokens) in one pass before it paints or reads a key, and the
    window froze for their sum (the first long Run after a short one: 138-221 ms). Through
    a zero timer, each delivery waits until the events already queued (paints, input) are
    handled, so the window answers between two views' updates. Order is kept: one queue
    for every Jobs, so a job's values, its result and its end arrive as they were sent."""

    def __init__(self):
        super().__init__(QCoreApplication.instance())
        self.queue: deque[Callable] = deque()
        self.timer = QTimer(self)
        self.timer.setInterval(0)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self._next)

    def add(self, call: Callable) -> None:
        self.queue.append(call)
        if not self.timer.isActive():
            self.timer.start()

    def _next(self) -> None:
        if self.queue:
            call = self.queue.popleft()
            if self.queue:
                self.timer.start()
            call()


_PACER: _Pacer | None = None


def _pacer() -> _Pacer:
    """The process's one pacer (a child of the application: it lives as long as Qt does)."""
    global _PACER
    if _PACER is None or not shiboken6.isValid(_PACER):
        _PACER = _Pacer()
    return _PACER


def _paced(call: Callable) -> None:
    """Run ``call`` on the GUI thread after what is already queued there (see _Pacer)."""
    _pacer().add(call)


class _Relay(QObject):
    """Lives on the GUI thread: the task emits from its thread, the relay's slots run
    queued on the GUI thread and hand each value to Jobs (paced: _Pacer), tagged with the
    job's ticket.

    A relay outlives its Jobs: it is the pacer's child, not the Jobs's, and deletes itself once
    its task's "finished" (the task's last emit) has reached the GUI thread. Why: a view closed
    while its job ran deleted the Jobs and with it the relay, while the worker thread was inside
    ``emit`` on it; shiboken's check that the object lives and Qt's delivery are two steps, and
    between them the relay was freed: a segfault (300 such closes crashed 5 runs of 6, and
    `make test` crashed on CI). Values for a Jobs that is gone are dropped (``_to_jobs``)."""
    yielded = Signal(object)
    returned = Signal(object)
    errored = Signal(object)
    finished = Signal()

    def __init__(self, jobs: "Jobs", ticket: int, callbacks: dict):
        super().__init__(_pacer())
        self.jobs, self.ticket, self.callbacks = jobs, ticket, callbacks
        self.task: _Task | None = None
        self.yielded.connect(self._on_yielded)
        self.returned.connect(self._on_returned)
        self.errored.connect(self._on_errored)
        self.finished.connect(self._on_finished)

    def _to_jobs(self, method: str, *args) -> None:
        jobs = self.jobs
        _paced(lambda: shiboken6.isValid(jobs) and getattr(jobs, method)(*args))

    @Slot(object)
    def _on_yielded(self, value) -> None:
        self._to_jobs("_deliver", self.ticket, self.callbacks["on_yielded"], value)

    @Slot(object)
    def _on_returned(self, value) -> None:
        self._to_jobs("_deliver", self.ticket, self.callbacks["on_returned"], value)

    @Slot(object)
    def _on_errored(self, exc) -> None:
        self._to_jobs("_failed", self.ticket, self.callbacks["on_error"], exc)

    @Slot()
    def _on_finished(self) -> None:
        self._to_jobs("_task_finished", self.task, self.ticket, self.callbacks["on_finished"])
        self.task = None        # the task held its relay, the relay its task
        self.deleteLater()      # nothing is emitted after "finished"


class _Task(QRunnable):
    def __init__(self, func: Callable, args: tuple, kwargs: dict, relay: _Relay, lane: str = SHARED):
        super().__init__()
        self.lane = lane
        self.setAutoDelete(False)          # Python keeps it alive until Jobs lets go
        self.func, self.args, self.kwargs, self.relay = func, args, kwargs, relay
        self.stop_event = threading.Event()     # stop or cancel: the job may end early
        self.cancel_event = threading.Event()   # cancel: nothing more is delivered
        self.done = threading.Event()           # the thread has let go
        params = accepted_parameters(func)
        if "stop" in params and "stop" not in kwargs:
            kwargs["stop"] = self.stop_event.is_set
        if "report" in params and "report" not in kwargs:
            kwargs["report"] = self._report

    def _report(self, value) -> None:
        """Deliver ``value`` as a yielded one, from inside a call that cannot yield (a model
        load inside transformers reports its progress through a callback)."""
        if not self.cancel_event.is_set():
            self._emit("yielded", value)

    def run(self) -> None:
        _CURRENT.lane = self.lane
        try:
            if inspect.isgeneratorfunction(self.func):
                result = self._drive(self.func(*self.args, **self.kwargs))
            else:
                result = self.func(*self.args, **self.kwargs)
            if not self.cancel_event.is_set():
                self._emit("returned", result)
        except Exception as exc:  # every error is delivered, whatever its type
            if not self.cancel_event.is_set():
                if not isinstance(exc, ValueError):
                    traceback.print_exc(file=sys.stderr)
                self._emit("errored", exc)
        finally:
            _CURRENT.lane = None
            # Let go of the job's inputs: PySide's QThreadPool keeps every runnable it started
            # without auto-delete, and through ``args`` each drawing held its trace (75 MB at
            # 512 tokens) for the rest of the process.
            self.func = self.args = self.kwargs = None
            self._emit("finished")
            self.done.set()
            _RUNNING.discard(self)   # this frame still holds self until run() returns

    def _emit(self, signal: str, *value) -> None:
        """Deliver to the GUI thread. If the receiving Jobs is gone (its view was closed and
        deleted), there is no one to tell: the job stops quietly, and only "finished" still goes,
        so that the relay (alive until then, see _Relay) deletes itself."""
        if not shiboken6.isValid(self.relay.jobs):
            self.cancel_event.set()
            self.stop_event.set()
            if signal != "finished":
                return
        try:
            getattr(self.relay, signal).emit(*value)
        except RuntimeError:   # the application itself is gone (the interpreter's exit)
            self.cancel_event.set()

    def _drive(self, gen) -> Any:
        """Run a generator to its end, delivering each value; cancelled: close it."""
        while True:
            if self.cancel_event.is_set():
                gen.close()
                return None
            try:
                value = next(gen)
            except StopIteration as end:
                return end.value
            if not self.cancel_event.is_set():
                self._emit("yielded", value)


def accepted_parameters(func: Callable) -> set[str]:
    try:
        return set(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return set()


class Jobs(QObject):
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None, title: str = "The work could not finish",
                 lane: str = SHARED, announce: bool = True):
        super().__init__(parent)
        self.title = title                 # the error dialog's title
        self.announce = announce           # errors also to job_failures (the window's dialog)
        self.lane = lane
        collect_on_gui_thread()            # before any worker allocates
        self.pool = lane_pool(lane)        # where our jobs run (see the lanes above)
        self._ticket = 0
        self._task: _Task | None = None    # the job whose thread runs (or is about to)
        self._pending: tuple | None = None # the newest request, waiting for that thread
        self._busy = False
        _LIVE.add(self)

    @property
    def busy(self) -> bool:
        return self._busy

    @property
    def running(self) -> bool:
        """A thread still runs one of our jobs (perhaps a cancelled one that is ending)."""
        return self._task is not None and not self._task.done.is_set()

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)

    def start(self, func: Callable, *args, on_yielded=None, on_returned=None, on_error=None,
              on_finished=None, **kwargs) -> None:
        """Run ``func(*args, **kwargs)`` in the thread pool once the previous job has let go;
        the previous job is cancelled, and an older request still waiting is dropped."""
        self._cancel_running()
        self._ticket += 1
        self._pending = (self._ticket, func, args, kwargs,
                         dict(on_yielded=on_yielded, on_returned=on_returned, on_error=on_error,
                              on_finished=on_finished))
        self._set_busy(True)
        if self._task is None:
            self._launch()

    def _launch(self) -> None:
        ticket, func, args, kwargs, callbacks = self._pending
        self._pending = None
        relay = _Relay(self, ticket, callbacks)
        task = relay.task = _Task(func, args, kwargs, relay, self.lane)
        self._task = task
        _RUNNING.add(task)
        self.pool.start(task)

    def _deliver(self, ticket: int, callback, value) -> None:
        if ticket == self._ticket and callback is not None:
            callback(value)

    def _failed(self, ticket: int, callback, exc: BaseException) -> None:
        if ticket != self._ticket:
            return
        if callback is not None:
            callback(exc)
        if self.announce:
            job_failures().failed.emit(self.title, error_message(exc))

    def _task_finished(self, task: _Task, ticket: int, on_finished) -> None:
        if task is not self._task:
            return
        self._task = None
        if self._pending is not None:
            self._launch()
            return
        if ticket == self._ticket:
            self._set_busy(False)
            if on_finished is not None:
                on_finished()

    def _cancel_running(self) -> None:
        task = self._task
        if task is None:
            return
        task.cancel_event.set()
        task.stop_event.set()
        if self.pool.tryTake(task):   # never started: it never will
            _RUNNING.discard(task)
            self._task = None
            task.relay.deleteLater()
            task.done.set()

    def stop(self) -> None:
        """Ask the running job to end early; what it returns is still delivered."""
        if self._task is not None:
            self._task.stop_event.set()

    def cancel(self) -> None:
        """Cancel the running job and drop a waiting one; nothing more is delivered."""
        self._cancel_running()
        self._pending = None
        self._ticket += 1
        self._set_busy(False)

    def shutdown(self, timeout_s: float = 10.0) -> bool:
        """Cancel and wait for the thread to let go. True when nothing of ours still runs."""
        task = self._task
        self.cancel()
        stopped = task.done.wait(timeout_s) if task is not None else True
        # Drop results still queued for us: delivered during interpreter teardown they crash.
        for relay in _pacer().findChildren(_Relay):
            if relay.jobs is self:
                QCoreApplication.removePostedEvents(relay)
                if stopped:          # its "finished" was one of them: the relay ends here
                    relay.deleteLater()
        if stopped and task is self._task:   # its "finished" was just dropped: let go of it here
            self._task = None
        return stopped


def process_events_until(until: Callable[[], bool], timeout_s: float) -> bool:
    """Run the GUI thread's events until ``until()`` holds; False after ``timeout_s``. For
    code that must wait in place (export, tests, benches), never for the window itself.

    The loop sleeps between events, as ``app.exec()`` does. A loop that polls, as
    ``processEvents(flags, ms)`` does (Qt drops WaitForMoreEvents from that overload), takes
    a core from the workers it waits for: the Neurons view's 512-token forward took 350-590
    ms on 2 cores while one polled, 120 ms while the GUI thread slept. A 5 ms heartbeat
    wakes the loop to look at ``until`` when nothing else happens."""
    deadline = time.monotonic() + timeout_s
    heartbeat = QTimer()
    heartbeat.setInterval(5)
    heartbeat.start()
    try:
        while not until():
            if time.monotonic() > deadline:
                return False
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents
                                           | QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
        return True
    finally:
        heartbeat.stop()


def shutdown_all(timeout_s: float = 10.0) -> bool:
    """Stop every Jobs instance and wait for the thread pools, ``timeout_s`` in all (not per
    job: nine views' Jobs each waiting their own 0.2 s froze the window's Quit for seconds)."""
    deadline = time.monotonic() + timeout_s
    left = lambda: max(0.0, deadline - time.monotonic())  # noqa: E731
    live = [jobs for jobs in list(_LIVE) if shiboken6.isValid(jobs)]
    for jobs in live:          # ask every job to stop first, so they end in parallel
        jobs.cancel()
    ok = all([jobs.shutdown(left()) for jobs in live])
    pools = [QThreadPool.globalInstance(), *_LANES.values()]
    return all([pool.waitForDone(int(left() * 1000)) for pool in pools]) and ok
