"""Head statistics' column labels are never cut off (gui/widgets/fitted_header.py): at the
first-start width every shown column is as wide as its label needs, a wide view is still
filled, and a view narrower than the labels scrolls sideways instead of cutting them."""
from __future__ import annotations

from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.tracing import trace_text
from attnscope.gui.state import AppState


def _widths(view):
    header = view.header
    shown = [c for c in range(header.count()) if not header.isSectionHidden(c)]
    return header, shown


def test_every_label_whole_and_the_width_filled(qtbot, drawn):
    from attnscope.gui.views.head_stats import HeadStats

    state = AppState()
    loaded = random_model("gpt")
    state.set_model(loaded)
    state.set_trace(trace_text(loaded, "the cat sat on the mat and the cat sat"))
    view = HeadStats(state)
    qtbot.addWidget(view)
    view.resize(1290, 300)           # the first-start width of the bottom dock at 1500 px
    view.show()
    drawn(view)
    header, shown = _widths(view)
    labels = [view.table.horizontalHeaderItem(c).text() for c in shown]
    assert "induction (repeat)" in labels and len(shown) > 10
    for c in shown:
        assert header.sectionSize(c) >= header.sectionSizeFromContents(c).width(), view.table.horizontalHeaderItem(c).text()
    needed = sum(header.sectionSizeFromContents(c).width() for c in shown)
    assert needed <= header.viewport().width()
    assert sum(header.sectionSize(c) for c in shown) == header.viewport().width()   # filled, not one wide column

    view.resize(500, 300)            # narrower than the labels: they stay whole and the table scrolls
    qtbot.waitUntil(lambda: view.table.horizontalScrollBar().maximum() > 0)
    for c in shown:
        assert header.sectionSize(c) >= header.sectionSizeFromContents(c).width()
