"""DenseTrace: a trace whose arrays are held in full (L, H, Tq, Tk) per kind.

What older files and training probes hold (time-lapse, ``.npz`` exports read back), and
what a small recorded trace becomes once densified. Needs no torch to be held: the window
can hold it without one (``block`` imports torch when a view first reads a block).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnscope.engine.traces.base import TraceDefaults, array_block
from attnscope.engine.traces.capabilities import FasterPaths
from attnscope.engine.traces.reading import in_order


@dataclass
class DenseTrace(TraceDefaults):
    model_name: str
    family: str
    attentions: dict[str, np.ndarray]          # kind -> (L, H, Tq, Tk)
    source_tokens: list[str] = field(default_factory=list)
    target_tokens: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "input truncated to 512 tokens"

    @property
    def kinds(self) -> list[str]:
        return in_order(self.attentions)

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        return tuple(self.attentions[kind].shape)  # type: ignore[return-value]

    def block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice):
        """(h, r, c) float32 torch tensor on the host: the arrays' own cells, copied."""
        return array_block(self.attentions[kind][layer], heads, rows, cols)

    @property
    def faster(self) -> FasterPaths:
        """Everything is held: whole kinds, layers and heads are the arrays themselves (no copy),
        and the overview pools them as held (engine.traces.pooling.pool_held)."""
        return FasterPaths(weights=self.attentions.__getitem__,
                           layer=lambda kind, layer: self.attentions[kind][layer],
                           head=lambda kind, layer, head: self.attentions[kind][layer, head],
                           thumbnails=self._thumbnails)

    def _thumbnails(self, kind: str, size: int, how: str = "max", report=None, stop=None):
        from attnscope.engine.traces.pooling import pool_held   # torch: a DenseTrace is held without it

        return pool_held(self.attentions[kind], size, how, report, stop)

    def held_bytes(self) -> int:
        """What the arrays take, in bytes."""
        return sum(a.nbytes for a in self.attentions.values())
