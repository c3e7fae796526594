"""A heatmap with tokens on both axes: rows (queries, output steps or heads) on the left,
keys written vertically on top. It follows the window's colormap."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from attnscope.gui.colormaps import attach_colorbar, colormap
from attnscope.gui.drawing.empty import hide_empty, show_empty
from attnscope.gui.drawing.kinds import is_signed, levels_for, paint_kind
from attnscope.gui.widgets.token_axis import VerticalTokenAxis, fit_row_axis
from attnscope.gui.widgets.token_labels import view_ticks, zoomable
from attnscope.gui.widgets.peak_image import PeakImage, show_whole


def dress_token_plot(item: pg.PlotItem, colormap_name: str) -> tuple[PeakImage, pg.ColorBarItem]:
    """A token map's plot as TokenMatrix and Head detail both draw it: row 0 on top, no buttons or
    menu of pyqtgraph's own, keys on the top axis (the item was built with a VerticalTokenAxis there),
    and an image with its colorbar. One builder, so the two maps cannot drift apart."""
    item.invertY(True)
    item.hideButtons()
    item.setMenuEnabled(False)
    image = PeakImage()
    item.addItem(image)
    colorbar = attach_colorbar(item, image, colormap(colormap_name))
    item.showAxis("top")
    item.hideAxis("bottom")
    for axis in ("left", "top"):   # ticks outside the map: inside, they covered row 0 (q0 -> k0) as a "+"
        item.getAxis(axis).setStyle(tickLength=4)
    return image, colorbar


class TokenMatrix(pg.PlotWidget):
    def __init__(self, state, title: str = "", empty_text: str = "Nothing to show yet: run a text."):
        self.key_axis = VerticalTokenAxis("top")
        super().__init__(axisItems={"top": self.key_axis})
        self.item = self.getPlotItem()
        if title:
            self.item.setTitle(title, size="9pt")
        self.image, self.colorbar = dress_token_plot(self.item, state.colormap)
        self._colormap, self._kind = state.colormap, None      # the map chosen, the kind drawn
        state.colormap_changed.connect(self.set_colormap)  # a bound method: disconnected when deleted
        self._rows: list[str] = []
        self._cols: list[str] = []
        self.item.vb.sigResized.connect(self._label)    # as many labels as fit the new size
        zoomable(self.item, self._label)                 # wheel zooms, drag pans, double-click resets
        self.empty_text = empty_text
        self.clear_matrix()

    def set_colormap(self, name: str) -> None:
        self._colormap = name              # a signed kind keeps its diverging map (gui.drawing.kinds)
        paint_kind(self._kind, name, tuple(self.colorbar.levels()), bar=self.colorbar, images=(self.image,))

    def clear_matrix(self, message: str = "") -> None:
        """Nothing to show: no image, no labels, and ``message`` where the map will be. (Not
        ``clear``: PlotWidget forwards that name to PlotItem.clear, which would remove the
        image item itself.)"""
        self.image.clear()
        self._rows, self._cols = [], []
        self._label()
        self.colorbar.setVisible(False)
        show_empty(self.item, message or self.empty_text, ("left", "top"))

    def show_matrix(self, matrix: np.ndarray, rows: list[str], cols: list[str], top: float = 1.0,
                    kind: str | None = None) -> None:
        """Draw ``matrix`` (rows x cols) with levels 0..``top``, tokens on both axes; a signed ``kind``
        (effective attention) on a diverging scale symmetric about 0 (gui.drawing.kinds.levels_for),
        since on 0..``top`` its negative cells were drawn as 0."""
        hide_empty(self.item, ("left", "top"))
        self.colorbar.setVisible(True)
        self._kind = kind
        levels = levels_for(kind, matrix) if is_signed(kind) else (0.0, float(top))
        paint_kind(kind, self._colormap, levels, bar=self.colorbar, images=(self.image,))
        self.image.setImage(matrix, autoLevels=False, levels=levels)
        self._rows, self._cols = rows, cols
        fit_row_axis(self.item.getAxis("left"), rows)
        self._label()
        h, w = max(1, matrix.shape[0]), max(1, matrix.shape[1])
        show_whole(self.item.vb, w, h)      # its first row and column clear of the axes' lines

    def _label(self, *_args) -> None:
        vb, line = self.item.vb, self.fontMetrics().height() + 2
        self.item.getAxis("left").setTicks([view_ticks(self._rows, vb, False, line)])
        self.key_axis.set_ticks(self._cols, view_ticks(self._cols, vb, True, line))
