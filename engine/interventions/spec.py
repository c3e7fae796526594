"""The intervention record the window holds and the engine turns into seam hooks.

Why a record and not hooks: hooks keep per-run state (a mean taken from the first call, the
positions already fed), so every forward or decoding session needs fresh ones, while the
user's choice stays the same across Runs. The record is immutable; changing it means
making a new one, which is what AppState emits to its views.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

from attnscope.engine.inputs import InputError
from attnscope.engine.interventions.refs import MEAN, ZERO, Edge, HeadRef
from attnscope.engine.kinds import KEY_SIDE, KINDS, NOT_SOFTMAX, QUERY_SIDE

__all__ = ["MEAN", "ZERO", "Edge", "HeadRef", "Interventions", "applied", "check_fits", "malformed", "marked",
           "notes_of", "problem"]


@dataclass(frozen=True)
class Interventions:
    """Heads switched off (``ablated``: head -> "zero" | "mean") and edges knocked out."""
    ablated: tuple[tuple[HeadRef, str], ...] = ()
    knockout: tuple[Edge, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.ablated and not self.knockout

    def __bool__(self) -> bool:
        """False when nothing is changed: the window passes its (often empty) Interventions to
        every Run, and ``if interventions:`` must mean "something to change", as for a list."""
        return not self.empty

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
        from attnscope.engine.interventions.ablation import HeadAblation   # torch: only when a model runs
        from attnscope.engine.interventions.knockout import Knockout

        out = []
        if self.ablated:
            out.append(HeadAblation(dict(self.ablated)))
        if self.knockout:
            out.append(Knockout(self.knockout))
        return out

    def describe(self) -> list[str]:
        """One line per intervention, for the panel and notes."""
        return [f"{m} ablation: {h}" for h, m in self.ablated] + [f"knockout: {e}" for e in self.knockout]


def malformed(spec) -> str | None:
    """Why ``spec`` is not an Interventions record the engine can turn into hooks (a script
    built it by hand: a head that is not a HeadRef, a mode or kind attnscope does not know,
    positions that are not whole numbers); None when it is well formed."""

    def whole(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 0

    def positions(xs) -> bool:
        if xs is None:
            return True
        if isinstance(xs, range):
            return xs.step == 1 and len(xs) > 0 and xs.start >= 0
        return isinstance(xs, tuple) and len(xs) > 0 and all(whole(x) for x in xs)

    if not isinstance(spec, Interventions):
        return f"interventions are an engine.interventions.Interventions record, not {type(spec).__name__}"
    if not isinstance(spec.ablated, tuple) or not isinstance(spec.knockout, tuple):
        return "an Interventions record holds tuples of ablated heads and knocked-out edges"
    for item in spec.ablated:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], HeadRef)):
            return f"an ablated head is (HeadRef, mode), not {item!r:.80}"
        ref, mode = item
        if getattr(ref, "kind", None) in NOT_SOFTMAX:
            return f"ablated head {ref!r:.80}: {ref.kind} is a linear layer's mixing, not a softmax, and cannot be ablated"
        if mode not in (ZERO, MEAN) or ref.kind not in KINDS or not (whole(ref.layer) and whole(ref.head)):
            return (f"ablated head {ref!r:.80} with mode {mode!r:.20}: a kind among {', '.join(KINDS)}, a layer and a "
                    f"head from 0, mode '{ZERO}' or '{MEAN}'")
    for e in spec.knockout:
        if isinstance(e, Edge) and e.kind in NOT_SOFTMAX:
            return f"knockout {e!r:.80}: {e.kind} is a linear layer's mixing, not a softmax, and cannot be knocked out"
        if not isinstance(e, Edge) or e.kind not in KINDS:
            return f"a knocked-out edge is an Edge of a kind among {', '.join(KINDS)}, not {e!r:.80}"
        if not (positions(e.queries) and positions(e.keys) and positions(e.layers)):
            return (f"knockout {e!r:.80}: queries, keys and layers are each None (all), a tuple of whole numbers "
                    "from 0, or a range")
    return None


def problem(spec: Interventions, heads: dict, lengths: dict[str, tuple[int, int]] | None = None) -> str | None:
    """Why ``spec`` does not fit the model whose attention sites have ``heads`` (Site -> its
    query heads): a kind, layer or head it does not have; with ``lengths`` (kind -> (queries,
    keys) of the text fed), a position beyond the text. None if it fits. Ranges are compared
    by their ends: ``0-1000000000`` is refused with the text's length, never walked."""
    from attnscope.engine.interventions.refs import bounds

    layers: dict[str, int] = {}
    for s in heads:
        layers[s.kind] = max(layers.get(s.kind, 0), s.layer + 1)
    for ref, _ in spec.ablated:
        if ref.kind not in layers:
            return f"the model has no {ref.kind} attention (it has {', '.join(layers)})"
        if not 0 <= ref.layer < layers[ref.kind]:
            return f"{ref}: {ref.kind} layers are 0 to {layers[ref.kind] - 1}"
        n = next(h for s, h in heads.items() if (s.kind, s.layer) == (ref.kind, ref.layer))
        if not 0 <= ref.head < n:
            return f"{ref}: heads are 0 to {n - 1}"
    for e in spec.knockout:
        if e.kind not in layers:
            return f"the model has no {e.kind} attention (it has {', '.join(layers)})"
        span = bounds(e.layers)
        if span is not None and not (0 <= span[0] and span[1] < layers[e.kind]):
            return f"knockout {e}: {e.kind} layers are 0 to {layers[e.kind] - 1}"
        for side, pos, n in zip(("query", "key"), (e.queries, e.keys), (lengths or {}).get(e.kind, (None, None))):
            span = bounds(pos)
            if n is not None and span is not None and not (0 <= span[0] and span[1] < n):
                return f"knockout {e}: the text has {n} {side} positions here, 0 to {n - 1}"
    return None


