"""Tile many (Tq, Tk) attention maps into one image, so many heads draw as one ImageItem.

One ImageItem per mosaic, not one per head: measured in DESIGN.md, 144 separate images
update ~22 times/s, one mosaic ~124 times/s. Gaps between tiles are NaN (drawn transparent).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MosaicLayout:
    rows: int           # layers
    cols: int           # heads
    tile_h: int         # Tq
    tile_w: int         # Tk
    gap: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows * (self.tile_h + self.gap) - self.gap, self.cols * (self.tile_w + self.gap) - self.gap)

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


def tile(weights: np.ndarray, gap: int | None = None) -> tuple[np.ndarray, MosaicLayout]:
    """(L, H, Tq, Tk) -> one float32 image (L*(Tq+g)-g, H*(Tk+g)-g), row-major (y, x)."""
    L, H, Tq, Tk = weights.shape
    g = gap_for(max(Tq, Tk)) if gap is None else gap
    padded = np.full((L, Tq + g, H, Tk + g), np.nan, dtype=np.float32)
    padded[:, :Tq, :, :Tk] = weights.transpose(0, 2, 1, 3)
    image = padded.reshape(L * (Tq + g), H * (Tk + g))[: L * (Tq + g) - g, : H * (Tk + g) - g]
    return image, MosaicLayout(L, H, Tq, Tk, g)
