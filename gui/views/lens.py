"""Logit lens view: layers x positions, each cell the token the residual stream after that
layer would predict (engine.interventions.lens), coloured by the probability it gives the
token the model finally predicts there; hover for the top 5.

Computed in the model worker after every Run (with the window's interventions), only while
the view is shown; a table of at most a few thousand short cells, so plain Qt items.
A lens belongs to one trace: while a newer Run is on its way, or its lens is computed, the
table shown is the previous text's, greyed and said so; a newer request cancels the job
(within a layer: engine.traces.tracing.stoppable). A recording has no model to read a lens
with, and the view says so in place.
"""
from __future__ import annotations

import html

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from attnscope.gui.colormaps import legend_pixmap, lookup_table
from attnscope.gui.theme import text_on, tint
from attnscope.gui.worker import MODEL, Jobs

MAX_POSITIONS = 256     # the lens's last positions shown; a longer text is cut at its start
ABOUT = ("Each cell: the top token the residual stream after that layer predicts for the next position, through "
         "the model's final norm and unembedding; colour: the probability of the token the last layer predicts. "
         "Hover for the top 5.")
UPDATING = "Updating: the table below is the previous text's lens until this one is computed."
NO_MODEL = ("A recording holds attention, not a model: the logit lens needs the model's layers. Open the model "
            "it was recorded with and Run the text to see its lens.")


def _lens(loaded, text, target: str, spec, stop=None):
    from attnscope.engine.interventions import logit_lens   # torch, in the worker
    from attnscope.engine.remote import remote_lens, remote_of
    from attnscope.engine.traces import stoppable

    if remote_of(loaded) is not None:             # ndif: read where the model is served, one job
        return remote_lens(loaded, text, spec=spec)
    with stoppable(stop):
        return logit_lens(loaded, text, target=target or None, spec=spec)


class LensView(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, "The logit lens could not be computed", lane=MODEL)
        self.lens = None
        self.lens_for = -1           # the trace_id of the trace the lens (or message) shown belongs to
        self.spec = None             # the interventions it was computed with
        self.mark = QLabel()         # updating / interventions on: said above the table
        tint(self.mark, "warning")
        self.mark.setWordWrap(True)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.legend = QLabel()
        self.legend.setToolTip("Cell colour: the probability that layer gives the token the model finally predicts")
        self.legend_row = legend_row = QHBoxLayout()
        legend_row.addWidget(QLabel("p(final prediction): 0"))
        legend_row.addWidget(self.legend)
        legend_row.addWidget(QLabel("1"))
        legend_row.addStretch(1)
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.mark)
        layout.addWidget(self.note)
        layout.addLayout(legend_row)
        layout.addWidget(self.table, 1)
        self.stale = True            # a Run came while the view was hidden
        state.trace_changed.connect(self._on_trace)
        state.colormap_changed.connect(lambda _name: self.show_lens(self.lens, self.note.text(), self.lens_for,
                                                                    self.spec))
        state.request_started.connect(self._superseded)
        state.request_ended.connect(self._show_mark)
        self._on_trace(state.trace)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.stale:
            self._on_trace(self.state.trace)

    def _superseded(self) -> None:
        """A newer request: the lens on its way is for the old one."""
        self.jobs.cancel()
        self._show_mark()

    def _on_trace(self, trace) -> None:
        self.stale = not self.isVisible()
        if self.stale:
            self.jobs.cancel()
            self._show_mark()
            return
        loaded, now = self.state.loaded, self.state.trace_id
        if trace is None or loaded is None:
            self.jobs.cancel()
            self.show_lens(None, "Run a text: each decoder layer's prediction appears here.", now)
        elif self.state.recording is not None:
            self.jobs.cancel()
            self.show_lens(None, NO_MODEL, now)
        elif loaded.role == "encoder":                # a model served by NDIF: read there (_lens)
            self.show_lens(None, "The logit lens reads what a model predicts; an encoder predicts no next token.", now)
        else:
            spec = self.state.interventions
            self.jobs.start(_lens, loaded, self.state.prompt, self.state.target, spec,
                            on_returned=lambda lens: self.show_lens(lens, "", now, spec))
            self._show_mark()

    def current(self) -> bool:
        """The lens (or message) shown belongs to the trace on screen, and no newer Run is on its way."""
        return self.lens_for == self.state.trace_id and not self.state.pending

    def _show_mark(self) -> None:
        updating = self.lens is not None and not self.current()
        spec = self.spec
        lines = [UPDATING] if updating else []
        if self.lens is not None and spec is not None and not spec.empty:
            lines.append("With the interventions on: " + "; ".join(spec.describe()))
        self.mark.setText("\n".join(lines))
        self.mark.setVisible(bool(lines))
        self.table.setEnabled(not updating)

    def show_lens(self, lens, message: str = "", for_id: int | None = None, spec=None) -> None:
        self.lens, self.spec = lens, spec
        self.lens_for = self.state.trace_id if for_id is None else for_id
        self.legend.setPixmap(legend_pixmap(self.state.colormap, 160, max(10, self.fontMetrics().height() - 4)))
        for i in range(self.legend_row.count()):       # a legend only beside a table
            item = self.legend_row.itemAt(i).widget()
            if item is not None:
                item.setVisible(lens is not None)
        self._show_mark()
        if lens is None:
            self.table.clear()
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.note.setText(message)
            return
        start = max(0, len(lens.tokens) - MAX_POSITIONS)
        positions = range(start, len(lens.tokens))
        lut = lookup_table(self.state.colormap)
        self.note.setText(ABOUT + (f" The first {start} positions are not shown." if start else ""))
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
