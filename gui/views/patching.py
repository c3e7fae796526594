"""Patching: which heads and layers carry a behaviour, over a clean and a corrupted text.

The user types a clean text and a corrupted one of the same length and picks two answers
(offered: each run's likeliest next tokens); the engine (engine.experiments) patches each
head, position or layer of one run into the other, or estimates it from one backward, or
splits the clean logit difference into each head's share. The result is drawn as one image,
normalised ((patched - corrupt) / (clean - corrupt): 1 is the clean behaviour back, 0 none of
it; for direct logit attribution, shares of the clean logit difference) on a diverging map
centred at 0; hover reads the raw metric and the normalised value; clicking a head opens it
in Head detail on the clean text. With the window's chat on (an instruction-tuned model), both
texts are read as the user's turn of the same chat (gui.state.AppState.as_prompt).

The work runs in the model worker as a generator: an estimate first, then progress by layer,
stoppable. A result belongs to the model, texts and answers it was computed for: once any
of them changes it is marked stale and greyed, never shown as current.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QProgressBar, QPushButton,
                               QVBoxLayout, QWidget)

from engine.experiments.names import HEAD_KIND, POINTS, SEQ2SEQ_POINTS
from engine.inputs import Chat
from gui.colormaps import attach_colorbar
from gui.elided import ElidedLabel
from gui.flow import FlowLayout
from gui.theme import tint
from gui.views.empty import hide_empty, show_empty
from gui.views.token_labels import fitting_ticks
from gui.worker import MODEL, Jobs

METHODS = {"exact": "exact patching", "attribution": "attribution patching (one backward)",
           "dla": "direct logit attribution"}
STALE = "Stale: the texts, answers or model changed since these results were computed; press Patch to compute them anew."
DIVERGING = "CET-D1"      # blue - white - red, centred at 0
ANSWER_SEP = "  ▸ "       # an offered answer reads 'id:N  ▸ token  p'


@dataclass
class Drawing:
    """What the image shows, computed in the worker: finished arrays and labels."""
    normalised: np.ndarray          # (rows, cols) float32
    raw: np.ndarray                 # (rows, cols) float64: the metric of each patched run (or share)
    rows: list[str]
    cols: list[str]
    heads: list[tuple[str, int, int] | None]   # per (row, col) flattened: the (heads' point, layer, head) or None
    title: str
    span: float                     # the colours run from -span to span


def drawing_of(result, point: str) -> Drawing:
    """A PatchResult as one image: heads (layers x heads); heads by position (layer.head x
    positions); a layer's point by position (layers x positions); DLA (layers x heads + MLP).
    An encoder-decoder's encoder heads are by source position, everything else by the
    decoder's positions."""
    norm, raw = result.normalised(), result.results
    side = "clean" if point.startswith("encoder") or "target" not in result.tokens else "target"
    tokens = [f"{i} {t}" for i, t in enumerate(result.tokens[side])]
    heads_of = point.replace("-by-pos", "")
    if result.method == "dla":
        img = np.concatenate([norm["heads"], norm["mlp"][:, None]], axis=1)
        values = np.concatenate([raw["heads"], raw["mlp"][:, None]], axis=1)
        layers, heads = raw["heads"].shape
        cols = [f"H{h}" for h in range(heads)] + ["MLP"]
        cells = [("heads", lay, h) if h < heads else None for lay in range(layers) for h in range(heads + 1)]
        title = (f"share of the clean logit difference {result.clean:.3f} (embeddings {float(raw['embed']):.3f}, "
                 f"biases {float(raw['bias']):.3f})")
        rows = [f"L{lay}" for lay in range(layers)]
    elif point in HEAD_KIND:
        img, values = norm[point], raw[point]
        layers, heads = values.shape
        rows, cols = [f"L{lay}" for lay in range(layers)], [f"H{h}" for h in range(heads)]
        cells = [(point, lay, h) for lay in range(layers) for h in range(heads)]
        title = f"each {HEAD_KIND[point]} head's output patched, all positions"
    elif heads_of in HEAD_KIND:
        layers, t, heads = raw[point].shape
        img = norm[point].transpose(0, 2, 1).reshape(layers * heads, t)          # rows layer.head
        values = raw[point].transpose(0, 2, 1).reshape(layers * heads, t)
        rows, cols = [f"{lay}.{h}" for lay in range(layers) for h in range(heads)], tokens
        cells = [(heads_of, lay, h) for lay in range(layers) for h in range(heads) for _ in range(t)]
        title = f"each {HEAD_KIND[heads_of]} head's output patched at one position"
    else:
        img, values = norm[point], raw[point]
        rows, cols = [f"L{lay}" for lay in range(values.shape[0])], tokens
        cells = [None] * values.size
        title = {"resid-pre": "the residual stream before each layer", "attn-out": "each layer's attention output",
                 "mlp-out": "each layer's MLP output"}[point] + ", patched at one position"
    finite = np.abs(img[np.isfinite(img)])
    span = float(max(1.0 if result.method != "dla" else 0.0, finite.max() if finite.size else 1.0)) or 1.0
    return Drawing(np.asarray(img, np.float32), np.asarray(values, np.float64), rows, cols, cells,
                   f"{METHODS[result.method]}: {title}", span)


