"""Decoding: the model's own greedy output (greedy.py, the one greedy loop, which a Run without a
target prefix and the window's output line both read), the session that steps an adapter's
stepper by greedy, beam or sampling (session.py), its plain records (records.py, no torch) and
what its cache will need (cost.py). Public: ``DecodeSession``, ``decode_all``, ``model_output``,
``DecodeSettings``, ``DecodeStep``, ``STRATEGIES``, and ``frame`` (a Run's framing with that output)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.decoding.greedy import OWN_OUTPUT_TOKENS, frame
    from attnscope.engine.decoding.records import DecodeResult, DecodeSettings, DecodeStep, STRATEGIES
    from attnscope.engine.decoding.session import DecodeSession, decode_all, model_output

_PUBLIC = {
    "OWN_OUTPUT_TOKENS": "greedy",
    "frame": "greedy",
    "DecodeResult": "records",
    "DecodeSettings": "records",
    "DecodeStep": "records",
    "STRATEGIES": "records",
    "DecodeSession": "session",
    "decode_all": "session",
    "model_output": "session",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["DecodeResult", "DecodeSession", "DecodeSettings", "DecodeStep", "OWN_OUTPUT_TOKENS",
           "STRATEGIES", "decode_all", "frame", "model_output"]
