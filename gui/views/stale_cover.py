"""The veil over a view whose picture is not the current text's: greyed, with the sentence why.

Why a veil over the view and not each view greying its own items: the rule (gui.drawing.prepared:
a view drawn from a trace that is no longer current is greyed until its new drawing lands) must
hold for every view alike, a heatmap, a table of statistics or lines, and a view added later
gets it without code of its own. A half-transparent widget over the view's picture greys
whatever is under it, says why in words (in a box of its own, readable over a table's numbers),
and takes the mouse, so hovering the old cells reads nothing as current (the Head statistics
table and Head detail's readout read the previous text's numbers under the new text's caption,
issue 53).
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QFrame, QLabel, QWidget

VEIL_ALPHA = 170          # of 255: the picture still shows through, plainly greyed


class StaleCover(QWidget):
    """A child of ``target`` that covers it whole while shown (it follows the target's size);
    a click on it says ``clicked`` (a view whose drawing was stopped draws again)."""

    clicked = Signal()

    def __init__(self, target: QWidget):
        super().__init__(target)
        self.target = target
        self.setObjectName("stale_cover")
        self.setAutoFillBackground(True)
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        self.note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.note.setAutoFillBackground(True)
        self.note.setFrameShape(QFrame.Shape.Box)
        self.note.setMargin(8)
        self.hide()
        target.installEventFilter(self)

    def text(self) -> str:
        return self.note.text()

    def cover(self, sentence: str) -> None:
        """Grey the target and say ``sentence`` over it."""
        background = QColor(self.target.palette().color(QPalette.ColorRole.Window))
        veil = QColor(background)
        veil.setAlpha(VEIL_ALPHA)
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.Window, veil)
        self.setPalette(palette)
        solid = self.note.palette()
        solid.setColor(QPalette.ColorRole.Window, background)
        self.note.setPalette(solid)
        self.note.setText(sentence)
        self.setToolTip(sentence)
        self._place()
        self.show()
        self.raise_()

    def uncover(self) -> None:
        self.hide()

    def mouseReleaseEvent(self, event) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
        event.accept()

    def mousePressEvent(self, event) -> None:
        event.accept()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.target and event.type() == QEvent.Type.Resize:
            self._place()
        return False

    def _place(self) -> None:
        """The veil over the whole target; the sentence's box in its middle, as tall as its
        wrapped lines (a layout cut a wrapped label to one line and a half)."""
        self.setGeometry(self.target.rect())
        width = max(80, min(self.note.sizeHint().width(), int(self.target.width() * 0.85)))
        height = self.note.heightForWidth(width)
        height = height if height > 0 else self.note.sizeHint().height()
        self.note.setGeometry((self.target.width() - width) // 2, max(0, (self.target.height() - height) // 2),
                              width, height)
