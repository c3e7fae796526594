"""Pooling a long attention map to the pixels that show it, saying how.

A 8,192 x 8,192 head drawn in a 128-pixel tile is 4,096 weights a pixel. ``max`` keeps
peaks (a sink column, a diagonal, one strong link stay visible); ``mean`` keeps mass (a
pixel is the mean weight of its block). Blocks are uniform: ``block(T, size)`` tokens each
(the last one shorter), so a pixel always covers the same number of tokens and ``bin_span``
names them for hover and zoom; a block reduces with one vectorised pass over a view, never
a copy of the scores.
"""
from __future__ import annotations

import math

import torch

def block(length: int, size: int) -> int:
    """Tokens a pixel covers when ``length`` tokens are drawn in at most ``size`` pixels."""
    return max(1, math.ceil(length / max(1, size)))


def bins(length: int, size: int) -> int:
    """How many pixels ``length`` tokens take at most ``size`` pixels (never more than tokens)."""
    return math.ceil(length / block(length, size))


def bin_span(length: int, n: int, i: int) -> tuple[int, int]:
    """Tokens [start, stop) of pixel ``i`` of ``n`` over ``length`` tokens."""
    b = block(length, n)
    return i * b, min(length, (i + 1) * b)


def pool_last(x: torch.Tensor, n: int, how: str) -> torch.Tensor:
    """(..., T) -> (..., bins(T, n)): max or mean over uniform blocks of the last axis."""
    return pool_blocks(x, block(x.shape[-1], n), how)


def pool_blocks(x: torch.Tensor, b: int, how: str) -> torch.Tensor:
    """(..., T) -> (..., ceil(T / b)): max or mean over blocks of ``b`` tokens (the last shorter)."""
    t = x.shape[-1]
    if b == 1:
        return x
    full, rest = divmod(t, b)
    x = x.contiguous()
    reduce = (lambda v: v.amax(-1)) if how == "max" else (lambda v: v.mean(-1))
    parts = [reduce(x[..., :full * b].view(*x.shape[:-1], full, b))] if full else []
    if rest:
        parts.append(reduce(x[..., full * b:])[..., None])
    return torch.cat(parts, -1) if len(parts) > 1 else parts[0]


def pool_2d(x: torch.Tensor, rows: int, cols: int, how: str) -> torch.Tensor:
    """(..., Tq, Tk) -> (..., rows, cols)."""
    return pool_last(pool_last(x, cols, how).transpose(-1, -2), rows, how).transpose(-1, -2)
