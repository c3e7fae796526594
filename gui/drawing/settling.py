"""A drawing handed to its plot items is laid out, then painted, once.

Why a room of its own: it is the last step of every prepared view's drawing (gui.drawing.prepared)
and of the Neurons view's, after the view's own ``apply_drawing``; the walk of a Run goes from the
base (what is current) to the view (its arrays in the plot items) to here (laid out and shown),
and on to the painting, without going back to the base in between.
"""
from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtWidgets import QWidget


def settle(root: QWidget) -> None:
    """Lay out and relabel now what a drawing changed (an axis made room for longer tokens,
    an image of another shape), so the view paints once, at its new size: left to the paint,
    the layout and the view boxes' range signals came after it, each with one more paint
    (three or four a view on the first long Run after a short one, the window frozen meanwhile)."""
    import pyqtgraph as pg

    QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest.value)
    views = root.findChildren(pg.GraphicsView) + ([root] if isinstance(root, pg.GraphicsView) else [])
    for view in views:
        view.scene().prepareForPaint()   # view boxes apply their new range: axes relabel now
    QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest.value)


def paint_again(view: QWidget) -> None:
    """``view`` paints again: its old picture was held back while the new drawing was on its way
    (gui.drawing.prepared's HOLD_PAINT)."""
    if not view.updatesEnabled():
        view.setUpdatesEnabled(True)
