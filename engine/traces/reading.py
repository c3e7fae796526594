"""Reading a trace: the algorithms over a trace, as free functions a caller names.

Why: ``AttentionTrace`` (engine.traces.base) was a base class of 32 members whose algorithms
called subclass hooks that called ``super()`` back, so a newcomer could not tell which member
to call or to override. The design (DESIGN.md, "A trace is a narrow protocol") narrows the
trace to kinds, shape, tokens, one ``block`` primitive, device and notes; everything read from
it lives here, as free functions over those members: weights, a layer, a head, a row, a tile,
blocks of rows, the pooled overview (thumbnails), the dense size and check, the tokens of each
axis, kinds in order.

A trace with a faster way to one of them (arrays held whole, the fused GPU pooling, pixels
pooled where a remote model ran) offers it by name in ``trace.faster``
(engine.traces.capabilities.FasterPaths), asked here once per algorithm (``_faster``) and
nowhere else; the generic body below runs where it offers none.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from attnscope.engine.kinds import KEY_SIDE, KINDS, QUERY_SIDE
from attnscope.engine.runtime.free_memory import gib
from attnscope.engine.traces import base   # DENSE_VIEW_BYTES read at each check: a test may lower it
from attnscope.engine.traces.base import AttentionTrace, TraceTooLarge, layer_started, sizes_apart

if TYPE_CHECKING:
    from attnscope.engine.traces.pooling import Thumbnails   # torch's module: imported where pooling runs

LAYER_BYTES = 2**30     # one layer's every head at once, at most, where a trace computes it from ``block``


def _faster(trace: AttentionTrace, name: str):
    """The trace's own faster path for the algorithm ``name``, or None: the one place a trace
    is asked for one (tests/test_layering.py holds that nothing else asks)."""
    paths = trace.faster
    return None if paths is None else getattr(paths, name)


def in_order(kinds) -> list[str]:
    """``kinds`` in canonical order (engine.kinds.KINDS), the ones absent left out."""
    return [k for k in KINDS if k in kinds]


def query_tokens(trace: AttentionTrace, kind: str) -> list[str]:
    """The tokens that label the rows (queries) of ``kind``."""
    return trace.source_tokens if QUERY_SIDE[kind] == "source" else trace.target_tokens


def key_tokens(trace: AttentionTrace, kind: str) -> list[str]:
    """The tokens that label the columns (keys) of ``kind``."""
    return trace.source_tokens if KEY_SIDE[kind] == "source" else trace.target_tokens


def groups(trace: AttentionTrace) -> dict[str, list[int]]:
    """side -> the word index of each piece, for the sides whose pieces a recording merged into
    words; empty when the tokens are the pieces fed (every trace without a recording)."""
    recording = trace.recording
    return {} if recording is None else recording.groups


def pieces(trace: AttentionTrace) -> dict[str, list[str]]:
    """side -> the tokens fed to the model (word pieces, before any merging)."""
    recording = trace.recording
    return {"source": trace.source_tokens, "target": trace.target_tokens} if recording is None else recording.pieces


def weights(trace: AttentionTrace, kind: str) -> np.ndarray:
    """(L, H, Tq, Tk) float32: every head of one kind at once; TraceTooLarge past the dense limit
    (base.DENSE_VIEW_BYTES): ask for thumbnails, tiles or rows instead."""
    faster = _faster(trace, "weights")
    return dense_weights(trace, kind) if faster is None else faster(kind)


def layer(trace: AttentionTrace, kind: str, index: int) -> np.ndarray:
    """(H, Tq, Tk) float32: every head of one layer; TraceTooLarge past LAYER_BYTES."""
    faster = _faster(trace, "layer")
    if faster is not None:
        return faster(kind, index)
    _, H, tq, tk = trace.shape(kind)
    if H * tq * tk * 4 > LAYER_BYTES:
        raise TraceTooLarge(f"One layer of {kind} is {H} heads x {tq:,} x {tk:,} = {gib(H * tq * tk * 4)} "
                            "at once; ask for thumbnails, a tile or a row.")
    return _numpy(trace.block(kind, index, list(range(H)), slice(0, tq), slice(0, tk)))


def head(trace: AttentionTrace, kind: str, index: int, which: int) -> np.ndarray:
    """(Tq, Tk) float32: one head of layer ``index``."""
    faster = _faster(trace, "head")
    return tile(trace, kind, index, which, slice(None), slice(None)) if faster is None else faster(kind, index, which)


def row(trace: AttentionTrace, kind: str, index: int, which: int, query: int) -> np.ndarray:
    """(Tk,) float32: the weights of one query of one head."""
    return tile(trace, kind, index, which, slice(query, query + 1), slice(None))[0]


def tile(trace: AttentionTrace, kind: str, index: int, which: int, rows: slice, cols: slice) -> np.ndarray:
    """(r, c) float32 exact weights of one head for queries ``rows`` and keys ``cols``."""
    return _numpy(trace.block(kind, index, [which], rows, cols)[0])


def _numpy(block) -> np.ndarray:
    """A block of ``trace.block`` (a torch tensor, wherever it lives) as float32 numpy."""
    return block.cpu().numpy().astype(np.float32, copy=False)


def row_blocks(trace: AttentionTrace, kind: str, index: int, step: int | None = None, whole: int = 1) -> Iterator:
    """(first row, (H, r, Tk) exact weights): every head of layer ``index``, every key, a block
    of ``step`` query rows at a time (default: what one block may hold on the trace's device,
    engine.runtime.blocks, rounded down to a multiple of ``whole``, at least ``whole``: a pooling's
    whole pixel rows). For work that needs a whole layer (the overview's pooling, head
    statistics, rollout) without ever holding one."""
    from attnscope.engine.runtime.blocks import rows_per_block   # torch: this module stays importable without it

    _, H, tq, tk = trace.shape(kind)
    step = step or max(whole, rows_per_block(trace.device, H * tk) // whole * whole)
    for r0 in range(0, tq, step):
        yield r0, trace.block(kind, index, list(range(H)), slice(r0, min(tq, r0 + step)), slice(0, tk))


def thumbnails(trace: AttentionTrace, kind: str, size: int, how: str = "max", report=None,
               stop=None) -> Thumbnails:
    """Every head of ``kind`` pooled to at most ``size`` a side (the heads overview): the trace's
    faster path where it offers one (the fused GPU pooling, pixels held), else ``pooled_thumbnails``."""
    faster = _faster(trace, "thumbnails")
    if faster is not None:
        return faster(kind, size, how, report, stop)
    return pooled_thumbnails(trace, kind, size, how, report, stop)


def pooled_thumbnails(trace: AttentionTrace, kind: str, size: int, how: str = "max", report=None,
                      stop=None) -> Thumbnails:
    """Every head of ``kind`` pooled to at most ``size`` x ``size`` (engine.traces.pooling) from
    exact row blocks. ``report(("overview", layers done, layers))`` after each layer; ``stop()``
    true ends it between two layers (RunCancelled): at 8k tokens this is seconds of work."""
    import torch

    from attnscope.engine.traces.pooling import Thumbnails, block, pool_heads

    L, H, tq, tk = trace.shape(kind)
    rb, kb = block(tq, size), block(tk, size)
    # Blocks of whole pixel rows (a multiple of rb queries), every key: each block pools to
    # the same pixels the whole layer would, and a long trace is never held a layer at once.
    pooled, sink = [], []
    for i in range(L):
        layer_started(i, L, report, stop)
        rows, firsts = [], []
        for _r0, w in row_blocks(trace, kind, i, whole=rb):                              # (H, r, Tk)
            pixels, first = pool_heads(w, rb, kb, how)                                   # (H, r / rb, cols), (H, r / rb)
            rows.append(pixels)
            firsts.append(first)
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
        out[i] = layer(trace, kind, i)
    return out

