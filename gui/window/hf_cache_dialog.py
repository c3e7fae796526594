"""File > Open from Hugging Face Cache: the models already on this machine, and any hub id.

Why: whoever has used transformers has models in the Hugging Face cache (``from_pretrained``
put them there), but under names like ``models--Qwen--Qwen2.5-0.5B/snapshots/<hash>``
that no one types into a folder dialog. This lists them by their hub id, with their size
on disk, their architecture and whether attnscope can open them (the loader's own checks,
without loading: config, weight files, memory; the reason when not). A hub id can also be
typed: it opens from the cache, or is downloaded when the hub can be reached.

The cache is read in a worker (every snapshot's config and weight headers); the dialog
only shows the rows that come back. The choice is handed to the window as a hub id
(``chosen``), which opens it like any other source.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QTableWidget, QTableWidgetItem, QVBoxLayout)

from attnscope.engine.runtime import gib
from attnscope.gui.worker import SHARED, Jobs

COLUMNS = ("Model", "Size", "Architecture", "attnscope")


def _scan():
    """The cache's models at once (names and sizes: the file system only), then each one as the
    loader's checks read it: the dialog fills its rows in as they come."""
    from attnscope.engine.loading import cached_snapshots, checked
    from attnscope.engine.loading import cache_dir

    listed = cached_snapshots()
    yield cache_dir(), listed
    for row, model in enumerate(listed):
        yield row, checked(model)


def count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


class HFCacheDialog(QDialog):
    chosen = Signal(str)      # a hub id to open

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Open from Hugging Face Cache")
        self.resize(900, 460)
        self.models = []
        self.where = QLabel("Reading the Hugging Face cache…")
        self.where.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        for col in range(3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._on_select)
        self.table.cellDoubleClicked.connect(lambda *_: self.accept())
        self.hub_id = QLineEdit()
        self.hub_id.setPlaceholderText("a hub id, e.g. Qwen/Qwen2.5-0.5B (from the cache; downloaded when online)")
        self.hub_id.setToolTip("Any Hugging Face model id: opened from the local cache, or downloaded when the hub "
                               "can be reached")
        self.hub_id.returnPressed.connect(self.accept)
        id_row = QHBoxLayout()
        id_row.addWidget(QLabel("Hub id:"))
        id_row.addWidget(self.hub_id, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.open_button = buttons.button(QDialogButtonBox.StandardButton.Open)
        self.open_button.setEnabled(False)
        self.hub_id.textChanged.connect(lambda t: self.open_button.setEnabled(bool(t.strip())))
        box = QVBoxLayout(self)
        box.addWidget(self.where)
        box.addWidget(self.table, 1)
        box.addLayout(id_row)
        box.addWidget(buttons)
        self.jobs = Jobs(self, "Could not read the Hugging Face cache", lane=SHARED)
        self.refresh()

    def refresh(self) -> None:
        self.checked = 0
        self.jobs.start(_scan, on_yielded=self._show, on_finished=self._say_where)

    def _show(self, value) -> None:
        """The listed models (every row, 'checking…'), then one checked model at a time."""
        first, second = value
        if isinstance(first, int):
            self.models[first] = second
            self.checked += 1
            self._fill_row(first, second, checking=False)
        else:
            self.cache, self.models = first, list(second)
            self.table.setRowCount(len(self.models))
            for row, m in enumerate(self.models):
                self._fill_row(row, m, checking=True)
        self._say_where()

    def _say_where(self) -> None:
        models, cache = self.models, getattr(self, "cache", "")
        openable = sum(m.problem is None for m in models[:self.checked])    # checked in order
        done = self.checked >= len(models)
        self.where.setText((f"{count(len(models), 'model')} in the Hugging Face cache at {cache} "
                            + (f"({openable:,} that attnscope can open). " if done else
                               f"(checking what attnscope can open: {self.checked} of {len(models)}…). ")
                            + "Set HF_HOME or HF_HUB_CACHE before starting attnscope to use another cache.")
                           if models else f"No models in the Hugging Face cache at {cache}. Type a hub id below, or "
                           "set HF_HOME or HF_HUB_CACHE before starting attnscope to use another cache.")

    def _fill_row(self, row: int, m, checking: bool) -> None:
        cells = (m.repo_id, gib(m.size_bytes), "…" if checking else m.architecture or "?",
                 "checking…" if checking else "opens" if m.problem is None else f"cannot open: {m.problem}")
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(text if col == 3 else str(m.folder))
            if col == 1:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if m.problem is not None or checking:
                item.setForeground(self.palette().placeholderText())
            self.table.setItem(row, col, item)

    def _on_select(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self.hub_id.setText(self.models[rows[0].row()].repo_id)

    def accept(self) -> None:
        source = self.hub_id.text().strip()
        if not source:
            return
        self.jobs.cancel()
        super().accept()
        self.chosen.emit(source)

    def reject(self) -> None:
        self.jobs.cancel()
        super().reject()
