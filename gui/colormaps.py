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
