"""Heads overview: every layer x head of one attention kind, drawn as one mosaic image.

Rows are layers, columns heads; inside a tile, rows are query tokens and columns key tokens.
Hover says which layer, head, query and key a pixel is and its weight; a click opens the head.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from engine.trace import AttentionTrace
from gui.views.kinds import fill_kind_box
from gui.colormaps import lookup_table
from gui.views.mosaic import GAP_CODE, MosaicLayout, display_codes, gap_lookup_table, tile


class HeadGrid(QWidget):
    kind_changed = Signal(str)

    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.trace: AttentionTrace | None = None
        self.kind: str | None = None
        self.layout_: MosaicLayout | None = None
        self.last_tooltip = ""

        self.kind_box = QComboBox()
        self.kind_box.setToolTip("Which attention to show: encoder self, decoder masked self, or cross")
        self.kind_box.currentTextChanged.connect(self._on_kind)
        self.readout = QLabel("Hover a cell to read it; click to open that head.")
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.0, 1.0)
        self.threshold.setSingleStep(0.02)
        self.threshold.setPrefix("hide below ")
        self.threshold.setToolTip("Draw weaker cells as 0 (hover still reads the true weight)")
        self.threshold.valueChanged.connect(lambda _: self.redraw())
        top = QHBoxLayout()
        self.kind_label = QLabel("Attention:")
        top.addWidget(self.kind_label)
        top.addWidget(self.kind_box)
        top.addWidget(self.readout, 1)
        top.addWidget(self.threshold)

        self.plot = pg.GraphicsLayoutWidget()
        self.view = self.plot.addViewBox(lockAspect=False, invertY=True, enableMouse=False)
        self.view.setMenuEnabled(False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setLookupTable(gap_lookup_table(lookup_table(state.colormap)))
        self.mosaic: np.ndarray | None = None    # uint8 display codes drawn (see mosaic.display_codes)
        self.view.addItem(self.image)
        self.labels: list[pg.TextItem] = []
        self.plot.scene().sigMouseMoved.connect(self._on_hover)
        self.plot.scene().sigMouseClicked.connect(self._on_click)

        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(top)
        box.addWidget(self.plot, 1)

        state.trace_changed.connect(self.set_trace)
        state.colormap_changed.connect(self._on_colormap)
        if state.trace is not None:
            self.set_trace(state.trace)

    def _on_colormap(self, name: str) -> None:
        self.image.setLookupTable(gap_lookup_table(lookup_table(name)))

    # ---- data -----------------------------------------------------------------------
    def set_trace(self, trace: AttentionTrace | None) -> None:
        self.trace = trace
        kinds = trace.kinds if trace else []
        keep = fill_kind_box(self.kind_box, kinds, self.kind)
        self.kind_box.setVisible(len(kinds) > 1)
        self.kind_label.setVisible(len(kinds) > 1)
        self.kind = keep
        self.redraw()

    def _on_kind(self, kind: str) -> None:
        if kind and kind != self.kind:
            self.kind = kind
            self.redraw()
            self.kind_changed.emit(kind)

    def redraw(self) -> None:
        if self.trace is None or self.kind is None:
            self.image.clear()
            self.layout_ = self.mosaic = None
            return
        weights = self.trace.weights(self.kind)  # (L, H, Tq, Tk)
        if self.threshold.value() > 0:
            weights = np.where(weights < self.threshold.value(), 0.0, weights)
        self.mosaic, layout = tile(display_codes(weights), fill=GAP_CODE)
        self.image.setImage(self.mosaic, autoLevels=False, levels=(0, 255))
        if layout != self.layout_:
            self.layout_ = layout
            self._place_labels()
            h, w = layout.shape
            self.view.setRange(xRange=(-0.08 * w - 2, w), yRange=(-0.06 * h - 2, h), padding=0.01)

    def _place_labels(self) -> None:
        for item in self.labels:
            self.view.removeItem(item)
        self.labels = []
        lay = self.layout_
        for r in range(lay.rows):
            y, _ = lay.tile_origin(r, 0)
            self._label(f"L{r}", -1, y + lay.tile_h / 2, anchor=(1, 0.5))
        for c in range(lay.cols):
            _, x = lay.tile_origin(0, c)
            self._label(f"H{c}", x + lay.tile_w / 2, -1, anchor=(0.5, 1))

    def _label(self, text: str, x: float, y: float, anchor) -> None:
        item = pg.TextItem(text, color=(150, 150, 150), anchor=anchor)
        item.setPos(x, y)
        self.view.addItem(item)
        self.labels.append(item)

    # ---- hover and click -------------------------------------------------------------
    def cell_at_scene(self, scene_pos) -> tuple[int, int, int, int] | None:
        if self.layout_ is None:
            return None
        p = self.view.mapSceneToView(scene_pos)
        return self.layout_.locate(p.y(), p.x())

    def describe(self, layer: int, head: int, qi: int, ki: int) -> str:
        tr, kind = self.trace, self.kind
        q, k = tr.query_tokens(kind), tr.key_tokens(kind)
        w = float(tr.head(kind, layer, head)[qi, ki])
        return (f"layer {layer}, head {head}: query {qi} {q[qi]!r} -> key {ki} {k[ki]!r}: "
                f"weight {w:.4f}")

    def _on_hover(self, scene_pos) -> None:
        cell = self.cell_at_scene(scene_pos)
        if cell is None:
            self.plot.setToolTip("")
            return
        self.last_tooltip = self.describe(*cell)
        self.readout.setText(self.last_tooltip)
        self.plot.setToolTip(self.last_tooltip)

    def _on_click(self, event) -> None:
        cell = self.cell_at_scene(event.scenePos())
        if cell is not None:
            self.state.select_head(self.kind, cell[0], cell[1])

    def scene_pos_of(self, layer: int, head: int, qi: int, ki: int):
        """The scene point at the centre of one cell (for tests and keyboard focus)."""
        y, x = self.layout_.tile_origin(layer, head)
        return self.view.mapViewToScene(pg.Point(x + ki + 0.5, y + qi + 0.5))

    def export_target(self) -> QWidget:
        return self.plot
