"""Labels that never widen the window: text longer than the room is cut with an ellipsis
(the whole text is in the tooltip). Used for the status bar and the notes banner, whose
texts come from users and models (file names, unknown words) and can be any length."""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QSizePolicy


class ElidedLabel(QLabel):
    def __init__(self, text: str = "", parent=None):
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setToolTip(text)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(min(hint.width(), 480), hint.height())

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        metrics = painter.fontMetrics()
        lines = self.text().splitlines() or [""]
        y = (self.height() - metrics.height() * len(lines)) // 2 + metrics.ascent()
        for line in lines:
            painter.drawText(0, y, metrics.elidedText(line, Qt.TextElideMode.ElideRight, self.width()))
            y += metrics.height()
