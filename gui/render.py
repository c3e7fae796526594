"""Draw one view of a trace offscreen and save it: what `attnscope export` uses, so the
files are drawn by the same widgets as the window."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from PySide6.QtCore import qInstallMessageHandler
from PySide6.QtWidgets import QApplication

OFFSCREEN_NOISE = "does not support propagateSizeHints"   # the offscreen platform, of every window shown


@contextlib.contextmanager
def _quiet_offscreen_platform():
    """While a view is drawn: drop the one line Qt's offscreen platform prints for every
    window it shows, which on `attnscope export`'s stderr read like a problem. Every other Qt
    message still goes where it went; the handler before is back afterwards."""
    previous = None

    def handler(mode, context, message: str) -> None:
        if OFFSCREEN_NOISE in message:
            return
        if previous is not None:
            previous(mode, context, message)
        else:
            print(message, file=sys.stderr)

    previous = qInstallMessageHandler(handler)
    try:
        yield
    finally:
        qInstallMessageHandler(previous)


def render_view(loaded, trace, view: str, kind: str, layer: int, head: int, size: str, path: Path) -> Path:
    """Draw one view ("grid", "head" or "lines") with the window's own widget and save it."""
    app = QApplication.instance() or QApplication([])
    quiet = _quiet_offscreen_platform() if app.platformName() == "offscreen" else contextlib.nullcontext()
    with quiet:
        return _render(app, loaded, trace, view, kind, layer, head, size, path)


def _render(app, loaded, trace, view: str, kind: str, layer: int, head: int, size: str, path: Path) -> Path:
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
