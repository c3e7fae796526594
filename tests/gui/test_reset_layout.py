"""View > Reset Layout equals the first start (the right dock came back at ~250 px where the
first start gave ~500, Head detail's tabs elided to "Hea… He… R…"), and presentation mode
(F5) at 1280x800 keeps Head detail usable (it was a 75 x 18 px plot). Measured from widget
geometry offscreen at the stated window sizes."""
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTabBar

from attnscope.gui.window.dock_layout import RIGHT_SHARE, RIGHT_SHARE_LARGE


def _settle(qtbot, w, size):
    w.resize(*size)
    qtbot.waitUntil(lambda: w.width() == size[0])
    qtbot.wait(1)


def test_reset_layout_brings_the_right_dock_back_as_at_the_first_start(window, qtbot):
    _settle(qtbot, window, (1600, 1000))
    window.dock_layout.default_sizes()              # what the first start does
    dock = window.docks["Head detail"]
    qtbot.waitUntil(lambda: abs(dock.width() - 1600 * RIGHT_SHARE) < 12)
    first = dock.width()
    window.resizeDocks([dock], [240], Qt.Orientation.Horizontal)
    qtbot.waitUntil(lambda: dock.width() < 300)
    window.dock_layout.reset()
    qtbot.waitUntil(lambda: abs(dock.width() - first) <= 2)
    assert dock.width() >= 480


def test_dock_tabs_show_whole_titles(window, qtbot):
    window.dock_layout.reset()
    qtbot.wait(1)                                   # the bars Qt replaced are deleted
    bars = [b for b in window.findChildren(QTabBar) if b.parent() is window and b.isVisible()]
    assert len(bars) >= 2
    for bar in bars:
        assert bar.elideMode() == Qt.TextElideMode.ElideNone and bar.usesScrollButtons()
    right = next(b for b in bars if b.tabText(0) == "Head detail")
    assert all(right.tabRect(i).width() >= right.fontMetrics().horizontalAdvance(right.tabText(i))
               for i in range(right.count()))


def test_presentation_mode_keeps_head_detail_usable(window, qtbot, drawn):
    _settle(qtbot, window, (1280, 800))
    window.dock_layout.reset()
    window.presentation_action.setChecked(True)
    try:
        dock = window.docks["Head detail"]
        qtbot.waitUntil(lambda: dock.width() >= 1280 * RIGHT_SHARE_LARGE - 12)
        view = window.dock_layout.view("Head detail")
        drawn(view)
        plot = view.export_target()
        qtbot.waitUntil(lambda: plot.width() > 300 and plot.height() > 120)
    finally:
        window.presentation_action.setChecked(False)
