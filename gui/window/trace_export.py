"""File > Export Trace: what to export (this head, this kind, every head, the pooled overview),
as NPZ or CSV, its size and time shown before it starts, written in a worker.

Why: every head of a 4,071-token trace is 2 GB as float32, and the window once wrote it on
the GUI thread (frozen for 106 s). Here each choice comes with its estimate
(engine.inspection.export.estimate_export, measured on the model thread); a choice past the
export limit is offered disabled, with the engine's sentence. The file is written on the
shared lane (compressing, CSV lines: most of the time) while the trace's numbers are computed
on the model thread, a block at a time (gui.worker.call_on_lane), so a Run started meanwhile
waits for one block, not for the whole export. Progress and Cancel sit in the status bar, Esc
cancels too; a cancelled export, or one the window's closing stops, leaves no file behind.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, Qt
from PySide6.QtWidgets import (QButtonGroup, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QLabel,
                               QPushButton, QRadioButton, QVBoxLayout, QWidget)

from attnscope.engine.inspection import (EXPORT_LIMIT_BYTES, ExportAsk, estimate_export, export_trace, recording_words,
                                      refusal)
from attnscope.engine.runtime import gib
from attnscope.gui.window.load_progress import STEPS, LoadProgressBar
from attnscope.gui.settings import remember_folder, start_folder
from attnscope.gui.theme import tint
from attnscope.gui.worker import MODEL, SHARED, Jobs, call_on_lane

FORMATS = {"npz": "NumPy arrays (.npz)", "csv": "CSV table (.csv)"}
FILTERS = {"npz": "NumPy arrays (*.npz)", "csv": "CSV table (*.csv)"}
QUIT_WAIT_S = 5.0     # quitting waits this long for a running export to stop and remove its temporary


def export_trace_dialog(window) -> None:
    """File > Export Trace for ``window`` (the main window): the choices, then the file, then the job."""
    if window.state.trace is None:
        window.show_error("Nothing to export", "Run the model on a text first.")
        return
    exporter = TraceExporter.of(window)
    if exporter.busy:
        window.show_error("An export is running", "An export of this trace is being written; cancel it (Esc, or "
                                                  "Cancel in the status bar) to start another.")
        return
    dialog = TraceExportDialog(window.state, window)
    dialog.accepted.connect(lambda: exporter.choose_file(dialog.ask(), dialog.fmt(), dialog.trace))
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()


def _compute_on_model_thread(fn, *args, **kwargs):
    """The export's ``compute``: the trace's numbers on the model thread (torch runs there only)."""
    return call_on_lane(MODEL, fn, *args, **kwargs)


def _estimates(trace, asks: dict, formats=tuple(FORMATS)):
    """The model thread's part of the dialog: first every choice's sizes (arithmetic, at once),
    then the same measured (time, compressed size) for every format, yielded as they come."""
    def each(fmt: str, measure: bool, samples: dict | None = None) -> dict:
        found = {name: estimate_export(trace, ask, fmt, measure, samples) for name, ask in asks.items()}
        return {name: (est, refusal(trace, est)) for name, est in found.items()}
    yield {fmt: each(fmt, False) for fmt in formats}
    samples: dict = {}
    for fmt in formats:
        yield {fmt: each(fmt, True, samples)}


class TraceExporter(QObject):
    """The window's export job, its progress and Cancel in the status bar; one per window."""

    NAME = "trace-exporter"

    @classmethod
    def of(cls, window) -> "TraceExporter":
        found = window.findChild(cls, cls.NAME)
        return found if found is not None else cls(window)

    def __init__(self, window):
        super().__init__(window)
        self.setObjectName(self.NAME)
        self.window = window
        # The shared lane: compressing and CSV lines are numpy and zlib; the numbers come from the
        # model thread (_compute_on_model_thread), so the export never holds that thread long.
        self.jobs = Jobs(self, "The trace could not be exported", lane=SHARED)
        self.progress = LoadProgressBar(self.cancel)
        self.progress.bar.setToolTip("How much of the export is written")
        self.progress.cancel_button.setToolTip("Stop the export; nothing is written (Esc)")
        self.progress.setContentsMargins(6, 0, 6, 0)
        window.statusBar().insertPermanentWidget(0, self.progress)
        self.what = ""       # Esc cancels too: the window's stop_run cancels a running export
        QCoreApplication.instance().aboutToQuit.connect(self._quitting)

    @property
    def busy(self) -> bool:
        return self.jobs.busy

    def choose_file(self, ask, fmt: str, trace) -> None:
        """The file dialog for ``ask`` as ``fmt``, then the export in the worker."""
        settings = self.window.settings
        suggested = Path(start_folder(settings, "exports")) / ask.file_name(fmt)
        path, _ = QFileDialog.getSaveFileName(self.window, "Export Trace", str(suggested),
                                              f"{FILTERS[fmt]};;All files (*)")
        if path:
            remember_folder(settings, "exports", path)
            self.start(trace, path, ask, fmt)

    def start(self, trace, path: str, ask, fmt: str) -> None:
        self.what = {"head": f"head {ask.head} of layer {ask.layer}", "kind": f"every head of {ask.kind}",
                     "trace": "every head", "pooled": "the pooled overview"}[ask.what]
        self.progress.label.setText(f"exporting {self.what}…")
        self.progress.bar.setRange(0, 0)
        self.progress.setVisible(True)
        self.jobs.start(export_trace, trace, path, ask, fmt, compute=_compute_on_model_thread,
                        on_yielded=self._progress, on_returned=self._written, on_finished=self.progress.finish,
                        on_error=lambda _exc: self.progress.finish())

    def _progress(self, record) -> None:
        _stage, done, total = record
        if total:
            self.progress.bar.setRange(0, STEPS)
            self.progress.bar.setValue(round(STEPS * min(1.0, done / total)))
            self.progress.label.setText(f"exporting {self.what}… (Esc cancels)")

    def _written(self, path) -> None:
        self.window.statusBar().showMessage(f"Saved {path} ({gib(Path(path).stat().st_size)})", 8000)

    def cancel(self) -> None:
        """Stop the export at its next block; its temporary is removed, nothing is written."""
        if self.jobs.busy:
            self.jobs.cancel()
            self.progress.finish()
            self.window.statusBar().showMessage("Export cancelled; nothing was written.", 6000)

    def _quitting(self) -> None:
        """The application ends: a running export stops and removes its temporary first."""
        self.jobs.shutdown(QUIT_WAIT_S)


