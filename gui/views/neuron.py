"""Neuron view: how one head turns a query and the keys into weights, step by step.

For a chosen layer, head and query token: the query vector q, every key vector k, their
elementwise product q*k, the dot products q.k / sqrt(d), and the softmax: the weights the
heatmaps show. The vectors are recomputed in the view's worker (engine.neurons).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from engine.neurons import QueryKeys, query_keys
from gui.views.kinds import fill_kind_box
from gui.colormaps import colormap
from gui.worker import Jobs

TITLE = 'The neuron view could not run'     # the title of this view's error dialogs

PANES = ("query q", "keys k", "q * k", "q . k / sqrt(d)", "softmax")


class NeuronView(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, TITLE)
        self.data: QueryKeys | None = None
        self.row: dict | None = None
        self.kind_box = QComboBox()
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.head_box.setPrefix("head ")
        self.query_box = QComboBox()
        for w in (self.kind_box,):
            w.currentTextChanged.connect(lambda _: self.compute())
        for w in (self.layer_box, self.head_box):
            w.valueChanged.connect(lambda _: self.compute())
        self.query_box.currentIndexChanged.connect(lambda _: self.redraw())
        top = QHBoxLayout()
        for w in (self.kind_box, self.layer_box, self.head_box, QLabel("query token:"), self.query_box):
            top.addWidget(w)
        top.addStretch(1)
        self.plots = pg.GraphicsLayoutWidget()
        self.images: dict[str, pg.ImageItem] = {}
        diverging = pg.colormap.get("CET-D1")  # blue - white - red: sign matters for q, k and q*k
        for col, name in enumerate(PANES):
            plot = self.plots.addPlot(row=0, col=col, title=name)
            plot.invertY(True)
            plot.hideButtons()
            plot.setMouseEnabled(False, False)
            plot.hideAxis("bottom")
            if col:
                plot.hideAxis("left")
            img = pg.ImageItem(axisOrder="row-major")
            img.setColorMap(diverging if col < 4 else colormap(state.colormap))
            plot.addItem(img)
            self.images[name] = img
        self._left = self.plots.getItem(0, 0)
        self.note = QLabel("Run a text, then pick a head and a query token.")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.plots, 1)
        layout.addWidget(self.note)
        state.trace_changed.connect(self._on_trace)
        state.head_selected.connect(self._on_head)
        if state.trace is not None:
            self._on_trace(state.trace)

    def _on_trace(self, trace) -> None:
        if trace is None:
            return
        fill_kind_box(self.kind_box, trace.kinds, self.kind_box.currentText(), default_last=False)
        self.compute()

    def _on_head(self, kind: str, layer: int, head: int) -> None:
        for w in (self.kind_box, self.layer_box, self.head_box):
            w.blockSignals(True)
        self.kind_box.setCurrentText(kind)
        self.layer_box.setValue(layer)
        self.head_box.setValue(head)
        for w in (self.kind_box, self.layer_box, self.head_box):
            w.blockSignals(False)
        self.compute()

    def compute(self) -> None:
        loaded, trace, kind = self.state.loaded, self.state.trace, self.kind_box.currentText()
        if loaded is None or trace is None or kind not in trace.kinds:
            return
        n_layers, n_heads = trace.shape(kind)[:2]
        self.layer_box.setMaximum(n_layers - 1)
        self.head_box.setMaximum(n_heads - 1)
        self.jobs.start(query_keys, loaded, self.state.text, kind, self.layer_box.value(), self.head_box.value(),
                        target=self.state.target or None, pair=self.state.pair or None,
                        on_returned=self._computed, on_error=lambda exc: self.note.setText(f"Cannot compute: {exc}"))

    def _computed(self, data: QueryKeys) -> None:
        self.data = data
        kind = self.kind_box.currentText()
        tokens = data.trace.query_tokens(kind)
        keep = self.query_box.currentIndex()
        self.query_box.blockSignals(True)
        self.query_box.clear()
        self.query_box.addItems([f"{i}: {t}" for i, t in enumerate(tokens)])
        self.query_box.setCurrentIndex(min(max(keep, 0), len(tokens) - 1))
        self.query_box.blockSignals(False)
        self.redraw()

    def redraw(self) -> None:
        if self.data is None or self.query_box.currentIndex() < 0:
            return
        kind = self.kind_box.currentText()
        qi = self.query_box.currentIndex()
        self.row = row = self.data.row(qi)
        keys = self.data.trace.key_tokens(kind)
        lim = float(max(np.abs(row["keys"]).max(), np.abs(row["query"]).max(), 1e-9))
        plim = float(max(np.abs(row["product"]).max(), 1e-9))
        slim = float(max(np.abs(row["scores"]).max(), 1e-9))
        self.images["query q"].setImage(row["query"][None, :], autoLevels=False, levels=(-lim, lim))
        self.images["keys k"].setImage(row["keys"], autoLevels=False, levels=(-lim, lim))
        self.images["q * k"].setImage(row["product"], autoLevels=False, levels=(-plim, plim))
        self.images["q . k / sqrt(d)"].setImage(row["scores"][:, None], autoLevels=False, levels=(-slim, slim))
        self.images["softmax"].setImage(row["weights"][:, None], autoLevels=False, levels=(0, 1))
        self._left.getAxis("left").setTicks([[(0.5, self.data.trace.query_tokens(kind)[qi])]])
        for name in PANES[1:]:
            plot = self.images[name].getViewBox()
            plot.setYRange(0, len(keys), padding=0)
        self.plots.getItem(0, 1).showAxis("left")
        self.plots.getItem(0, 1).getAxis("left").setTicks([[(i + 0.5, t) for i, t in enumerate(keys)]])
        top = int(np.argmax(row["weights"]))
        self.note.setText(f"query {qi} {self.data.trace.query_tokens(kind)[qi]!r}: strongest key {top} {keys[top]!r} "
                          f"(weight {row['weights'][top]:.3f}, score {row['scores'][top]:.2f})")

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        super().closeEvent(event)
