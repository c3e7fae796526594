"""Decoding panel: translate a sentence (or continue a prompt) one token per click.

Each Step runs one ``next()`` of an engine.decoding.session session in the panel's own worker and
keeps the record, so Back and Step over steps already made only redraw from history. A
click while a step runs is queued, never run alongside it: the session is a generator and
must be advanced by one thread at a time. Play steps on a timer that waits for each step.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRect, QSize, Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QHeaderView, QLabel, QPushButton, QSizePolicy, QSlider,
                               QSpinBox, QSplitter, QStyledItemDelegate, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
                               QWidget)

from attnscope.engine.decoding import STRATEGIES, DecodeSettings, DecodeStep
from attnscope.gui.widgets.flow import FlowLayout
from attnscope.gui.window.output_line import shown_output
from attnscope.gui.theme import accent, emphasise
from attnscope.gui.drawing.empty import hide_empty, show_empty
from attnscope.gui.widgets.token_matrix import TokenMatrix
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.worker import MODEL, Jobs, lane_pool

if TYPE_CHECKING:
    from attnscope.engine.decoding import DecodeSession

TITLE = 'Decoding failed'     # the title of this view's error dialogs


def _start_session(loaded, text, settings: DecodeSettings, interventions=None):
    from attnscope.engine.decoding import DecodeSession   # torch, in the worker: the panel is drawn without it

    session = DecodeSession(loaded, text, settings, interventions)
    return session, session.steps()


def diff_text(rec: DecodeStep) -> str:
    """A step's change under the interventions, as rich text: KL, then each top token's p
    before -> after (the token the plain model would have chosen marked)."""
    d = rec.diff
    plain = max(d.rows, key=lambda r: r[1])[0]
    parts = [f"{'<b>' if t == rec.token else ''}{html.escape(t)}{'</b>' if t == rec.token else ''}"
             f"{' (plain choice)' if t == plain and t != rec.token else ''} {b:.3f} → {a:.3f}" for t, b, a in d.rows]
    return f"<i>with the interventions</i>: KL {d.kl:.4f} nats &nbsp; " + " &nbsp;|&nbsp; ".join(parts)


def _advance(steps):
    """One more step, or None when the session has ended."""
    return next(steps, None)


def _close_on_model_thread(steps) -> None:
    """Close a session's generator where it runs: closing runs torch.no_grad's exit (torch
    work, which belongs on the model thread), and only after a step still running there."""
    if steps is not None:
        lane_pool(MODEL).start(steps.close)


MIN_PLOT_HEIGHT = 140     # px: a plot of the panel shrinks to this before the dock scrolls


class _WrappedRows(QStyledItemDelegate):
    """Rows as tall as their text wrapped to the column's width (Qt's own size hint is one line)."""

    def sizeHint(self, option, index):
        size = super().sizeHint(option, index)
        width = max(40, self.parent().columnWidth(index.column()) - 8)
        text = str(index.data() or "")
        rect = option.fontMetrics.boundingRect(QRect(0, 0, width, 1 << 20), Qt.TextFlag.TextWordWrap, text)
        return QSize(size.width(), max(size.height(), rect.height() + 4))


@dataclass(frozen=True)
class DecodingOptions(ViewOptions):
    """How the Decoding panel steps (settings "decoding/..."): engine.decoding's DecodeSettings as shown."""
    PREFIX = "decoding"
    strategy: str = option("greedy", "strategy")
    beam_width: int = option(4, "beam_width")
    length_penalty: float = option(1.0, "length_penalty")
    temperature: float = option(1.0, "temperature")
    top_k: int = option(0, "top_k")
    top_p: float = option(1.0, "top_p")
    seed: int = option(0, "seed")
    speed: int = option(4, "speed")                  # Play's steps per second


