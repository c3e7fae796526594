"""Positional-encoding lab: the encoding as a heatmap, as clocks, as rotations.

Every number drawn comes from attnscope.engine.models.positional, so the pictures are the maths the models
run. The controls on top (d_model, positions, base, position, offset k, depth) drive all
tabs; Play moves the position and every clock turns together, leaving a faint trail.

The maths is torch, so it runs in the view's worker (gui/drawing/prepared.py): ``lab_drawing``
turns a snapshot of the controls into numpy arrays and strings, and the GUI thread only hands
them to the plots. This module imports no torch: the window starts without it.
"""
from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass, replace

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QCheckBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QSlider, QSpinBox,
                               QTabWidget, QVBoxLayout, QWidget)

from attnscope.gui.colormaps import attach_colorbar, colormap
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.drawing.prepared import PreparedView, prepares
from attnscope.gui.worker import MODEL, error_message, job_failures

TITLE = 'The positions lab could not run'     # the title of this view's error dialogs

N_CLOCKS = 8
MAX_POSITIONS = 2048
TRAIL = 24
SINUSOIDAL_TITLE = "PE[pos, dim]: columns 2i are sines, 2i+1 cosines"


def clock_depths(d_model: int, n: int = N_CLOCKS) -> list[int]:
    """``n`` depths spread from the fastest pair (0) to the slowest (d_model/2 - 1)."""
    pairs = max(1, d_model // 2)
    return sorted({int(round(x)) for x in np.linspace(0, pairs - 1, min(n, pairs))})


# ---- what the worker is asked (plain snapshots of the controls) -----------------------------------
@dataclass(frozen=True)
class PositionSettings:
    """What follows the position slider: the clocks, the offsets, the similarity, RoPE's hands."""
    pos: int
    k: int
    depth: int
    d_model: int
    n_positions: int
    base: float


@dataclass(frozen=True)
class TableSettings:
    """What the whole tables follow: the sizes, the base and the loaded model (or None)."""
    d_model: int
    n_positions: int
    base: float
    use_model: bool
    loaded: object      # engine.loading.loaded.LoadedModel or None
    text: object        # the window's prompt (str or engine.inputs.Chat): a RoPE GPT's real q and k come from it


# ---- what the worker hands back (numpy arrays and strings, never Qt or torch) ---------------------
@dataclass
class RopeDrawing:
    """q_m . k_n against m - n, or the error that kept the model's own q and k from coming."""
    offsets: np.ndarray | None = None     # (n * n,) m - n
    scores: np.ndarray | None = None      # (n * n,) q_m . k_n
    spread: float = 0.0                   # the largest spread of the scores at one m - n
    source: str = ""
    error: Exception | None = None
    text: object = None                   # the prompt whose query and key were drawn (None: random ones)


@dataclass
class TablesDrawing:
    """The heatmap, the dot products of every pair of positions, the learned table and RoPE."""
    title: str
    heat: np.ndarray                      # (P, D) the encoding drawn
    levels: tuple[float, float]
    dots: np.ndarray                      # (P, P) PE(p) . PE(q)
    d_model: int                          # the sizes drawn: the model's when its table is shown
    n_positions: int
    model_sizes: bool                     # the model's table is shown: the formula's knobs are off
    max_positions: int
    learned: np.ndarray | None            # (P, 2) learned positions in 2-D PCA, or None
    cosines: np.ndarray | None            # (P, P) their cosine similarity
    learned_text: str
    rope: RopeDrawing


@dataclass
class PositionDrawing:
    """Everything that moves with the slider, for one position, offset and depth."""
    pos: int
    k: int
    depths: list[int]                     # the clocks' pairs i
    clock_titles: list[str]
    points: np.ndarray                    # (C, 2) each clock's (sin, cos) at pos
    trail_x: np.ndarray                   # (T, C) the positions before pos, T <= TRAIL
    trail_y: np.ndarray                   # (T, C)
    matrix_text: str
    target: np.ndarray                    # (2 * (D // 2),) PE(pos + k)
    rotated: np.ndarray                   # (2 * (D // 2),) R(k) PE(pos)
    offset_error: float
    similarity: np.ndarray                # (max_k + 1,) PE(pos) . PE(pos + k) over k
    query_hand: np.ndarray                # (2, 2) x and y of RoPE's query line
    key_hand: np.ndarray                  # (2, 2) x and y of RoPE's key line


@dataclass
class LabDrawing:
    tables: TablesDrawing | None          # None: only the position moved, the tables on screen stay
    position: PositionDrawing


# ---- the worker's part: engine.models.positional (torch) -> numpy ------------------------------------------
@prepares
def lab_drawing(position: PositionSettings, tables: TableSettings | None) -> LabDrawing:
    """What the lab draws, in a worker. With ``tables`` the tables are redrawn too, and their
    sizes (the model's, when its table is shown) are the ones the position part uses."""
    if tables is None:
        return LabDrawing(None, position_drawing(position))
    drawn = tables_drawing(tables)
    return LabDrawing(drawn, position_drawing(replace(position, d_model=drawn.d_model,
                                                      n_positions=drawn.n_positions)))


def _encoding(s: TableSettings, kind: str, model_table) -> tuple[str, object]:
    """The table drawn, (P, D) float64: the loaded model's (when asked and it has one) or the formula's."""
    import torch
    from attnscope.engine.models import positional as P

    if s.use_model and model_table is not None:
        return kind, model_table[: s.n_positions].double()
    return "sinusoidal", P.sinusoidal_encoding(s.n_positions, s.d_model, s.base, dtype=torch.float64)


def tables_drawing(s: TableSettings) -> TablesDrawing:
    """The tables for the current sizes: one look at the model's position table serves the
    heatmap, the sizes shown, the learned tab and the RoPE curve."""
    from attnscope.engine.models import positional as P

    kind, model_table = P.position_table(s.loaded.model) if s.loaded is not None else ("none", None)
    shown, table = _encoding(s, kind, model_table)
    table_np = table.numpy()  # (P, D)
    levels = (-1.0, 1.0) if shown == "sinusoidal" else (float(table_np.min()), float(table_np.max()))
    title = SINUSOIDAL_TITLE if shown == "sinusoidal" else f"{s.loaded.name}: learned position table"
    model_sizes = s.use_model and model_table is not None
    d = model_table.shape[1] + model_table.shape[1] % 2 if model_sizes else s.d_model
    n = table_np.shape[0]
    xy, cosines, learned_text = learned_drawing(s.loaded, kind, model_table, n)
    return TablesDrawing(title, table_np, levels, (table @ table.T).numpy(), d, n, model_sizes,
                         model_table.shape[0] if model_sizes else MAX_POSITIONS, xy, cosines, learned_text,
                         rope_drawing(s, kind, d, n))


def learned_drawing(loaded, kind: str, table, n: int) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """A learned table's first ``n`` positions as (P, 2) PCA points and (P, P) cosines, with the
    line above them; or none of it, and why, for a model without one."""
    from attnscope.engine.models import positional as P

    if kind != "learned":
        why = {"sinusoidal": "uses the sinusoidal formula", "rope": "uses rotary positions",
               "none": "has no position table"}[kind]
        return None, None, ("Open a GPT or BERT checkpoint to see learned positions"
                            + (f": the loaded model {why}." if loaded is not None else "."))
    table = table[:n]  # (P, D)
    return (P.pca_2d(table).numpy(), P.cosine_matrix(table).numpy(),
            f"{loaded.name}: {table.shape[0]} learned position vectors of {table.shape[1]} "
            "dimensions (colour runs from the first position to the last).")


def _rope_vectors(loaded, text):
    """(q, k, base, label): layer 0, head 0 of a RoPE GPT for the text's first token."""
    import torch
    from attnscope.engine.inspection import query_keys
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.engine.traces import trace_text

    qk = query_keys(trace_text(loaded, text), DECODER_SELF, 0, 0)
    return (torch.from_numpy(qk.queries[0]).double(), torch.from_numpy(qk.keys[0]).double(),
            loaded.model.rotary.base, f"{loaded.name}: layer 0, head 0, token {qk.trace.target_tokens[0]!r}")


def _random_vectors(d_model: int, base: float):
    """(q, k, base, label): a seeded random query and key of the even width <= d_model."""
    import torch

    d = d_model - d_model % 2
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(d, generator=g, dtype=torch.float64), torch.randn(d, generator=g, dtype=torch.float64)
    return q, k, base, f"random q, k; d = {d}"


def rope_drawing(s: TableSettings, kind: str, d_model: int, n_positions: int) -> RopeDrawing:
    """q_m . k_n over m - n: random q and k, or, for a GPT with RoPE, the real query and key of
    layer 0, head 0 for the first token of the text (at position 0 RoPE has not turned them
    yet). A failed forward is handed back, not raised: the other tabs still draw."""
    from attnscope.engine.models import positional as P

    text = s.text if kind == "rope" and str(s.text).strip() else None
    if text is not None:
        try:
            q, k, base, source = _rope_vectors(s.loaded, text)
        except Exception as exc:  # every error reaches the window, as Jobs would deliver it
            if not isinstance(exc, ValueError):
                traceback.print_exc(file=sys.stderr)
            return RopeDrawing(error=exc, text=text)
    else:
        q, k, base, source = _random_vectors(d_model, s.base)
    n = min(n_positions, 128)
    scores = P.rope_scores(q, k, n, base).numpy()  # (n, n)
    m, nn = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    spread = max(float(np.ptp(np.diagonal(scores, off))) for off in range(-n + 1, n))
    return RopeDrawing((m - nn).ravel(), scores.ravel(), spread, source, text=text)


def position_drawing(s: PositionSettings) -> PositionDrawing:
    """Everything that follows the position slider. One table up to pos + k serves the
    clocks, their trails and the offsets."""
    import torch
    from attnscope.engine.models import positional as P

    d, pos, k = s.d_model, s.pos, s.k
    i = min(s.depth, max(0, d // 2 - 1))        # a depth the width (perhaps just narrowed) still has
    pe = P.sinusoidal_encoding(pos + k + 1, d, s.base, dtype=torch.float64)  # (pos + k + 1, D)
    w = P.angular_frequencies(d, s.base).numpy()  # (ceil(D/2),)
    target, rotated, matrix_text = _offsets(pe, pos, k, i, s.base)
    return PositionDrawing(
        pos, k, *_clocks(pe.numpy(), pos, w), matrix_text, target, rotated,
        float(np.abs(rotated - target).max()) if len(target) else 0.0,
        P.offset_similarity(pos, max(1, s.n_positions - 1), d, s.base).numpy(),
        np.array([[0, np.cos(pos * w[i])], [0, np.sin(pos * w[i])]]),
        np.array([[0, 0.8 * np.cos((pos - k) * w[i])], [0, 0.8 * np.sin((pos - k) * w[i])]]))


def _clocks(rows: np.ndarray, pos: int, w: np.ndarray) -> tuple:
    """(depths, titles, points (C, 2), trail x (T, C), trail y (T, C)): each drawn pair's point
    (sin(pos w_i), cos(pos w_i)) and the TRAIL positions before it, from rows (>= pos + 1, D)."""
    depths = clock_depths(rows.shape[1])
    titles = [f"i = {j}: w = {w[j]:.3g} rad/pos<br>a turn every {2 * np.pi / w[j]:.3g}" for j in depths]
    sines = 2 * np.array(depths)
    trail = rows[max(0, pos - TRAIL):pos]  # (T, D)
    points = np.stack([rows[pos, sines], rows[pos, sines + 1]], axis=1)
    return depths, titles, points, trail[:, sines], trail[:, sines + 1]


def _offsets(pe, pos: int, k: int, i: int, base: float) -> tuple[np.ndarray, np.ndarray, str]:
    """PE(pos + k) and R(k) PE(pos) over every paired dimension, and R_i(k) written out."""
    from attnscope.engine.models import positional as P

    d = pe.shape[1]
    r = P.rotation_matrix(k, i, d, base).numpy()  # (2, 2)
    text = (f"R<sub>{i}</sub>({k}) = [[{r[0, 0]:+.4f}, {r[0, 1]:+.4f}], [{r[1, 0]:+.4f}, {r[1, 1]:+.4f}]]"
            f" &nbsp; (a turn by k w<sub>i</sub> = {k * P.angular_frequencies(d, base)[i].item():.4f} rad, "
            "the same at every pos)")
    rotated = P.shift_encoding(pe[pos], k, base).numpy()[: 2 * (d // 2)]
    return pe[pos + k].numpy()[: 2 * (d // 2)], rotated, text


# ---- the view -------------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class PositionalOptions(ViewOptions):
    """The lab's knobs (settings "positions/..."); the slider's position is where it is, not kept."""
    PREFIX = "positions"
    d_model: int = option(64, "d_model")
    n_positions: int = option(100, "n_positions")
    base: float = option(10000.0, "base")
    k: int = option(3, "k")                        # the offset of R(k)
    depth: int = option(0, "depth")                # the dimension pair i drawn
    use_model: bool = option(False, "use_model")   # the loaded model's encoding, not the formula's


class PositionalLab(PreparedView, QWidget):
    FOLLOWS_TRACE = False                     # drawn from its settings (and the model), not from a Run's trace

    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._init_prepared("The positions lab", lane=MODEL)   # its maths is torch
        self.draw_jobs.title = TITLE          # its dialogs keep the lab's own title
        self._tables_stale = True             # the next drawing redraws the tables too
        self._clock_titles: list[str] = []
        self.rope_source = ""
        self._rope_text: str | None = None     # the text the RoPE curve on screen was drawn from

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

        bind_options(self, PositionalOptions)   # before the boxes rebuild: the saved knobs start the lab
        for box in (self.d_model, self.n_positions, self.base, self.use_model):
            (box.toggled if box is self.use_model else box.valueChanged).connect(lambda *_: self.rebuild())
        for box in (self.k, self.depth):
            box.valueChanged.connect(lambda *_: self.redraw_position())
        self.position.valueChanged.connect(lambda *_: self.redraw_position())
        state.model_changed.connect(self._on_model)
        state.presentation_changed.connect(lambda _on: QTimer.singleShot(0, self, self._fit_clock_titles))  # restyled
        state.trace_changed.connect(self._on_trace)
        state.colormap_changed.connect(self._on_colormap)
        self._built = False  # the plots are filled when the panel is first shown: a fast start

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._built:
            self.rebuild()

    def _on_model(self, _loaded) -> None:
        if self._built:
            self.rebuild()

    def _on_trace(self, trace) -> None:
        """A Run with a new text: a RoPE GPT's curve is drawn from the text's query and key,
        so it is drawn again; every other drawing of the lab ignores the text."""
        if self._built and trace is not None and self._rope_text is not None \
                and self.state.prompt != self._rope_text:
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

    # ---- controls -> the worker's job ---------------------------------------------------------
    def rebuild(self) -> None:
        """Redraw everything: the sizes, the base or the model changed."""
        if not self._clock_plots:
            self._make_clock_plots()
        self._built = True
        if self.d_model.value() % 2:   # sines and cosines come in pairs: an odd width has no R(k)
            self.d_model.setValue(self.d_model.value() + 1)
            return                     # setValue rebuilt with the even width
        self._tables_stale = True      # until a drawing with the tables is on screen
        self.redraw()

    def redraw_position(self) -> None:
        """Redraw what follows the slider; the tables on screen stay."""
        self.position_label.setText(f"pos {self.position.value()}")
        self.redraw()

    def drawing_job(self) -> tuple:
        """The worker's job, always one (the formula needs no model): the position part, and the
        tables while the ones on screen are stale. A newer job supersedes one still waiting."""
        o = self.option_binding.options        # PositionalOptions: the lab's knobs, read once
        position = PositionSettings(self.position.value(), o.k, o.depth, o.d_model, o.n_positions, o.base)
        tables = None
        if self._tables_stale:
            tables = TableSettings(o.d_model, o.n_positions, o.base, o.use_model, self.state.loaded,
                                   self.state.prompt)
        return lab_drawing, position, tables

    def apply_drawing(self, drawing: LabDrawing) -> None:
        """The newest drawing only (Jobs drops superseded ones): the tables when it has them."""
        if drawing.tables is not None:
            self._tables_stale = False   # before the boxes move: a rebuild they start stales it again
            self._show_tables(drawing.tables)
        self._show_position(drawing.position)

    # ---- drawings -> plots (GUI thread: arrays handed to pyqtgraph) ------------------------------
    def _follow_sizes(self, t: TablesDrawing) -> None:
        """With the model's encoding shown, the size boxes show the model's sizes (and the
        formula's own knobs are off); without it, they are the formula's and editable."""
        for box in (self.d_model, self.base):
            box.setEnabled(not t.model_sizes)
        # The drawing already has these sizes: set them quietly, with no second rebuild.
        self.d_model.blockSignals(True)
        if t.model_sizes:
            self.d_model.setValue(t.d_model)
        self.d_model.blockSignals(False)
        self.n_positions.blockSignals(True)
        self.n_positions.setMaximum(t.max_positions)
        self.n_positions.blockSignals(False)
        self.depth.setMaximum(max(0, t.d_model // 2 - 1))
        self.position.setMaximum(t.n_positions - 1)

    def _show_tables(self, t: TablesDrawing) -> None:
        """The sizes, then the heatmap, the dot products, the learned tab and the RoPE curve."""
        self._follow_sizes(t)
        self.heat.setImage(t.heat, autoLevels=False, levels=t.levels)
        self.heat.colorbar.setLevels(t.levels)
        if t.title != self.heat_plot.getPlotItem().titleLabel.text:
            self.heat_plot.getPlotItem().setTitle(t.title)   # keeps its size: 9pt, or the theme's
        dot_levels = (float(t.dots.min()), float(t.dots.max()))
        self.dot_image.setImage(t.dots, autoLevels=False, levels=dot_levels)
        self.dot_image.colorbar.setLevels(dot_levels)
        self._show_learned(t)
        self._show_rope(t.rope)

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
            plot.setTitle(" ", size="8pt")   # its size; the text comes with the first drawing
            plot.setRange(xRange=(-1.3, 1.3), yRange=(-1.3, 1.3), padding=0)
            plot.plot(np.sin(circle), np.cos(circle), pen=pg.mkPen((150, 150, 150), width=1))
            trail = pg.ScatterPlotItem(size=5, pen=None, brush=pg.mkBrush(31, 119, 180, 60))
            point = pg.ScatterPlotItem(size=12, pen=pg.mkPen("k"), brush=pg.mkBrush("#d62728"))
            plot.addItem(trail)
            plot.addItem(point)
            self._clock_plots.append((plot, point, trail))

    def _build_clocks(self, depths: list[int], titles: list[str]) -> None:
        """Each circle's depth for the d_model and base (only when they change: a new title lays the plots
        out again). A title keeps its size: 8pt, or the theme's (restyle_plots) if made before it."""
        if titles == self._clock_titles:
            return
        self._clock_titles = titles
        self.clocks = []
        for n, (plot, point, trail) in enumerate(self._clock_plots):
            plot.setVisible(n < len(depths))
            if n < len(depths):
                plot.setTitle(titles[n])
                self.clocks.append((plot, point, trail, depths[n]))
        self._fit_clock_titles()

    def _fit_clock_titles(self) -> None:
        """Each clock's two-line title (one was cut at the dock's edge) in a row as tall (pyqtgraph: 30 px)."""
        for plot, tall in ((c[0], int(c[0].titleLabel.item.boundingRect().height()) + 2) for c in self.clocks):
            plot.titleLabel.setMaximumHeight(tall)
            plot.layout.setRowFixedHeight(0, tall)

    def _show_position(self, p: PositionDrawing) -> None:
        """The clocks and their trails, the offsets, the similarity curve and RoPE's two hands."""
        self._build_clocks(p.depths, p.clock_titles)
        for n, (plot, point, trail, depth) in enumerate(self.clocks):
            point.setData([p.points[n, 0]], [p.points[n, 1]])
            trail.setData(p.trail_x[:, n], p.trail_y[:, n])
        self.matrix_label.setText(p.matrix_text)
        self.offset_target.setData(np.arange(len(p.target)), p.target)
        self.offset_rotated.setData(np.arange(len(p.rotated)), p.rotated)
        self.offset_error = p.offset_error
        self.error_label.setText(f"max |R(k) PE({p.pos}) - PE({p.pos + p.k})| over all dimensions = "
                                 f"{self.offset_error:.2e}")
        self.sim_curve.setData(np.arange(len(p.similarity)), p.similarity)
        self.rope_q.setData(*p.query_hand)
        self.rope_k.setData(*p.key_hand)

    def _show_rope(self, rope: RopeDrawing) -> None:
        """The RoPE curve; a failed forward leaves the curve as it was and says why (line and dialog)."""
        self._rope_text = rope.text
        if rope.error is not None:
            self.rope_label.setText(f"RoPE vectors unavailable: {rope.error}")
            job_failures().failed.emit(self.draw_jobs.title, error_message(rope.error))
            return
        self.rope_scatter.setData(rope.offsets, rope.scores)
        self.rope_spread = rope.spread
        self.rope_source = rope.source
        self.rope_label.setText(f"largest spread of q_m . k_n at one m - n: {self.rope_spread:.1e} ({rope.source})")

    def _show_learned(self, t: TablesDrawing) -> None:
        """The learned table as a coloured path (first position to last) and its cosines, or why not."""
        self.learned = t.learned
        self.learned_label.setText(t.learned_text)
        if t.learned is None:
            self.pca_line.setData([], [])
            self.pca_points.setData([], [])
            self.cos_image.clear()
            return
        xy = t.learned  # (P, 2)
        colors = [pg.intColor(int(200 * j / max(1, len(xy) - 1)), hues=240, values=1, maxValue=220) for j in range(len(xy))]
        self.pca_line.setData(xy[:, 0], xy[:, 1])
        self.pca_points.setData(xy[:, 0], xy[:, 1], brush=colors)
        self.cos_image.setImage(t.cosines, autoLevels=False, levels=(-1, 1))

    def export_target(self) -> QWidget:
        return self.tabs.currentWidget()

    def closeEvent(self, event) -> None:
        self.timer.stop()
        super().closeEvent(event)      # PreparedView: the worker lets go
