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
    target queries, source keys): a tuple of them, or a ``range`` (``2-9`` typed: kept a range,
    so ``0-1000000000`` costs nothing until it is refused against the text's length). ``None``
    means every position (a whole row or column), ``layers=None`` every layer."""
    kind: str
    queries: tuple[int, ...] | range | None
    keys: tuple[int, ...] | range | None
    layers: tuple[int, ...] | range | None = None

    def __str__(self) -> str:
        layers = "all" if self.layers is None else shown(self.layers)
        return f"{self.kind} {shown(self.queries)}->{shown(self.keys)} @ {layers}"


def shown(xs) -> str:
    """Positions as typed: ``*`` for all, ``a-b`` for a range, else ``a,b,c``."""
    if xs is None:
        return "*"
    if isinstance(xs, range) and len(xs) > 1 and xs.step == 1:
        return f"{xs.start}-{xs.stop - 1}"
    return ",".join(map(str, xs))


def bounds(xs) -> tuple[int, int] | None:
    """(lowest, highest) of some positions without walking a range; None for none or all."""
    if xs is None or not len(xs):
        return None
    if isinstance(xs, range):
        return (xs[0], xs[-1]) if xs.step > 0 else (xs[-1], xs[0])
    return min(xs), max(xs)
