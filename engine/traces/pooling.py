"""Pooling a long attention map to the pixels that show it, saying how.

A 8,192 x 8,192 head drawn in a 128-pixel tile is 4,096 weights a pixel. ``max`` keeps
peaks (a sink column, a diagonal, one strong link stay visible); ``mean`` keeps mass (a
pixel is the mean weight of its block); ``extreme`` keeps a signed map's peaks (a pixel is
its block's value of largest magnitude, sign kept: a linear layer's effective attention,
whose strongest mixing may be negative, and ``max`` drew a block of -2 and 0.1 as 0.1). Blocks are uniform: ``block(T, size)`` tokens each
(the last one shorter), so a pixel always covers the same number of tokens and ``bin_span``
names them for hover and zoom; a block reduces with one vectorised pass over a view, never
a copy of the scores.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.engine.inputs import InputError, check_count, check_kind
from attnscope.engine.traces.base import layer_started


@dataclass
class Thumbnails:
    """Every head of one kind pooled to at most ``size`` pixels a side, and how: what the overview
    draws, made here beside the pooling that makes it."""
    pooled: np.ndarray        # (L, H, rows, cols) float32
    how: str                  # "max" keeps peaks, "mean" keeps mass ("exact" when nothing was pooled)
    t_query: int              # tokens the rows stand for
    t_key: int                # tokens the columns stand for
    sink: np.ndarray | None = None   # (L, H, rows) the first key's weight alone, each block of rows pooled
                                     # as ``pooled`` is: an attention sink drawn apart from the pooled keys

    @property
    def exact(self) -> bool:
        return self.pooled.shape[2:] == (self.t_query, self.t_key)


def block(length: int, size: int) -> int:
    """Tokens a pixel covers when ``length`` tokens are drawn in at most ``size`` pixels."""
    return max(1, math.ceil(length / max(1, size)))


def bins(length: int, size: int) -> int:
    """How many pixels ``length`` tokens take at most ``size`` pixels (never more than tokens)."""
    return math.ceil(length / block(length, size))


def bin_span(length: int, n: int, i: int) -> tuple[int, int]:
    """Tokens [start, stop) of pixel ``i`` of ``n`` over ``length`` tokens."""
    for value, name in ((length, "length"), (n, "n"), (i, "i")):
        check_kind(value, numbers.Integral, name, "a whole number")
    b = block(length, n)
    return i * b, min(length, (i + 1) * b)


def pool_last(x: torch.Tensor, n: int, how: str) -> torch.Tensor:
    """(..., T) -> (..., bins(T, n)): max or mean over uniform blocks of the last axis."""
    return pool_blocks(x, block(x.shape[-1], n), how)


HOWS = ("max", "mean", "extreme")


def extreme(v: torch.Tensor) -> torch.Tensor:
    """(..., b) -> (...): the value of largest magnitude along the last axis, its sign kept
    (a tie goes to the positive one)."""
    high, low = v.amax(-1), v.amin(-1)
    return torch.where(low.abs() > high.abs(), low, high)


def pool_blocks(x: torch.Tensor, b: int, how: str) -> torch.Tensor:
    """(..., T) -> (..., ceil(T / b)): max, mean or extreme (largest magnitude, signed) over blocks
    of ``b`` tokens (the last shorter)."""
    t = x.shape[-1]
    if b == 1:
        return x
    full, rest = divmod(t, b)
    x = x.contiguous()
    reduce = {"max": lambda v: v.amax(-1), "mean": lambda v: v.mean(-1), "extreme": extreme}[how]
    parts = [reduce(x[..., :full * b].view(*x.shape[:-1], full, b))] if full else []
    if rest:
        parts.append(reduce(x[..., full * b:])[..., None])
    return torch.cat(parts, -1) if len(parts) > 1 else parts[0]


def pool_heads(w: torch.Tensor, rb: int, kb: int, how: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(H, r, Tk) exact weights of whole pixel rows (``r`` a multiple of ``rb``, or the last
    rows) -> (H, r / rb, cols) the overview's pixels and (H, r / rb) the first key's weight
    pooled alone (a sink, drawn apart). The one pooling of the overview: a block of rows
    (engine.traces.reading.pooled_thumbnails), or a layer held whole (``pool_held``); pixel rows
    start at multiples of ``rb`` either way, so both give the same numbers."""
    across = pool_blocks(w, kb, how)                                                     # (H, r, cols)
    return pool_blocks(across.transpose(1, 2), rb, how).transpose(1, 2), pool_blocks(w[:, :, 0], rb, how)


def pool_held(weights: np.ndarray, size: int, how: str = "max", report=None, stop=None) -> Thumbnails:
    """Every head of a kind held whole as arrays, (L, H, Tq, Tk) float32 (a recorded trace's
    kinds computed at once, a dense trace's arrays), pooled to at most ``size`` a side a layer
    at a time: reading.pooled_thumbnails' numbers, without cutting the arrays into row blocks
    and copying each head of each block first. ``report`` and ``stop`` as there."""
    L, H, tq, tk = weights.shape
    rb, kb = block(tq, size), block(tk, size)
    pooled, sink = [], []
    for i in range(L):
        layer_started(i, L, report, stop)
        layer = np.ascontiguousarray(weights[i], np.float32)                            # (H, Tq, Tk), no copy when float32
        pixels, first = pool_heads(torch.from_numpy(layer if layer.flags.writeable else layer.copy()), rb, kb, how)
        pooled.append(pixels.numpy())
        sink.append(first.numpy())
    return Thumbnails(np.stack(pooled), how, tq, tk, np.stack(sink))


def pool_2d(x: torch.Tensor, rows: int, cols: int, how: str) -> torch.Tensor:
    """(..., Tq, Tk) -> (..., rows, cols)."""
    check_kind(x, torch.Tensor, "x", "a torch tensor")
    check_count(rows, "rows (pixels)")
    check_count(cols, "cols (pixels)")
    if how not in HOWS:
        raise InputError(f"The pooling is 'max', 'mean' or 'extreme', not {how!r:.40}.")
    if x.dim() < 2 or not x.is_floating_point():
        raise InputError(f"The argument x must be a floating-point map of at least 2 dimensions, not {x.dim()} "
                         f"of {x.dtype}.")
    return pool_last(pool_last(x, cols, how).transpose(-1, -2), rows, how).transpose(-1, -2)


def fold_rows(out: torch.Tensor, part: torch.Tensor, start: int, b: int, how: str) -> None:
    """Fold rows ``start``.. of ``part`` (H, r, c) into ``out`` (H, ceil(T / b), C >= c), whose
    row i pools rows [i b, (i + 1) b): a running max, or a running sum (divide by
    ``rows_in_bins`` for the mean). Blocks of rows need not align with the pixels, so a long
    text is pooled without ever holding every row's pooled keys (H x T x pixels) at once."""
    bins_of = (torch.arange(start, start + part.shape[1], device=part.device) // b).view(1, -1, 1)
    out[:, :, :part.shape[2]].scatter_reduce_(1, bins_of.expand_as(part), part,
                                              reduce="amax" if how == "max" else "sum", include_self=True)


def rows_in_bins(length: int, b: int, device=None) -> torch.Tensor:
    """(ceil(length / b),) how many rows each pixel row pools (the last may hold fewer)."""
    starts = torch.arange(0, length, b, device=device)
    return (torch.clamp(starts + b, max=length) - starts).float()
