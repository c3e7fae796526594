"""What starting attnscope imports: the heavy libraries only when they are needed.

Each check runs in a fresh interpreter, since this test process has long imported torch.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers")


def imported_after(code: str) -> dict[str, bool]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_catalog_names_sources_without_torch():
    found = imported_after("from attnscope.engine.loading import catalog\ncatalog.default_source()\ncatalog.bundled_checkpoints()")
    assert found == {"torch": False, "transformers": False}


def test_command_line_parser_imports_neither_torch_nor_transformers():
    found = imported_after("import attnscope.cli.entry as main\nmain.build_parser()")
    assert found == {"torch": False, "transformers": False}


def test_opening_a_model_imports_torch_then():
    found = imported_after("from attnscope.engine.loading import catalog\ncatalog.open_model('random-gpt', 'cpu')")
    assert found["torch"] is True
    assert found["transformers"] is False


def test_importing_the_window_imports_neither_torch_nor_transformers():
    found = imported_after("import attnscope.gui.app\nimport attnscope.gui.window.main_window")
    assert found == {"torch": False, "transformers": False}


# The start of every probe: it notes which thread imports torch first.
FIRST_IMPORT = """
import json, sys, threading

HEAVY = {heavy!r}
found = {{}}


class FirstImport:
    def find_spec(self, name, path=None, target=None):  # asked only while torch is not imported
        if name == "torch":
            found.setdefault("torch_imported_by", threading.current_thread().name)
        return None


sys.meta_path.insert(0, FirstImport())
"""
# `attnscope --device cpu` as a user starts it (main.main -> run_app), with the model's worker
# held at its start until the window is on screen: whatever torch the window needed by then,
# the GUI thread imported it. Then the worker goes on, and the first import of torch is seen.
WINDOW_PROBE = FIRST_IMPORT + """
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

import attnscope.gui.window.engine_calls
import attnscope.gui.window.main_window
import attnscope.cli.entry as main
from attnscope.gui.worker import job_failures

opening = threading.Event()
real_open = attnscope.gui.window.engine_calls.open_model


def held_open(*args):
    opening.wait()
    return (yield from real_open(*args))


attnscope.gui.window.engine_calls.open_model = held_open
app = QApplication(sys.argv[:1])   # run_app takes this instance


def imported():
    return {{m: m in sys.modules for m in HEAVY}}


def when_shown():
    window = next(w for w in app.topLevelWidgets() if isinstance(w, attnscope.gui.window.main_window.MainWindow))
    found["shown"] = window.isVisible()
    found["at_show"] = imported()

    def end(key, value):
        found[key] = value
        QTimer.singleShot(0, window.close)
    window.state.model_changed.connect(lambda loaded: end("loaded", loaded.name))
    job_failures().failed.connect(lambda title, message: end("error", message))
    opening.set()


QTimer.singleShot(0, when_shown)
main.main(["--device", "cpu"])
found["at_end"] = imported()
print(json.dumps(found))
"""


def test_the_window_is_on_screen_before_torch_is_imported_by_the_model_worker(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ATTNSCOPE_SETTINGS": str(tmp_path / "settings.ini")}
    out = subprocess.run([sys.executable, "-c", WINDOW_PROBE.format(heavy=HEAVY)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True, timeout=600)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["shown"] is True
    assert found["at_show"] == {"torch": False, "transformers": False}
    assert "error" not in found and found["loaded"]
    assert found["torch_imported_by"] != "MainThread"      # the worker that opened the model
    assert found["at_end"] == {"torch": True, "transformers": False}


def test_importing_the_positions_lab_imports_no_torch():
    found = imported_after("import attnscope.gui.views.positional")
    assert found == {"torch": False, "transformers": False}


# The Positions lab alone, no model (a saved layout with its tab in front): its worker is held
# until the lab is on screen, so whatever torch the GUI thread needed to build and show it is
# imported by then. Then the worker goes on and draws, importing torch itself.
LAB_PROBE = FIRST_IMPORT + """
from PySide6.QtWidgets import QApplication

import attnscope.gui.views.positional as lab_module
from attnscope.gui.state import AppState
from attnscope.gui.drawing.prepared import wait_until_drawn

drawing = threading.Event()
real_drawing = lab_module.lab_drawing


def held_drawing(*args):
    drawing.wait()
    return real_drawing(*args)


lab_module.lab_drawing = held_drawing
app = QApplication(sys.argv[:1])
lab = lab_module.PositionalLab(AppState())
lab.resize(1000, 600)
lab.show()
app.processEvents()
found["shown"] = lab.isVisible()
found["at_show"] = {{m: m in sys.modules for m in HEAVY}}
drawing.set()
found["drawn"] = wait_until_drawn(lab)
found["heat"] = list(lab.heat.image.shape)
found["at_end"] = {{m: m in sys.modules for m in HEAVY}}
lab.close()
print(json.dumps(found))
"""


def test_the_positions_lab_is_on_screen_before_its_worker_imports_torch():
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", LAB_PROBE.format(heavy=HEAVY)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True, timeout=600)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["shown"] is True and found["at_show"] == {"torch": False, "transformers": False}
    assert found["drawn"] is True and found["heat"] == [100, 64]      # the formula's table, drawn
    assert found["torch_imported_by"] != "MainThread"                 # the lab's worker
    assert found["at_end"] == {"torch": True, "transformers": False}
