"""A view fits the dock it is given: its toolbar wraps, its plot scales, nothing hides
behind a scrollbar (Head detail's toolbar was cut at "hide below 0.0" and its colorbar
off-screen; Head lines hid its key column behind a horizontal scrollbar)."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QComboBox, QScrollArea, QWidget

from attnscope.gui.widgets.flow import FlowLayout

RIGHT = ("Head detail", "Head lines", "Rollout")


def _outside(view: QWidget) -> list[str]:
    """Controls of ``view`` that are not wholly inside the part of it on screen."""
    scroll = view.parentWidget().parentWidget()
    assert isinstance(scroll, QScrollArea)
    room = scroll.viewport().rect()
    bad = []
    for w in view.findChildren(QWidget):
        if not w.isVisible() or not isinstance(w, (QAbstractButton, QComboBox, QAbstractSpinBox)):
            continue
        rect = w.rect().translated(w.mapTo(scroll.viewport(), w.rect().topLeft()))
        if not room.contains(rect):
            bad.append(f"{type(w).__name__} {getattr(w, 'text', lambda: '')()!r} at {rect.getRect()} outside {room.getRect()}")
    return bad


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_right_dock_views_fit_their_dock(window, qtbot, drawn, size):
    window.dock_layout.reset()
    window.resize(*size)
    for title in RIGHT:
        window.docks[title].show()
        window.docks[title].raise_()
        view = window.dock_layout.view(title)
        drawn(view)
        qtbot.waitUntil(lambda: view.isVisible())
        qtbot.wait(1)
        scroll = view.parentWidget().parentWidget()
        assert not scroll.horizontalScrollBar().isVisible(), title
        assert not scroll.verticalScrollBar().isVisible(), title
        assert _outside(view) == [], title
        plot = view.export_target()
        assert plot.width() > 150 and plot.height() > 150, (title, plot.size())   # the plot takes the room


def test_a_flow_row_wraps_instead_of_widening(qtbot):
    from PySide6.QtWidgets import QPushButton, QVBoxLayout

    host = QWidget()
    qtbot.addWidget(host)
    row = FlowLayout().addWidgets(*[QPushButton(f"button number {i}") for i in range(8)])
    box = QVBoxLayout(host)
    box.addLayout(row)
    box.addStretch(1)
    widest = max(row.itemAt(i).sizeHint().width() for i in range(row.count()))
    assert host.minimumSizeHint().width() <= widest + 30
    host.resize(2 * widest + 20, 300)
    host.show()
    qtbot.waitUntil(lambda: host.isVisible())
    qtbot.wait(1)
    tops = sorted({row.itemAt(i).geometry().top() for i in range(row.count())})
    assert len(tops) >= 4          # two buttons a line: four lines or more, none cut
    assert all(row.itemAt(i).geometry().right() < host.width() for i in range(row.count()))


def test_a_bottom_dock_gives_way_when_the_overview_would_not_get_its_minimum(window_on, qtbot, drawn, monkeypatch):
    """Walked as a user (under X11): at 1280x800 with the Patching panel open and a two-line
    note over the heads, presentation mode left the overview ~25 px a layer, its last layer
    under the dock and its labels dropped: Qt kept the bottom dock's height while the central
    part, whose wrapped lines its minimum does not count, overflowed. Whenever the overview
    would end below the central part at its minimum, the bottom dock is shortened by as much,
    down to its own minimum. (Offscreen, Qt's fonts leave room, so the overflow is made here by
    asking the overview for more than the window gives.)"""
    from PySide6.QtCore import QSize, Qt

    w = window_on("random-translator")
    w.resize(1280, 800)
    drawn(w.grid)
    central, grid, dock = w.centralWidget(), w.grid, w.docks["Patching"]
    dock.show()
    dock.raise_()
    w.resizeDocks([dock], [360], Qt.Orientation.Vertical)
    qtbot.waitUntil(lambda: dock.height() >= 300)
    before, room = dock.height(), central.height() - grid.geometry().top()
    wanted = room + 80                                            # 80 px more than the overview has
    monkeypatch.setattr(grid, "minimumSizeHint", lambda: QSize(100, wanted))
    w.dock_layout.room_for_overview()
    qtbot.waitUntil(lambda: grid.geometry().top() + wanted <= central.height(), timeout=5000)
    assert dock.height() >= dock.minimumSizeHint().height() and dock.height() < before
    monkeypatch.setattr(grid, "minimumSizeHint", lambda: QSize(100, 10_000))  # more than any dock can give
    w.dock_layout.room_for_overview()
    qtbot.waitUntil(lambda: dock.height() <= dock.minimumSizeHint().height() + 1)
