"""Opening a model in the main window: the Model menu, Open Recent, the open dialogs, the load
job with its progress and Cancel, and moving the model to another device.

The load runs on the model thread (gui.window.engine_calls.open_model); a failed or cancelled load
leaves the previous model open and usable. ``window`` is the main window: its state, its jobs
(``model_jobs``, ``run_jobs``), its input bar and its status bar.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QInputDialog, QLineEdit

from attnscope.engine.inputs import InputError
from attnscope.engine.loading import catalog, use_api_key
from attnscope.engine.runtime import SPREAD
from attnscope.gui.window import engine_calls
from attnscope.gui.window.hf_cache_dialog import HFCacheDialog
from attnscope.gui.settings import keep_private, keep_secret, push_recent, recent_files, remember_folder, start_folder
from attnscope.gui.worker import SHARED, Jobs

API_KEY_SETTING = "ndif/api_key"
CHECKPOINT_FILTER = "Checkpoints (*.safetensors *.pt *.pth *.ckpt *.bin);;All files (*)"


def same_source(a: str | None, b: str | None) -> bool:
    """Two ways of naming one model source (a path given relative or absolute, or a name)."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    try:
        return Path(a).exists() and Path(b).exists() and Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def is_bundled(source: str) -> bool:
    return any(same_source(source, str(p)) for p in catalog.bundled_checkpoints())


def _offer(dialog: QInputDialog, names: list[str]) -> None:
    """The models NDIF serves, as the dialog's choices; what was typed meanwhile is kept."""
    typed = dialog.textValue()
    dialog.setComboBoxItems(names)
    if typed:
        dialog.setTextValue(typed)


def remote_source(name: str) -> str:
    """A name typed for NDIF as the source that opens it there: ``ndif:<name>``."""
    name = name.strip()
    return name if name.lower().startswith("ndif:") else f"ndif:{name}"


class RemoteNotices(QObject):
    """What a remote model's jobs say before they go (what will travel, the last job's time),
    from whichever worker starts them, shown in the status bar on the GUI thread."""
    said = Signal(str)


