"""One head (or a layer's mean / max over heads) as a screen shows it: exact weights of the
visible block, each pixel the max of the tokens it covers when there are more tokens than
pixels, one cell a pixel when there are fewer (zoomed in). A signed kind (NOT_SOFTMAX: a linear
layer's effective attention) is pooled by the value of largest magnitude, its sign kept: by max,
a block's strongest negative mixing was drawn as its weakest positive one.

Why not a pooled overview stretched: zooming into an 8k x 8k head must show the real cells,
so each view of it is computed anew from the recording (``trace.block``), a block of query
rows at a time, never the whole head held at once at full size. The weights are computed
and pooled where the trace lives (a recording on a GPU: on that GPU, in blocks sized for
it by engine.runtime.blocks); only the pixels cross to the host.
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.runtime.blocks import rows_per_block
from attnscope.engine.traces.pooling import bins, extreme, pool_last
from attnscope.engine.inputs import InputError, check_kind
from attnscope.engine.kinds import NOT_SOFTMAX
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces import reading


def heads_of(trace, kind: str, head: int, how: str) -> list[int]:
    """Which heads a view combines: one, or every head of the layer for a mean / max."""
    return [head] if how == "one head" else list(range(trace.shape(kind)[1]))


HEADS_SHOWN = ("one head", "mean of heads", "max of heads")


def combine_heads(w: torch.Tensor, how: str, kind: str | None) -> torch.Tensor:
    """(h, ...) heads -> (...) as ``how`` combines them: the first, their mean, or their max; for a
    signed kind (NOT_SOFTMAX) "max" keeps the value of largest magnitude with its sign, since
    by plain max a head's -2.0 mixing beside another's 0.05 was shown as 0.05."""
    check_kind(w, torch.Tensor, "w", "a torch tensor of heads (h, ...)")
    if w.dim() < 1 or w.shape[0] == 0 or not w.is_floating_point():
        raise InputError(f"The argument w must be a floating-point tensor of at least one head, not {w.dtype} of "
                         f"shape {tuple(w.shape)}.")
    if how not in HEADS_SHOWN:
        raise InputError(f"The heads are shown as 'one head', 'mean of heads' or 'max of heads', not {how!r:.40}.")
    if kind is not None and not isinstance(kind, str):
        raise InputError(f"The argument kind is an attention kind's name or None, not {type(kind).__name__}.")
    if how == "max of heads":
        return extreme(w.movedim(0, -1)) if kind in NOT_SOFTMAX else w.amax(0)
    if how == "mean of heads":
        return w.mean(0)
    return w[0]


@torch.no_grad()
def viewport_weights(trace, kind: str, layer: int, head: int, how: str, rows: tuple[int, int], cols: tuple[int, int],
                     pixels: tuple[int, int]) -> np.ndarray:
    """(min(r, px_h), min(c, px_w)) float32 for queries [rows) x keys [cols): exact weights,
    pooled by max to the pixels when the block has more tokens than pixels. ``how``: "one
    head", "mean of heads" or "max of heads" (as Head detail offers)."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    for value, what in ((rows, "rows"), (cols, "cols"), (pixels, "pixels")):
        if not (isinstance(value, (tuple, list)) and len(value) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise InputError(f"The argument {what} is a pair of whole numbers (start, stop), not {value!r:.40}.")
    if how not in HEADS_SHOWN:
        raise InputError(f"The heads are shown as 'one head', 'mean of heads' or 'max of heads', not {how!r:.40}.")
    (r0, r1), (c0, c1) = rows, cols
    out_r, out_c = bins(r1 - r0, pixels[0]), bins(c1 - c0, pixels[1])
    heads = heads_of(trace, kind, head, how)
    pooling = "extreme" if kind in NOT_SOFTMAX else "max"
    device = trace.device
    step = rows_per_block(device, len(heads) * (c1 - c0), "view")
    across = torch.empty((r1 - r0, out_c), dtype=torch.float32, device=device)   # keys pooled, every row
    for a in range(r0, r1, step):
        b = min(r1, a + step)
        w = trace.block(kind, layer, heads, slice(a, b), slice(c0, c1))            # (h, r, c) exact
        across[a - r0:b - r0] = pool_last(combine_heads(w, how, kind), out_c, pooling)
    return pool_last(across.T.contiguous(), out_r, pooling).T.cpu().numpy()


def cell(trace, kind: str, layer: int, head: int, how: str, qi: int, ki: int) -> float:
    """The exact weight Head detail reads under the cursor (a head, or the heads' mean / max; a
    signed kind's max is the value of largest magnitude, as ``combine_heads``)."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    values = [float(reading.tile(trace, kind, layer, h, slice(qi, qi + 1), slice(ki, ki + 1))[0, 0])
              for h in heads_of(trace, kind, head, how)]
    return float(combine_heads(torch.tensor(values, dtype=torch.float64), how, kind))
