"""Light and dark: the Qt palette, and every pyqtgraph plot's background, axes, titles and legends.

Why a walk over the plots: pyqtgraph takes its colours from global options when an item is
made, so plots built before a theme switch keep the old ones (black labels on a black
background). ``restyle_plots`` recolours every plot under a widget; views built later take
the new global options.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

BACKGROUND = {False: "w", True: "k"}
FOREGROUND = {False: (30, 30, 30), True: (220, 220, 220)}


def apply_theme(dark: bool) -> None:
    """Fusion style with a dark or light palette; plots follow in MainWindow.set_dark."""
    app = QApplication.instance()
    app.setStyle("Fusion")
    # Plots made later (views are built when first shown) take their colours from here.
    pg.setConfigOptions(background=BACKGROUND[dark], foreground=FOREGROUND[dark])
    if not dark:
        app.setPalette(app.style().standardPalette())
        return
    pal = QPalette()
    base, text = QColor(37, 37, 38), QColor(220, 220, 220)
    for role, color in ((QPalette.ColorRole.Window, QColor(45, 45, 48)), (QPalette.ColorRole.WindowText, text),
                        (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, QColor(55, 55, 58)),
                        (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, QColor(55, 55, 58)),
                        (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.Highlight, QColor(38, 110, 190)),
                        (QPalette.ColorRole.HighlightedText, QColor(255, 255, 255)),
                        (QPalette.ColorRole.ToolTipBase, base), (QPalette.ColorRole.ToolTipText, text)):
        pal.setColor(role, color)
    app.setPalette(pal)


PRESENTATION_SCALE = 1.5     # fonts and marks in presentation mode, for a projector at 1280x720
_BASE_POINT_SIZE: list[float] = []


def apply_font(large: bool) -> None:
    """The application font: the platform's size, or PRESENTATION_SCALE times it."""
    app = QApplication.instance()
    font = app.font()
    if not _BASE_POINT_SIZE:
        _BASE_POINT_SIZE.append(font.pointSizeF() if font.pointSizeF() > 0 else 9.0)
    font.setPointSizeF(_BASE_POINT_SIZE[0] * (PRESENTATION_SCALE if large else 1.0))
    app.setFont(font)


def restyle_plots(root: QWidget, dark: bool, large: bool = False) -> None:
    """Recolour every pyqtgraph plot under ``root`` for the theme; in presentation mode
    (``large``) its axis labels, titles and lines grow too."""
    fg = pg.mkColor(FOREGROUND[dark])
    scale = PRESENTATION_SCALE if large else 1.0
    tick_font = QApplication.instance().font()
    views = root.findChildren(pg.GraphicsView) + ([root] if isinstance(root, pg.GraphicsView) else [])
    for view in views:
        view.setBackground(BACKGROUND[dark])
        for item in view.scene().items():
            if isinstance(item, pg.AxisItem):
                item.setPen(pg.mkPen(fg, width=scale))
                item.setTextPen(fg)
                item.setStyle(tickFont=tick_font)
            elif isinstance(item, pg.LabelItem):
                item.setText(item.text, color=fg.name(), size=f"{tick_font.pointSizeF():.0f}pt")
            elif isinstance(item, pg.LegendItem):
                item.setLabelTextColor(fg)
            elif isinstance(item, (pg.PlotCurveItem, pg.ScatterPlotItem)) and not getattr(item, "fixed_width", False):
                _scale_pen(item, scale)


def _scale_pen(item, scale: float) -> None:
    """Lines drawn thicker in presentation mode; their own width is remembered."""
    pen = item.opts.get("pen") if isinstance(item, pg.PlotCurveItem) else None
    if pen is None:
        return
    pen = pg.mkPen(pen)
    base = getattr(item, "_base_width", None)
    if base is None:
        base = item._base_width = pen.widthF() or 1.0
    pen.setWidthF(base * scale)
    item.setPen(pen)
