"""Long engine work is a generator that yields progress and returns its result (a training
run, a patching experiment); the window's worker advances it step by step, headless callers
drive it to its end here."""
from __future__ import annotations
from attnscope.engine.inputs import check_kind

from typing import Callable, Generator


def drive(gen: Generator, on_progress: Callable | None = None):
    """Run ``gen`` to its end, handing each yielded value to ``on_progress``; its return value."""
    check_kind(gen, Generator, "gen", "a generator of progress records")
    while True:
        try:
            progress = next(gen)
        except StopIteration as done:
            return done.value
        if on_progress is not None:
            on_progress(progress)
