"""A newcomer adds a view from three places (issue 54, "Done means"; docs/layout.md, "Adding a
view"): the view registry (gui/views/registry.py), one sibling view (gui/views/rollout.py) and the
trace's protocol read through engine.traces.reading. The view below is written from those alone: a
preparation marked ``@prepares`` that asks the trace for what it draws, a ``PreparedView`` whose
``drawing_job`` names it, one ``ViewSpec``. The window builds it, it draws the selected head's last
row after a Run, follows a head selected elsewhere and a new text, and is greyed while a Run is on
its way, as every view is, with nothing else written for it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from attnscope.engine.traces import reading
from attnscope.gui.drawing.prepared import PreparedView


@dataclass(frozen=True)
class LastRowDrawing:
    """What the view shows: one head's weights from the last query to every key, strongest first."""
    kind: str
    layer: int
    head: int
    weights: np.ndarray        # (Tk,) float32
    strongest: str


def last_row_drawing(trace, kind: str, layer: int, head: int) -> LastRowDrawing:
    """In a worker: the trace is asked for one row (reading.row), never for a dense array. A view's
    module marks it ``@prepares``; here the test marks it and takes it off the list after, so no
    other test finds a preparation of a view that is not registered."""
    last = len(reading.query_tokens(trace, kind)) - 1
    row = reading.row(trace, kind, layer, head, last)                            # (Tk,)
    keys = reading.key_tokens(trace, kind)
    return LastRowDrawing(kind, layer, head, row, keys[int(np.argmax(row))])


class LastRowView(PreparedView, QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._init_prepared("Last row")
        self.label = QLabel(" ")
        QVBoxLayout(self).addWidget(self.label)
        state.trace_changed.connect(lambda _trace: self.redraw())
        state.selection_changed.connect(lambda *_selected: self.redraw())
        self.redraw()

    def drawing_job(self):
        if self.trace is None or self.kind is None:
            return None
        return last_row_drawing, self.trace, self.kind, self.state.layer, self.state.head

    def clear_drawing(self) -> None:
        self.label.setText("Nothing to show yet: run a text.")

    def apply_drawing(self, drawing: LastRowDrawing) -> None:
        self.label.setText(f"L{drawing.layer}.H{drawing.head}: the last query reads {drawing.strongest!r} most")


def test_a_view_written_from_the_registry_a_sibling_and_the_protocol_works_in_the_window(window_on, qtbot,
                                                                                        monkeypatch, request):
    import attnscope.gui.drawing.prepared as prepared
    import attnscope.gui.window.dock_layout as dock_layout
    from attnscope.gui.views.registry import VIEWS, ViewSpec

    prepared.prepares(last_row_drawing)
    request.addfinalizer(lambda: prepared.DRAWN_OFF_THREAD.remove(last_row_drawing))
    monkeypatch.setattr(dock_layout, "VIEWS", VIEWS + [ViewSpec("Last row", LastRowView, "bottom")])
    w = window_on("random-gpt")
    view = w.dock_layout.view("Last row")
    assert isinstance(view, LastRowView)

    def drawn_for(layer: int, head: int) -> bool:
        d = view.drawing
        return d is not None and (d.layer, d.head) == (layer, head) and view._drawn_id == w.state.trace_id

    qtbot.waitUntil(lambda: drawn_for(w.state.layer, w.state.head), timeout=60000)
    want = reading.row(w.state.trace, w.state.kind, w.state.layer, w.state.head,
                       len(reading.query_tokens(w.state.trace, w.state.kind)) - 1)
    np.testing.assert_array_equal(view.drawing.weights, want)
    w.state.select(layer=1, head=2)                        # a head chosen elsewhere (the overview, Head detail)
    qtbot.waitUntil(lambda: drawn_for(1, 2), timeout=60000)
    old = w.state.trace
    w.input_bar.text_edit.setText("the cat sat on the mat and the cat slept")
    w.run()
    assert view.stale                                       # greyed while the Run is on its way
    qtbot.waitUntil(lambda: w.state.trace is not old and drawn_for(1, 2) and not view.stale, timeout=60000)
    assert len(view.drawing.weights) == len(reading.key_tokens(w.state.trace, w.state.kind))
