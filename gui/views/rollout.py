"""Rollout: how much of each input token reaches each position after layer l (Abnar and
Zuidema's attention rollout, residual included), or a layer's mean / max over heads.

Kind and layer follow the state's selection, but the view opens through all layers (the last
layer): "after layer 0" is one layer's mean of heads, not a rollout. It keeps its layer while a
new text runs, and goes to a layer chosen in it or in another view. The matrix is computed in a
worker."""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import QComboBox, QSpinBox, QVBoxLayout, QWidget

from attnscope.engine.inspection import trace_rollout
from attnscope.gui.drawing.drawings import RolloutDrawing
from attnscope.engine.kinds import CROSS
from attnscope.engine.traces import reading
from attnscope.gui.widgets.flow import FlowLayout
from attnscope.gui.drawing.kinds import is_signed, pooling_for
from attnscope.gui.drawing.prepared import PreparedView, prepares
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.widgets.token_matrix import TokenMatrix
from attnscope.gui.widgets.kind_box import fill_kind_box

MODES = ("rollout (with residual)", "rollout (attention only)", "mean of heads", "max of heads")


POOLED_PIXELS = 1024      # a layer's mean / max over heads of a longer text is pooled to this many cells a side
NOT_SELF = "Rollout follows self-attention; choose an encoder or decoder self kind."
NOT_DISTRIBUTION = ("Rollout multiplies distributions (rows that sum to 1); effective attention is signed mixing: "
                    "choose mean or max of heads, or a softmax kind.")
TOO_LONG = "Not drawn: this text is too long for rollout's maps (the numbers are below)."


@prepares
def rollout_drawing(trace, kind: str, layer: int, mode: str, report=None, stop=None) -> RolloutDrawing:
    """The matrix Rollout shows, its labels and its note (a worker). Rollout multiplies every
    layer's mean of heads up to ``layer`` (engine.inspection.analysis.trace_rollout: row blocks
    on a long text, ``report`` and ``stop`` between layers); a text longer than POOLED_PIXELS a
    side is drawn pooled, each cell the max over its block of tokens."""
    layer = min(layer, trace.shape(kind)[0] - 1)
    if not mode.startswith("rollout"):
        return heads_drawing(trace, kind, layer, mode)
    q, k = reading.query_tokens(trace, kind), reading.key_tokens(trace, kind)
    if len(q) != len(k) or kind == CROSS:
        return RolloutDrawing(matrix=None, note=NOT_SELF)
    if is_signed(kind):     # rows renormalised to sum to 1: a row of signed mixing summing near 0 flips or explodes
        return RolloutDrawing(matrix=None, note=NOT_DISTRIBUTION)
    matrix = trace_rollout(trace, kind, layer, residual="with residual" in mode, report=report, stop=stop)
    note = "Row i: how much of each input token reaches position i (rows sum to 1)."
    if len(q) <= POOLED_PIXELS:
        return RolloutDrawing(matrix=matrix, note=note, rows=q, cols=k, top=float(max(matrix.max(), 1e-9)))
    import torch

    from attnscope.engine.traces import pool_2d

    matrix = pool_2d(torch.from_numpy(matrix), POOLED_PIXELS, POOLED_PIXELS, pooling_for(kind)).numpy()
    return RolloutDrawing(matrix=matrix, note=f"{len(q):,} tokens: each cell the {_peak(kind)} over a block of tokens. "
                          + note,
                          rows=_block_labels(q, matrix.shape[0]), cols=_block_labels(k, matrix.shape[1]),
                          top=float(max(matrix.max(), 1e-9)))


def _block_labels(tokens: list[str], n: int) -> list[str]:
    """Each of ``n`` blocks of ``tokens`` labelled by its first token, with its position."""
    from attnscope.engine.traces import bin_span

    return [f"{bin_span(len(tokens), n, i)[0]} {tokens[bin_span(len(tokens), n, i)[0]]}" for i in range(n)]


def _peak(kind: str) -> str:
    """What a pooled cell of ``kind`` keeps of its block (engine.traces.pooling)."""
    return "value of largest magnitude" if is_signed(kind) else "max"


def heads_drawing(trace, kind: str, layer: int, mode: str) -> RolloutDrawing:
    """A layer's mean / max over heads: that layer's heads only (it asked for every head of every
    layer, and a long text was refused). A text longer than POOLED_PIXELS a side is drawn as Head
    detail draws it, each pixel the max over its block of tokens (engine.traces.viewport)."""
    from attnscope.engine.traces import viewport_weights

    how = "mean of heads" if mode.startswith("mean") else "max of heads"
    q, k = reading.query_tokens(trace, kind), reading.key_tokens(trace, kind)
    if max(len(q), len(k)) <= POOLED_PIXELS or trace.recording is None:
        import numpy as np
        import torch
        from attnscope.engine.traces import combine_heads   # a signed kind's max: largest magnitude
        layer_weights = np.ascontiguousarray(reading.layer(trace, kind, layer))     # (H, Tq, Tk)
        matrix = combine_heads(torch.from_numpy(layer_weights), how, kind).numpy()
        return RolloutDrawing(matrix=matrix, note=" ", rows=q, cols=k, top=float(max(matrix.max(), 1e-9)))
    matrix = viewport_weights(trace, kind, layer, 0, how, (0, len(q)), (0, len(k)), (POOLED_PIXELS, POOLED_PIXELS))
    rows, cols = _block_labels(q, matrix.shape[0]), _block_labels(k, matrix.shape[1])
    note = (f"{len(q):,} x {len(k):,} tokens: each cell the {_peak(kind)} over a block of tokens of the layer's {how} "
            "(Head detail zooms to every cell).")
    return RolloutDrawing(matrix=matrix, note=note, rows=rows, cols=cols, top=float(max(matrix.max(), 1e-9)))


