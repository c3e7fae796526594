"""Quitting the main window: unsaved work is asked about, files being written are finished.

Kept out of gui.window.main_window: these read the window's views and jobs, and only closeEvent
and the tests' discard_and_stop call them.
"""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

UNSAVED = "The model trained in the Training panel has not been saved. Save it before quitting?"


def unsaved_views(window) -> list[QWidget]:
    """Views holding work that exists nowhere else (a trained model not yet saved)."""
    return [v for v in window.views.values() if getattr(v, "unsaved", False)]


def confirm_discard(window) -> bool:
    """Ask before unsaved work is lost: Save (then close), Discard, or Cancel."""
    unsaved = unsaved_views(window)
    if not unsaved:
        return True
    box = QMessageBox(QMessageBox.Icon.Question, "Unsaved model",
                      " ".join(dict.fromkeys(getattr(v, "unsaved_message", UNSAVED) for v in unsaved)),
                      QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                      | QMessageBox.StandardButton.Cancel, window)
    answer = box.exec()
    if answer == QMessageBox.StandardButton.Save:
        for view in unsaved:
            view.save_dialog(wait=True)      # written in its worker; the window waits, painting
        return not unsaved_views(window)
    if answer == QMessageBox.StandardButton.Discard:
        for view in unsaved:                 # discarded is discarded: a second close asks nothing
            view.unsaved = False
        return True
    return False


def saving(window) -> bool:
    """A file is being written: the window's export or save, or a view's (a checkpoint)."""
    jobs = [window.save_jobs, window.export_jobs, *(getattr(v, "save_jobs", None) for v in window.views.values())]
    return any(j is not None and j.busy for j in jobs)
