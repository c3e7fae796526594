"""Head detail's minimap on a long head: the whole head small, a frame on the part shown;
a click there moves the view; it follows the selection, the colour map, the theme and the
log colour, and is gone for a short head or no trace."""
import numpy as np
import pyqtgraph as pg
import torch
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics

from attnscope.engine.traces.pooling import pool_2d
from attnscope.gui.widgets.minimap import FRAME_LEAST, PIXELS, SMALLEST
from tests.helpers.views import long_head_detail


def scene_to_widget(view, scene_point):
    return view.plot.mapFromScene(scene_point)


def test_the_minimap_shows_the_whole_head_and_frames_the_view(qtbot, drawn, monkeypatch):
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch, pixels=6)
    mini = view.minimap
    assert mini.isVisible() and mini.image.image is not None
    expected = pool_2d(torch.from_numpy(view.drawing.shown), PIXELS, PIXELS, "max").numpy()
    np.testing.assert_array_equal(mini.image.image, expected)          # the first view's picture, reused
    t = view.drawing.long[0]
    vb_rect = view.item.vb.sceneBoundingRect()
    assert not mini.sceneBoundingRect().intersects(vb_rect)           # beside the map, on no cell
    half_line = QFontMetrics(view.key_axis.style.get("tickFont") or view.key_axis.font()).height() / 2
    assert mini.sceneBoundingRect().right() <= vb_rect.left() - half_line   # clear of the first key's label,
    assert mini.sceneBoundingRect().bottom() <= vb_rect.top() - half_line   # and of the first query's
    assert mini.width() >= SMALLEST and mini.width() == mini.height()
    view.item.setRange(xRange=(2, 7), yRange=(3, 9), padding=0)
    (x0, x1), (y0, y1) = view.item.vb.viewRange()
    frame = mini.frame_rect()
    least = FRAME_LEAST * t / mini.width()                    # a frame is a few pixels at least
    assert abs(frame.center().x() - (x0 + x1) / 2) < 1e-6 and abs(frame.center().y() - (y0 + y1) / 2) < 1e-6
    assert abs(frame.width() - max(x1 - x0, least)) < 1e-6 and abs(frame.height() - max(y1 - y0, least)) < 1e-6
    view.item.setRange(xRange=(1, t - 1), yRange=(2, t - 3), padding=0)
    frame = mini.frame_rect()
    np.testing.assert_allclose([frame.left(), frame.right(), frame.top(), frame.bottom()],
                               [1, t - 1, 2, t - 3], atol=1e-6)


def test_a_click_on_the_minimap_moves_the_view_there_at_the_same_zoom(qtbot, drawn, monkeypatch):
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch)
    t = view.drawing.long[0]
    view.item.setRange(xRange=(0, 4), yRange=(0, 4), padding=0)
    (x0, x1), (y0, y1) = view.item.vb.viewRange()
    target = pg.Point(t * 0.6, t * 0.7)
    view._on_hover(view.minimap.mapViewToScene(target))              # the cursor there reads no cell
    assert "Minimap" in view.readout.text() and f"query {int(target.y())}" in view.readout.text()
    at = scene_to_widget(view, view.minimap.mapViewToScene(target))
    qtbot.mouseClick(view.plot.viewport(), Qt.MouseButton.LeftButton, pos=at)
    (a0, a1), (b0, b1) = view.item.vb.viewRange()
    assert abs((a0 + a1) / 2 - target.x()) < 0.5 and abs((b0 + b1) / 2 - target.y()) < 0.5
    assert abs((a1 - a0) - (x1 - x0)) < 1e-6 and abs((b1 - b0) - (y1 - y0)) < 1e-6   # same zoom
    qtbot.waitUntil(lambda: view.zoom_block is not None and not view.zoom_jobs.busy, timeout=10000)
    (r0, r1), (c0, c1) = view.zoom_block                      # the exact block there, through the zoom path
    assert r0 <= target.y() <= r1 and c0 <= target.x() <= c1
    assert state.interventions == type(state.interventions)()  # a shift-less click knocks nothing out


