"""Training panel: train a translator or a GPT in the window and watch its heads form.

The run is an engine.training.loops generator in the panel's own worker. Stop sets a flag the
trainer reads between steps, so it ends cleanly and the model is kept. The worker passes
on at most a few records a second (plus every evaluation and probe), so a tiny model that
trains at hundreds of steps a second cannot flood the window. Each probe trace joins a
time-lapse that the slider scrubs; Save writes the checkpoint and the time-lapse beside it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import pyqtgraph as pg

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QProgressBar, QPushButton, QSlider, QSpinBox, QSplitter, QVBoxLayout,
                               QWidget)

from attnscope.engine.training import Probe, load_timelapse, save_timelapse, timelapse_path
from attnscope.engine.training import GPT_RECIPE, TrainConfig, TrainProgress
from attnscope.gui.settings import app_settings, remember_folder, start_folder
from attnscope.gui.view_options import ViewOptions, bind_options, option
from attnscope.gui.state import AppState
from attnscope.gui.views.head_grid import HeadGrid
from attnscope.gui.worker import TRAINING, Jobs, error_message, job_failures, process_events_until

DEFAULT_PROBES = {"translator": "the big dog sees the small cat .", "gpt": "HAMLET. To be, or not to be, that is"}


def training_run(family: str, corpus: str | None, config: TrainConfig, device: str, stop=lambda: False,
                 max_rate: float = 4.0):
    """Corpus -> trainer, yielding TrainProgress at most ``max_rate`` times a second (and
    every record with a validation loss, a probe, a stop or the end); returns the
    LoadedModel, or None when stopped before the first step. ``stop`` comes from Jobs:
    true after Stop or when the window closes, read before and between steps."""
    from attnscope.engine.corpora import text_splits, translation_splits
    from attnscope.engine.runtime import pick_device
    from attnscope.engine.training import train_gpt, train_translator

    dev = pick_device(device)
    if family == "translator":
        splits = translation_splits(corpus, config.seed, n_train=4000 if config.size == "tiny" else 20000)
        if stop():
            return None
        gen = train_translator(splits["train"], splits["valid"], config, dev, stop=stop)
    else:
        lines_train, lines_valid = text_splits(corpus, config.seed)
        if stop():
            return None
        gen = train_gpt(lines_train, lines_valid, config, dev, stop=stop)
    last = 0.0
    while True:
        try:
            record = next(gen)
        except StopIteration as done:
            return done.value
        now = time.perf_counter()
        if (record.done or record.stopped or record.val_loss is not None or record.probe is not None
                or now - last >= 1.0 / max_rate):
            last = now
            yield record


LAPSE_HINT = "time-lapse: probe traces appear here while training"


def percent(step: int, total: int) -> int:
    """Whole percent done, rounded down: the bar and the sentences say the same number."""
    return 100 * max(0, step) // max(1, total)


@dataclass(frozen=True)
class TrainingOptions(ViewOptions):
    """What the panel trains (settings "training/..."): shown in this order, so a family's own
    learning rate is set before the one kept. The corpus and probe sentence are not kept."""
    PREFIX = "training"
    family: str = option("translator", "family")
    size: str = option("tiny", "size")
    steps: int = option(500, "steps_box")
    lr: float = option(1e-3, "lr")
    probe_every: int = option(50, "probe_every")


def _write(trained, probes: list, path: str) -> str:
    """A trained model's checkpoint and its time-lapse (each written atomically); any thread."""
    from attnscope.engine.loading import save_checkpoint

    save_checkpoint(trained, path)
    if probes:
        save_timelapse(timelapse_path(path), probes)
    return path