@dataclass(frozen=True)
class RolloutOptions(ViewOptions):
    """Rollout's choice of map (settings "rollout/...")."""
    PREFIX = "rollout"
    mode: str = option(MODES[0], "mode")       # rollout with / without the residual, or a layer's mean / max


class RolloutView(PreparedView, QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._init_prepared("Rollout")
        self.matrix = None
        self.kind_box = QComboBox()
        self.kind_box.currentTextChanged.connect(lambda k: k and self.state.select(kind=k))
        self.mode = QComboBox()
        self.mode.addItems(MODES)
        self.mode.currentTextChanged.connect(self.set_trace)   # rollout lists the self kinds only
        self.layer = QSpinBox()
        self.layer.setPrefix("after layer ")
        self.layer.valueChanged.connect(self._choose_layer)
        self.chosen_layer: int | None = None    # None: through all layers, whatever their number
        self._selected_layer = state.layer      # the selection's layer when last seen: a change is a choice
        top = FlowLayout().addWidgets(self.kind_box, self.mode, self.layer)
        self.plot = TokenMatrix(state)
        self.image = self.plot.image
        self.note = ElidedLabel(" ")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        state.model_changed.connect(self._on_model)     # before its trace_changed(None)
        state.trace_changed.connect(self._on_trace)
        state.selection_changed.connect(self._on_selection)
        bind_options(self, RolloutOptions)
        self.set_trace(state.trace)

    def shown_kind(self) -> str | None:
        """The state's kind, or, while rolling out and the state is on cross attention (which
        Rollout cannot follow), the trace's first self kind: the view opens on something to show."""
        trace, kind = self.state.trace, self.state.kind
        if trace is None or kind not in trace.kinds or kind != CROSS or not self._rolling():
            return kind
        selves = [k for k in trace.kinds if k != CROSS]
        return selves[0] if selves else kind

    def _last_layer(self, kind: str | None) -> int | None:
        trace = self.state.trace
        return trace.shape(kind)[0] - 1 if trace is not None and kind in trace.kinds else None

    def shown_layer(self, kind: str) -> int:
        """The layer rolled out to: the one chosen, else the last (through all layers)."""
        last = self._last_layer(kind)
        return last if self.chosen_layer is None else min(self.chosen_layer, last)

    def _choose_layer(self, layer: int) -> None:
        """A layer chosen in this view: shown here, and selected for every view."""
        self.chosen_layer = None if layer == self.layer.maximum() else layer
        self._selected_layer = layer            # the selection's echo is no news
        before = self.state.layer
        self.state.select(layer=layer)          # every view follows (this one through set_trace)
        if self.state.layer == before:          # no echo: the selection was there already
            self.redraw()

    def _on_selection(self, _kind: str, layer: int, _head: int) -> None:
        """Follow a layer selected elsewhere (a head clicked in the overview); another head of
        the same layer keeps the layer shown."""
        if layer != self._selected_layer:
            self._selected_layer = layer
            self.chosen_layer = None if layer == self._last_layer(self.shown_kind()) else layer
        self.set_trace()

    def _on_trace(self, _trace) -> None:
        self._selected_layer = self.state.layer     # fitted to the new trace without a selection signal
        self.set_trace()

    def _on_model(self, _loaded) -> None:
        self.chosen_layer = None                    # another model opens through all its layers

    def _rolling(self) -> bool:
        return self.mode.currentText().startswith("rollout")

    def set_trace(self, *_args) -> None:
        trace, kind = self.state.trace, self.shown_kind()
        kinds = trace.kinds if trace else []
        fill_kind_box(self.kind_box, [k for k in kinds if k != CROSS] or kinds if self._rolling() else kinds, kind)
        if trace is not None and kind in trace.kinds:
            self.layer.blockSignals(True)
            self.layer.setRange(0, trace.shape(kind)[0] - 1)
            self.layer.setValue(self.shown_layer(kind))
            self.layer.blockSignals(False)
        self.redraw()

    def drawing_job(self):
        trace, kind = self.state.trace, self.shown_kind()
        if trace is None or kind not in trace.kinds:
            return None
        return rollout_drawing, trace, kind, self.shown_layer(kind), self.option_binding.options.mode

    def clear_drawing(self) -> None:
        self.matrix = None
        self.plot.clear_matrix()
        self.note.setText("Nothing to show yet: run a text.")

    def drawing_progress(self, record) -> None:
        """A long text's rollout multiplies a layer at a time: how far, under the map."""
        _, done, total = record
        self.note.setText(f"Rolling out a long text: {done} of {total} layers…")

    def show_refusal(self, reason: str) -> None:
        """The reason, with its numbers, under the map; where the map would be, a line that says
        why it is empty (it read "Nothing to show yet: run a text." after a Run)."""
        super().show_refusal(reason)
        self.plot.clear_matrix(TOO_LONG)

    def apply_drawing(self, d: RolloutDrawing) -> None:
        self.matrix = d.matrix
        if self.matrix is None:   # the message once, where the map would be
            self.note.setText(" ")
            self.plot.clear_matrix(d.note)
            return
        self.note.setText(d.note)
        self.plot.show_matrix(self.matrix, d.rows, d.cols, top=d.top, kind=self.kind_box.currentText() or None)

    def export_target(self) -> QWidget:
        return self.plot
