"""Child of bench/quit.py: ``attnscope --model X`` as a user starts it, brought to the moment
a user quits (idle, during a long Run, during the Lens), then quit. Prints JSON lines of
CLOCK_MONOTONIC marks (the parent's clock too): {"ready": t} when it is time to quit, and,
when it quits itself (no X display: the parent cannot press a key), {"quit": t, "closed": t}.

The app runs through its own entry point (``main.main``: the parser, ``gui.app.run_app``);
the only addition is a 5 ms QTimer that watches the window and sets the scene.
argv: scenario (idle | run | lens), model folder, text file, then "self" to quit itself.
"""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    import main as attnscope

    scenario, model, text_file = sys.argv[1:4]
    quits_itself = sys.argv[4:5] == ["self"]
    long_text = Path(text_file).read_text()
    app = QApplication(sys.argv[:1])
    watch = QTimer()
    watch.setInterval(5)
    stage = {"name": "first run"}

    def ready(window) -> None:
        watch.stop()
        print(json.dumps({"ready": time.monotonic(), "scenario": scenario}), flush=True)
        if quits_itself:
            quit_at = time.monotonic()
            window.close()          # what File > Quit (Ctrl+Q) calls
            print(json.dumps({"quit": quit_at, "closed": time.monotonic()}), flush=True)

    def look() -> None:
        window = next((w for w in app.topLevelWidgets() if type(w).__name__ == "MainWindow"), None)
        if window is None:
            return
        if stage["name"] == "first run":
            if window.state.trace is None or window.run_jobs.busy or window.output_jobs.busy:
                return
            if scenario == "idle":
                ready(window)
                return
            if scenario == "lens":
                window.docks["Lens"].show()
                window.docks["Lens"].raise_()
                window.dock_layout.view("Lens")
            window.input_bar.text_edit.setText(long_text)
            window.run()
            stage["name"] = "long"
        elif scenario == "run" and "attention layers" in window.status_line.busy_label.text():
            ready(window)           # the long Run is inside its forward
        elif scenario == "lens" and not window.run_jobs.busy and window.views["Lens"].jobs.busy:
            ready(window)           # the long Run is done; the Lens runs its forwards

    watch.timeout.connect(look)
    watch.start()
    sys.exit(attnscope.main(["--model", model, "--device", "cpu"]))


if __name__ == "__main__":
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    main()
