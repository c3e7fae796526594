"""Save any view as PNG (a pixel grab) or SVG (vector, through QSvgGenerator)."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QWidget

FORMATS = ("png", "svg")


def export_target(view: QWidget) -> QWidget:
    """What File > Export View saves for ``view``: its own choice, or the whole view."""
    chooser = getattr(view, "export_target", None)
    return chooser() if callable(chooser) else view


def export_widget(widget: QWidget, path: str | Path) -> Path:
    path = Path(path)
    ext = path.suffix.lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(f"Cannot export as {path.suffix or 'no extension'!r}: choose .png or .svg.")
    path.parent.mkdir(parents=True, exist_ok=True)
    if ext == "png":
        if not widget.grab().save(str(path), "PNG"):
            raise OSError(f"Could not write {path}.")
        return path
    size = widget.size() if widget.size().isValid() else QSize(800, 600)
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(size)
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    gen.setTitle(widget.windowTitle() or "attnscope view")
    painter = QPainter(gen)
    try:
        widget.render(painter, QPoint(0, 0))
    finally:
        painter.end()
    if not path.exists():
        raise OSError(f"Could not write {path}.")
    return path
