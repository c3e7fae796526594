"""Drawing prepared off the GUI thread: the rule every trace view follows.

Why: at 512 tokens, building a view's image (colour codes for 72 heads, line geometry,
rollout, statistics) takes tens to hundreds of milliseconds; on the GUI thread that is a
frozen window. So a view splits its redraw in two:

- ``drawing_job()`` (GUI thread, cheap): what to draw, as a module-level function and its
  arguments, a snapshot of the trace, the selection and the view's options; or None when
  there is nothing to show.
- that function runs in the view's own ``Jobs`` (a worker thread) and returns plain arrays
  and strings, never Qt objects;
- ``apply_drawing(drawing)`` (GUI thread): hands the finished arrays to the plot items.

A newer redraw supersedes one still waiting (Jobs' rule), so dragging a threshold never
piles up work. A view that needs every head of a kind at once, asked of a trace too long
for that (engine.traces.base.TraceTooLarge), is not an error: it says so in the view, with
the numbers, and the views that pool or zoom draw as usual. ``DRAWN_OFF_THREAD`` lists the preparing functions, for the test that checks
none of them runs on the GUI thread.

One rule for what a view shows (issue 53): a view drawn from a trace that is no longer current
is greyed, with STALE_NOTE over it, until its new drawing lands. It holds wherever the trace
changes or a request is in flight (a Run of a new text, a model, a recording opened) and where
the new drawing never comes (its job stopped: Esc during a remote fetch, a cancelled job): the
base keeps, for each drawing, the state's ``trace_id`` it was asked for, and compares it with the
state's on every change. Its readout is cleared, and the veil (gui.views.stale_cover) takes the
mouse, so nothing old is read as current.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtWidgets import QWidget

from attnscope.gui.drawing.settling import paint_again, settle
from attnscope.gui.superseded import gives_way
from attnscope.gui.views.stale_cover import StaleCover
from attnscope.gui.worker import SHARED, Jobs, accepted_parameters, call_on_lane, drawing_lane, process_events_until

DRAWN_OFF_THREAD: list[Callable] = []
HOLD_PAINT = True   # a view waiting for its new drawing does not paint its old one meanwhile
HOLD_MS = 250       # ... for at most this long
VEIL_DELAY_MS = 150  # a view stale this long is greyed (a short text's drawing lands sooner)
# What a greyed view says (the overview's progress line says the same, in brackets).
STALE_NOTE = "Greyed: the previous text's, shown until the new drawing is in."
STOPPED_NOTE = "Greyed: the previous text's. Drawing the text on screen was stopped: click here to draw it."


@dataclass
class Refused:
    """What a drawing job hands back when the trace is too long for the view: the reason."""
    reason: str


def _guarded(func: Callable, *args, lane: str = SHARED, report=None, stop=None) -> Any:
    """``func(*args)`` in the worker, a too-long trace turned into a Refused drawing. A
    preparation that takes ``report`` / ``stop`` (the overview's pooling: seconds at 8k
    tokens) gets the job's: its progress reaches ``drawing_progress``, and a newer redraw
    ends it between two layers instead of after. ``lane``: where it runs (gui.worker's rule
    for threads: a trace that computes from its recording is drawn on the model thread); one
    superseded while it waited there is dropped."""
    from attnscope.engine.traces import TraceTooLarge

    params = accepted_parameters(func)
    extra = {name: value for name, value in (("report", report), ("stop", stop)) if name in params}
    try:
        if lane != SHARED:
            return call_on_lane(lane, lambda: None if stop is not None and stop() else func(*args, **extra))
        return func(*args, **extra)
    except TraceTooLarge as exc:
        return Refused(str(exc))


def prepares(func: Callable) -> Callable:
    """Mark ``func`` as a drawing preparation (runs in a worker, returns plain data)."""
    DRAWN_OFF_THREAD.append(func)
    return func


class PreparedView:
    """Mixin for a QWidget view; call ``_init_prepared`` in ``__init__``."""

    draw_jobs: Jobs
    FOLLOWS_TRACE = True      # drawn from the trace (False: from settings alone, never stale with it)

    # The trace and the selected kind live in the view's AppState (``self.state``); read them.
    @property
    def trace(self):
        return self.state.trace

    @property
    def kind(self) -> str | None:
        return self.state.kind if self.state.trace is not None else None

    def _init_prepared(self, title: str, lane: str = SHARED) -> None:
        """``lane``: SHARED for numpy drawing; MODEL when the preparation runs torch (see gui.worker)."""
        self.draw_jobs = Jobs(self, f"{title} could not be drawn", lane=lane)
        self.draw_jobs.busy_changed.connect(lambda busy: busy or paint_again(self))
        self.drawing: Any = None        # what is on screen now (the last applied drawing)
        self._drawn_trace = None        # the trace it was drawn from
        self._asked_id = self._drawn_id = -1   # state.trace_id of the drawing asked for, and of the one shown
        self.stale_cover: StaleCover | None = None   # made the first time the view is greyed
        self._veil_timer = QTimer(self, singleShot=True, interval=VEIL_DELAY_MS)
        self._veil_timer.timeout.connect(self._veil)
        # A newer request ends the drawing on its way (the overview's pooling of a long text:
        # seconds, between two layers) instead of leaving it to take the cores from the new Run.
        gives_way(self.state, self.draw_jobs, self.redraw)
        # Bound methods, not lambdas: Qt drops them with the view (the state outlives views).
        self.draw_jobs.busy_changed.connect(self.show_staleness)
        for signal in (self.state.request_started, self.state.request_ended, self.state.trace_changed):
            signal.connect(self.show_staleness)

    def drawing_job(self) -> tuple | None:
        raise NotImplementedError

    # ---- the one rule: what is shown is current, or greyed and said so ------------------------
    @property
    def stale(self) -> bool:
        """True while the drawing on screen is not the current trace's: a request is in flight,
        or the trace changed and its drawing has not landed (or was stopped)."""
        if not self.FOLLOWS_TRACE or self.drawing is None:
            return False
        return self.state.pending or self._drawn_id != self.state.trace_id

    def stale_target(self) -> QWidget:
        """The widget greyed while stale: the view's picture (its export target), else all of it."""
        target = getattr(self, "export_target", None)
        return target() if callable(target) else self

    def stale_sentence(self) -> str:
        stopped = not self.state.pending and not self.draw_jobs.busy
        return STOPPED_NOTE if stopped else STALE_NOTE

    def forget_readout(self) -> None:
        """The hovered cell's words go when the picture goes stale (they were the old text's)."""
        readout = getattr(self, "readout", None)
        if readout is not None:
            readout.setText(" ")

    def _draw_stopped(self) -> None:
        """The veil clicked: a drawing that was stopped (Esc) is asked again; one on its way waits."""
        if self.stale and not self.state.pending and not self.draw_jobs.busy:
            self.redraw()

    def show_staleness(self, *_args) -> None:
        """Grey the view with the sentence while it is stale (after VEIL_DELAY_MS: a short text's
        Run, typed live, is drawn sooner, and a veil on every keystroke flickered); show it
        plainly once current. The readout goes at once."""
        if not self.stale:
            self._veil_timer.stop()
            if self.stale_cover is not None:
                self.stale_cover.uncover()
            return
        if self.stale_cover is not None and self.stale_cover.isVisible():
            self.stale_cover.cover(self.stale_sentence())       # the sentence may change (stopped)
        elif not self._veil_timer.isActive():
            self.forget_readout()
            self._veil_timer.start()

    def _veil(self) -> None:
        if not self.stale:
            return
        if self.stale_cover is None or self.stale_cover.target is not self.stale_target():
            if self.stale_cover is not None:
                self.stale_cover.uncover()
            self.stale_cover = StaleCover(self.stale_target())
            self.stale_cover.clicked.connect(self._draw_stopped)
        self.stale_cover.cover(self.stale_sentence())

    def drawing_jobs(self) -> list[Jobs]:
        """The jobs that draw this view from the trace (what a remote trace's fetch runs inside):
        Esc during a fetch cancels these, never a view's other work (a Patching run)."""
        return [self.draw_jobs]

    def apply_drawing(self, drawing: Any) -> None:
        raise NotImplementedError

    def clear_drawing(self) -> None:
        raise NotImplementedError

    def redraw(self) -> None:
        job = self.drawing_job()
        if job is None:
            self.draw_jobs.cancel()
            self.drawing = None
            self.clear_drawing()
            self.show_staleness()
            return
        if HOLD_PAINT and self.trace is not self._drawn_trace and self.isVisible() and self.updatesEnabled():
            # A new trace's drawing is on its way: the old one is not painted again meanwhile
            # (the first long Run after a short one resized every view, and each painted its
            # old picture at the new size first). Never longer than HOLD_MS, for a drawing that
            # takes long; a zoom or a threshold on the same trace is painted as it goes.
            self.setUpdatesEnabled(False)
            QTimer.singleShot(HOLD_MS, self, lambda: paint_again(self))
        self._asked_id = self.state.trace_id
        self.draw_jobs.start(_guarded, *job, lane=drawing_lane(self.trace),
                             on_returned=self._applied, on_yielded=self.drawing_progress)

    def drawing_progress(self, record) -> None:
        """How far a long preparation is (("overview", done, total)); a view may say so."""

    def _applied(self, drawing: Any) -> None:
        self._drawn_id = self._asked_id
        if isinstance(drawing, Refused):
            self.drawing = None
            self.clear_drawing()
            self.show_refusal(drawing.reason)
            self.show_staleness()
            return
        self.drawing = drawing
        self._drawn_trace = self.trace
        # Said before the drawing is applied (it changes nothing staleness reads), so the base is
        # done with it before the view's part: current, the veil goes; stale (a newer request is
        # on its way), the readout the drawing writes is the old text's and goes too.
        stale = self.stale
        self.show_staleness()
        self.apply_drawing(drawing)
        if stale:
            self.forget_readout()
        paint_again(self)            # updates on again, then laid out: the one paint (later, from the
        settle(self)                 # event loop) is at the new size

    def show_refusal(self, reason: str) -> None:
        """Say in the view why it draws nothing for this trace (its note, else its readout)."""
        label = getattr(self, "note", None) or getattr(self, "readout", None)
        if label is not None:
            label.setText(reason)
        self.setToolTip(reason)

    def closeEvent(self, event) -> None:
        self.draw_jobs.shutdown()
        super().closeEvent(event)


def wait_until_drawn(root: QWidget, timeout_s: float = 60.0) -> bool:
    """Run the event loop until every job under ``root`` has finished and applied its result
    (for offscreen export and benchmarks, which save or grab right after): a prepared view's
    drawing, and the work a view starts on the model thread before it can draw (the Neurons
    view's forward). True if all did."""
    jobs = root.findChildren(Jobs)
    if not process_events_until(lambda: not any(j.busy for j in jobs), timeout_s):
        return False
    QCoreApplication.processEvents()   # the paint events the last result posted
    return True
