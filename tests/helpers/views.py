"""Views the Qt tests share, built outside a window: every view that prepares drawings, Head
detail on a trace "long" from 9 tokens on, and the labels a pyqtgraph axis draws."""
from __future__ import annotations

from PySide6.QtGui import QImage, QPainter

from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.traces import TEXT


def drawing_views(qtbot, state) -> list:
    """The overview and every view that prepares drawings, on ``state``, shown."""
    from attnscope.gui.views.head_grid import HeadGrid
    from attnscope.gui.views.registry import VIEWS

    views = [HeadGrid(state)] + [spec.factory(state) for spec in VIEWS]
    views = [v for v in views if hasattr(v, "draw_jobs")]
    for view in views:
        qtbot.addWidget(view)
        view.resize(500, 400)
        view.show()
    return views


def long_head_detail(qtbot, drawn, monkeypatch, pixels: int = 1024):
    """Head detail on the GPT's trace, with "long" meaning more than 8 tokens: (state, view, trace)."""
    import attnscope.gui.views.head_detail as detail
    from attnscope.gui.state import AppState
    monkeypatch.setattr(detail, "DETAIL_EXACT", 8)
    monkeypatch.setattr(detail, "VIEW_PIXELS", pixels)
    state = AppState()
    state.set_model(random_model("gpt", seed=1))
    view = detail.HeadDetail(state)
    qtbot.addWidget(view)
    view.resize(500, 500)
    view.show()
    trace = trace_text(state.loaded, TEXT)
    state.set_trace(trace)
    drawn(view)
    return state, view, trace


def label_specs(axis) -> list:
    """(rect in the axis' coordinates, flags, text) of each label the axis draws."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return texts
