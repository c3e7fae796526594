"""The intervention record the window holds and the engine turns into seam hooks.

Why a record and not hooks: hooks keep per-run state (a mean taken from the first call, the
positions already fed), so every forward or decoding session needs fresh ones, while the
user's choice stays the same across Runs. The record is immutable; changing it means
making a new one, which is what AppState emits to its views.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

from engine.interventions.refs import MEAN, ZERO, Edge, HeadRef

__all__ = ["MEAN", "ZERO", "Edge", "HeadRef", "Interventions", "applied", "marked", "problem"]


@dataclass(frozen=True)
class Interventions:
    """Heads switched off (``ablated``: head -> "zero" | "mean") and edges knocked out."""
    ablated: tuple[tuple[HeadRef, str], ...] = ()
    knockout: tuple[Edge, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.ablated and not self.knockout

    def mode(self, head: HeadRef) -> str | None:
        return dict(self.ablated).get(head)

    def ablate(self, heads, mode: str = ZERO) -> "Interventions":
        """These heads ablated with ``mode`` (replacing an earlier mode for the same head)."""
        if mode not in (ZERO, MEAN):
            raise ValueError(f"ablation is 'zero' or 'mean', not {mode!r}")
        kept = dict(self.ablated)
        kept.update({h: mode for h in heads})
        return replace(self, ablated=tuple(sorted(kept.items())))

    def restore(self, heads) -> "Interventions":
        gone = set(heads)
        return replace(self, ablated=tuple((h, m) for h, m in self.ablated if h not in gone))

    def toggle(self, head: HeadRef, mode: str = ZERO) -> "Interventions":
        return self.restore([head]) if self.mode(head) else self.ablate([head], mode)

    def block(self, edge: Edge) -> "Interventions":
        return self if edge in self.knockout else replace(self, knockout=self.knockout + (edge,))

    def hooks(self) -> list:
        """Fresh seam hooks for one forward or one decoding session (none when empty)."""
        from engine.interventions.ablation import HeadAblation   # torch: only when a model runs
        from engine.interventions.knockout import Knockout

        out = []
        if self.ablated:
            out.append(HeadAblation(dict(self.ablated)))
        if self.knockout:
            out.append(Knockout(self.knockout))
        return out

    def describe(self) -> list[str]:
        """One line per intervention, for the panel and notes."""
        return [f"{m} ablation: {h}" for h, m in self.ablated] + [f"knockout: {e}" for e in self.knockout]


def problem(spec: Interventions, calls: dict) -> str | None:
    """Why ``spec`` does not fit the model whose recorded ``calls`` (Site -> AttentionCall of one
    forward) are given: a kind, layer, head or position it does not have; None if it fits."""
    layers: dict[str, int] = {}
    for s in calls:
        layers[s.kind] = max(layers.get(s.kind, 0), s.layer + 1)
    for ref, _ in spec.ablated:
        if ref.kind not in layers:
            return f"the model has no {ref.kind} attention (it has {', '.join(layers)})"
        if not 0 <= ref.layer < layers[ref.kind]:
            return f"{ref}: {ref.kind} layers are 0 to {layers[ref.kind] - 1}"
        heads = next(c for s, c in calls.items() if (s.kind, s.layer) == (ref.kind, ref.layer)).q.shape[1]
        if not 0 <= ref.head < heads:
            return f"{ref}: heads are 0 to {heads - 1}"
    for e in spec.knockout:
        if e.kind not in layers:
            return f"the model has no {e.kind} attention (it has {', '.join(layers)})"
        if e.layers is not None and not all(0 <= x < layers[e.kind] for x in e.layers):
            return f"knockout {e}: {e.kind} layers are 0 to {layers[e.kind] - 1}"
        call = next(c for s, c in calls.items() if s.kind == e.kind)
        for side, pos, n in (("query", e.queries, call.q.shape[2]), ("key", e.keys, call.k.shape[2])):
            if pos is not None and not all(0 <= p < n for p in pos):
                return f"knockout {e}: {side} positions are 0 to {n - 1}"
    return None


def marked(made: list, calls: dict) -> dict:
    """Recorded calls as the hooks ``made`` changed them (a knockout's blocked cells masked)."""
    for hook in made:
        calls = hook.marked(calls) if hasattr(hook, "marked") else calls
    return calls


@contextlib.contextmanager
def applied(spec: Interventions | None):
    """``with applied(spec) as hooks: model(...)``: the forward runs with ``spec``; ``hooks``
    are the seam hooks made for it (a Knockout among them marks the recorded calls)."""
    from engine.seam import hooks

    made = spec.hooks() if spec is not None else []
    if not made:
        yield []
        return
    with hooks(*made):
        yield made
