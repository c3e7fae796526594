"""Atlas: every head of a model across a corpus (engine.atlas), opened from its file.

A scatter of the heads, one point each, any metric on x and on y and as colour; hovering a
point names its head. A head finder (gui.views.atlas_finder) keeps the heads inside ranges of
the x and y metrics: they are drawn strong, the others dimmed, and listed. Clicking a head (in
the scatter, the list, or a similar head's link) shows its metric histograms, its most similar
heads, its top contexts and decile samples (gui.views.atlas_head), and its Q/K projection
(queries and keys told apart). A context is a door: clicked, ``door_asked(layer, head,
context)`` asks the window (gui.window.atlas_actions) to Run its document and open Head detail
at that row, only when the open model is the atlas's own; otherwise the view says so.

The file is read and each head's detail computed in a worker (numpy only; no model needed);
the GUI thread only hands the finished arrays to the items.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QFileDialog, QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget

from attnscope.engine.atlas import atlas_summary, load_state
from attnscope.gui.view_options import bind_options
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.views.atlas_finder import METRICS, AtlasOptions, HeadFinder, metric_box
from attnscope.gui.views.atlas_head import HeadPanel, context_line, head_panel
from attnscope.gui.worker import Jobs

__all__ = ["METRICS", "AtlasView", "context_line", "read_atlas"]
LABELLED = 12        # the most heads found named in the scatter
QUERY_BRUSH, KEY_BRUSH = pg.mkBrush(30, 120, 220, 170), pg.mkBrush(230, 110, 30, 170)
DIM = 70             # alpha of a head the finder leaves out


def read_atlas(path: str) -> dict:
    """The worker's half of opening: the state and its summary (numpy, on a worker thread)."""
    state = load_state(path)
    return {"state": state, "summary": atlas_summary(state), "path": path}


