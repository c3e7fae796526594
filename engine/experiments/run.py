"""One experiment on one pair, or on a file of pairs averaged: what the CLI and the window call.

Why normalise before averaging: pairs differ in how strongly the model tells the answers
apart (a logit difference of 8 in one, 2 in another); (patched - corrupt) / (clean - corrupt)
puts each on the same 0 (corrupted) to 1 (clean) scale, so every pair counts the same.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from engine.experiments.pairs import PromptPair, frame_pair
from engine.experiments.names import ATTRIBUTION, DLA, EXACT, METHODS
from engine.experiments.patching import PatchResult, Progress, exact_patching
from engine.experiments.points import BY_POSITION, HEADS, LOGIT_DIFF
from engine.inputs import InputError
from engine.interventions import Interventions

def experiment(loaded, pair, method: str = EXACT, what=(HEADS,), noising: bool = False, metric: str = LOGIT_DIFF,
               max_batch: int | None = None, stop: Callable[[], bool] | None = None,
               interventions: Interventions | None = None) -> Iterator[Progress]:
    """Yields Progress; returns the PatchResult of ``method`` on the framed ``pair``, every
    forward with ``interventions`` (heads switched off, edges knocked out) when given."""
    if method == EXACT:
        return (yield from exact_patching(loaded, pair, what, noising, metric, max_batch, stop, interventions))
    if method == ATTRIBUTION:
        from engine.experiments.attribution import attribution_patching

        return (yield from attribution_patching(loaded, pair, what, noising, metric, stop, interventions))
    if method == DLA:
        from engine.experiments.dla import direct_logit_attribution

        yield Progress(0, 1, "Direct logit attribution: one forward of each text")
        return direct_logit_attribution(loaded, pair, metric, interventions)
    raise InputError(f"The method is one of {', '.join(METHODS)}, not {method!r}.")


@dataclass
class Averaged:
    results: list[PatchResult]                 # one per pair, raw
    mean: dict[str, np.ndarray]                # each point's normalised result, averaged over the pairs


def over_pairs(loaded, pairs: list[PromptPair], method: str = EXACT, what=(HEADS,), noising: bool = False,
               metric: str = LOGIT_DIFF, max_batch: int | None = None, stop: Callable[[], bool] | None = None,
               target: str | None = None) -> Iterator[Progress]:
    """Every pair framed (refused by its line; an encoder-decoder's with the decoder prefix
    ``target``), then patched in turn; returns Averaged."""
    framed = []
    for pair in pairs:
        try:
            framed.append(frame_pair(loaded, pair, target))
        except InputError as exc:
            raise InputError(f"Line {pair.line}: {exc}") from None
    by_position = method != DLA and any(w in BY_POSITION for w in what)
    first = framed[0]
    for pair, f in zip(pairs, framed):
        if by_position and f.lengths != first.lengths:
            n, m = (f.tokens, first.tokens) if f.tokens != first.tokens else (f.lengths[0], first.lengths[0])
            raise InputError(f"Line {pair.line}'s pair is {n} tokens and line {pairs[0].line}'s {m}: "
                             "results by position average pairs of one length only (patch heads, or give such pairs).")
    results = []
    for i, pair in enumerate(framed):
        steps = experiment(loaded, pair, method, what, noising, metric, max_batch, stop)
        result = yield from _labelled(steps, f"Pair {i + 1} of {len(framed)}: ")
        results.append(result)
    normalised = [r.normalised() for r in results]
    mean = {k: np.mean([n[k] for n in normalised], axis=0).astype(np.float32) for k in normalised[0]}
    return Averaged(results, mean)


def _labelled(steps: Iterator[Progress], prefix: str) -> Iterator[Progress]:
    while True:
        try:
            p = next(steps)
        except StopIteration as end:
            return end.value
        yield Progress(p.done, p.total, prefix + p.text)
