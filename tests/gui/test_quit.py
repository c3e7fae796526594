"""Quit (issue 40, item 3): the window goes at once and the process right after, whatever runs.

Measured with the real app under Xvfb by bench/quit.py (a real Ctrl+Q). Here, structure, not
time: Quit waits one small budget in all for the jobs it cancels (each job waited 0.2 s of its
own: a window with nine busy views froze for seconds), and the process ends without the
interpreter's teardown even when nothing runs (it outlived its window by 5-11 s)."""
import os
import subprocess
import sys
import threading
from pathlib import Path

import attnscope.gui.window.main_window
import attnscope.gui.worker
from attnscope.gui.worker import SHARED, Jobs

ROOT = Path(__file__).resolve().parents[2]


def test_quit_waits_one_small_budget_for_jobs_that_cannot_stop(window, qtbot, monkeypatch):
    gate, entered = threading.Event(), []
    waits = []
    real_shutdown = Jobs.shutdown

    def spied(self, timeout_s=10.0):
        waits.append(timeout_s)
        return real_shutdown(self, timeout_s)

    def stuck():                       # a kernel that cannot stop inside itself
        entered.append(1)
        gate.wait(60)

    stuck_jobs = [Jobs(window, "stuck", lane=SHARED) for _ in range(3)]   # the shared pool has 4 threads
    for jobs in stuck_jobs:
        jobs.start(stuck)
    qtbot.waitUntil(lambda: len(entered) == 3, timeout=10000)
    monkeypatch.setattr(Jobs, "shutdown", spied)
    try:
        assert window.close()
        assert not window.isVisible()
        # One deadline for them all: each is given what is left of it (the first stuck job uses
        # it up), never a wait of its own (0.2 s each before).
        assert waits and max(waits) <= attnscope.gui.window.main_window.QUIT_WAIT_S and waits == sorted(waits, reverse=True), waits
    finally:
        gate.set()
    assert attnscope.gui.worker.shutdown_all(timeout_s=30)


IDLE_QUIT = r"""
import atexit, sys
sys.path.insert(0, {root!r})
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import attnscope.gui.window.main_window as mw
from attnscope.gui.app import run_app

atexit.register(lambda: print("the interpreter tore itself down", flush=True))   # runs last, if at all
app = QApplication(sys.argv[:1])

def close_when_idle():
    window = next((w for w in app.topLevelWidgets() if isinstance(w, mw.MainWindow)), None)
    if window is None or window.state.trace is None or window.run_jobs.busy:
        QTimer.singleShot(20, close_when_idle)
        return
    window.close()

QTimer.singleShot(0, close_when_idle)
print("exit", run_app(type("Args", (), {{"model": "random-gpt", "device": "cpu"}})()), flush=True)
"""


def test_an_idle_quit_ends_the_process_without_the_interpreters_teardown(tmp_path):
    script = tmp_path / "idle_quit.py"
    script.write_text(IDLE_QUIT.format(root=str(ROOT)))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", ATTNSCOPE_SETTINGS=str(tmp_path / "settings.ini"))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exit 0" in done.stdout                             # whoever called run_app finished first ...
    assert "tore itself down" not in done.stdout               # ... then the process ended, with no teardown
    assert (tmp_path / "settings.ini").exists()
