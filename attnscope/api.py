"""attnscope from Python: load a model, trace a text, read every head as numpy.

Why a module of its own: a notebook or a script should reach what the window and the CLI do
through the same doors (engine.loading.open_model, engine.traces.trace_text, the export's size
estimates), not through a second copy of them. Nothing heavy is imported until a function is
called, so ``import attnscope`` stays cheap (no torch).

    >>> import attnscope
    >>> model = attnscope.load("random-gpt", device="cpu")
    >>> trace = attnscope.trace(model, "the cat sat on the mat")
    >>> heads = trace.to_numpy()          # {kind: (layers, heads, queries, keys) float array}
"""
from __future__ import annotations

from pathlib import Path
from typing import Any


def load(source: Any, device: str = "auto", tokenizer: Any = None) -> Any:
    """The model ``source`` names, loaded onto ``device``: any source the CLI takes (a checkpoint,
    a Hugging Face folder or id, 'translator', 'gpt', 'minilm', 'random-<family>'), or a
    transformers model already in memory with its ``tokenizer`` (checked as a folder's model is,
    then switched to attnscope's attention in place: engine.loading.in_memory). Bad input ends
    in the loader's own error (a ModelLoadError, one sentence)."""
    from attnscope.engine.errors import ModelLoadError
    from attnscope.engine.loading import open_model

    if not isinstance(source, (str, Path)):
        if type(source).__module__.startswith("transformers") or hasattr(source, "config"):
            from attnscope.engine.loading.in_memory import open_in_memory
            from attnscope.engine.runtime.device import pick_device

            if tokenizer is None:
                raise ModelLoadError("attnscope.load of a model in memory needs its tokenizer too: "
                                     "attnscope.load(model, tokenizer=tokenizer).")
            return open_in_memory(source, tokenizer, pick_device(device))
        raise ModelLoadError(f"attnscope.load takes a model's name, folder or file as text, or a transformers "
                             f"model with its tokenizer, not a {type(source).__name__}.")
    if tokenizer is not None:
        raise ModelLoadError("attnscope.load reads the tokenizer from the model's folder or file; pass tokenizer= "
                             "only with a model in memory.")
    return open_model(str(source), device)


def show(what: Any, text: str | None = None, block: bool | None = None) -> Any:
    """Open the window on ``what``: a model from ``attnscope.load`` (then ``text``, if given, is
    run) or a trace (``attnscope.trace``, ``open_recording``: drawn with no model). Returns the
    window. ``block``: run Qt's event loop until the window closes; by default it does only when
    no loop runs already, so under IPython's ``%gui qt`` (or in a Qt app) it returns at once and
    the kernel stays free."""
    from attnscope.engine.inputs import InputError
    from attnscope.engine.loading.loaded import LoadedModel

    raw = what.raw if isinstance(what, Trace) else what
    if not isinstance(raw, LoadedModel) and not hasattr(raw, "kinds"):
        raise InputError(f"attnscope.show takes a model from attnscope.load or a trace, not a {type(what).__name__}.")
    if text is not None and not isinstance(raw, LoadedModel):
        raise InputError("attnscope.show runs a text on a model; a trace is drawn as it is: pass no text.")
    from PySide6.QtCore import QCoreApplication

    from attnscope.gui.app import application
    from attnscope.gui.window.main_window import MainWindow

    looping = QCoreApplication.instance() is not None and _loop_runs()
    app = application()
    window = MainWindow(opened=raw)
    window.show()
    if text is not None:
        window.input_bar.text_edit.setText(text)
        window.run()
    if block if block is not None else not looping:
        app.exec()
    return window


def _loop_runs() -> bool:
    """Whether a Qt event loop already runs here: IPython's ``%gui qt`` hooks its input, or a Qt app."""
    import sys

    ipython = sys.modules.get("IPython")          # running under IPython: it was imported already
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and getattr(shell, "active_eventloop", None) in ("qt", "qt5", "qt6"):
        return True
    from PySide6.QtCore import QCoreApplication, QThread

    app = QCoreApplication.instance()
    return app is not None and QThread.currentThread().loopLevel() > 0


