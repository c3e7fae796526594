"""Where a gated model's heads reach its output projection: the seam's one look past ``attend``.

Qwen3.5, Qwen3.5-MoE and Qwen3-Next multiply the heads' merged output by an elementwise gate,
o_proj((p·v) ⊙ σ(g)), after the attention call returns. What each head adds to the stream is then
the projection's input, not the seam's output, so the tools that read or edit a head's share
(DLA, patching, Why, the gate search in engine.adapters.output_gates) see it there. They all
reach it through ``at_projection_input``, so attention stays seen and changed in this one package
(tests/engine/test_seam.py holds it), and a head's output is read the same way everywhere.
"""
from __future__ import annotations

from typing import Callable

import torch


def at_projection_input(module: torch.nn.Module, fn: Callable):
    """``fn(args)`` called with the positional inputs of ``module`` (the output projection) before
    it runs; what ``fn`` returns (a tuple) replaces them, None keeps them. The handle to remove."""
    return module.register_forward_pre_hook(lambda _module, args: fn(args))


def as_heads(merged: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, T, H * Dv) the projection's merged input -> (B, H, T, Dv) each head's gated output."""
    return merged.unflatten(-1, (heads, -1)).transpose(1, 2)


def merged(z: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """(B, H, T, Dv) -> the projection's merged input, shaped as ``like`` (B, T, H * Dv)."""
    return z.transpose(1, 2).reshape(like.shape)
