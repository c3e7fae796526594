"""Head detail: one head (or a layer's mean / max over heads) large, tokens on both axes.

Arrow keys move between heads (left/right) and layers (up/down); the value under the
cursor is read out below the map. The head shown is the state's selection; the map and its
labels are prepared in a worker.

A long text (more than DETAIL_EXACT tokens a side) makes the map a viewport: the whole head
first, each screen pixel the max of the tokens it covers; zoom (wheel) or pan (drag) and the
visible block is computed again from the recording, down to one cell a pixel
(engine.traces.viewport). The cursor always reads the exact weight of one cell. A minimap in
the corner where the axes meet shows the whole head and frames the part shown; a click or a
drag there moves the view (gui.widgets.minimap).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtGui import QFont, QFontMetrics, QPainterPath
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QDoubleSpinBox, QGraphicsPathItem, QLabel,
                               QLineEdit, QMenu, QSpinBox, QVBoxLayout, QWidget)

from attnscope.engine.interventions import HeadRef
from attnscope.engine.kinds import CROSS
from attnscope.engine.traces import reading
from attnscope.gui.display import special_mask
from attnscope.gui.colormaps import colormap, label_colorbar
from attnscope.gui.widgets.flow import FlowLayout
from attnscope.gui.drawing.ablation_marks import MARK
from attnscope.gui.drawing.drawings import HeadDetailDrawing
from attnscope.gui.drawing.intervention_clicks import knockout_from_click
from attnscope.gui.drawing.knockout_marks import knockout_rects
from attnscope.gui.drawing.empty import hide_empty, show_empty
from attnscope.gui.drawing.kinds import (display_values, is_signed, levels_for, offer_log_colour, paint_kind,
                                        pooling_for, say_threshold, value_note)
from attnscope.gui.widgets.minimap import MARGIN, PIXELS as MINIMAP_PIXELS, Minimap, side_for
from attnscope.gui.drawing.prepared import PreparedView, prepares
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.widgets.token_axis import VerticalTokenAxis, fit_row_axis
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.theme import accent, is_dark, normal_point_size, tint
from attnscope.gui.widgets.token_labels import view_ticks, zoomable
from attnscope.gui.widgets.token_matrix import dress_token_plot
from attnscope.gui.worker import Jobs, call_on_lane, drawing_lane
from attnscope.gui.widgets.peak_image import PeakImage, show_whole
from attnscope.gui.views.block_readout import describe_block, painted_block
from attnscope.gui.views.token_find import find_tokens
from attnscope.gui.widgets.kind_box import fill_kind_box

AGGREGATES = ("one head", "mean of heads", "max of heads")
AXES = ("left", "top")
DETAIL_EXACT = 1024       # up to this many tokens a side, the whole map is computed cell for cell
VIEW_PIXELS = 1024        # a long head's first view: at most this many pixels a side


def aggregate(layer_weights: np.ndarray, head: int, how: str, kind: str | None = None) -> np.ndarray:
    """(H, Tq, Tk) of one layer -> (Tq, Tk) for one head or the layer's mean / max over heads
    (a signed kind's max: the value of largest magnitude, engine.traces.viewport.combine_heads)."""
    if how == "one head":
        return layer_weights[head]
    import torch
    from attnscope.engine.traces import combine_heads
    return combine_heads(torch.from_numpy(np.ascontiguousarray(layer_weights)), how, kind).numpy()


def is_long(trace, kind: str) -> bool:
    _, _, tq, tk = trace.shape(kind)
    return max(tq, tk) > DETAIL_EXACT


def short(token: str, limit: int = 12) -> str:
    return token if len(token) <= limit else token[: limit - 1] + "…"


def positioned(tokens: list[str]) -> list[str]:
    """A long text's axis labels: its position before each piece ("4096 the"), since a thinned
    axis shows one label in many and a piece alone does not say where it is."""
    return [f"{i} {short(t)}" for i, t in enumerate(tokens)]


@prepares
def detail_drawing(trace, kind: str, layer: int, head: int, how: str, hide: bool, threshold: float,
                   normalise: bool, log_scale: bool = False) -> HeadDetailDrawing:
    """What Head detail draws, in a worker: the true weights of the cells shown, the display
    map, which rows/columns are shown, and the thinned axis labels. A long trace: the whole
    head at VIEW_PIXELS (``long``), no matrix held, and that picture pooled again (max) for
    the minimap (``overview``)."""
    q, k = reading.query_tokens(trace, kind), reading.key_tokens(trace, kind)
    if is_long(trace, kind):
        import torch
        from attnscope.engine.traces import pool_2d
        from attnscope.engine.traces import viewport_weights
        tq, tk = len(q), len(k)
        shown = display_values(kind, viewport_weights(trace, kind, layer, head, how, (0, tq), (0, tk),
                                                      (VIEW_PIXELS, VIEW_PIXELS)), threshold, normalise, log_scale)
        overview = pool_2d(torch.from_numpy(shown), MINIMAP_PIXELS, MINIMAP_PIXELS, pooling_for(kind)).numpy()
        return HeadDetailDrawing(trace=trace, kind=kind, layer=layer, head=head, how=how, matrix=None, shown=shown,
                                 long=(tq, tk), overview=overview, q_index=np.arange(tq), k_index=np.arange(tk),
                                 q_labels=positioned(q), k_labels=positioned(k), threshold=threshold,
                                 normalise=normalise, log_scale=log_scale, levels=levels_for(kind, shown))
    if how == "one head":
        raw = reading.head(trace, kind, layer, head)                   # (Tq, Tk)
    else:
        raw = aggregate(reading.layer(trace, kind, layer), head, how, kind)
    q_index = np.flatnonzero(special_mask(q)) if hide else np.arange(len(q))
    k_index = np.flatnonzero(special_mask(k)) if hide else np.arange(len(k))
    matrix = raw[np.ix_(q_index, k_index)]  # the true weights of the cells shown
    shown = display_values(kind, matrix, threshold, normalise, log_scale)   # a signed kind keeps its sign
    return HeadDetailDrawing(trace=trace, kind=kind, layer=layer, head=head, how=how, matrix=matrix, shown=shown,
                             q_index=q_index, k_index=k_index, q_labels=[short(q[i]) for i in q_index],
                             k_labels=[short(k[i]) for i in k_index], long=None, threshold=threshold,
                             normalise=normalise, log_scale=log_scale, levels=levels_for(kind, shown))


def zoomed_drawing(trace, kind: str, layer: int, head: int, how: str, rows, cols, pixels, threshold: float,
                   normalise: bool, log_scale: bool = False):
    """The visible block of a long head, exact at the screen's resolution, in a worker."""
    from attnscope.engine.traces import viewport_weights

    return rows, cols, display_values(kind, viewport_weights(trace, kind, layer, head, how, rows, cols, pixels),
                                      threshold, normalise, log_scale)


@dataclass(frozen=True)
class HeadDetailOptions(ViewOptions):
    """Head detail's display options (settings "head_detail/..."): what is drawn, never the numbers read."""
    PREFIX = "head_detail"
    how: str = option(AGGREGATES[0], "agg_box")          # one head, or a layer's mean / max of heads
    threshold: float = option(0.0, "threshold")          # cells below it drawn as 0
    normalise: bool = option(False, "normalise")         # the map stretched so its max is 1
    hide_special: bool = option(False, "hide_special")   # [CLS], [SEP], ... rows and columns left out
    log_colour: bool = option(False, "log_box")          # colour by log10 of the weight


class HeadDetail(PreparedView, QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._init_prepared("Head detail")
        self.matrix: np.ndarray | None = None
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

        self.kind_box = QComboBox()
        self.kind_box.currentTextChanged.connect(lambda k: k and self.state.select(kind=k))
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.head_box.setPrefix("head ")
        self.layer_box.valueChanged.connect(lambda v: self.state.select(layer=v))
        self.head_box.valueChanged.connect(lambda v: self.state.select(head=v))
        self.agg_box = QComboBox()
        self.agg_box.addItems(AGGREGATES)
        self.agg_box.currentTextChanged.connect(lambda _: self.redraw())
        # Display options: they change what is drawn, never the numbers read under the cursor.
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.0, 1.0)
        self.threshold.setSingleStep(0.02)
        self.threshold.setPrefix("hide below ")
        self.threshold.setToolTip("Cells with a smaller weight are drawn as 0")
        self.normalise = QCheckBox("scale to max")
        self.normalise.setToolTip("Stretch this map so its largest weight is 1")
        self.hide_special = QCheckBox("hide specials")
        self.hide_special.setToolTip("Leave out [CLS], [SEP], [BOS], [EOS] rows and columns")
        self.threshold.valueChanged.connect(lambda _: self.redraw())
        self.normalise.toggled.connect(lambda _: self.redraw())
        self.hide_special.toggled.connect(lambda _: self.redraw())
        self.log_box = QCheckBox("log colour")
        self.log_box.setToolTip("Colour by log10 of the weight, 1e-4 to 1 (long texts: weights near 1/T); "
                                "the cursor still reads the true weight")
        self.log_box.toggled.connect(lambda _: self.redraw())
        self.find_box = QLineEdit()
        self.find_box.setPlaceholderText("go to token…")
        self.find_box.setToolTip("A position (e.g. 4096) or a token (e.g. dog, again for the next one): the map "
                                 "zooms to it, query row and key column")
        self.find_box.setMaximumWidth(140)
        self.find_box.returnPressed.connect(lambda: self.go_to(self.find_box.text()))
        controls = FlowLayout().addWidgets(self.kind_box, self.layer_box, self.head_box, self.agg_box,
                                           self.threshold, self.normalise, self.hide_special, self.log_box,
                                           self.find_box)

        self.key_axis = VerticalTokenAxis("top")
        self.plot = pg.PlotWidget(axisItems={"top": self.key_axis})
        self.item = self.plot.getPlotItem()
        self.image, self.colorbar = dress_token_plot(self.item, state.colormap)
        # A long head's zoomed block, drawn over the whole-head view at full resolution.
        self.zoom_image = PeakImage()
        self.zoom_image.setZValue(1)
        self.zoom_image.setColorMap(colormap(state.colormap))
        self.item.addItem(self.zoom_image)
        self.knockout_item = self._frames(MARK, Qt.PenStyle.DashLine, 5)   # knocked-out cells, columns, rows
        self.found_item = self._frames(accent("info").name(), Qt.PenStyle.SolidLine, 6)   # where Go to jumped
        self.intervention_note = QLabel()     # the head shown is switched off; what the frames are
        self.intervention_note.setWordWrap(True)
        tint(self.intervention_note, "warning")
        self.intervention_note.hide()
        self.zoom_jobs = Jobs(self, "Head detail could not zoom")   # beside the drawing (a recording's: on the model lane)
        self.zoom_block = None
        self.zoomed_on = None   # (trace, kind, tokens) of the long head whose zoom is on screen
        self.zoom_timer = QTimer(self, singleShot=True, interval=120)
        self.zoom_timer.timeout.connect(self._zoom)
        self.item.setLabel("left", "query")
        self.item.setLabel("top", "key")
        self.readout = ElidedLabel(" ")
        self.plot.scene().sigMouseMoved.connect(self._on_hover)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        self.item.vb.sigResized.connect(self._label_axes)
        zoomable(self.item, self._on_range)         # wheel zooms, drag pans, double-click resets
        # A long head's minimap, in the empty corner where the query and key axes meet: the
        # axes keep to the map's edges when the corner grows for it.
        self.minimap = Minimap(is_dark())
        self.minimap.hide()
        layout = self.item.layout
        layout.addItem(self.minimap, 1, 0)
        # Top left of its cell: the first key's and the first query's labels, centred on the map's
        # edges, reach half a line into the corner (the minimap covered "0 <s>" on a long text).
        layout.setAlignment(self.minimap, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        layout.setAlignment(self.item.getAxis("left"), Qt.AlignmentFlag.AlignRight)
        layout.setAlignment(self.key_axis, Qt.AlignmentFlag.AlignBottom)
        self.minimap.moved.connect(self._centre_on)
        self.item.vb.sigRangeChanged.connect(self._frame_view)
        self.minimap.sigResized.connect(self._frame_view)

        box = QVBoxLayout(self)
        box.setContentsMargins(2, 2, 2, 2)
        box.addLayout(controls)
        box.addWidget(self.intervention_note)
        box.addWidget(self.plot, 1)
        box.addWidget(self.readout)

        state.trace_changed.connect(self.set_trace)
        state.selection_changed.connect(self._on_selection)
        state.colormap_changed.connect(self._on_colormap)
        state.theme_changed.connect(self.minimap.set_dark)
        state.interventions_changed.connect(lambda _spec: self._mark_interventions())
        state.presentation_changed.connect(lambda _on: self.redraw())   # the rows' labels need other room
        bind_options(self, HeadDetailOptions)
        self.set_trace(state.trace)

    def _frames(self, colour: str, style, z: float) -> QGraphicsPathItem:
        item = QGraphicsPathItem()
        pen = pg.mkPen(colour, width=2, style=style)
        pen.setCosmetic(True)
        item.setPen(pen)
        item.setZValue(z)
        self.item.addItem(item)
        return item

    def _mark_interventions(self) -> None:
        """Frame what the interventions knock out in the layer shown, and say when the head
        shown is switched off (its weights are drawn as computed; its output is removed)."""
        d, spec = self.drawing, self.state.interventions
        path, notes = QPainterPath(), []
        if d is not None:
            for x, y, w, h in knockout_rects(spec, d.trace, d.kind, d.layer, d.q_index, d.k_index):
                path.addRect(x, y, w, h)
            mode = spec.mode(HeadRef(d.kind, d.layer, d.head)) if d.how == "one head" else None
            if mode:
                notes.append(f"Head switched off ({mode} ablation): its weights drawn, its output removed.")
            if not path.isEmpty():
                notes.append("Dashed: knocked out in this layer (reads 0).")
        self.knockout_item.setPath(path)
        self.intervention_note.setText(" ".join(notes))
        self.intervention_note.setVisible(bool(notes))

    # The selection lives in the state; these read it (tests and keys use them).
    @property
    def layer(self) -> int:
        return self.state.layer

    @property
    def head(self) -> int:
        return self.state.head

    def _on_colormap(self, name: str) -> None:
        """The user's map for weights; a signed kind keeps its diverging one (gui.drawing.kinds)."""
        d = self.drawing
        paint_kind(d and d.kind, name, d.levels if d else (0.0, 1.0), self.colorbar, (self.image, self.zoom_image,
                                                                                      self.minimap.image))

    def _on_range(self) -> None:
        self._label_axes()
        if self.drawing is not None and self.drawing.long:
            self.zoom_timer.start()

    def _zoom(self) -> None:
        """Compute the visible block of a long head at the screen's resolution (worker)."""
        d = self.drawing
        if d is None or not d.long:
            return
        tq, tk = d.long
        (x0, x1), (y0, y1) = self.item.vb.viewRange()
        cols = (max(0, int(np.floor(x0))), min(tk, int(np.ceil(x1))))
        rows = (max(0, int(np.floor(y0))), min(tq, int(np.ceil(y1))))
        if cols[1] <= cols[0] or rows[1] <= rows[0] or (rows == (0, tq) and cols == (0, tk)):
            self.zoom_image.clear()
            return
        pixels = (max(1, int(self.item.vb.height())), max(1, int(self.item.vb.width())))
        self.zoom_jobs.start(call_on_lane, drawing_lane(d.trace), zoomed_drawing, d.trace, d.kind,
                             d.layer, d.head, d.how, rows, cols, pixels, d.threshold, d.normalise,
                             d.log_scale,
                             on_returned=lambda result: self._zoomed(result, d))

    def _zoomed(self, result, drawing=None) -> None:
        if drawing is not None and drawing is not self.drawing:
            return                                     # a block of the head shown before
        (r0, r1), (c0, c1), image = result
        self.zoom_block = (r0, r1), (c0, c1)          # the tokens the zoomed image covers
        self.zoom_image.setImage(image, autoLevels=False, levels=self.drawing.levels)   # the whole head's scale
        self.zoom_image.setRect(QRectF(c0, r0, c1 - c0, r1 - r0))

    def set_trace(self, trace) -> None:
        self.readout.setText(" ")      # the old text's tokens are gone
        self._on_selection()

    def _on_selection(self, *_selection) -> None:
        """Show the state's (kind, layer, head): boxes follow without echoing back. The readout
        read the head shown before: it goes (after the Why panel opened L2.H1 it still gave
        L3.H3's weight)."""
        d = self.drawing
        if d is not None and (d.kind, d.layer, d.head) != (self.kind, self.layer, self.head):
            self.readout.setText(" ")
        trace = self.trace
        kinds = trace.kinds if trace else []
        fill_kind_box(self.kind_box, kinds, self.kind)
        self.kind_box.setVisible(len(kinds) > 1)
        if trace is not None and self.kind is not None:
            n_layers, n_heads = trace.shape(self.kind)[:2]
            for box, top, value in ((self.layer_box, n_layers - 1, self.layer), (self.head_box, n_heads - 1, self.head)):
                box.blockSignals(True)
                box.setRange(0, top)
                box.setValue(value)
                box.blockSignals(False)
        self.redraw()

    def show_head(self, kind: str | None, layer: int, head: int) -> None:
        self.state.select(kind, layer, head)

    def drawing_jobs(self) -> list[Jobs]:
        return [self.draw_jobs, self.zoom_jobs]          # a zoom computes its block from the trace too

    def drawing_job(self):
        if self.trace is None or self.kind is None:
            return None
        options = self.option_binding.options      # HeadDetailOptions: what the widgets show, read once
        return (detail_drawing, self.trace, self.kind, self.layer, self.head, options.how, options.hide_special,
                options.threshold, options.normalise, options.log_colour)

    def clear_drawing(self) -> None:
        self.image.clear()
        self.zoom_image.clear()
        self.zoomed_on = None
        self.matrix = None
        self.readout.setText(" ")
        self._label_axes()
        self.colorbar.setVisible(False)
        self._show_minimap(None)
        self.found_item.setPath(QPainterPath())
        self._mark_interventions()
        show_empty(self.item, "Run a text, then click a head in the overview: it opens here, large.", AXES)

    def apply_drawing(self, d: HeadDetailDrawing) -> None:
        hide_empty(self.item, AXES)
        self.colorbar.setVisible(True)
        label_colorbar(self.colorbar, d.log_scale and not is_signed(d.kind))   # a signed kind: no log colour
        offer_log_colour(self.log_box, d.kind)
        say_threshold(self.threshold, d.kind)
        self.matrix, self.q_index, self.k_index = d.matrix, d.q_index, d.k_index
        self.zoom_image.clear()
        self.zoom_jobs.cancel()                        # a block of the head before is of no use now
        self.image.setImage(d.shown, autoLevels=False, levels=d.levels)
        self._on_colormap(self.state.colormap)        # a signed kind: diverging, (-s, s) on the bar
        self.head_box.setEnabled(d.how == "one head")
        tq, tk = d.long or self.matrix.shape
        self.image.setRect(QRectF(0, 0, tk, tq))        # token coordinates, however many pixels
        if d.long:
            peak = "the value of largest magnitude" if is_signed(d.kind) else "the max"
            self.readout.setText(f"{tq:,} x {tk:,} tokens: each pixel {peak} of the cells it covers; wheel zooms "
                                 "(the visible part is computed again, down to one cell a pixel), drag pans.")
        # Another head (or layer) of the same long text keeps the place zoomed into, so heads
        # compare at one position (the sink, a stretch of the diagonal); its block is computed
        # for the new head. A new text, a kind or a short head starts from the whole map.
        where = (d.trace, d.kind, d.long) if d.long else None
        if where is not None and where == self.zoomed_on:
            self.zoom_timer.start()
        else:                     # the first row and column (q0 -> k0, the sink) clear of the axes' lines
            show_whole(self.item.vb, tk, tq)
        self.zoomed_on = where
        fit_row_axis(self.item.getAxis("left"), d.q_labels)   # its width now, not while painting
        self._room_below_map()
        self._label_axes()
        self._show_minimap(d)                # in the corner the axes leave, now that their sizes are set
        self.found_item.setPath(QPainterPath())
        self._mark_interventions()

    def _room_below_map(self) -> None:
        """Half a line under the map for the colour bar's "0", centred on the map's bottom edge:
        with no bottom axis the map reached the plot's edge and the 0 was cut in half. Sized for
        the larger of the bar's font and the application's (presentation mode sets both)."""
        fonts = (self.colorbar.axis.style.get("tickFont") or self.colorbar.axis.font(), QApplication.font())
        half = max(QFontMetrics(font).height() for font in fonts) // 2 + 2
        self.item.layout.setRowMinimumHeight(3, half)           # the (hidden) bottom axis' row

    def _show_minimap(self, d: dict | None) -> None:
        """The minimap of a long drawing, or none (a short head, nothing drawn)."""
        if d is None or not d.long:
            self.minimap.clear()
        else:
            self.minimap.show_head(d.overview, d.long, levels=d.levels)   # coloured as the map (_on_colormap)
        self._fit_minimap()

    def _fit_minimap(self) -> None:
        """Show the minimap of a long head at the side the plot's size allows (none in a plot
        too small for it); the corner makes room for it."""
        left, top = self.item.getAxis("left"), self.key_axis      # their sizes as set, laid out or not yet
        overhang = (QFontMetrics(top.style.get("tickFont") or top.font()).height() + 1) // 2
        corner = min(left.fixedWidth or left.width(), top.fixedHeight or top.height()) - 2 * MARGIN - overhang
        side = side_for(self.plot.width(), self.plot.height(), int(corner)) if self.minimap.tokens[0] else 0
        if side:
            self.minimap.setMinimumSize(side, side)
            self.minimap.setMaximumSize(side, side)
        self.minimap.setVisible(bool(side))
        self.item.layout.setColumnMinimumWidth(0, side + 2 * MARGIN + overhang if side else 0)
        self.item.layout.setRowMinimumHeight(1, side + 2 * MARGIN + overhang if side else 0)
        self._frame_view()

    def _frame_view(self, *_args) -> None:
        if self.minimap.isVisible():
            self.minimap.show_range(*self.item.vb.viewRange())

    def _centre_on(self, x: float, y: float) -> None:
        """Move the view's centre to key ``x``, query ``y`` at the same zoom (the minimap's
        click or drag); the visible block is then computed again as for any pan."""
        (x0, x1), (y0, y1) = self.item.vb.viewRange()
        w, h = x1 - x0, y1 - y0
        self.item.vb.setRange(xRange=(x - w / 2, x + w / 2), yRange=(y - h / 2, y + h / 2), padding=0)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.minimap.tokens[0]:
            self._fit_minimap()

    def _label_axes(self, *_args) -> None:
        """As many token labels as fit the map's size now, on both axes. The rows' labels shrink
        towards the normal font size before any is left out (presentation mode at 1280x800
        labelled every other row of a 12-token sentence), never below it: sized in points from
        the normal size (theme.normal_point_size), they shrank to ~7 px, smaller than outside
        presentation mode, when a line's height was turned into a pixel size by a guessed ratio."""
        d = self.drawing
        q, k = (d.q_labels, d.k_labels) if d else ([], [])
        vb, line = self.item.vb, self.fontMetrics().height() + 2
        left = self.item.getAxis("left")
        font = QFont(QApplication.font())
        (_x0, _x1), (y0, y1) = vb.viewRange()
        per_row = vb.height() / max(1.0, min(len(q), y1) - max(0.0, y0))
        if q and per_row < line and self.state.presentation:   # smaller, down to the normal size
            fits = font.pointSizeF() * (per_row - 2) / QFontMetrics(font).height()   # a line's height ~ its size
            font.setPointSizeF(min(font.pointSizeF(), max(normal_point_size(), fits)))
        if left.style.get("tickFont") != font:
            left.setStyle(tickFont=font)
            if q:
                fit_row_axis(left, q)        # as wide as its labels in the font they now have
        row_px = QFontMetrics(font).height()      # a label's height, and its 2 px gap only where rows have it
        gap = 2 if per_row >= row_px + 2 else 0   # (F5 at 1280x800: 14 px labels in 14.6 px rows, 4 of 9 dropped)
        self.item.getAxis("left").setTicks([view_ticks(q, vb, False, row_px + gap)])
        self.key_axis.set_ticks(k, view_ticks(k, vb, True, line))

    def _cell_at(self, scene_pos) -> tuple[int, int] | None:
        """(query, key) token positions under a scene point, or None off the map."""
        d = self.drawing
        if d is None or (self.matrix is None and not d.long):
            return None
        if not self.item.vb.sceneBoundingRect().contains(scene_pos):
            return None                  # on an axis or the minimap: no cell, even zoomed in
        p = self.item.vb.mapSceneToView(scene_pos)
        qi, ki = int(np.floor(p.y())), int(np.floor(p.x()))
        tq, tk = d.long or self.matrix.shape
        if 0 <= qi < tq and 0 <= ki < tk:
            return int(self.q_index[qi]), int(self.k_index[ki])
        return None

    def _on_click(self, event) -> None:
        """Shift-click a cell: knock out that edge in this layer; Ctrl-click: the key's whole
        column; Ctrl+Shift-click: the query's whole row (engine.interventions, through the state).
        Alt+click, or the cell's context menu (right-click): why the query attends to the key."""
        cell = self._cell_at(event.scenePos())
        if cell is None or self.drawing is None:
            return
        if event.button() == Qt.MouseButton.RightButton:
            self.cell_menu(*cell).popup(event.screenPos().toPoint())
        elif event.modifiers() == Qt.KeyboardModifier.AltModifier:
            self.ask_why(*cell)
        else:
            knockout_from_click(self.state, self.drawing.kind, self.drawing.layer, *cell, event.modifiers())

    def cell_menu(self, query: int, key: int) -> QMenu:
        """A cell's context menu: why does query ``query`` attend to key ``key`` (one head only)."""
        menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        action = menu.addAction(f"Why does query {query} attend to key {key}?", lambda: self.ask_why(query, key))
        one = self.drawing is not None and self.drawing.how == "one head"
        action.setEnabled(one)
        action.setToolTip("" if one else "Why splits one head's score: choose \"one head\"")
        return menu

    def ask_why(self, query: int, key: int) -> bool:
        """The Why panel splits this head's score of (query, key); False for a layer's mean or max."""
        d = self.drawing
        if d is None or d.how != "one head":
            self.readout.setText("Why splits one head's score: choose \"one head\" first.")
            return False
        self.state.ask_why(d.kind, d.layer, d.head, query, key)
        return True

    def _on_hover(self, scene_pos) -> None:
        d = self.drawing
        hit = self._cell_at(scene_pos)
        if hit is None and self.minimap.isVisible() and self.minimap.sceneBoundingRect().contains(scene_pos):
            p = self.minimap.mapSceneToView(scene_pos)
            tq, tk = d.long
            self.readout.setText(f"Minimap of the whole head, near query {int(np.clip(p.y(), 0, tq - 1)):,}, key "
                                 f"{int(np.clip(p.x(), 0, tk - 1)):,}: click or drag to move the view there.")
        elif hit is not None:
            q, k = reading.query_tokens(d.trace, d.kind), reading.key_tokens(d.trace, d.kind)
            qo, ko = hit
            block = painted_block(d, self.image, self.zoom_image, self.zoom_block, qo, ko) if d.long else None
            if block is not None:   # the pixel stands for a block of tokens: which, and its maximum
                self.readout.setText(describe_block(d, *block))
                return
            if d.long:        # one exact cell, computed from the recording
                from attnscope.engine.traces import cell
                value = cell(d.trace, d.kind, d.layer, d.head, d.how, qo, ko)
            else:                # the matrix holds the cells shown (specials may be hidden)
                value = self.matrix[int(np.searchsorted(self.q_index, qo)), int(np.searchsorted(self.k_index, ko))]
            self.readout.setText(f"{value_note(d.kind)} {value:.4f} | query {qo} {q[qo]!r} -> key {ko} {k[ko]!r}")

    def go_to(self, what: str, span: int = 48) -> int | None:
        """Zoom to a token and frame its row (and its column, keys being the same tokens):
        ``what`` is a position or text. Text matches a whole token first, else any run of
        tokens whose joined text holds it ("weather" split into pieces, "dog" in "dogs"),
        the next match after the last one found. Returns the first position, or None."""
        d = self.drawing
        if d is None or not what.strip():
            return None
        queries = reading.query_tokens(d.trace, d.kind)
        what = what.strip()
        after = getattr(self, "_found", -1)
        if what.isdigit():
            first = last = int(what)
        else:
            first, last = find_tokens(queries, what, after)
        if first is None or not 0 <= first < len(queries):
            self.readout.setText(f"No token {what!r} here ({len(queries):,} tokens).")
            return None
        self._found = first
        rows, cols = self.q_index, self.k_index
        shown = (lambda pos: int(np.searchsorted(rows, pos))) if not d.long else (lambda pos: pos)
        q0, q1 = shown(first), shown(last) + 1
        ki = min(q0, len(cols) - 1)
        self.item.setRange(xRange=(max(0, ki - span), ki + span), yRange=(max(0, q0 - span), q0 + span), padding=0)
        path = QPainterPath()
        tq, tk = d.long or self.matrix.shape
        path.addRect(0, q0, tk, q1 - q0)                        # the query row(s)
        if d.kind != CROSS:                                  # keys are the same tokens: their column too
            path.addRect(min(q0, tk - 1), 0, max(1, min(q1, tk) - min(q0, tk - 1)), tq)
        self.found_item.setPath(path)
        text = "".join(queries[first:last + 1])
        self.readout.setText(f"token {first:,}{f'-{last:,}' if last != first else ''} {text!r}: zoomed to its row "
                             "(framed, with the column at the same position); double-click shows the whole map again.")
        return first

    def keyPressEvent(self, event) -> None:
        moves = {Qt.Key.Key_Left: (0, -1), Qt.Key.Key_Right: (0, 1), Qt.Key.Key_Up: (-1, 0), Qt.Key.Key_Down: (1, 0)}
        move = moves.get(event.key())
        if move and self.trace is not None:
            self.state.select(layer=self.layer + move[0], head=self.head + move[1])
        else:
            super().keyPressEvent(event)

    def closeEvent(self, event) -> None:
        self.zoom_timer.stop()
        self.zoom_jobs.shutdown()
        super().closeEvent(event)

    def export_target(self) -> QWidget:
        return self.plot
