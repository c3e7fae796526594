"""The main window: menus, the input bar, the heads overview, and one dock per view.

Every forward pass and model load runs in a worker (gui.worker.Jobs); the window only
draws what comes back. A failed load leaves the previous model loaded and usable.
torch is first imported by the worker that opens the model, never to build or show the
window (tests/test_startup.py): the engine functions that need it are imported in the
worker functions below.
"""
from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QByteArray, QEvent, Qt, QTimer
from PySide6.QtGui import QActionGroup, QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QDockWidget, QFileDialog, QFrame, QHBoxLayout,
                               QLabel, QLineEdit, QMainWindow, QMessageBox, QPushButton, QScrollArea, QSizePolicy,
                               QTabBar, QVBoxLayout, QWidget)

from engine.adapters.chat import reads_chat
from engine.loading import catalog
from engine import version
from engine.runtime.device import SPREAD, available_devices, pick_device
from engine.loading.loaded import LoadedModel
from gui.colormaps import COLORMAPS
from gui.elided import ElidedLabel
from gui.help import HelpButton, HelpDialog
from gui.hf_cache_dialog import HFCacheDialog
from gui.load_progress import LoadProgressBar
from gui.tooltips import apply_tooltips
from gui.theme import apply_font, apply_theme, emphasise, restyle_plots, tint
from gui.export import export_target, export_widget
from gui.text_box import TextBox
from gui.settings import app_settings, push_recent, recent_files, remember_folder, start_folder
from gui.state import AppState, prompt_of
from gui import trace_export
from gui.views.head_grid import HeadGrid
from gui.views.registry import VIEWS
from gui.worker import MODEL, Jobs, error_message, job_failures, process_events_until, shutdown_all

UNSAVED = "The model trained in the Training panel has not been saved. Save it before quitting?"
CHECKPOINT_FILTER = "Checkpoints (*.safetensors *.pt *.pth *.ckpt *.bin);;All files (*)"
# Saved by the window as NAME.recording.safetensors; one the command line wrote may have any name.
RECORDING_FILTER = "attnscope recordings (*.recording.safetensors);;Any .safetensors file (*.safetensors)"
LIVE_DELAY_MS = 350
QUIT_WAIT_S = 0.05     # Quit waits this long in all for the jobs it cancels (the process ends without them)
DEFAULT_TEXT = {   # by family, then by role for the rest (Hugging Face models)
    "translator": "the big dog sees the small cat .",
    "gpt": "HAMLET. To be, or not to be, that is the question:",
    "encoder": "time flies like an arrow .",
    "decoder": "The quick brown fox jumps over the lazy dog because",
    "encoder-decoder": "translate English to German: The house is wonderful.",
}
SHORTCUTS = [
    ("Ctrl+Return", "Run the model on the text"),
    ("Ctrl+O", "Open a checkpoint"),
    ("Ctrl+Shift+O", "Open a Hugging Face model folder"),
    ("Ctrl+E", "Export the focused view (PNG or SVG)"),
    ("Ctrl+Shift+E", "Export the trace (NPZ or CSV)"),
    ("Ctrl+Shift+S", "Save the Run's recording (queries and keys: every view, no model needed)"),
    ("Ctrl+Shift+R", "Open a recording"),
    ("Esc", "Stop a long Run"),
    ("Ctrl+Shift+T", "Open a text file as the text (a long context)"),
    ("Arrow keys", "In Head detail: previous/next head (left/right), layer (up/down)"),
    ("F1", "What am I looking at: help for the focused view"),
    ("Ctrl+/", "This list of shortcuts"),
    ("F5", "Presentation mode: large fonts and thick lines, for a projector"),
    ("Right / Left", "In Decoding: one more token / back one step (kept, not recomputed)"),
    ("Ctrl+Q", "Quit"),
]


def _usable_device(device: str, devices: list[str]) -> str:
    """``device`` where this machine has it, else auto (a setting saved on another machine)."""
    return device if device in ("auto", *devices) else "auto"


def _open_model(source: str, device: str, report=None, stop=None):
    """The worker's part of opening a model: first the devices this machine has (asking
    torch, which the model needs anyway), then the model on ``device`` if it is one of them,
    its progress reported as it loads (engine.loading.progress records), stopped on Cancel."""
    from engine.loading.placement import accelerate_missing

    devices = available_devices() + ([SPREAD] if accelerate_missing() is None else [])
    yield devices
    return catalog.open_model(source, _usable_device(device, devices), progress=report, stop=stop)


def _timed_trace(loaded: LoadedModel, text, target: str, pair: str, merge_subwords: bool = False,
                 report=None, stop=None, interventions=None, value_weighted=False):
    """A Run in the model worker: its progress (attention sites passed) reported, stopped on Esc."""
    from engine.traces.tracing import trace_text

    start = time.perf_counter()
    trace = trace_text(loaded, text, target=target or None, pair=pair or None, merge_subwords=merge_subwords,
                       report=report, stop=stop, interventions=interventions, value_weighted=value_weighted)
    return trace, time.perf_counter() - start


def _save_recording(trace, path: str) -> str:
    """Write the recording; the window has asked before replacing any file (_may_replace)."""
    from engine.traces.recording_file import save_recording

    return str(save_recording(trace, path, replace=True))


def _open_recording(path: str):
    from engine.traces.recording_file import RecordingError, is_recording, load_recording

    try:
        return load_recording(path)
    except RecordingError as exc:
        if is_recording(path):
            raise
        raise RecordingError(f"{exc} To open a model's weights, use File > Open Checkpoint (Ctrl+O).") from exc


