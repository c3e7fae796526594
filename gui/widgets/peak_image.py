"""An image item that never loses a peak when it is drawn on fewer pixels than it has.

A heatmap of attention is mostly near 0 with a few cells near 1 (a sink, a diagonal). Drawn on
fewer screen pixels than it has cells, Qt samples it (nearest: most cells are never drawn) and
pyqtgraph's own auto-downsampling averages it: on a 4k-token text the overview's first cell of
layer 0 head 0, 1.0 in the engine's pooled image, showed dark purple, and Rollout's 0.5
diagonal was drawn as broken dashes. PeakImage pools the image again on the way to the screen,
each drawn pixel the max of the cells it covers (``extreme``: the value farthest from 0, for
signed maps), at the device pixels the item covers (HiDPI included), whenever the view is
resized or zoomed. It pools by whole factors (rounded up), so each drawn pixel stands for whole
cells and Qt only ever enlarges what is left, cell by cell (no smoothing): nothing is sampled
away or blended.

The pooling runs on the GUI thread, when the item renders (a new image, a new size): strided
maxima in numpy, ~1 ms for the 128-token overview's 864 x 1728 mosaic on the CI's 2 cores.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QPainter


def peak_pool(image: np.ndarray, fy: int, fx: int, extreme: bool = False) -> np.ndarray:
    """(h, w[, c]) -> (ceil(h / fy), ceil(w / fx)[, c]): each cell the max of its fy x fx block
    (NaN ignored, the edge blocks padded with 0); ``extreme``: the block's value of largest
    magnitude, its sign kept."""
    if extreme:
        high, low = peak_pool(image, fy, fx), -peak_pool(-image, fy, fx)
        return np.where(np.abs(low) > np.abs(high), low, high)
    h, w = image.shape[:2]
    padded_h, padded_w = -(-h // fy) * fy, -(-w // fx) * fx
    if (padded_h, padded_w) != (h, w):
        padded = np.zeros((padded_h, padded_w, *image.shape[2:]), image.dtype)
        padded[:h, :w] = image
        image = padded
    for axis, f in ((0, fy), (1, fx)):        # rows first: the second pass reads fy times less
        if f > 1:
            take = (slice(None),) * axis
            out = image[take + (slice(0, None, f),)].copy()
            for k in range(1, f):
                np.fmax(out, image[take + (slice(k, None, f),)], out=out)
            image = out
    return image


class PeakImage(pg.ImageItem):
    """A row-major pg.ImageItem whose rendering keeps every peak (see the module's docstring)."""

    def __init__(self, extreme: bool = False, **kwargs):
        super().__init__(axisOrder="row-major", **kwargs)
        self.extreme = extreme
        self.factors = (1, 1)          # (rows, columns) pooled into one drawn pixel at the last render

    def device_factors(self) -> tuple[int, int]:
        """How many cells (rows, columns) fall on one device pixel, rounded up; (1, 1) when the
        item is drawn at least as large as it is, or not on screen yet."""
        if self.image is None:
            return 1, 1
        origin = self.mapToDevice(QPointF(0, 0))
        right, down = self.mapToDevice(QPointF(1, 0)), self.mapToDevice(QPointF(0, 1))
        if origin is None or right is None or down is None:
            return 1, 1
        view = self.getViewWidget()
        ratio = view.devicePixelRatioF() if view is not None else 1.0   # physical pixels per logical one
        factors = []
        for end in (down, right):
            pixels = math.hypot(end.x() - origin.x(), end.y() - origin.y()) * ratio   # device pixels a cell
            factors.append(1 if pixels <= 0 or pixels >= 1 else math.ceil(1 / pixels - 1e-9))
        return factors[0], factors[1]

    def cells_under(self, row: int, col: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """The image's cells, rows [r0, r1) x columns [c0, c1), that the painted pixel over cell
        (``row``, ``col``) stands for: the block pooled into it at the last render (a readout
        names that block and reads its maximum, as the painted colour shows it)."""
        fy, fx = self.factors
        h, w = self.image.shape[:2] if self.image is not None else (row + 1, col + 1)
        r0, c0 = row // fy * fy, col // fx * fx
        return (r0, min(h, r0 + fy)), (c0, min(w, c0 + fx))

    def render(self):
        factors = self.device_factors()
        self.factors = factors
        full = self.image
        if full is None or factors == (1, 1):
            return super().render()
        self.image = peak_pool(full, *factors, extreme=self.extreme)
        try:
            super().render()
        finally:
            self.image = full

    def paint(self, painter, *args):
        # Cells as blocks of colour: what is left after pooling is only ever enlarged, and a
        # smooth enlargement (the window antialiases) blended a one-cell line into its
        # neighbours, so Rollout's 0.5 diagonal came out the colour of ~0.3.
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
        super().paint(painter, *args)

    def viewTransformChanged(self):
        super().viewTransformChanged()
        if self.image is not None and self.device_factors() != self.factors:   # resized, zoomed: pool again
            self._renderRequired = True
            self.update()


EDGE_PIXELS = 3       # screen pixels left around a whole map, so no axis line or border covers its edge


def show_whole(view_box: pg.ViewBox, width: float, height: float, pixels: int = EDGE_PIXELS) -> None:
    """Show a map of ``width`` x ``height`` (its coordinates from 0) whole in ``view_box``, with
    ``pixels`` screen pixels of room on every side, and keep that room when the box is resized
    while it shows the whole map. Why: an axis draws its line on the box's edge, a minimap its
    border, and a map drawn edge to edge had its first row and column under them: at 4,013
    tokens q0 -> k0 = 1.0 (and every head's sink column) is one screen pixel there, and the
    view showed the next pixel's dark purple (issue 53). The limits keep that room too."""
    def margins() -> tuple[float, float]:
        w_px, h_px = max(view_box.width(), 8.0 * pixels), max(view_box.height(), 8.0 * pixels)
        return pixels * width / (w_px - 2 * pixels), pixels * height / (h_px - 2 * pixels)

    def fit() -> None:
        mx, my = margins()
        # Room enough for the smallest the box may become (a fifth of a map's side at most).
        lx, ly = max(mx, width / 5), max(my, height / 5)
        view_box.setLimits(xMin=-lx, xMax=width + lx, yMin=-ly, yMax=height + ly)
        view_box.setRange(xRange=(-mx, width + mx), yRange=(-my, height + my), padding=0)
        view_box._whole_range = view_box.viewRange()

    view_box._fit_whole = fit
    if not getattr(view_box, "_refits_whole", False):
        view_box._refits_whole = True
        view_box.sigResized.connect(lambda *_: _refit_if_whole(view_box))
    fit()


def _refit_if_whole(view_box: pg.ViewBox) -> None:
    """A box resized while it shows the whole map keeps its room in pixels (a dock widened)."""
    whole = getattr(view_box, "_whole_range", None)
    if whole is not None and _same_range(view_box.viewRange(), whole):
        view_box._fit_whole()


def _same_range(a, b, tol: float = 1e-6) -> bool:
    return all(abs(x - y) <= tol * max(1.0, abs(y)) for pa, pb in zip(a, b) for x, y in zip(pa, pb))


def show_whole_again(view_box: pg.ViewBox) -> bool:
    """Back to the whole map as ``show_whole`` last showed it (a double-click); False if none was."""
    fit = getattr(view_box, "_fit_whole", None)
    if fit is None:
        return False
    fit()
    return True
