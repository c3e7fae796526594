"""What a forward pass hands back: a small dataclass, like Hugging Face's ModelOutput.

Attention is never returned: the seam's recorder (engine.seam) keeps what it is computed from.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

# The attention kinds live in engine.kinds (no torch: the window imports them at start-up);
# the models name their sites by them, so they are importable from here as well.
from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF, KEY_SIDE, KINDS, QUERY_SIDE  # noqa: F401


@dataclass
class ModelOutput:
    """logits: (B, T, V) or None; hidden: (B, T, D) last hidden states;
    present: per-layer KV caches when decoding step by step (see engine.decoding)."""

    logits: torch.Tensor | None
    hidden: torch.Tensor
    present: list | None = None
