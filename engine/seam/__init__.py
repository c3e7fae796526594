"""The one place attention is seen and changed.

Every attention call of every model passes ``attend`` with its ``Site`` (kind, layer) and
what it computes with: queries and keys as the model uses them (after rotary, one key head
per key/value group), values, the mask and additive bias, the scale, softcap and window.
Hooks installed with ``hooks(...)`` see each call (the ``Recorder`` keeps them for traces
and the neuron view) and may replace scores, weights or a head's output (interventions).
Without an editing hook the output comes from the fused kernel, never from eager.

Our ``MultiHeadAttention`` calls ``attend`` directly; Hugging Face models reach it through
one function registered with transformers' ``AttentionInterface`` (``hf_attention``). A hybrid's
linear-attention and Mamba-2 layers reach it through the module-level function transformers mixes
their values with, wrapped where it is defined (``linear_mixing``): kept by the same Recorder, drawn
as their effective attention (kind ``effective attention``, not a softmax).
"""
from attnscope.engine.seam.attend import Recorder, SeamHook, attend, hooks, recording
from attnscope.engine.seam.call import AttentionCall, Site

__all__ = ["AttentionCall", "Recorder", "SeamHook", "Site", "attend", "hooks", "recording"]
