"""What a pooled pixel of a long head stands for, read out as the overview reads its tiles.

At 4,013 tokens Head detail's whole-head view draws about 16 x 16 tokens a screen pixel (the
engine pools the head to 1,024 pixels a side by max, gui.widgets.peak_image pools again to the
pixels on screen), and the readout named the one token under the cursor: on q0 -> k0's pixel,
painted at 1.0, it read a masked cell, "weight 0.0000" (issue 53). The readout now names the
block the painted pixel stands for and reads its strongest cell exactly.
"""
from __future__ import annotations

import numpy as np


def painted_block(d, image, zoom_image, zoom_block, qo: int, ko: int):
    """The tokens, queries [a, b) x keys [c, e), the painted pixel over token (``qo``, ``ko``) of
    the long drawing ``d`` stands for: in ``zoom_image`` over ``zoom_block`` when that covers it
    (the zoomed part lies over the whole head), else in ``image``; None when it is one cell."""
    from attnscope.engine.traces import bin_span    # here, not at the top: engine.traces.pooling imports torch, and the window is on screen before torch is

    tq, tk = d.long
    spans = [((0, tq), (0, tk), image)]
    if zoom_block is not None and zoom_image.image is not None:
        spans.insert(0, (*zoom_block, zoom_image))
    for (r0, r1), (c0, c1), item in spans:
        if not (r0 <= qo < r1 and c0 <= ko < c1):
            continue
        n_r, n_c = item.image.shape[:2]
        row, col = bin_span(r1 - r0, n_r, 0)[1], bin_span(c1 - c0, n_c, 0)[1]    # tokens an image cell covers
        (a, b), (c, e) = item.cells_under((qo - r0) // row, (ko - c0) // col)
        rows = (r0 + bin_span(r1 - r0, n_r, a)[0], r0 + bin_span(r1 - r0, n_r, b - 1)[1])
        cols = (c0 + bin_span(c1 - c0, n_c, c)[0], c0 + bin_span(c1 - c0, n_c, e - 1)[1])
        return None if rows[1] - rows[0] == 1 and cols[1] - cols[0] == 1 else (rows, cols)
    return None


def describe_block(d, rows: tuple[int, int], cols: tuple[int, int]) -> str:
    """A pooled pixel's readout: its strongest cell, read exactly (a head, or the heads' mean /
    max as drawn), and the block of queries x keys it is the maximum of."""
    (a, b), (c, e) = rows, cols
    heads = [d.head] if d.how == "one head" else range(d.trace.shape(d.kind)[1])
    from attnscope.engine.traces import reading     # here, as bin_span: this module loads no engine
    tiles = np.stack([reading.tile(d.trace, d.kind, d.layer, h, slice(a, b), slice(c, e)) for h in heads])   # (heads, b-a, e-c)
    import torch
    from attnscope.engine.traces import combine_heads       # a signed kind's max: largest magnitude
    block = combine_heads(torch.from_numpy(np.ascontiguousarray(tiles)), d.how, d.kind).numpy()
    from attnscope.gui.drawing.kinds import is_signed, strongest, value_word   # a signed kind: largest magnitude
    bq, bk = np.unravel_index(strongest(block, d.kind), block.shape)
    q, k = reading.query_tokens(d.trace, d.kind), reading.key_tokens(d.trace, d.kind)
    qi, ki = a + int(bq), c + int(bk)
    peak = "largest magnitude" if is_signed(d.kind) else "max"
    return (f"{value_word(d.kind)} {block[bq, bk]:.4f} (strongest) | query {qi} {q[qi]!r} -> key {ki} {k[ki]!r}, of "
            f"queries {a}-{b - 1} x keys {c}-{e - 1} (one pixel, {peak} of the block)")
