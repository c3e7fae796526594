"""What a plot shows when it has nothing to show: one short sentence, no axes.

Why: empty axes from -0.4 to 0.4 with ticks cut to "-0." read as a broken view; a sentence
says what will appear there and what to do for it.
"""
from __future__ import annotations

import pyqtgraph as pg


def show_empty(plot: pg.PlotItem, text: str, axes: tuple[str, ...] = ("left", "top", "bottom", "right")) -> None:
    """Hide ``plot``'s axes and put ``text`` in the middle of its view."""
    for side in axes:
        plot.hideAxis(side)
    label = getattr(plot, "_empty_label", None)
    if label is None:
        label = plot._empty_label = pg.LabelItem(justify="center")
        label.setParentItem(plot.vb)
        plot.vb.sigResized.connect(lambda *_: _centre(plot))
    label.setText(text, color=pg.getConfigOption("foreground"))
    label.setVisible(True)
    _centre(plot)


def hide_empty(plot: pg.PlotItem, axes: tuple[str, ...]) -> None:
    """Show ``axes`` again and remove the sentence (the plot has data now)."""
    for side in axes:
        plot.showAxis(side)
    label = getattr(plot, "_empty_label", None)
    if label is not None:
        label.setVisible(False)


def is_empty(plot: pg.PlotItem) -> bool:
    label = getattr(plot, "_empty_label", None)
    return label is not None and label.isVisible()


def _centre(plot: pg.PlotItem) -> None:
    label = plot._empty_label
    rect = plot.vb.boundingRect()
    label.setPos(rect.center().x() - label.boundingRect().width() / 2,
                 rect.center().y() - label.boundingRect().height() / 2)

