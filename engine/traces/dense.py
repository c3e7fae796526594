"""DenseTrace: a trace whose arrays are held in full (L, H, Tq, Tk) per kind.

What older files and training probes hold (time-lapse, ``.npz`` exports read back), and
what a small recorded trace becomes once densified. Needs no torch: the window can hold
and draw it without one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnscope.engine.traces.base import AttentionTrace


@dataclass
class DenseTrace(AttentionTrace):
    model_name: str
    family: str
    attentions: dict[str, np.ndarray]          # kind -> (L, H, Tq, Tk)
    source_tokens: list[str] = field(default_factory=list)
    target_tokens: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "input truncated to 512 tokens"

    @property
    def kinds(self) -> list[str]:
        return self.in_order(self.attentions)

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        return tuple(self.attentions[kind].shape)  # type: ignore[return-value]

    def layer(self, kind: str, layer: int) -> np.ndarray:
        return self.attentions[kind][layer]

    def weights(self, kind: str) -> np.ndarray:
        return self.attentions[kind]

    def head(self, kind: str, layer: int, head: int) -> np.ndarray:
        return self.attentions[kind][layer, head]

    def held_bytes(self) -> int:
        return sum(a.nbytes for a in self.attentions.values())
