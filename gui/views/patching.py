"""Patching: which heads and layers carry a behaviour, over a clean and a corrupted text.

The user types a clean text and a corrupted one of the same length and picks two answers
(offered: each run's likeliest next tokens; patching_answers.py) and a metric (the answers'
logit difference, or the answer's log-probability); the engine (engine.experiments) patches
each head, position or layer of one run into the other, or estimates it from one backward, or
splits the clean logit difference into each head's share. The result is drawn as one image on
a diverging map centred at 0 (patching_drawing.py: normalised for patching, the shares
themselves for direct logit attribution); hover reads the raw numbers; clicking a head opens
it in Head detail on the clean text. With the window's chat on (an instruction-tuned model),
both texts are read as the user's turn of the same chat (gui.state.AppState.as_prompt).
Every forward runs with the window's interventions (a switched-off head stays off), and the
status line names them.

The work runs in the model worker as a generator: an estimate first, then progress by layer,
stoppable. A result belongs to the model, texts, answers and interventions it was computed
for: once any of them changes it is marked stale and greyed, never shown as current. Its
errors are said once, in the panel's status line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QProgressBar,
                               QPushButton, QVBoxLayout, QWidget)

from attnscope.engine.experiments import DLA, HEAD_KIND, LOGIT_DIFF, LOGPROB, POINTS, SEQ2SEQ_POINTS
from attnscope.engine.inputs import Chat
from attnscope.engine.interventions import Interventions
from attnscope.gui.colormaps import attach_colorbar
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.widgets.flow import FlowLayout
from attnscope.gui.settings import app_settings
from attnscope.gui.theme import tint
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.drawing.empty import hide_empty, show_empty
from attnscope.gui.drawing.patching_answers import AnswerBox
from attnscope.gui.drawing.patching_drawing import DIVERGING, METHODS, Drawing, describe_cell, dla_sums, drawing_of
from attnscope.gui.widgets.token_labels import fitting_ticks
from attnscope.gui.worker import MODEL, Jobs, error_message

STALE = ("Stale: the texts, answers, interventions or model changed since these results were computed; press "
         "Patch to compute them anew.")
METRICS = {LOGIT_DIFF: "logit difference", LOGPROB: "log-probability of the answer"}


class PatchInputs(NamedTuple):
    """What a result is computed for: once any of it changes, the result shown is stale."""
    model: int | None                  # id of the model object
    clean: str | Chat                  # the texts as the model reads them
    corrupt: str | Chat
    answer: str
    wrong: str
    target: str
    interventions: Interventions


@dataclass(frozen=True)
class PatchingOptions(ViewOptions):
    """The panel's choices of how to patch, kept across starts (settings "patching/<name>",
    gui.view_options)."""
    PREFIX = "patching"
    method: str = option("exact", "method_box")        # a key of METHODS
    point: str = option(POINTS[0], "what_box")
    metric: str = option(LOGIT_DIFF, "metric_box")     # a key of METRICS
    noising: bool = option(False, "noising_box")

    def valid(self) -> bool:
        return self.method in METHODS and self.metric in METRICS and self.point in SEQ2SEQ_POINTS

    @classmethod
    def saved(cls) -> "PatchingOptions":
        return cls.restore(app_settings())


def _patch_job(loaded, inputs: PatchInputs, options: PatchingOptions, stop=None):
    """In the model worker: yields engine Progress records; returns (PatchResult, Drawing).
    ``inputs.clean``, ``inputs.corrupt``: the texts as the model reads them (str or Chat)."""
    from attnscope.engine.experiments import PromptPair, frame_pair
    from attnscope.engine.experiments import experiment

    pair = frame_pair(loaded, PromptPair(inputs.clean, inputs.corrupt, inputs.answer, inputs.wrong),
                      inputs.target or None)
    result = yield from experiment(loaded, pair, options.method, (options.point,), options.noising, options.metric,
                                   stop=stop, interventions=inputs.interventions)
    return result, drawing_of(result, options.point)


def _answers_job(loaded, clean, corrupt, target: str, keep: tuple, interventions: Interventions):
    """Each text's likeliest next tokens and the id its box keeps ([] for a text not given: "")."""
    from attnscope.engine.experiments import next_tokens

    return [next_tokens(loaded, text, target=target, keep=[i for i in [kept] if i is not None],
                        interventions=interventions) if text else []
            for text, kept in zip((clean, corrupt), keep)]


def _words(prompt) -> str:
    """The words typed of a prompt: a chat's user turn, or the text."""
    return prompt.turns[-1][1] if isinstance(prompt, Chat) else prompt


