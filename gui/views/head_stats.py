"""Head statistics: one sortable row per head (entropy, distance, self / previous / first /
[CLS] / [SEP] weight). Clicking a row opens that head in the Head detail view."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from engine.analysis import head_statistics
from gui.views.kinds import fill_kind_box

COLUMNS = ("layer", "head", "entropy", "distance", "self", "previous", "first", "cls", "sep")
TIPS = {
    "entropy": "mean entropy of a query's weights (nats): low = focused, high = spread",
    "distance": "mean |query - key| position distance, weighted by attention",
    "self": "mean weight on the query's own position",
    "previous": "mean weight on the position just before the query",
    "first": "mean weight on the first token",
    "cls": "mean total weight on [CLS] / [BOS]",
    "sep": "mean total weight on [SEP] / [EOS]",
}


class NumberItem(QTableWidgetItem):
    """A cell that sorts by its number, not its text."""

    def __init__(self, value: float, digits: int = 3):
        super().__init__("–" if np.isnan(value) else (f"{value:.{digits}f}" if digits else str(int(value))))
        self.value = -np.inf if np.isnan(value) else float(value)
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other) -> bool:
        return self.value < getattr(other, "value", 0.0)


class HeadStats(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.kind: str | None = None
        self.stats: dict[str, np.ndarray] | None = None
        self.kind_box = QComboBox()
        self.kind_box.currentTextChanged.connect(self._on_kind)
        top = QHBoxLayout()
        top.addWidget(QLabel("Attention:"))
        top.addWidget(self.kind_box)
        top.addWidget(QLabel("Click a column to sort, a row to open the head."), 1)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        for i, name in enumerate(COLUMNS):
            if name in TIPS:
                self.table.horizontalHeaderItem(i).setToolTip(TIPS[name])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.cellClicked.connect(self._open_row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        state.trace_changed.connect(self.set_trace)
        if state.trace is not None:
            self.set_trace(state.trace)

    def set_trace(self, trace) -> None:
        kinds = trace.kinds if trace else []
        self.kind = fill_kind_box(self.kind_box, kinds, self.kind, default_last=False)
        self.fill()

    def _on_kind(self, kind: str) -> None:
        if kind:
            self.kind = kind
            self.fill()

    def fill(self) -> None:
        trace = self.state.trace
        self.table.setSortingEnabled(False)
        self.table.setRowCount(0)
        if trace is None or self.kind is None:
            self.stats = None
            return
        self.stats = head_statistics(trace.weights(self.kind), trace.query_tokens(self.kind), trace.key_tokens(self.kind))
        n_layers, n_heads = self.stats["entropy"].shape
        self.table.setRowCount(n_layers * n_heads)
        for row, (l, h) in enumerate((l, h) for l in range(n_layers) for h in range(n_heads)):
            self.table.setItem(row, 0, NumberItem(l, 0))
            self.table.setItem(row, 1, NumberItem(h, 0))
            for c, name in enumerate(COLUMNS[2:], start=2):
                self.table.setItem(row, c, NumberItem(self.stats[name][l, h]))
        self.table.setSortingEnabled(True)
        self.table.resizeColumnsToContents()

    def row_head(self, row: int) -> tuple[int, int]:
        return int(self.table.item(row, 0).value), int(self.table.item(row, 1).value)

    def _open_row(self, row: int, _col: int) -> None:
        layer, head = self.row_head(row)
        self.state.select_head(self.kind, layer, head)
