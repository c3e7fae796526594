"""The kinds of attention a transformer can have: a trace and the GUI key everything by them.

Plain names, no torch: the window imports them at start-up, long before a model (and torch)
is loaded. engine.models.outputs, where models use them, takes them from here.
"""
from __future__ import annotations

ENCODER_SELF = "encoder self"   # source x source (translator encoder, BERT)
DECODER_SELF = "decoder self"   # target x target, causal (translator decoder, GPT)
CROSS = "cross"                 # target x source (translator decoder looking at the encoder)
EFFECTIVE = "effective attention"   # target x target, causal: a linear-attention layer's mixing of its values
                                    # (engine.seam.linear_mixing), not a softmax: cells may be negative
KINDS = (ENCODER_SELF, DECODER_SELF, CROSS, EFFECTIVE)

# Which token sequence labels the query and key axes of each kind.
QUERY_SIDE = {ENCODER_SELF: "source", DECODER_SELF: "target", CROSS: "target", EFFECTIVE: "target"}
KEY_SIDE = {ENCODER_SELF: "source", DECODER_SELF: "target", CROSS: "source", EFFECTIVE: "target"}
# Kinds whose cells are not softmax weights (negative cells, rows not summing to 1): what a view says of them.
NOT_SOFTMAX = {EFFECTIVE: "Effective attention of a linear-attention layer: the matrix it mixes its values with "
                          "(o[t] = sum over s of M[t, s] v[s]), not a softmax: cells can be negative or past 1 "
                          "(drawn on a diverging scale symmetric about 0; the readout calls a cell mixing) and rows "
                          "need not sum to 1, so entropy, distance and learned sink are left out of its statistics."}
