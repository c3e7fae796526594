"""Start the Qt application and show the main window (``attnscope`` with no subcommand)."""
from __future__ import annotations

import atexit
import os
import sys


def run_app(args) -> int:
    import pyqtgraph as pg
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    from gui.main_window import MainWindow
    from gui.worker import active_threads

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("attnscope")
    app.setOrganizationName("attnscope")
    app.setStyle("Fusion")
    pg.setConfigOptions(antialias=True)
    window = MainWindow(source=getattr(args, "model", None), device=getattr(args, "device", None))
    window.show()
    code = app.exec()
    # Tear the window down while Qt and Python are both whole: left to the interpreter's exit,
    # wrappers are collected in no particular order and Qt can crash on the way out.
    window.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    del window
    if active_threads():
        # A forward or a decoding step still runs (cancelled: its result would be dropped) and
        # cannot stop inside itself; Qt's thread pools would wait for it when the interpreter
        # tears them down, keeping the process alive seconds (or for ever) after its window.
        # Settings are saved (closeEvent). Whoever called us finishes first; then the process
        # ends at once, without the wait.
        atexit.register(_end_now, code)
    return code


def _end_now(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
