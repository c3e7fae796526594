"""The colormaps offered in View > Colormap; every heatmap uses the state's choice."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyqtgraph as pg

COLORMAPS = ["viridis", "inferno", "magma", "plasma", "cividis", "turbo", "greys"]


@lru_cache(maxsize=None)
def colormap(name: str) -> pg.ColorMap:
    if name == "greys":  # white (0) to black (1), for print
        return pg.ColorMap([0.0, 1.0], [(255, 255, 255), (0, 0, 0)])
    return pg.colormap.get(name)


@lru_cache(maxsize=None)
def lookup_table(name: str, n: int = 256) -> np.ndarray:
    """(n, 4) uint8 RGBA, for ImageItem.setLookupTable."""
    return colormap(name).getLookupTable(0.0, 1.0, n, alpha=True)


def attach_colorbar(plot_item, image, cmap: pg.ColorMap, values=(0.0, 1.0)) -> pg.ColorBarItem:
    """A colour bar beside ``image`` in ``plot_item``, stating the range of its colours.
    The bar drives the image's colours and levels: set levels with ``bar.setLevels``."""
    bar = pg.ColorBarItem(values=values, colorMap=cmap, interactive=False, width=12)
    bar.setImageItem(image, insert_in=plot_item)
    return bar


def label_colorbar(bar: pg.ColorBarItem, log_scale: bool) -> None:
    """The bar's numbers as its colours mean them: weights 0 to 1, or with "log colour" on,
    1e-4 to 1 a decade a step (gui.display.log_colour): the bar read 0 to 1
    linearly while the map was coloured by the logarithm."""
    from attnscope.gui.display import LOG_DECADES

    if not log_scale:
        bar.axis.setTicks(None)
        return
    names = {0: "1", 1: "0.1", 2: "0.01", 3: "0.001"}
    bar.axis.setTicks([[(1 - d / LOG_DECADES, names.get(d, f"1e-{d}")) for d in range(LOG_DECADES + 1)]])


def legend_pixmap(name: str, width: int, height: int):
    """A horizontal strip of colormap ``name``, 0 at the left to 1 at the right: the colour
    legend of a view drawn with plain Qt items (the Lens' table), not a pyqtgraph plot."""
    from PySide6.QtGui import QImage, QPixmap

    lut = lookup_table(name, max(2, width))                          # (width, 4) RGBA
    strip = np.ascontiguousarray(np.repeat(lut[None, :, :], max(1, height), axis=0))   # (height, width, 4)
    image = QImage(strip.data, strip.shape[1], strip.shape[0], strip.strides[0], QImage.Format.Format_RGBA8888)
    return QPixmap.fromImage(image.copy())
