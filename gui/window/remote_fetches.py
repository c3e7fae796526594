"""A remote trace's later jobs in the window: progress in the status line and Stop (Esc), like a Run.

A view of an ``ndif:`` Run that needs query rows (or overview pixels) not fetched asks the trace
(engine.remote.RemoteTrace), which sends one more job from that view's drawing, on the model
lane (gui.worker's rule: the trace computes there). Before it goes the trace says what will
travel and how long the last job took (the Run's ``say``); here its ``report`` records
(("fetch", 0, 1) as it goes, ("fetch", 1, 1) when it is back) reach the GUI thread as a signal
and the busy label says what is running. Esc (``stop``) stops it: the job in flight is dropped
when its answer comes (nnsight cannot call a job back) and the views' drawings still waiting
for the model lane are cancelled (only their drawings: a Patching run goes on), so no other job follows; the trace keeps only what it held.
"""
from __future__ import annotations

import re

from PySide6.QtCore import QObject, Signal

from attnscope.gui.drawing.prepared import PreparedView

FETCHING = "fetching from {model}… (Esc stops)"
# A remote Run's note, kept in a recording of it, that no longer holds once no model is behind it.
_FETCHED_LATER = re.compile(r"q of query rows [\d,]+-[\d,]+ is here, others are fetched when a view asks\.")
WHOLE_FILE = "the recording holds every query row, so nothing is fetched."
PART_FILE = "no model is behind the recording to fetch the rows it does not hold."


def shown_notes(state, trace) -> list[str]:
    """The trace's notes as the window shows them: a recording of an ``ndif:`` Run opened from
    its file said its rows "are fetched when a view asks", though no model is there to fetch
    any and a whole recording holds every row (issue 53); that clause says what holds now."""
    notes = list(trace.notes) if trace is not None else []
    if state.recording is None:
        return notes
    partial = any("no model is here to fetch" in note for note in notes)   # the loader's note for some rows only
    return [_FETCHED_LATER.sub(PART_FILE if partial else WHOLE_FILE, note) for note in notes]


class RemoteFetches(QObject):
    """Follows the window's trace: a remote one reports its jobs here."""

    progressed = Signal(object)       # ("fetch", done, total), from the model lane

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.busy = False
        self.notice: str | None = None    # the last thing a remote job said in the status bar
        self.progressed.connect(self._show)
        window.state.trace_changed.connect(self._follow)
        window.state.request_ended.connect(self._said_over)
        window.opening.remote_notices.said.connect(self._heard)

    def _heard(self, text: str) -> None:
        self.notice = text

    def _said_over(self, *_args) -> None:
        """A Run's "Running ... on 13 tokens" (or a fetch's "... will travel back") is about that
        job: once it is over the status bar stops saying it (it stayed 15 s, after the Run)."""
        bar = self.window.statusBar()
        if self.notice is not None and bar.currentMessage() == self.notice:
            bar.clearMessage()
        self.notice = None

    def _follow(self, trace) -> None:
        if trace is not None and trace.fetcher is not None:
            trace.fetcher.follow(self.progressed.emit)     # a RemoteTrace's later jobs report here

    def _show(self, record) -> None:
        _stage, done, total = record
        self.busy = done < total
        trace = self.window.state.trace
        name = trace.model_name if trace is not None else "the server"
        self.window.status_line.busy_label.setText(FETCHING.format(model=name) if self.busy else "")
        if not self.busy:
            self._said_over()

    def stop(self) -> bool:
        """Esc: stop the job in flight and every view's drawing waiting for one; True when one was."""
        trace = self.window.state.trace
        if not self.busy or trace is None or trace.fetcher is None:
            return False
        trace.fetcher.stop()
        for view in self.window.views.values():
            if isinstance(view, PreparedView):            # a view drawn from the trace: its drawing, not its other work
                for jobs in view.drawing_jobs():
                    if jobs.busy:
                        jobs.cancel()
        self.window.statusBar().showMessage(f"Fetching from {trace.model_name} stopped; nothing of it was kept, and "
                                            "the views show what they drew before, greyed (click one to draw it).",
                                            6000)
        return True
