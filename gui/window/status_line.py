"""The status bar's lasting part: what the trace on screen comes from, where the model runs, its
weights, the last forward's time, what is running, and a model load's progress with Cancel.

A recording opened with no model says so (its model's name, and that none is loaded for it).
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QLabel, QSizePolicy

from attnscope.gui.widgets.elided import ElidedLabel
from attnscope.gui.window.load_progress import LoadProgressBar

DTYPE_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def weight_types(model) -> str:
    """The weights' types as people name them ("bf16", "fp32", or "bf16 + fp32" when mixed)."""
    names = {str(p.dtype).removeprefix("torch.") for p in model.parameters()}
    return " + ".join(sorted(DTYPE_NAMES.get(n, n) for n in names)) or "no weights"


class StatusLine:
    """The labels ``window``'s status bar keeps, left to right: load progress, busy, model, device,
    parameters, the last forward's time. ``cancel_load``: the progress bar's Cancel."""

    def __init__(self, window, cancel_load):
        self.window = window
        self.model_label, self.device_label = ElidedLabel(), QLabel()
        self.params_label, self.time_label, self.busy_label = QLabel(), QLabel(), QLabel()
        self.load_progress = LoadProgressBar(cancel_load)
        # The model's (or the recording's) name gets room of its own: an elided label with nothing
        # reserved was squeezed to nothing beside the others.
        self.model_label.setMinimumWidth(window.fontMetrics().horizontalAdvance("x" * 28))
        self.model_label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)   # laid out, not drawn over
        for w in (self.load_progress, self.busy_label, self.model_label, self.device_label, self.params_label,
                  self.time_label):
            w.setContentsMargins(6, 0, 6, 0)
            window.statusBar().addPermanentWidget(w)

    def describe(self, state) -> None:
        """The window's title and these labels say what the trace on screen comes from: the
        loaded model, or a recording opened with no model."""
        loaded, trace, path = state.loaded, state.trace, state.recording
        if path is not None and trace is not None:
            name = Path(path).name
            self.window.setWindowTitle(f"attnscope: {name} (recording of {trace.model_name}, no model)")
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
        self.window.setWindowTitle(f"attnscope: {loaded.name}")
