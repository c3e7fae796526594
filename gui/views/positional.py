"""Positional-encoding lab: the encoding as a heatmap, as clocks, as rotations.

Every number drawn comes from engine.positional, so the pictures are the maths the models
run. The controls on top (d_model, positions, base, position, offset k, depth) drive all
tabs; Play moves the position and every clock turns together, leaving a faint trail.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import torch
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QCheckBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QSlider, QSpinBox,
                               QTabWidget, QVBoxLayout, QWidget)

from engine import positional as P
from gui.colormaps import attach_colorbar, colormap
from gui.worker import Jobs

TITLE = 'The positions lab could not run'     # the title of this view's error dialogs

N_CLOCKS = 8
MAX_POSITIONS = 2048
TRAIL = 24


def clock_depths(d_model: int, n: int = N_CLOCKS) -> list[int]:
    """``n`` depths spread from the fastest pair (0) to the slowest (d_model/2 - 1)."""
    pairs = max(1, d_model // 2)
    return sorted({int(round(x)) for x in np.linspace(0, pairs - 1, min(n, pairs))})


def _plot(title: str = "") -> pg.PlotWidget:
    w = pg.PlotWidget()
    w.getPlotItem().setTitle(title, size="9pt")
    w.getPlotItem().hideButtons()
    return w


def _image_plot(title: str, state) -> tuple[pg.PlotWidget, pg.ImageItem]:
    w = _plot(title)
    w.getPlotItem().invertY(True)
    img = pg.ImageItem(axisOrder="row-major")
    w.addItem(img)
    img.colorbar = attach_colorbar(w.getPlotItem(), img, colormap(state.colormap), (-1.0, 1.0))
    return w, img


def _rope_vectors(loaded, text: str):
    """(q, k, base, label): layer 0, head 0 of a RoPE GPT for the text's first token."""
    from engine.neurons import query_keys
    from engine.models.outputs import DECODER_SELF

    qk = query_keys(loaded, text, DECODER_SELF, 0, 0)
    return (torch.from_numpy(qk.queries[0]).double(), torch.from_numpy(qk.keys[0]).double(),
            loaded.model.rotary.base, f"{loaded.name}: layer 0, head 0, token {qk.trace.target_tokens[0]!r}")


