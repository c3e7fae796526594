"""Tile many (Tq, Tk) attention maps into one image, so many heads draw as one ImageItem.

One ImageItem per mosaic, not one per head: measured in DESIGN.md, 144 separate images
update ~22 times/s, one mosaic ~124 times/s. For display the mosaic holds uint8 codes and
gaps hold code 0, which the lookup table draws transparent.

The heads overview's whole picture is made here, in its worker (``grid_drawing``: weights to
colour codes, the first key's strip drawn apart, tiled), and its layout is a record of fields;
so a drawing goes from the pooled tiles to this room once and the view reads what it made.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnscope.gui.display import log_colour


@dataclass(frozen=True)
class MosaicLayout:
    """Where each layer x head tile sits. A record: its size and the tiles' edges are worked out
    once, where the mosaic is tiled (a worker), and the view placing labels and fitting its range
    on the GUI thread reads them as fields."""
    rows: int           # layers
    cols: int           # heads
    tile_h: int         # Tq
    tile_w: int         # Tk
    gap: int
    shape: tuple[int, int] = field(init=False)           # the image's (height, width)
    row_tops: tuple[int, ...] = field(init=False)        # y of each layer's first pixel row
    col_lefts: tuple[int, ...] = field(init=False)       # x of each head's first pixel column

    def __post_init__(self) -> None:
        step_y, step_x = self.tile_h + self.gap, self.tile_w + self.gap
        object.__setattr__(self, "shape", (self.rows * step_y - self.gap, self.cols * step_x - self.gap))
        object.__setattr__(self, "row_tops", tuple(range(0, self.rows * step_y, step_y)))
        object.__setattr__(self, "col_lefts", tuple(range(0, self.cols * step_x, step_x)))

    def tile_origin(self, row: int, col: int) -> tuple[int, int]:
        """(y, x) of the tile's top-left pixel."""
        return row * (self.tile_h + self.gap), col * (self.tile_w + self.gap)

    def locate(self, y: float, x: float) -> tuple[int, int, int, int] | None:
        """Pixel (y, x) -> (row, col, query index, key index), or None in a gap / outside."""
        if y < 0 or x < 0:
            return None
        yi, xi = int(y), int(x)
        row, qi = divmod(yi, self.tile_h + self.gap)
        col, ki = divmod(xi, self.tile_w + self.gap)
        if row >= self.rows or col >= self.cols or qi >= self.tile_h or ki >= self.tile_w:
            return None
        return row, col, qi, ki


def gap_for(tile: int) -> int:
    """A gap that reads as a gap at any size: ~1/8 of a tile, at least one pixel."""
    return max(1, tile // 8)


GAP_CODE = 0      # display code of gap pixels: transparent in the lookup table
SINK_PIXELS = 3               # a pooled tile's first key (an attention sink) drawn apart this wide ...
SINK_OFFSET = SINK_PIXELS + 1 # ... and a transparent pixel: the tile's own columns start here


def display_codes(weights: np.ndarray) -> np.ndarray:
    """Weights in [0, 1] -> uint8 codes 1..255, for a 256-entry lookup table.

    Indexing a lookup table with uint8 is the fastest path pyqtgraph has; code 0 is given
    up so that gaps can be transparent. Quantisation: code = 1 + round(w * 254).
    """
    scaled = np.multiply(weights, 254.0, dtype=np.float32)
    scaled += 1.5
    np.clip(scaled, 1, 255, out=scaled)
    return scaled.astype(np.uint8)


def gap_lookup_table(lut: np.ndarray) -> np.ndarray:
    """A 256-entry RGBA table for display codes: entry 0 transparent, 1..255 the colormap."""
    idx = np.linspace(0, len(lut) - 1, 255).round().astype(int)
    out = np.zeros((256, 4), dtype=np.uint8)
    out[1:] = lut[idx]
    out[1:, 3] = 255
    return out


def tile(weights: np.ndarray, gap: int | None = None, fill=np.nan) -> tuple[np.ndarray, MosaicLayout]:
    """(L, H, Tq, Tk) -> one image (L*(Tq+g)-g, H*(Tk+g)-g), row-major (y, x); gaps = ``fill``."""
    L, H, Tq, Tk = weights.shape
    g = gap_for(max(Tq, Tk)) if gap is None else gap
    padded = np.full((L, Tq + g, H, Tk + g), fill, dtype=weights.dtype)
    padded[:, :Tq, :, :Tk] = weights.transpose(0, 2, 1, 3)
    image = padded.reshape(L * (Tq + g), H * (Tk + g))[: L * (Tq + g) - g, : H * (Tk + g) - g]
    return image, MosaicLayout(L, H, Tq, Tk, g)


def signed_codes(values: np.ndarray, scale: float) -> np.ndarray:
    """Signed values in [-scale, scale] -> uint8 codes 1..255, 0 at the middle code (128): the
    codes of a diverging lookup table (gui.drawing.kinds: a linear layer's mixing)."""
    return display_codes((np.asarray(values, np.float32) / np.float32(scale) + 1.0) * 0.5)


def grid_drawing(weights: np.ndarray, threshold: float, log_scale: bool = False, sink: np.ndarray | None = None,
                 scale: float | None = None):
    """(L, H, Tq, Tk) weights -> (uint8 mosaic of colour codes, its layout), in a worker.
    ``sink`` (L, H, Tq), the first key's own weights, is drawn apart at each tile's left:
    SINK_PIXELS wide, then a transparent pixel, then the tile (its columns start SINK_OFFSET in).
    ``scale``: the values are signed and drawn on (-scale, scale) (``signed_codes``); the
    threshold then hides cells of smaller magnitude and the log colour is not applied."""
    if sink is not None:
        strip = np.repeat(sink[..., None], SINK_PIXELS, axis=-1)                  # (L, H, Tq, SINK_PIXELS)
        gap = np.zeros(sink.shape + (1,), np.float32)
        weights = np.concatenate([strip, gap, weights], axis=-1)                   # (L, H, Tq, SINK_OFFSET + Tk)
    if threshold > 0:
        weights = np.where((weights if scale is None else np.abs(weights)) < threshold, 0.0, weights)
    if log_scale and scale is None:
        weights = log_colour(weights)
    codes = display_codes(weights) if scale is None else signed_codes(weights, scale)
    if sink is not None:
        codes[..., SINK_PIXELS] = GAP_CODE
    return tile(codes, fill=GAP_CODE)
