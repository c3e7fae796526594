"""AppState: the one object every view observes (napari-style model/view split).

The main window owns the state; views get it in their constructor, read what is there and
connect to its signals. Nothing here computes: the state only says what is current.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from engine.loaded import LoadedModel
from engine.trace import AttentionTrace


class AppState(QObject):
    model_changed = Signal(object)           # LoadedModel
    trace_changed = Signal(object)           # AttentionTrace
    head_selected = Signal(str, int, int)    # kind, layer, head
    colormap_changed = Signal(str)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.loaded: LoadedModel | None = None
        self.trace: AttentionTrace | None = None
        self.text: str = ""
        self.target: str = ""                # translator: optional target prefix
        self.pair: str = ""                  # BERT: optional segment B
        self.device: str = "auto"
        self.colormap: str = "viridis"

    def set_model(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        self.trace = None
        self.model_changed.emit(loaded)

    def set_trace(self, trace: AttentionTrace | None) -> None:
        self.trace = trace
        self.trace_changed.emit(trace)

    def select_head(self, kind: str, layer: int, head: int) -> None:
        self.head_selected.emit(kind, int(layer), int(head))

    def set_colormap(self, name: str) -> None:
        if name != self.colormap:
            self.colormap = name
            self.colormap_changed.emit(name)
