"""The engine calls the main window's jobs run on the model thread (gui.worker's MODEL lane).

They live here, not in the window, so a Run goes window -> worker -> engine and back as data:
each function takes plain values (a source, a LoadedModel, a text, a path) and returns or
yields plain data (devices, a model, a trace and its time, a path, a sentence). torch is
imported by the engine modules they call, inside them: building the window imports none of it
(tests/gui/test_startup.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from attnscope.engine.inputs import Prompt
from attnscope.engine.loading import catalog
from attnscope.engine.runtime import SPREAD, available_devices, pick_device


def usable_device(device: str, devices: list[str]) -> str:
    """``device`` where this machine has it, else auto (a setting saved on another machine)."""
    return device if device in ("auto", *devices) else "auto"


def open_model(source: str, device: str, report=None, stop=None):
    """Opening a model: first the devices this machine has (asking torch, which the model needs
    anyway), then the model on ``device`` if it is one of them, its progress reported as it loads
    (engine.loading.progress records), stopped on Cancel."""
    from attnscope.engine.loading import accelerate_missing

    devices = available_devices() + ([SPREAD] if accelerate_missing() is None else [])
    yield devices
    return catalog.open_model(source, usable_device(device, devices), progress=report, stop=stop)


def move_model(loaded, device: str):
    """The loaded model on another device (a spread one is opened again instead: gui.window.model_opening)."""
    return loaded.to(pick_device(device))


@dataclass(frozen=True)
class RunAsk:
    """One Run as the window asks it: the model, the input bar's Prompt (checked once), word
    merging, the interventions and the measure. Two equal asks are one Run: the same one on its
    way is not started again (gui.window.main_window.run)."""
    loaded: Any
    prompt: Prompt
    merge_subwords: bool = False
    interventions: Any = None
    value_weighted: bool = False


def timed_trace(loaded, prompt: Prompt, merge_subwords: bool = False, report=None, stop=None,
                interventions=None, value_weighted=False, say=None):
    """A Run of ``prompt`` (its target and pair with it, checked once by the input bar): (trace,
    seconds), its progress (attention sites passed) reported, stopped on Esc. An ``ndif:``
    model's Run, interventions included, is one nnsight job (engine.remote); ``say``
    (thread-safe) hears what it and the trace's later jobs bring back before they go."""
    from attnscope.engine.remote import model_dims, remote_of, trace_remote
    from attnscope.engine.traces import trace_text
    from attnscope.gui.drawing.overview import EXACT_TOKENS, tile_pixels

    start = time.perf_counter()
    if remote_of(loaded) is not None:        # the rows and pixels the overview draws come with the Run
        layers, heads, _, _ = model_dims(loaded)
        trace = trace_remote(loaded, prompt, rows=EXACT_TOKENS, overview=tile_pixels(layers, heads), report=report,
                             stop=stop, interventions=interventions, say=say)
        return trace, time.perf_counter() - start
    trace = trace_text(loaded, prompt, merge_subwords=merge_subwords,
                       report=report, stop=stop, interventions=interventions, value_weighted=value_weighted)
    return trace, time.perf_counter() - start


def served_models() -> list[str]:
    """The models NDIF runs now ([] where it cannot be reached): a network question, no torch maths."""
    from attnscope.engine.remote import served_models as served

    return served()


def model_output(loaded, text, interventions=None, stop=None) -> str:
    """The output line's text; a newer request ends it within a layer."""
    from attnscope.engine.traces import stoppable
    from attnscope.gui.window.output_line import output_line

    with stoppable(stop):
        return output_line(loaded, text, interventions)


def save_recording(trace, path: str) -> str:
    """Write the recording; the window has asked before replacing any file (gui.window.recordings)."""
    from attnscope.engine.traces import save_recording as save

    return str(save(trace, path, replace=True))


def open_recording(path: str):
    """A saved Run's trace; a model's weights opened here by mistake get a sentence saying where they go."""
    from attnscope.engine.traces import RecordingError, is_recording, load_recording

    try:
        return load_recording(path)
    except RecordingError as exc:
        if is_recording(path):
            raise
        raise RecordingError(f"{exc} To open a model's weights, use File > Open Checkpoint (Ctrl+O).") from exc
