"""The Qt side the GUI benches share: the application set up as the app sets it up, and an
event loop that runs until a condition holds."""
from __future__ import annotations

import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402


def app_options(app) -> None:
    """What gui.app.run_app sets on the application before it builds the window."""
    import pyqtgraph as pg

    app.setApplicationName("attnscope")
    app.setOrganizationName("attnscope")
    app.setStyle("Fusion")
    pg.setConfigOptions(antialias=True)


def application() -> QApplication:
    app = QApplication.instance() or QApplication([])
    app_options(app)
    return app


def spin(until, timeout_s: float = 120.0) -> None:
    """Process events until ``until()`` is true (TimeoutError after ``timeout_s``), sleeping
    between events as the app's own loop does (gui.worker.process_events_until)."""
    from attnscope.gui.worker import process_events_until

    if not process_events_until(until, timeout_s):
        raise TimeoutError("the window did not finish in time")


def idle(seconds: float) -> None:
    """Let ``seconds`` pass with the event loop running (a window's pause between two
    actions); the GUI benches' Pacers idle with this."""
    deadline = time.monotonic() + seconds
    spin(lambda: time.monotonic() >= deadline, timeout_s=seconds + 60)