class TrainingPanel(QWidget):
    def __init__(self, state, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.jobs = Jobs(self, "Training failed", lane=TRAINING)
        self.save_jobs = Jobs(self, "Could not save the checkpoint", lane=TRAINING,   # where the model trained
                              announce=False)                                      # _show_error says it
        self.save_jobs.busy_changed.connect(lambda _busy: self._update_buttons())
        self.trained = None                     # the LoadedModel of the last run
        self._unsaved = False                   # trained and not saved since
        self.steps: list[int] = []
        self.losses: list[float] = []
        self.val_steps: list[int] = []
        self.val_losses: list[float] = []
        self.probes: list[Probe] = []
        self._started = 0.0

        # ---- controls ----
        self.family = QComboBox()
        self.family.addItems(["translator", "gpt"])
        self.family.currentTextChanged.connect(self._on_family)
        self.corpus = QLineEdit()
        self.corpus.setPlaceholderText("default: synthetic English->German / Shakespeare's plays")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        corpus_row = QHBoxLayout()
        corpus_row.addWidget(self.corpus, 1)
        corpus_row.addWidget(browse)
        self.size = QComboBox()
        self.size.addItems(["tiny", "small"])
        self.steps_box = QSpinBox()
        self.steps_box.setRange(10, 200000)
        self.steps_box.setValue(500)
        self.lr = QDoubleSpinBox()
        self.lr.setDecimals(5)
        self.lr.setRange(1e-5, 1e-1)
        self.lr.setSingleStep(1e-4)
        self.lr.setValue(1e-3)
        self.probe_text = QLineEdit(DEFAULT_PROBES["translator"])
        self.probe_every = QSpinBox()
        self.probe_every.setRange(1, 10000)
        self.probe_every.setValue(50)
        form = QFormLayout()
        form.addRow("Model", self.family)
        form.addRow("Corpus", corpus_row)
        form.addRow("Size", self.size)
        form.addRow("Steps", self.steps_box)
        form.addRow("Learning rate", self.lr)
        form.addRow("Probe sentence", self.probe_text)
        form.addRow("Probe every", self.probe_every)

        self.start_button = QPushButton("Start")
        self.stop_button = QPushButton("Stop")
        self.save_button = QPushButton("Save Checkpoint…")
        self.use_button = QPushButton("Show in Window")
        self.open_lapse_button = QPushButton("Open Time-lapse…")
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.save_button.clicked.connect(self.save_dialog)
        self.use_button.clicked.connect(lambda: self.trained is not None and self.state.set_model(self.trained))
        self.open_lapse_button.clicked.connect(self.open_timelapse_dialog)
        buttons = QHBoxLayout()
        for b in (self.start_button, self.stop_button, self.save_button, self.use_button, self.open_lapse_button):
            buttons.addWidget(b)
        self.progress = QProgressBar()
        self.status = QLabel("Set up a run and press Start.")
        self.status.setWordWrap(True)

        # ---- loss curve and time-lapse ----
        self.plot = pg.PlotWidget()
        self.plot.getPlotItem().setTitle("loss", size="9pt")
        self.plot.addLegend(offset=(-10, 10))
        self.train_curve = self.plot.plot([], [], pen=pg.mkPen("#1f77b4", width=2), name="training")
        self.val_curve = self.plot.plot([], [], pen=pg.mkPen("#d62728", width=2), symbol="o", symbolSize=6,
                                        name="validation")
        self.plot.setLabel("bottom", "step")
        self.lapse_state = AppState()
        self.lapse_state.colormap = state.colormap
        state.colormap_changed.connect(self.lapse_state.set_colormap)
        self.grid = HeadGrid(self.lapse_state)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.valueChanged.connect(self.show_probe)
        self.lapse_label = QLabel(LAPSE_HINT)
        lapse = QWidget()
        lapse_layout = QVBoxLayout(lapse)
        lapse_layout.setContentsMargins(0, 0, 0, 0)
        lapse_layout.addWidget(self.lapse_label)
        lapse_layout.addWidget(self.slider)
        lapse_layout.addWidget(self.grid, 1)

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addLayout(form)
        left_layout.addLayout(buttons)
        left_layout.addWidget(self.progress)
        left_layout.addWidget(self.status)
        left_layout.addStretch(1)
        split = QSplitter()
        for w in (left, self.plot, lapse):
            split.addWidget(w)
        split.setSizes([360, 420, 420])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(split)
        bind_options(self, TrainingOptions)
        self._update_buttons()

    @property
    def unsaved(self) -> bool:
        """Work that exists nowhere else: a run going on, or a trained model not saved since."""
        return self.jobs.busy or self._unsaved

    @unsaved.setter
    def unsaved(self, value: bool) -> None:
        self._unsaved = value

    @property
    def unsaved_message(self) -> str:
        """What the window asks before closing over it."""
        if self.jobs.busy:
            return ("Training is still running. Save the model trained so far (the run stops first), "
                    "or discard it?")
        return "The model trained in the Training panel has not been saved. Save it before quitting?"

    def _show_progress(self, step: int) -> None:
        self.progress.setValue(step)
        self.progress.setFormat(f"{percent(step, self.progress.maximum())} %")

    def _on_family(self, family: str) -> None:
        self.probe_text.setText(DEFAULT_PROBES[family])
        self.lr.setValue(GPT_RECIPE["lr"] if family == "gpt" else TrainConfig.lr)

    # ---- running --------------------------------------------------------------------------
    def config(self) -> TrainConfig:
        """The run's config, from the view's options (TrainingOptions: what the widgets show)."""
        o = self.option_binding.options
        steps = o.steps
        config = TrainConfig(size=o.size, steps=steps, lr=o.lr,
                             warmup=min(300, max(1, steps // 10)), report_every=5 if steps < 2000 else 10,
                             eval_every=max(10, steps // 10), probe_every=o.probe_every,
                             probe_text=self.probe_text.text().strip() or None,
                             batch_size=32 if o.size == "tiny" else 64)
        if o.family == "gpt":   # the bundled GPT's way, so induction heads can form
            config = replace(config, vocab_size=GPT_RECIPE["vocab_size"], batch_size=GPT_RECIPE["batch_size"],
                             repeat_fraction=GPT_RECIPE["repeat_fraction"])
        return config

    def start(self) -> None:
        if self.jobs.busy:
            return
        self.trained, self.unsaved = None, False
        self.steps, self.losses, self.val_steps, self.val_losses, self.probes = [], [], [], [], []
        self.train_curve.setData([], [])
        self.val_curve.setData([], [])
        self.slider.setRange(0, 0)
        self.lapse_state.set_trace(None)        # the last run's time-lapse is not this run's
        self.lapse_label.setText(LAPSE_HINT)
        config = self.config()
        self.progress.setRange(0, config.steps)
        self._show_progress(0)
        self.status.setText("Preparing the corpus and the tokenizer…")
        self._started = time.perf_counter()
        corpus = self.corpus.text().strip() or None
        self.jobs.start(training_run, self.option_binding.options.family, corpus, config, self.state.device or "auto",
                        on_yielded=self._progress, on_returned=self._finished,
                        on_error=self._failed, on_finished=self._update_buttons)
        self._update_buttons()

    def stop(self) -> None:
        """End the run after the current step; the model trained so far is kept."""
        if self.jobs.busy:
            self.jobs.stop()
            self.status.setText("Stopping after this step…")

    def _progress(self, p: TrainProgress) -> None:
        if p.stopped and not p.done:
            self.status.setText(f"Stopped at step {p.step} of {p.total_steps}: measuring the validation loss…")
            return
        if not p.done:
            self.steps.append(p.step)
            self.losses.append(p.loss)
            self.train_curve.setData(self.steps, self.losses)
        if p.val_loss is not None:
            self.val_steps.append(p.step)
            self.val_losses.append(p.val_loss)
            self.val_curve.setData(self.val_steps, self.val_losses)
        if p.probe is not None:
            self.probes.append(Probe.from_progress(p))   # with its induction / previous-token scores
            follow = self.slider.value() == self.slider.maximum()
            self.slider.setRange(0, len(self.probes) - 1)
            if follow:
                self.slider.setValue(len(self.probes) - 1)
                self.show_probe(len(self.probes) - 1)
        self._show_progress(p.step)
        eta = (p.total_steps - p.step) * p.elapsed_s / max(1, p.step)
        val = f", validation {p.val_loss:.3f}" if p.val_loss is not None else ""
        self.status.setText(f"step {p.step}/{p.total_steps}: loss {p.loss:.3f}{val}, "
                            f"{p.tokens_per_s:,.0f} tokens/s, about {eta:.0f} s left")

    def _finished(self, loaded) -> None:
        self.trained = loaded
        if loaded is None:
            self.status.setText("Stopped before the first step: no model was trained.")
            self._update_buttons()
            return
        self.unsaved = True
        training = loaded.meta.get("training", {})
        took = time.perf_counter() - self._started
        steps, total = training.get("steps"), self.progress.maximum()
        head = (f"Done: {steps} steps" if steps == total else
                f"Stopped at step {steps} of {total} ({percent(steps, total)} %)")
        val = training.get("val_loss")
        self.status.setText(f"{head} in {took:.0f} s, validation loss "
                            f"{float('nan') if val is None else val:.3f}. Save it, or show it in the window.")
        self._update_buttons()

    def _failed(self, exc: BaseException) -> None:
        """The run ended with an error (the window shows it as a dialog): say so here too,
        and give the controls back."""
        self.status.setText(f"Training failed: {error_message(exc)}")
        self._update_buttons()

    def _update_buttons(self) -> None:
        busy = self.jobs.busy
        self.start_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self.save_button.setEnabled(self.trained is not None and not busy and not self.save_jobs.busy)
        self.use_button.setEnabled(self.trained is not None and not busy)

    # ---- time-lapse ---------------------------------------------------------------------------
    def show_probe(self, index: int) -> None:
        if not (0 <= index < len(self.probes)):
            return
        p = self.probes[index]
        self.lapse_label.setText(f"time-lapse {index + 1}/{len(self.probes)}: step {p.step}, loss {p.loss:.3f}")
        self.lapse_state.set_trace(p.trace)

    # ---- files -----------------------------------------------------------------------------------
    def save_dialog(self, wait: bool = False) -> None:
        """Ask where, then write the checkpoint in a worker (the training lane, where the model
        is); ``wait``: return once it is written (the window is closing)."""
        if self.jobs.busy:      # asked while training (the window is closing): stop, keep what was trained
            self.jobs.stop()
            self.status.setText("Stopping after this step…")
            process_events_until(lambda: not self.jobs.busy, 600)
        if self.trained is None:
            return
        settings = app_settings()
        path, _ = QFileDialog.getSaveFileName(self, "Save Checkpoint", str(Path(start_folder(settings, "models"))
                                              / f"{self.family.currentText()}.safetensors"),
                                              "attnscope checkpoint (*.safetensors)")
        if path:
            remember_folder(settings, "models", path)
            path = path if path.endswith(".safetensors") else path + ".safetensors"
            self.status.setText(f"Saving {path}…")
            self.save_jobs.start(_write, self.trained, list(self.probes), path, on_returned=self._saved,
                                 on_error=lambda exc: self._show_error("Could not save the checkpoint", exc))
            if wait:
                process_events_until(lambda: not self.save_jobs.busy, 600)

    def _saved(self, path: str) -> None:
        self.unsaved = False
        self.status.setText(f"Saved {path} (and its time-lapse).")

    def load_timelapse(self, path: str) -> None:
        self.probes = load_timelapse(path)
        self.slider.setRange(0, max(0, len(self.probes) - 1))
        self.slider.setValue(0)
        self.show_probe(0)

    def open_timelapse_dialog(self) -> None:
        settings = app_settings()
        path, _ = QFileDialog.getOpenFileName(self, "Open Time-lapse", start_folder(settings, "models"),
                                              "Training time-lapse (*.timelapse.npz)")
        if path:
            remember_folder(settings, "models", path)
            try:
                self.load_timelapse(path)
            except Exception as exc:
                self._show_error("Could not open the time-lapse", exc)

    def _show_error(self, title: str, exc: BaseException) -> None:
        self.status.setText(f"{title}: {error_message(exc)}")
        job_failures().failed.emit(title, error_message(exc))

    def _browse(self) -> None:
        settings = app_settings()
        path, _ = QFileDialog.getOpenFileName(self, "Corpus", start_folder(settings, "texts"),
                                              "Pairs or text (*.tsv *.txt);;All files (*)")
        if path:
            remember_folder(settings, "texts", path)
            self.corpus.setText(path)

    def closeEvent(self, event) -> None:
        self.jobs.shutdown()
        super().closeEvent(event)
