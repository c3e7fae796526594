"""Heads overview: every layer x head of one attention kind, drawn as one mosaic image.

Rows are layers, columns heads; inside a tile, rows are query tokens and columns key tokens.
Hover says which layer, head, query and key a pixel is and its weight; a click opens the head.
The kind shown is the state's selected kind; the colour codes are built in a worker.

A long text is pooled (gui.drawing.overview prepares the drawing), and says so: each tile is at
most ``tile_pixels`` a side (fewer the more heads there are), each pixel the max over its block of
tokens, so a sink column, the diagonal and any strong link stay visible. Hover then names the block and reads its
strongest cell exactly (never a pooled number); a click opens the head in Head detail,
which zooms to full resolution.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QVBoxLayout,
                               QWidget)

from attnscope.engine.traces import reading
from attnscope.gui.drawing.ablation_marks import AblationMarks
from attnscope.gui.drawing.drawings import OverviewDrawing
from attnscope.gui.drawing.overview import overview_drawing
from attnscope.gui.drawing.intervention_clicks import toggle_from_click
from attnscope.gui.drawing.kinds import colormap_name, is_signed, offer_log_colour, strongest, say_threshold, value_word
from attnscope.gui.colormaps import colormap, label_colorbar, lookup_table
from attnscope.gui.widgets.mosaic import SINK_PIXELS, MosaicLayout, gap_lookup_table
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.drawing.prepared import STALE_NOTE, PreparedView
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.widgets.peak_image import PeakImage
from attnscope.gui.widgets.kind_box import fill_kind_box

HINT = "Hover a cell to read it; click to open that head; Shift/Ctrl-click switches it off (ablation)."
MAX_GRID_SHARE = 0.35         # the overview asks for at most this share of the window's height


@dataclass(frozen=True)
class OverviewOptions(ViewOptions):
    """The overview's display options (settings "overview/...")."""
    PREFIX = "overview"
    threshold: float = option(0.0, "threshold")      # cells below it drawn as 0
    log_colour: bool = option(False, "log_box")      # colour by log10 of the weight


