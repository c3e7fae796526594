"""One experiment on one pair, or on a file of pairs averaged: what the CLI and the window call.

Why normalise before averaging: pairs differ in how strongly the model tells the answers
apart (a logit difference of 8 in one, 2 in another); (patched - corrupt) / (clean - corrupt)
puts each on the same 0 (corrupted) to 1 (clean) scale, so every pair counts the same.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from attnscope.engine.experiments.pairs import FramedPair, PromptPair, frame_pair
from attnscope.engine.experiments.names import ATTRIBUTION, DLA, EXACT, METHODS
from attnscope.engine.experiments.patching import PatchResult, Progress, exact_patching
from attnscope.engine.experiments.points import BY_POSITION, HEADS, LOGIT_DIFF, METRICS
from attnscope.engine.experiments.remote_patching import remote_patching
from attnscope.engine.inputs import InputError, check_callback, check_count
from attnscope.engine.interventions import Interventions
from attnscope.engine.loading.dense import check_seam
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.traces.estimate import duration


METHOD_NAMES = {EXACT: "activation patching", ATTRIBUTION: "attribution patching",
                DLA: "direct logit attribution"}      # what a refusal calls each method


def experiment(loaded, pair, method: str = EXACT, what=(HEADS,), noising: bool = False, metric: str = LOGIT_DIFF,
               max_batch: int | None = None, stop: Callable[[], bool] | None = None,
               interventions: Interventions | None = None) -> Iterator[Progress]:
    """Yields Progress; returns the PatchResult of ``method`` on the framed ``pair``, every
    forward with ``interventions`` (heads switched off, edges knocked out) when given. Its
    arguments are checked at the door, each wrong one refused in one sentence."""
    if not isinstance(pair, FramedPair):
        raise InputError(f"The pair to patch is a FramedPair (engine.experiments.frame_pair), not {pair!r:.40}.")
    if pair.framed_for is not None and pair.framed_for is not loaded:
        raise InputError(f"This pair was framed for another model ({getattr(pair.framed_for, 'name', '?')}), whose "
                         "ids and lengths need not be this one's: frame it for this model first "
                         "(engine.experiments.frame_pair).")
    if metric not in METRICS:
        raise InputError(f"The metric is one of {', '.join(METRICS)}, not {metric!r:.40}.")
    if max_batch is not None:
        check_count(max_batch, "max_batch (the most patched copies in one forward)")
    check_callback(stop, "stop")
    if method not in METHODS:
        raise InputError(f"The method is one of {', '.join(METHODS)}, not {method!r:.40}.")
    check_seam(loaded, METHOD_NAMES[method])   # a fallback model: the one tool asked named, before any forward
    if isinstance(loaded, LoadedModel) and loaded.meta.get("ndif"):
        # served by NDIF (ndif:): every head patched there, in one job; what needs the weights here refused
        return (yield from remote_patching(loaded, pair, method, what, noising, metric, max_batch, stop,
                                           interventions))
    if method == EXACT:
        return (yield from exact_patching(loaded, pair, what, noising, metric, max_batch, stop, interventions))
    if method == ATTRIBUTION:
        from attnscope.engine.experiments.attribution import attribution_patching

        return (yield from attribution_patching(loaded, pair, what, noising, metric, stop, interventions))
    if method == DLA:
        from attnscope.engine.experiments.dla import direct_logit_attribution

        yield Progress(0, 1, "Direct logit attribution: one forward of each text")
        return direct_logit_attribution(loaded, pair, metric, interventions)
    raise AssertionError(method)                # every name of METHODS is handled above


@dataclass
class Averaged:
    results: list[PatchResult]                 # one per pair, raw
    mean: dict[str, np.ndarray]                # each point's normalised result, averaged over the pairs


MAX_PAIRS_SECONDS = 3600.0   # a file of pairs estimated longer is refused with its numbers (--max-seconds)
FRAME_AHEAD = 10_000         # up to this many pairs are all framed (and refused by line) before any is patched


def over_pairs(loaded, pairs: list[PromptPair], method: str = EXACT, what=(HEADS,), noising: bool = False,
               metric: str = LOGIT_DIFF, max_batch: int | None = None, stop: Callable[[], bool] | None = None,
               target: str | None = None, max_seconds: float = MAX_PAIRS_SECONDS) -> Iterator[Progress]:
    """Every pair patched in turn (an encoder-decoder's with the decoder prefix ``target``);
    returns Averaged. Every pair is framed first, each refused by its line (past FRAME_AHEAD
    pairs, only the first, and the rest once the estimate allows them); the first pair is
    patched and timed, and the whole file estimated from it and refused past ``max_seconds``
    with the numbers (a million lines, at 0.16 s a pair, would have run two days with nothing
    said); then the others are patched. Progress says "Pair i of N: ..." throughout, and
    "Patching N pairs: ..." once the estimate is known."""
    if not isinstance(pairs, (list, tuple)) or not pairs:
        raise InputError("There are no prompt pairs to patch: give at least one (clean, corrupt, answer, wrong).")
    odd = next((p for p in pairs if not isinstance(p, PromptPair)), None)
    if odd is not None:                           # a list of texts reached pairs[i].line as an AttributeError
        raise InputError(f"Each prompt pair is a PromptPair (engine.experiments.read_pairs), not a "
                         f"{type(odd).__name__}.")

    def framed_at(i: int):
        try:
            return frame_pair(loaded, pairs[i], target)
        except InputError as exc:
            raise InputError(f"Line {pairs[i].line}: {exc}") from None

    n = len(pairs)
    by_position = method != DLA and any(w in BY_POSITION for w in what)

    def frame(upto: int) -> None:                 # frame pairs up to ``upto``, each refused by its line
        for i in range(len(framed), upto):
            f = framed_at(i)
            if framed and by_position and f.lengths != framed[0].lengths:   # against the first pair's
                count, m = ((f.tokens, framed[0].tokens) if f.tokens != framed[0].tokens
                            else (f.lengths[0], framed[0].lengths[0]))
                raise InputError(f"Line {pairs[i].line}'s pair is {count} tokens and line {pairs[0].line}'s {m}: "
                                 "results by position average pairs of one length only (patch heads, or give "
                                 "such pairs).")
            framed.append(f)

    framed: list = []
    frame(n if n <= FRAME_AHEAD else 1)           # a file of usual size: every line checked before any work
    started = time.perf_counter()
    results = [(yield from _labelled(experiment(loaded, framed[0], method, what, noising, metric, max_batch, stop),
                                     f"Pair 1 of {n}: "))]
    if n > 1:
        each = time.perf_counter() - started
        if each * (n - 1) > max_seconds:
            raise InputError(f"{n:,} pairs at about {duration(each)} a pair (the first took that) would take about "
                             f"{duration(each * n)}, more than the {duration(max_seconds)} allowed: patch a sample of "
                             "the file, or allow more time (--max-seconds).")
        yield Progress(1, n, f"Patching {n:,} pairs: about {duration(each * n)} in all, {duration(each)} a pair")
    frame(n)
    for i in range(1, n):
        steps = experiment(loaded, framed[i], method, what, noising, metric, max_batch, stop)
        results.append((yield from _labelled(steps, f"Pair {i + 1} of {n}: ")))
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
