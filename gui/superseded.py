"""Work for what is on screen gives way to a newer request (gui.state.AppState.begin_request).

Every job that derives from the trace on screen (a view's drawing, the overview's pooling,
the Neurons view's vectors) is cancelled when a newer Run, model or recording is asked for:
it would be thrown away when the new trace comes, and meanwhile it holds a core or the model
thread the new request needs. If that request ends without a new trace (stopped with Esc,
failed), the cancelled work is asked again, since what it was for is still on screen.
"""
from __future__ import annotations

from typing import Callable


def gives_way(state, jobs, again: Callable[[], object]) -> None:
    """Cancel ``jobs`` on each newer request while it works; call ``again()`` when that request
    ends and ``jobs`` was cancelled for it and has not started anything since."""
    cancelled = [False]

    def started() -> None:
        if jobs.busy:
            jobs.cancel()
            cancelled[0] = True

    def ended() -> None:
        if cancelled[0] and not jobs.busy:
            again()
        cancelled[0] = False

    state.request_started.connect(started)
    state.request_ended.connect(ended)