class AtlasView(QWidget):
    door_asked = Signal(int, int, dict)      # layer, head, a kept context: Run its document (the window)

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.atlas: dict | None = None
        self.detail: dict | None = None
        self.selected: tuple[int, int] | None = None
        self.jobs = Jobs(self, title="The atlas could not be opened")
        self.open_button = QPushButton("Open atlas…")
        self.open_button.setToolTip("Open an atlas file (File > Build Atlas… makes one from the open model)")
        self.open_button.clicked.connect(self._ask_file)
        self.x_box, self.y_box, self.colour_box = metric_box("previous"), metric_box("induction"), metric_box("entropy")
        self.boxes = {"x": self.x_box, "y": self.y_box, "colour": self.colour_box}
        self.position_box = QCheckBox("colour by position")
        self.position_box.setToolTip("Colour the sampled queries and keys by their position in the document "
                                     "(viridis: early dark, late yellow); off: queries blue, keys orange")
        self.position_box.toggled.connect(lambda _on: self.detail is not None and self._project(self.detail))
        bar = QHBoxLayout()
        bar.addWidget(self.open_button)
        for role, box in self.boxes.items():
            box.currentTextChanged.connect(self._draw)
            bar.addWidget(QLabel(role))
            bar.addWidget(box)
        bar.addWidget(self.position_box)
        bar.addStretch(1)
        # Elided, not wrapped: a wrapped label makes the dock's scroll area size the view by its
        # preferred height (height-for-width), and the finder and the contexts fell below the dock.
        self.readout = ElidedLabel("Open an atlas, or build one: File > Build Atlas… (or attnscope atlas MODEL "
                                   "--out A.safetensors).")
        self.door_note = ElidedLabel()
        self.plot = pg.PlotWidget()
        self.points = pg.ScatterPlotItem(size=11, hoverable=True, tip=self._tip)
        self.points.sigClicked.connect(self._clicked)
        self.plot.addItem(self.points)
        self.ring = pg.ScatterPlotItem(size=20, brush=None, pen=pg.mkPen(220, 40, 40, width=2))   # the head shown
        self.plot.addItem(self.ring)
        self.labels: list[pg.TextItem] = []      # the names of the heads found (a few), and of the one shown
        for side in ("bottom", "left"):
            self.plot.getAxis(side).enableAutoSIPrefix(False)     # a mass reads 0.16, not 160 (x0.001)
        self.finder = HeadFinder()
        self.x_min, self.x_max, self.y_min, self.y_max = (self.finder.x_min, self.finder.x_max, self.finder.y_min,
                                                          self.finder.y_max)
        self.finder.changed.connect(self._draw)
        self.finder.chosen.connect(self.select_head)
        self.projection = pg.PlotWidget()
        self.queries = pg.ScatterPlotItem(size=6, brush=QUERY_BRUSH, pen=None, name="queries (o)")
        self.keys = pg.ScatterPlotItem(size=7, symbol="t", brush=KEY_BRUSH, pen=None, name="keys (triangles)")
        self.projection.addLegend(offset=(-10, 10))
        self.projection.addItem(self.queries)
        self.projection.addItem(self.keys)
        self.panel = HeadPanel()
        self.panel.door.connect(self._door)
        self.panel.head_asked.connect(self.select_head)
        self.text = self.panel.text
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.plot)
        left.addWidget(self.finder)
        left.setSizes([600, 150])
        pictures = QSplitter(Qt.Orientation.Horizontal)
        pictures.addWidget(self.projection)
        pictures.addWidget(self.panel.histograms)
        pictures.setSizes([400, 560])
        self.panel.insertWidget(0, pictures)
        self.panel.setSizes([400, 200])
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(self.panel)
        split.setSizes([400, 600])
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.readout)
        layout.addWidget(self.door_note)
        layout.addWidget(split, 1)
        state.model_changed.connect(lambda _loaded: self._say_model())
        bind_options(self, AtlasOptions)

    @property
    def options(self) -> AtlasOptions:
        return self.option_binding.options

    # ---- opening ------------------------------------------------------------------------------
    def _ask_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window(), "Open Atlas", "", "Atlas (*.safetensors)")
        if path:
            self.open_atlas(path)

    def open_atlas(self, path: str) -> None:
        """Read ``path`` in a worker; the scatter follows when it is read."""
        self.readout.setText(f"Reading {path}…")
        self.jobs.start(read_atlas, path, on_returned=self._opened, on_error=self._failed)

    def _failed(self, exc) -> None:
        self.readout.setText(str(exc))

    def _opened(self, atlas: dict) -> None:
        self.atlas, self.detail, self.selected = atlas, None, None
        self.panel.clear()
        self.door_note.setText("")
        self.queries.setData([], [])
        self.keys.setData([], [])
        self.ring.setData([], [])
        self._say_model()
        self._draw()

    def other_model(self) -> str | None:
        """Why the atlas's contexts cannot be Run with the open model, or None when they can."""
        if self.atlas is None:
            return "No atlas is open."
        s = self.atlas["summary"]
        loaded = getattr(self.state, "loaded", None)
        if loaded is None:
            return f"Open {s['model']} to Run this atlas's contexts."
        if loaded.name != s["model"] or getattr(loaded, "family", s["family"]) != s["family"]:
            return f"This atlas is of {s['model']}, not of the open model {loaded.name}."
        return None

    def _say_model(self) -> None:
        if self.atlas is None:
            return
        s = self.atlas["summary"]
        said = f"{s['model']}: {s['documents']:,} documents, {s['tokens']:,} tokens of {Path(s['corpus']).name}."
        other = self.other_model()
        if other is not None and getattr(self.state, "loaded", None) is not None:
            said += f" {other} Its contexts are not Run."
        self.readout.setText(said)

    # ---- the scatter and the finder -----------------------------------------------------------
    def values(self, metric: str) -> np.ndarray:
        """(heads,) one metric's mean per head, in the summary's order."""
        heads = self.atlas["summary"]["heads"]
        get = (lambda h: h["activation"]) if metric == "activation" else (lambda h: h[metric]["mean"])
        return np.array([np.nan if get(h) is None else get(h) for h in heads], float)

    def found(self) -> np.ndarray:
        """(heads,) bool: the heads inside the finder's ranges."""
        return self.finder.found(self.values(self.x_box.currentText()), self.values(self.y_box.currentText()))

    def _draw(self, *_args) -> None:
        if self.atlas is None:
            return
        x, y, c = (self.values(self.boxes[r].currentText()) for r in ("x", "y", "colour"))
        found = self.finder.found(x, y)
        span = np.nanmax(c) - np.nanmin(c) if np.isfinite(c).any() else 0.0
        norm = np.nan_to_num((c - np.nanmin(c)) / span if span > 0 else np.zeros_like(c))
        cmap = pg.colormap.get("viridis")
        brushes, sizes = [], []
        for v, keep in zip(norm, found):
            colour = cmap.map(float(v), mode="qcolor")
            colour.setAlpha(255 if keep else DIM)
            brushes.append(pg.mkBrush(colour))
            sizes.append(13 if keep and self.finder.filtering else 11)
        heads = self.atlas["summary"]["heads"]
        self.points.setData(x=np.nan_to_num(x), y=np.nan_to_num(y), brush=brushes, size=sizes,
                            pen=[pg.mkPen(0, 0, 0, 255 if k else DIM) for k in found],
                            data=[(h["layer"], h["head"]) for h in heads])
        self.plot.setLabel("bottom", self.x_box.currentText())
        self.plot.setLabel("left", self.y_box.currentText())
        self.plot.setTitle(f"colour: {self.colour_box.currentText()} (viridis, low to high)")
        self.finder.show_found(heads, x, y, found, (self.x_box.currentText(), self.y_box.currentText()))
        self._ring()
        self._name_heads(heads, x, y, found)

    def _name_heads(self, heads: list[dict], x: np.ndarray, y: np.ndarray, found: np.ndarray) -> None:
        """Name the heads found (up to LABELLED) and the head shown beside their points."""
        for label in self.labels:
            self.plot.removeItem(label)
        named = set(np.flatnonzero(found)[:LABELLED]) if self.finder.filtering else set()
        named |= {i for i, h in enumerate(heads) if (h["layer"], h["head"]) == self.selected}
        self.labels = []
        for i in sorted(named):
            label = pg.TextItem(heads[i]["name"], anchor=(-0.25, 0.5), color=(200, 30, 30))
            label.setPos(float(np.nan_to_num(x[i])), float(np.nan_to_num(y[i])))
            self.plot.addItem(label)
            self.labels.append(label)

    def _ring(self) -> None:
        if self.atlas is None or self.selected is None:
            self.ring.setData([], [])
            return
        heads = self.atlas["summary"]["heads"]
        i = next(i for i, h in enumerate(heads) if (h["layer"], h["head"]) == self.selected)
        x, y = self.values(self.x_box.currentText())[i], self.values(self.y_box.currentText())[i]
        self.ring.setData([np.nan_to_num(x)], [np.nan_to_num(y)])

    def _tip(self, x, y, data) -> str:
        layer, head = data
        return f"L{layer}.H{head}\n{self.x_box.currentText()} {x:.4g}\n{self.y_box.currentText()} {y:.4g}"

    def _clicked(self, _item, points, *_ev) -> None:
        if len(points):
            self.select_head(*points[0].data())

    # ---- one head -----------------------------------------------------------------------------
    def select_head(self, layer: int, head: int) -> None:
        """Show one head's histograms, contexts and projection (computed in the worker)."""
        if self.atlas is None:
            return
        self.selected = (int(layer), int(head))
        self._draw()
        self.jobs.start(head_panel, self.atlas["state"], int(layer), int(head), on_returned=self._show_head,
                        on_error=self._failed)

    def _show_head(self, detail: dict) -> None:
        self.detail = detail
        self._project(detail)
        self.panel.show_head(detail)

    def _project(self, detail: dict) -> None:
        """The head's sampled queries (circles) and keys (triangles): blue and orange, or by position."""
        p = detail["projection"]
        q, k = np.array(p["queries"]).reshape(-1, 2), np.array(p["keys"]).reshape(-1, 2)
        if self.position_box.isChecked() and len(p["positions"]) == len(q):
            pos = np.asarray(p["positions"], float)
            span = max(1.0, float(pos.max() - pos.min())) if len(pos) else 1.0
            cmap = pg.colormap.get("viridis")
            brushes = [pg.mkBrush(cmap.map(float(v), mode="qcolor")) for v in (pos - pos.min()) / span] if len(pos) else []
            self.queries.setData(q[:, 0], q[:, 1], brush=brushes)
            self.keys.setData(k[:, 0], k[:, 1], brush=brushes)
        else:
            self.queries.setData(q[:, 0], q[:, 1], brush=QUERY_BRUSH)
            self.keys.setData(k[:, 0], k[:, 1], brush=KEY_BRUSH)
        kept = p["variance_kept"]
        self.projection.setTitle(f"{detail['name']} Q/K projection"
                                 + (f" (PCA keeps {kept:.0%} of the variance)" if np.isfinite(kept) else ""))

    # ---- a context is a door ------------------------------------------------------------------
    def _door(self, context: dict) -> None:
        """A context clicked: the window Runs its document, only with the atlas's own model."""
        other = self.other_model()
        if other is not None:
            self.say_door(f"{other} Its contexts are Run only with that model: open it first.")
            return
        self.door_asked.emit(self.detail["layer"], self.detail["head"], context)

    def say_door(self, sentence: str) -> None:
        self.door_note.setText(sentence)