class ModelOpening:
    """The window's model opening; ``current_source`` is what the loaded model was opened from."""

    def __init__(self, window):
        self.window = window
        self.current_source: str | None = None
        self.remote_notices = RemoteNotices(window)
        self.remote_notices.said.connect(lambda text: window.statusBar().showMessage(text, 15000))
        self._use_kept_key()

    # ---- menus and dialogs ---------------------------------------------------------------
    def fill_model_menu(self, name: str | None = None) -> None:
        """The models to open, the loaded one checked (``name``: the one being put in place)."""
        w = self.window
        menu = w.model_menu
        menu.clear()
        listed: list[str] = []

        def add(label: str, source: str) -> None:
            listed.append(source)
            act = menu.addAction(label, lambda: self.open_source(source))
            act.setCheckable(True)
            act.setChecked(same_source(source, self.current_source))
        source = self.current_source
        if source and not is_bundled(source) and source != catalog.MINILM and source not in catalog.RANDOM_SOURCES:
            # A folder, a cache or hub model, a file: the loaded one is listed (ticked) first.
            name = name or (w.state.loaded.name if w.state.loaded is not None else Path(source).name)
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
        recent = [p for p in recent_files(w.settings) if not any(same_source(p, s) for s in listed)]
        if recent:
            menu.addSeparator()
            for path in recent[:5]:
                add(Path(path).name, path)

    def fill_recent_menu(self) -> None:
        menu = self.window.recent_menu
        menu.clear()
        files = recent_files(self.window.settings)
        for path in files:
            menu.addAction(path, lambda p=path: self.open_source(p))
        menu.setEnabled(bool(files))

    def open_checkpoint_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open Checkpoint",
                                              start_folder(self.window.settings, "models"), CHECKPOINT_FILTER)
        if path:
            self.open_source(path)

    def open_hf_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self.window, "Open Hugging Face Model Folder",
                                                start_folder(self.window.settings, "models"))
        if path:
            self.open_source(path)

    def open_hf_cache_dialog(self) -> HFCacheDialog:
        """The models in the local Hugging Face cache (and any hub id), opened by name."""
        dialog = HFCacheDialog(self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.chosen.connect(self.open_source)
        dialog.open()
        return dialog

    def open_remote_dialog(self) -> QInputDialog:
        """File > Open Remote Model (NDIF): a hub id as NDIF serves it, opened as ``ndif:<id>``
        (engine.remote; under ATTNSCOPE_NDIF=local a folder or cached hub id, run here through
        nnsight's stand-in for NDIF). Not modal: the choice comes back as a signal."""
        from attnscope.engine.loading import local_mode

        dialog = QInputDialog(self.window)
        dialog.setWindowTitle("Open Remote Model (NDIF)")
        where = ("ATTNSCOPE_NDIF=local: a model folder or cached hub id, run here through nnsight as NDIF would"
                 if local_mode() else "the hub id of a model NDIF serves (see nnsight.net/status), e.g. "
                 "meta-llama/Llama-3.1-70B; the key: File > NDIF API Key… or NDIF_API_KEY")
        dialog.setLabelText(f"Model ({where}):")
        dialog.setComboBoxEditable(True)              # a hub id typed, or one of those NDIF runs now
        dialog.setComboBoxItems([])
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.textValueSelected.connect(lambda name: name.strip() and self.open_source(remote_source(name)))
        dialog.open()
        if not local_mode():                          # what NDIF serves, where it can be reached (a worker)
            dialog.served_jobs = Jobs(dialog, "Could not ask NDIF what it serves", lane=SHARED)
            dialog.served_jobs.start(engine_calls.served_models,
                                     on_returned=lambda names: names and _offer(dialog, names))
        return dialog

    def api_key_dialog(self) -> QInputDialog:
        """File > NDIF API Key…: the key remote models' jobs go with, kept in the settings (never
        shown back: the field is a password field, left empty; an empty answer keeps the old)."""
        dialog = QInputDialog(self.window)
        dialog.setWindowTitle("NDIF API Key")
        dialog.setLabelText("NDIF API key for remote models (from https://login.ndif.us; kept in attnscope's "
                            "settings, used before the NDIF_API_KEY variable):")
        dialog.setTextEchoMode(QLineEdit.EchoMode.Password)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.textValueSelected.connect(self._keep_api_key)
        dialog.open()
        return dialog

    def _use_kept_key(self) -> None:
        """The key the settings hold, for remote models' jobs; the file made private (0600) while it
        holds one; a kept key that no key can be (an older version kept any) is dropped, said once."""
        settings = self.window.settings
        kept = str(settings.value(API_KEY_SETTING, "") or "")
        try:
            use_api_key(kept)
        except InputError as exc:
            keep_secret(settings, API_KEY_SETTING, None)
            self.window.statusBar().showMessage(f"{exc} It was dropped; set it again.", 15000)
            return
        if kept:
            keep_private(settings)

    def _keep_api_key(self, key: str) -> None:
        """The key typed in File > NDIF API Key…, checked (engine.loading.ndif_key) before it is
        kept or used: one sentence, the key never in it. Empty keeps the old."""
        if not key:
            return
        try:
            if not key.strip():
                raise InputError("The NDIF API key is only blanks: paste the key itself (from https://login.ndif.us).")
            use_api_key(key)               # refuses before it changes anything
        except InputError as exc:
            self.window.show_error("NDIF API Key", exc)
            return
        keep_secret(self.window.settings, API_KEY_SETTING, key.strip())
        self.window.statusBar().showMessage("The NDIF API key is kept for remote models.", 5000)

    # ---- the load ------------------------------------------------------------------------
    def open_source(self, source: str) -> None:
        """Load a model in the worker, its progress in the status bar; on failure or Cancel
        keep the current one (and say why)."""
        w = self.window
        w.statusBar().showMessage(f"Loading {Path(source).name}…")
        w.status_line.load_progress.start(Path(source).name or source)
        w.run_jobs.cancel()     # the old model's Run and every job for its text: a newer request
        w.supersede()
        w.model_jobs.start(engine_calls.open_model, source, w.state.device, on_yielded=self._on_load_yield,
                           on_returned=lambda loaded: self._model_loaded(source, loaded),
                           on_error=lambda _exc: w.state.end_request())

    def use(self, opened) -> None:
        """A loaded model (or a trace) a script already holds, shown without a load (attnscope.show):
        a model passed the loader's checks when it was loaded; a trace is drawn as a recording is."""
        from attnscope.engine.loading import LoadedModel

        w = self.window
        if isinstance(opened, LoadedModel):
            self.current_source = None
            self.fill_model_menu(opened.name)
            w.statusBar().showMessage(f"Opened {opened.name} from Python.", 4000)
            w.state.set_model(opened)
        else:
            w.recordings.shown(opened, f"{opened.model_name} (from Python)")

    def _on_load_yield(self, value) -> None:
        if isinstance(value, list):      # the machine's devices, first
            w = self.window
            w.state.device = engine_calls.usable_device(w.state.device, value)
            w.input_bar.show_devices(value, w.state.device)
        else:                            # how far the load is
            self.window.status_line.load_progress.show_progress(value)

    def cancel_load(self) -> None:
        """Cancel: the load stops between two tensors; the model that was open stays."""
        w = self.window
        if w.model_jobs.busy:
            w.model_jobs.cancel()
            w.state.end_request()
            w.status_line.load_progress.finish()
            kept = w.state.loaded.name if w.state.loaded is not None else "no model"
            w.statusBar().showMessage(f"Loading cancelled; {kept} stays open.", 6000)

    def _model_loaded(self, source: str, loaded) -> None:
        w = self.window
        self.current_source = source
        self.fill_model_menu(loaded.name)
        if Path(source).exists():
            push_recent(w.settings, str(Path(source).resolve()))
            if not is_bundled(source):     # the next Open Checkpoint starts by the user's models
                remember_folder(w.settings, "models", str(Path(source).resolve().parent))
            self.fill_recent_menu()
        notes = loaded.meta.get("notes")
        w.statusBar().showMessage(f"Opened {loaded.name}" + (f". {notes}" if notes else ""), 12000 if notes else 4000)
        w.state.set_model(loaded)

    def choose_device(self, name: str) -> None:
        """The device chooser changed: the model moves there (a spread one is opened again)."""
        w = self.window
        w.state.device = name
        w.settings.setValue("device", name)
        loaded = w.state.loaded
        if loaded is None:
            return
        if self.current_source and ((name == SPREAD and loaded.is_hf) or loaded.spread):
            # accelerate places the layers while it loads them: a spread model is opened again
            self.open_source(self.current_source)
        else:
            w.run_jobs.cancel()
            w.supersede()
            w.model_jobs.start(engine_calls.move_model, loaded, name, on_returned=w.state.set_model,
                               on_error=lambda _exc: w.state.end_request())
