"""Atlas: every head of a model across a corpus (engine.atlas), opened from its file.

A scatter of the heads, one point each, any metric on x and on y and as colour; hovering a
point names its head; clicking one shows its metrics, its most similar heads, its top
contexts (a line of text each, the query in [brackets] and its strongest keys in <angles>),
its decile samples, and its Q/K projection (queries and keys told apart). The file is read
and each head's detail computed in a worker (numpy only; no model needed); the GUI thread
only hands the finished arrays to the items. An atlas of another model than the one open says so.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QComboBox, QFileDialog, QHBoxLayout, QLabel, QPushButton, QSplitter, QTextBrowser,
                               QVBoxLayout, QWidget)

from attnscope.engine.atlas import atlas_summary, head_detail, load_state
from attnscope.engine.inspection import statistics
from attnscope.gui.worker import Jobs

METRICS = [s.name for s in statistics.atlas_statistics()] + ["activation"]


def read_atlas(path: str) -> dict:
    """The worker's half of opening: the state and its summary (numpy, on a worker thread)."""
    state = load_state(path)
    return {"state": state, "summary": atlas_summary(state), "path": path}


def context_line(ctx: dict) -> str:
    """One kept context as text: the query in [brackets], its strongest keys in <angles>."""
    start, out = ctx["window_start"], []
    strong = set(ctx["keys"][:3])
    for i, token in enumerate(ctx["window"]):
        pos = start + i
        out.append(f"[{token}]" if pos == ctx["position"] else f"<{token}>" if pos in strong else token)
    keys = ", ".join(f"{k} ({w:.2f})" for k, w in zip(ctx["keys"][:3], ctx["weights"][:3]))
    return f"doc {ctx['document']} @ {ctx['position']}  act {ctx['activation']:.3f}  keys {keys}:  {' '.join(out)}"


class AtlasView(QWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.atlas: dict | None = None
        self.detail: dict | None = None
        self.jobs = Jobs(self, title="The atlas could not be opened")
        self.open_button = QPushButton("Open atlas…")
        self.open_button.clicked.connect(self._ask_file)
        self.boxes = {}
        bar = QHBoxLayout()
        bar.addWidget(self.open_button)
        for role, default in (("x", "previous"), ("y", "induction"), ("colour", "entropy")):
            box = QComboBox()
            box.addItems(METRICS)
            box.setCurrentText(default)
            box.currentTextChanged.connect(self._draw)
            bar.addWidget(QLabel(role))
            bar.addWidget(box)
            self.boxes[role] = box
        bar.addStretch(1)
        self.readout = QLabel("Open an atlas (attnscope atlas MODEL --out A.safetensors builds one).")
        self.readout.setWordWrap(True)
        self.plot = pg.PlotWidget()
        self.points = pg.ScatterPlotItem(size=11, hoverable=True, tip=self._tip)
        self.points.sigClicked.connect(self._clicked)
        self.plot.addItem(self.points)
        self.projection = pg.PlotWidget()
        self.queries = pg.ScatterPlotItem(size=5, brush=pg.mkBrush(30, 120, 220, 160), pen=None, name="queries")
        self.keys = pg.ScatterPlotItem(size=5, brush=pg.mkBrush(230, 110, 30, 160), pen=None, name="keys")
        self.projection.addLegend()
        self.projection.addItem(self.queries)
        self.projection.addItem(self.keys)
        self.text = QTextBrowser()
        right = QSplitter(Qt.Vertical)
        right.addWidget(self.projection)
        right.addWidget(self.text)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.plot)
        split.addWidget(right)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.readout)
        layout.addWidget(split, 1)
        state.model_changed.connect(lambda _loaded: self._say_model())

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
        self.atlas, self.detail = atlas, None
        self.text.clear()
        self.queries.setData([], [])
        self.keys.setData([], [])
        self._say_model()
        self._draw()

    def _say_model(self) -> None:
        if self.atlas is None:
            return
        s = self.atlas["summary"]
        said = f"{s['model']}: {s['documents']:,} documents, {s['tokens']:,} tokens of {s['corpus']}."
        loaded = getattr(self.state, "loaded", None)
        if loaded is not None and loaded.name != s["model"]:
            said += f" This atlas is of {s['model']}, not of the open model {loaded.name}."
        self.readout.setText(said)

    # ---- the scatter --------------------------------------------------------------------------
    def values(self, metric: str) -> np.ndarray:
        """(heads,) one metric's mean per head, in the summary's order."""
        heads = self.atlas["summary"]["heads"]
        get = (lambda h: h["activation"]) if metric == "activation" else (lambda h: h[metric]["mean"])
        return np.array([np.nan if get(h) is None else get(h) for h in heads], float)

    def _draw(self, *_args) -> None:
        if self.atlas is None:
            return
        x, y, c = (self.values(self.boxes[r].currentText()) for r in ("x", "y", "colour"))
        span = np.nanmax(c) - np.nanmin(c) if np.isfinite(c).any() else 0.0
        norm = np.nan_to_num((c - np.nanmin(c)) / span if span > 0 else np.zeros_like(c))
        brushes = [pg.mkBrush(pg.colormap.get("viridis").map(float(v), mode="qcolor")) for v in norm]
        heads = self.atlas["summary"]["heads"]
        self.points.setData(x=np.nan_to_num(x), y=np.nan_to_num(y), brush=brushes,
                            data=[(h["layer"], h["head"]) for h in heads])
        self.plot.setLabel("bottom", self.boxes["x"].currentText())
        self.plot.setLabel("left", self.boxes["y"].currentText())

    def _tip(self, x, y, data) -> str:
        layer, head = data
        return f"L{layer}.H{head}\n{self.boxes['x'].currentText()} {x:.4g}\n{self.boxes['y'].currentText()} {y:.4g}"

    def _clicked(self, _item, points, *_ev) -> None:
        if len(points):
            self.select_head(*points[0].data())

    # ---- one head -----------------------------------------------------------------------------
    def select_head(self, layer: int, head: int) -> None:
        """Show one head's metrics, contexts and projection (computed in the worker)."""
        if self.atlas is None:
            return
        self.jobs.start(head_detail, self.atlas["state"], layer, head, on_returned=self._show_head,
                        on_error=self._failed)

    def _show_head(self, detail: dict) -> None:
        self.detail = detail
        p = detail["projection"]
        q, k = np.array(p["queries"]).reshape(-1, 2), np.array(p["keys"]).reshape(-1, 2)
        self.queries.setData(q[:, 0], q[:, 1])
        self.keys.setData(k[:, 0], k[:, 1])
        self.projection.setTitle(f"{detail['name']} Q/K projection (PCA keeps {p['variance_kept']:.0%} of the variance)")
        lines = [f"<b>{detail['name']}</b>"]
        lines += [f"{s.name}: {detail[s.name]['mean']:.4g}" if detail[s.name]["mean"] is not None else f"{s.name}: -"
                  for s in statistics.atlas_statistics()]
        lines.append("similar: " + ", ".join(f"{s['head']} ({s['cosine']:.2f})" for s in detail["similar"]))
        lines.append("<b>top contexts</b>")
        lines += [_escape(context_line(c)) for c in detail["top"]]
        lines.append("<b>decile samples</b>")
        for d, samples in enumerate(detail["decile_samples"]):
            lines += [f"decile {d + 1}: " + _escape(context_line(c)) for c in samples]
        self.text.setHtml("<br>".join(lines))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
