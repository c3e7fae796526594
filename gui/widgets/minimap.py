"""A minimap for a long head in Head detail: the whole head small, a frame where the view is.

Zoomed into an 8,192 x 8,192 head, the map shows a few dozen tokens a side and nothing
says where they are; the minimap shows the whole head (the first view's picture, pooled
further in the worker) with a frame around the visible range, and a click or a drag on it
moves the view there at the same zoom.

Why in the corner where the query and key axes meet: Head detail's dock is narrow (about
230 px in the default layout), so a column beside the plot would take most of the map,
and a corner inside the map would cover cells. That corner is empty in every view; the
minimap takes it (the axes move out for it in a large plot, where their labels leave
less room than a fifth of the plot), so it covers no cell and the dock is no wider.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtWidgets import QGraphicsRectItem

from attnscope.gui.theme import FOREGROUND
from attnscope.gui.widgets.peak_image import PeakImage, show_whole

PIXELS = 160          # the overview array's size a side at most (pooled in the worker)
SMALLEST, LARGEST = 40, 150   # the minimap's side on screen: none below SMALLEST, never above LARGEST
MARGIN = 4            # between the minimap and the axes
FRAME_LEAST = 8       # the frame's side on screen at least (pixels), however far the view zooms in


def side_for(width: int, height: int, corner: int) -> int:
    """The minimap's side in a plot of this size whose axes leave an empty ``corner`` (its
    side): the corner at least, which costs the map nothing, a fifth of the plot's smaller
    side when that is more (the axes move out for it), at most LARGEST; 0 (no minimap) when
    even that is smaller than SMALLEST, as in a cramped dock where the map needs every pixel."""
    side = min(LARGEST, max(corner, min(width, height) // 5))
    return int(side) if side >= SMALLEST else 0


class Minimap(pg.ViewBox):
    """A ViewBox in token coordinates (x keys, y queries, queries downwards) that shows an
    overview image and a frame; it does not zoom or pan itself."""

    moved = Signal(float, float)      # (key, query): where the user clicked or dragged to

    def __init__(self, dark: bool = False):
        super().__init__(enableMouse=False, enableMenu=False, invertY=True, defaultPadding=0)
        self.setMouseEnabled(False, False)
        self.disableAutoRange()
        self.image = PeakImage()
        self.addItem(self.image)
        # The frame twice, dark under light, so it reads on every colour map.
        self.frames = [QGraphicsRectItem(), QGraphicsRectItem()]
        for frame, colour, width in zip(self.frames, ((0, 0, 0), (255, 255, 255)), (3, 1)):
            frame.setPen(pg.mkPen(colour, width=width))
            frame.setZValue(10)
            self.addItem(frame, ignoreBounds=True)
        self.tokens = (0, 0)           # (Tq, Tk) of the head shown
        self.shown = QRectF()          # the part of it the frame stands for
        self.set_dark(dark)
        self.setToolTip("The whole head: the frame is the part shown. Click or drag to move there.")

    def set_dark(self, dark: bool) -> None:
        self.setBorder(pg.mkPen(FOREGROUND[dark], width=1))

    def set_colormap(self, cmap: pg.ColorMap) -> None:
        self.image.setColorMap(cmap)

    def show_head(self, overview: np.ndarray, tokens: tuple[int, int], cmap: pg.ColorMap | None = None,
                  levels: tuple[float, float] = (0.0, 1.0)) -> None:
        """The head's overview over (Tq, Tk) tokens, on the map's ``levels`` (weights 0..1; a
        signed kind's (-s, s), pooled by largest magnitude, gui.drawing.kinds); ``cmap``: its
        colours, None to keep those set (Head detail colours it with the map)."""
        tq, tk = self.tokens = tokens
        if cmap is not None:
            self.image.setColorMap(cmap)
        self.image.setImage(overview, autoLevels=False, levels=levels)
        self.image.setRect(QRectF(0, 0, tk, tq))
        show_whole(self, tk, tq, pixels=4)       # the first key's column (a sink) clear of the border

    def clear(self) -> None:
        self.image.clear()
        self.tokens = (0, 0)

    def show_range(self, x_range, y_range) -> None:
        """Frame the visible part: keys ``x_range``, queries ``y_range`` (FRAME_LEAST pixels a
        side at least, so a view of 48 tokens of 8,192 still shows)."""
        tq, tk = self.tokens
        if not tq or not tk:
            return
        (x0, x1), (y0, y1) = x_range, y_range
        x0, x1, y0, y1 = max(0.0, x0), min(float(tk), x1), max(0.0, y0), min(float(tq), y1)
        w, h = max(1.0, self.width()), max(1.0, self.height())
        least_x, least_y = FRAME_LEAST * tk / w, FRAME_LEAST * tq / h
        if x1 - x0 < least_x:
            x0, x1 = (x0 + x1 - least_x) / 2, (x0 + x1 + least_x) / 2
        if y1 - y0 < least_y:
            y0, y1 = (y0 + y1 - least_y) / 2, (y0 + y1 + least_y) / 2
        # Just outside the part shown: on it, the frame covered the head's first row and column
        # (the sink, q0 -> k0) whenever the whole head was in view.
        self.shown = QRectF(x0, y0, x1 - x0, y1 - y0)
        out_x, out_y = 2 * tk / w, 2 * tq / h
        for frame in self.frames:
            frame.setRect(QRectF(x0 - out_x, y0 - out_y, x1 - x0 + 2 * out_x, y1 - y0 + 2 * out_y))

    def frame_rect(self) -> QRectF:
        """The part framed (the frame itself is drawn just outside it)."""
        return self.shown

    def _move(self, scene_pos) -> None:
        p = self.mapSceneToView(scene_pos)
        tq, tk = self.tokens
        if tq and tk:
            self.moved.emit(float(np.clip(p.x(), 0, tk)), float(np.clip(p.y(), 0, tq)))

    def mouseClickEvent(self, ev) -> None:
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self._move(ev.scenePos())

    def mouseDragEvent(self, ev, axis=None) -> None:
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self._move(ev.scenePos())

    def wheelEvent(self, ev, axis=None) -> None:
        ev.ignore()
