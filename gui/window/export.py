"""Save any view as PNG (a pixel grab) or SVG (vector, through QSvgGenerator, its heatmaps
made sharp by gui.widgets.svg_cells).

Two steps, because widgets live on the GUI thread and files should not: ``capture`` takes the
view's pixels (a QImage) or its SVG text there, in milliseconds; ``write_capture`` encodes,
sharpens and writes them from any thread (the window runs it in a worker, so a large PNG's
encoding or a slow disk never freezes it). Both formats are written to a temporary name beside
the target and renamed (engine.runtime.files), so a failed or interrupted export never leaves an
empty file nor destroys the one that was there.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRect, QSize
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QWidget

from attnscope.engine.runtime import atomic_path
from attnscope.gui.widgets.svg_cells import sharpen

FORMATS = ("png", "svg")


def export_target(view: QWidget) -> QWidget:
    """What File > Export View saves for ``view``: its own choice, or the whole view."""
    chooser = getattr(view, "export_target", None)
    return chooser() if callable(chooser) else view


@dataclass(frozen=True)
class Capture:
    """What a view looked like, taken on the GUI thread: its pixels (PNG) or its SVG text."""
    format: str                 # "png" or "svg"
    image: QImage | None        # png: the grab (a QImage may be saved from any thread, a QPixmap not)
    svg: str | None             # svg: the document, heatmaps not yet sharpened
    size: tuple[int, int]       # the view's size in pixels


def export_format(path: str | Path) -> str:
    """"png" or "svg" from ``path``'s extension, else ValueError in one sentence."""
    path = Path(path)
    ext = path.suffix.lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(f"Cannot export as {path.suffix or 'no extension'!r}: choose .png or .svg.")
    return ext


def capture(widget: QWidget, fmt: str) -> Capture:
    """``widget`` as it is on screen now, as ``fmt`` ("png" or "svg"); GUI thread only."""
    size = widget.size() if widget.size().isValid() else QSize(800, 600)
    if fmt == "png":
        return Capture(fmt, widget.grab().toImage(), None, (size.width(), size.height()))
    return Capture(fmt, None, _render_svg(widget, size), (size.width(), size.height()))


def write_capture(shot: Capture, path: str | Path) -> Path:
    """Encode and write ``shot`` to ``path`` (atomically); any thread."""
    path = Path(path)
    with atomic_path(path) as tmp:
        if shot.format == "png":
            if not shot.image.save(str(tmp), "PNG"):
                raise OSError(f"Could not write {path}.")
        else:
            # Heatmaps sharp in browsers and librsvg, not stretched and smoothed (gui.widgets.svg_cells).
            tmp.write_text(sharpen(shot.svg, shot.size), encoding="utf-8")
    return path


def export_widget(widget: QWidget, path: str | Path) -> Path:
    """``capture`` and ``write_capture`` at once (the command line's export, on its one thread)."""
    return write_capture(capture(widget, export_format(path)), path)


def _render_svg(widget: QWidget, size: QSize) -> str:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    gen = QSvgGenerator()
    gen.setOutputDevice(buffer)
    gen.setSize(size)
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    gen.setTitle(widget.windowTitle() or "attnscope view")
    painter = QPainter(gen)
    try:
        # QWidget's own render: a plot is a QGraphicsView, whose render() takes other arguments.
        QWidget.render(widget, painter, QPoint(0, 0))
    finally:
        painter.end()
        buffer.close()
    return bytes(data).decode("utf-8")
