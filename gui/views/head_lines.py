"""Head view: queries on the left, keys on the right, one line per weight, its opacity the
weight; one colour per head and several heads at once, as in bertviz, without a browser.

Lines are drawn in a few opacity buckets per head, each bucket one PlotCurveItem with
connect="pairs", so 512 tokens x 12 heads is a handful of items, not a million. Hovering a
token keeps only its lines; weak links under the threshold are hidden.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QSpinBox,
                               QVBoxLayout, QWidget)

from engine.analysis import display_weights, special_mask
from gui.views.kinds import fill_kind_box

BUCKETS = 8          # opacity levels per head
MAX_LABELS = 150     # beyond this many tokens, label every n-th one
PAIR_FILTERS = ("all", "A -> B", "B -> A")


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
        values = w[q_idx, k_idx]
        bucket = np.minimum(BUCKETS, np.ceil(values * BUCKETS)).astype(int)
        out[h] = [(q_idx[bucket == b], k_idx[bucket == b], b / BUCKETS) for b in range(1, BUCKETS + 1)
                  if (bucket == b).any()]
    return out


class HeadLines(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.kind: str | None = None
        self.focus: tuple[str, int] | None = None   # ("query" | "key", index) under the mouse
        self.drawn: dict[int, int] = {}              # head -> line segments drawn
        self._curves: list[pg.PlotCurveItem] = []
        self._labels: list[pg.TextItem] = []

        self.kind_box = QComboBox()
        self.kind_box.currentTextChanged.connect(self._on_kind)
        self.layer_box = QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.layer_box.valueChanged.connect(lambda _: self.redraw())
        self.head_row = QHBoxLayout()
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
        controls = QHBoxLayout()
        for w in (self.kind_box, self.layer_box, self.threshold, self.normalise, self.hide_special, self.pair_filter):
            controls.addWidget(w)
        controls.addStretch(1)
        heads = QHBoxLayout()
        heads.addWidget(QLabel("heads:"))
        heads.addLayout(self.head_row)
        heads.addWidget(self.all_button)
        heads.addStretch(1)

        self.plot = pg.PlotWidget()
        self.item = self.plot.getPlotItem()
        self.item.hideAxis("left")
        self.item.hideAxis("bottom")
        self.item.invertY(True)
        self.item.setMouseEnabled(False, True)
        self.item.hideButtons()
        self.item.setMenuEnabled(False)
        self.plot.scene().sigMouseMoved.connect(self._on_hover)
        self.readout = QLabel("Hover a token to keep only its lines.")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(controls)
        layout.addLayout(heads)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.readout)
        state.trace_changed.connect(self.set_trace)
        if state.trace is not None:
            self.set_trace(state.trace)

    # ---- data ---------------------------------------------------------------------------------
    def set_trace(self, trace) -> None:
        kinds = trace.kinds if trace else []
        self.kind = fill_kind_box(self.kind_box, kinds, self.kind)
        self._sync_controls()
        self.redraw()

    def _on_kind(self, kind: str) -> None:
        if kind:
            self.kind = kind
            self.focus = None
            self._sync_controls()
            self.redraw()

    def _sync_controls(self) -> None:
        trace = self.state.trace
        if trace is None or self.kind is None:
            return
        n_layers, n_heads = trace.shape(self.kind)[:2]
        self.layer_box.setRange(0, n_layers - 1)
        if len(self.head_buttons) != n_heads:
            for b in self.head_buttons:
                self.head_row.removeWidget(b)
                b.deleteLater()
            self.head_buttons = []
            for h in range(n_heads):
                b = QPushButton(str(h))
                b.setCheckable(True)
                b.setChecked(h == 0)
                b.setMaximumWidth(32)
                c = head_color(h, n_heads)
                b.setStyleSheet(f"QPushButton:checked {{ background: {c.name()}; color: white; }}")
                b.toggled.connect(lambda _: self.redraw())
                self.head_row.addWidget(b)
                self.head_buttons.append(b)
        tokens = trace.key_tokens(self.kind)
        self.pair_filter.setVisible(tokens.count("[SEP]") >= 2 and self.kind == trace.kinds[0])

    def set_heads(self, heads: list[int]) -> None:
        for h, b in enumerate(self.head_buttons):
            b.blockSignals(True)
            b.setChecked(h in heads)
            b.blockSignals(False)
        self.redraw()

    def heads(self) -> list[int]:
        return [h for h, b in enumerate(self.head_buttons) if b.isChecked()]

    def _keep_masks(self, q_tokens: list[str], k_tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        q_keep = np.ones(len(q_tokens), dtype=np.float32)
        k_keep = np.ones(len(k_tokens), dtype=np.float32)
        if self.hide_special.isChecked():
            q_keep *= special_mask(q_tokens)
            k_keep *= special_mask(k_tokens)
        mode = self.pair_filter.currentText() if self.pair_filter.isVisible() else "all"
        if mode != "all":
            first_sep = k_tokens.index("[SEP]")
            segment_a = np.arange(len(k_tokens)) <= first_sep
            src, dst = (segment_a, ~segment_a) if mode == "A -> B" else (~segment_a, segment_a)
            q_keep *= src
            k_keep *= dst
        if self.focus is not None:
            side, i = self.focus
            only = q_keep if side == "query" else k_keep
            mask = np.zeros_like(only)
            if 0 <= i < len(mask):
                mask[i] = 1
            only *= mask
        return q_keep, k_keep

    # ---- drawing ------------------------------------------------------------------------------
    def redraw(self) -> None:
        trace = self.state.trace
        for c in self._curves:
            self.item.removeItem(c)
        self._curves, self.drawn = [], {}
        if trace is None or self.kind is None:
            return
        q_tokens, k_tokens = trace.query_tokens(self.kind), trace.key_tokens(self.kind)
        tq, tk = len(q_tokens), len(k_tokens)
        self._scale_q, self._scale_k = max(tq, tk) / tq, max(tq, tk) / tk
        self._place_labels(q_tokens, k_tokens)
        q_keep, k_keep = self._keep_masks(q_tokens, k_tokens)
        weights = trace.weights(self.kind)
        layer = min(self.layer_box.value(), weights.shape[0] - 1)
        n_heads = weights.shape[1]
        for h, buckets in segments(weights, layer, self.heads(), q_keep, k_keep, self.threshold.value(),
                                   self.normalise.isChecked()).items():
            color = head_color(h, n_heads)
            self.drawn[h] = 0
            for q_idx, k_idx, alpha in buckets:
                n = len(q_idx)
                x = np.tile([0.0, 1.0], n)
                y = np.empty(2 * n)
                y[0::2] = (q_idx + 0.5) * self._scale_q
                y[1::2] = (k_idx + 0.5) * self._scale_k
                c = QColor(color)
                c.setAlphaF(min(1.0, 0.1 + 0.9 * alpha))
                curve = pg.PlotCurveItem(x, y, connect="pairs", pen=pg.mkPen(c, width=1.5))
                self.item.addItem(curve)
                self._curves.append(curve)
                self.drawn[h] += n
        self.item.setRange(xRange=(-0.45, 1.45), yRange=(0, max(tq, tk)), padding=0.02)

    def _place_labels(self, q_tokens: list[str], k_tokens: list[str]) -> None:
        key = (tuple(q_tokens), tuple(k_tokens))
        if getattr(self, "_label_key", None) == key:
            return
        self._label_key = key
        for t in self._labels:
            self.item.removeItem(t)
        self._labels = []
        for tokens, x, anchor, scale in ((q_tokens, -0.02, (1, 0.5), self._scale_q), (k_tokens, 1.02, (0, 0.5), self._scale_k)):
            every = max(1, math.ceil(len(tokens) / MAX_LABELS))
            for i in range(0, len(tokens), every):
                label = pg.TextItem(tokens[i], color=(40, 40, 40), anchor=anchor)
                label.setPos(x, (i + 0.5) * scale)
                self.item.addItem(label)
                self._labels.append(label)

    def _on_hover(self, scene_pos) -> None:
        trace = self.state.trace
        if trace is None or self.kind is None:
            return
        p = self.item.vb.mapSceneToView(scene_pos)
        focus = None
        if p.x() < 0.1:
            focus = ("query", int(p.y() / self._scale_q))
        elif p.x() > 0.9:
            focus = ("key", int(p.y() / self._scale_k))
        if focus != self.focus:
            self.focus = focus
            if focus:
                tokens = trace.query_tokens(self.kind) if focus[0] == "query" else trace.key_tokens(self.kind)
                if 0 <= focus[1] < len(tokens):
                    self.readout.setText(f"{focus[0]} {focus[1]} {tokens[focus[1]]!r}: only its lines")
            else:
                self.readout.setText("Hover a token to keep only its lines.")
            self.redraw()