def _patch_job(loaded, clean, corrupt, answer: str, wrong: str, target: str, method: str, point: str,
               noising: bool, stop=None):
    """In the model worker: yields engine Progress records; returns (PatchResult, Drawing).
    ``clean``, ``corrupt``: the texts as the model reads them (str or engine.inputs.Chat)."""
    from engine.experiments.pairs import PromptPair, frame_pair
    from engine.experiments.run import experiment

    pair = frame_pair(loaded, PromptPair(clean, corrupt, answer, wrong), target or None)
    result = yield from experiment(loaded, pair, method, (point,), noising, stop=stop)
    return result, drawing_of(result, point)


def _answers_job(loaded, clean, corrupt, target: str):
    """Each text's likeliest next tokens ([] for a text not given: "")."""
    from engine.experiments.pairs import next_tokens

    return [next_tokens(loaded, text, target=target) if text else [] for text in (clean, corrupt)]


def _words(prompt) -> str:
    """The words typed of a prompt: a chat's user turn, or the text."""
    return prompt.turns[-1][1] if isinstance(prompt, Chat) else prompt


def answer_spec(box: QComboBox) -> str:
    """What an answer box holds as the engine reads it: an offered 'id:N  ▸ token' is id:N;
    anything typed is itself (a leading space kept: ' Mary')."""
    return box.currentText().split(ANSWER_SEP)[0]


EMPTY = "Type a clean and a corrupted text, choose the answers, press Patch."


