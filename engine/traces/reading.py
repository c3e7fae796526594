"""Reading a trace: the algorithms over a trace, as free functions a caller names.

Why: ``AttentionTrace`` (engine.traces.base) grew into a base class of 32 members whose
algorithms call subclass hooks that call ``super()`` back, so a newcomer cannot tell which
member to call. The design (DESIGN.md, "A trace is a narrow protocol") narrows the trace to
kinds, shape, tokens, one ``block`` primitive, device and notes; what is read from it lives here.

Step one of that move (issue 54): every caller reads a trace through these functions, which
still hand the work to today's methods; the bodies move here, over ``block``, next, and the
base shrinks to the protocol last. A caller changes nothing when they do.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from attnscope.engine.traces.base import AttentionTrace, Thumbnails


def weights(trace: AttentionTrace, kind: str) -> np.ndarray:
    """(L, H, Tq, Tk) float32: every head of one kind at once; TraceTooLarge past the dense limit."""
    return trace.weights(kind)


def layer(trace: AttentionTrace, kind: str, index: int) -> np.ndarray:
    """(H, Tq, Tk) float32: every head of one layer."""
    return trace.layer(kind, index)


def head(trace: AttentionTrace, kind: str, index: int, which: int) -> np.ndarray:
    """(Tq, Tk) float32: one head of layer ``index``."""
    return trace.head(kind, index, which)


def row(trace: AttentionTrace, kind: str, index: int, which: int, query: int) -> np.ndarray:
    """(Tk,) float32: the weights of one query of one head."""
    return trace.row(kind, index, which, query)


def tile(trace: AttentionTrace, kind: str, index: int, which: int, rows: slice, cols: slice) -> np.ndarray:
    """(r, c) float32 exact weights of one head for queries ``rows`` and keys ``cols``."""
    return trace.tile(kind, index, which, rows, cols)


def row_blocks(trace: AttentionTrace, kind: str, index: int, step: int | None = None) -> Iterator:
    """(first row, (H, r, Tk) tensor) blocks of query rows of one layer, every head and key."""
    return trace.row_blocks(kind, index, step)


def thumbnails(trace: AttentionTrace, kind: str, size: int, how: str = "max", report=None,
               stop=None) -> Thumbnails:
    """Every head of ``kind`` pooled to at most ``size`` a side (the heads overview)."""
    return trace.thumbnails(kind, size, how, report, stop)


def dense_bytes(trace: AttentionTrace, kind: str) -> int:
    """What every head of ``kind`` takes as float32 (L * H * Tq * Tk * 4)."""
    return trace.dense_bytes(kind)


def check_dense(trace: AttentionTrace, kind: str) -> None:
    """TraceTooLarge, with the numbers, when every head of ``kind`` at once would not fit."""
    trace.check_dense(kind)


def query_tokens(trace: AttentionTrace, kind: str) -> list[str]:
    """The tokens that label the rows (queries) of ``kind``."""
    return trace.query_tokens(kind)


def key_tokens(trace: AttentionTrace, kind: str) -> list[str]:
    """The tokens that label the columns (keys) of ``kind``."""
    return trace.key_tokens(kind)
