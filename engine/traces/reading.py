"""Reading a trace: the algorithms over a trace, as free functions a caller names.

Why: ``AttentionTrace`` (engine.traces.base) grew into a base class of 32 members whose
algorithms call subclass hooks that call ``super()`` back, so a newcomer cannot tell which
member to call. The design (DESIGN.md, "A trace is a narrow protocol") narrows the trace to
kinds, shape, tokens, one ``block`` primitive, device and notes; what is read from it lives here.

The move is in steps (issue 54). Done: every caller reads a trace through these functions, and
the generic bodies (dense weights, the pooled overview, row blocks, the dense check) live here
over ``shape``, ``layer`` and ``block``; the base's methods of those names hand over to them.
Still to come: the traces' faster paths offered by name instead of by overriding a method, the
base shrunk to the protocol, recording and fetches as optional capability objects.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from attnscope.engine.traces import base   # DENSE_VIEW_BYTES read at each check: a test may lower it
from attnscope.engine.traces.base import AttentionTrace, Thumbnails, TraceTooLarge, layer_started, sizes_apart


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
    """(first row, (H, r, Tk) exact weights): every head of layer ``index``, every key, a block
    of ``step`` query rows at a time (default: what one block may hold on the trace's device,
    engine.runtime.blocks). For work that needs a whole layer (the overview's pooling, head
    statistics, rollout) without ever holding one."""
    from attnscope.engine.runtime.blocks import rows_per_block   # torch: this module stays importable without it

    _, H, tq, tk = trace.shape(kind)
    step = step or rows_per_block(trace.device, H * tk)
    for r0 in range(0, tq, step):
        yield r0, trace.block(kind, index, list(range(H)), slice(r0, min(tq, r0 + step)), slice(0, tk))


def thumbnails(trace: AttentionTrace, kind: str, size: int, how: str = "max", report=None,
               stop=None) -> Thumbnails:
    """Every head of ``kind`` pooled to at most ``size`` a side (the heads overview)."""
    return trace.thumbnails(kind, size, how, report, stop)


def pooled_thumbnails(trace: AttentionTrace, kind: str, size: int, how: str = "max", report=None,
                      stop=None) -> Thumbnails:
    """Every head of ``kind`` pooled to at most ``size`` x ``size`` (engine.traces.pooling) from
    exact row blocks. ``report(("overview", layers done, layers))`` after each layer; ``stop()``
    true ends it between two layers (RunCancelled): at 8k tokens this is seconds of work."""
    import torch

    from attnscope.engine.runtime.blocks import rows_per_block   # torch: this module stays importable without it
    from attnscope.engine.traces.pooling import block, pool_blocks

    L, H, tq, tk = trace.shape(kind)
    rb, kb = block(tq, size), block(tk, size)
    # Blocks of whole pixel rows (a multiple of rb queries), every key: each block pools to
    # the same pixels the whole layer would, and a long trace is never held a layer at once.
    step = max(rb, rows_per_block(trace.device, H * tk) // rb * rb)
    pooled, sink = [], []
    for i in range(L):
        layer_started(i, L, report, stop)
        rows, firsts = [], []
        for _r0, w in row_blocks(trace, kind, i, step):                                  # (H, r, Tk)
            across = pool_blocks(w, kb, how)                                             # (H, r, cols)
            rows.append(pool_blocks(across.transpose(1, 2), rb, how).transpose(1, 2))    # (H, r / rb, cols)
            firsts.append(pool_blocks(w[:, :, 0], rb, how))                              # (H, r / rb)
        pooled.append(torch.cat(rows, 1).cpu().numpy())
        sink.append(torch.cat(firsts, 1).cpu().numpy())
    return Thumbnails(np.stack(pooled).astype(np.float32, copy=False), how, tq, tk,
                      np.stack(sink).astype(np.float32, copy=False))


def dense_bytes(trace: AttentionTrace, kind: str) -> int:
    """What every head of ``kind`` takes as float32 (L * H * Tq * Tk * 4)."""
    return int(np.prod(trace.shape(kind), dtype=np.int64)) * 4


def check_dense(trace: AttentionTrace, kind: str) -> None:
    """TraceTooLarge, with the numbers, when every head of ``kind`` at once would not fit."""
    need = dense_bytes(trace, kind)
    if need > base.DENSE_VIEW_BYTES:
        L, H, tq, tk = trace.shape(kind)
        need_s, limit_s = sizes_apart(need, base.DENSE_VIEW_BYTES)
        raise TraceTooLarge(f"Every head of {kind} at once is {L} layers x {H} heads x {tq:,} x {tk:,} tokens = "
                            f"{need_s}, more than the {limit_s} a view may take: this view needs all of them; "
                            "the heads overview and head detail draw it (pooled, zoomable), head lines each "
                            "query's strongest keys.")


def dense_weights(trace: AttentionTrace, kind: str) -> np.ndarray:
    """(L, H, Tq, Tk) float32 filled a layer at a time (never twice the size), after ``check_dense``."""
    check_dense(trace, kind)
    out = np.empty(trace.shape(kind), np.float32)
    for i in range(len(out)):
        out[i] = trace.layer(kind, i)
    return out


def query_tokens(trace: AttentionTrace, kind: str) -> list[str]:
    """The tokens that label the rows (queries) of ``kind``."""
    return trace.query_tokens(kind)


def key_tokens(trace: AttentionTrace, kind: str) -> list[str]:
    """The tokens that label the columns (keys) of ``kind``."""
    return trace.key_tokens(kind)
