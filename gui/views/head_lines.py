"""Head view: queries on the left, keys on the right, one line per weight, its opacity the
weight; one colour per head and several heads at once, as in bertviz, without a browser.

Why it is fast: the worker computes every line's end points, grouped by head and opacity
bucket, and the GUI thread hands each group to one PlotCurveItem drawn as plain line
segments (``connect="pairs"``, no antialiasing, one ``drawLines`` call per group). Tokens
are the tick labels of two axes, one picture each, not hundreds of text items. The layer
and the head shown follow the state's selection; other head buttons add heads beside it.

A long text (more than LONG_TOKENS tokens, or too long to hold every head of the kind at
once) has too many lines to draw or even hold: there, each query gets lines to its k
strongest keys only (engine.inspection.top_keys, read from the trace a block of rows at a
time), and the view says so, with the weight the other keys take that is not drawn.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QSpinBox,
                               QVBoxLayout, QWidget)

from attnscope.gui.display import display_weights, special_mask
from attnscope.gui.drawing.drawings import HeadLinesDrawing
from attnscope.engine.inspection import TopKeys, layer_top_keys
from attnscope.engine.traces import base
from attnscope.engine.traces import reading
from attnscope.gui.widgets.flow import FlowLayout
from attnscope.gui.theme import text_on
from attnscope.gui.drawing.kinds import is_signed
from attnscope.gui.drawing.prepared import PreparedView, prepares
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.widgets.token_labels import fitting_ticks
from attnscope.gui.widgets.kind_box import fill_kind_box

BUCKETS = 8          # opacity levels per head
PAIR_FILTERS = ("all", "A -> B", "B -> A")
HINT = "Hover a token to keep only its lines."
MAX_PLOT_WIDTH = 620  # px: the token columns and the band of lines between them
LONG_TOKENS = 1024    # more queries or keys than this: lines to each query's strongest keys only
KEYS_PER_QUERY = 4    # ... that many at first: 4 x 8k queries = 32k lines a head, drawn in a blink
MAX_KEYS_PER_QUERY = 16
NOT_WEIGHTS = "Lines cannot show signed mixing: Head detail and the overview draw it."   # an opacity has no sign


def head_color(h: int, n: int) -> QColor:
    return pg.intColor(h, hues=max(n, 1), values=1, maxValue=220)


def segments(kind_weights: np.ndarray, layer: int, heads: list[int], q_keep: np.ndarray, k_keep: np.ndarray,
             threshold: float, normalise: bool) -> dict[int, list[tuple[np.ndarray, np.ndarray, float]]]:
    """Per head: (query indices, key indices, opacity) for each opacity bucket of the lines to draw."""
    out = {}
    for h in heads:
        w = display_weights(kind_weights[layer, h], threshold, normalise)  # (Tq, Tk)
        w = w * q_keep[:, None] * k_keep[None, :]
        q_idx, k_idx = np.nonzero(w > 0)
        out[h] = _buckets(q_idx, k_idx, w[q_idx, k_idx])
    return out


def _buckets(q_idx: np.ndarray, k_idx: np.ndarray, values: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Lines (query, key, weight) grouped by opacity bucket: (queries, keys, opacity) per bucket."""
    bucket = np.minimum(BUCKETS, np.ceil(values * BUCKETS)).astype(int)
    return [(q_idx[bucket == b], k_idx[bucket == b], b / BUCKETS) for b in range(1, BUCKETS + 1)
            if (bucket == b).any()]


def top_segments(tops: dict[int, TopKeys], q_keep: np.ndarray, k_keep: np.ndarray, threshold: float,
                 normalise: bool) -> dict[int, list[tuple[np.ndarray, np.ndarray, float]]]:
    """As ``segments``, for a long trace: only the lines to each query's strongest keys. The
    threshold and the per-head scale mean what they mean for every line (a row's strongest key
    is its max, so the kept weights' max is the head's)."""
    out = {}
    for h, top in tops.items():
        w = top.weights                                                    # (Tq, k)
        if normalise and w.size and w.max() > 0:
            w = w / w.max()
        keep = (w >= threshold) & top_lines(top, q_keep, k_keep)
        q_idx, slot = np.nonzero(keep)
        out[h] = _buckets(q_idx, top.keys[q_idx, slot], w[q_idx, slot])
    return out


def top_lines(top: TopKeys, q_keep: np.ndarray, k_keep: np.ndarray) -> np.ndarray:
    """(Tq, k) bool: which of the strongest keys' lines may be drawn before the threshold (a
    weight above 0, its query and its key kept)."""
    return (top.weights > 0) & (q_keep[:, None] > 0) & (k_keep[top.keys] > 0)