class PositionalLab(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, TITLE)
        self.rope_source = ""

        # ---- controls ----
        self.d_model = self._spin(QSpinBox(), 4, 1024, 64, "d_model ", 2)
        self.n_positions = self._spin(QSpinBox(), 2, MAX_POSITIONS, 100, "positions ")
        self.base = self._spin(QDoubleSpinBox(), 2.0, 1e6, 10000.0, "base ")
        self.base.setDecimals(0)
        self.position = QSlider(Qt.Orientation.Horizontal)
        self.position.setRange(0, 99)
        self.position_label = QLabel("pos 0")
        self.play_button = QPushButton("Play")
        self.play_button.setCheckable(True)
        self.k = self._spin(QSpinBox(), 0, 512, 3, "k ")
        self.depth = self._spin(QSpinBox(), 0, 511, 0, "depth i ")
        self.use_model = QCheckBox("the loaded model's encoding")
        top = QHBoxLayout()
        for w in (self.d_model, self.n_positions, self.base, QLabel("position"), self.position, self.position_label,
                  self.play_button, self.k, self.depth, self.use_model):
            top.addWidget(w)
        top.addStretch(1)
        self.timer = QTimer(self)
        self.timer.setInterval(120)
        self.timer.timeout.connect(lambda: self.position.setValue((self.position.value() + 1) % (self.position.maximum() + 1)))
        self.play_button.toggled.connect(lambda on: (self.timer.start() if on else self.timer.stop(),
                                                     self.play_button.setText("Pause" if on else "Play")))

        # ---- tabs ----
        self.tabs = QTabWidget()
        self.heat_plot, self.heat = _image_plot("PE[pos, dim]: columns 2i are sines, 2i+1 cosines", state)
        self.heat_plot.setLabel("left", "position")
        self.heat_plot.setLabel("bottom", "dimension")
        self.tabs.addTab(self.heat_plot, "Heatmap")

        self.clock_widget = pg.GraphicsLayoutWidget()
        self.clocks: list[tuple[pg.PlotItem, pg.ScatterPlotItem, pg.ScatterPlotItem, int]] = []
        self._clock_plots: list = []
        self.tabs.addTab(self.clock_widget, "Clocks")

        offsets = QWidget()
        ol = QVBoxLayout(offsets)
        self.matrix_label = QLabel()
        self.matrix_label.setTextFormat(Qt.TextFormat.RichText)
        # The title names the two marks: a legend box would sit on the curve.
        self.offset_plot = _plot("R(k) PE(pos) (red circles) on PE(pos + k) (blue line), every dimension")
        self.offset_target = self.offset_plot.plot([], [], pen=pg.mkPen("#1f77b4", width=2), name="PE(pos + k)")
        self.offset_rotated = self.offset_plot.plot([], [], pen=None, symbol="o", symbolSize=7, symbolBrush=None,
                                                    symbolPen=pg.mkPen("#d62728", width=1.5), name="R(k) PE(pos)")
        self.error_label = QLabel()
        ol.addWidget(self.matrix_label)
        ol.addWidget(self.offset_plot, 1)
        ol.addWidget(self.error_label)
        self.tabs.addTab(offsets, "Offsets")

        sim = QWidget()
        sl = QHBoxLayout(sim)
        self.sim_plot = _plot("PE(pos) . PE(pos + k) over k")
        self.sim_plot.setLabel("bottom", "k")
        self.sim_curve = self.sim_plot.plot([], [], pen=pg.mkPen("#2ca02c", width=2))
        self.dot_plot, self.dot_image = _image_plot("PE(p) . PE(q), all positions", state)
        sl.addWidget(self.sim_plot)
        sl.addWidget(self.dot_plot)
        self.tabs.addTab(sim, "Similarity")

        rope = QWidget()
        rl = QHBoxLayout(rope)
        self.rope_circle = _plot("RoPE: query (red) at pos, key (blue) at pos - k, pair i")
        self.rope_circle.setAspectLocked(True)
        self.rope_q = self.rope_circle.plot([], [], pen=pg.mkPen("#d62728", width=3))
        self.rope_k = self.rope_circle.plot([], [], pen=pg.mkPen("#1f77b4", width=3))
        self.rope_plot = _plot("q_m . k_n against m - n: every m on one curve")
        self.rope_plot.setLabel("bottom", "m - n")
        self.rope_scatter = pg.ScatterPlotItem(size=4, brush=pg.mkBrush(31, 119, 180, 90), pen=None)
        self.rope_plot.addItem(self.rope_scatter)
        self.rope_label = QLabel()
        rv = QVBoxLayout()
        rv.addWidget(self.rope_plot, 1)
        rv.addWidget(self.rope_label)
        rl.addWidget(self.rope_circle)
        rl.addLayout(rv)
        self.tabs.addTab(rope, "RoPE")

        learned = QWidget()
        ll = QVBoxLayout(learned)
        self.learned_label = QLabel()
        row = QHBoxLayout()
        self.pca_plot = _plot("learned positions, 2-D PCA, joined in order")
        self.pca_line = self.pca_plot.plot([], [], pen=pg.mkPen((120, 120, 120, 120)))
        self.pca_points = pg.ScatterPlotItem(size=6, pen=None)
        self.pca_plot.addItem(self.pca_points)
        self.cos_plot, self.cos_image = _image_plot("cosine similarity of position vectors", state)
        row.addWidget(self.pca_plot)
        row.addWidget(self.cos_plot)
        ll.addWidget(self.learned_label)
        ll.addLayout(row, 1)
        self.tabs.addTab(learned, "Learned")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)

        for box in (self.d_model, self.n_positions, self.base, self.use_model):
            (box.toggled if box is self.use_model else box.valueChanged).connect(lambda *_: self.rebuild())
        for box in (self.k, self.depth):
            box.valueChanged.connect(lambda *_: self.redraw_position())
        self.position.valueChanged.connect(lambda *_: self.redraw_position())
        state.model_changed.connect(self._on_model)
        state.colormap_changed.connect(self._on_colormap)
        self._built = False  # the plots are filled when the panel is first shown: a fast start

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._built:
            self.rebuild()

    def _on_model(self, _loaded) -> None:
        if self._built:
            self.rebuild()

    def _on_colormap(self, name: str) -> None:
        for img in (self.heat, self.dot_image, self.cos_image):
            img.colorbar.setColorMap(colormap(name))

    @staticmethod
    def _spin(box, lo, hi, value, prefix, step=None):
        box.setRange(lo, hi)
        box.setValue(value)
        box.setPrefix(prefix)
        if step:
            box.setSingleStep(step)
        return box

    # ---- settings -> tables --------------------------------------------------------------------
    def _follow_model_sizes(self) -> None:
        """With the model's encoding shown, the size boxes show the model's sizes (and the
        formula's own knobs are off); without it, they are the formula's and editable."""
        loaded = self.state.loaded
        table = P.position_table(loaded.model)[1] if self.use_model.isChecked() and loaded is not None else None
        for box in (self.d_model, self.base):
            box.setEnabled(table is None)
        if table is not None:
            for box, value in ((self.d_model, table.shape[1] + table.shape[1] % 2),):
                box.blockSignals(True)
                box.setValue(value)
                box.blockSignals(False)
            self.n_positions.setMaximum(table.shape[0])
        else:
            self.n_positions.setMaximum(MAX_POSITIONS)

    def encoding(self) -> tuple[str, torch.Tensor]:
        """The table drawn: the loaded model's (when asked and it has one) or the formula's."""
        loaded = self.state.loaded
        if self.use_model.isChecked() and loaded is not None:
            kind, table = P.position_table(loaded.model)
            if table is not None:
                return kind, table[: self.n_positions.value()].double()
        return "sinusoidal", P.sinusoidal_encoding(self.n_positions.value(), self.d_model.value(), self.base.value(),
                                                   dtype=torch.float64)

    def rebuild(self) -> None:
        if not self._clock_plots:
            self._make_clock_plots()
        self._built = True
        if self.d_model.value() % 2:   # sines and cosines come in pairs: an odd width has no R(k)
            self.d_model.setValue(self.d_model.value() + 1)
            return                     # setValue rebuilt with the even width
        self._follow_model_sizes()
        d = self.d_model.value()
        self.depth.setMaximum(max(0, d // 2 - 1))
        self.position.setMaximum(self.n_positions.value() - 1)
        kind, table = self.encoding()
        self.pe = table
        levels = (-1.0, 1.0) if kind == "sinusoidal" else (float(table.min()), float(table.max()))
        self.heat.setImage(table.numpy(), autoLevels=False, levels=levels)
        self.heat.colorbar.setLevels(levels)
        self.heat_plot.getPlotItem().setTitle(
            "PE[pos, dim]: columns 2i are sines, 2i+1 cosines" if kind == "sinusoidal"
            else f"{self.state.loaded.name}: learned position table", size="9pt")
        self._build_clocks()
        dots = (self.pe @ self.pe.T).numpy()
        self.dot_image.setImage(dots, autoLevels=False, levels=(float(dots.min()), float(dots.max())))
        self.dot_image.colorbar.setLevels((float(dots.min()), float(dots.max())))
        self._fill_learned()
        self._fill_rope_curve()
        self.redraw_position()

    def _make_clock_plots(self) -> None:
        """N_CLOCKS unit circles, made once (re-made plots would leave pyqtgraph events behind)."""
        circle = np.linspace(0, 2 * np.pi, 100)
        self._clock_plots = []
        for n in range(N_CLOCKS):
            plot = self.clock_widget.addPlot(row=n // 4, col=n % 4)
            plot.setAspectLocked(True)
            plot.hideAxis("left")
            plot.hideAxis("bottom")
            plot.setMouseEnabled(False, False)
            plot.hideButtons()
            plot.setRange(xRange=(-1.3, 1.3), yRange=(-1.3, 1.3), padding=0)
            plot.plot(np.sin(circle), np.cos(circle), pen=pg.mkPen((150, 150, 150), width=1))
            trail = pg.ScatterPlotItem(size=5, pen=None, brush=pg.mkBrush(31, 119, 180, 60))
            point = pg.ScatterPlotItem(size=12, pen=pg.mkPen("k"), brush=pg.mkBrush("#d62728"))
            plot.addItem(trail)
            plot.addItem(point)
            self._clock_plots.append((plot, point, trail))

    def _build_clocks(self) -> None:
        """Give each circle its depth for the current d_model and base."""
        d, base = self.d_model.value(), self.base.value()
        w = P.angular_frequencies(d, base).numpy()
        depths = clock_depths(d)
        self.clocks = []
        for n, (plot, point, trail) in enumerate(self._clock_plots):
            plot.setVisible(n < len(depths))
            if n < len(depths):
                i = depths[n]
                plot.setTitle(f"i = {i}: w = {w[i]:.3g} rad/pos, turn every {2 * np.pi / w[i]:.3g}", size="8pt")
                self.clocks.append((plot, point, trail, i))

    # ---- everything that follows the position slider --------------------------------------------
    def redraw_position(self) -> None:
        pos, k, i = self.position.value(), self.k.value(), self.depth.value()
        d, base = self.d_model.value(), self.base.value()
        self.position_label.setText(f"pos {pos}")
        # One table up to pos + k serves the clocks, their trails and the offsets.
        pe = P.sinusoidal_encoding(pos + k + 1, d, base, dtype=torch.float64)  # (pos + k + 1, d)
        # clocks: the point (sin(pos w_i), cos(pos w_i)) of each drawn depth, with a trail
        trail_rows = pe[max(0, pos - TRAIL):pos].numpy()
        row = pe[pos].numpy()
        for plot, point, trail, depth in self.clocks:
            point.setData([row[2 * depth]], [row[2 * depth + 1]])
            trail.setData(trail_rows[:, 2 * depth], trail_rows[:, 2 * depth + 1])
        # offsets: R_i(k) and the overlay for every depth
        r = P.rotation_matrix(k, i, d, base).numpy()
        self.matrix_label.setText(
            f"R<sub>{i}</sub>({k}) = [[{r[0, 0]:+.4f}, {r[0, 1]:+.4f}], [{r[1, 0]:+.4f}, {r[1, 1]:+.4f}]]"
            f" &nbsp; (a turn by k w<sub>i</sub> = {k * P.angular_frequencies(d, base)[i].item():.4f} rad, the same at every pos)")
        rotated = P.shift_encoding(pe[pos], k, base).numpy()[: 2 * (d // 2)]
        target = pe[pos + k].numpy()[: 2 * (d // 2)]
        self.offset_target.setData(np.arange(len(target)), target)
        self.offset_rotated.setData(np.arange(len(rotated)), rotated)
        self.offset_error = float(np.abs(rotated - target).max()) if len(target) else 0.0
        self.error_label.setText(f"max |R(k) PE({pos}) - PE({pos + k})| over all dimensions = {self.offset_error:.2e}")
        # similarity over k from this position
        max_k = max(1, self.n_positions.value() - 1)
        self.sim_curve.setData(np.arange(max_k + 1), P.offset_similarity(pos, max_k, d, base).numpy())
        # RoPE: the query at pos and the key at pos - k, pair i
        w = P.angular_frequencies(d, base)[i].item()
        self.rope_q.setData([0, np.cos(pos * w)], [0, np.sin(pos * w)])
        self.rope_k.setData([0, 0.8 * np.cos((pos - k) * w)], [0, 0.8 * np.sin((pos - k) * w)])

    def _fill_rope_curve(self) -> None:
        """q_m . k_n over m - n: random q and k, or, for a GPT with RoPE, the real query and
        key of layer 0, head 0 for the first token of the text (at position 0 RoPE has not
        turned them yet), computed in the worker."""
        loaded = self.state.loaded
        if loaded is not None and P.position_table(loaded.model)[0] == "rope" and (self.state.text or "").strip():
            self.jobs.start(_rope_vectors, loaded, self.state.text, on_returned=self._show_rope,
                            on_error=lambda exc: self.rope_label.setText(f"RoPE vectors unavailable: {exc}"))
            return
        d = self.d_model.value() - self.d_model.value() % 2
        g = torch.Generator().manual_seed(0)
        q, k = torch.randn(d, generator=g, dtype=torch.float64), torch.randn(d, generator=g, dtype=torch.float64)
        self._show_rope((q, k, self.base.value(), f"random q, k; d = {d}"))

    def _show_rope(self, result) -> None:
        q, k, base, source = result
        n = min(self.n_positions.value(), 128)
        scores = P.rope_scores(q, k, n, base).numpy()
        m, nn = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        self.rope_scatter.setData((m - nn).ravel(), scores.ravel())
        self.rope_spread = max(float(np.ptp(np.diagonal(scores, off))) for off in range(-n + 1, n))
        self.rope_source = source
        self.rope_label.setText(f"largest spread of q_m . k_n at one m - n: {self.rope_spread:.1e} ({source})")

    def _fill_learned(self) -> None:
        loaded = self.state.loaded
        kind, table = P.position_table(loaded.model) if loaded is not None else ("none", None)
        if kind != "learned":
            why = {"sinusoidal": "uses the sinusoidal formula", "rope": "uses rotary positions",
                   "none": "has no position table"}[kind]
            self.learned_label.setText("Open a GPT or BERT checkpoint to see learned positions"
                                       + (f": the loaded model {why}." if loaded is not None else "."))
            self.pca_line.setData([], [])
            self.pca_points.setData([], [])
            self.cos_image.clear()
            self.learned = None
            return
        table = table[: self.n_positions.value()]
        xy = P.pca_2d(table).numpy()
        self.learned = xy
        colors = [pg.intColor(int(200 * j / max(1, len(xy) - 1)), hues=240, values=1, maxValue=220) for j in range(len(xy))]
        self.pca_line.setData(xy[:, 0], xy[:, 1])
        self.pca_points.setData(xy[:, 0], xy[:, 1], brush=colors)
        self.cos_image.setImage(P.cosine_matrix(table).numpy(), autoLevels=False, levels=(-1, 1))
        self.learned_label.setText(f"{loaded.name}: {table.shape[0]} learned position vectors of {table.shape[1]} "
                                   "dimensions (colour runs from the first position to the last).")

    def export_target(self) -> QWidget:
        return self.tabs.currentWidget()

    def closeEvent(self, event) -> None:
        self.timer.stop()
        self.jobs.shutdown()
        super().closeEvent(event)