EMPTY = "Type a clean and a corrupted text, choose the answers, press Patch."


class PatchingPanel(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, "Patching could not finish", lane=MODEL, announce=False)
        self.answer_jobs = Jobs(self, "The answers could not be offered", lane=MODEL, announce=False)
        self.clean_edit, self.corrupt_edit, self.target_edit = QLineEdit(), QLineEdit(), QLineEdit()
        self.clean_edit.setPlaceholderText("clean text")
        self.corrupt_edit.setPlaceholderText("corrupted text (as many tokens)")
        self.target_edit.setPlaceholderText("decoder prefix (may be empty)")
        self.target_edit.setToolTip("an encoder-decoder's decoder prefix, the same for both texts: the answers are the "
                                    "next token after it")
        self.target_label = QLabel("target")
        self.answer_box = AnswerBox("the clean answer: offered from the clean run's top tokens, or type one token "
                                    "(' Mary') or id:N")
        self.wrong_box = AnswerBox("the other answer: offered from the corrupted run's top tokens")
        for box in (self.answer_box, self.wrong_box):
            box.currentTextChanged.connect(self._inputs_changed)
        self.what_box = QComboBox()
        self.what_box.addItems(POINTS)
        self.what_box.setToolTip("what to patch: each head (all positions or one position), or a layer's residual "
                                 "stream, attention output or MLP output at one position")
        self.method_box = QComboBox()
        for key, label in METHODS.items():
            self.method_box.addItem(label, key)
        self.metric_box = QComboBox()
        for key, label in METRICS.items():
            self.metric_box.addItem(label, key)
        self.metric_box.setToolTip("what each run is measured by at the last position: the answers' logit difference, "
                                   "or the answer's log-probability (direct logit attribution splits the logit "
                                   "difference only)")
        self.noising_box = QCheckBox("noising")
        self.noising_box.setToolTip("run the clean text with one corrupted activation put in (default: the "
                                    "corrupted text with one clean activation, denoising)")
        bind_options(self, PatchingOptions)
        self._metric_for_method()
        for signal in (self.what_box.currentIndexChanged, self.method_box.currentIndexChanged,
                       self.metric_box.currentIndexChanged, self.noising_box.toggled):
            signal.connect(self._options_changed)
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
                                          self.what_box, self.method_box, self.metric_box, self.noising_box,
                                          self.run_button, self.stop_button, self.progress)
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
        self.bar.axis.setWidth(None)   # as wide as its longest label: pyqtgraph's fixed 45 px cut "-0.005" and
        #                                presentation mode's larger labels at the window's edge
        self._room_for_bar_ends()
        state.presentation_changed.connect(lambda _on: self._room_for_bar_ends())
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
        self.shown_for: PatchInputs | None = None     # inputs() it was computed for
        self.kept: dict[str, tuple] = {}   # method -> (inputs, point, noising, metric, result): for the agreement
        self.hovered: tuple[int, int] | None = None   # the cell under the mouse
        self._answers_timer = QTimer(self, singleShot=True, interval=400)
        self._answers_timer.timeout.connect(self.offer_answers)
        for edit in (self.clean_edit, self.corrupt_edit, self.target_edit):
            edit.textChanged.connect(self._texts_changed)
        self.plot.scene().sigMouseMoved.connect(self._on_hover)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        state.model_changed.connect(self._on_model)
        state.interventions_changed.connect(lambda _spec: self._texts_changed())   # other runs, other offers
        self._form = (state.chat, state.system)     # the chat form the answers were offered for
        state.trace_changed.connect(self._on_trace)
        self._on_model(state.loaded)

    # ---- options --------------------------------------------------------------------------------
    def chosen_options(self) -> PatchingOptions:
        """The options as the boxes show them (and as they are kept)."""
        return PatchingOptions.read(self)

    def options(self) -> PatchingOptions:
        """The options a Patch runs with: direct logit attribution's metric is the logit difference."""
        chosen = self.chosen_options()
        return replace(chosen, metric=LOGIT_DIFF) if chosen.method == DLA else chosen

    def _metric_for_method(self) -> None:
        """Direct logit attribution splits the logit difference: no other metric to choose."""
        self.metric_box.setEnabled(self.method_box.currentData() != DLA)

    def _options_changed(self, *_args) -> None:
        self._metric_for_method()      # the options themselves are kept by their binding

    # ---- inputs ---------------------------------------------------------------------------------
    def inputs(self) -> PatchInputs:
        """The texts as the model reads them, in the window's chat form (toggling chat makes a
        result stale as an edit does), the answers and the interventions every forward runs with."""
        return PatchInputs(id(self.state.loaded.model) if self.state.loaded is not None else None,
                           self.state.as_prompt(self.clean_edit.text()), self.state.as_prompt(self.corrupt_edit.text()),
                           self.answer_box.spec(), self.wrong_box.spec(), self.target(), self.state.interventions)

    def target(self) -> str:
        return self.target_edit.text() if self.target_edit.isVisible() else ""

    def patchable(self) -> bool:
        loaded = self.state.loaded
        return loaded is not None and loaded.role in ("decoder", "encoder-decoder")

    def current(self) -> bool:
        """The result shown belongs to the model, texts, answers and interventions on screen."""
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
        self.status.setText(" ")     # an error or a note about the previous model's tokens is not this one's
        if loaded is not None and not ok:
            self.status.setText(f"{loaded.name} is an encoder without a language-model head: it predicts no next "
                                "token, so there is nothing to patch.")
        if self.result is None:      # the plot's own line says the same as the status, not "press Patch"
            show_empty(self.item, EMPTY if ok or loaded is None else
                       "Nothing to patch here: open a model that predicts the next token (a decoder or an "
                       "encoder-decoder).")
        for box in (self.answer_box, self.wrong_box):
            box.forget(ids_too=True)              # another model's ids are other tokens
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
        self._refresh_readout()

    def offer_answers(self) -> None:
        """The clean run's and the corrupted run's likeliest next tokens, offered as answers
        (with the ids the user chose, whatever their rank now)."""
        loaded = self.state.loaded
        if loaded is None or not (self.clean_edit.text().strip() or self.corrupt_edit.text().strip()):
            return
        texts = [self.state.as_prompt(e.text()) if e.text().strip() else "" for e in (self.clean_edit, self.corrupt_edit)]
        keep = (self.answer_box.kept_id(), self.wrong_box.kept_id())
        self.answer_jobs.start(_answers_job, loaded, *texts, self.target(), keep, self.state.interventions,
                               on_returned=self._show_answers, on_error=self._no_answers)

    def _no_answers(self, exc) -> None:
        """A text the model cannot read (too long, empty after framing): said here, once."""
        self.status.setText(f"No answers offered: {error_message(exc)}")

    def _show_answers(self, tops) -> None:
        self.answer_box.offer(tops[0])
        self.wrong_box.offer(tops[1], avoid=self.answer_box.spec())    # two different answers
        self._inputs_changed()

    # ---- running --------------------------------------------------------------------------------
    def run(self) -> None:
        loaded = self.state.loaded
        if loaded is None:
            return
        inputs, options = self.inputs(), self.options()
        self.progress.setValue(0)
        self.progress.setVisible(True)
        self.stop_button.setEnabled(True)
        self.status.setText("Starting…")
        self.jobs.start(_patch_job, loaded, inputs, options, on_yielded=self._on_progress,
                        on_returned=lambda out: self._done(out, inputs, options),
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
        """The panel's one place for its errors (its Jobs do not announce them: a patching input error
        showed three times, in the status line, the status bar and a modal dialog that swallowed Ctrl+Q)."""
        self.status.setText(error_message(exc))
        self._finished()

    def _finished(self) -> None:
        self.progress.setVisible(False)
        self.stop_button.setEnabled(False)

    def _done(self, out, inputs: PatchInputs, options: PatchingOptions) -> None:
        result, drawing = out
        self.result, self.drawing, self.shown_for = result, drawing, inputs
        self.kept[result.method] = (inputs, options.point, options.noising, options.metric, result)
        self._finished()
        self.draw()
        self.status.setText(self._summary(result, drawing, inputs, options))

    def _summary(self, result, drawing: Drawing, inputs: PatchInputs, options: PatchingOptions) -> str:
        """The status line of a result: its unpatched numbers (DLA: the total and its parts), how
        it is coloured, the interventions it ran with, and exact against attribution."""
        changed = inputs.interventions.describe()
        held = f" With the interventions ({'; '.join(changed)})." if changed else ""
        if result.method == DLA:
            parts = " + ".join(f"{name} {value:+.3f}" for name, value in dla_sums(result).items())
            return (f"clean logit difference {result.clean:+.3f} = {parts} (corrupted {result.corrupt:+.3f}); colour: "
                    f"each share by its own sign and size, red toward the answer, blue toward the other, "
                    f"±{drawing.span:.3g}.{held}")
        scale = "colour: (patched - corrupted) / (clean - corrupted), 1 = the clean behaviour back, 0 = none of it"
        return (f"clean {result.metric} {result.clean:.3f}, corrupted {result.corrupt:.3f}"
                f"{' (noising)' if options.noising else ''}; {scale}.{held} {self._agreement(inputs, options)}")

    def _agreement(self, inputs: PatchInputs, options: PatchingOptions) -> str:
        """Where exact and attribution patching both ran on the same inputs: their correlation."""
        from attnscope.engine.experiments import agreement

        both = [self.kept.get(m) for m in ("exact", "attribution")]
        same = (inputs, options.point, options.noising, options.metric)
        if any(k is None or k[:4] != same for k in both):
            return ""
        r = agreement(both[0][4], both[1][4]).get(options.point, float("nan"))
        return f"Attribution against exact patching over these cells: r = {r:.3f}."

    # ---- drawing --------------------------------------------------------------------------------
    def _room_for_bar_ends(self) -> None:
        """Half a line above and below the map for the colour bar's end labels, centred on its
        edges: with no title or axis there (nothing patched yet) F5 cut "1.0" and "-1.0" in half."""
        fonts = (self.bar.axis.style.get("tickFont") or self.bar.axis.font(), QApplication.font())
        half = max(QFontMetrics(font).height() for font in fonts) // 2 + 2
        for row in (1, 3):                   # the plot's top and bottom axes' rows
            self.item.layout.setRowMinimumHeight(row, half)

    def draw(self) -> None:
        d = self.drawing
        if d is None:
            return
        hide_empty(self.item, ("left", "bottom"))
        self.image.setImage(d.image, autoLevels=False, levels=(-d.span, d.span))
        self.bar.setLevels((-d.span, d.span))
        self.item.setTitle(d.title)
        self.item.getAxis("left").setTicks([fitting_ticks(d.rows, max(1.0, self.item.vb.height()), 14)])
        self.item.getAxis("bottom").setTicks([fitting_ticks(d.cols, max(1.0, self.item.vb.width()), 60)])
        self.item.setRange(xRange=(0, len(d.cols)), yRange=(0, len(d.rows)), padding=0)
        # A line of the font a row (title, axis and labels besides), up to a screenful: in a short
        # dock the panel scrolls instead (presentation mode at 1280x800 squeezed the map to 35 px
        # and its layer labels into one another).
        line = QFontMetrics(QApplication.font()).height()
        self.plot.setMinimumHeight(min(int(1.2 * line * len(d.rows)) + 5 * line, 16 * line))
        self._inputs_changed()

    def cell_at_scene(self, scene_pos) -> tuple[int, int] | None:
        d = self.drawing
        if d is None or not self.item.vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self.item.vb.mapSceneToView(scene_pos)
        r, c = math.floor(p.y()), math.floor(p.x())
        return (r, c) if 0 <= r < len(d.rows) and 0 <= c < len(d.cols) else None

    def describe(self, r: int, c: int) -> str:
        text = describe_cell(self.drawing, self.result, r, c)
        return ("STALE " + text) if not self.current() else text

    def _refresh_readout(self) -> None:
        """The readout for the cell under the mouse, of the result shown now and as current as it
        is now (a new result or a current one again must not keep the old words)."""
        d, cell = self.drawing, self.hovered
        inside = d is not None and cell is not None and cell[0] < len(d.rows) and cell[1] < len(d.cols)
        self.readout.setText(self.describe(*cell) if inside else " ")

    def _on_hover(self, scene_pos) -> None:
        self.hovered = self.cell_at_scene(scene_pos)
        self._refresh_readout()

    def _on_click(self, event) -> None:
        cell = self.cell_at_scene(event.scenePos())
        if cell is None:
            return
        head = self.drawing.heads[cell[0] * len(self.drawing.cols) + cell[1]]
        if head is not None:
            self.open_head(*head)

    def open_head(self, point: str, layer: int, head: int) -> None:
        """The head in Head detail, on the clean text (Run anew unless the window shows it)."""
        clean = self.shown_for.clean if self.shown_for else self.state.as_prompt(self.clean_edit.text())
        if self.state.trace is None or self.state.prompt != clean or self.state.recording is not None:
            self.state.request_run(_words(clean))
        self.state.select_head(HEAD_KIND[point], layer, head)

    def export_target(self) -> QWidget:
        return self.plot

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        self.answer_jobs.shutdown()
        super().closeEvent(event)