def test_the_minimap_follows_the_head_the_colour_map_the_theme_and_log_colour(qtbot, drawn, monkeypatch):
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch, pixels=6)
    state.select("decoder self", 0, 0)
    drawn(view)
    before = view.minimap.image.image.copy()
    state.select("decoder self", 1, 3)
    drawn(view)
    after = view.minimap.image.image
    assert not np.array_equal(before, after)
    np.testing.assert_array_equal(after, pool_2d(torch.from_numpy(view.drawing.shown), PIXELS, PIXELS,
                                                 "max").numpy())
    state.set_colormap("greys")
    assert view.minimap.image.getColorMap().getLookupTable(0, 1, 2).tolist() == [[255, 255, 255], [0, 0, 0]]
    state.set_dark(True)
    assert view.minimap.border.color().getRgb()[:3] == (220, 220, 220)
    state.set_dark(False)
    assert view.minimap.border.color().getRgb()[:3] == (30, 30, 30)
    view.log_box.setChecked(True)
    drawn(view)
    assert view.drawing.log_scale and not np.array_equal(view.minimap.image.image, after)


def test_no_minimap_for_a_short_head_or_no_trace(qtbot, drawn, monkeypatch):
    import attnscope.gui.views.head_detail as detail
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch)
    assert view.minimap.isVisible()
    state.set_trace(None)
    drawn(view)
    assert not view.minimap.isVisible() and view.minimap.image.image is None
    monkeypatch.setattr(detail, "DETAIL_EXACT", 1024)          # the same text is short now
    state.set_trace(trace)
    drawn(view)
    assert view.drawing.long is None and not view.minimap.isVisible()
    assert view.item.layout.columnMinimumWidth(0) == 0           # the corner gives its room back


def test_a_drag_on_the_minimap_pans_the_view_along(qtbot, drawn, monkeypatch):
    from PySide6.QtCore import QEvent, QPointF
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch)
    monkeypatch.setitem(pg.CONFIG_OPTIONS, "mouseRateLimit", -1)   # every move delivered, however fast
    t = view.drawing.long[0]
    view.item.setRange(xRange=(0, 4), yRange=(0, 4), padding=0)
    port = view.plot.viewport()
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton

    def send(kind, token, button, buttons):
        at = QPointF(scene_to_widget(view, view.minimap.mapViewToScene(token)))
        event = QMouseEvent(kind, at, port.mapToGlobal(at), button, buttons, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(port, event)

    centres = []
    send(QEvent.Type.MouseButtonPress, pg.Point(t * 0.2, t * 0.2), left, left)
    for f in (0.3, 0.5, 0.8):
        send(QEvent.Type.MouseMove, pg.Point(t * f, t * f), none, left)
        (a0, a1), (b0, b1) = view.item.vb.viewRange()
        centres.append(((a0 + a1) / 2, (b0 + b1) / 2))
    send(QEvent.Type.MouseButtonRelease, pg.Point(t * 0.8, t * 0.8), left, none)
    np.testing.assert_allclose(centres, [(t * f, t * f) for f in (0.3, 0.5, 0.8)], atol=0.5)


def test_the_minimap_takes_the_empty_corner_and_no_more_in_a_small_plot(qtbot, drawn, monkeypatch):
    from attnscope.gui.widgets.minimap import LARGEST, MARGIN, side_for
    assert side_for(800, 800, 70) == LARGEST and side_for(500, 400, 70) == 80      # a large plot: the axes move out
    assert side_for(243, 117, 70) == 70 and side_for(243, 117, 30) == 0             # a small one: the corner, or none
    state, view, trace = long_head_detail(qtbot, drawn, monkeypatch)
    view.resize(260, 300)
    qtbot.waitUntil(lambda: view.plot.width() < 260)
    left, top = view.item.getAxis("left"), view.key_axis
    overhang = (QFontMetrics(top.style.get("tickFont") or top.font()).height() + 1) // 2   # the first labels' half line
    assert view.minimap.isVisible() and view.minimap.maximumWidth() == (min(left.fixedWidth, top.fixedHeight)
                                                                         - 2 * MARGIN - overhang)
    assert view.item.layout.columnMinimumWidth(0) <= left.fixedWidth
    assert view.item.layout.rowMinimumHeight(1) <= top.fixedHeight
