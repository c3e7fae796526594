"""The status bar's load progress: a determinate bar, what is being read, and Cancel.

Why: a model of several GB takes from seconds to minutes to read, and a window that only
says "loading model…" looks hung. The loader (engine.loading.progress) reports how far it
is, in words with numbers (tensors built, bytes read); this widget shows the newest report
and offers Cancel, which stops the load between two tensors and keeps the model that was
open. Everything here runs on the GUI thread; the records arrive from the model worker.
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

STEPS = 1000   # the bar's resolution: a tenth of a percent


class LoadProgressBar(QWidget):
    def __init__(self, on_cancel: Callable[[], None], parent: QWidget | None = None):
        super().__init__(parent)
        self.label = QLabel()
        self.bar = QProgressBar()
        self.bar.setRange(0, STEPS)
        self.bar.setFixedWidth(220)
        self.bar.setToolTip("How much of the model has been read")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop loading; the model that was open stays open")
        self.cancel_button.clicked.connect(on_cancel)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label)
        row.addWidget(self.bar)
        row.addWidget(self.cancel_button)
        self.setVisible(False)

    def start(self, name: str) -> None:
        self.label.setText(f"opening {name}…")
        self.bar.setRange(0, 0)          # busy until a fraction is known
        self.setVisible(True)

    def show_progress(self, record) -> None:
        """One engine.loading.progress.LoadProgress record. Until some of the model is read
        (the checks before it, importing transformers: seconds on a first open) the bar moves
        as a busy bar: a bar standing at 0 % for 10 s read as a hung window."""
        self.label.setText(record.text)
        if record.fraction > 0:
            self.bar.setRange(0, STEPS)
            self.bar.setValue(round(STEPS * record.fraction))
        else:
            self.bar.setRange(0, 0)
        self.setVisible(True)

    def finish(self) -> None:
        self.setVisible(False)