def check_fits(spec: Interventions | None, adapter, framed=None) -> None:
    """InputError in one sentence when ``spec`` is malformed or names a kind, layer or head the
    model of ``adapter`` lacks, or (given the ``framed`` text) a position beyond the text; the
    engine's own check, so a script calling intervention_effect() or logit_lens() gets the CLI's refusals.
    The model's heads come from one tiny recorded forward, kept per model
    (engine.traces.estimate)."""

    if spec is None:
        return
    why = malformed(spec)
    if why is None and not spec.empty:
        lengths = None
        if framed is not None:
            sides = {"source": len(framed.source_ids), "target": len(framed.target_ids)}
            lengths = {kind: (sides[QUERY_SIDE[kind]], sides[KEY_SIDE[kind]]) for kind in QUERY_SIDE}
        why = problem(spec, adapter.site_heads(), lengths)
    if why is not None:
        raise InputError(f"These interventions do not fit {adapter.loaded.name}: {why}.")


def notes_of(made: list) -> list[str]:
    """What the hooks ``made`` for one forward have to tell the user (a knockout that left a
    query no key), for a trace's notes and the effect's."""
    return [n for hook in made for n in (hook.notes() if hasattr(hook, "notes") else [])]


def marked(made: list, calls: dict) -> dict:
    """Recorded calls as the hooks ``made`` changed them (a knockout's blocked cells masked)."""
    for hook in made:
        calls = hook.marked(calls) if hasattr(hook, "marked") else calls
    return calls


@contextlib.contextmanager
def applied(spec: Interventions | None):
    """``with applied(spec) as hooks: model(...)``: the forward runs with ``spec``; ``hooks``
    are the seam hooks made for it (a Knockout among them marks the recorded calls)."""
    from attnscope.engine.seam import hooks   # torch: spec.py (the record AppState holds) imports none at start-up

    why = malformed(spec) if spec is not None else None
    if why:                          # a script's slip ("0.0" for an Interventions): one sentence, not its AttributeError
        raise InputError(f"The {why}.")
    made = spec.hooks() if spec is not None else []
    if not made:
        yield []
        return
    with hooks(*made):
        yield made
