"""Neuron view: how one head turns a query and the keys into weights, step by step.

For a chosen layer, head and query token: the query vector q, every key vector k, their
elementwise product q*k, the dot products q.k / sqrt(d), and the softmax: the weights the
heatmaps show. The vectors are the ones the Run recorded at the seam, read in the view's
worker (engine.inspection.neurons): no second forward.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from attnscope.gui.colormaps import attach_colorbar, colormap
from attnscope.gui.drawing.settling import settle
from attnscope.gui.widgets.token_axis import fit_row_axis
from attnscope.gui.widgets.token_labels import fitting_ticks
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.superseded import gives_way
from attnscope.gui.worker import MODEL, Jobs
from attnscope.gui.widgets.kind_box import fill_kind_box

if TYPE_CHECKING:
    from attnscope.engine.inspection import QueryKeys

TITLE = 'The neuron view could not run'     # the title of this view's error dialogs

PANES = ("query q", "keys k", "q * k", "q . k / sqrt(d)", "softmax")


def _query_keys(*args, **kwargs) -> QueryKeys:
    """attnscope.engine.inspection.neurons.query_keys, in the worker: torch is imported there, never to draw the view."""
    from attnscope.engine.inspection import query_keys

    return query_keys(*args, **kwargs)


class NeuronView(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, TITLE, lane=MODEL)
        self.data: QueryKeys | None = None
        self.row: dict | None = None
        self.kind_box = QComboBox()
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.head_box.setPrefix("head ")
        self.query_box = QComboBox()
        self.kind_box.currentTextChanged.connect(lambda k: k and self.state.select(kind=k))
        self.layer_box.valueChanged.connect(lambda v: self.state.select(layer=v))
        self.head_box.valueChanged.connect(lambda v: self.state.select(head=v))
        self.query_box.currentIndexChanged.connect(lambda _: self.redraw())
        top = QHBoxLayout()
        for w in (self.kind_box, self.layer_box, self.head_box, QLabel("query token:"), self.query_box):
            top.addWidget(w)
        top.addStretch(1)
        self.plots = pg.GraphicsLayoutWidget()
        self.images: dict[str, pg.ImageItem] = {}
        self.bars: dict[str, pg.ColorBarItem] = {}
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
            plot.addItem(img)
            self.images[name] = img
            if col:   # q shares the keys' colours (one range for both): its bar is the keys'
                self.bars[name] = attach_colorbar(plot, img, diverging if col < 4 else colormap(state.colormap))
            else:
                img.setColorMap(diverging)
        self._left = self.plots.getItem(0, 0)
        self.note = ElidedLabel("Run a text, then pick a head and a query token.")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.plots, 1)
        layout.addWidget(self.note)
        state.trace_changed.connect(self._on_selection)
        state.selection_changed.connect(self._on_selection)
        state.colormap_changed.connect(self._on_colormap)
        gives_way(state, self.jobs, self.compute)   # the old trace's vectors hold the model thread a new Run needs
        self._on_selection()

    def _on_colormap(self, name: str) -> None:
        self.bars["softmax"].setColorMap(colormap(name))

    def _on_selection(self, *_args) -> None:
        """The state's (kind, layer, head), or a plain note when there is no trace."""
        trace, kind = self.state.trace, self.state.kind
        fill_kind_box(self.kind_box, trace.kinds if trace else [], kind)
        if trace is None or kind not in trace.kinds:
            self.jobs.cancel()
            self.data = self.row = None
            for img in self.images.values():
                img.clear()
            self.note.setText("Run a text, then pick a head and a query token.")
            return
        n_layers, n_heads = trace.shape(kind)[:2]
        for box, top, value in ((self.layer_box, n_layers - 1, self.state.layer),
                                (self.head_box, n_heads - 1, self.state.head)):
            box.blockSignals(True)
            box.setRange(0, top)
            box.setValue(value)
            box.blockSignals(False)
        self.compute()

    def compute(self) -> None:
        trace, kind = self.state.trace, self.state.kind
        if trace is None or kind not in trace.kinds:
            return
        self.jobs.start(_query_keys, trace, kind, self.state.layer, self.state.head,
                        on_returned=lambda data, k=kind: self._computed(data, k), on_error=lambda exc: self.note.setText(f"Cannot compute: {exc}"))

    def _computed(self, data: QueryKeys, kind: str) -> None:
        from attnscope.engine.traces import reading     # here: this module loads no engine at import

        self.data, self.data_kind = data, kind
        tokens = reading.query_tokens(data.trace, kind)
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
        kind = self.data_kind
        qi = self.query_box.currentIndex()
        self.row = row = self.data.row(qi)
        from attnscope.engine.traces import reading     # here: this module loads no engine at import

        keys, queries = reading.key_tokens(self.data.trace, kind), reading.query_tokens(self.data.trace, kind)
        lim = float(max(np.abs(row["keys"]).max(), np.abs(row["query"]).max(), 1e-9))
        plim = float(max(np.abs(row["product"]).max(), 1e-9))
        shown = np.where(row["masked"] | ~np.isfinite(row["scores"]), np.nan, row["scores"])   # masked keys: blank
        finite = np.abs(shown[np.isfinite(shown)])
        slim = float(max(finite.max(initial=0.0), 1e-9))
        self.images["query q"].setImage(row["query"][None, :], autoLevels=False, levels=(-lim, lim))
        self.images["keys k"].setImage(row["keys"], autoLevels=False, levels=(-lim, lim))
        self.images["q * k"].setImage(row["product"], autoLevels=False, levels=(-plim, plim))
        for name, top in (("keys k", lim), ("q * k", plim), ("q . k / sqrt(d)", slim)):
            self.bars[name].setLevels((-top, top))       # diverging maps: centred at 0, symmetric
        self.images["q . k / sqrt(d)"].setImage(shown[:, None], autoLevels=False, levels=(-slim, slim))
        self.images["softmax"].setImage(row["weights"][:, None], autoLevels=False, levels=(0, 1))
        fit_row_axis(self._left.getAxis("left"), queries)
        self._left.getAxis("left").setTicks([[(0.5, queries[qi])]])
        for name in PANES[1:]:
            plot = self.images[name].getViewBox()
            plot.setYRange(0, len(keys), padding=0)
        self.plots.getItem(0, 1).showAxis("left")
        keys_plot = self.plots.getItem(0, 1)
        fit_row_axis(keys_plot.getAxis("left"), keys)
        keys_plot.getAxis("left").setTicks([fitting_ticks(keys, keys_plot.vb.height(), self.fontMetrics().height() + 2)])
        settle(self)   # laid out and labelled before it paints: one paint, not three
        top = int(np.argmax(row["weights"]))
        self.note.setText(f"query {qi} {queries[qi]!r}: strongest key {top} {keys[top]!r} "
                          f"(weight {row['weights'][top]:.3f}, score {row['scores'][top]:.2f})"
                          + (f"   {self.data.note}" if self.data.note else ""))

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        super().closeEvent(event)
