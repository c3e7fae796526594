"""Tests run headless: Qt draws offscreen unless a caller set a platform on purpose."""
import importlib.util
import os
import re
import tempfile
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Never touch the user's real settings: the window stores its QSettings in a throwaway file,
# in a folder removed when the run ends.
_SETTINGS_DIR = tempfile.TemporaryDirectory(prefix="attnscope-tests-")
os.environ.setdefault("ATTNSCOPE_SETTINGS", os.path.join(_SETTINGS_DIR.name, "settings.ini"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(min(2, torch.get_num_threads()))

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

# A GPU server often has torch and transformers but no Qt: there the engine's tests run and the
# window's are left out (not failed at import), so `python -m pytest -m gpu tests` works as is.
_HAVE_QT = importlib.util.find_spec("PySide6") is not None and importlib.util.find_spec("pyqtgraph") is not None
# The Qt mark follows the folder: tests/gui/ holds the window's tests. A test elsewhere that still
# drives a widget (a bad input typed into a dialog, in tests/bad_inputs/) is found by what it uses.
QT_ROOM = Path(__file__).resolve().parent / "gui"
_NEEDS_QT = ("PySide6", "pyqtgraph", "attnscope.gui", "qtbot", "from bench._app", "from tests.gui")


def pytest_ignore_collect(collection_path, config):
    if _HAVE_QT:
        return None
    path = Path(collection_path).resolve()
    if path == QT_ROOM or QT_ROOM in path.parents:
        return True
    if path.suffix == ".py" and path.name.startswith("test_"):
        text = path.read_text(errors="ignore")
        return any(word in text for word in _NEEDS_QT) or None
    return None


@pytest.fixture(autouse=True)
def _own_settings(tmp_path_factory, monkeypatch):
    """Each test's window starts from settings of its own: one that switches presentation mode
    or the theme on (both kept across starts) must not leave a later test's window larger or
    darker than it expects (the theme contrast test failed on a clipped label that way)."""
    monkeypatch.setenv("ATTNSCOPE_SETTINGS", str(tmp_path_factory.mktemp("settings") / "settings.ini"))


@pytest.fixture(autouse=True)
def _delete_closed_widgets_now():
    """pytest-qt closes a test's widgets with deleteLater(), and Qt runs deferred deletes only
    when an event loop is re-entered: maybe in a later test, after Python has collected part
    of the widget's wrappers, which crashes. Run them at once, while everything is alive."""
    yield
    if "PySide6.QtCore" not in sys.modules:    # an engine-only test (a GPU server may have no Qt at all)
        return
    from PySide6.QtCore import QCoreApplication, QEvent

    if QCoreApplication.instance() is not None:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    worker = sys.modules.get("attnscope.gui.worker")
    if worker is not None:     # the cycles collect on this thread (gui.worker.collect_on_gui_thread),
        worker.collect_if_due()  # and an engine test that follows runs no event loop to do it


# ---- no test waits for a click ------------------------------------------------------------
# Offscreen, a modal dialog waits for a click that never comes: `make test` hung 15 minutes in
# the window's "Unsaved model" question, asked by pytest-qt's close of a window whose training
# still ran (issue 53). Every blocking entry point answers as Esc would and fails the test,
# naming the dialog; a test that expects a dialog patches it itself, which overrides this.
_STATIC_ANSWERS = {   # class name -> {static helper: what Esc gives}
    "QMessageBox": dict.fromkeys(("question", "warning", "critical", "information"), "cancel")
    | dict.fromkeys(("about", "aboutQt"), None),
    "QFileDialog": {"getOpenFileName": ("", ""), "getSaveFileName": ("", ""), "getOpenFileNames": ([], ""),
                    "getExistingDirectory": "", "getOpenFileUrl": "url pair", "getSaveFileUrl": "url pair",
                    "getOpenFileUrls": ([], ""), "getExistingDirectoryUrl": "url"},
    "QInputDialog": {"getText": ("", False), "getMultiLineText": ("", False), "getItem": ("", False),
                     "getInt": (0, False), "getDouble": (0.0, False)},
    "QColorDialog": {"getColor": "color"},
    "QFontDialog": {"getFont": "font"},
}


def _esc_answer(widgets, answer):
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QColor, QFont

    made = {"cancel": lambda: widgets.QMessageBox.StandardButton.Cancel, "url": QUrl,
            "url pair": lambda: (QUrl(), ""), "color": QColor, "font": lambda: (False, QFont())}
    return made[answer]() if isinstance(answer, str) and answer in made else answer


def _described(args, kwargs) -> str:
    words = [a for a in list(args) + list(kwargs.values()) if isinstance(a, str) and a]
    return " / ".join(words[:2])


@pytest.fixture(autouse=True)
def _no_unanswered_dialogs():
    """Fail a test in which a dialog nobody patched opened (at its teardown, with the dialog's
    title and text); the dialog itself returns at once, refused, so nothing blocks."""
    if not _HAVE_QT:
        yield
        return
    from PySide6 import QtWidgets

    opened: list[str] = []

    def guarded_exec(self, *args, **kwargs):
        title, text = (getattr(self, name, lambda: "") for name in ("windowTitle", "text"))
        words = [w for w in (title(), text() if callable(text) else "", getattr(self, "labelText", str)()) if w]
        opened.append(f"{type(self).__name__}.exec: " + " / ".join(words))
        return (QtWidgets.QMessageBox.StandardButton.Cancel if isinstance(self, QtWidgets.QMessageBox)
                else None if isinstance(self, QtWidgets.QMenu) else 0)   # 0: QDialog's Rejected

    def guarded_static(name, answer):
        def static(*args, **kwargs):
            opened.append(f"{name}: {_described(args, kwargs)}")
            return _esc_answer(QtWidgets, answer)
        return staticmethod(static)

    with pytest.MonkeyPatch.context() as mp:
        for cls in (QtWidgets.QDialog, QtWidgets.QMenu):
            for name in ("exec", "exec_"):
                if name in vars(cls):
                    mp.setattr(cls, name, guarded_exec)
        for cls_name, helpers in _STATIC_ANSWERS.items():
            cls = getattr(QtWidgets, cls_name)
            for name, answer in helpers.items():
                if name in vars(cls):
                    mp.setattr(cls, name, guarded_static(f"{cls_name}.{name}", answer))
        yield
    if opened:
        pytest.fail("a dialog opened that no one answers offscreen (patch it where the test expects it): "
                    + "; ".join(opened), pytrace=False)


def _discard_open_windows() -> None:
    """Every main window still alive stops its workers and drops unsaved work, so the close
    that follows (pytest-qt's, a fixture's) asks nothing and leaves no thread training."""
    main_window = sys.modules.get("attnscope.gui.window.main_window")
    if main_window is None:
        return
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    for w in (app.topLevelWidgets() if app is not None else []):
        if isinstance(w, main_window.MainWindow):
            w.discard_and_stop()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item):
    """Before pytest-qt closes the test's widgets (its own teardown hook runs inside this one)."""
    _discard_open_windows()
    yield


@pytest.fixture
def drawn(qtbot):
    """``drawn(view, ...)``: wait until each view has applied the drawing its worker prepared
    (views prepare their images off the GUI thread; see gui/drawing/prepared.py)."""
    def wait(*views, timeout=20000):
        for view in views:
            qtbot.waitUntil(lambda: not view.draw_jobs.busy, timeout=timeout)
    return wait


@pytest.fixture
def window_on(qtbot):
    """``window_on(source)``: the main window on that model, shown, with its first trace in;
    closed after the test."""
    import shiboken6

    from attnscope.gui.window.main_window import MainWindow

    opened = []

    def open_window(source: str):
        w = MainWindow(source=source, device="cpu")
        qtbot.addWidget(w)
        w.resize(1300, 850)
        w.show()
        qtbot.waitUntil(lambda: w.state.trace is not None, timeout=120000)   # 2 cores, load 8-14
        opened.append(w)
        return w
    yield open_window
    for w in opened:        # pytest-qt closed them (after _discard_open_windows): close what is left
        if shiboken6.isValid(w):
            w.discard_and_stop()
            w.close()


@pytest.fixture
def window(window_on):
    """The main window on an untrained translator, shown, with its first trace in."""
    return window_on("random-translator")
