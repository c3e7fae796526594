"""Pooling a long attention map to the pixels that show it, saying how.

A 8,192 x 8,192 head drawn in a 128-pixel tile is 4,096 weights a pixel. ``max`` keeps
peaks (a sink column, a diagonal, one strong link stay visible); ``mean`` keeps mass (a
pixel is the mean weight of its block). The bins are torch's adaptive pooling bins: bin i of
n over T covers [floor(i T / n), ceil((i + 1) T / n)), so every token is in a bin and a bin
is never empty; ``bin_span`` gives a bin's tokens for hover and zoom.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

HOW = ("max", "mean")


def bins(length: int, size: int) -> int:
    """How many bins to draw ``length`` tokens in at most ``size`` pixels (never more bins than tokens)."""
    return max(1, min(length, size))


def bin_span(length: int, n: int, i: int) -> tuple[int, int]:
    """Tokens [start, stop) of bin ``i`` of ``n`` over ``length``."""
    return (i * length) // n, math.ceil((i + 1) * length / n)


def pool_last(x: torch.Tensor, n: int, how: str) -> torch.Tensor:
    """(..., T) -> (..., n), max or mean over adaptive bins of the last axis."""
    if x.shape[-1] == n:
        return x
    lead = x.shape[:-1]
    flat = x.reshape(-1, 1, x.shape[-1])
    out = F.adaptive_max_pool1d(flat, n) if how == "max" else F.adaptive_avg_pool1d(flat, n)
    return out.reshape(*lead, n)


def pool_2d(x: torch.Tensor, rows: int, cols: int, how: str) -> torch.Tensor:
    """(..., Tq, Tk) -> (..., rows, cols)."""
    return pool_last(pool_last(x, cols, how).transpose(-1, -2), rows, how).transpose(-1, -2)
