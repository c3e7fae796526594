"""What an intervention names: a head, an attention edge. Plain records, no torch: the
window's state holds them from start-up, long before a model is loaded."""
from __future__ import annotations

from dataclasses import dataclass

ZERO, MEAN = "zero", "mean"


@dataclass(frozen=True, order=True)
class HeadRef:
    """One query head: the attention kind (engine.kinds), the layer within it, the head."""
    kind: str
    layer: int
    head: int

    def __str__(self) -> str:
        return f"{self.kind} {self.layer}.{self.head}"


@dataclass(frozen=True)
class Edge:
    """Query position(s) -> key position(s) blocked in some layers of one kind.

    Positions are 0-based over the ids fed on each side (a translator's cross-attention:
    target queries, source keys). ``None`` means every position (a whole row or column),
    ``layers=None`` every layer."""
    kind: str
    queries: tuple[int, ...] | None
    keys: tuple[int, ...] | None
    layers: tuple[int, ...] | None = None

    def __str__(self) -> str:
        show = lambda xs: "*" if xs is None else ",".join(map(str, xs))  # noqa: E731
        layers = "all" if self.layers is None else show(self.layers)
        return f"{self.kind} {show(self.queries)}->{show(self.keys)} @ {layers}"
