"""Logit lens view: layers x positions, each cell the token the residual stream after that
layer would predict (engine.interventions.lens), coloured by the probability it gives the
token the model finally predicts there; hover for the top 5.

Computed in the model worker after every Run (with the window's interventions), only while
the view is shown; a table of at most a few thousand short cells, so plain Qt items.
"""
from __future__ import annotations

import html

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from gui.colormaps import lookup_table
from gui.theme import text_on
from gui.worker import MODEL, Jobs

MAX_POSITIONS = 256     # the lens's last positions shown; a longer text is cut at its start


def _lens(loaded, text: str, target: str, spec):
    from engine.interventions.lens import logit_lens   # torch, in the worker

    return logit_lens(loaded, text, target=target or None, spec=spec)


class LensView(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, "The logit lens could not be computed", lane=MODEL)
        self.lens = None
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.note)
        layout.addWidget(self.table, 1)
        self.stale = True            # a Run came while the view was hidden
        state.trace_changed.connect(self._on_trace)
        state.colormap_changed.connect(lambda _name: self.show_lens(self.lens))
        self._on_trace(state.trace)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.stale:
            self._on_trace(self.state.trace)

    def _on_trace(self, trace) -> None:
        self.stale = not self.isVisible()
        if self.stale:
            return
        loaded = self.state.loaded
        if trace is None or loaded is None:
            self.jobs.cancel()
            self.show_lens(None, "Run a text: each decoder layer's prediction appears here.")
            return
        if not loaded.generates:
            self.show_lens(None, "The logit lens reads what a model predicts; an encoder predicts no next token.")
            return
        self.jobs.start(_lens, loaded, self.state.text, self.state.target, self.state.interventions,
                        on_returned=self.show_lens)

    def show_lens(self, lens, message: str = "") -> None:
        self.lens = lens
        if lens is None:
            self.table.clear()
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.note.setText(message)
            return
        start = max(0, len(lens.tokens) - MAX_POSITIONS)
        positions = range(start, len(lens.tokens))
        lut = lookup_table(self.state.colormap)
        self.note.setText("Each cell: the top token the residual stream after that layer predicts for the next "
                          "position, through the model's final norm and unembedding; colour: the probability of "
                          "the token the last layer predicts. Hover for the top 5."
                          + (f" The first {start} positions are not shown." if start else ""))
        self.table.clear()
        self.table.setRowCount(lens.n_layers)
        self.table.setColumnCount(len(positions))
        self.table.setHorizontalHeaderLabels([f"{p} {lens.tokens[p]}" for p in positions])
        self.table.setVerticalHeaderLabels([f"L{i}" for i in range(lens.n_layers)])
        for layer in range(lens.n_layers):
            for col, p in enumerate(positions):
                item = QTableWidgetItem(lens.top_tokens[layer][p][0])
                rgb = lut[min(255, int(float(lens.final_p[layer, p]) * 255))][:3]
                colour = QColor(int(rgb[0]), int(rgb[1]), int(rgb[2]))
                item.setBackground(QBrush(colour))
                item.setForeground(QBrush(text_on(colour)))
                item.setToolTip("<br>".join(f"{html.escape(t)} &nbsp; {q:.3f}" for t, q in
                                            zip(lens.top_tokens[layer][p], lens.top_p[layer, p])))
                self.table.setItem(layer, col, item)
        self.table.resizeColumnsToContents()

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        super().closeEvent(event)
