"""The heads overview's drawing, prepared off the GUI thread (gui.drawing.prepared's rule): every
head of one kind as the overview shows it, exact for a small trace and pooled by max for a long
one (a signed kind by its largest magnitude, sign kept), then coloured and tiled into one mosaic (gui.widgets.mosaic).

Why a module of its own: the view (gui.views.head_grid) is the widget, its hover and its click;
what a Run's trace becomes on the way to its tiles is here, so the walk from a trace to the painted
tiles goes view -> this -> the trace's reading -> the mosaic, and back to the view once, to apply it.
"""
from __future__ import annotations

from attnscope.engine.traces import reading
from attnscope.gui.drawing.drawings import OverviewDrawing
from attnscope.gui.drawing.kinds import is_signed, largest, levels_for, pooling_for
from attnscope.gui.drawing.prepared import prepares
from attnscope.gui.widgets.mosaic import SINK_OFFSET, grid_drawing

prepares(grid_drawing)     # the overview's colours are made off the GUI thread (the thread rule's list)

EXACT_TOKENS = 512            # up to this many tokens a side, a small trace is drawn cell for cell
MOSAIC_PIXELS = 4_000_000     # a pooled mosaic stays about this size, however many heads


def tile_pixels(layers: int, heads: int) -> int:
    """The side of a pooled tile: the mosaic near MOSAIC_PIXELS, each tile 32 to 256 pixels."""
    return int(min(256, max(32, (MOSAIC_PIXELS / max(1, layers * heads)) ** 0.5)))


def thumbnails(trace, kind: str, report=None, stop=None):
    """Every head as drawn: exact for a small trace, pooled by max for a long one (engine.traces.reading)."""
    L, H, tq, tk = trace.shape(kind)
    exact = max(tq, tk) <= EXACT_TOKENS and reading.dense_bytes(trace, kind) <= 2**28
    size = max(tq, tk) if exact else tile_pixels(L, H)
    # pooling a long text takes seconds; a signed kind keeps each block's strongest value, sign and all
    return reading.thumbnails(trace, kind, size, pooling_for(kind), None if exact else report, stop)


def overview_drawing(trace, kind: str, threshold: float, log_scale: bool = False, pooled=None, report=None,
                     stop=None) -> OverviewDrawing:
    """The overview's drawing: a pooled grid draws the first key
    apart (its column would be one pixel of a block of ~100 keys at 8k tokens). ``pooled``: this
    trace's thumbnails already computed (only the colours change)."""
    thumbs = pooled if pooled is not None else thumbnails(trace, kind, report, stop)
    sink = None if thumbs.exact else thumbs.sink
    # A signed kind (effective attention) on (-s, s), s the largest magnitude of every head shown.
    levels = levels_for(kind, thumbs.pooled if sink is None else [largest(thumbs.pooled), largest(sink)])
    scale = levels[1] if is_signed(kind) else None
    mosaic, layout = grid_drawing(thumbs.pooled, threshold, log_scale, sink, scale)
    return OverviewDrawing(mosaic, layout, kind, trace, thumbs, 0 if sink is None else SINK_OFFSET, levels)
