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


def restyle_plots(root: QWidget, dark: bool) -> None:
    """Recolour every pyqtgraph plot under ``root`` for the theme."""
    fg = pg.mkColor(FOREGROUND[dark])
    for view in root.findChildren(pg.GraphicsView):
        view.setBackground(BACKGROUND[dark])
        for item in view.scene().items():
            if isinstance(item, pg.AxisItem):
                item.setPen(fg)
                item.setTextPen(fg)
            elif isinstance(item, pg.LabelItem):
                item.setText(item.text, color=fg.name())
            elif isinstance(item, pg.LegendItem):
                item.setLabelTextColor(fg)
