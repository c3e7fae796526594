"""Rollout: how much of each input token reaches each position after layer l (Abnar and
Zuidema's attention rollout, residual included), or a layer's mean / max over heads."""
from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from engine.analysis import layer_aggregate, rollout
from gui.views.kinds import fill_kind_box
from gui.views.token_matrix import TokenMatrix

MODES = ("rollout (with residual)", "rollout (attention only)", "mean of heads", "max of heads")


class RolloutView(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.matrix = None
        self.kind_box = QComboBox()
        self.mode = QComboBox()
        self.mode.addItems(MODES)
        self.layer = QSpinBox()
        self.layer.setPrefix("after layer ")
        for w in (self.kind_box, self.mode):
            w.currentTextChanged.connect(lambda _: self.redraw())
        self.layer.valueChanged.connect(lambda _: self.redraw())
        top = QHBoxLayout()
        for w in (self.kind_box, self.mode, self.layer):
            top.addWidget(w)
        top.addStretch(1)
        self.plot = TokenMatrix(state)
        self.image = self.plot.image
        self.note = QLabel(" ")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        state.trace_changed.connect(self.set_trace)
        if state.trace is not None:
            self.set_trace(state.trace)

    def set_trace(self, trace) -> None:
        kinds = trace.kinds if trace else []
        fill_kind_box(self.kind_box, kinds, self.kind_box.currentText(), default_last=False)
        if trace is not None and kinds:
            self.layer.setRange(0, trace.shape(kinds[0])[0] - 1)
            if self.layer.value() == 0:
                self.layer.setValue(trace.shape(kinds[0])[0] - 1)
        self.redraw()

    def redraw(self) -> None:
        trace, kind = self.state.trace, self.kind_box.currentText()
        if trace is None or not kind:
            return
        w = trace.weights(kind)
        layer = min(self.layer.value(), w.shape[0] - 1)
        mode = self.mode.currentText()
        if mode.startswith("rollout"):
            if w.shape[-1] != w.shape[-2]:
                self.note.setText("Rollout follows self-attention; choose an encoder or decoder self kind.")
                self.image.clear()
                return
            self.matrix = rollout(w, residual="with residual" in mode)[layer]
            self.note.setText("Row i: how much of each input token reaches position i (rows sum to 1).")
        else:
            self.matrix = layer_aggregate(w, "mean" if mode.startswith("mean") else "max")[layer]
            self.note.setText(" ")
        self.plot.show_matrix(self.matrix, trace.query_tokens(kind), trace.key_tokens(kind),
                              top=float(max(self.matrix.max(), 1e-9)))
