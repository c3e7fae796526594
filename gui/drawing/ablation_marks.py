"""The ablated heads, marked on the heads grid: a red frame and cross over each tile.

One path item for all marks (few lines, redrawn when the interventions or the layout
change); the tiles' own pixels stay what the trace says, so an ablated head still shows
its attention pattern (ablation removes its output, not its weights).
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem

MARK = "#e8464a"


class AblationMarks:
    def __init__(self, grid):
        self.grid = grid
        self.item = QGraphicsPathItem()
        pen = pg.mkPen(MARK, width=3)
        pen.setCosmetic(True)
        self.item.setPen(pen)
        self.item.setZValue(10)
        grid.view.addItem(self.item)
        self.tiles: list[tuple[int, int]] = []     # (layer, head) marked, for tests
        grid.state.interventions_changed.connect(lambda _spec: self.update())

    def update(self) -> None:
        grid = self.grid
        lay, drawing = grid.layout_, grid.drawing
        path = QPainterPath()
        self.tiles = []
        if lay is not None and drawing is not None:
            kind = drawing.kind
            for ref, _mode in grid.state.interventions.ablated:
                if ref.kind != kind or ref.layer >= lay.rows or ref.head >= lay.cols:
                    continue
                y, x = lay.tile_origin(ref.layer, ref.head)
                path.addRect(x, y, lay.tile_w, lay.tile_h)
                path.moveTo(x, y)
                path.lineTo(x + lay.tile_w, y + lay.tile_h)
                path.moveTo(x + lay.tile_w, y)
                path.lineTo(x, y + lay.tile_h)
                self.tiles.append((ref.layer, ref.head))
        self.item.setPath(path)

