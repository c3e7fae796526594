"""Head statistics: one sortable row per head, one column per entry of the one statistics list
(engine/inspection/statistics.py: its name, its tip and definition in the header's tooltip,
measured on the shown text), then the induction and previous-token scores of the model on a
fixed repeated random sequence. Clicking a row opens that head in the Head detail view.

The kind follows the state's selection, and the selected head's row is highlighted; the
statistics are computed in a worker, the table is filled from them."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from attnscope.engine.inspection import kept_mechanism_scores, mechanism_scores, statistics, trace_head_statistics
from attnscope.gui.drawing.drawings import StatsDrawing
from attnscope.gui.drawing.prepared import PreparedView, prepares
from attnscope.gui.widgets.fitted_header import FittedHeader
from attnscope.gui.worker import MODEL, call_on_lane
from attnscope.gui.widgets.kind_box import fill_kind_box

class Column(NamedTuple):
    name: str
    tip: str


# The two scores of the model on a fixed random sequence repeated twice (engine.inspection's
# mechanism_scores), beside the list's entries measured on the shown text.
MECHANISM_COLUMNS = (
    (Column("induction (repeat)", "on a random sequence repeated twice: mean weight from a token of the second copy "
                                  "to the token after its first occurrence (an induction head scores near 1)"),
     "induction"),
    (Column("previous (repeat)", "on the same random sequence: mean weight on the token just before (a "
                                 "previous-token head scores near 1)"), "previous"),
)


def columns() -> list[Column]:
    """Every column after layer and head: each entry of the one statistics list (its tip, then
    its definition), read when asked so a new entry is a new column, then the mechanism scores."""
    listed = [Column(s.name, f"{s.tip}: {s.definition}") for s in statistics.STATISTICS]
    return listed + [column for column, _ in MECHANISM_COLUMNS]


def unsigned_zero(text: str) -> str:
    """``text`` (a formatted number) without the sign of a value that rounds to zero: effective
    attention's statistics (signed mixing) read "-0.000" for a tiny negative mean, as if it meant something."""
    return text[1:] if text.startswith("-") and float(text) == 0 else text


RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


def number_text(value: float, digits: int = 3) -> str:
    """A cell's text: the number to ``digits`` places, "–" for nan (nothing to measure)."""
    if math.isnan(value):
        return "–"
    return unsigned_zero(f"{value:.{digits}f}") if digits else str(int(value))


class NumberItem(QTableWidgetItem):
    """A cell that sorts by its number, not its text."""

    def __init__(self, value: float, digits: int = 3):
        super().__init__()
        self.setTextAlignment(RIGHT)
        self.show(value, digits)

    def show(self, value: float, digits: int = 3) -> None:
        """The cell made to read ``value``: a table of the same heads keeps its cells (a Run's
        1,000 new items and their alignment were most of the table's time on the window's thread)."""
        self.setText(number_text(value, digits))
        self.value = -math.inf if math.isnan(value) else float(value)

    def __lt__(self, other) -> bool:
        return self.value < getattr(other, "value", 0.0)


@prepares
def stats_drawing(trace, kind: str, loaded=None, report=None, stop=None) -> StatsDrawing:
    """Every head's statistics for one kind (a worker), at any length (summed over blocks of
    rows where every head at once would not fit: ``report`` says how far, ``stop`` ends it);
    the model's mechanism scores where the engine can measure them, else nan. The scores need
    a forward (once per model, then kept): it runs on the model thread, where every forward
    runs (gui.worker's lanes), and a newer request (another model, a Run) ends it at its next
    attention site (``stop``)."""
    stats = trace_head_statistics(trace, kind, report, stop)
    mechanisms = {}
    if loaded is not None:     # kept scores read here; a forward, only the first time, on the model thread
        kept = kept_mechanism_scores(loaded)
        mechanisms = (kept if kept is not None else call_on_lane(MODEL, _mechanisms, loaded, stop)).get(kind, {})
    none = np.full(stats["entropy"].shape, np.nan)
    for column, name in MECHANISM_COLUMNS:
        scores = mechanisms.get(name)
        stats[column.name] = scores if scores is not None and scores.shape == none.shape else none
    # Columns a text or model has nothing for (no [CLS] key; no mechanism scores) are hidden,
    # not shown as rows of "–". Cross-attention's self and previous stay, reading "–": the
    # kind has them, the two texts' positions do not line up.
    always = {s.name for s in statistics.STATISTICS if s.self_only}
    hidden = [c.name for c in columns() if c.name not in always and bool(np.isnan(stats[c.name]).all())]
    return StatsDrawing(kind=kind, stats=stats, hidden=hidden)


