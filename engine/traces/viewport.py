"""One head (or a layer's mean / max over heads) as a screen shows it: exact weights of the
visible block, each pixel the max of the tokens it covers when there are more tokens than
pixels, one cell a pixel when there are fewer (zoomed in).

Why not a pooled overview stretched: zooming into an 8k x 8k head must show the real cells,
so each view of it is computed anew from the recording (RecordedTrace.tile), a block of
query rows at a time, never the whole head held at once at full size.
"""
from __future__ import annotations

import numpy as np
import torch

from engine.traces.pooling import bins, pool_last

CHUNK_CELLS = 16 * 2**20          # weights computed at once


def heads_of(trace, kind: str, head: int, how: str) -> list[int]:
    """Which heads a view combines: one, or every head of the layer for a mean / max."""
    return [head] if how == "one head" else list(range(trace.shape(kind)[1]))


def viewport(trace, kind: str, layer: int, head: int, how: str, rows: tuple[int, int], cols: tuple[int, int],
             pixels: tuple[int, int]) -> np.ndarray:
    """(min(r, px_h), min(c, px_w)) float32 for queries [rows) x keys [cols): exact weights,
    pooled by max to the pixels when the block has more tokens than pixels. ``how``: "one
    head", "mean of heads" or "max of heads" (as Head detail offers)."""
    (r0, r1), (c0, c1) = rows, cols
    out_r, out_c = bins(r1 - r0, pixels[0]), bins(c1 - c0, pixels[1])
    step = max(1, CHUNK_CELLS // max(1, c1 - c0))
    across = np.empty((r1 - r0, out_c), np.float32)                  # keys pooled, every row
    heads = heads_of(trace, kind, head, how)
    for a in range(r0, r1, step):
        b = min(r1, a + step)
        block = None
        for h in heads:
            w = trace.tile(kind, layer, h, slice(a, b), slice(c0, c1))                  # (r, c)
            if block is None:
                block = w.astype(np.float32, copy=True)
            elif how == "max of heads":
                np.maximum(block, w, out=block)
            else:
                block += w
        if how == "mean of heads":
            block /= len(heads)
        across[a - r0:b - r0] = pool_last(torch.from_numpy(block), out_c, "max").numpy()
    return pool_last(torch.from_numpy(across).T.contiguous(), out_r, "max").T.numpy()


def cell(trace, kind: str, layer: int, head: int, how: str, qi: int, ki: int) -> float:
    """The exact weight Head detail reads under the cursor (a head, or the heads' mean / max)."""
    values = [float(trace.tile(kind, layer, h, slice(qi, qi + 1), slice(ki, ki + 1))[0, 0])
              for h in heads_of(trace, kind, head, how)]
    return max(values) if how == "max of heads" else sum(values) / len(values)
