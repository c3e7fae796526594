"""The Atlas view's head finder and its options: which metrics the scatter shows (x, y, colour)
and the ranges of the x and y metrics a head must fall in to be found.

Why ranges on the plotted metrics: "every head with induction mass above 0.3 and entropy below
1" is how roles are looked for across a model (HeadVis's scatter, Neuronpedia's filters), and
the two axes are what the eye reads. A bound of 0 is "any": every metric is >= 0, so a minimum
of 0 and a maximum of 0 mean no bound. The heads found are drawn strong in the scatter (the
others dimmed) and listed, best by y first; a click in the list selects that head.

The options are one ViewOptions object (settings "atlas/..."), kept like every view's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QGridLayout, QHBoxLayout, QLabel, QListWidget,
                               QListWidgetItem, QWidget)

from attnscope.engine.inspection import statistics
from attnscope.gui.view_options import ViewOptions, option

METRICS = [s.name for s in statistics.atlas_statistics()] + ["activation"]
NO_BOUND = 0.0
TOP = 1e6      # the spin boxes' ceiling: distances reach the document's length, activations any size


@dataclass(frozen=True)
class AtlasOptions(ViewOptions):
    """The Atlas view's options (settings "atlas/..."): the scatter's metrics and the finder's ranges."""
    PREFIX = "atlas"
    x: str = option("previous", "x_box")
    y: str = option("induction", "y_box")
    colour: str = option("entropy", "colour_box")
    x_min: float = option(NO_BOUND, "x_min")
    x_max: float = option(NO_BOUND, "x_max")
    y_min: float = option(NO_BOUND, "y_min")
    y_max: float = option(NO_BOUND, "y_max")
    by_position: bool = option(False, "position_box")     # the Q/K projection coloured by position

    def valid(self) -> bool:
        return all(m in METRICS for m in (self.x, self.y, self.colour))


def within(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """(n,) bool: the values inside [low, high], a bound of 0 being none (nan never inside a bound)."""
    keep = np.ones(len(values), bool)
    with np.errstate(invalid="ignore"):
        if low > NO_BOUND:
            keep &= values >= low
        if high > NO_BOUND:
            keep &= values <= high
    return keep


def bound_box(prefix: str, tip: str) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(NO_BOUND, TOP)
    box.setDecimals(3)
    box.setSingleStep(0.05)
    box.setPrefix(prefix)
    box.setSpecialValueText(f"{prefix}any")
    box.setToolTip(tip)
    box.setKeyboardTracking(False)     # the scatter follows a typed number once it is whole
    return box


class HeadFinder(QWidget):
    """The ranges (x min/max, y min/max) and the list of the heads found; ``chosen(layer, head)``."""
    chosen = Signal(int, int)
    changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.x_min = bound_box("x ≥ ", "The least value of the x metric a head must have (any: no bound)")
        self.x_max = bound_box("x ≤ ", "The most value of the x metric a head may have (any: no bound)")
        self.y_min = bound_box("y ≥ ", "The least value of the y metric a head must have (any: no bound)")
        self.y_max = bound_box("y ≤ ", "The most value of the y metric a head may have (any: no bound)")
        for box in (self.x_min, self.x_max, self.y_min, self.y_max):
            box.valueChanged.connect(lambda _v: self.changed.emit())
        self.count = QLabel()
        self.list = QListWidget()
        self.list.setToolTip("The heads inside the ranges, by the y metric, largest first: click one to look at it")
        self.list.itemClicked.connect(self._clicked)
        bounds = QGridLayout()
        bounds.setContentsMargins(0, 0, 0, 0)
        bounds.addWidget(QLabel("<b>find heads</b>"), 0, 0, 1, 2)
        bounds.addWidget(self.x_min, 1, 0)
        bounds.addWidget(self.x_max, 1, 1)
        bounds.addWidget(self.y_min, 2, 0)
        bounds.addWidget(self.y_max, 2, 1)
        bounds.addWidget(self.count, 3, 0, 1, 2)
        bounds.setRowStretch(4, 1)
        box = QHBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(bounds)
        box.addWidget(self.list, 1)

    @property
    def filtering(self) -> bool:
        return any(b.value() > NO_BOUND for b in (self.x_min, self.x_max, self.y_min, self.y_max))

    def found(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(heads,) bool: the heads inside every range."""
        return within(x, self.x_min.value(), self.x_max.value()) & within(y, self.y_min.value(), self.y_max.value())

    def show_found(self, heads: list[dict], x: np.ndarray, y: np.ndarray, found: np.ndarray, names: tuple[str, str]) -> None:
        """List the heads found, largest y first (nan last)."""
        self.list.clear()
        order = sorted(np.flatnonzero(found), key=lambda i: (np.isnan(y[i]), -np.nan_to_num(y[i])))
        for i in order:
            h = heads[i]
            item = QListWidgetItem(f"{h['name']}   {names[0]} {x[i]:.4g}   {names[1]} {y[i]:.4g}")
            item.setData(256, (h["layer"], h["head"]))     # Qt.UserRole
            self.list.addItem(item)
        self.count.setText(f"{int(found.sum())} of {len(heads)} heads" + ("" if self.filtering else " (no range)"))

    def _clicked(self, item: QListWidgetItem) -> None:
        layer, head = item.data(256)
        self.chosen.emit(int(layer), int(head))


def metric_box(default: str) -> QComboBox:
    box = QComboBox()
    box.addItems(METRICS)
    box.setCurrentText(default)
    tips = {s.name: s.tip for s in statistics.atlas_statistics()}
    for i, name in enumerate(METRICS):
        box.setItemData(i, tips.get(name, "the norm of the head's output at a query, ||z_h W_O,h||"), 3)  # ToolTipRole
    return box
