"""What a forward pass hands back: a small dataclass, like Hugging Face's ModelOutput.

Attention is *returned* on request (``need_weights=True``), never stashed on modules.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

# The kinds of attention a transformer can have. A trace and the GUI key everything by them.
ENCODER_SELF = "encoder self"   # source x source (translator encoder, BERT)
DECODER_SELF = "decoder self"   # target x target, causal (translator decoder, GPT)
CROSS = "cross"                 # target x source (translator decoder looking at the encoder)
KINDS = (ENCODER_SELF, DECODER_SELF, CROSS)

# Which token sequence labels the query and key axes of each kind.
QUERY_SIDE = {ENCODER_SELF: "source", DECODER_SELF: "target", CROSS: "target"}
KEY_SIDE = {ENCODER_SELF: "source", DECODER_SELF: "target", CROSS: "source"}


@dataclass
class ModelOutput:
    """logits: (B, T, V) or None; hidden: (B, T, D) last hidden states;
    attentions: kind -> one tensor per layer, each (B, H, T_query, T_key), only when asked;
    present: per-layer KV caches when decoding step by step (see engine.decoding)."""

    logits: torch.Tensor | None
    hidden: torch.Tensor
    attentions: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    present: list | None = None