def is_long(trace, kind: str) -> bool:
    """Whether Head lines draws only each query's strongest keys: more than LONG_TOKENS queries
    or keys (tens of lines a query blur into one band), or every head of the kind too large
    to hold at once (engine.traces.base.DENSE_VIEW_BYTES)."""
    _, _, tq, tk = trace.shape(kind)
    return max(tq, tk) > LONG_TOKENS or reading.dense_bytes(trace, kind) > base.DENSE_VIEW_BYTES


class TopKeysCache:
    """The strongest keys already read for the view's trace, per (kind, layer, head, k, keys
    allowed): hovering a token, moving the threshold, changing k or adding a head filters them
    again instead of reading whole heads again (seconds a head at 8k tokens on a CPU). Filled by
    drawing jobs in workers, hence the lock; it holds its trace weakly."""

    def __init__(self, size: int = 64):
        self.size = size
        self._lock = threading.Lock()
        self._trace = lambda: None
        self._tops: dict[tuple, TopKeys] = {}

    def get(self, trace, kind: str, layer: int, heads: list[int], k: int,
            keys: np.ndarray | None) -> dict[int, TopKeys]:
        allowed = None if keys is None else keys.tobytes()
        ids = {h: (kind, layer, h, k, allowed) for h in heads}
        with self._lock:
            if self._trace() is not trace:
                self._trace, self._tops = weakref.ref(trace), {}
            found = {h: self._tops[i] for h, i in ids.items() if i in self._tops}
        missing = [h for h in heads if h not in found]
        found.update(layer_top_keys(trace, kind, layer, missing, k, keys))
        with self._lock:
            if self._trace() is trace:
                self._tops.update({ids[h]: found[h] for h in missing})
                while len(self._tops) > self.size:
                    self._tops.pop(next(iter(self._tops)))
        return {h: found[h] for h in heads}


def top_summary(tops: dict[int, TopKeys], shown: np.ndarray, k: int, hide_special: bool, lines: int,
                candidates: int) -> str:
    """What a long trace's lines are, in words: how many queries, how many keys each, the
    weight of the keys not drawn (averaged over the queries shown and the heads), and how many
    of the lines the threshold left (``lines`` of ``candidates``)."""
    n = int(shown.sum())
    which = " other than special tokens" if hide_special else ""
    if not tops or n == 0:
        return f"{n:,} queries: the {k} strongest keys{which} of each are drawn; choose a head."
    k = next(iter(tops.values())).k           # fewer when fewer keys may be chosen
    left = 100 * float(np.mean([top.leftover[shown > 0].mean() for top in tops.values()]))
    share = f"{left:.0f} %" if left >= 1 or left == 0 else f"{left:.1f} %"
    said = (f"{n:,} queries: the {k} strongest keys{which} of each; the rest, {share} of the weight on "
            "average, not drawn")
    if lines == candidates:
        return f"{said} ({lines:,} lines)."
    return f"{said}. Of these {candidates:,} lines, the {lines:,} above the threshold are drawn."


