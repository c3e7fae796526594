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
    if view == "grid":
        from gui.views.head_grid import HeadGrid
        widget = HeadGrid(state)
        widget.kind_box.setCurrentText(kind)
    elif view == "head":
        from gui.views.head_detail import HeadDetail
        widget = HeadDetail(state)
        state.select_head(kind, layer, head)
    else:
        from gui.views.head_lines import HeadLines
        widget = HeadLines(state)
        widget.kind_box.setCurrentText(kind)
        widget.layer_box.setValue(layer)
        widget.set_heads([head])
    w, h = (int(v) for v in size.lower().split("x"))
    widget.resize(w, h)
    widget.show()
    app.processEvents()
    try:
        return export_widget(widget, path)
    finally:
        widget.close()
        widget.deleteLater()
        app.processEvents()
