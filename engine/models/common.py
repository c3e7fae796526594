"""Pieces every model family shares."""
from __future__ import annotations

from torch import nn


def init_weights(module: nn.Module) -> None:
    """Small normal init (std 0.02) for linear and embedding weights, zero biases, as GPT-2
    and BERT do: it keeps a fresh model's attention near uniform, a useful 'before' picture."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
