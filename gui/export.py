"""Save any view as PNG (a pixel grab) or SVG (vector, through QSvgGenerator, its heatmaps
made sharp by gui.svg_cells).

Both are written to a temporary name beside the target and renamed (engine.runtime.files), so a
failed or interrupted export never leaves an empty file nor destroys the one that was there.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QWidget

from engine.runtime import atomic_path
from gui.svg_cells import sharpen

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
    with atomic_path(path) as tmp:
        if ext == "png":
            if not widget.grab().save(str(tmp), "PNG"):
                raise OSError(f"Could not write {path}.")
        else:
            _render_svg(widget, tmp)
    return path


def _render_svg(widget: QWidget, path: Path) -> None:
    size = widget.size() if widget.size().isValid() else QSize(800, 600)
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(size)
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    gen.setTitle(widget.windowTitle() or "attnscope view")
    painter = QPainter(gen)
    try:
        # QWidget's own render: a plot is a QGraphicsView, whose render() takes other arguments.
        QWidget.render(widget, painter, QPoint(0, 0))
    finally:
        painter.end()
    # Heatmaps sharp in browsers and librsvg, not stretched and smoothed (gui.svg_cells).
    path.write_text(sharpen(path.read_text(encoding="utf-8"), (size.width(), size.height())), encoding="utf-8")