def keep_masks(q_tokens: list[str], k_tokens: list[str], hide_special: bool, pair_mode: str,
               focus: tuple[str, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """Which query and key tokens may have lines: specials hidden, one segment of a
    sentence pair only, or only the hovered token."""
    q_keep = np.ones(len(q_tokens), dtype=np.float32)
    k_keep = np.ones(len(k_tokens), dtype=np.float32)
    if hide_special:
        q_keep *= special_mask(q_tokens)
        k_keep *= special_mask(k_tokens)
    if pair_mode != "all" and "[SEP]" in k_tokens:
        first_sep = k_tokens.index("[SEP]")
        segment_a = np.arange(len(k_tokens)) <= first_sep
        src, dst = (segment_a, ~segment_a) if pair_mode == "A -> B" else (~segment_a, segment_a)
        q_keep *= src
        k_keep *= dst
    if focus is not None:
        side, i = focus
        only = q_keep if side == "query" else k_keep
        mask = np.zeros_like(only)
        if 0 <= i < len(mask):
            mask[i] = 1
        only *= mask
    return q_keep, k_keep




@prepares
def lines_drawing(trace, kind: str, layer: int, heads: list[int], threshold: float, normalise: bool,
                  hide_special: bool, pair_mode: str, focus, k: int = KEYS_PER_QUERY,
                  cache: TopKeysCache | None = None) -> HeadLinesDrawing:
    """Every line's end points, per head and opacity bucket, and the axis labels (a worker);
    on a long trace the lines of each query's ``k`` strongest keys, and a summary that says so."""
    q_tokens, k_tokens = reading.query_tokens(trace, kind), reading.key_tokens(trace, kind)
    tq, tk = len(q_tokens), len(k_tokens)
    scale_q, scale_k = max(tq, tk) / tq, max(tq, tk) / tk
    if is_signed(kind):        # an opacity has no sign: a negative mixing was drawn as no line at all
        return HeadLinesDrawing(trace=trace, kind=kind, groups=[], drawn={}, n_heads=trace.shape(kind)[1],
                                summary=NOT_WEIGHTS, scale_q=scale_q, scale_k=scale_k, height=max(tq, tk),
                                q_tokens=q_tokens, k_tokens=k_tokens)
    q_keep, k_keep = keep_masks(q_tokens, k_tokens, hide_special, pair_mode, focus)
    n_layers, n_heads = trace.shape(kind)[:2]
    layer = min(layer, n_layers - 1)
    long = is_long(trace, kind)
    if long:
        # The keys that may be chosen do not depend on the hovered token: hovering filters
        # the lines already chosen (from the cache), it does not choose others.
        shown, allowed = keep_masks(q_tokens, k_tokens, hide_special, pair_mode, None)
        # Read as many keys as the spin box allows once; any k is then a prefix of those.
        found = (cache or TopKeysCache()).get(trace, kind, layer, heads, MAX_KEYS_PER_QUERY,
                                              None if allowed.all() else allowed > 0)
        tops = {h: top.first(k) for h, top in found.items()}
        per_head = top_segments(tops, q_keep, k_keep, threshold, normalise)
    else:
        per_head = segments(reading.weights(trace, kind), layer, heads, q_keep, k_keep, threshold, normalise)
    groups, drawn = [], {}
    for h, buckets in per_head.items():
        drawn[h] = 0
        for q_idx, k_idx, alpha in buckets:
            n = len(q_idx)
            x = np.tile(np.array([0.0, 1.0]), n)
            y = np.empty(2 * n)
            y[0::2] = (q_idx + 0.5) * scale_q
            y[1::2] = (k_idx + 0.5) * scale_k
            groups.append((h, min(1.0, 0.1 + 0.9 * alpha), x, y))
            drawn[h] += n
    summary = None
    if long:
        candidates = sum(int(top_lines(top, q_keep, k_keep).sum()) for top in tops.values())
        summary = top_summary(tops, shown, k, hide_special, sum(drawn.values()), candidates)
    return HeadLinesDrawing(trace=trace, kind=kind, groups=groups, drawn=drawn, n_heads=n_heads, summary=summary,
                            scale_q=scale_q, scale_k=scale_k, height=max(tq, tk), q_tokens=q_tokens,
                            k_tokens=k_tokens)


def _colour_button(button: QPushButton, colour: QColor | None) -> None:
    """A checked head's button in its lines' colour, its number in black or white, whichever
    reads better; unchecked, the theme's own. A palette, not a style sheet: a style sheet
    froze the buttons' colours at the theme they were made in."""
    if colour is None:
        button.setPalette(QPalette())     # nothing of its own: the application's palette
        return
    pal = QPalette()
    pal.setColor(QPalette.ColorRole.Button, colour)
    pal.setColor(QPalette.ColorRole.ButtonText, text_on(colour))
    button.setPalette(pal)


@dataclass(frozen=True)
class HeadLinesOptions(ViewOptions):
    """Head lines' display options (settings "head_lines/...")."""
    PREFIX = "head_lines"
    threshold: float = option(0.02, "threshold")              # weaker links not drawn
    normalise: bool = option(False, "normalise")              # each head scaled to its max
    hide_special: bool = option(False, "hide_special")        # [CLS], [SEP], ... left out
    pair_filter: str = option(PAIR_FILTERS[0], "pair_filter")  # BERT's sentence pairs: all, A -> B, B -> A
    keys_per_query: int = option(KEYS_PER_QUERY, "keys_per_query")   # a long trace: each query's strongest keys


class HeadLines(PreparedView, QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._init_prepared("Head lines")
        self.focus: tuple[str, int] | None = None   # ("query" | "key", index) under the mouse
        self.drawn: dict[int, int] = {}              # head -> line segments drawn
        self._curves: list[pg.PlotCurveItem] = []
        self._shown_head: tuple | None = None        # the selected (kind, head) the buttons follow

        self.kind_box = QComboBox()
        self.kind_box.currentTextChanged.connect(lambda k: k and self.state.select(kind=k))
        self.layer_box = QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.layer_box.valueChanged.connect(lambda v: self.state.select(layer=v))
        self.head_row = FlowLayout()       # "heads:", all heads, then a button per head
        self.head_buttons: list[QPushButton] = []
        self.all_button = QPushButton("all heads")
        self.all_button.clicked.connect(lambda: self.set_heads(list(range(len(self.head_buttons)))))
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.0, 1.0)
        self.threshold.setSingleStep(0.01)
        self.threshold.setValue(0.02)
        self.threshold.setPrefix("hide below ")
        self.threshold.valueChanged.connect(lambda _: self.redraw())
        self.normalise = QCheckBox("scale each head to its max")
        self.normalise.toggled.connect(lambda _: self.redraw())
        self.hide_special = QCheckBox("hide special tokens")
        self.hide_special.toggled.connect(lambda _: self.redraw())
        self.pair_filter = QComboBox()
        self.pair_filter.addItems(PAIR_FILTERS)
        self.pair_filter.currentTextChanged.connect(lambda _: self.redraw())
        self.keys_per_query = QSpinBox()          # a long trace only: lines to each query's strongest keys
        self.keys_per_query.setRange(1, MAX_KEYS_PER_QUERY)
        self.keys_per_query.setValue(KEYS_PER_QUERY)
        self.keys_per_query.setPrefix("strongest ")
        self.keys_per_query.setSuffix(" keys a query")
        self.keys_per_query.valueChanged.connect(lambda _: self.redraw())
        self.keys_per_query.setVisible(False)
        self.top_cache = TopKeysCache()
        controls = FlowLayout().addWidgets(self.kind_box, self.layer_box, self.threshold, self.normalise,
                                           self.hide_special, self.pair_filter, self.keys_per_query)
        self.head_row.addWidgets(QLabel("heads:"), self.all_button)

        self.plot = pg.PlotWidget()
        self.item = self.plot.getPlotItem()
        self.item.hideAxis("bottom")
        self.item.showAxis("left")
        self.item.showAxis("right")
        for side in ("left", "right"):
            self.item.getAxis(side).setStyle(tickLength=0)
        self.item.invertY(True)
        self.item.setMouseEnabled(False, True)
        self.item.hideButtons()
        self.item.setMenuEnabled(False)
        self.plot.scene().sigMouseMoved.connect(self._on_hover)
        self.item.vb.sigResized.connect(lambda *_: self._label_axes())   # labels that fit the new height
        self.readout = ElidedLabel(HINT)
        self.summary = ElidedLabel(" ")           # a long trace: what its lines show and what they leave out
        self.summary.setVisible(False)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(controls)
        layout.addLayout(self.head_row)
        # As bertviz: the lines run in a band between the two columns of tokens, not across
        # a wide window (wide lines are no easier to follow, and cost pixels to paint).
        self.plot.setMaximumWidth(MAX_PLOT_WIDTH)
        centred = QHBoxLayout()
        centred.addStretch(1)
        centred.addWidget(self.plot, 4)
        centred.addStretch(1)
        layout.addLayout(centred, 1)
        layout.addWidget(self.summary)
        layout.addWidget(self.readout)
        state.trace_changed.connect(self.set_trace)
        state.selection_changed.connect(self._on_selection)
        state.presentation_changed.connect(lambda _on: self.redraw())
        bind_options(self, HeadLinesOptions)
        self.set_trace(state.trace)

    # ---- data ---------------------------------------------------------------------------------
    def set_trace(self, trace) -> None:
        self.focus = None
        self.top_cache = TopKeysCache()
        self.readout.setText(HINT)
        self._on_selection()

    def _on_selection(self, *_selection) -> None:
        trace = self.state.trace
        fill_kind_box(self.kind_box, trace.kinds if trace else [], self.kind)
        if trace is not None and self.kind is not None:
            self._sync_controls()
        self.redraw()

    def _sync_controls(self) -> None:
        trace, kind = self.state.trace, self.kind
        n_layers, n_heads = trace.shape(kind)[:2]
        self.layer_box.blockSignals(True)
        self.layer_box.setRange(0, n_layers - 1)
        self.layer_box.setValue(self.state.layer)
        self.layer_box.blockSignals(False)
        if len(self.head_buttons) != n_heads:
            for b in self.head_buttons:
                self.head_row.removeWidget(b)
                b.deleteLater()
            self.head_buttons = []
            for h in range(n_heads):
                b = QPushButton(str(h))
                b.setCheckable(True)
                b.setMaximumWidth(32)
                b.toggled.connect(lambda on, b=b, h=h: _colour_button(b, head_color(h, n_heads) if on else None))
                b.toggled.connect(lambda _: self.redraw())
                self.head_row.addWidget(b)
                self.head_buttons.append(b)
            self._shown_head = None
        # A head selected anywhere (grid, statistics, detail) is the one shown here.
        if self._shown_head != (kind, self.state.head):
            self._shown_head = (kind, self.state.head)
            self._check_heads([self.state.head])
        self.keys_per_query.setVisible(is_long(trace, kind))
        tokens = reading.key_tokens(trace, kind)
        self.pair_filter.setVisible(tokens.count("[SEP]") >= 2 and kind == trace.kinds[0])

    def _check_heads(self, heads: list[int]) -> None:
        for h, b in enumerate(self.head_buttons):
            b.blockSignals(True)
            b.setChecked(h in heads)
            b.blockSignals(False)
            _colour_button(b, head_color(h, len(self.head_buttons)) if h in heads else None)

    def set_heads(self, heads: list[int]) -> None:
        self._check_heads(heads)
        self.redraw()

    def heads(self) -> list[int]:
        return [h for h, b in enumerate(self.head_buttons) if b.isChecked()]

    # ---- drawing ------------------------------------------------------------------------------
    def drawing_job(self):
        trace = self.state.trace
        if trace is None or self.kind is None:
            return None
        options = self.option_binding.options      # HeadLinesOptions: what the widgets show, read once
        pair_mode = options.pair_filter if self.pair_filter.isVisibleTo(self) else "all"
        return (lines_drawing, trace, self.kind, self.state.layer, self.heads(), options.threshold,
                options.normalise, options.hide_special, pair_mode, self.focus, options.keys_per_query,
                self.top_cache)

    def clear_drawing(self) -> None:
        for c in self._curves:
            self.item.removeItem(c)
        self._curves, self.drawn = [], {}
        self.summary.setVisible(False)
        for side in ("left", "right"):
            self.item.getAxis(side).setTicks([[]])

    def apply_drawing(self, d: HeadLinesDrawing) -> None:
        self.clear_drawing()
        self.drawn = d.drawn
        if d.summary:
            self.summary.setText(d.summary)
            self.summary.setVisible(True)
        for h, alpha, x, y in d.groups:
            c = QColor(head_color(h, d.n_heads))
            c.setAlphaF(alpha)
            width = 2.0 if self.state.presentation else 1.0
            curve = pg.PlotCurveItem(x, y, connect="pairs", pen=pg.mkPen(c, width=width), antialias=False,
                                     skipFiniteCheck=True)
            curve.fixed_width = True    # drawn at the presentation width already
            curve.setSegmentedLineMode("on")
            self.item.addItem(curve)
            self._curves.append(curve)
        self.item.setRange(xRange=(0, 1), yRange=(0, d.height), padding=0.02)
        self._label_axes()

    def _label_axes(self) -> None:
        d = self.drawing
        if d is None:
            return
        room = max(1.0, self.item.vb.height())
        line = self.fontMetrics().height() + 1
        self.item.getAxis("left").setTicks([fitting_ticks(d.q_tokens, room, line, d.scale_q)])
        self.item.getAxis("right").setTicks([fitting_ticks(d.k_tokens, room, line, d.scale_k)])


    def _on_hover(self, scene_pos) -> None:
        d = self.drawing
        if d is None:
            return
        p = self.item.vb.mapSceneToView(scene_pos)
        focus = None
        if p.x() < 0.1:
            focus = ("query", int(p.y() / d.scale_q))
        elif p.x() > 0.9:
            focus = ("key", int(p.y() / d.scale_k))
        if focus != self.focus:
            self.focus = focus
            trace, kind = d.trace, d.kind
            if focus:
                tokens = reading.query_tokens(trace, kind) if focus[0] == "query" else reading.key_tokens(trace, kind)
                if 0 <= focus[1] < len(tokens):
                    self.readout.setText(f"{focus[0]} {focus[1]} {tokens[focus[1]]!r}: only its lines")
            else:
                self.readout.setText(HINT)
            self.redraw()

    def export_target(self) -> QWidget:
        return self.plot
