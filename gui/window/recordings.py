"""Recordings in the main window: File > Save Recording and Open Recording.

A recording is a Run's queries and keys in one .safetensors file (engine.traces.recording_file):
every view draws it with no model. Both are written and read on the model thread
(gui.window.engine_calls); before that the window asks whether a file may be replaced
(``may_replace``): never the model open now or one of its files, a recording of ours with Yes
as the default, any other file with a warning and No.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from attnscope.gui.window import engine_calls
from attnscope.gui.window.model_opening import same_source
from attnscope.gui.settings import remember_folder, start_folder

# Saved by the window as NAME.recording.safetensors; one the command line wrote may have any name.
RECORDING_FILTER = "attnscope recordings (*.recording.safetensors);;Any .safetensors file (*.safetensors)"


class Recordings:
    """The window's recording dialogs; ``said``: the status line that announced the open one."""

    def __init__(self, window):
        self.window = window
        self.said: str | None = None

    def save_dialog(self) -> None:
        """The Run's recording as one .safetensors file, in a worker."""
        w = self.window
        trace = w.state.trace
        if trace is None or trace.recording is None:
            w.show_error("Nothing to save", "Run the model on a text first: a recording is what a Run computes.")
            return
        name = "".join(c if c.isalnum() or c in "-_." else "-" for c in trace.model_name)
        path, _ = QFileDialog.getSaveFileName(w, "Save Recording", str(Path(start_folder(
            w.settings, "recordings")) / f"{name}.recording.safetensors"), RECORDING_FILTER)
        if not path:
            return
        from attnscope.engine.traces import RecordingError, recording_target

        try:
            path = str(recording_target(path, replace=True))   # the name it is written as (.safetensors added)
        except RecordingError as exc:
            w.show_error("Not saved", exc)
            return
        if not self.may_replace(path):
            return
        remember_folder(w.settings, "recordings", path)
        w.save_jobs.start(engine_calls.save_recording, trace, path,
                          on_returned=lambda written: w.statusBar().showMessage(f"Saved {written}", 6000))

    def may_replace(self, path: str) -> bool:
        """Whether the recording may be written to ``path``: a new file, yes; the model open now,
        never; any other existing file only when the user says so here (the dialog asked about
        the name typed, not always about the name written), and a file that is not a recording
        of ours (a model's weights) with a warning and No as the default."""
        from attnscope.engine.traces import is_recording

        w = self.window
        target = Path(path)
        if not target.exists():
            return True
        if same_source(str(target), w.current_source) or self.reads_from(target):
            w.show_error("Not saved", f"{target.name} is the model open now, or one of its files; a recording "
                                      "never replaces it. Choose another name.")
            return False
        ours = is_recording(target)
        what = ("It is a recording; replace it?" if ours else
                "It is not a recording of attnscope (perhaps a model's weights): replacing it loses that file.")
        answer = QMessageBox.question(w, "Replace the file?", f"{target.name} already exists. {what}",
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.Yes if ours else QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def reads_from(self, target: Path) -> bool:
        """Whether ``target`` is one of the open model's own files (a shard of a folder model, or a
        hub model's file in the cache, a link to a blob there), which a recording never replaces."""
        loaded = self.window.state.loaded
        folder = loaded.meta.get("folder") if loaded is not None else None
        if not folder or not Path(folder).is_dir():
            return False
        try:
            mine = target.resolve()
            return any(f.resolve() == mine for f in Path(folder).iterdir())
        except OSError:
            return False

    def open_dialog(self) -> None:
        w = self.window
        path, _ = QFileDialog.getOpenFileName(w, "Open Recording", start_folder(w.settings, "recordings"),
                                              RECORDING_FILTER)
        if path:
            remember_folder(w.settings, "recordings", path)
            self.open(path)

    def open(self, path: str) -> None:
        """A saved Run, drawn by every view with no model (checked in the worker; a bad file: one dialog).
        A newer request than any Run: the Run on its way and every job for the old text stop."""
        w = self.window
        w.input_bar.live_timer.stop()
        w.run_jobs.cancel()
        w.supersede()
        w.file_jobs.start(engine_calls.open_recording, path, on_returned=lambda trace: self._opened(trace, path),
                          on_error=lambda _exc: w.state.end_request())

    def _opened(self, trace, path: str) -> None:
        self.shown(trace, path)

    def shown(self, trace, path: str) -> None:
        """``trace`` drawn by every view with no model (``path``: the file, or what it came from)."""
        w = self.window
        w.state.set_trace(trace, recording=path)
        w.state.set_output("")
        w.state.end_request()
        n = max(len(trace.source_tokens), len(trace.target_tokens))
        w.statusBar().showMessage(f"Recording of {trace.model_name}: {n:,} tokens, drawn with no model. "
                                  "A Run replaces it.", 10000)
        self.said = w.statusBar().currentMessage()