class Trace:
    """A model's attention on one text: what the window's views read (``.raw``, an engine trace),
    read through engine.traces.reading (the free functions every caller uses), never a copy."""

    def __init__(self, raw: Any):
        self.raw = raw

    @property
    def kinds(self) -> list[str]:
        """The attention kinds this trace holds ('self', 'cross', ...)."""
        return list(self.raw.kinds)

    @property
    def notes(self) -> list[str]:
        """What the trace says about itself (a sparse pattern, a sink, ...), as sentences."""
        return list(getattr(self.raw, "notes", []) or [])

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        """(layers, heads, queries, keys) of ``kind``."""
        return tuple(self.raw.shape(kind))

    def query_tokens(self, kind: str) -> list[str]:
        """The tokens that label the rows (queries) of ``kind``."""
        from attnscope.engine.traces import reading
        return reading.query_tokens(self.raw, kind)

    def key_tokens(self, kind: str) -> list[str]:
        """The tokens that label the columns (keys) of ``kind``."""
        from attnscope.engine.traces import reading
        return reading.key_tokens(self.raw, kind)

    def head(self, kind: str, layer: int, head: int) -> Any:
        """(queries, keys) float32: one head's weights."""
        from attnscope.engine.traces import reading
        return reading.head(self.raw, kind, layer, head)

    def row_blocks(self, kind: str, layer: int, step: int | None = None) -> Any:
        """(first row, (heads, rows, keys) float32) blocks of one layer: every head, every key,
        a few rows at a time, so a long text is read without holding it whole."""
        from attnscope.engine.traces import reading
        return reading.row_blocks(self.raw, kind, layer, step)

    def thumbnails(self, kind: str, size: int, how: str = "max") -> Any:
        """Every head of ``kind`` pooled to at most ``size`` a side (the heads overview)."""
        from attnscope.engine.traces import reading
        return reading.thumbnails(self.raw, kind, size, how)

    def to_numpy(self, limit: int | None = None) -> dict[str, Any]:
        """{kind: float32 array (layers, heads, queries, keys)}: the numbers ``attnscope export
        --format npz`` writes, built in memory a block of rows at a time. Past the export limit
        (or ``limit`` bytes) it is refused with the estimate's numbers (an ExportTooLarge, one
        sentence) before any is made."""
        import numpy as np

        from attnscope.engine.inspection.export import ExportAsk, ExportTooLarge, estimate_export, refusal
        from attnscope.engine.traces import reading

        ask = ExportAsk("trace")
        problem = refusal(self.raw, estimate_export(self.raw, ask, "npz", measure=False), limit)
        if problem:
            raise ExportTooLarge(problem)
        out = {}
        for kind in ask.kinds(self.raw):
            L, H, Tq, Tk = self.raw.shape(kind)
            a = np.empty((L, H, Tq, Tk), np.float32)                 # (L, H, Tq, Tk)
            for layer in range(L):
                for r0, block in reading.row_blocks(self.raw, kind, layer):   # (H, r, Tk)
                    a[layer, :, r0:r0 + block.shape[1]] = block
            out[kind] = a
        return out


def trace(model: Any, text: str, target: str | None = None, pair: str | None = None,
          value_weighted: bool = False) -> Trace:
    """``model``'s attention on ``text`` (engine.traces.trace_text: the trace the views read).
    ``target``: a translator's target prefix; ``pair``: BERT's second sentence."""
    from attnscope.engine.inputs import InputError, Prompt
    from attnscope.engine.loading.loaded import LoadedModel
    from attnscope.engine.traces import trace_text

    if not isinstance(model, LoadedModel):
        raise InputError(f"attnscope.trace takes a model from attnscope.load, not a {type(model).__name__}.")
    if not isinstance(text, str):
        raise InputError(f"attnscope.trace takes the text as a str, not a {type(text).__name__}.")
    return Trace(trace_text(model, Prompt.of(text, target, pair), value_weighted=value_weighted))   # checked once
