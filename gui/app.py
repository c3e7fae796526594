"""Start the Qt application and show the main window (``attnscope`` with no subcommand)."""
from __future__ import annotations

import os
import sys
from pathlib import Path


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
    if active_threads() and _is_the_program():
        # A forward or a decoding step still runs (cancelled: its result would be dropped) and
        # cannot stop inside itself; the thread pools would wait for it at exit, keeping the
        # process alive seconds after its window. Settings are saved (closeEvent): end now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _is_the_program() -> bool:
    """Whether this process is attnscope itself (``attnscope`` or ``python main.py``), which may
    end at once; a script that calls ``main.main()`` keeps control after the window closes."""
    return Path(sys.argv[0]).name in ("attnscope", "main.py")
