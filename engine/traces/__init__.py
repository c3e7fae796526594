"""What a Run hands the views: a trace of attention says what every head attended to
(base.py, the AttentionTrace protocol), computed from the recorded queries and keys
(recorded.py) or held whole (dense.py); ``trace_text`` (tracing.py) is the Run, text in and a
trace out, and a recording file (recording_file.py) keeps one. Public: the names gui/ and cli/
use, listed in ``__all__``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.traces.base import AttentionTrace, RunCancelled, TraceTooLarge
    from attnscope.engine.traces.dense import DenseTrace
    from attnscope.engine.traces.estimate import RunTooLarge, estimate_drawing
    from attnscope.engine.traces.pooling import bin_span, pool_2d
    from attnscope.engine.traces import reading
    from attnscope.engine.traces.recorded import RecordedTrace
    from attnscope.engine.traces.recording_file import (RecordingError, is_recording, load_recording, recording_target,
                                              save_recording)
    from attnscope.engine.traces.tracing import stoppable, trace_text
    from attnscope.engine.traces.viewport import cell, combine_heads, viewport_weights

_PUBLIC = {
    "AttentionTrace": "base",
    "RunCancelled": "base",
    "TraceTooLarge": "base",
    "DenseTrace": "dense",
    "RunTooLarge": "estimate",
    "estimate_drawing": "estimate",
    "bin_span": "pooling",
    "pool_2d": "pooling",
    "RecordedTrace": "recorded",
    "reading": "reading",
    "RecordingError": "recording_file",
    "is_recording": "recording_file",
    "load_recording": "recording_file",
    "recording_target": "recording_file",
    "save_recording": "recording_file",
    "stoppable": "tracing",
    "trace_text": "tracing",
    "cell": "viewport",
    "combine_heads": "viewport",
    "viewport_weights": "viewport",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["AttentionTrace", "DenseTrace", "RecordedTrace", "RecordingError", "RunCancelled", "RunTooLarge",
           "TraceTooLarge", "bin_span", "cell", "combine_heads", "estimate_drawing", "is_recording", "load_recording",
           "pool_2d", "reading", "recording_target", "save_recording", "stoppable", "trace_text", "viewport_weights"]
