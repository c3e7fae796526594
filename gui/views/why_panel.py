"""Why: why does a head's query attend to a key? One score split into the sources that wrote
its query and its key.

Asked from Head detail (a cell's context menu, or Alt+click a cell), for the Run on screen: the
engine (engine.experiments.why_steps) freezes every norm's scale from the run, so the head's
query and key are linear in the residual stream, and the score splits exactly into (query-side
source x key-side source) terms: the token embedding, positions, each earlier head, each MLP,
constants. The panel draws the strongest sources as a heatmap on a diverging map centred at 0,
the rest of each side summed as "other (N)" (why_drawing.py), each side's marginal as bars, the
score, the weight, a position bias or softcap where the model has one, and what was frozen. A
versus key (the row's runner-up unless another is chosen) gives "why j rather than j2": its
table and the difference. A head's name (``L2.H1``, ``L1.X0``, ``enc.L0.H2``), on the map's axes,
on the bars or in the line of strongest terms, opens that head in Head detail: a circuit walked
backwards.

The split runs in the model worker with progress and Stop. A result belongs to the model, the
Run's text and the interventions it was computed for: once any of them changes it is marked
stale and greyed. A recording has no model behind it: Why says so in one sentence.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QTimer
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QLabel, QProgressBar, QPushButton, QSizePolicy,
                               QSpinBox, QVBoxLayout, QWidget)

from attnscope.engine.interventions import Interventions
from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.traces import reading
from attnscope.engine.inputs import Chat, InputError
from attnscope.engine.loading import check_seam
from attnscope.gui.colormaps import attach_colorbar
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.widgets.flow import FlowLayout
from attnscope.gui.theme import tint
from attnscope.gui.drawing.empty import hide_empty, show_empty
from attnscope.gui.drawing.patching_drawing import DIVERGING
from attnscope.gui.widgets.token_axis import VerticalTokenAxis, fit_row_axis
from attnscope.gui.widgets.token_labels import label_step
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.drawing.why_drawing import DIFFERENCE, LOADINGS, THIS, VERSUS, WhyDrawing, WhyTable, head_of, why_drawing
from attnscope.gui.worker import MODEL, Jobs, error_message

NEEDS_MODEL = ("Why needs the model: a recording holds the queries and keys, not the sources that wrote them; open "
               "the model and Run the text to split a score.")
MERGED = ("Why splits the score of one token the model reads: untick \"merge word pieces\" and Run again to ask it "
          "of a piece.")
REFUSED = "Nothing was split: the line above says why."
EMPTY = "Right-click a cell of Head detail (or Alt+click it) and choose \"Why does query i attend to key j?\"."
STALE = ("Stale: the text, the model or the interventions changed since this split was computed; press Why again to "
         "split the score anew.")
RUNNER_UP_LABEL = "runner-up"
MIN_LABEL_PX = 9          # the smallest row label drawn before every other one is left out
POSITIVE, NEGATIVE = QColor(200, 60, 50), QColor(50, 90, 200)   # bars: toward attending here, away from it


class WhyAsk(NamedTuple):
    """The score asked about: head ``head`` of ``kind`` layer ``layer``, query -> key (positions of
    the tokens the model reads, as the trace's)."""
    kind: str
    layer: int
    head: int
    query: int
    key: int


class WhyInputs(NamedTuple):
    """What a split is computed for: once any of it changes, the split shown is stale."""
    model: int | None                  # id of the model object
    prompt: str | Chat                 # the Run's text as the model reads it
    target: str
    pair: str
    interventions: Interventions


@dataclass(frozen=True)
class WhyOptions(ViewOptions):
    """The panel's choices, kept across starts (settings "why/<name>", gui.view_options)."""
    PREFIX = "why"
    loadings: bool = option(False, "loadings_box")      # also the head's loadings over the whole text


def _why_job(loaded, inputs: WhyInputs, ask: WhyAsk, versus, loadings: bool = False, stop=None):
    """In the model worker: yields engine Progress records; returns (ScoreSplit, WhyDrawing), or
    None when stopped before the end."""
    from attnscope.engine.experiments import why_steps

    split = yield from why_steps(loaded, inputs.prompt, ask.kind, ask.layer, ask.head, ask.query, ask.key,
                                 versus=versus, loadings=loadings, target=inputs.target or None,
                                 pair=inputs.pair or None, interventions=inputs.interventions, stop=stop)
    return None if split is None else (split, why_drawing(split))


def _signed(value: float) -> str:
    return f"{value:+.3f}"


class WhyPanel(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, "Why could not finish", lane=MODEL, announce=False)
        self.asked: WhyAsk | None = None
        self.result = None                  # the ScoreSplit shown
        self.drawing: WhyDrawing | None = None
        self.shown_for: WhyInputs | None = None
        self.runner_up = True               # the split shown is versus the row's runner-up (else a chosen key)
        self.show_next: str | None = None   # the table to show when the split under way comes (else the one shown)
        self.hovered: str = " "

        self.title = QLabel("")
        self.versus_box = QSpinBox()
        self.versus_box.setPrefix("versus key ")
        self.versus_box.setRange(-1, 0)
        self.versus_box.setSpecialValueText(f"versus: {RUNNER_UP_LABEL}")
        self.versus_box.setToolTip("Another key of the same row: its split and the difference (softmax sees only "
                                   "differences, so \"why j rather than j2\" is often the better question). At the "
                                   "bottom of the range: the row's runner-up, its strongest other key.")
        self.versus_timer = QTimer(self, singleShot=True, interval=350)
        self.versus_timer.timeout.connect(self.run)
        self.versus_box.valueChanged.connect(lambda _v: self.asked is not None and self.versus_timer.start())
        self.loadings_box = QCheckBox("head loadings")
        self.loadings_box.setToolTip("Also which sources drive this head over the whole text: the table averaged over "
                                     "the head's cells, weighted by attention (on a long text over a sample of rows, "
                                     "said with the weight it covers); it takes longer than one split")
        self.loadings_box.toggled.connect(self._loadings_toggled)
        self.table_box = QComboBox()
        self.table_box.addItems([THIS])
        self.table_box.setToolTip("Which table: this key's terms, the versus key's, or their difference (why this key "
                                  "rather than the versus key)")
        self.table_box.currentTextChanged.connect(lambda _t: self.draw())
        self.run_button, self.stop_button = QPushButton("Why again"), QPushButton("Stop")
        self.run_button.setToolTip("Split the asked score anew, on the Run on screen now")
        self.run_button.clicked.connect(self.run)
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setVisible(False)
        controls = FlowLayout().addWidgets(self.title, self.versus_box, self.loadings_box, self.table_box,
                                           self.run_button, self.stop_button, self.progress)
        self.status = ElidedLabel(" ")
        self.status.setVisible(False)
        self.mark = QLabel(STALE)
        self.mark.setWordWrap(True)
        tint(self.mark, "warning")
        self.mark.setVisible(False)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(pg.QtCore.Qt.TextFormat.RichText)
        self.links = QLabel("")
        self.links.setWordWrap(True)
        self.links.setTextFormat(pg.QtCore.Qt.TextFormat.RichText)
        self.links.setToolTip("Click a head's name to open that head in Head detail")
        self.links.linkActivated.connect(self.open_source)

        self.plots = pg.GraphicsLayoutWidget()
        self.key_axis = VerticalTokenAxis("top")        # keys across the top, as in Head detail
        self.map = self.plots.addPlot(0, 0, axisItems={"top": self.key_axis})
        self.map.invertY(True)
        self.map.setMouseEnabled(False, False)
        self.map.hideButtons()
        self.map.setMenuEnabled(False)
        self.map.setLabel("left", "query side")
        self.map.showAxis("top")
        self.map.hideAxis("bottom")
        self.map.setLabel("top", "key side")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.map.addItem(self.image)
        self.bar = attach_colorbar(self.map, self.image, pg.colormap.get(DIVERGING), (-1.0, 1.0))
        self.bar.axis.setWidth(None)
        self.cell_texts: list[pg.TextItem] = []
        # The bars beside the map, each the map's full height (stacked, each had half of a short dock
        # and named 2 of its ~11 bars).
        self.query_plot = self.plots.addPlot(0, 1, title="query side: each source<br>over every key source")
        self.key_plot = self.plots.addPlot(0, 2, title="key side: each source<br>over every query source")
        for plot in (self.query_plot, self.key_plot):
            plot.invertY(True)
            plot.setMouseEnabled(False, False)
            plot.hideButtons()
            plot.setMenuEnabled(False)
            plot.showGrid(x=True, alpha=0.2)
        self.query_bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[])
        self.key_bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[])
        self.query_plot.addItem(self.query_bars)
        self.key_plot.addItem(self.key_bars)
        for plot in (self.map, self.query_plot, self.key_plot):      # a short dock: every other label, never a pile
            plot.vb.sigResized.connect(self._fit_row_labels)
        self.plots.ci.layout.setColumnStretchFactor(0, 3)
        self.plots.ci.layout.setColumnStretchFactor(1, 2)
        self.plots.ci.layout.setColumnStretchFactor(2, 2)
        self.plots.setMinimumHeight(220)
        # The plots take the height the dock has, down to their minimum: their size hint (480 px) made
        # the word-wrapped panel taller than a 600 px dock, whose scroll area then hid the readout.
        self.plots.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
        self.readout = ElidedLabel(" ")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(controls)
        layout.addWidget(self.status)
        layout.addWidget(self.mark)
        layout.addWidget(self.summary)
        layout.addWidget(self.links)
        layout.addWidget(self.plots, 1)
        layout.addWidget(self.readout)
        self.plots.scene().sigMouseMoved.connect(self._on_hover)
        self.plots.scene().sigMouseClicked.connect(self._on_click)
        state.model_changed.connect(self._on_model)
        state.trace_changed.connect(lambda _t: self._inputs_changed())
        state.interventions_changed.connect(lambda _spec: self._inputs_changed())
        for signal in (state.theme_changed, state.presentation_changed):    # the cells' numbers: after the
            signal.connect(lambda _on: QTimer.singleShot(0, self.draw))    # window restyles every plot
        bind_options(self, WhyOptions)
        self._show_nothing(EMPTY)

    # ---- asking -----------------------------------------------------------------------------
    def ask(self, kind: str, layer: int, head: int, query: int, key: int) -> None:
        """Split head ``head`` of ``kind`` layer ``layer`` at (query, key) of the Run on screen,
        versus the row's runner-up."""
        self.asked = WhyAsk(kind, int(layer), int(head), int(query), int(key))
        trace = self.state.trace
        keys = len(reading.key_tokens(trace, kind)) if trace is not None and kind in trace.kinds else 1
        last = min(keys - 1, query) if kind == DECODER_SELF else keys - 1     # a causal row sees up to itself
        self.versus_box.blockSignals(True)
        self.versus_box.setRange(-1, max(0, last))
        self.versus_box.setValue(-1)
        self.versus_box.blockSignals(False)
        self.title.setText(self._asked_words(self.asked))
        self.run()

    def _asked_words(self, ask: WhyAsk) -> str:
        """'decoder self L3.H3: query 9 'cat' -> key 3 'sat'' (tokens when the trace on screen has them)."""
        trace, qt, kt = self.state.trace, "", ""
        if trace is not None and ask.kind in trace.kinds:
            q, k = reading.query_tokens(trace, ask.kind), reading.key_tokens(trace, ask.kind)
            if ask.query < len(q) and ask.key < len(k):
                qt, kt = f" {q[ask.query]!r}", f" {k[ask.key]!r}"
        return f"{ask.kind} L{ask.layer}.H{ask.head}: query {ask.query}{qt} -> key {ask.key}{kt}"

    def _loadings_toggled(self, on: bool) -> None:
        """Ticked with a score asked: split it again with the loadings, and show them when they come."""
        if on and self.asked is not None:
            self.show_next = LOADINGS
            self.run()

    def versus(self):
        """What the split is compared with: another key's position, or the row's runner-up."""
        from attnscope.engine.experiments import RUNNER_UP

        value = self.versus_box.value()
        return RUNNER_UP if value < 0 else value

    def refusal(self) -> str | None:
        """Why the asked score cannot be split here, in one sentence; None when it can."""
        state = self.state
        if self.asked is None:
            return EMPTY
        if state.loaded is None or state.recording is not None:
            return NEEDS_MODEL
        if state.trace is not None and reading.groups(state.trace):
            return MERGED
        from attnscope.engine.experiments import WHY_SPLIT   # torch: a model is open by now

        try:     # a family drawn by the dense fallback: said here, in the panel, not after a job
            check_seam(state.loaded, WHY_SPLIT)
        except InputError as refused:
            return str(refused)
        return None

    def inputs(self) -> WhyInputs:
        state = self.state
        return WhyInputs(id(state.loaded.model) if state.loaded is not None else None, state.prompt, state.target,
                         state.pair, state.interventions)

    def current(self) -> bool:
        """The split shown belongs to the model, the Run's text and the interventions on screen."""
        return self.result is not None and self.state.recording is None and self.shown_for == self.inputs()

    # ---- running ----------------------------------------------------------------------------
    def run(self) -> None:
        self.versus_timer.stop()
        refusal = self.refusal()
        if refusal is not None:
            self.jobs.cancel()
            self._finished()
            self._say(refusal)
            if self.result is None:     # the sentence is the status line's: one line here, never cut at the sides
                self._show_nothing(refusal if refusal == EMPTY else REFUSED)
            self._inputs_changed()
            return
        inputs, ask, versus = self.inputs(), self.asked, self.versus()
        self.progress.setRange(0, 0)
        self.progress.setVisible(True)
        self.stop_button.setEnabled(True)
        self._say("Splitting the score…")
        self.jobs.start(_why_job, self.state.loaded, inputs, ask, versus, self.loadings_box.isChecked(),
                        on_yielded=self._on_progress,
                        on_returned=lambda out: self._done(out, inputs, versus), on_error=self._failed,
                        on_finished=self._finished)

    def stop(self) -> None:
        self.jobs.cancel()
        self._finished()
        self._say("Stopped; " + ("the split below is the last finished one." if self.result is not None
                                           else "nothing was computed."))

    def _say(self, text: str) -> None:
        """The panel's status line (progress, a refusal, an error): a line only while it says something."""
        self.status.setText(text)
        self.status.setVisible(bool(text.strip()))

    def _on_progress(self, p) -> None:
        if p.total:
            self.progress.setRange(0, p.total)
            self.progress.setValue(p.done)
        self._say(p.text)

    def _failed(self, exc) -> None:
        """Said once, here (the panel's Jobs do not announce: an input error is the user's to read, not a dialog's)."""
        self._say(error_message(exc))
        self._finished()

    def _finished(self) -> None:
        self.progress.setVisible(False)
        self.stop_button.setEnabled(False)

    def _done(self, out, inputs: WhyInputs, versus) -> None:
        self._finished()
        if out is None:
            self._say("Stopped; nothing was computed.")
            return
        self.result, self.drawing = out
        self.readout.setText(" ")    # the hover line read the previous split
        self.shown_for, self.runner_up = inputs, not isinstance(versus, int)
        self._say(" ")
        chosen, self.show_next = self.show_next or self.table_box.currentText(), None
        self.table_box.blockSignals(True)
        self.table_box.clear()
        self.table_box.addItems(list(self.drawing.tables))
        self.table_box.setCurrentText(chosen if chosen in self.drawing.tables else THIS)
        self.table_box.blockSignals(False)
        self.title.setText(self._result_words(self.result))
        self.draw()

    def _on_model(self, _loaded) -> None:
        self.jobs.cancel()
        self._finished()
        if self.result is None:    # what was said (a refusal, "Stopped") was of the model before: the hint again
            self.asked = None
            self._say(" ")
            self._show_nothing(EMPTY)
        self._inputs_changed()

    def _inputs_changed(self) -> None:
        stale = self.result is not None and not self.current()
        self.mark.setVisible(stale)
        for item in (self.image, self.query_bars, self.key_bars):
            item.setOpacity(0.3 if stale else 1.0)

    # ---- drawing ----------------------------------------------------------------------------
    def shown(self) -> WhyTable | None:
        """The table chosen in the table box, of the split shown."""
        d = self.drawing
        return None if d is None else d.tables.get(self.table_box.currentText(), d.tables[THIS])

    def _show_nothing(self, text: str) -> None:
        show_empty(self.map, text, ("left", "top"))
        self.image.clear()
        for plot in (self.query_plot, self.key_plot):
            plot.hide()

    def draw(self) -> None:
        t = self.shown()
        if t is None:
            return
        hide_empty(self.map, ("left", "top"))
        self.image.setImage(t.table.astype(np.float32), autoLevels=False, levels=(-t.span, t.span))
        self.bar.setLevels((-t.span, t.span))
        fit_row_axis(self.map.getAxis("left"), t.rows)
        self.key_axis.set_ticks(t.cols, [(j + 0.5, name) for j, name in enumerate(t.cols)])
        self.map.setRange(xRange=(0, len(t.cols)), yRange=(0, len(t.rows)), padding=0)
        self._cell_numbers(t)
        for plot, bars, (names, values) in ((self.query_plot, self.query_bars, t.query_bars),
                                            (self.key_plot, self.key_bars, t.key_bars)):
            plot.show()
            bars.setOpts(x0=np.minimum(values, 0.0), width=np.abs(values), y=np.arange(len(values)), height=0.7,
                         brushes=[pg.mkBrush(POSITIVE if v >= 0 else NEGATIVE) for v in values], pen=None)
            fit_row_axis(plot.getAxis("left"), names)
            reach = float(np.abs(values).max()) if len(values) else 1.0
            plot.setRange(xRange=(-reach, reach) if (values < 0).any() else (0, reach),
                          yRange=(-0.5, len(values) - 0.5), padding=0.05)
        self._fit_row_labels()
        self.summary.setText(self._summary(self.result, t))
        self.links.setText(self._links(t))
        self._inputs_changed()

    def _fit_row_labels(self, *_) -> None:
        """Row labels of the map and the bars that fit the height the plots have now: every
        label when there is room, in a smaller font (down to MIN_LABEL_PX) when the rows are short,
        and only below that every k-th (a click still reads the row under it): in the default
        layout every other row was unlabelled, the loadings' strongest included."""
        t = self.shown()
        if t is None:
            return
        base = QFont(self.map.getAxis("left").font())
        line = QFontMetrics(base).height() + 2
        for plot, names, centre in ((self.map, t.rows, 0.5), (self.query_plot, t.query_bars[0], 0.0),
                                    (self.key_plot, t.key_bars[0], 0.0)):
            axis, row = plot.getAxis("left"), plot.vb.height() / max(1, len(names))
            font = QFont(base)
            if row < line:
                px = int(row)
                font.setPixelSize(max(MIN_LABEL_PX, px))
                while px > MIN_LABEL_PX and QFontMetrics(font).height() > row:
                    px -= 1
                    font.setPixelSize(px)
            axis.setStyle(tickFont=font)
            step = label_step(len(names), plot.vb.height(), min(line, QFontMetrics(font).height()))
            axis.setTicks([[(i + centre, names[i]) for i in range(0, len(names), step)]])
        fits = self.map.vb.height() >= len(t.rows) * line     # a number no taller than its cell, or none
        for item in self.cell_texts:
            item.setVisible(fits)

    def _cell_numbers(self, t: WhyTable) -> None:
        """Each cell's term written in it (the map has at most ROWS x COLS cells plus the rests)."""
        for item in self.cell_texts:
            self.map.removeItem(item)
        self.cell_texts = []
        for (r, c), value in np.ndenumerate(t.table):
            strong = abs(value) > 0.55 * t.span
            item = pg.TextItem(f"{value:+.2f}", color=(255, 255, 255) if strong else (30, 30, 30), anchor=(0.5, 0.5))
            item.setFont(QApplication.font())      # presentation mode's size
            item.setPos(c + 0.5, r + 0.5)
            self.map.addItem(item)
            self.cell_texts.append(item)

    def _result_words(self, s) -> str:
        q, k = s.query_tokens, s.key_tokens
        letter = "X" if s.kind == "cross" else "H"
        return (f"{s.kind} L{s.layer}.{letter}{s.head}: why does query {s.query} {q[s.query]!r} attend to key "
                f"{s.key} {k[s.key]!r}?")

    def _summary(self, s, t: WhyTable) -> str:
        """The score, the weight, the bias or softcap where there is one, what was frozen, the
        versus key and the notes, as one paragraph."""
        parts = [f"score <b>{_signed(s.score)}</b> (its {len(s.query_sources)} x {len(s.key_sources)} terms, a source or the constants a side, sum to "
                 f"{_signed(s.exact_sum)}), weight <b>{s.weight:.4f}</b>"]
        if s.position_bias:
            parts.append(f"position bias {_signed(s.position_bias)}, added to the score apart from the table")
        if s.softcap is not None:
            parts.append(f"soft-capped at {s.softcap:g} after the score: the table splits the score before the cap")
        if self.state.value_weighted:
            parts.append("Head detail draws value-weighted attention; this weight is the softmax's")
        v = s.versus
        if v is not None:
            which = "the row's runner-up" if self.runner_up else "chosen"
            parts.append(f"versus key {v.key} {html.escape(repr(s.key_tokens[v.key]), quote=False)} ({which}): score "
                         f"{_signed(v.score)}, weight {v.weight:.4f}; why {s.key} rather than {v.key}: "
                         f"{_signed(s.score - v.score)}")
        shown = {THIS: "", VERSUS: f" Shown: the versus key's table (sum {_signed(t.total)}).",
                 DIFFERENCE: f" Shown: this key's terms minus the versus key's (sum {_signed(t.total)}).",
                 LOADINGS: self._loadings_words(s.loadings, t)}
        notes = " ".join(html.escape(n, quote=False) for n in s.notes)
        frozen = html.escape(s.frozen, quote=False)
        return (f"{'; '.join(parts)}. Frozen: {frozen}.{shown.get(self.table_box.currentText(), '')}"
                + (f" {notes}" if notes else ""))

    @staticmethod
    def _loadings_words(ld, t: WhyTable) -> str:
        """What the loadings table is: over which cells, exact or sampled, and how much weight they cover."""
        if ld is None:
            return ""
        cells = "every cell of the head" if ld.exact else (
            f"{len(ld.rows)} rows sampled, each over "
            + ("every key it sees" if ld.keys_per_row is None else f"its {ld.keys_per_row} strongest keys"))
        return (f" Shown: the head's loadings over the text, the table averaged over {cells}, weighted by attention "
                f"({ld.coverage:.0%} of those rows' weight; sum {_signed(t.total)}).")

    def _name(self, source: str) -> str:
        """A source's name, a link when it is a head."""
        kind = self.result.kind if self.result is not None else ""
        text = html.escape(source)
        return f'<a href="{text}">{text}</a>' if head_of(source, kind) is not None else text

    def _links(self, t: WhyTable) -> str:
        terms = " · ".join(f"{self._name(a)} × {self._name(b)} {_signed(v)}" for a, b, v in t.top_terms)
        return f"Strongest terms (query source × key source; a head's name opens it): {terms}"

    # ---- reading and clicking ----------------------------------------------------------------
    def source_at(self, scene_pos) -> tuple[str, str] | None:
        """(side, source name) under a scene point: a row or column label of the map, or a bar
        or its label; None elsewhere."""
        t = self.shown()
        if t is None:
            return None
        for plot, side, names in ((self.map, "query", t.rows), (self.query_plot, "query", t.query_bars[0]),
                                  (self.key_plot, "key", t.key_bars[0])):
            rect, left = plot.vb.sceneBoundingRect(), plot.getAxis("left").sceneBoundingRect()
            if plot.isVisible() and (left.contains(scene_pos) or (plot is not self.map and rect.contains(scene_pos))):
                y = plot.vb.mapSceneToView(QPointF(rect.center().x(), scene_pos.y())).y()
                i = math.floor(y) if plot is self.map else int(round(y))
                if 0 <= i < len(names):
                    return side, names[i]
        if self.key_axis.sceneBoundingRect().contains(scene_pos):
            rect = self.map.vb.sceneBoundingRect()
            j = math.floor(self.map.vb.mapSceneToView(QPointF(scene_pos.x(), rect.center().y())).x())
            if 0 <= j < len(t.cols):
                return "key", t.cols[j]
        return None

    def cell_at(self, scene_pos) -> tuple[int, int] | None:
        t = self.shown()
        if t is None or not self.map.vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self.map.vb.mapSceneToView(scene_pos)
        r, c = math.floor(p.y()), math.floor(p.x())
        return (r, c) if 0 <= r < len(t.rows) and 0 <= c < len(t.cols) else None

    def describe(self, scene_pos) -> str:
        t, cell, source = self.shown(), self.cell_at(scene_pos), self.source_at(scene_pos)
        if t is None:
            return " "
        if cell is not None:
            r, c = cell
            text = (f"query side {t.rows[r]} × key side {t.cols[c]}: {_signed(float(t.table[r, c]))} of "
                    f"{_signed(t.total)}")
        elif source is not None:
            side, name = source
            opens = " (click: open this head in Head detail)" if head_of(name, self.result.kind) else ""
            text = f"{side} side: {name}{opens}"
        else:
            return " "
        return text if self.current() else "STALE " + text

    def _on_hover(self, scene_pos) -> None:
        self.readout.setText(self.describe(scene_pos))

    def _on_click(self, event) -> None:
        source = self.source_at(event.scenePos())
        if source is not None:
            self.open_source(source[1])

    def open_source(self, name: str) -> bool:
        """Open the head called ``name`` in Head detail (the state's one selection); True when
        ``name`` is a head (embed, pos, mlp, bias and the rest are not)."""
        head = head_of(name, self.result.kind) if self.result is not None else None
        if head is None:
            return False
        self.state.select_head(*head)
        return True

    def export_target(self) -> QWidget:
        return self.plots

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        super().closeEvent(event)
