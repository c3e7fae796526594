"""Head detail: one head (or a layer's mean / max over heads) large, tokens on both axes.

Arrow keys move between heads (left/right) and layers (up/down); the value under the
cursor is read out below the map.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout,
                               QWidget)

from engine.analysis import display_weights, special_mask
from engine.trace import AttentionTrace
from gui.colormaps import colormap
from gui.views.kinds import fill_kind_box
from gui.views.token_axis import VerticalTokenAxis

AGGREGATES = ("one head", "mean of heads", "max of heads")
MAX_LABELLED = 160        # beyond this many tokens, label every n-th one


def aggregate(weights: np.ndarray, layer: int, head: int, how: str) -> np.ndarray:
    """(L, H, Tq, Tk) -> (Tq, Tk) for one head or a layer's mean / max over heads."""
    if how == "mean of heads":
        return weights[layer].mean(axis=0)
    if how == "max of heads":
        return weights[layer].max(axis=0)
    return weights[layer, head]


def short(token: str, limit: int = 12) -> str:
    return token if len(token) <= limit else token[: limit - 1] + "…"


class HeadDetail(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.trace: AttentionTrace | None = None
        self.kind: str | None = None
        self.layer = 0
        self.head = 0
        self.matrix: np.ndarray | None = None
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

        self.kind_box = QComboBox()
        self.kind_box.currentTextChanged.connect(self._on_kind)
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.head_box.setPrefix("head ")
        self.layer_box.valueChanged.connect(lambda v: self.show_head(self.kind, v, self.head))
        self.head_box.valueChanged.connect(lambda v: self.show_head(self.kind, self.layer, v))
        self.agg_box = QComboBox()
        self.agg_box.addItems(AGGREGATES)
        self.agg_box.currentTextChanged.connect(lambda _: self.redraw())
        # Display options: they change what is drawn, never the numbers read under the cursor.
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.0, 1.0)
        self.threshold.setSingleStep(0.02)
        self.threshold.setPrefix("hide below ")
        self.threshold.setToolTip("Cells with a smaller weight are drawn as 0")
        self.normalise = QCheckBox("scale to max")
        self.normalise.setToolTip("Stretch this map so its largest weight is 1")
        self.hide_special = QCheckBox("hide specials")
        self.hide_special.setToolTip("Leave out [CLS], [SEP], [BOS], [EOS] rows and columns")
        self.threshold.valueChanged.connect(lambda _: self.redraw())
        self.normalise.toggled.connect(lambda _: self.redraw())
        self.hide_special.toggled.connect(lambda _: self.redraw())
        controls = QHBoxLayout()
        for w in (self.kind_box, self.layer_box, self.head_box, self.agg_box, self.threshold, self.normalise,
                  self.hide_special):
            controls.addWidget(w)
        controls.addStretch(1)

        self.key_axis = VerticalTokenAxis("top")
        self.plot = pg.PlotWidget(axisItems={"top": self.key_axis})
        self.item = self.plot.getPlotItem()
        self.item.invertY(True)
        self.item.setMouseEnabled(False, False)
        self.item.hideButtons()
        self.item.setMenuEnabled(False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.item.addItem(self.image)
        self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(state.colormap),
                                        interactive=False, width=12)
        self.colorbar.setImageItem(self.image, insert_in=self.item)
        self.item.showAxis("top")
        self.item.hideAxis("bottom")
        self.item.setLabel("left", "query")
        self.item.setLabel("top", "key")
        self.readout = QLabel(" ")
        self.plot.scene().sigMouseMoved.connect(self._on_hover)

        box = QVBoxLayout(self)
        box.setContentsMargins(2, 2, 2, 2)
        box.addLayout(controls)
        box.addWidget(self.plot, 1)
        box.addWidget(self.readout)

        state.trace_changed.connect(self.set_trace)
        state.head_selected.connect(self.show_head)
        state.colormap_changed.connect(self._on_colormap)
        if state.trace is not None:
            self.set_trace(state.trace)

    def _on_colormap(self, name: str) -> None:
        self.colorbar.setColorMap(colormap(name))

    def set_trace(self, trace: AttentionTrace | None) -> None:
        self.trace = trace
        kinds = trace.kinds if trace else []
        self.kind = fill_kind_box(self.kind_box, kinds, self.kind)
        self.kind_box.setVisible(len(kinds) > 1)
        self._clamp()
        self.redraw()

    def _on_kind(self, kind: str) -> None:
        if kind:
            self.show_head(kind, self.layer, self.head)

    def show_head(self, kind: str | None, layer: int, head: int) -> None:
        if self.trace is None or kind not in self.trace.kinds:
            return
        self.kind, self.layer, self.head = kind, layer, head
        self._clamp()
        self.redraw()

    def _clamp(self) -> None:
        if self.trace is None or self.kind is None:
            return
        L, H = self.trace.shape(self.kind)[:2]
        self.layer = min(max(self.layer, 0), L - 1)
        self.head = min(max(self.head, 0), H - 1)
        for box, top, value in ((self.layer_box, L - 1, self.layer), (self.head_box, H - 1, self.head)):
            box.blockSignals(True)
            box.setRange(0, top)
            box.setValue(value)
            box.blockSignals(False)
        self.kind_box.blockSignals(True)
        self.kind_box.setCurrentText(self.kind)
        self.kind_box.blockSignals(False)

    def redraw(self) -> None:
        if self.trace is None or self.kind is None:
            self.image.clear()
            self.matrix = None
            return
        how = self.agg_box.currentText()
        raw = aggregate(self.trace.weights(self.kind), self.layer, self.head, how)  # (Tq, Tk)
        q, k = self.trace.query_tokens(self.kind), self.trace.key_tokens(self.kind)
        hide = self.hide_special.isChecked()
        self.q_index = np.flatnonzero(special_mask(q)) if hide else np.arange(len(q))
        self.k_index = np.flatnonzero(special_mask(k)) if hide else np.arange(len(k))
        self.matrix = raw[np.ix_(self.q_index, self.k_index)]  # the true weights of the cells shown
        shown = display_weights(self.matrix, self.threshold.value(), self.normalise.isChecked())
        self.image.setImage(shown, autoLevels=False, levels=(0.0, 1.0))
        self.head_box.setEnabled(how == "one head")
        self._label_axes()
        tq, tk = self.matrix.shape
        self.item.setRange(xRange=(0, tk), yRange=(0, tq), padding=0.02)

    def _label_axes(self) -> None:
        q_all, k_all = self.trace.query_tokens(self.kind), self.trace.key_tokens(self.kind)
        q, k = [q_all[i] for i in self.q_index], [k_all[i] for i in self.k_index]
        step_q = max(1, len(q) // MAX_LABELLED + (len(q) > MAX_LABELLED))
        step_k = max(1, len(k) // MAX_LABELLED + (len(k) > MAX_LABELLED))
        self.item.getAxis("left").setTicks([[(i + 0.5, short(t)) for i, t in enumerate(q) if i % step_q == 0]])
        self.key_axis.set_tokens([short(t) for t in k], step_k)

    def _on_hover(self, scene_pos) -> None:
        if self.matrix is None:
            return
        p = self.item.vb.mapSceneToView(scene_pos)
        qi, ki = int(np.floor(p.y())), int(np.floor(p.x()))
        tq, tk = self.matrix.shape
        if 0 <= qi < tq and 0 <= ki < tk:
            q, k = self.trace.query_tokens(self.kind), self.trace.key_tokens(self.kind)
            qo, ko = int(self.q_index[qi]), int(self.k_index[ki])
            self.readout.setText(f"query {qo} {q[qo]!r} -> key {ko} {k[ko]!r}: {self.matrix[qi, ki]:.4f}")

    def keyPressEvent(self, event) -> None:
        moves = {Qt.Key.Key_Left: (0, -1), Qt.Key.Key_Right: (0, 1), Qt.Key.Key_Up: (-1, 0), Qt.Key.Key_Down: (1, 0)}
        move = moves.get(event.key())
        if move and self.trace is not None:
            self.show_head(self.kind, self.layer + move[0], self.head + move[1])
        else:
            super().keyPressEvent(event)

    def export_target(self) -> QWidget:
        return self.plot
