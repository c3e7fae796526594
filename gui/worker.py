"""Jobs: run engine work off the GUI thread, one job at a time, through superqt workers.

The engine yields plain data (traces, progress records); callbacks receive it on the GUI
thread. Starting a new job cancels the old one, and whatever the old one still delivers is
dropped, so a slow forward pass can never overwrite a newer one. Generators stop between
yields when cancelled; a plain function runs to its end but its result is discarded.
"""
from __future__ import annotations

import inspect
import threading
import weakref
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QObject, QThreadPool, Qt, Signal, Slot
from superqt.utils import create_worker
import shiboken6

_LIVE: "weakref.WeakSet[Jobs]" = weakref.WeakSet()


class _Relay(QObject):
    """Lives on the GUI thread; worker signals reach it queued, tagged with their job."""

    def __init__(self, jobs: "Jobs", ticket: int, callbacks: dict[str, Callable | None]):
        super().__init__(jobs)
        self._jobs, self._ticket, self._cb = jobs, ticket, callbacks

    def _current(self) -> bool:
        return self._jobs._ticket == self._ticket

    @Slot(object)
    def yielded(self, value: Any) -> None:
        if self._current() and self._cb["on_yielded"]:
            self._cb["on_yielded"](value)

    @Slot(object)
    def returned(self, value: Any) -> None:
        if self._current() and self._cb["on_returned"]:
            self._cb["on_returned"](value)

    @Slot(object)
    def errored(self, exc: BaseException) -> None:
        if self._current() and self._cb["on_error"]:
            self._cb["on_error"](exc)

    @Slot()
    def finished(self) -> None:
        if self._current():
            self._jobs._set_busy(False)
            if self._cb["on_finished"]:
                self._cb["on_finished"]()
        self.deleteLater()


class Jobs(QObject):
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._ticket = 0
        self._worker = None
        self._done: threading.Event | None = None
        self._busy = False
        _LIVE.add(self)

    @property
    def busy(self) -> bool:
        return self._busy

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)

    def start(self, func: Callable, *args, on_yielded=None, on_returned=None, on_error=None,
              on_finished=None, **kwargs) -> None:
        """Run ``func(*args, **kwargs)`` in the thread pool; cancel whatever ran before."""
        self.cancel()
        self._ticket += 1
        relay = _Relay(self, self._ticket, dict(on_yielded=on_yielded, on_returned=on_returned,
                                                 on_error=on_error, on_finished=on_finished))
        worker = create_worker(func, *args, _start_thread=False, _ignore_errors=True, **kwargs)
        done = threading.Event()
        # Set from the worker thread itself, so shutdown() can wait without an event loop.
        worker._finished.connect(lambda *_: done.set(), Qt.ConnectionType.DirectConnection)
        if inspect.isgeneratorfunction(func):
            worker.yielded.connect(relay.yielded)
        worker.returned.connect(relay.returned)
        worker.errored.connect(relay.errored)
        worker.finished.connect(relay.finished)
        self._worker, self._done = worker, done
        self._set_busy(True)
        worker.start()

    def cancel(self) -> None:
        """Ask the running job to stop; its late results are ignored."""
        if self._worker is not None:
            self._worker.quit()
            self._ticket += 1
            self._worker = None
            self._set_busy(False)

    def shutdown(self, timeout_s: float = 10.0) -> bool:
        """Cancel and wait for the thread to let go. True when nothing of ours still runs."""
        done = self._done
        started = self._worker is not None and self._worker.is_running
        self.cancel()
        stopped = done.wait(timeout_s) if done is not None and started else True
        # Drop results still queued for us: delivered during interpreter teardown they crash.
        for relay in self.findChildren(_Relay):
            QCoreApplication.removePostedEvents(relay)
        return stopped


def shutdown_all(timeout_s: float = 10.0) -> bool:
    """Stop every Jobs instance and wait for the thread pool (the window calls this on close)."""
    # A Jobs whose widget is gone may still have a Python wrapper: skip its deleted C++ side.
    ok = all([jobs.shutdown(timeout_s) for jobs in list(_LIVE) if shiboken6.isValid(jobs)])
    return QThreadPool.globalInstance().waitForDone(int(timeout_s * 1000)) and ok
