"""Start the Qt application and show the main window (``attnscope`` with no subcommand)."""
from __future__ import annotations

import atexit
import logging
import os
import sys


_KEEP: list = []


def application():
    """The QApplication (this process's one, made if there is none), set up as the app's."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("attnscope")
    app.setOrganizationName("attnscope")
    app.setStyle("Fusion")
    pg.setConfigOptions(antialias=True)
    return app


def run_app(args) -> int:
    from attnscope.gui.window.main_window import MainWindow

    app = application()
    window = MainWindow(source=getattr(args, "model", None), device=getattr(args, "device", None))
    window.show()
    code = app.exec()
    # The settings are saved (closeEvent). Whoever called us finishes first; then the process
    # ends at once, without the interpreter's teardown: a forward still running (cancelled,
    # its result dropped) cannot stop inside itself and Qt's thread pools would wait for it;
    # even idle, tearing down the window, a model and torch's modules kept the process seconds
    # after its window (issue 40: 5-11 s). Nothing is collected before then, so Qt's wrappers
    # are never destroyed out of order (the window is not torn down first: no time spent on it).
    _KEEP.append(window)      # not collected on return (its C++ tree would be destroyed then, for nothing)
    atexit.register(_end_now, code)
    return code


def _end_now(code: int) -> None:
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