def _mechanisms(loaded, stop=None) -> dict:
    from attnscope.engine.traces import stoppable   # torch: imported by the worker, never at the window's start

    with stoppable(stop):
        return mechanism_scores(loaded)


class HeadStats(PreparedView, QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._init_prepared("Head statistics")
        self.stats: dict[str, np.ndarray] | None = None
        self.kind_box = QComboBox()
        self.kind_box.currentTextChanged.connect(lambda k: k and self.state.select(kind=k))
        top = QHBoxLayout()
        top.addWidget(QLabel("Attention:"))
        top.addWidget(self.kind_box)
        top.addWidget(QLabel("Click a column to sort, a row to open the head."), 1)
        self.columns = columns()
        self.table = QTableWidget(0, 2 + len(self.columns))
        self.table.setHorizontalHeaderLabels(["layer", "head"] + [c.name for c in self.columns])
        for i, column in enumerate(self.columns, start=2):
            self.table.horizontalHeaderItem(i).setToolTip(column.tip)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.header = FittedHeader(self.table)     # every label whole, the width shared out
        self.table.setHorizontalHeader(self.header)
        self.header.setSortIndicator(0, Qt.SortOrder.AscendingOrder)       # layer 0 first
        self.table.cellClicked.connect(self._open_row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        # Why the table is empty, when it is (a trace too long for every head at once): said
        # in the view, not only in a tooltip nobody hovers.
        self.note = QLabel(" ")
        self.note.setWordWrap(True)
        self.note.setVisible(False)
        layout.addWidget(self.note)
        state.trace_changed.connect(self.set_trace)
        state.selection_changed.connect(self._on_selection)
        self.set_trace(state.trace)

    def set_trace(self, trace) -> None:
        fill_kind_box(self.kind_box, trace.kinds if trace else [], self.kind)
        self.redraw()

    def _on_selection(self, kind: str, layer: int, head: int) -> None:
        if self.drawing is None or self.drawing.kind != kind:
            self.set_trace(self.state.trace)
        else:
            self._mark_selected()

    def drawing_job(self):
        if self.state.trace is None or self.kind is None:
            return None
        # The mechanism scores are the model's behind the trace: none for a recording (not the loaded model's).
        return stats_drawing, self.state.trace, self.kind, self.state.trace_model

    def stale_target(self) -> QWidget:
        return self.table          # the numbers greyed; the kind box stays usable

    def clear_drawing(self) -> None:
        self.stats = None
        self.table.setRowCount(0)
        self.note.setVisible(False)

    def show_refusal(self, reason: str) -> None:
        super().show_refusal(reason)
        self.note.setVisible(True)

    def drawing_progress(self, record) -> None:
        """A long text's statistics are summed a layer at a time: how far, in the view."""
        _, done, total = record
        self.note.setText(f"Measuring every head of a long text: {done} of {total} layers…")
        self.note.setVisible(True)

    def apply_drawing(self, d: StatsDrawing) -> None:
        self.note.setVisible(False)
        self.stats = d.stats
        self.table.setSortingEnabled(False)
        n_layers, n_heads = self.stats["entropy"].shape
        self.table.setRowCount(n_layers * n_heads)
        values = [self.stats[column.name].tolist() for column in self.columns]     # (C, L, H) as floats
        for row, (l, h) in enumerate((l, h) for l in range(n_layers) for h in range(n_heads)):
            cells = [(l, 0), (h, 0)] + [(v[l][h], 3) for v in values]
            for c, (value, digits) in enumerate(cells):
                item = self.table.item(row, c)
                if isinstance(item, NumberItem):
                    item.show(value, digits)
                else:
                    self.table.setItem(row, c, NumberItem(value, digits))
        self.table.setSortingEnabled(True)
        for c, column in enumerate(self.columns, start=2):
            self.table.setColumnHidden(c, column.name in d.hidden)
        self.header.fit()
        self._mark_selected()

    def _mark_selected(self) -> None:
        for row in range(self.table.rowCount()):
            if self.row_head(row) == (self.state.layer, self.state.head):
                self.table.selectRow(row)
                return

    def row_head(self, row: int) -> tuple[int, int]:
        return int(self.table.item(row, 0).value), int(self.table.item(row, 1).value)

    def _open_row(self, row: int, _col: int) -> None:
        layer, head = self.row_head(row)
        self.state.select_head(self.kind, layer, head)
