"""Why does a head attend here: one attention score split into (query source x key source) terms.

(Being written: the signature below is the contract the window and the command line use.)
"""
from __future__ import annotations

from typing import Callable, Iterator

from engine.experiments.patching import Progress
from engine.experiments.why_result import ScoreSplit

RUNNER_UP = "runner-up"     # ``versus``: the row's strongest key other than ``key``


def why_steps(loaded, text, kind: str, layer: int, head: int, query: int, key: int, versus=None,
              loadings: bool = False, pair: str | None = None, target: str | None = None, interventions=None,
              stop: Callable[[], bool] | None = None) -> Iterator[Progress]:
    """Yields Progress; returns the ScoreSplit of head ``head`` of ``kind`` layer ``layer`` at
    (query, key) on ``text`` as a Run frames it (``pair``, ``target`` as for trace_text);
    ``versus``: another key, or RUNNER_UP; ``loadings``: the head's loadings over the text too."""
    raise NotImplementedError
    yield


def why(loaded, text, kind, layer, head, query, key, **options) -> ScoreSplit:
    """``why_steps`` run to the end."""
    steps = why_steps(loaded, text, kind, layer, head, query, key, **options)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
