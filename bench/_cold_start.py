"""Child of bench/gui.py's cold start: ``attnscope [--model X]`` as a user starts it, timed
until the first heads are on screen. Prints one JSON line of CLOCK_MONOTONIC marks (the
parent's clock too), then quits.

The app runs through its own entry point (``main.main``: the parser, ``gui.app.run_app``,
its QApplication options and pyqtgraph options). The only addition is a 2 ms QTimer that
watches the window: shown, model loaded, trace arrived, heads grid drawn; then the grid
is rendered once (a grab: the paint) and the marks are printed.
"""
import time

T0 = time.monotonic()  # the interpreter is up; the parent's mark before the spawn is earlier

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> None:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    import main as attnscope

    marks = {"interpreter_up": T0}
    app = QApplication(sys.argv[:1])   # run_app takes this instance and sets its options on it
    watch = QTimer()
    watch.setInterval(2)

    def look() -> None:
        window = next((w for w in app.topLevelWidgets() if type(w).__name__ == "MainWindow"), None)
        if window is None:
            return
        now = time.monotonic()
        if window.isVisible():
            marks.setdefault("window_shown", now)
        if window.state.loaded is not None:
            marks.setdefault("model_loaded", now)
        if window.state.trace is not None:
            marks.setdefault("trace_arrived", now)
        if window.grid.drawing is not None:
            marks.setdefault("heads_applied", now)
            window.grid.grab()
            marks["heads_drawn"] = time.monotonic()
            marks["tokens"] = len(window.state.trace.source_tokens or window.state.trace.target_tokens)
            marks["model"] = window.state.loaded.name
            print(json.dumps(marks), flush=True)
            watch.stop()
            os._exit(0)   # the figure is taken; closing the window and the threads is not part of it

    watch.timeout.connect(look)
    watch.start()
    sys.exit(attnscope.main(sys.argv[1:]))


if __name__ == "__main__":
    main()
