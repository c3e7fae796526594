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

import tempfile
from pathlib import Path
from typing import Any


def load(source: str, device: str = "auto") -> Any:
    """The model ``source`` names, loaded onto ``device``: any source the CLI takes (a checkpoint,
    a Hugging Face folder or id, 'translator', 'gpt', 'minilm', 'random-<family>'). Bad input ends
    in the loader's own error (a ModelLoadError, one sentence)."""
    from attnscope.engine.loading import open_model
    from attnscope.engine.errors import ModelLoadError

    if not isinstance(source, (str, Path)):
        raise ModelLoadError(f"attnscope.load takes a model's name, folder or file as text, "
                             f"not a {type(source).__name__}.")
    return open_model(str(source), device)


class Trace:
    """A model's attention on one text: what the window's views read (``.raw``, an engine trace),
    with ``.to_numpy()`` for every head of every kind."""

    def __init__(self, raw: Any):
        self.raw = raw

    def __getattr__(self, name: str) -> Any:   # kinds, shape(kind), query_tokens(kind), notes, ...
        return getattr(self.raw, name)

    def to_numpy(self, limit: int | None = None) -> dict[str, Any]:
        """{kind: float array (layers, heads, queries, keys)}: the numbers ``attnscope export
        --format npz`` writes, read back. Past the export limit (or ``limit`` bytes) it is
        refused with the estimate's numbers (an ExportTooLarge, one sentence) before any is made."""
        import numpy as np

        from attnscope.engine.inspection.export import ExportAsk, export_trace

        with tempfile.TemporaryDirectory(prefix="attnscope-") as folder:
            path = export_trace(self.raw, Path(folder) / "trace.npz", ExportAsk("trace"), "npz", limit=limit)
            with np.load(path) as f:
                kinds = [str(k) for k in f["kinds"]]
                return {k: np.array(f["attn_" + k.replace(" ", "_")]) for k in kinds}   # export's _key


def trace(model: Any, text: str, target: str | None = None, pair: str | None = None,
          value_weighted: bool = False) -> Trace:
    """``model``'s attention on ``text`` (engine.traces.trace_text: the trace the views read).
    ``target``: a translator's target prefix; ``pair``: BERT's second sentence."""
    from attnscope.engine.inputs import InputError
    from attnscope.engine.loading.loaded import LoadedModel
    from attnscope.engine.traces import trace_text

    if not isinstance(model, LoadedModel):
        raise InputError(f"attnscope.trace takes a model from attnscope.load, not a {type(model).__name__}.")
    if not isinstance(text, str):
        raise InputError(f"attnscope.trace takes the text as a str, not a {type(text).__name__}.")
    return Trace(trace_text(model, text, target=target, pair=pair, value_weighted=value_weighted))