class DecodingPanel(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, TITLE, lane=MODEL)
        self.history: list[DecodeStep] = []
        self.index = -1               # the step on screen
        self.session: DecodeSession | None = None
        self._steps = None            # the session's generator (advanced only in self.jobs)
        self._queued = 0              # Step clicks waiting for the running step
        self.ended = False
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

        # ---- controls ----
        self.strategy = QComboBox()
        self.strategy.addItems(STRATEGIES)
        self.beam_width = self._spin(QSpinBox(), 1, 8, 4, "beam ")
        self.length_penalty = self._spin(QDoubleSpinBox(), 0.0, 2.0, 1.0, "len pen ", 0.1)
        self.temperature = self._spin(QDoubleSpinBox(), 0.05, 5.0, 1.0, "temp ", 0.1)
        self.top_k = self._spin(QSpinBox(), 0, 1000, 0, "top-k ")
        self.top_p = self._spin(QDoubleSpinBox(), 0.01, 1.0, 1.0, "top-p ", 0.05)
        self.seed = self._spin(QSpinBox(), 0, 99999, 0, "seed ")
        self.strategy.currentTextChanged.connect(self._show_knobs)
        # Other settings make other steps: the history of the old ones is reset, not kept.
        self.strategy.currentTextChanged.connect(self._settings_changed)
        for box in (self.beam_width, self.length_penalty, self.temperature, self.top_k, self.top_p, self.seed):
            box.valueChanged.connect(self._settings_changed)
        self.reset_button = QPushButton("Reset")
        self.back_button = QPushButton("◀ Back")
        self.step_button = QPushButton("Step ▶")
        self.step_button.setToolTip("Right arrow (with the panel focused)")
        self.back_button.setToolTip("Left arrow")
        self.play_button = QPushButton("Play")
        self.play_button.setCheckable(True)
        self.speed = QSlider(Qt.Orientation.Horizontal)
        self.speed.setRange(1, 20)
        self.speed.setValue(4)
        self.speed.setMaximumWidth(120)
        self.speed.setToolTip("steps per second")
        self.reset_button.clicked.connect(self.reset)
        self.back_button.clicked.connect(self.back)
        self.step_button.clicked.connect(self.step)
        self.play_button.toggled.connect(self._toggle_play)
        self.speed.valueChanged.connect(lambda v: self.timer.setInterval(int(1000 / v)))
        self.timer = QTimer(self)
        self.timer.setInterval(250)
        self.timer.timeout.connect(self._play_tick)

        controls = FlowLayout().addWidgets(self.strategy, self.beam_width, self.length_penalty, self.temperature,
                                           self.top_k, self.top_p, self.seed, self.reset_button, self.back_button,
                                           self.step_button, self.play_button, QLabel("speed"), self.speed)

        self.output = QLabel("Press Step (→) to decode the text, one token at a time.")
        self.output.setTextFormat(Qt.TextFormat.RichText)
        self.output.setWordWrap(True)
        # What the session says about its input (a text cut to the model's length); hidden when nothing.
        self.input_note = QLabel()
        self.input_note.setWordWrap(True)
        emphasise(self.input_note, italic=True)
        self.input_note.hide()
        # This step without and with the Interventions panel's changes; hidden when there are none.
        self.diff = QLabel()
        self.diff.setTextFormat(Qt.TextFormat.RichText)
        self.diff.setWordWrap(True)
        self.diff.hide()

        # ---- plots ----
        # Candidates as horizontal bars, their tokens on the left axis: one row each, so
        # words never run into each other whatever their length.
        self.bars = pg.PlotWidget()
        self.bars.getPlotItem().setTitle("next-token candidates", size="9pt")
        self.bars.getPlotItem().setMouseEnabled(False, False)
        self.bars.getPlotItem().hideButtons()
        self.bars.getPlotItem().invertY(True)
        self.bars.getPlotItem().setLabel("bottom", "probability")
        self.bars.getPlotItem().getAxis("bottom").enableAutoSIPrefix(False)
        self.bar_item = pg.BarGraphItem(x0=[], y=[], width=[], height=0.8)
        self.bars.addItem(self.bar_item)
        self.alignment = TokenMatrix(state, "alignment: one row per output token",
                                     "Press Step (→): each output token adds a row here.")
        self.heads = TokenMatrix(state, "this token's rows, every head",
                                 "Press Step (→): every head's attention for the chosen token.")
        self.layer_box = QComboBox()
        self.layer_box.currentIndexChanged.connect(lambda i: i >= 0 and self.state.select(layer=i))
        self.beams = QTreeWidget()
        self.beams.setHeaderLabels(["hypothesis", "score", "parent", "state"])
        self.beams.setRootIsDecorated(False)
        # Hypotheses share their start and often their end: wrapped, each is read whole (the
        # middle elided only when a row still cannot hold it); the tooltip has it all.
        self.beams.setWordWrap(True)
        self.beams.setUniformRowHeights(False)
        self.beams.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.beams.setItemDelegateForColumn(0, _WrappedRows(self.beams))
        self.beams.header().sectionResized.connect(lambda *_: self.beams.doItemsLayout())
        self.beams.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.beams.header().setStretchLastSection(False)
        for column in (1, 2, 3):
            self.beams.header().setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)

        align_box = QWidget()
        align_layout = QVBoxLayout(align_box)
        align_layout.setContentsMargins(0, 0, 0, 0)
        align_layout.addWidget(self.layer_box)
        align_layout.addWidget(self.alignment)
        split = QSplitter()
        for w in (self.bars, align_box, self.heads, self.beams):
            split.addWidget(w)
        split.setSizes([220, 360, 300, 260])
        # The plots take the height the dock has, down to a small minimum: their size hints (the
        # alignment's 480 px) made the panel 560 px tall in a 340 px dock, which then scrolled and
        # showed 1 of 3 alignment rows after 3 steps.
        # (A splitter's size hint is its widgets' whatever their policy: the splitter's own is set.)
        split.setMinimumHeight(MIN_PLOT_HEIGHT)
        split.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(controls)
        layout.addWidget(self.output)
        layout.addWidget(self.input_note)
        layout.addWidget(self.diff)
        layout.addWidget(split, 1)
        self._show_knobs("greedy")
        state.model_changed.connect(self._on_model)
        state.trace_changed.connect(self._on_trace)
        state.selection_changed.connect(self._on_selection)
        state.interventions_changed.connect(lambda _spec: self._restep())   # steps afresh with the change
        state.theme_changed.connect(lambda _dark: self.redraw())   # pruned beams in the new theme's grey
        self._text = None             # the prompt the current session decodes (str or engine.inputs.Chat)
        bind_options(self, DecodingOptions)
        self.reset()

    @staticmethod
    def _spin(box, lo, hi, value, prefix, step=None):
        box.setRange(lo, hi)
        box.setValue(value)
        box.setPrefix(prefix)
        if step is not None:
            box.setSingleStep(step)
        return box

    def _show_knobs(self, strategy: str) -> None:
        self.beams.setVisible(strategy == "beam")
        self.beam_width.setVisible(strategy == "beam")
        self.length_penalty.setVisible(strategy == "beam")
        for w in (self.temperature, self.top_k, self.top_p, self.seed):
            w.setVisible(strategy == "sample")

    def settings(self) -> DecodeSettings:
        """The session's settings, from the view's options (DecodingOptions: what the widgets show)."""
        o = self.option_binding.options
        return DecodeSettings(strategy=o.strategy, beam_width=o.beam_width, length_penalty=o.length_penalty,
                              temperature=o.temperature, top_k=o.top_k, top_p=o.top_p, seed=o.seed)

    # ---- stepping ---------------------------------------------------------------------------
    def reset(self) -> None:
        self.jobs.cancel()
        _close_on_model_thread(self._steps)
        self.play_button.setChecked(False)
        self.history, self.index, self.session, self._steps = [], -1, None, None
        self._queued, self.ended, self._text = 0, False, None
        self.output.setText("Press Step (→) to decode the text, one token at a time.")
        self.input_note.clear()
        self.input_note.hide()
        self.diff.hide()
        self.bar_item.setOpts(x0=[], y=[], width=[])
        self.bars.getPlotItem().getAxis("left").setTicks([[]])
        show_empty(self.bars.getPlotItem(), "Candidates for the next token appear after a step.", ("left", "bottom"))
        self.alignment.clear_matrix()
        self.heads.clear_matrix()
        self.layer_box.clear()
        self.beams.clear()
        loaded = self.state.loaded
        if self.state.recording is not None:
            self.output.setText("A recording holds attention, not a model: decoding steps a model. Run a text "
                                "to decode it with the model that is open.")
        elif loaded is not None and not loaded.generates:
            self.output.setText("Step-by-step decoding needs a model that generates text here (a decoder or an "
                                "encoder-decoder); " + ("this model is an encoder." if loaded.role == "encoder" else
                                                         "this one runs on NDIF, with no weights here."))
        self._update_buttons()

    def step(self) -> None:
        if self.index < len(self.history) - 1:   # replay a step already made
            self.index += 1
            self.redraw()
            return
        if self.ended:
            self.play_button.setChecked(False)
            return
        if self.jobs.busy:
            self._queued += 1
            return
        loaded = self.state.loaded
        if loaded is None or not loaded.generates or not (self.state.text or "").strip():
            return      # nothing to decode: the Step button is off, and the window's banner says why
        if self._steps is None:
            self._text = self.state.prompt
            self.jobs.start(_start_session, loaded, self._text, self.settings(), self.state.interventions,
                            on_returned=self._session_ready, on_error=self._failed)
        else:
            self.jobs.start(_advance, self._steps, on_returned=self._stepped, on_error=self._failed,
                            on_finished=self._drain_queue)
        self._update_buttons()

    def _on_model(self, _loaded) -> None:
        self.reset()

    def _restep(self) -> None:
        """The interventions changed (Clear all, a head switched off): decode afresh with them,
        up to the step that was on screen, so the same place shows the changed model's choice
        (it went back to step 0)."""
        steps = self.index + 1
        self.reset()
        loaded = self.state.loaded
        if steps > 0 and loaded is not None and loaded.generates:
            self._queued = steps - 1
            self.step()

    def _settings_changed(self, *_args) -> None:
        if self.session is not None or self._steps is not None or self.jobs.busy:
            self.reset()

    def _on_selection(self, _kind: str, layer: int, _head: int) -> None:
        if 0 <= layer < self.layer_box.count() and layer != self.layer_box.currentIndex():
            self.layer_box.blockSignals(True)
            self.layer_box.setCurrentIndex(layer)
            self.layer_box.blockSignals(False)
            self.redraw()

    def _on_trace(self, _trace) -> None:
        """A new Run with another prompt (text or chat form) starts decoding afresh; no text, nothing to step; a
        recording, no model to step (the panel says so)."""
        if (self._text is not None and self.state.prompt != self._text) or self.state.recording is not None:
            self.reset()
        elif self.history == [] and not self.jobs.busy:
            self.reset()                      # the recording's note goes when a Run replaces it
        self._update_buttons()

    def _session_ready(self, result) -> None:
        self.session, self._steps = result
        notes = self._own_notes(self.session.notes)
        self.input_note.setText(" ".join(notes))
        self.input_note.setVisible(bool(notes))
        self.jobs.start(_advance, self._steps, on_returned=self._stepped, on_error=self._failed,
                        on_finished=self._drain_queue)

    def _stepped(self, record: DecodeStep | None) -> None:
        if record is None:
            self.ended = True
        else:
            self.history.append(record)
            self.index = len(self.history) - 1
            self.ended = record.finished
            self.redraw()
        self._update_buttons()

    def _own_notes(self, notes: list[str]) -> list[str]:
        """What the session says about its input that the window has not said: the window's
        banner already carries the Run's notes for this same text (a prompt longer than the
        context is cut by one rule, said once there), so the panel repeats none of it."""
        trace = self.state.trace
        if trace is not None and trace.notes and self._text == self.state.prompt:
            return []
        return list(notes)

    def _drain_queue(self) -> None:
        """After a step's worker has finished (so the panel is idle): run one queued click."""
        if self._queued and not self.ended:
            self._queued -= 1
            self.step()
        else:
            self._queued = 0

    def _failed(self, exc: BaseException) -> None:
        self._queued = 0
        self.play_button.setChecked(False)
        self.output.setText(html.escape(str(exc)))
        self._update_buttons()

    def back(self) -> None:
        if self.index > 0:
            self.index -= 1
            self.redraw()
        self._update_buttons()

    def _toggle_play(self, on: bool) -> None:
        self.play_button.setText("Pause" if on else "Play")
        self.timer.start() if on else self.timer.stop()

    def _play_tick(self) -> None:
        if self.ended and self.index == len(self.history) - 1:
            self.play_button.setChecked(False)
        elif not self.jobs.busy:
            self.step()

    def _update_buttons(self) -> None:
        self.back_button.setEnabled(self.index > 0)
        loaded = self.state.loaded
        can_step = (loaded is not None and loaded.generates and bool((self.state.text or "").strip())
                    and self.state.recording is None)
        self.step_button.setEnabled(can_step and not (self.ended and self.index == len(self.history) - 1))
        self.play_button.setEnabled(can_step)

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Right:
            self.step()
        elif event.key() == Qt.Key.Key_Left:
            self.back()
        else:
            super().keyPressEvent(event)

    # ---- drawing -------------------------------------------------------------------------------
    def alignment_matrix(self, upto: int | None = None) -> np.ndarray:
        """Rows = output steps 0..upto; columns = source tokens (cross, translator) or all
        positions (self, GPT); the chosen layer's heads averaged."""
        steps = self.history[: (self.index if upto is None else upto) + 1]
        layer = max(0, self.layer_box.currentIndex())
        rows = [(s.cross_rows if s.cross_rows is not None else s.self_rows)[layer].mean(0) for s in steps]
        width = max((len(r) for r in rows), default=0)
        out = np.zeros((len(rows), width), dtype=np.float32)
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out

    def redraw(self) -> None:
        if not (0 <= self.index < len(self.history)):
            return
        rec = self.history[self.index]
        session = self.session
        rows = rec.cross_rows if rec.cross_rows is not None else rec.self_rows  # (L, H, K)
        if self.layer_box.count() != rows.shape[0]:
            self.layer_box.blockSignals(True)
            self.layer_box.clear()
            self.layer_box.addItems([f"layer {i} (mean of heads)" for i in range(rows.shape[0])])
            self.layer_box.setCurrentIndex(min(self.state.layer, rows.shape[0] - 1))
            self.layer_box.blockSignals(False)
        # output so far: chosen tokens, the newest in bold
        tokens = [s.token for s in self.history[: self.index + 1]]
        shown = " ".join(html.escape(t) for t in tokens[:-1]) + f" <b>{html.escape(tokens[-1])}</b>"
        state = "finished" if rec.finished else f"step {rec.step + 1}"
        self.output.setText(f"{state}: {shown} &nbsp; <i>(p = {rec.probability:.3f})</i>")
        self.diff.setVisible(rec.diff is not None)
        if rec.diff is not None:
            self.diff.setText(diff_text(rec))
        if session is not None:   # the window's output line follows the steps
            self.state.set_output(shown_output(session.stepper.tokenizer.decode(rec.output_ids), rec.token,
                                               rec.probability, rec.finished, rec.step))
        # candidates: as many as have a row of text each in the chart's height
        room = self.bars.getPlotItem().vb.height()
        fit = len(rec.candidates) if room <= 0 else max(1, int(room // (self.fontMetrics().height() + 2)))
        labels = [t for t, _ in rec.candidates][:fit]
        probs = [p for _, p in rec.candidates][:fit]
        brushes = [QBrush(QColor("#d62728") if t == rec.token else QColor("#1f77b4")) for t in labels]
        hide_empty(self.bars.getPlotItem(), ("left", "bottom"))
        self.bar_item.setOpts(x0=np.zeros(len(probs)), y=np.arange(len(probs)), width=probs, height=0.8,
                              brushes=brushes)
        self.bars.getPlotItem().getAxis("left").setTicks([[(i, t) for i, t in enumerate(labels)]])
        self.bars.getPlotItem().setRange(xRange=(0, max(probs, default=1.0)), yRange=(-0.5, len(probs) - 0.5),
                                         padding=0.02)
        # alignment and per-head rows
        if rec.cross_rows is not None:
            keys = session.source_tokens if session else []
        else:
            keys = (session.prompt_tokens if session else []) + tokens[:-1]
            keys = keys[: rows.shape[-1]]
        self.alignment.show_matrix(self.alignment_matrix(), tokens, keys)
        l, h, k = rows.shape
        self.heads.show_matrix(rows.reshape(l * h, k), [f"L{i} H{j}" for i in range(l) for j in range(h)], keys)
        # beams
        self.beams.clear()
        for hyp in rec.beams:
            status = "finished" if hyp.finished else "pruned" if hyp.pruned else "live"
            item = QTreeWidgetItem([" ".join(hyp.tokens), f"{hyp.score:.3f}", str(hyp.parent), status])
            item.setToolTip(0, " ".join(hyp.tokens))
            if hyp.pruned:
                for c in range(4):
                    item.setForeground(c, QBrush(accent("muted")))
            self.beams.addTopLevelItem(item)
        self._update_buttons()

    def window_closing(self) -> None:
        """Play stops with the window (a dock's panel gets no closeEvent of its own): no step after."""
        self.play_button.setChecked(False)
        self.timer.stop()
        self.jobs.cancel()      # not waited for: the window goes at once (gui.app ends the process)

    def closeEvent(self, event) -> None:
        self.window_closing()
        super().closeEvent(event)
