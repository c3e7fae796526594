"""Compare: the same head of two models side by side, their difference, and a sortable
table of every head's largest difference.

Model A is the window's model. Model B is, for a Hugging Face BERT, the same weights run by
attnscope's own encoder (the proof that our BERT is BERT: differences ~1e-7), or any other
model a user opens here (a checkpoint or a folder) on the same text.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import (QComboBox, QFileDialog, QLabel, QPushButton, QSpinBox, QSplitter,
                               QTableWidget, QVBoxLayout, QWidget)

from attnscope.engine.inspection import compare_traces
from attnscope.engine.traces import reading
from attnscope.gui.colormaps import attach_colorbar, colormap
from attnscope.gui.drawing.kinds import levels_for, paint_kind
from attnscope.gui.widgets.flow import FlowLayout
from attnscope.gui.settings import app_settings, remember_folder, start_folder
from attnscope.gui.drawing.empty import hide_empty, show_empty
from attnscope.gui.widgets.token_labels import fitting_ticks
from attnscope.gui.views.head_stats import NumberItem
from attnscope.gui.worker import MODEL, Jobs, error_message
from attnscope.gui.widgets.peak_image import PeakImage

TITLE = 'Could not compare'     # the title of this view's error dialogs

SAME_WEIGHTS = "same weights in attnscope's encoder"


def _compare_job(a, b_source, text, pair: str, device: str):
    """Off the GUI thread: build model B if needed, trace both, compare every kind they share."""
    from attnscope.engine.loading import open_model
    from attnscope.engine.traces import trace_text

    if b_source == SAME_WEIGHTS:
        from attnscope.engine.loading import hf_to_scratch
        b = hf_to_scratch(a)
    elif isinstance(b_source, str):
        b = open_model(b_source, device)
    else:
        b = b_source
    ta, tb = trace_text(a, text, pair=pair), trace_text(b, text, pair=pair)
    shared = [k for k in ta.kinds if k in tb.kinds]
    if not shared:
        raise ValueError(f"{a.name} and {b.name} have no kind of attention in common.")
    return b, ta, tb, {k: compare_traces(ta, tb, k) for k in shared}


class CompareView(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, TITLE, lane=MODEL)
        self.b_source = SAME_WEIGHTS
        self.result = None            # (model B, trace A, trace B, {kind: comparison})

        self.b_label = QLabel()
        self.same_button = QPushButton("B = same weights, our encoder")
        self.same_button.clicked.connect(lambda: self.set_b(SAME_WEIGHTS))
        self.open_button = QPushButton("B = open another model…")
        self.open_button.clicked.connect(self._open_b)
        self.open_folder_button = QPushButton("B = open a Hugging Face folder…")
        self.open_folder_button.setToolTip("B is a Hugging Face model folder (same tokenizer as A)")
        self.open_folder_button.clicked.connect(self._open_b_folder)
        self.run_button = QPushButton("Compare")
        self.run_button.clicked.connect(self.run)
        self.kind_box = QComboBox()
        self.kind_box.currentTextChanged.connect(lambda k: k and self.state.select(kind=k) or self.redraw())
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.head_box.setPrefix("head ")
        self.layer_box.valueChanged.connect(lambda v: self.state.select(layer=v) or self.redraw())
        self.head_box.valueChanged.connect(lambda v: self.state.select(head=v) or self.redraw())
        top = FlowLayout().addWidgets(self.same_button, self.open_button, self.open_folder_button, self.run_button,
                                      self.kind_box, self.layer_box, self.head_box)

        self.plots = pg.GraphicsLayoutWidget()
        self.images, self.panes = [], []
        for col, title in enumerate(("A", "B", "A - B")):
            vb = self.plots.addPlot(row=0, col=col, title=title)
            vb.invertY(True)
            vb.showAxis("bottom")
            if col:
                vb.hideAxis("left")
            vb.setMouseEnabled(False, False)
            vb.hideButtons()
            img = PeakImage(extreme=col == 2)     # the signed difference keeps its largest either way
            vb.addItem(img)
            self.images.append(img)
            self.panes.append(vb)
        self.images[0].setColorMap(colormap(state.colormap))   # A and B share B's bar: weights 0..1
        self.bar = attach_colorbar(self.panes[1], self.images[1], colormap(state.colormap))
        # The difference is signed, centred at 0, its range stated on its bar and in its title.
        self.diff_bar = attach_colorbar(self.panes[2], self.images[2], pg.colormap.get("CET-D1"), (-1.0, 1.0))
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["layer", "head", "max |A - B|"])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.cellClicked.connect(self._open_row)
        self.summary = QLabel("Press Compare.")
        self.summary.setWordWrap(True)
        split = self.split = QSplitter()   # hidden while there is no model B: nothing to compare
        split.addWidget(self.plots)
        split.addWidget(self.table)
        split.setSizes([700, 260])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.b_label)
        layout.addWidget(split, 1)
        layout.addWidget(self.summary)
        state.model_changed.connect(self._on_model)
        state.trace_changed.connect(self._on_trace)
        state.selection_changed.connect(self._on_selection)
        state.colormap_changed.connect(self._on_colormap)
        self.compared_text: tuple | None = None   # (prompt, pair) of the result shown: str or engine.inputs.Chat
        self._on_model(state.loaded)

    def _on_colormap(self, name: str) -> None:
        kind = self.kind_box.currentText() or None          # a signed kind keeps its diverging map
        paint_kind(kind, name, tuple(self.bar.levels()), bar=self.bar, images=self.images[:2])

    def _on_model(self, loaded) -> None:
        self.jobs.cancel()
        self._clear("Press Compare.")
        hf = loaded is not None and loaded.family == "hf-bert"
        self.same_button.setEnabled(hf)
        if self.b_source == SAME_WEIGHTS and not hf:
            self.b_source = None
        elif hf and self.b_source is None:
            self.b_source = SAME_WEIGHTS
        self._show_b()
        if self.b_source is None:
            self.summary.setText("No model B yet: open one above (a checkpoint or a Hugging Face folder).")

    def _clear(self, summary: str) -> None:
        self.result, self.compared_text = None, None
        for img in self.images:
            img.clear()
        for pane, text in zip(self.panes, ("Model A's head", "Model B's head", "their difference")):
            pane.getAxis("bottom").setTicks([[]])
            show_empty(pane, f"{text} appears here after Compare.", ("left", "bottom"))
        self.panes[0].getAxis("left").setTicks([[]])
        for bar in (self.bar, self.diff_bar):     # no colours drawn, no scale for them
            bar.setVisible(False)
        self.panes[2].setTitle("A - B")
        self.table.setRowCount(0)
        self.kind_box.blockSignals(True)
        self.kind_box.clear()
        self.kind_box.blockSignals(False)
        self.summary.setText(summary)

    def _on_trace(self, trace) -> None:
        """Another text: a comparison on screen is out of date, so it runs again."""
        if trace is None or self.compared_text is None:
            return
        if (self.state.prompt, self.state.pair) != self.compared_text:
            self.summary.setText("Out of date (the text changed): comparing again…")
            self.run()

    def _on_selection(self, kind: str, layer: int, head: int) -> None:
        for box, value in ((self.layer_box, layer), (self.head_box, head)):
            box.blockSignals(True)
            box.setValue(value)
            box.blockSignals(False)
        if kind and self.kind_box.findText(kind) >= 0:
            self.kind_box.blockSignals(True)
            self.kind_box.setCurrentText(kind)
            self.kind_box.blockSignals(False)
        self.redraw()

    def _show_b(self) -> None:
        b = self.b_source
        text = "none yet: open a model to compare with" if b is None else (
            b if isinstance(b, str) else getattr(b, "name", str(b)))
        self.b_label.setText(f"A: {self.state.loaded.name if self.state.loaded else '-'}    B: {text}")
        self.split.setVisible(b is not None)

    def set_b(self, source) -> None:
        """B is SAME_WEIGHTS, a model source (path), or a LoadedModel."""
        self.b_source = source
        self._show_b()

    def _open_b_folder(self) -> None:
        settings = app_settings()
        path = QFileDialog.getExistingDirectory(self, "Model B: a Hugging Face folder", start_folder(settings, "models"))
        if path:
            remember_folder(settings, "models", path)
            self.set_b(path)
            self.run()

    def _open_b(self) -> None:
        settings = app_settings()
        path, _ = QFileDialog.getOpenFileName(self, "Model B", start_folder(settings, "models"),
                                              "Checkpoints (*.safetensors *.pt *.pth);;All files (*)")
        if path:
            remember_folder(settings, "models", path)
            self.set_b(path)
            self.run()

    def run(self) -> None:
        a = self.state.loaded
        if a is None or self.b_source is None:
            self.summary.setText("Choose model B first: open another model (a checkpoint or a folder) above.")
            return
        if self.result is None:
            self.summary.setText("Comparing…")
        text = (self.state.prompt if self.state.text else "time flies like an arrow", self.state.pair)
        self.jobs.start(_compare_job, a, self.b_source, text[0], text[1], self.state.device or "auto",
                        on_returned=lambda result: self._done(result, text),
                        on_error=lambda exc: self._clear(f"Cannot compare: {error_message(exc)}"))

    def _done(self, result, text: tuple[str, str]) -> None:
        self.result, self.compared_text = result, text
        b, ta, tb, comparisons = result
        kinds = list(comparisons)
        self.kind_box.blockSignals(True)
        self.kind_box.clear()
        self.kind_box.addItems(kinds)
        if self.state.kind in kinds:
            self.kind_box.setCurrentText(self.state.kind)
        self.kind_box.blockSignals(False)
        worst = max(c["max"] for c in comparisons.values())
        self.summary.setText(f"A = {ta.model_name}, B = {tb.model_name} on {str(text[0])!r}: largest difference over "
                             f"every head and cell: {worst:.3g}")
        self.redraw()

    def redraw(self) -> None:
        if self.result is None or not self.kind_box.currentText():
            return
        _, ta, tb, comparisons = self.result
        kind = self.kind_box.currentText()
        comp = comparisons[kind]
        n_layers, n_heads = comp["per_head"].shape
        for box, top in ((self.layer_box, n_layers - 1), (self.head_box, n_heads - 1)):
            box.blockSignals(True)
            box.setMaximum(top)
            box.blockSignals(False)
        l, h = min(self.state.layer, n_layers - 1), min(self.state.head, n_heads - 1)
        for pane in self.panes:
            hide_empty(pane, ("bottom",))
        for bar in (self.bar, self.diff_bar):
            bar.setVisible(True)
        hide_empty(self.panes[0], ("left",))
        # A and B share B's bar: weights on 0..1; a signed kind (effective attention) on a diverging
        # scale out to the larger magnitude of the two heads, so a negative mixing is not drawn as 0.
        heads = [reading.head(t, kind, l, h) for t in (ta, tb)]
        levels = levels_for(kind, np.stack(heads))
        paint_kind(kind, self.state.colormap, levels, bar=self.bar, images=self.images[:2])
        for image, head in zip(self.images, heads):
            image.setImage(head, autoLevels=False, levels=levels)
        d = reading.head(ta, kind, l, h).astype(np.float64) - reading.head(tb, kind, l, h)   # signed: A - B
        top = max(float(np.abs(d).max()), 1e-12)
        self.images[2].setImage(d, autoLevels=False, levels=(-top, top))
        self.diff_bar.setLevels((-top, top))
        self.panes[2].setTitle(f"A - B (colours span ±{top:.1g})")
        line = self.fontMetrics().height() + 2
        q, k = reading.query_tokens(ta, kind), reading.key_tokens(ta, kind)
        self.panes[0].getAxis("left").setTicks([fitting_ticks(q, self.panes[0].vb.height(), line)])
        for pane in self.panes:
            pane.getAxis("bottom").setTicks([fitting_ticks(k, pane.vb.width(), 4 * line)])
        self.table.setSortingEnabled(False)
        self.table.setRowCount(n_layers * n_heads)
        for row, (li, hi) in enumerate((li, hi) for li in range(n_layers) for hi in range(n_heads)):
            self.table.setItem(row, 0, NumberItem(li, 0))
            self.table.setItem(row, 1, NumberItem(hi, 0))
            self.table.setItem(row, 2, NumberItem(float(comp["per_head"][li, hi]), 8))
        self.table.setSortingEnabled(True)

    def _open_row(self, row: int, _col: int) -> None:
        self.state.select(layer=int(self.table.item(row, 0).value), head=int(self.table.item(row, 1).value))

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        super().closeEvent(event)
