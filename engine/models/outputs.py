"""What a forward pass hands back: a small dataclass, like Hugging Face's ModelOutput.

Attention is *returned* on request (``need_weights=True``), never stashed on modules.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

# The attention kinds live in engine.kinds (no torch: the window imports them at start-up);
# the models name their outputs by them, so they are importable from here as well.
from engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF, KEY_SIDE, KINDS, QUERY_SIDE  # noqa: F401


@dataclass
class ModelOutput:
    """logits: (B, T, V) or None; hidden: (B, T, D) last hidden states;
    attentions: kind -> one tensor per layer, each (B, H, T_query, T_key), only when asked;
    present: per-layer KV caches when decoding step by step (see engine.decoding.session)."""

    logits: torch.Tensor | None
    hidden: torch.Tensor
    attentions: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    present: list | None = None
