"""The main window's frame: the menus, the docks, the state's wiring, a Run, and quitting.

Each job of the window has a module of its own, which the window holds and calls:
gui.window.input_bar (the text, target, pair, chat form, Run, live, device), gui.window.output_row (what the
model wrote), gui.window.engine_calls (what the model thread runs for the window: open, move, Run,
output, read and write recordings), gui.window.model_opening (the Model menu, Open Recent, the open
dialogs, the load), gui.window.recordings (save and open a recording), gui.window.trace_export (File > Export
Trace) and gui.window.dock_layout (first sizes, Reset Layout, Qt's repairs).

Every forward pass and model load runs in a worker (gui.worker.Jobs); the window only
draws what comes back. A failed load leaves the previous model loaded and usable.
torch is first imported by the worker that opens the model, never to build or show the
window (tests/gui/test_startup.py).
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, Qt, QTimer
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import (QApplication, QDockWidget, QFileDialog, QMainWindow, QMessageBox, QVBoxLayout,
                               QWidget)

from attnscope.engine.inputs import InputError
from attnscope.engine.loading import DENSE_NOTE, catalog
from attnscope.gui.window import engine_calls
from attnscope.gui.window import trace_export
from attnscope.gui.colormaps import COLORMAPS
from attnscope.gui.window.dock_layout import DockLayout
from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.window.first_tip import FirstTip
from attnscope.gui.window.export import capture, export_format, export_target, write_capture
from attnscope.gui.window.help import HelpButton, HelpDialog
from attnscope.gui.window import closing
from attnscope.gui.window.menus import build_menus
from attnscope.gui.window.input_bar import InputBar
from attnscope.gui.window.model_opening import ModelOpening
from attnscope.gui.window.output_row import OutputRow
from attnscope.gui.window.recordings import Recordings
from attnscope.gui.window.remote_fetches import RemoteFetches, shown_notes as remote_fetches_notes
from attnscope.gui.settings import app_settings, remember_folder, start_folder
from attnscope.gui.state import AppState
from attnscope.gui.window.status_line import StatusLine
from attnscope.gui.theme import apply_font, apply_theme, restyle_plots, tint
from attnscope.gui.views.head_grid import HeadGrid
from attnscope.gui.worker import MODEL, Jobs, error_message, job_failures, process_events_until, shutdown_all

QUIT_WAIT_S = 0.05     # Quit waits this long in all for the jobs it cancels (the process ends without them)


class MainWindow(QMainWindow):
    def __init__(self, source: str | None = None, device: str | None = None, settings=None, opened=None):
        super().__init__()
        self.setWindowTitle("attnscope")
        self.setAcceptDrops(True)
        self.settings = settings or app_settings()
        self.state = AppState(self)
        self.state.device = device or str(self.settings.value("device", "auto"))
        self.state.colormap = str(self.settings.value("colormap", "viridis"))
        if self.state.colormap not in COLORMAPS:
            self.state.colormap = "viridis"
        self.model_jobs = Jobs(self, "Could not open the model", lane=MODEL)
        self.run_jobs = Jobs(self, "The model could not run", lane=MODEL)
        self.file_jobs = Jobs(self, "The recording could not be read", lane=MODEL)
        self.save_jobs = Jobs(self, "The recording could not be written", lane=MODEL)   # never cancelled by a read
        self.export_jobs = Jobs(self, "Could not export the view")                    # File > Export View's file
        self.output_jobs = Jobs(self, "The model could not write its output", lane=MODEL)
        job_failures().failed.connect(self.show_error)   # every job's error, from any view
        self.last_error: str | None = None
        self.help_dialog: HelpDialog | None = None
        self.error_box: QMessageBox | None = None
        self.last_forward_s: float | None = None
        self._running: engine_calls.RunAsk | None = None   # the Run in flight (never started twice)
        self.docks: dict[str, QDockWidget] = {}
        self.views: dict[str, QWidget] = {}
        # The window's jobs, each a module of its own; the window answers for them by these names.
        self.opening = ModelOpening(self)
        self.recordings = Recordings(self)
        self.remote_fetches = RemoteFetches(self)   # a remote trace's later jobs: progress and Esc

        self._build_central()
        self.dock_layout = DockLayout(self)    # a dock per view (gui.views.registry)
        build_menus(self)
        self._build_status()
        self.dock_layout.built(self.grid)      # the layout as built: what Reset Layout restores
        self._restore_settings()
        self.state.model_changed.connect(self._on_model_changed)
        self.state.trace_changed.connect(self._on_trace)
        self.state.head_selected.connect(self._show_head_detail)
        self.state.why_requested.connect(self._show_why)
        self.state.run_requested.connect(lambda text: (self.input_bar.text_edit.setText(text), self.run()))
        for signal in (self.state.output_changed, self.state.request_started, self.state.request_ended):
            signal.connect(lambda *_: self.output_row.show_for(self.state))
        self.state.interventions_changed.connect(lambda _spec: self.run())   # every view re-runs with the change
        self.state.measure_changed.connect(lambda _on: self.run())
        status = self.status_line
        self.run_jobs.busy_changed.connect(lambda b: status.busy_label.setText("running…" if b else ""))
        self.model_jobs.busy_changed.connect(lambda b: status.busy_label.setText("loading model…" if b else ""))
        self.model_jobs.busy_changed.connect(lambda b: b or status.load_progress.finish())
        if opened is not None:         # a model or trace a script already holds (attnscope.show)
            self.opening.use(opened)
        else:
            self.opening.open_source(source or catalog.default_source())

    # ---- layout ------------------------------------------------------------------------
    def _build_central(self) -> None:
        bar = self.input_bar = InputBar(self.settings, self.state.device)
        bar.run_asked.connect(self.run)
        bar.device_chosen.connect(self.opening.choose_device)
        bar.failed.connect(self.show_error)
        self.output_row = OutputRow()
        self.banner = ElidedLabel()
        tint(self.banner, "warning")
        self.grid = HeadGrid(self.state)
        central = QWidget()
        box = QVBoxLayout(central)
        box.addWidget(bar)
        self.tip_row = FirstTip(self.settings)     # first start: where to begin, until dismissed
        for widget in (self.tip_row, self.output_row, self.banner):
            box.addWidget(widget)
        box.addWidget(self.grid, 1)
        self.setCentralWidget(central)
        self.views["Heads overview"] = self.grid
        HelpButton(self.grid, "Heads overview", lambda page: self.show_help(page))
        for key in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(key), self, activated=self.run)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self.stop_run)

    def _build_status(self) -> None:
        self.status_line = StatusLine(self, self.opening.cancel_load)

    # ---- models (gui.window.model_opening) -------------------------------------------------------
    @property
    def current_source(self) -> str | None:
        """What the loaded model was opened from."""
        return self.opening.current_source

    @current_source.setter
    def current_source(self, source: str | None) -> None:
        self.opening.current_source = source

    def _on_model_changed(self, loaded) -> None:
        self.input_bar.fit_to(loaded)     # its fields, and a sentence for it when the text is empty
        self.status_line.time_label.setText("")      # the last model's forward
        self.status_line.describe(self.state)
        self.run()

    def _show_head_detail(self, *_head) -> None:
        """A head chosen anywhere (grid, statistics) opens in Head detail, in front of its tabs."""
        dock = self.docks.get("Head detail")
        if dock is not None:
            dock.show()
            dock.raise_()

    def _show_why(self, *asked) -> None:
        """A score asked about (Head detail's cell menu or Alt+click): the Why panel, in front, splits it."""
        dock = self.docks["Why"]
        dock.show()
        dock.raise_()
        self.dock_layout.view("Why").ask(*asked)

    # ---- running -------------------------------------------------------------------------
    def run(self) -> None:
        """Run the model on the text: the newest request wins. Every job still working for
        the old one (its Run, output, the Lens, the effect, the overview's pooling) is
        cancelled; the same request already on its way is not started again."""
        loaded = self.state.loaded
        if loaded is None:
            return
        self.input_bar.live_timer.stop()
        try:
            prompt = self.input_bar.prompt()      # checked once, here: no text, or text that is not Unicode
        except InputError as exc:                 # said once, here; the old text's heads and output go
            self.supersede()
            self.run_jobs.cancel()
            self.state.set_prompt(None)
            self.state.set_trace(None)
            self.state.set_output("")
            self.state.end_request()
            self.banner.setText(str(exc))
            self.banner.setVisible(True)
            return
        ask = engine_calls.RunAsk(loaded, prompt, loaded.is_hf and self.input_bar.merge_box.isChecked(),
                                  self.state.interventions, self.state.value_weighted)
        if self.run_jobs.busy and ask == self._running:
            return
        self._running = ask
        self.supersede()
        self.run_jobs.start(engine_calls.timed_trace, loaded, prompt, ask.merge_subwords,
                            interventions=ask.interventions, value_weighted=ask.value_weighted,
                            say=self.opening.remote_notices.said.emit, on_yielded=self._run_progress, on_returned=lambda result: self._trace_done(result, prompt),
                            on_error=lambda _exc: self.state.end_request())

    def supersede(self) -> None:
        """A newer request: the model's output for the old text stops, and every view's work
        for it (state.request_started); what they show is marked until the new results come."""
        self.output_jobs.cancel()
        self.state.begin_request()

    def _run_progress(self, record) -> None:
        """("run", attention sites passed, sites): a long Run says how far it is (Esc stops it)."""
        _, done, total = record
        self.status_line.busy_label.setText(f"running… {done}/{total} attention layers (Esc stops)")

    def stop_run(self) -> None:
        """Esc: a long Run stops (the heads on screen stay the last finished Run's), and so does an export."""
        exporter = self.findChild(trace_export.TraceExporter, trace_export.TraceExporter.NAME)
        if exporter is not None:
            exporter.cancel()
        self.remote_fetches.stop()
        if self.run_jobs.busy:
            self.run_jobs.cancel()
            self.state.end_request()
            self.statusBar().showMessage("Run stopped; the heads on screen are the last finished Run's.", 6000)

    def _trace_done(self, result, prompt) -> None:
        """The Run's trace is in: the input it read becomes the state's (the text, target, pair
        and chat form every view derives its prompt from), then the model writes its output for it."""
        trace, seconds = result
        self.last_forward_s = seconds
        self.state.set_prompt(prompt)
        self.state.set_trace(trace)
        self.state.end_request()
        self.status_line.time_label.setText(f"forward {seconds * 1000:.0f} ms")
        loaded = self.state.loaded
        if loaded is not None and loaded.generates:   # the model's own output, after its heads are on screen
            written_for = self.state.trace_id
            # The text the Run read, as it read it (its Prompt's, checked once): not derived again from the state.
            self.output_jobs.start(engine_calls.model_output, loaded, prompt.text, self.state.interventions,
                                   on_returned=lambda out: self.state.set_output(out, written_for))

    def _on_trace(self, trace) -> None:
        self.status_line.describe(self.state)
        self.output_row.show_for(self.state)
        if self.state.recording is None and self.statusBar().currentMessage() == self.recordings.said:
            self.statusBar().clearMessage()     # "Recording of ..." is not about what is on screen now
        notes = remote_fetches_notes(self.state, trace)
        if self.state.trace_model is not None and self.state.loaded.meta.get("untrained"):
            notes.insert(0, "This model is untrained (random weights): its attention is noise. "
                            "Open a trained one from the Model menu.")
        if self.state.recording is None and self.state.loaded is not None and self.state.loaded.meta.get("dense"):
            if not any(DENSE_NOTE.lower()[:-1] in note.lower() for note in notes):   # said from loading on
                notes.insert(0, DENSE_NOTE)
        if self.state.recording is not None and self.state.loaded is not None:
            notes.append(f"The heads are the recording's own tokens; the text box is not its text: a Run reads the "
                         f"text box with {self.state.loaded.name} and replaces the recording.")
        self.banner.setText("\n".join(notes))
        self.banner.setVisible(bool(notes))

    # ---- errors --------------------------------------------------------------------------
    def show_error(self, title: str, exc: BaseException | str) -> None:
        """A non-blocking dialog with the loader's or the engine's own message."""
        message = exc if isinstance(exc, str) else error_message(exc)
        self.last_error = message
        self.statusBar().showMessage(message, 8000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        self.error_box = box

    # ---- files: texts, recordings (gui.window.recordings), exports --------------------------------
    def export_trace_dialog(self) -> None:
        trace_export.export_trace_dialog(self)    # the choices and their estimates, then a worker job

    def focused_view(self) -> tuple[str, QWidget]:
        focus = QApplication.focusWidget()
        for title, widget in self.views.items():
            if focus is not None and (focus is widget or widget.isAncestorOf(focus)):
                return title, widget
        return "Heads overview", self.grid

    def export_view_dialog(self) -> None:
        title, widget = self.focused_view()
        name = title.lower().replace(" ", "_")
        path, _ = QFileDialog.getSaveFileName(self, f"Export {title}", str(Path(start_folder(
            self.settings, "exports")) / f"{name}.png"), "PNG image (*.png);;SVG vector (*.svg)")
        if path:
            try:
                shot = capture(export_target(widget), export_format(path))   # the pixels: here, on the GUI thread
            except Exception as exc:  # whatever went wrong, the user is told, never the console only
                self.show_error("Could not export the view", exc)
                return
            remember_folder(self.settings, "exports", path)
            self.export_jobs.start(write_capture, shot, path,                # the encoding and the file: a worker
                                   on_returned=lambda written: self.statusBar().showMessage(f"Saved {written}", 5000))

    # ---- view settings and layout (gui.window.dock_layout) -----------------------------------------
    def set_colormap(self, name: str) -> None:
        self.settings.setValue("colormap", name)
        self.state.set_colormap(name)

    def set_dark(self, dark: bool) -> None:
        self.settings.setValue("dark", "true" if dark else "false")
        apply_theme(dark)
        self.state.set_dark(dark)
        restyle_plots(self, dark, self.state.presentation)  # every plot built, docked, tabbed or floating

    def set_presentation(self, on: bool) -> None:
        """Presentation mode: fonts and marks PRESENTATION_SCALE times larger everywhere, kept
        across starts; views built later take it on when they are built."""
        self.settings.setValue("presentation", "true" if on else "false")
        apply_font(on)
        for dock in self.docks.values():
            # A dock paints its title in the font it was built with unless it has one of its own
            # (QDockWidget keeps QApplication.font("QDockWidgetTitle") from its construction): an
            # own font, the application's with another (invisible) strategy, makes titles grow too.
            font = QFont(QApplication.font())
            font.setStyleStrategy(QFont.StyleStrategy.PreferQuality)
            dock.setFont(font)
        self.state.set_presentation(on)
        restyle_plots(self, self.state.dark, on)

    @property
    def _tab_bars_settled(self) -> bool:
        return self.dock_layout.tab_bars_settled

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.dock_layout.shown()

    def show_help(self, page: str = "Heads overview") -> None:
        """Help > What am I looking at, on ``page`` (non-modal: the window stays usable)."""
        if self.help_dialog is None:
            self.help_dialog = HelpDialog(self)
        self.help_dialog.show_page(page)
        self.help_dialog.show()
        self.help_dialog.raise_()

    # ---- drag and drop, settings, closing ------------------------------------------------
    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        urls = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.opening.open_source(urls[0])
            event.acceptProposedAction()

    def _restore_settings(self) -> None:
        geometry = self.settings.value("geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        else:  # first start: most of the screen, centred
            screen = self.screen().availableGeometry() if self.screen() else None
            if screen is not None and screen.width() > 0:
                self.resize(int(screen.width() * 0.92), int(screen.height() * 0.9))
                self.move(screen.center() - self.rect().center())
            else:
                self.resize(1400, 900)
        state = self.settings.value("window_state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
        else:  # first start: the heads overview gets most of the height
            QTimer.singleShot(0, self.dock_layout.default_sizes)
        self.set_dark(self.dark_action.isChecked())
        self.set_presentation(self.presentation_action.isChecked())

    def unsaved_views(self) -> list[QWidget]:
        """Views holding work that exists nowhere else (gui.window.closing)."""
        return closing.unsaved_views(self)

    def discard_and_stop(self, timeout_s: float = 60.0) -> bool:
        """Stop every job and wait for its thread, then drop unsaved work: a close that follows
        asks nothing and leaves nothing running. For a caller that has already chosen Discard (the
        tests' windows; offscreen no one answers the question). True when every thread let go."""
        stopped = shutdown_all(timeout_s=timeout_s)   # cancelled: no late result marks work unsaved
        for view in self.unsaved_views():
            view.unsaved = False
        return stopped

    def _saving(self) -> bool:
        """A file is being written: the window's export or save, or a view's (a checkpoint)."""
        jobs = [self.save_jobs, self.export_jobs, *(getattr(v, "save_jobs", None) for v in self.views.values())]
        return any(j is not None and j.busy for j in jobs)

    def closeEvent(self, event) -> None:
        if not closing.confirm_discard(self):
            event.ignore()
            return
        self.hide()            # gone from the screen first; what follows is bookkeeping
        self.input_bar.live_timer.stop()
        for view in self.views.values():   # timers of their own (Decoding's Play) stop with the window
            getattr(view, "window_closing", lambda: None)()
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("window_state", self.saveState())
        self.input_bar.save_settings()
        self.settings.sync()
        if closing.saving(self):     # a file being written is the user's: finished, not cut
            self.statusBar().showMessage("Finishing the file being saved…")
            process_events_until(lambda: not closing.saving(self), 120)
        # Ask every job to stop and give them QUIT_WAIT_S in all (a job stops at its next
        # attention site): the window goes at once, and gui.app ends the process without
        # waiting out a forward that cannot stop inside itself (each job waited 0.2 s of its
        # own: the window froze 2.5-3 s, and the process outlived it by 4-5 s).
        shutdown_all(timeout_s=QUIT_WAIT_S)
        super().closeEvent(event)
