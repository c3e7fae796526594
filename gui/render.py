"""Draw one view of a trace offscreen and save it: what `attnscope export` uses, so the
files are drawn by the same widgets as the window.

Why it saves the view's ``export_target`` in a theme of its own: the file must be what
File > Export View writes (the plot, its titles and colorbar; no combo boxes, spin boxes or
hints), and a fresh process has pyqtgraph's default black background until a theme is set.
The theme is set for the drawing only and put back after, so a process that also shows a
window (the tests) keeps its own."""
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


@contextlib.contextmanager
def _theme(dark: bool):
    """The light or dark theme while a view is drawn; the one before is back afterwards."""
    import pyqtgraph as pg

    from attnscope.gui.theme import apply_theme, is_dark

    app = QApplication.instance()
    before = (is_dark(), pg.getConfigOption("background"), pg.getConfigOption("foreground"), app.palette())
    apply_theme(dark)
    try:
        yield
    finally:
        apply_theme(before[0])
        pg.setConfigOptions(background=before[1], foreground=before[2])
        app.setPalette(before[3])


def render_view(loaded, trace, view: str, kind: str, layer: int, head: int, size: str, path: Path,
                dark: bool = False, progress=None, timeout_s: float = 60.0) -> Path:
    """Draw one view ("grid", "head" or "lines") with the window's own widget and save what
    File > Export View saves of it, ``size`` (WxH) pixels, in the light (or ``dark``) theme.
    ``progress`` gets the view's progress records (("overview", layers done, layers) while a
    long recording is pooled); a drawing not finished in ``timeout_s`` is TimeoutError, never
    a half-drawn file."""
    app = QApplication.instance() or QApplication([])
    quiet = _quiet_offscreen_platform() if app.platformName() == "offscreen" else contextlib.nullcontext()
    with quiet, _theme(dark):
        return _render(app, loaded, trace, view, kind, layer, head, size, path, dark, progress, timeout_s)


def _render(app, loaded, trace, view: str, kind: str, layer: int, head: int, size: str, path: Path,
            dark: bool, progress, timeout_s: float) -> Path:
    from attnscope.gui.window.export import export_target, export_widget
    from attnscope.gui.state import AppState
    from attnscope.gui.theme import restyle_plots
    from attnscope.gui.drawing.prepared import wait_until_drawn

    state = AppState()
    state.dark = dark
    if loaded is not None:          # a recording draws with no model
        state.set_model(loaded)
    if view == "grid":
        from attnscope.gui.views.head_grid import HeadGrid as View
    elif view == "head":
        from attnscope.gui.views.head_detail import HeadDetail as View
    else:
        from attnscope.gui.views.head_lines import HeadLines as View
    widget = View(state)            # before the trace: its first drawing already reports its progress
    if progress is not None:
        own = widget.drawing_progress
        widget.drawing_progress = lambda record: (own(record), progress(record))
    state.set_trace(trace)
    state.select(kind, layer, head)     # every view shows the state's selection
    restyle_plots(widget, dark)
    w, h = (int(v) for v in size.lower().split("x"))
    widget.resize(w, h)
    widget.show()
    drawn = wait_until_drawn(widget, timeout_s)
    target = export_target(widget)
    # The plot gets the size asked for (Head lines keeps a narrower band in the window), and
    # the view grows by what its controls take.
    target.setFixedSize(w, h)
    widget.resize(widget.sizeHint().expandedTo(widget.minimumSizeHint()))
    app.processEvents()
    if not (drawn and wait_until_drawn(widget, timeout_s)):
        widget.close()
        raise TimeoutError(f"The {view} view was not drawn within {timeout_s:,.0f} s; nothing was written.")
    try:
        return export_widget(target, path)
    finally:
        widget.close()
        widget.deleteLater()
        app.processEvents()