class PatchingPanel(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, "Patching could not finish", lane=MODEL)
        self.answer_jobs = Jobs(self, "The answers could not be offered", lane=MODEL)
        self.clean_edit, self.corrupt_edit, self.target_edit = QLineEdit(), QLineEdit(), QLineEdit()
        self.clean_edit.setPlaceholderText("clean text")
        self.corrupt_edit.setPlaceholderText("corrupted text (as many tokens)")
        self.target_edit.setPlaceholderText("decoder prefix (may be empty)")
        self.target_edit.setToolTip("an encoder-decoder's decoder prefix, the same for both texts: the answers are the "
                                    "next token after it")
        self.target_label = QLabel("target")
        self.answer_box, self.wrong_box = QComboBox(), QComboBox()
        for box, tip in ((self.answer_box, "the clean answer: offered from the clean run's top tokens, or type one "
                                           "token (' Mary') or id:N"),
                         (self.wrong_box, "the other answer: offered from the corrupted run's top tokens")):
            box.setEditable(True)
            box.setMinimumContentsLength(20)
            box.setToolTip(tip)
            box.currentTextChanged.connect(self._inputs_changed)
        self.what_box = QComboBox()
        self.what_box.addItems(POINTS)
        self.what_box.setToolTip("what to patch: each head (all positions or one position), or a layer's residual "
                                 "stream, attention output or MLP output at one position")
        self.method_box = QComboBox()
        for key, label in METHODS.items():
            self.method_box.addItem(label, key)
        self.noising_box = QCheckBox("noising")
        self.noising_box.setToolTip("run the clean text with one corrupted activation put in (default: the "
                                    "corrupted text with one clean activation, denoising)")
        self.run_button, self.stop_button = QPushButton("Patch"), QPushButton("Stop")
        self.run_button.clicked.connect(self.run)
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(180)
        self.progress.setVisible(False)
        texts = QHBoxLayout()             # the texts take the width: they are sentences
        for label, edit in (("clean", self.clean_edit), ("corrupted", self.corrupt_edit)):
            texts.addWidget(QLabel(label))
            texts.addWidget(edit, 1)
        texts.addWidget(self.target_label)
        texts.addWidget(self.target_edit, 1)
        choices = FlowLayout().addWidgets(QLabel("answer"), self.answer_box, QLabel("vs"), self.wrong_box,
                                          self.what_box, self.method_box, self.noising_box, self.run_button,
                                          self.stop_button, self.progress)
        self.status = ElidedLabel(" ")
        self.mark = QLabel(STALE)
        self.mark.setWordWrap(True)
        tint(self.mark, "warning")
        self.mark.setVisible(False)
        self.plot = pg.PlotWidget()
        self.item = self.plot.getPlotItem()
        self.item.invertY(True)
        self.item.setMouseEnabled(False, False)
        self.item.hideButtons()
        self.image = pg.ImageItem(axisOrder="row-major")
        self.item.addItem(self.image)
        self.bar = attach_colorbar(self.item, self.image, pg.colormap.get(DIVERGING), (-1.0, 1.0))
        self.readout = ElidedLabel(" ")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(texts)
        layout.addLayout(choices)
        layout.addWidget(self.status)
        layout.addWidget(self.mark)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.readout)

        self.result = None            # the PatchResult shown
        self.drawing: Drawing | None = None
        self.shown_for = None         # inputs() it was computed for
        self.kept: dict[str, tuple] = {}   # method -> (inputs, point, noising, result): for the agreement
        self._answers_timer = QTimer(self, singleShot=True, interval=400)
        self._answers_timer.timeout.connect(self.offer_answers)
        for edit in (self.clean_edit, self.corrupt_edit, self.target_edit):
            edit.textChanged.connect(self._texts_changed)
        self.plot.scene().sigMouseMoved.connect(self._on_hover)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        state.model_changed.connect(self._on_model)
        self._form = (state.chat, state.system)     # the chat form the answers were offered for
        state.trace_changed.connect(self._on_trace)
        self._on_model(state.loaded)

    # ---- inputs ---------------------------------------------------------------------------------
    def inputs(self) -> tuple:
        """(model, clean, corrupt, answer, wrong, target): the texts as the model reads them, in the
        window's chat form (toggling chat makes a result stale as an edit does)."""
        return (id(self.state.loaded.model) if self.state.loaded is not None else None,
                self.state.as_prompt(self.clean_edit.text()), self.state.as_prompt(self.corrupt_edit.text()),
                answer_spec(self.answer_box), answer_spec(self.wrong_box), self.target())

    def target(self) -> str:
        return self.target_edit.text() if self.target_edit.isVisible() else ""

    def patchable(self) -> bool:
        loaded = self.state.loaded
        return loaded is not None and loaded.role in ("decoder", "encoder-decoder")

    def current(self) -> bool:
        """The result shown belongs to the model, texts and answers on screen."""
        return self.result is not None and self.shown_for == self.inputs()

    def _on_model(self, loaded) -> None:
        self.jobs.cancel()
        self.answer_jobs.cancel()
        self.kept.clear()
        ok = self.patchable()
        self.run_button.setEnabled(ok)
        seq2seq = loaded is not None and loaded.role == "encoder-decoder"
        self.target_label.setVisible(seq2seq)
        self.target_edit.setVisible(seq2seq)
        chosen = self.what_box.currentText()
        self.what_box.blockSignals(True)
        self.what_box.clear()
        self.what_box.addItems(SEQ2SEQ_POINTS if seq2seq else POINTS)
        self.what_box.setCurrentText(chosen)
        self.what_box.blockSignals(False)
        if loaded is not None and not ok:
            self.status.setText(f"{loaded.name} is an encoder without a language-model head: it predicts no next "
                                "token, so there is nothing to patch.")
        if self.result is None:      # the plot's own line says the same as the status, not "press Patch"
            show_empty(self.item, EMPTY if ok or loaded is None else
                       "Nothing to patch here: open a model that predicts the next token (a decoder or an "
                       "encoder-decoder).")
        for box in (self.answer_box, self.wrong_box):
            box.blockSignals(True)
            box.clear()
            box.blockSignals(False)
        self._inputs_changed()
        self._texts_changed()

    def _on_trace(self, _trace) -> None:
        """A Run may have changed the chat form the texts are read in: then they are other texts."""
        form = (self.state.chat, self.state.system)
        if form != self._form:
            self._form = form
            self._texts_changed()

    def _texts_changed(self) -> None:
        self._inputs_changed()
        if self.patchable():
            self._answers_timer.start()

    def _inputs_changed(self, *_args) -> None:
        stale = self.result is not None and not self.current()
        self.mark.setVisible(stale)
        self.image.setOpacity(0.3 if stale else 1.0)

    def offer_answers(self) -> None:
        """The clean run's and the corrupted run's likeliest next tokens, offered as answers."""
        loaded = self.state.loaded
        if loaded is None or not (self.clean_edit.text().strip() or self.corrupt_edit.text().strip()):
            return
        texts = [self.state.as_prompt(e.text()) if e.text().strip() else "" for e in (self.clean_edit, self.corrupt_edit)]
        self.answer_jobs.start(_answers_job, loaded, *texts, self.target(),
                               on_returned=self._show_answers, on_error=lambda _exc: None)

    def _show_answers(self, tops) -> None:
        for box, top in zip((self.answer_box, self.wrong_box), tops):
            typed = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItems([f"id:{i}{ANSWER_SEP}{tok}  {p:.0%}" for i, tok, p in top])
            offered = [box.itemText(k) for k in range(box.count())]
            box.setCurrentText(typed if typed and typed not in offered and not typed.startswith("id:") else
                               (offered[0] if offered else typed))
            box.blockSignals(False)
        if self.wrong_box.count() > 1 and answer_spec(self.wrong_box) == answer_spec(self.answer_box):
            self.wrong_box.setCurrentIndex(1)    # two different answers
        self._inputs_changed()

    # ---- running --------------------------------------------------------------------------------
    def run(self) -> None:
        loaded = self.state.loaded
        if loaded is None:
            return
        inputs = self.inputs()
        method, point, noising = self.method_box.currentData(), self.what_box.currentText(), self.noising_box.isChecked()
        self.progress.setValue(0)
        self.progress.setVisible(True)
        self.stop_button.setEnabled(True)
        self.status.setText("Starting…")
        self.jobs.start(_patch_job, loaded, *inputs[1:], method, point, noising,
                        on_yielded=self._on_progress,
                        on_returned=lambda out: self._done(out, inputs, point, noising),
                        on_error=self._failed, on_finished=self._finished)

    def stop(self) -> None:
        self.jobs.cancel()
        self._finished()
        self.status.setText("Stopped; " + ("the result below is the last finished one." if self.result is not None
                                           else "nothing was computed."))

    def _on_progress(self, p) -> None:
        if p.total:
            self.progress.setMaximum(p.total)
            self.progress.setValue(p.done)
        self.status.setText(p.text)

    def _failed(self, exc) -> None:
        from gui.worker import error_message

        self.status.setText(error_message(exc))
        self._finished()

    def _finished(self) -> None:
        self.progress.setVisible(False)
        self.stop_button.setEnabled(False)

    def _done(self, out, inputs: tuple, point: str, noising: bool) -> None:
        result, drawing = out
        self.result, self.drawing, self.shown_for = result, drawing, inputs
        self.kept[result.method] = (inputs, point, noising, result)
        self._finished()
        self.draw()
        scale = ("colour: each share / the clean logit difference" if result.method == "dla" else
                 "colour: (patched - corrupted) / (clean - corrupted), 1 = the clean behaviour back, 0 = none of it")
        self.status.setText(f"clean {result.metric} {result.clean:.3f}, corrupted {result.corrupt:.3f}"
                            f"{' (noising)' if noising else ''}; {scale}. {self._agreement(inputs, point, noising)}")

    def _agreement(self, inputs, point, noising) -> str:
        """Where exact and attribution patching both ran on the same inputs: their correlation."""
        from engine.experiments.attribution import agreement

        both = [self.kept.get(m) for m in ("exact", "attribution")]
        if any(k is None or k[:3] != (inputs, point, noising) for k in both):
            return ""
        r = agreement(both[0][3], both[1][3]).get(point, float("nan"))
        return f"Attribution against exact patching over these cells: r = {r:.3f}."

    # ---- drawing --------------------------------------------------------------------------------
    def draw(self) -> None:
        d = self.drawing
        if d is None:
            return
        hide_empty(self.item, ("left", "bottom"))
        self.image.setImage(d.normalised, autoLevels=False, levels=(-d.span, d.span))
        self.bar.setLevels((-d.span, d.span))
        self.item.setTitle(d.title)
        self.item.getAxis("left").setTicks([fitting_ticks(d.rows, max(1.0, self.item.vb.height()), 14)])
        self.item.getAxis("bottom").setTicks([fitting_ticks(d.cols, max(1.0, self.item.vb.width()), 60)])
        self.item.setRange(xRange=(0, len(d.cols)), yRange=(0, len(d.rows)), padding=0)
        self._inputs_changed()

    def cell_at_scene(self, scene_pos) -> tuple[int, int] | None:
        d = self.drawing
        if d is None or not self.item.vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self.item.vb.mapSceneToView(scene_pos)
        r, c = int(np.floor(p.y())), int(np.floor(p.x()))
        return (r, c) if 0 <= r < len(d.rows) and 0 <= c < len(d.cols) else None

    def describe(self, r: int, c: int) -> str:
        d, res = self.drawing, self.result
        what = "share" if res.method == "dla" else ("estimated metric" if res.method == "attribution" else "patched")
        text = (f"{d.rows[r]}, {d.cols[c]}: {what} {d.raw[r, c]:.4f}, normalised {d.normalised[r, c]:.3f} "
                f"(clean {res.clean:.3f}, corrupted {res.corrupt:.3f})")
        return ("STALE " + text) if not self.current() else text

    def _on_hover(self, scene_pos) -> None:
        cell = self.cell_at_scene(scene_pos)
        self.readout.setText(self.describe(*cell) if cell is not None else " ")

    def _on_click(self, event) -> None:
        cell = self.cell_at_scene(event.scenePos())
        if cell is None:
            return
        head = self.drawing.heads[cell[0] * len(self.drawing.cols) + cell[1]]
        if head is not None:
            self.open_head(*head)

    def open_head(self, point: str, layer: int, head: int) -> None:
        """The head in Head detail, on the clean text (Run anew unless the window shows it)."""
        clean = self.shown_for[1] if self.shown_for else self.state.as_prompt(self.clean_edit.text())
        if self.state.trace is None or self.state.prompt != clean or self.state.recording is not None:
            self.state.request_run(_words(clean))
        self.state.select_head(HEAD_KIND[point], layer, head)

    def export_target(self) -> QWidget:
        return self.plot

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        self.answer_jobs.shutdown()
        super().closeEvent(event)
