"""The output row under the input bar: what the model wrote for the trace on screen.

The previous text's output stays, greyed and marked "updating…", while a newer one is written;
for a recording the row says no model is there to write one. The text itself comes from the
model thread (gui.window.engine_calls.model_output, gui.window.output_line) through the state.
"""
from __future__ import annotations

import textwrap

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QWidget

from attnscope.gui.theme import emphasise, tint

OUTPUT_TIP = "What the model itself writes for this text (greedy), or the tokens chosen so far in the Decoding panel"


class OutputRow(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.title = QLabel("Output:")
        self.label = QLabel()
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setWordWrap(True)
        # Wrapped at spaces, and cut at the edge where a "word" is longer than the line (a random
        # model's "<0x0C><0x0C>…"): its width never widens the window past its docks.
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        emphasise(self.label, 1.5)
        self.label.setToolTip(OUTPUT_TIP)
        self.mark = QLabel("updating…")    # the output shown is the previous text's until the new one is in
        self.mark.setToolTip("The model is writing its output for the new text; until then the line shows "
                             "the previous one, greyed")
        tint(self.mark, "muted")
        self.mark.setVisible(False)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.title)
        row.addWidget(self.label, 1)
        row.addWidget(self.mark)

    def show_for(self, state) -> None:
        """What the model wrote for the trace on screen (``state``: gui.state.AppState)."""
        loaded = state.loaded
        recording = state.recording is not None
        shown = recording or (loaded is not None and loaded.generates)
        self.title.setText("Output:" if recording else "Translation:" if loaded is not None
                           and loaded.role == "encoder-decoder" else "Continuation:")
        self.setVisible(shown)            # no gap in the window for a model that writes nothing
        self.title.setVisible(shown)
        self.label.setVisible(shown)
        if recording:
            self.label.setText("none: a recording holds attention, not a model to write with (open its "
                               "model and Run the text to see its output)")
        else:
            self.label.setText(state.output)
        # A word longer than the line is cut at its edge (it never widens the window): whole in the tooltip.
        cut = any(self.label.fontMetrics().horizontalAdvance(word) > self.label.width()
                  for word in self.label.text().split())
        self.label.setToolTip(OUTPUT_TIP + ("\n\n" + "\n".join(textwrap.wrap(
            self.label.text()[:4000], 100, break_long_words=True)) if cut else ""))
        updating = shown and not recording and (state.pending or state.output_for != state.trace_id)
        self.label.setEnabled(not updating and not recording)
        self.mark.setVisible(updating and state.trace is not None)
