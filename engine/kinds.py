"""The kinds of attention a transformer can have: a trace and the GUI key everything by them.

Plain names, no torch: the window imports them at start-up, long before a model (and torch)
is loaded. engine.models.outputs, where models use them, takes them from here.
"""
from __future__ import annotations

ENCODER_SELF = "encoder self"   # source x source (translator encoder, BERT)
DECODER_SELF = "decoder self"   # target x target, causal (translator decoder, GPT)
CROSS = "cross"                 # target x source (translator decoder looking at the encoder)
KINDS = (ENCODER_SELF, DECODER_SELF, CROSS)

# Which token sequence labels the query and key axes of each kind.
QUERY_SIDE = {ENCODER_SELF: "source", DECODER_SELF: "target", CROSS: "target"}
KEY_SIDE = {ENCODER_SELF: "source", DECODER_SELF: "target", CROSS: "source"}
