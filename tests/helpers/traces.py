"""Traces the tests share: a long-enough text, a recording that has computed nothing yet (as a
long one starts), and numpy's top-k of a dense head (the reference the strongest keys equal)."""
from __future__ import annotations

import numpy as np

from attnscope.engine.traces.recorded import RecordedTrace

TEXT = "the big dog sees the small cat and the cat sees the big dog because it is small"


def fresh_recording(trace) -> RecordedTrace:
    """The same recording, nothing computed yet: every tile read from q and k, as a long trace."""
    return RecordedTrace(trace.calls, model_name=trace.model_name, family=trace.family,
                         source_tokens=trace.source_tokens, target_tokens=trace.target_tokens)


def top_k_reference(head: np.ndarray, k: int, allowed: np.ndarray | None = None):
    """numpy's top-k of a dense (Tq, Tk) head: keys (ties in key order), weights, leftover."""
    cols = np.arange(head.shape[1]) if allowed is None else np.flatnonzero(allowed)
    keys = cols[np.argsort(-head[:, cols], axis=1, kind="stable")[:, :k]]
    weights = np.take_along_axis(head, keys, 1)
    return keys, weights, head.sum(1, dtype=np.float64) - weights.sum(1, dtype=np.float64)
