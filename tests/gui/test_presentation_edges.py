"""Presentation mode (F5) at 1600x1000: the Patching colour bar's "1.0" and "-1.0" were cut in
half at the plot's edges, and a positional clock's title (one long line) was cut at the dock's
edge, its second half lying on the clock once wrapped. Measured from widget geometry offscreen."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from attnscope.gui.state import AppState
from tests.helpers.views import label_specs


@pytest.fixture
def large():
    from attnscope.gui.theme import apply_font

    apply_font(True)
    yield
    apply_font(False)


def test_the_patching_colour_bar_shows_both_ends(qtbot, large):
    from attnscope.gui.theme import restyle_plots
    from attnscope.gui.views.patching import PatchingPanel

    state = AppState()
    state.set_presentation(True)
    panel = PatchingPanel(state)
    qtbot.addWidget(panel)
    panel.resize(1600, 330)                     # the bottom dock's share at 1600x1000
    panel.show()
    restyle_plots(panel, False, True)
    axis, shown = panel.bar.axis, panel.plot.viewport().rect()
    qtbot.waitUntil(lambda: {"1.0", "-1.0"} <= {text for _r, _f, text in label_specs(axis)})   # laid out
    texts = [(panel.plot.mapFromScene(axis.mapRectToScene(rect)).boundingRect(), text)
             for rect, _flags, text in label_specs(axis)]
    assert {"1.0", "-1.0"} <= {text for _r, text in texts}
    assert [(text, r.getRect()) for r, text in texts if not shown.contains(r)] == []


def test_clock_titles_fit_their_column_and_sit_above_the_clock(qtbot, drawn, large):
    from attnscope.gui.theme import restyle_plots
    from attnscope.gui.views.positional import PositionalLab

    state = AppState()
    state.set_presentation(True)
    lab = PositionalLab(state)
    qtbot.addWidget(lab)
    lab.resize(1600, 330)
    lab.show()
    restyle_plots(lab, False, True)
    lab.tabs.setCurrentWidget(lab.clock_widget)
    drawn(lab)
    qtbot.waitUntil(lambda: len(lab.clocks) == 8)
    lab._fit_clock_titles()
    QApplication.processEvents()
    columns = lab.clock_widget.width() / 4
    for plot, *_rest in lab.clocks:
        label = plot.titleLabel.item.boundingRect()
        assert label.width() <= columns, (label.width(), columns)          # nothing past the dock's edge
        assert plot.titleLabel.geometry().height() >= label.height()      # both lines above the clock
        assert plot.titleLabel.geometry().bottom() <= plot.vb.geometry().top() + 1