def _model_output(loaded: LoadedModel, text, interventions=None, stop=None) -> str:
    """The output line's text, in the model worker; a newer request ends it within a layer."""
    from engine.traces.tracing import stoppable
    from gui.output_line import output_line

    with stoppable(stop):
        return output_line(loaded, text, interventions)


OUTPUT_TIP = "What the model itself writes for this text (greedy), or the tokens chosen so far in the Decoding panel"


class MainWindow(QMainWindow):
    def __init__(self, source: str | None = None, device: str | None = None, settings=None):
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
        self.output_jobs = Jobs(self, "The model could not write its output", lane=MODEL)
        job_failures().failed.connect(self.show_error)   # every job's error, from any view
        self.last_error: str | None = None
        self.help_dialog: HelpDialog | None = None
        self.current_source: str | None = None     # what the loaded model was opened from
        self.error_box: QMessageBox | None = None
        self.last_forward_s: float | None = None
        self._running: tuple | None = None         # the request the Run in flight computes (never started twice)
        self._tab_bars_settled = False             # Qt's stray tab bars dropped at the first show
        self.docks: dict[str, QDockWidget] = {}
        self.views: dict[str, QWidget] = {}
        self._live_timer = QTimer(self, singleShot=True, interval=LIVE_DELAY_MS)
        self._live_timer.timeout.connect(self.run)

        self._build_central()
        self._build_docks()
        self._build_menus()
        self._build_status()
        self._default_state = self.saveState()
        self._restore_settings()
        self.state.model_changed.connect(self._on_model_changed)
        self.state.trace_changed.connect(self._on_trace)
        self.state.head_selected.connect(self._show_head_detail)
        self.state.run_requested.connect(lambda text: (self.text_edit.setText(text), self.run()))
        self.state.output_changed.connect(self._show_output)
        self.state.request_started.connect(self._show_output)
        self.state.request_ended.connect(self._show_output)
        self.state.interventions_changed.connect(lambda _spec: self.run())   # every view re-runs with the change
        self.state.measure_changed.connect(lambda _on: self.run())
        self.run_jobs.busy_changed.connect(lambda b: self.busy_label.setText("running…" if b else ""))
        self.model_jobs.busy_changed.connect(lambda b: self.busy_label.setText("loading model…" if b else ""))
        self.model_jobs.busy_changed.connect(lambda b: b or self.load_progress.finish())
        self.open_source(source or catalog.default_source())

    # ---- layout ------------------------------------------------------------------------
    def _build_central(self) -> None:
        self.text_edit = TextBox()
        self.text_edit.setPlaceholderText("Type a sentence; the heads update as you type (Enter runs now, "
                                          "Shift+Enter breaks the line)")
        self.text_edit.setToolTip("The text the model reads, as it is: line breaks (¶) and tabs (→) included. "
                                  "The heads update as you type; Enter runs now, Shift+Enter breaks the line")
        self.target_edit = QLineEdit()
        self.target_edit.setPlaceholderText("optional output prefix (empty: the model writes its own output)")
        self.target_edit.setToolTip("The start of the output to look at; empty: the model's own greedy output")
        self.pair_edit = QLineEdit()
        self.pair_edit.setPlaceholderText("optional second sentence (segment B)")
        self.pair_edit.setToolTip("A second sentence, read with the first as a pair (BERT's segment B)")
        self.target_label, self.pair_label = QLabel("Target:"), QLabel("Pair:")
        self.merge_box = QCheckBox("merge word pieces")
        self.merge_box.setToolTip("Join ##pieces into words: attention to a word sums over its pieces, "
                                  "attention from a word averages them")
        self.merge_box.toggled.connect(lambda _: self.run())
        self.merge_box.setVisible(False)  # shown for Hugging Face BERT models
        # An instruction-tuned model reads its prompt as a chat: the text is the user's turn, with an
        # optional system turn, through the tokenizer's own template (shown for such models alone).
        self.chat_box = QCheckBox("chat")
        self.chat_box.setToolTip("Read the text as a user's turn of a chat, through this model's own chat template "
                                 "(its turn marks shown as tokens; the continuation stops at the end of the turn)")
        self.chat_box.setChecked(str(self.settings.value("chat", "false")) == "true")
        self.chat_box.toggled.connect(self._on_chat_toggled)
        self.chat_box.setVisible(False)   # shown for a decoder whose tokenizer has a chat template
        self.system_label = QLabel("System:")
        self.system_edit = QLineEdit(str(self.settings.value("chat_system", "") or ""))
        self.system_edit.setPlaceholderText("optional system turn (e.g. You are a helpful assistant.)")
        self.system_edit.setToolTip("The chat's system turn, before the user's text (empty: none)")
        self.run_button = QPushButton("Run")
        self.run_button.setToolTip("Run the model on the text (Ctrl+Enter)")
        self.run_button.clicked.connect(self.run)
        self.live_box = QCheckBox("live")
        self.live_box.setToolTip("Run again shortly after each edit")
        self.live_box.setChecked(str(self.settings.value("live", "true")) == "true")
        self.device_box = QComboBox()
        # Until the model's worker has asked torch which devices there are (_show_devices):
        # the two every machine has, and the chosen one.
        self.device_box.addItems(list(dict.fromkeys(["auto", "cpu", self.state.device])))
        self.device_box.setToolTip("Where the model runs. spread: a Hugging Face model over every GPU, then the RAM, "
                                   "then the disk (accelerate), for a model larger than one device")
        self.device_box.setCurrentText(self.state.device)
        self.device_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)   # "spread" whole
        self.device_box.currentTextChanged.connect(self._on_device)
        for edit in (self.text_edit, self.target_edit, self.pair_edit, self.system_edit):
            edit.textEdited.connect(self._on_edit)
            edit.returnPressed.connect(self.run)

        row1 = QHBoxLayout()
        row1.addWidget(QLabel("Text:"))
        row1.addWidget(self.text_edit, 1)
        row1.addWidget(self.chat_box)
        row1.addWidget(self.run_button)
        row1.addWidget(self.live_box)
        row1.addWidget(QLabel("Device:"))
        row1.addWidget(self.device_box)
        row2 = QHBoxLayout()
        for w in (self.target_label, self.target_edit, self.pair_label, self.pair_edit, self.merge_box,
                  self.system_label, self.system_edit):
            row2.addWidget(w)
        self.output_title = QLabel("Output:")
        self.output_label = QLabel()
        self.output_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.output_label.setWordWrap(True)
        # Wrapped at spaces, and cut at the edge where a "word" is longer than the line (a random
        # model's "<0x0C><0x0C>…"): its width never widens the window past its docks.
        self.output_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        emphasise(self.output_label, 1.5)
        self.output_label.setToolTip(OUTPUT_TIP)
        self.output_mark = QLabel("updating…")    # the output shown is the previous text's until the new one is in
        self.output_mark.setToolTip("The model is writing its output for the new text; until then the line shows "
                                    "the previous one, greyed")
        tint(self.output_mark, "muted")
        self.output_mark.setVisible(False)
        self.banner = ElidedLabel()
        tint(self.banner, "warning")
        self.grid = HeadGrid(self.state)
        central = QWidget()
        box = QVBoxLayout(central)
        box.addLayout(row1)
        box.addLayout(row2)
        # First start: one line that says where to begin, until it is dismissed.
        self.tip_row = QWidget()
        tip_layout = QHBoxLayout(self.tip_row)
        tip_layout.setContentsMargins(0, 0, 0, 0)
        tip = QLabel("Tip: type a sentence above and every head of every layer appears below. Click a head to open "
                     "it large; F1 (Help > What am I looking at) explains each view.")
        tip.setWordWrap(True)
        tint(tip, "info")
        close_tip = QPushButton("Got it")
        close_tip.setToolTip("Hide this tip for good")
        close_tip.clicked.connect(self.dismiss_tip)
        tip_layout.addWidget(tip, 1)
        tip_layout.addWidget(close_tip)
        out_row = QHBoxLayout()
        out_row.addWidget(self.output_title)
        out_row.addWidget(self.output_label, 1)
        out_row.addWidget(self.output_mark)
        box.addWidget(self.tip_row)
        box.addLayout(out_row)
        box.addWidget(self.banner)
        box.addWidget(self.grid, 1)
        self.setCentralWidget(central)
        central.installEventFilter(self)     # its minimum grows (fonts, notes): docks give way (_room_for_overview)
        self.views["Heads overview"] = self.grid
        HelpButton(self.grid, "Heads overview", lambda page: self.show_help(page))
        for key in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(key), self, activated=self.run)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self.stop_run)

    def _build_docks(self) -> None:
        areas = {"left": Qt.DockWidgetArea.LeftDockWidgetArea, "right": Qt.DockWidgetArea.RightDockWidgetArea,
                 "bottom": Qt.DockWidgetArea.BottomDockWidgetArea}
        first_in_area: dict[str, QDockWidget] = {}
        self._factories = {spec.title: spec.factory for spec in VIEWS}
        for spec in VIEWS:
            dock = QDockWidget(spec.title, self)
            dock.setObjectName(f"dock:{spec.title}")
            dock.setWidget(QWidget())  # replaced by the view the first time the dock shows
            dock.visibilityChanged.connect(lambda visible, title=spec.title: visible and self.view(title))
            self.addDockWidget(areas.get(spec.area, areas["right"]), dock)
            if spec.area in first_in_area:  # views of one area share it as tabs
                self.tabifyDockWidget(first_in_area[spec.area], dock)
            else:
                first_in_area[spec.area] = dock
            self.docks[spec.title] = dock
        for dock in first_in_area.values():
            dock.raise_()

    def view(self, title: str) -> QWidget:
        """The view called ``title``, built the first time it is needed: views hidden behind
        other tabs cost nothing at start-up."""
        if title not in self.views:
            try:
                widget = self._factories[title](self.state)
            except Exception as exc:  # a broken view must not take the window down
                widget = QLabel(f"This view could not start: {exc}")
            self.views[title] = widget
            # In a scroll area: a view whose controls are wider than its dock (large fonts on a
            # small screen) scrolls sideways instead of widening the window past the screen.
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(widget)
            self.docks[title].setWidget(scroll)
            HelpButton(widget, title, self.show_help)
            apply_tooltips(title, widget)
            restyle_plots(widget, self.state.dark, self.state.presentation)
        return self.views[title]

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file = bar.addMenu("&File")
        self.open_action = file.addAction("&Open Checkpoint…", self.open_checkpoint_dialog, QKeySequence.StandardKey.Open)
        self.open_hf_action = file.addAction("Open &Hugging Face Model Folder…", self.open_hf_dialog,
                                             QKeySequence("Ctrl+Shift+O"))
        self.open_hf_cache_action = file.addAction("Open from Hugging Face &Cache…", self.open_hf_cache_dialog)
        self.recent_menu = file.addMenu("Open &Recent")
        file.addSeparator()
        file.addAction("&Export View…", self.export_view_dialog, QKeySequence("Ctrl+E"))
        file.addAction("Export &Trace (NPZ/CSV)…", self.export_trace_dialog, QKeySequence("Ctrl+Shift+E"))
        file.addAction("&Save Recording…", self.save_recording_dialog, QKeySequence("Ctrl+Shift+S"))
        file.addAction("Open Recordin&g…", self.open_recording_dialog, QKeySequence("Ctrl+Shift+R"))
        file.addAction("Open Te&xt File…", self.open_text_dialog, QKeySequence("Ctrl+Shift+T"))
        file.addSeparator()
        file.addAction("&Quit", self.close, QKeySequence.StandardKey.Quit)

        self.model_menu = bar.addMenu("&Model")
        self.model_menu.aboutToShow.connect(self._fill_model_menu)
        self._fill_model_menu()

        view = bar.addMenu("&View")
        cmap_menu = view.addMenu("&Colormap")
        group = QActionGroup(self)
        for name in COLORMAPS:
            act = cmap_menu.addAction(name)
            act.setCheckable(True)
            act.setChecked(name == self.state.colormap)
            act.triggered.connect(lambda _=False, n=name: self.set_colormap(n))
            group.addAction(act)
        self.dark_action = view.addAction("&Dark Theme")
        self.dark_action.setCheckable(True)
        self.dark_action.setChecked(str(self.settings.value("dark", "false")) == "true")
        self.dark_action.toggled.connect(self.set_dark)
        self.presentation_action = view.addAction("&Presentation Mode")
        self.presentation_action.setShortcut(QKeySequence("F5"))
        self.presentation_action.setToolTip("Large fonts and thick lines, for a projector")
        self.presentation_action.setCheckable(True)
        self.presentation_action.setChecked(str(self.settings.value("presentation", "false")) == "true")
        self.presentation_action.toggled.connect(self.set_presentation)
        view.addAction("&Reset Layout", self.reset_layout)
        view.addSeparator()
        for title, dock in self.docks.items():
            view.addAction(dock.toggleViewAction())

        help_ = bar.addMenu("&Help")
        self.help_action = help_.addAction("&What Am I Looking At?", lambda: self.show_help(self.focused_view()[0]),
                                           QKeySequence("F1"))
        help_.addAction("&Keyboard Shortcuts", self.show_shortcuts, QKeySequence("Ctrl+/"))
        help_.addAction("&About attnscope", self.show_about)
        self._fill_recent_menu()

    def _build_status(self) -> None:
        self.model_label, self.device_label = ElidedLabel(), QLabel()
        self.params_label, self.time_label, self.busy_label = QLabel(), QLabel(), QLabel()
        self.load_progress = LoadProgressBar(self.cancel_load)
        # The model's (or the recording's) name gets room of its own: an elided label with nothing
        # reserved was squeezed to nothing beside the others.
        self.model_label.setMinimumWidth(self.fontMetrics().horizontalAdvance("x" * 28))
        self.model_label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)   # laid out, not drawn over
        for w in (self.load_progress, self.busy_label, self.model_label, self.device_label, self.params_label,
                  self.time_label):
            w.setContentsMargins(6, 0, 6, 0)
            self.statusBar().addPermanentWidget(w)

    # ---- models ------------------------------------------------------------------------
    def _fill_model_menu(self, name: str | None = None) -> None:
        """The models to open, the loaded one checked (``name``: the one being put in place)."""
        menu = self.model_menu
        menu.clear()
        listed: list[str] = []

        def add(label: str, source: str) -> None:
            listed.append(source)
            act = menu.addAction(label, lambda: self.open_source(source))
            act.setCheckable(True)
            act.setChecked(_same_source(source, self.current_source))
        source = self.current_source
        if source and not _is_bundled(source) and source != catalog.MINILM and source not in catalog.RANDOM_SOURCES:
            # A folder, a cache or hub model, a file: the loaded one is listed (ticked) first.
            name = name or (self.state.loaded.name if self.state.loaded is not None else Path(source).name)
            add(f"{name} (open now)", source)
            menu.addSeparator()
        for path in catalog.bundled_checkpoints():
            add(f"{path.stem} (bundled)", str(path))
        add("all-MiniLM-L6-v2 (bundled, pretrained BERT)", catalog.MINILM)
        menu.addAction("Hugging Face Model by Hub Id or from the Cache…", self.open_hf_cache_dialog)
        menu.addSeparator()
        for src in catalog.RANDOM_SOURCES:
            add(f"Untrained {src.split('-', 1)[1]} (random weights)", src)
        # A recent file that is a bundled one (opened from its folder) is listed once, as bundled.
        recent = [p for p in recent_files(self.settings) if not any(_same_source(p, s) for s in listed)]
        if recent:
            menu.addSeparator()
            for path in recent[:5]:
                add(Path(path).name, path)

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = recent_files(self.settings)
        for path in files:
            self.recent_menu.addAction(path, lambda p=path: self.open_source(p))
        self.recent_menu.setEnabled(bool(files))

    def open_checkpoint_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open Checkpoint", start_folder(self.settings, "models"),
                                              CHECKPOINT_FILTER)
        if path:
            self.open_source(path)

    def open_hf_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open Hugging Face Model Folder",
                                                start_folder(self.settings, "models"))
        if path:
            self.open_source(path)

    def open_hf_cache_dialog(self) -> HFCacheDialog:
        """The models in the local Hugging Face cache (and any hub id), opened by name."""
        dialog = HFCacheDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.chosen.connect(self.open_source)
        dialog.open()
        return dialog

    def open_source(self, source: str) -> None:
        """Load a model in the worker, its progress in the status bar; on failure or Cancel
        keep the current one (and say why)."""
        self.statusBar().showMessage(f"Loading {Path(source).name}…")
        self.load_progress.start(Path(source).name or source)
        self.run_jobs.cancel()     # the old model's Run and every job for its text: a newer request
        self._supersede()
        self.model_jobs.start(_open_model, source, self.state.device, on_yielded=self._on_load_yield,
                              on_returned=lambda loaded: self._model_loaded(source, loaded),
                              on_error=lambda _exc: self.state.end_request())

    def _on_load_yield(self, value) -> None:
        if isinstance(value, list):      # the machine's devices, first
            self._show_devices(value)
        else:                            # how far the load is
            self.load_progress.show_progress(value)

    def cancel_load(self) -> None:
        """Cancel: the load stops between two tensors; the model that was open stays."""
        if self.model_jobs.busy:
            self.model_jobs.cancel()
            self.state.end_request()
            self.load_progress.finish()
            kept = self.state.loaded.name if self.state.loaded is not None else "no model"
            self.statusBar().showMessage(f"Loading cancelled; {kept} stays open.", 6000)

    def _show_devices(self, devices: list[str]) -> None:
        """The device chooser lists this machine's devices; a chosen one it lacks becomes auto."""
        self.state.device = _usable_device(self.state.device, devices)
        self.device_box.blockSignals(True)
        self.device_box.clear()
        self.device_box.addItems(["auto", *devices])
        self.device_box.setCurrentText(self.state.device)
        self.device_box.blockSignals(False)

    def _model_loaded(self, source: str, loaded: LoadedModel) -> None:
        self.current_source = source
        self._fill_model_menu(loaded.name)
        if Path(source).exists():
            push_recent(self.settings, str(Path(source).resolve()))
            if not _is_bundled(source):     # the next Open Checkpoint starts by the user's models
                remember_folder(self.settings, "models", str(Path(source).resolve().parent))
            self._fill_recent_menu()
        notes = loaded.meta.get("notes")
        self.statusBar().showMessage(f"Opened {loaded.name}" + (f". {notes}" if notes else ""), 12000 if notes else 4000)
        self.state.set_model(loaded)

    def _on_model_changed(self, loaded: LoadedModel) -> None:
        fam, role = loaded.family, loaded.role
        self.target_label.setVisible(role == "encoder-decoder")
        self.target_edit.setVisible(role == "encoder-decoder")
        self.pair_label.setVisible(role == "encoder")
        self.pair_edit.setVisible(role == "encoder")
        self.merge_box.setVisible(loaded.is_hf)
        self._show_chat()
        if not self.text_edit.text().strip():
            self.text_edit.setText(DEFAULT_TEXT.get(fam, DEFAULT_TEXT[role]))
        self.time_label.setText("")      # the last model's forward
        self._describe_source()
        self.run()

    def _show_head_detail(self, *_head) -> None:
        """A head chosen anywhere (grid, statistics) opens in Head detail, in front of its tabs."""
        dock = self.docks.get("Head detail")
        if dock is not None:
            dock.show()
            dock.raise_()

    def _on_device(self, name: str) -> None:
        self.state.device = name
        self.settings.setValue("device", name)
        loaded = self.state.loaded
        if loaded is None:
            return
        if self.current_source and ((name == SPREAD and loaded.is_hf) or loaded.spread):
            # accelerate places the layers while it loads them: a spread model is opened again
            self.open_source(self.current_source)
        else:
            self.run_jobs.cancel()
            self._supersede()
            self.model_jobs.start(_move_model, loaded, name, on_returned=self.state.set_model,
                                  on_error=lambda _exc: self.state.end_request())

    # ---- running -------------------------------------------------------------------------
    def _on_edit(self, _text: str) -> None:
        if self.live_box.isChecked():
            self._live_timer.start()

    def _chat_on(self) -> bool:
        """The chat form applies: the box is ticked and the model reads chats (another model keeps
        the box's setting, hidden, and reads the words as plain text)."""
        return self.chat_box.isChecked() and reads_chat(self.state.loaded)

    def _show_chat(self) -> None:
        """The chat toggle for a model that reads chats; the system line while chat is on."""
        self.chat_box.setVisible(reads_chat(self.state.loaded))
        for w in (self.system_label, self.system_edit):
            w.setVisible(self._chat_on())

    def _on_chat_toggled(self, _on: bool) -> None:
        """Another chat form is another prompt: Run again, as an edit does."""
        self._show_chat()
        self.run()

    def _typed(self) -> tuple[str, str, str, bool, str]:
        """What the input bar asks for: text, target, pair, chat on, system turn."""
        chat = self._chat_on()
        return (self.text_edit.text(), self.target_edit.text(), self.pair_edit.text(), chat,
                self.system_edit.text() if chat else "")

    def run(self) -> None:
        """Run the model on the text: the newest request wins. Every job still working for
        the old one (its Run, output, the Lens, the effect, the overview's pooling) is
        cancelled; the same request already on its way is not started again."""
        loaded = self.state.loaded
        if loaded is None:
            return
        self._live_timer.stop()
        typed = self._typed()
        if not typed[0].strip():   # said once, here; the old text's heads and output go
            self._supersede()
            self.run_jobs.cancel()
            self.state.set_prompt(*typed)
            self.state.set_trace(None)
            self.state.set_output("")
            self.state.end_request()
            self.banner.setText("There is no text to run: type a sentence first.")
            self.banner.setVisible(True)
            return
        merge = loaded.is_hf and self.merge_box.isChecked()
        request = (loaded, *typed, merge, self.state.interventions, self.state.value_weighted)
        if self.run_jobs.busy and request == self._running:
            return
        self._running = request
        self._supersede()
        text, target, pair, chat, system = typed
        self.run_jobs.start(_timed_trace, loaded, prompt_of(text, chat, system), target, pair, merge,
                            interventions=self.state.interventions, value_weighted=self.state.value_weighted,
                            on_yielded=self._run_progress, on_returned=lambda result: self._trace_done(result, typed),
                            on_error=lambda _exc: self.state.end_request())

    def _supersede(self) -> None:
        """A newer request: the model's output for the old text stops, and every view's work
        for it (state.request_started); what they show is marked until the new results come."""
        self.output_jobs.cancel()
        self.state.begin_request()

    def _run_progress(self, record) -> None:
        """("run", attention sites passed, sites): a long Run says how far it is (Esc stops it)."""
        _, done, total = record
        self.busy_label.setText(f"running… {done}/{total} attention layers (Esc stops)")

    def stop_run(self) -> None:
        if self.run_jobs.busy:
            self.run_jobs.cancel()
            self.state.end_request()
            self.statusBar().showMessage("Run stopped; the heads on screen are the last finished Run's.", 6000)

    def _trace_done(self, result, typed: tuple[str, str, str, bool, str]) -> None:
        """The Run's trace is in: the input it read becomes the state's (the text, target, pair
        and chat form every view derives its prompt from), then the model writes its output for it."""
        trace, seconds = result
        self.last_forward_s = seconds
        self.state.set_prompt(*typed)
        self.state.set_trace(trace)
        self.state.end_request()
        self.time_label.setText(f"forward {seconds * 1000:.0f} ms")
        loaded = self.state.loaded
        if loaded is not None and loaded.generates:   # the model's own output, after its heads are on screen
            written_for = self.state.trace_id
            self.output_jobs.start(_model_output, loaded, self.state.prompt, self.state.interventions,
                                   on_returned=lambda out: self.state.set_output(out, written_for))

    def _show_output(self, *_args) -> None:
        """The output line: what the model wrote for the trace on screen; the previous text's
        (greyed, marked 'updating…') while a newer one is written; for a recording, that no
        model is there to write one."""
        state, loaded = self.state, self.state.loaded
        recording = state.recording is not None
        shown = recording or (loaded is not None and loaded.generates)
        self.output_title.setText("Output:" if recording else "Translation:" if loaded is not None
                                  and loaded.role == "encoder-decoder" else "Continuation:")
        self.output_title.setVisible(shown)
        self.output_label.setVisible(shown)
        if recording:
            self.output_label.setText("none: a recording holds attention, not a model to write with (open its "
                                      "model and Run the text to see its output)")
        else:
            self.output_label.setText(state.output)
        # A word longer than the line is cut at its edge (it never widens the window): whole in the tooltip.
        cut = any(self.output_label.fontMetrics().horizontalAdvance(word) > self.output_label.width()
                  for word in self.output_label.text().split())
        self.output_label.setToolTip(OUTPUT_TIP + ("\n\n" + "\n".join(textwrap.wrap(
            self.output_label.text()[:4000], 100, break_long_words=True)) if cut else ""))
        updating = shown and not recording and (state.pending or state.output_for != state.trace_id)
        self.output_label.setEnabled(not updating and not recording)
        self.output_mark.setVisible(updating and state.trace is not None)

    def _describe_source(self) -> None:
        """Title and status bar say what the trace on screen comes from: the loaded model, or a
        recording opened with no model (its model's name, and that none is loaded for it)."""
        loaded, trace, path = self.state.loaded, self.state.trace, self.state.recording
        if path is not None and trace is not None:
            name = Path(path).name
            self.setWindowTitle(f"attnscope: {name} (recording of {trace.model_name}, no model)")
            self.model_label.setText(f"recording of {trace.model_name} ({trace.family}): {name}")
            self.device_label.setText("no model")
            self.device_label.setToolTip("A recording is drawn from the queries and keys it holds; "
                                         f"{loaded.name if loaded else 'no model'} stays open for the next Run")
            self.params_label.setText("")
            self.time_label.setText("")
            return
        if loaded is None:
            return
        self.model_label.setText(f"{loaded.name} ({loaded.family})")
        self.device_label.setText(str(loaded.device) if not loaded.spread else "spread")
        self.device_label.setToolTip(loaded.meta.get("placement", ""))
        self.params_label.setText(f"{loaded.n_parameters / 1e6:.2f} M parameters, {weight_types(loaded.model)}")
        self.params_label.setToolTip("The weights' number and type as loaded (bf16 and fp16: half precision)")
        self.setWindowTitle(f"attnscope: {loaded.name}")

    def _on_trace(self, trace) -> None:
        self._describe_source()
        self._show_output()
        if self.state.recording is None and self.statusBar().currentMessage() == getattr(self, "_said_recording", None):
            self.statusBar().clearMessage()     # "Recording of ..." is not about what is on screen now
        notes = list(trace.notes) if trace else []
        if self.state.trace_model is not None and self.state.loaded.meta.get("untrained"):
            notes.insert(0, "This model is untrained (random weights): its attention is noise. "
                            "Open a trained one from the Model menu.")
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

    # ---- export --------------------------------------------------------------------------
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
                export_widget(export_target(widget), path)
                remember_folder(self.settings, "exports", path)
                self.statusBar().showMessage(f"Saved {path}", 5000)
            except Exception as exc:  # whatever went wrong, the user is told, never the console only
                self.show_error("Could not export the view", exc)

    def save_recording_dialog(self) -> None:
        """The Run's recording as one .safetensors file (engine.traces.recording_file), in a worker."""
        from engine.traces.recorded import RecordedTrace

        if not isinstance(self.state.trace, RecordedTrace):
            self.show_error("Nothing to save", "Run the model on a text first: a recording is what a Run computes.")
            return
        trace = self.state.trace
        name = "".join(c if c.isalnum() or c in "-_." else "-" for c in trace.model_name)
        path, _ = QFileDialog.getSaveFileName(self, "Save Recording", str(Path(start_folder(
            self.settings, "recordings")) / f"{name}.recording.safetensors"), RECORDING_FILTER)
        if path:
            from engine.traces.recording_file import RecordingError, recording_target

            try:
                path = str(recording_target(path, replace=True))   # the name it is written as (.safetensors added)
            except RecordingError as exc:
                self.show_error("Not saved", exc)
                return
            if not self._may_replace(path):
                return
            remember_folder(self.settings, "recordings", path)
            self.save_jobs.start(_save_recording, self.state.trace, path,
                                 on_returned=lambda written: self.statusBar().showMessage(f"Saved {written}", 6000))

    def _may_replace(self, path: str) -> bool:
        """Whether the recording may be written to ``path``: a new file, yes; the model open now,
        never; any other existing file only when the user says so here (the dialog asked about
        the name typed, not always about the name written), and a file that is not a recording
        of ours (a model's weights) with a warning and No as the default."""
        from engine.traces.recording_file import is_recording

        target = Path(path)
        if not target.exists():
            return True
        if (self.current_source and _same_source(str(target), self.current_source)) or self._reads_from(target):
            self.show_error("Not saved", f"{target.name} is the model open now, or one of its files; a recording "
                                         "never replaces it. Choose another name.")
            return False
        ours = is_recording(target)
        what = ("It is a recording; replace it?" if ours else
                "It is not a recording of attnscope (perhaps a model's weights): replacing it loses that file.")
        answer = QMessageBox.question(self, "Replace the file?", f"{target.name} already exists. {what}",
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.Yes if ours else QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def _reads_from(self, target: Path) -> bool:
        """Whether ``target`` is one of the open model's own files (a shard of a folder model, or a
        hub model's file in the cache, a link to a blob there), which a recording never replaces."""
        folder = (self.state.loaded.meta.get("folder") if self.state.loaded is not None else None)
        if not folder or not Path(folder).is_dir():
            return False
        try:
            mine = target.resolve()
            return any(f.resolve() == mine for f in Path(folder).iterdir())
        except OSError:
            return False

    def open_text_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open Text File", start_folder(self.settings, "texts"),
                                              "Text (*.txt *.md);;All files (*)")
        if path:
            remember_folder(self.settings, "texts", path)
            self.open_text(path)

    def open_text(self, path: str) -> None:
        """A text file as the text, run at once (thousands of tokens: the views pool and zoom); its
        line breaks, tabs and spaces kept, so the Run reads what the command line reads."""
        from engine.inputs import InputError, read_utf8

        try:
            body = read_utf8(path)
        except InputError as exc:
            self.show_error("Could not open the text", exc)
            return
        self.text_edit.setText(body)      # as the file has it, as `--text-file` reads it (gui.text_box)
        self.run()

    def open_recording_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open Recording", start_folder(self.settings, "recordings"),
                                              RECORDING_FILTER)
        if path:
            remember_folder(self.settings, "recordings", path)
            self.open_recording(path)

    def open_recording(self, path: str) -> None:
        """A saved Run, drawn by every view with no model (checked in the worker; a bad file: one dialog).
        A newer request than any Run: the Run on its way and every job for the old text stop."""
        self._live_timer.stop()
        self.run_jobs.cancel()
        self._supersede()
        self.file_jobs.start(_open_recording, path, on_returned=lambda trace: self._recording_opened(trace, path),
                             on_error=lambda _exc: self.state.end_request())

    def _recording_opened(self, trace, path: str) -> None:
        self.state.set_trace(trace, recording=path)
        self.state.set_output("")
        self.state.end_request()
        n = max(len(trace.source_tokens), len(trace.target_tokens))
        self.statusBar().showMessage(f"Recording of {trace.model_name}: {n:,} tokens, drawn with no model. "
                                     "A Run replaces it.", 10000)
        self._said_recording = self.statusBar().currentMessage()

    def export_trace_dialog(self) -> None:
        trace_export.export_trace_dialog(self)    # the choices and their estimates, then a worker job

    # ---- view settings ---------------------------------------------------------------------
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

    def reset_layout(self) -> None:
        self.restoreState(self._default_state)
        for dock in self.docks.values():
            dock.setFloating(False)
            dock.show()
        self._default_dock_sizes()
        self._drop_stray_tab_bars()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._tab_bars_settled:
            QTimer.singleShot(0, self._drop_stray_tab_bars)   # after the first start's dock sizes

    def _drop_stray_tab_bars(self) -> None:
        """Qt 6.11 leaves a second tab bar behind when docks are tabified, or a layout restored,
        before the window is shown: the bottom views' first two tabs ("Head statistics",
        "Neurons") stayed drawn over the bottom dock's title. Every tab bar is hidden, then the
        layout laid out again, which shows again only the bars it uses."""
        for bar in self.findChildren(QTabBar):
            if bar.parent() is self:
                bar.hide()
        self.restoreState(self.saveState())
        self._tab_bars_settled = True

    def eventFilter(self, watched, event) -> bool:
        if watched is self.centralWidget() and event.type() == QEvent.Type.LayoutRequest:
            QTimer.singleShot(0, self, self._room_for_overview)   # once the layout has settled
        return super().eventFilter(watched, event)

    def _room_for_overview(self) -> None:
        """The central part (text, output, notes and the heads overview) gets at least the
        height it asks for: Qt keeps a bottom dock's height when the window shrinks or the fonts
        grow, and the overview took what was left (presentation mode at 1280x800, with the
        Patching panel open and a two-line note, drew ~25 px a layer and dropped its labels).
        The bottom dock is shortened, down to its own minimum, never the other way."""
        central = self.centralWidget()
        # The overview is the central part's last row: from where it starts, its own minimum (the
        # layout's minimumSizeHint leaves out the height a wrapped line takes at this width).
        bottom_margin = central.layout().contentsMargins().bottom()
        short = self.grid.geometry().top() + self.grid.minimumSizeHint().height() + bottom_margin - central.height()
        bottom = [d for d in self.docks.values() if d.isVisible() and not d.isFloating()
                  and self.dockWidgetArea(d) == Qt.DockWidgetArea.BottomDockWidgetArea]
        if short > 0 and bottom:
            dock = bottom[0]
            self.resizeDocks([dock], [max(dock.minimumSizeHint().height(), dock.height() - short)],
                             Qt.Orientation.Vertical)

    def _default_dock_sizes(self) -> None:
        bottom = [d for t, d in self.docks.items() if self.dockWidgetArea(d) == Qt.DockWidgetArea.BottomDockWidgetArea]
        if bottom:
            self.resizeDocks(bottom[:1], [int(self.height() * 0.38)], Qt.Orientation.Vertical)

    def show_shortcuts(self) -> None:
        rows = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in SHORTCUTS)
        QMessageBox.information(self, "Keyboard shortcuts", f"<table cellpadding=4>{rows}</table>")

    def show_about(self) -> None:
        QMessageBox.about(self, "About attnscope",
                          f"<b>attnscope {version()}</b><p>See every head of every layer of a transformer that really "
                          "runs: from-scratch translator, GPT and BERT trained by the app, and any Hugging Face "
                          "transformer (BERT, GPT-2, Llama, T5, BART, ...) for comparison.</p>")

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
            self.open_source(urls[0])
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
        self.tip_row.setVisible(str(self.settings.value("tip_dismissed", "false")) != "true")
        state = self.settings.value("window_state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
        else:  # first start: the heads overview gets most of the height
            QTimer.singleShot(0, self._default_dock_sizes)
        self.set_dark(self.dark_action.isChecked())
        self.set_presentation(self.presentation_action.isChecked())

    def dismiss_tip(self) -> None:
        self.tip_row.setVisible(False)
        self.settings.setValue("tip_dismissed", "true")

    def unsaved_views(self) -> list[QWidget]:
        """Views holding work that exists nowhere else (a trained model not yet saved)."""
        return [v for v in self.views.values() if getattr(v, "unsaved", False)]

    def confirm_discard(self) -> bool:
        """Ask before unsaved work is lost: Save (then close), Discard, or Cancel."""
        unsaved = self.unsaved_views()
        if not unsaved:
            return True
        box = QMessageBox(QMessageBox.Icon.Question, "Unsaved model",
                          " ".join(dict.fromkeys(getattr(v, "unsaved_message", UNSAVED) for v in unsaved)),
                          QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, self)
        answer = box.exec()
        if answer == QMessageBox.StandardButton.Save:
            for view in unsaved:
                view.save_dialog()
            return not self.unsaved_views()
        return answer == QMessageBox.StandardButton.Discard

    def closeEvent(self, event) -> None:
        if not self.confirm_discard():
            event.ignore()
            return
        self.hide()            # gone from the screen first; what follows is bookkeeping
        self._live_timer.stop()
        for view in self.views.values():   # timers of their own (Decoding's Play) stop with the window
            getattr(view, "window_closing", lambda: None)()
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("window_state", self.saveState())
        self.settings.setValue("live", "true" if self.live_box.isChecked() else "false")
        self.settings.setValue("chat", "true" if self.chat_box.isChecked() else "false")
        self.settings.setValue("chat_system", self.system_edit.text())
        self.settings.sync()
        if self.save_jobs.busy:          # a recording being written is the user's: it is finished, not cut
            self.statusBar().showMessage("Finishing the recording being saved…")
            process_events_until(lambda: not self.save_jobs.busy, 120)
        # Ask every job to stop and give them QUIT_WAIT_S in all (a job stops at its next
        # attention site): the window goes at once, and gui.app ends the process without
        # waiting out a forward that cannot stop inside itself (each job waited 0.2 s of its
        # own: the window froze 2.5-3 s, and the process outlived it by 4-5 s).
        shutdown_all(timeout_s=QUIT_WAIT_S)
        super().closeEvent(event)


def _is_bundled(source: str) -> bool:
    return any(_same_source(source, str(p)) for p in catalog.bundled_checkpoints())


def _same_source(a: str | None, b: str | None) -> bool:
    """Two ways of naming one model source (a path given relative or absolute, or a name)."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    try:
        return Path(a).exists() and Path(b).exists() and Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


DTYPE_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def weight_types(model) -> str:
    """The weights' types as people name them ("bf16", "fp32", or "bf16 + fp32" when mixed)."""
    names = {str(p.dtype).removeprefix("torch.") for p in model.parameters()}
    return " + ".join(sorted(DTYPE_NAMES.get(n, n) for n in names)) or "no weights"


def _move_model(loaded: LoadedModel, device: str) -> LoadedModel:
    return loaded.to(pick_device(device))
