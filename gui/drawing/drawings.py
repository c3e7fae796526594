"""What each trace view's worker hands its GUI thread: one frozen record per drawing.

A view prepares its drawing off the GUI thread (gui/drawing/prepared.py) and applies it there; the
record says by name what it carries, so ``apply_drawing``, hover and click read fields, never
``drawing[4]`` or ``d["long"]``. Arrays are finished numbers (colour codes, weights shown, line
end points): the GUI thread only hands them to its plot items. ``eq=False``: records holding
arrays are compared by identity. (Patching's record is gui/views/patching_drawing.Drawing.)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class OverviewDrawing:
    """The heads overview (gui/views/head_grid): every head of one kind as one mosaic."""
    mosaic: np.ndarray      # (rows px, cols px) uint8 colour codes (gui.widgets.mosaic.display_codes)
    layout: Any             # gui.widgets.mosaic.MosaicLayout: where each layer x head tile sits
    kind: str
    trace: Any              # the AttentionTrace drawn (hover reads it exactly)
    thumbs: Any             # engine.traces.pooling.Thumbnails the tiles were coloured from: (L, H, rows, cols)
    offset: int             # a tile's key columns start here: SINK_OFFSET when key 0 is drawn apart, else 0
    levels: tuple[float, float] = (0.0, 1.0)   # the values codes 1..255 span: (-s, s) for a signed kind


@dataclass(frozen=True, eq=False)
class HeadDetailDrawing:
    """Head detail (gui/views/head_detail): one head (or a layer's mean / max) of one kind."""
    trace: Any
    kind: str
    layer: int
    head: int
    how: str                        # "one head", "mean of heads" or "max of heads"
    matrix: np.ndarray | None       # (rows, cols) float32 true weights of the cells shown; None for a long head
    shown: np.ndarray               # (rows, cols) float32 display map, 0..1 (threshold, scale, log applied)
    q_index: np.ndarray             # (rows,) int: the query positions shown (special tokens hidden or not)
    k_index: np.ndarray             # (cols,) int: the key positions shown
    q_labels: list[str]
    k_labels: list[str]
    long: tuple[int, int] | None    # (Tq, Tk) of a long head drawn pooled (zoomable); None when exact
    threshold: float = 0.0
    normalise: bool = False
    log_scale: bool = False
    overview: np.ndarray | None = None   # (m, m) float32: ``shown`` pooled again for the minimap (long only)
    levels: tuple[float, float] = (0.0, 1.0)   # the colour levels of ``shown`` (gui.drawing.kinds.levels_for)


@dataclass(frozen=True, eq=False)
class HeadLinesDrawing:
    """Head lines (gui/views/head_lines): query -> key lines of the heads shown, one layer."""
    trace: Any
    kind: str
    groups: list[tuple[int, float, np.ndarray, np.ndarray]]   # (head, opacity, x (2n,), y (2n,)) line ends
    drawn: dict[int, int]           # head -> lines drawn
    n_heads: int
    summary: str | None             # a long trace's words on what is drawn of it; None when short
    scale_q: float                  # a query's row height in plot units
    scale_k: float                  # a key's row height in plot units
    height: int                     # max(Tq, Tk): the plot's height in units
    q_tokens: list[str] = field(default_factory=list)
    k_tokens: list[str] = field(default_factory=list)


@dataclass(frozen=True, eq=False)
class RolloutDrawing:
    """Rollout (gui/views/rollout): rollout up to a layer, or a layer's mean / max of heads."""
    matrix: np.ndarray | None       # (rows, cols) float32, pooled by max past POOLED_PIXELS; None: nothing to draw
    note: str                       # what the matrix is, or why there is none
    rows: list[str] = field(default_factory=list)   # row labels (tokens, or each block's first token)
    cols: list[str] = field(default_factory=list)
    top: float = 1.0                # the colour scale's top: the matrix's max (at least 1e-9)


@dataclass(frozen=True, eq=False)
class StatsDrawing:
    """Head statistics (gui/views/head_stats): a table of every head of one kind."""
    kind: str
    stats: dict[str, np.ndarray]    # column -> (L, H) float32 (nan where not measured)
    hidden: list[str]               # columns this model has nothing for
