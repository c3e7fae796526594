"""Draw one view of a trace offscreen and save it: what `attnscope export` uses, so the
files are drawn by the same widgets as the window."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QApplication


def render_view(loaded, trace, view: str, kind: str, layer: int, head: int, size: str, path: Path) -> Path:
    """Draw one view ("grid", "head" or "lines") with the window's own widget and save it."""
    app = QApplication.instance() or QApplication([])
    from gui.export import export_widget
    from gui.state import AppState

    state = AppState()
    state.set_model(loaded)
    state.set_trace(trace)
    state.select(kind, layer, head)     # every view shows the state's selection
    if view == "grid":
        from gui.views.head_grid import HeadGrid as View
    elif view == "head":
        from gui.views.head_detail import HeadDetail as View
    else:
        from gui.views.head_lines import HeadLines as View
    widget = View(state)
    w, h = (int(v) for v in size.lower().split("x"))
    widget.resize(w, h)
    widget.show()
    from gui.views.prepared import wait_until_drawn
    wait_until_drawn(widget)
    try:
        return export_widget(widget, path)
    finally:
        widget.close()
        widget.deleteLater()
        app.processEvents()
