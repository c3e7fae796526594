"""A row of controls that wraps onto more lines when its view is narrow.

Why: a view's toolbar laid out in one QHBoxLayout is as wide as all its controls together,
and a dock narrower than that either cut the row ("hide below 0.0") or pushed the plot and
its colorbar off-screen behind a scrollbar. A flow layout asks only for its widest control
and takes as many lines as the width it is given needs (Qt's flow-layout example, shortened).

It does not report height-for-width: a QScrollArea (each dock's view sits in one) then sizes
its widget to the whole view's *preferred* height for that width, and a plot that could
shrink scrolled out of sight instead. The height the lines took at the last width is the
layout's height instead; a new one asks the parent to lay out again.
"""
from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget


class FlowLayout(QLayout):
    def __init__(self, parent: QWidget | None = None, spacing: int = 4):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._height: int | None = None    # the lines' height at the width last laid out
        self.setContentsMargins(0, 0, 0, 0)
        self.setSpacing(spacing)

    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def addWidgets(self, *widgets: QWidget) -> "FlowLayout":
        for widget in widgets:
            self.addWidget(widget)
        return self

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        height = self._place(rect, move=True)
        if height != self._height:
            self._height = height
            self.invalidate()      # the parent lays out again with this height

    def _lines_height(self, one_line: int) -> int:
        return one_line if self._height is None else self._height

    def sizeHint(self) -> QSize:
        """One line of everything: what the row would like when there is room."""
        shown = [i for i in self._items if not i.isEmpty()]
        width = sum(i.sizeHint().width() for i in shown) + self.spacing() * max(0, len(shown) - 1)
        height = max((i.sizeHint().height() for i in shown), default=0)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right(), self._lines_height(height + m.top() + m.bottom()))

    def minimumSize(self) -> QSize:
        """The widest single control: narrower than that, nothing can wrap any more."""
        size = QSize()
        for item in self._items:
            if not item.isEmpty():
                size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return QSize(size.width() + m.left() + m.right(), self._lines_height(size.height() + m.top() + m.bottom()))

    def _place(self, rect: QRect, move: bool) -> int:
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line = area.x(), area.y(), 0
        for item in self._items:
            if item.isEmpty():
                continue
            hint = item.sizeHint()
            if x > area.x() and x + hint.width() > area.right() + 1:
                x, y, line = area.x(), y + line + self.spacing(), 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self.spacing()
            line = max(line, hint.height())
        return y + line - rect.y() + m.bottom()