class TraceExportDialog(QDialog):
    """The choices of File > Export Trace, each with its size and time, and the format."""

    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export Trace")
        self.trace = trace = state.trace
        kind = state.kind if state.kind in trace.kinds else trace.kinds[-1]
        self.asks = {"head": ExportAsk("head", kind, state.layer, state.head), "kind": ExportAsk("kind", kind)}
        if len(trace.kinds) > 1:
            self.asks["trace"] = ExportAsk("trace")
        self.asks["pooled"] = ExportAsk("pooled", kind)
        titles = {"head": f"This head: {kind}, layer {state.layer}, head {state.head}",
                  "kind": f"Every head of {kind}",
                  "trace": f"Every head of every kind ({', '.join(trace.kinds)})",
                  "pooled": f"The heads overview of {kind}, pooled by max (what the overview draws)"}
        n = max(len(trace.source_tokens), len(trace.target_tokens))
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"What to export from this trace of {trace.model_name} ({n:,} tokens):"))
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        self.sizes: dict[str, QLabel] = {}
        for name in self.asks:
            button = QRadioButton(titles[name])
            label = QLabel("estimating…")
            label.setContentsMargins(24, 0, 0, 6)
            label.setWordWrap(True)
            tint(label, "muted")
            self.group.addButton(button)
            self.buttons[name], self.sizes[name] = button, label
            layout.addWidget(button)
            layout.addWidget(label)
        self.buttons["head"].setChecked(True)
        form = QFormLayout()
        self.format_box = QComboBox()
        for fmt, title in FORMATS.items():
            self.format_box.addItem(title, fmt)
        form.addRow("Format:", self.format_box)
        layout.addLayout(form)
        note = QLabel(f"An export past {gib(EXPORT_LIMIT_BYTES)} is refused. The compact form of every head is "
                      f"{recording_words(trace)}.")
        note.setWordWrap(True)
        tint(note, "muted")
        layout.addWidget(note)
        box = QDialogButtonBox()
        self.export_button = QPushButton("Export…")
        self.export_button.setEnabled(False)          # until the sizes are known (a choice may be refused)
        box.addButton(self.export_button, QDialogButtonBox.ButtonRole.AcceptRole)
        box.addButton(QDialogButtonBox.StandardButton.Cancel)
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        layout.addWidget(box)
        self.setMinimumWidth(self.fontMetrics().horizontalAdvance("x") * 100)
        self.estimates: dict[str, dict] = {}
        self.format_box.currentIndexChanged.connect(self._show_estimates)
        self.group.buttonToggled.connect(lambda *_: self._show_estimates())
        self.jobs = Jobs(self, "The export could not be estimated", lane=MODEL)
        self.jobs.start(_estimates, trace, self.asks, on_yielded=self._estimated)

    def ask(self):
        return self.asks[next(name for name, b in self.buttons.items() if b.isChecked())]

    def fmt(self) -> str:
        return self.format_box.currentData()

    def _estimated(self, found: dict) -> None:
        self.estimates.update(found)
        self._show_estimates()

    def _show_estimates(self) -> None:
        """Each choice's estimate in the chosen format; a refused one disabled, its sentence as its tip."""
        shown = self.estimates.get(self.fmt())
        if shown is None:
            return
        for name, (est, problem) in shown.items():
            over = f" Over the limit: {problem}" if problem else ""
            self.sizes[name].setText(est.describe() + (" — over the export limit" if problem else ""))
            self.sizes[name].setToolTip(over.strip())
            self.buttons[name].setEnabled(problem is None)
            self.buttons[name].setToolTip(over.strip())
        chosen = next((b for b in self.buttons.values() if b.isChecked()), None)
        if chosen is None or not chosen.isEnabled():     # refused: the first choice that is not
            usable = [b for b in self.buttons.values() if b.isEnabled()]
            if usable:
                usable[0].setChecked(True)
        self.export_button.setEnabled(any(b.isChecked() and b.isEnabled() for b in self.buttons.values()))
        self.adjustSize()          # wrapped lines get their height (a label's text changed after it was laid out)