class HeadGrid(PreparedView, QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._init_prepared("The heads overview")
        self.layout_: MosaicLayout | None = None
        self.drawn_trace = None                  # the trace whose drawing is on screen
        self.last_tooltip = ""

        self.kind_box = QComboBox()
        self.kind_box.setToolTip("Which attention to show: encoder self, decoder masked self, or cross")
        self.kind_box.currentTextChanged.connect(self._on_kind)
        self.readout = ElidedLabel(HINT)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.0, 1.0)
        self.threshold.setSingleStep(0.02)
        self.threshold.setPrefix("hide below ")
        self.threshold.setToolTip("Draw weaker cells as 0 (hover still reads the true weight)")
        self.threshold.valueChanged.connect(lambda _: self.redraw())
        top = QHBoxLayout()
        self.kind_label = QLabel("Attention:")
        top.addWidget(self.kind_label)
        top.addWidget(self.kind_box)
        top.addStretch(1)
        top.addWidget(self.threshold)
        self.log_box = QCheckBox("log colour")
        self.log_box.setToolTip("Colour by log10 of the weight, 1e-4 to 1: at thousands of tokens every weight is "
                                "about 1/T and a linear scale shows only the sink; hover still reads the true weight")
        self.log_box.toggled.connect(lambda _: self.redraw())
        top.addWidget(self.log_box)

        self.plot = pg.GraphicsLayoutWidget()
        self.view = self.plot.addViewBox(lockAspect=False, invertY=True, enableMouse=False)
        self.view.setMenuEnabled(False)
        self.image = PeakImage()
        self.image.setLookupTable(gap_lookup_table(lookup_table(state.colormap)))
        self.mosaic: np.ndarray | None = None    # uint8 display codes drawn (see mosaic.display_codes)
        self.view.addItem(self.image)
        # The mosaic's colours come from a lookup table with a transparent gap code, so the bar
        # beside it is a legend of the same colormap over the weights 0..1, not linked to it.
        self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(state.colormap), interactive=False, width=12)
        self.plot.addItem(self.colorbar, row=0, col=1)
        self.labels: list[pg.TextItem] = []
        self.plot.scene().sigMouseMoved.connect(self._on_hover)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        self.marks = AblationMarks(self)           # ablated heads (Shift/Ctrl-click a tile) framed and crossed
        self.view.sigResized.connect(self._fit_view)
        state.presentation_changed.connect(lambda _on: self._fit_view())

        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(top)
        box.addWidget(self.readout)      # a line of its own: the whole width for the hovered cell
        box.addWidget(self.plot, 1)

        state.trace_changed.connect(self.set_trace)
        state.selection_changed.connect(self._on_selection)
        state.colormap_changed.connect(self._on_colormap)
        bind_options(self, OverviewOptions)
        self.set_trace(state.trace)

    def _on_colormap(self, name: str) -> None:
        """The user's map for weights; a signed kind keeps its diverging one (gui.drawing.kinds)."""
        name = colormap_name(self.drawing.kind if self.drawing is not None else None, name)
        self.image.setLookupTable(gap_lookup_table(lookup_table(name)))
        self.colorbar.setColorMap(colormap(name))

    # ---- data -----------------------------------------------------------------------
    def set_trace(self, trace) -> None:
        kinds = trace.kinds if trace else []
        fill_kind_box(self.kind_box, kinds, self.state.kind)
        self.kind_box.setVisible(len(kinds) > 1)
        self.kind_label.setVisible(len(kinds) > 1)
        self._set_readout(HINT)     # the old text's tokens are gone
        # Until the new trace's tiles come (a long text pools for seconds), the old ones are
        # greyed, as every view's are (gui.drawing.prepared: STALE_NOTE over them).
        self.redraw()

    def _on_selection(self, kind: str, _layer: int, _head: int) -> None:
        if self.drawing is None or self.drawing.kind != kind:
            fill_kind_box(self.kind_box, self.trace.kinds if self.trace else [], kind)
            self.redraw()

    def _on_kind(self, kind: str) -> None:
        if kind:
            self.state.select(kind=kind)

    def _set_readout(self, text: str) -> None:
        self.last_tooltip = "" if text == HINT else text
        self.readout.setText(text)
        self.plot.setToolTip(self.last_tooltip)

    def drawing_job(self):
        if self.trace is None or self.kind is None:
            return None
        drawn = self.drawing
        # The same trace and kind again (log colour, a threshold): its pooled tiles are reused, not pooled anew.
        pooled = drawn.thumbs if drawn is not None and drawn.trace is self.trace and drawn.kind == self.kind else None
        options = self.option_binding.options      # OverviewOptions: what the widgets show, read once
        return overview_drawing, self.trace, self.kind, options.threshold, options.log_colour, pooled

    def drawing_progress(self, record) -> None:
        _, done, total = record      # a passing state: said in the readout, not kept as the tooltip
        old = f" ({STALE_NOTE})" if self.stale else ""
        self.readout.setText(f"Pooling every head of a long text for the overview: {done} of {total} layers "
                             f"done…{old}")

    def forget_readout(self) -> None:
        self._set_readout(HINT)

    def clear_drawing(self) -> None:
        self.image.clear()
        self.layout_ = self.mosaic = None
        self._set_readout(HINT)
        self.marks.update()

    def apply_drawing(self, drawing: OverviewDrawing) -> None:
        self.mosaic, layout, self.drawn_trace, thumbs = drawing.mosaic, drawing.layout, drawing.trace, drawing.thumbs
        self.image.setImage(self.mosaic, autoLevels=False, levels=(0, 255))
        self._on_colormap(self.state.colormap)            # a signed kind's diverging map, or the user's
        self.colorbar.setLevels(drawing.levels)           # the bar says the range the codes span
        label_colorbar(self.colorbar, self.log_box.isChecked() and not is_signed(drawing.kind))
        offer_log_colour(self.log_box, drawing.kind)
        say_threshold(self.threshold, drawing.kind)
        if not thumbs.exact:
            (q0, q1), (k0, k1) = self.block(0, 0)
            apart = (f" The strip at each tile's left is key 0 ({reading.key_tokens(self.drawn_trace, drawing.kind)[0]!r}) "
                     "alone, where an attention sink shows." if drawing.offset else "")
            pooled = "the value of largest magnitude (sign kept)" if is_signed(drawing.kind) else "the max"
            self._set_readout(f"{thumbs.t_query:,} x {thumbs.t_key:,} tokens: each pixel is {pooled} over a block of "
                              f"about {q1 - q0} x {k1 - k0} tokens (peaks stay visible).{apart} Hover reads a block "
                              "exactly; click opens the head to zoom in.")
        if layout != self.layout_:
            self.layout_ = layout
            self._place_labels()
            self._fit_view()
        self.marks.update()       # on the new layout (a longer text: other tiles; marked on the old, they missed)

    def _fit_view(self, *_args) -> None:
        """The whole mosaic in view, with room in *pixels* for the L / H labels at the font's
        size (a share of the mosaic was too little in presentation mode at 1280x800: 'H0' was
        cut off); the plot asks for a line and a half of the font per layer (up to MAX_GRID_SHARE of the
        window), and where tiles are still smaller than a label, every n-th is labelled
        (32 heads' labels ran into each other)."""
        lay = self.layout_
        if lay is None:
            return
        h, w = lay.shape
        metrics = QFontMetrics(QApplication.font())
        line = metrics.height()
        self.plot.setMinimumHeight(min(int(1.5 * line * lay.rows) + 2 * line,
                                       int(MAX_GRID_SHARE * self.window().height())))
        top_px, left_px = line + 6, metrics.horizontalAdvance(f"L{lay.rows - 1}") + 24   # TextItem's margins
        vh, vw = max(2.0 * top_px, self.view.height()), max(2.0 * left_px, self.view.width())
        top, left = top_px * h / (vh - top_px) + 1, left_px * w / (vw - left_px) + 1   # + the labels' 1-cell gap
        self.view.setRange(xRange=(-left, w), yRange=(-top, h), padding=0)
        row_px = (lay.tile_h + lay.gap) * (vh - top_px) / (h + top)          # a layer's height on screen
        col_px = (lay.tile_w + lay.gap) * (vw - left_px) / (w + left)        # a head's width on screen
        every = {"L": max(1, math.ceil(line / max(row_px, 1e-6))),
                 "H": max(1, math.ceil((metrics.horizontalAdvance(f"H{lay.cols - 1}") + 6) / max(col_px, 1e-6)))}
        for item in self.labels:
            text = item.toPlainText()
            item.setVisible(int(text[1:]) % every[text[0]] == 0)

    def _place_labels(self) -> None:
        """Layer names down the left, head names along the top. The items are kept and only
        moved when the layout changes (a longer text): making 18 TextItems anew took ~35 ms
        of the GUI thread on the first long Run after a short one."""
        lay = self.layout_
        wanted = [(f"L{r}", -1, top + lay.tile_h / 2, (1, 0.5)) for r, top in enumerate(lay.row_tops)]
        wanted += [(f"H{c}", left + lay.tile_w / 2, -1, (0.5, 1)) for c, left in enumerate(lay.col_lefts)]
        kept = {item.toPlainText(): item for item in self.labels}
        for text in kept.keys() - {text for text, *_ in wanted}:
            self.view.removeItem(kept.pop(text))
        self.labels = []
        for text, x, y, anchor in wanted:
            item = kept.get(text)
            if item is None:
                item = pg.TextItem(text, color=pg.getConfigOption("foreground"), anchor=anchor)
                item.setFont(QApplication.font())   # presentation mode's size for labels made after it
                self.view.addItem(item)
            item.setPos(x, y)
            self.labels.append(item)

    # ---- hover and click -------------------------------------------------------------
    def cell_at_scene(self, scene_pos) -> tuple[int, int, int, int] | None:
        """(layer, head, query pixel, key pixel) under the cursor; key pixel -1 is the first
        key's strip drawn apart, None a gap."""
        if self.layout_ is None:
            return None
        p = self.view.mapSceneToView(scene_pos)
        cell = self.layout_.locate(p.y(), p.x())
        offset = self.drawing.offset if self.drawing is not None else 0
        if cell is None or not offset:
            return cell
        layer, head, qi, ki = cell
        if ki < SINK_PIXELS:
            return layer, head, qi, -1
        return None if ki < offset else (layer, head, qi, ki - offset)

    def describe(self, layer: int, head: int, qi: int, ki: int) -> str:
        tr, kind, thumbs = self.drawn_trace, self.drawing.kind, self.drawing.thumbs   # what is on screen
        q, k = reading.query_tokens(tr, kind), reading.key_tokens(tr, kind)
        word = value_word(kind)         # "mixing" for a signed kind (effective attention), not "weight"
        if not thumbs.exact:    # a pooled pixel: its block, and its strongest cell read exactly
            (q0, q1), (k0, k1) = self.block(qi, ki)
            if ki < 0:          # the first key's strip
                column = reading.tile(tr, kind, layer, head, slice(q0, q1), slice(0, 1))[:, 0]
                best = strongest(column, kind)
                return (f"layer {layer}, head {head}: {word} {column[best]:.4f} (strongest), mean {column.mean():.4f}"
                        f" | queries {q0}-{q1 - 1} x key 0 {k[0]!r} (drawn apart): strongest query {q0 + best} "
                        f"{q[q0 + best]!r}")
            block = reading.tile(tr, kind, layer, head, slice(q0, q1), slice(k0, k1))
            bq, bk = np.unravel_index(strongest(block, kind), block.shape)
            qi, ki = q0 + int(bq), k0 + int(bk)
            return (f"layer {layer}, head {head}: {word} {block[bq, bk]:.4f} (strongest) | query {qi} {q[qi]!r} -> "
                    f"key {ki} {k[ki]!r}, of queries {q0}-{q1 - 1} x keys {k0}-{k1 - 1} (one pixel, {'largest magnitude' if is_signed(kind) else 'max'} of the block)")
        w = float(reading.tile(tr, kind, layer, head, slice(qi, qi + 1), slice(ki, ki + 1))[0, 0])
        # The weight first: a narrow window (1280 px) or long tokens cut the end of the line.
        return f"layer {layer}, head {head}: {word} {w:.4f} | query {qi} {q[qi]!r} -> key {ki} {k[ki]!r}"

    def block(self, qi: int, ki: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """The tokens [start, stop) of queries and of keys that pixel (qi, ki) of a tile stands for."""
        from attnscope.engine.traces import bin_span

        thumbs = self.drawing.thumbs
        rows, cols = thumbs.pooled.shape[2:]
        keys = (0, 1) if ki < 0 else bin_span(thumbs.t_key, cols, ki)     # -1: the first key, drawn apart
        return bin_span(thumbs.t_query, rows, qi), keys

    def _on_hover(self, scene_pos) -> None:
        cell = self.cell_at_scene(scene_pos)
        if cell is None:
            self.plot.setToolTip("")
            return
        self._set_readout(self.describe(*cell))

    def _on_click(self, event) -> None:
        cell = self.cell_at_scene(event.scenePos())
        if cell is not None and not toggle_from_click(self.state, self.drawing.kind, cell[0], cell[1], event.modifiers()):
            self.state.select_head(self.drawing.kind, cell[0], cell[1])

    def scene_pos_of(self, layer: int, head: int, qi: int, ki: int):
        """The scene point at the centre of one cell (for tests and keyboard focus)."""
        y, x = self.layout_.tile_origin(layer, head)
        offset = self.drawing.offset if self.drawing is not None else 0
        column = 0 if ki < 0 else ki + offset                              # -1: the first key's strip
        return self.view.mapViewToScene(pg.Point(x + column + 0.5, y + qi + 0.5))

    def export_target(self) -> QWidget:
        return self.plot
