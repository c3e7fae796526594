"""Interventions panel: switch heads off, knock attention edges out, and read what changed.

Everything here writes one record, ``AppState.interventions`` (engine.interventions); the
window re-runs on each change, so the heads grid (ablated tiles marked), Head detail, the
output line, the Decoding panel and the Lens view all show the changed model. Below the
controls: the next-token prediction at the text's last position before and after, computed
in the model worker (engine.interventions.effect: both forwards read the same ids).
"""
from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QListWidget, QPushButton, QVBoxLayout, QWidget

from attnscope.engine.interventions import MEAN, ZERO, Edge, HeadRef
from attnscope.engine.kinds import KEY_SIDE, QUERY_SIDE
from attnscope.gui.widgets.flow import FlowLayout
from attnscope.gui.worker import MODEL, Jobs
from attnscope.engine.traces import reading

ALL = "every"


UPDATING = "updating: the change is measured again once the Run is in…"
NO_MODEL = ("A recording holds attention, not a model: switching heads off or knocking edges out changes a model "
            "as it runs. Open the model it was recorded with and Run the text to use them.")


def _effect(loaded, text, target: str, spec, stop=None):
    from attnscope.engine.interventions import intervention_effect   # torch, in the worker
    from attnscope.engine.traces import stoppable

    with stoppable(stop):      # a newer request ends it within a layer
        result = intervention_effect(loaded, text, spec, target=target or None, k=5)
    tok = _decoder_tokens(loaded)
    return result, {i: tok.tokens([i])[0] for i, _ in result.before + result.after}


def _decoder_tokens(loaded):
    from attnscope.engine.interventions import adapter_tokens

    return adapter_tokens(loaded)


def effect_text(result, names: dict[int, str]) -> str:
    """The change as rich text: the plain model's choice p before -> after and its relative
    change, KL, and both top-5 lists, at the text's last position (a translator reading its own
    output: the first step it changes, engine.interventions.effect), and the engine's notes."""
    pb = dict(result.before)
    pa = dict(result.after)
    chosen = names[result.predicted]
    after_p = pa.get(result.predicted)
    lists = lambda xs: ", ".join(f"{html.escape(names[i])} {p:.3f}" for i, p in xs)  # noqa: E731
    last = result.position % max(1, len(result.token_ids)) == len(result.token_ids) - 1
    where = "after the text" if last else f"at step {result.position + 1}, where the output first changes"
    notes = "".join(f"<br><i>{html.escape(n)}</i>" for n in result.notes)   # e.g. a query left no key
    return (f"Next token {where}: <b>{html.escape(chosen)}</b> p {pb[result.predicted]:.3f} → "
            f"{'%.3f' % after_p if after_p is not None else '(out of the top 5)'} "
            f"(change {result.relative_change:+.1%}); KL {result.kl:.4f} nats; logits moved up to "
            f"{result.logits_max_abs_change:.3f}<br><i>before:</i> {lists(result.before)}"
            f"<br><i>after:</i> {lists(result.after)}{notes}")


