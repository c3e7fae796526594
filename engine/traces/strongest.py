"""Each row's ``k`` largest weights, in numpy: the order Head lines and top keys show keys in.

A recorded trace settles the rows its torch ranking leaves tied with it
(RecordedTrace.strongest_keys); engine.inspection.top_keys ranks a held trace's rows with it.
"""
from __future__ import annotations

import numpy as np


def strongest(w: np.ndarray, k: int) -> np.ndarray:
    """(r, c) weights -> (r, k) column indices of each row's k largest, largest first, ties in
    column order: what ``np.argsort(-w, kind="stable")[:, :k]`` gives, without sorting whole
    rows (a partition, then only the k kept are sorted)."""
    r, c = w.shape
    if k >= c:
        return np.argsort(-w, axis=1, kind="stable")
    part = np.argpartition(-w, k - 1, axis=1)[:, :k]                 # the k largest, any order
    edge = np.take_along_axis(w, part, 1).min(1, keepdims=True)     # (r, 1) each row's k-th largest
    if ((w >= edge).sum(1) == k).all():                              # no tie at the edge: those k, in key order
        cols = np.sort(part, axis=1)
    else:                                                            # more keys tie at the edge than fit:
        chosen, tied = w > edge, w == edge                           # the first ones, in key order
        tied &= np.cumsum(tied, axis=1) <= k - chosen.sum(1, keepdims=True)
        cols = np.nonzero(chosen | tied)[1].reshape(r, k)            # ascending key order in each row
    order = np.argsort(-np.take_along_axis(w, cols, 1), axis=1, kind="stable")
    return np.take_along_axis(cols, order, 1)