class InterventionsPanel(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, "The change could not be measured", lane=MODEL)
        self.head_label = QLabel()
        self.zero_button = QPushButton("Switch head off")
        self.zero_button.setToolTip("Zero ablation: the head's output removed (Shift/Ctrl-click a tile in the grid)")
        self.mean_button = QPushButton("Replace by its mean")
        self.mean_button.setToolTip("Mean ablation: the head's output replaced by its mean over the text's positions")
        self.layer_button = QPushButton("Whole layer off")
        self.restore_button = QPushButton("Restore head")
        self.clear_button = QPushButton("Clear all")
        self.zero_button.clicked.connect(lambda: self._ablate([self._head()], ZERO))
        self.mean_button.clicked.connect(lambda: self._ablate([self._head()], MEAN))
        self.layer_button.clicked.connect(lambda: self._ablate(self._layer_heads(), ZERO))
        self.restore_button.clicked.connect(lambda: self._set(self.state.interventions.restore([self._head()])))
        self.clear_button.clicked.connect(lambda: self._set(type(self.state.interventions)()))

        self.query_box, self.key_box, self.layers_box = QComboBox(), QComboBox(), QComboBox()
        for box, tip in ((self.query_box, "query position (the row); every: a whole column"),
                         (self.key_box, "key position (the column); every: a whole row"),
                         (self.layers_box, "the layers of the selected kind where the edge is blocked")):
            box.setToolTip(tip)
        self.block_button = QPushButton("Knock out")
        self.block_button.setToolTip("Attention knockout: that score set to -inf; the row's other weights renormalise")
        self.block_button.clicked.connect(self._block)

        self.value_box = QCheckBox("Value-weighted attention")
        self.value_box.setToolTip("Every view draws alpha_ij ||f(x_j)|| (Kobayashi et al., 2020): how far each key "
                                  "moves the head's output, each row as shares of its sum; off: the weights")
        self.value_box.setChecked(state.value_weighted)
        self.value_box.toggled.connect(state.set_value_weighted)
        state.measure_changed.connect(self.value_box.setChecked)

        self.active = QListWidget()
        self.active.setMaximumHeight(110)
        self.effect = QLabel()
        self.effect.setTextFormat(Qt.TextFormat.RichText)
        self.effect.setWordWrap(True)
        self.effect.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.head_label)
        layout.addLayout(FlowLayout().addWidgets(self.zero_button, self.mean_button, self.layer_button,
                                                 self.restore_button, self.clear_button))
        layout.addLayout(FlowLayout().addWidgets(QLabel("Knock out query"), self.query_box, QLabel("→ key"),
                                                 self.key_box, QLabel("in"), self.layers_box, self.block_button))
        layout.addWidget(self.value_box)
        layout.addWidget(self.active)
        layout.addWidget(self.effect, 1)
        state.selection_changed.connect(lambda *_: self._refresh())
        state.trace_changed.connect(self._on_trace)
        state.interventions_changed.connect(lambda _spec: self._refresh())
        state.request_started.connect(self._superseded)
        state.request_ended.connect(lambda: self.effect.text() == UPDATING and self._on_trace(self.state.trace))
        self.stale = True
        self._on_trace(state.trace)

    # ---- what is selected --------------------------------------------------------------------
    def _head(self) -> HeadRef:
        return HeadRef(self.state.kind, self.state.layer, self.state.head)

    def _layer_heads(self) -> list[HeadRef]:
        trace = self.state.trace
        heads = trace.shape(self.state.kind)[1] if trace is not None and self.state.kind else 0
        return [HeadRef(self.state.kind, self.state.layer, h) for h in range(heads)]

    def _set(self, spec) -> None:
        self.state.set_interventions(spec)

    def _ablate(self, heads: list[HeadRef], mode: str) -> None:
        if self.state.kind:
            self._set(self.state.interventions.ablate(heads, mode))

    def _block(self) -> None:
        kind = self.state.kind
        if not kind:
            return
        pick = lambda box: None if box.currentData() == ALL else (box.currentData(),)  # noqa: E731
        self._set(self.state.interventions.block(Edge(kind, pick(self.query_box), pick(self.key_box),
                                                      pick(self.layers_box))))

    # ---- showing ------------------------------------------------------------------------------
    def _fill(self, box: QComboBox, items: list[tuple[str, object]]) -> None:
        keep = box.currentData()
        box.clear()
        for text, data in items:
            box.addItem(text, data)
        index = box.findData(keep)
        box.setCurrentIndex(max(0, index))

    def _refresh(self) -> None:
        trace, kind = self.state.trace, self.state.kind
        has = self.state.trace_model is not None and bool(kind)     # a recording has no model to change
        for w in (self.zero_button, self.mean_button, self.layer_button, self.restore_button, self.block_button):
            w.setEnabled(has)
        spec = self.state.interventions
        self.clear_button.setEnabled(not spec.empty)
        self.head_label.setText(f"Selected: {kind} layer {self.state.layer}, head {self.state.head}"
                                + (f" ({spec.mode(self._head())} ablated)" if has and spec.mode(self._head()) else "")
                                if has else NO_MODEL if self.state.recording is not None
                                else "Run a text, then pick a head (click a tile in the heads grid).")
        self.value_box.setEnabled(self.state.recording is None)
        self.active.clear()
        self.active.addItems(spec.describe() or ["Nothing switched off: the model as it is."])
        if has:
            n_layers = trace.shape(kind)[0]
            pieces = reading.pieces(trace)
            for box, side in ((self.query_box, QUERY_SIDE), (self.key_box, KEY_SIDE)):   # ids fed, never merged words
                self._fill(box, [("every", ALL)] + [(f"{i} {t}", i) for i, t in enumerate(pieces[side[kind]])])
            self._fill(self.layers_box, [("all layers", ALL)] + [(f"layer {i}", i) for i in range(n_layers)])

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.stale:
            self._on_trace(self.state.trace)

    def _on_trace(self, trace) -> None:
        self._refresh()
        self.stale = not self.isVisible()      # measured when the panel is shown, not behind a tab
        if self.stale:
            self.jobs.cancel()
            return
        loaded, spec = self.state.trace_model, self.state.interventions
        if trace is None or loaded is None or spec.empty:
            self.jobs.cancel()
            self.effect.setText("" if spec.empty or self.state.recording is not None
                                else "Run the text to see what the change does.")
            return
        if not loaded.generates:
            self.effect.setText(("An encoder predicts no next token" if loaded.role == "encoder" else
                                 "A model run on NDIF has no weights here to measure the next token with")
                                + ": the heads grid and Head detail show how its attention changed.")
            return
        self.effect.setText("measuring the change…")
        self.jobs.start(_effect, loaded, self.state.prompt, self.state.target, spec,
                        on_returned=lambda r: self.effect.setText(effect_text(*r)))

    def _superseded(self) -> None:
        """A newer request (a Run, another text or change): the measure on its way is the old one's."""
        if self.jobs.busy:
            self.jobs.cancel()
        if self.effect.text():
            self.effect.setText(UPDATING)

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        super().closeEvent(event)
