"""Activation patching: how much of the clean behaviour one activation brings back.

Denoising (the default): the corrupted text runs, and one activation of the clean run is put
in its place; noising: the clean text runs with one corrupted activation. Each cell of a
result (a head, a head at a position, a layer at a position) is one patched run, measured
by the metric at the last position; ``clean`` and ``corrupt`` are the unpatched runs'.

Why it is quick enough for every head of a 1B model: the patched runs go in batches of
copies of the same text (one patched cell each, a hook per batch editing each row), all the
copies of a batch patch one layer, and the blocks before it hand back the unpatched run's
cached outputs instead of recomputing them (points.skipping); only the last position is
unembedded. The work is estimated (forwards, seconds, bytes a batch) before it starts, the
batch sized to the memory free, and the generator yields progress between batches and ends
when ``stop()`` says so (RunCancelled), as a Run does.

Interventions (heads switched off, edges knocked out: engine.interventions) hold in every
forward of an experiment, through fresh seam hooks each time, so its numbers are those of
the model as the window runs it. A mean-ablated head takes its mean over one forward's
batch and positions, so with one the patched copies run one at a time: a copy's mean is then
its own, as in a Run of that copy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import torch

from attnscope.engine.adapters import adapter_for
from attnscope.engine.experiments.names import ATTRIBUTION, DLA, EXACT  # noqa: F401 - the methods' names, used from here
from attnscope.engine.experiments.pairs import FramedPair
from attnscope.engine.experiments.points import (ACTIVATION, HEAD_KIND, HEADS, LOGIT_DIFF, POINTS,
                                       SEQ2SEQ_POINTS, Activations, Points, capture, edited, last_position_only,
                                       metric_of, skipped, skipping)
from attnscope.engine.inputs import InputError
from attnscope.engine.interventions import Interventions, applied
from attnscope.engine.interventions.refs import MEAN
from attnscope.engine.interventions.spec import check_fits
from attnscope.engine.runtime.free_memory import MEMORY_SHARE, free_bytes, gib
from attnscope.engine.runtime.steps import drive as run_to_end  # noqa: F401 - drives a patching generator headless
from attnscope.engine.traces.base import RunCancelled
from attnscope.engine.traces.estimate import estimate_run
MAX_BATCH_TOKENS = 8192      # tokens in one batch of patched copies: plenty for a CPU's cache, and a GPU's launches


@dataclass
class Progress:
    done: int             # patched runs finished
    total: int
    text: str


@dataclass
class PatchEstimate:
    runs: int             # patched runs
    forwards: float       # their cost in whole forwards (skipped blocks cost nothing)
    batch: int            # copies per batch
    seconds: float        # forwards x one forward's time (batching makes it less)
    batch_bytes: int      # working memory of one batch
    free: int

    def describe(self) -> str:
        return (f"{self.runs:,} patched runs in batches of {self.batch} (about {self.forwards:,.1f} forwards, "
                f"at most {self.seconds:,.1f} s; {gib(self.batch_bytes)} a batch, {gib(self.free)} free)")


@dataclass
class PatchResult:
    """Raw metrics of the patched runs per point, beside the unpatched runs' metrics."""
    token_ids: dict[str, list[int]]            # "clean", "corrupt" -> ids fed
    tokens: dict[str, list[str]]
    answers: tuple[int, int]
    metric: str
    clean: float
    corrupt: float
    method: str
    noising: bool = False
    results: dict[str, np.ndarray] = field(default_factory=dict)
    # heads (L, H); heads-by-pos (L, T, H); resid-pre, attn-out, mlp-out (L, T); dla also mlp (L,), embed and bias ()

    def normalised(self) -> dict[str, np.ndarray]:
        """(patched - corrupt) / (clean - corrupt): 1 is the clean behaviour, 0 the corrupted."""
        span = self.clean - self.corrupt
        if self.method == DLA:      # shares of the clean logit difference: divided by it
            span, base = self.clean, 0.0
        else:
            base = self.corrupt
        if span == 0:
            return {k: np.zeros_like(v) for k, v in self.results.items()}
        return {k: ((v - base) / span).astype(np.float32) for k, v in self.results.items()}

    def as_json(self) -> dict:
        return {"token_ids": self.token_ids, "answers": list(self.answers), "metric": self.metric,
                "clean": self.clean, "corrupt": self.corrupt, "method": self.method, "noising": self.noising,
                "results": {k.replace("-", "_"): np.asarray(v).tolist() for k, v in self.results.items()}}


def result_frame(pair: FramedPair, metric: str, method: str, noising: bool, clean: float, corrupt: float) -> PatchResult:
    """The result's frame: the ids fed (an encoder-decoder's sources, and the decoder's ids,
    the same for both texts, as "target"), the answers and the unpatched metrics."""
    side = "source" if pair.clean.source_ids else "target"
    ids = {k: list(getattr(f, f"{side}_ids")) for k, f in (("clean", pair.clean), ("corrupt", pair.corrupt))}
    tokens = {k: list(getattr(f, f"{side}_tokens")) for k, f in (("clean", pair.clean), ("corrupt", pair.corrupt))}
    if side == "source":
        ids["target"], tokens["target"] = list(pair.clean.target_ids), list(pair.clean.target_tokens)
    return PatchResult(ids, tokens, pair.answers, metric, clean, corrupt, method, noising)


def check_points(what, role: str = "decoder") -> tuple[str, ...]:
    what = tuple(dict.fromkeys(what or (HEADS,)))
    allowed = SEQ2SEQ_POINTS if role == "encoder-decoder" else POINTS
    bad = [w for w in what if w not in allowed]
    if bad:
        raise InputError(f"Nothing called {', '.join(bad)} can be patched in {'an' if role[0] == 'e' else 'a'} {role}: "
                         f"choose from {', '.join(allowed)}.")
    return what


@dataclass(frozen=True)
class Dims:
    """How many patched runs a point has: layers x heads (a head at every position), layers x
    positions x heads, or layers x positions (a layer's point)."""
    layers: int
    heads: int            # 0 for a layer's point
    tokens: int           # the positions of its queries (a head) or of the stream (a layer's point)

    @classmethod
    def of(cls, points: Points, acts: Activations, point: str) -> "Dims":
        act = ACTIVATION[point]
        x = acts.at[(act, 0)]                          # heads (H, T, Dv); a layer's point (T, D)
        return cls(points.layers_of(act), *(x.shape[:2] if act in HEAD_KIND else (0, x.shape[0])))

    def shape(self, point: str) -> tuple[int, ...]:
        if point in HEAD_KIND:
            return (self.layers, self.heads)
        return (self.layers, self.tokens, self.heads) if ACTIVATION[point] in HEAD_KIND else (self.layers, self.tokens)


def cells(point: str, dims: Dims) -> list[tuple[int, tuple]]:
    """(layer, index into the layer's results) of every patched run of ``point``, by layer."""
    layers, heads, tokens = dims.layers, dims.heads, dims.tokens
    if point in HEAD_KIND:
        return [(lay, (h,)) for lay in range(layers) for h in range(heads)]
    if ACTIVATION[point] in HEAD_KIND:
        return [(lay, (p, h)) for lay in range(layers) for p in range(tokens) for h in range(heads)]
    return [(lay, (p,)) for lay in range(layers) for p in range(tokens)]


def batches(point: str, dims: Dims, batch: int) -> list[tuple[int, list[tuple]]]:
    """The runs of ``point`` cut into batches of at most ``batch`` copies, each within one layer."""
    by_layer: dict[int, list[tuple]] = {}
    for lay, idx in cells(point, dims):
        by_layer.setdefault(lay, []).append(idx)
    return [(lay, idx[i:i + batch]) for lay, idx in by_layer.items() for i in range(0, len(idx), batch)]


def cost(points: Points, act: str, layer: int) -> float:
    """The share of a whole forward that a run patching ``act`` at ``layer`` computes: the blocks
    it does not skip (points.skipped), out of every block."""
    every = len(points.blocks) + len(points.encoder_blocks)
    return (every - len(skipped(points, act, layer)[0])) / every


def estimate_patching(points: Points, framed, dims: dict[str, Dims], forward_seconds: float,
                      max_batch: int | None = None) -> PatchEstimate:
    """What exact patching of the points in ``dims`` will take, before it runs: the runs, their
    cost in whole forwards (a run patching layer l computes layers l .. L-1 only), the batch
    the memory allows."""

    tokens = max(len(framed.target_ids), len(framed.source_ids))
    per_copy = estimate_run(points.adapter, framed).working          # a forward's peak working memory
    free = free_bytes(points.adapter.device)
    fits = int(MEMORY_SHARE * free // max(per_copy, 1))
    if fits < 1:
        raise InputError(f"One patched run of {tokens:,} tokens needs about {gib(per_copy)} and {gib(free)} is free: "
                         "shorten the texts.")
    batch = max(1, min(fits, MAX_BATCH_TOKENS // tokens, max_batch or 1 << 30))
    runs, forwards = 0, 0.0
    for point, d in dims.items():
        for lay, idx in batches(point, d, batch):
            runs += len(idx)
            forwards += len(idx) * cost(points, ACTIVATION[point], lay)
    return PatchEstimate(runs, forwards, batch, forwards * forward_seconds, per_copy * batch, free)


def _patcher(point: str, idx: list[tuple], source: torch.Tensor) -> Callable:
    """The function that puts ``source``'s cells into each row of a batch (row b gets idx[b])."""
    rows = torch.arange(len(idx), device=source.device)
    if point in HEAD_KIND:                                         # x (B, H, T, Dv), source (H, T, Dv)
        h = torch.tensor([i[0] for i in idx], device=source.device)
        def put(x):
            x = x.clone()
            x[rows, h] = source[h].to(x.dtype)
            return x
    elif ACTIVATION[point] in HEAD_KIND:
        p = torch.tensor([i[0] for i in idx], device=source.device)
        h = torch.tensor([i[1] for i in idx], device=source.device)
        def put(x):
            x = x.clone()
            x[rows, h, p] = source[h, p].to(x.dtype)
            return x
    else:                                                          # x (B, T, D), source (T, D)
        p = torch.tensor([i[0] for i in idx], device=source.device)
        def put(x):
            x = x.clone()
            x[rows, p] = source[p].to(x.dtype)
            return x
    return put


def patched_metrics(points: Points, framed, base: Activations, source: Activations, point: str, layer: int,
                    idx: list[tuple], answers, metric: str, interventions: Interventions | None = None) -> np.ndarray:
    """One batch: ``len(idx)`` copies of ``framed``, row b with cell idx[b] of ``source`` at
    ``point`` of ``layer``; the metric of each row (float64). ``interventions`` edit before the
    patch does (their hooks are installed first), so a patched cell replaces what they left."""
    act = ACTIVATION[point]
    fn = _patcher(point, idx, source.at[(act, layer)])
    with skipping(*skipped(points, act, layer, base), len(idx)), last_position_only(points.head), \
            applied(interventions), edited(points, {(act, layer): fn}):
        logits = points.adapter.forward_copies(framed, len(idx))             # (B, 1, V)
    return metric_of(logits[:, -1], answers, metric).double().cpu().numpy()


def prepared(loaded, pair: FramedPair, what, noising: bool, interventions: Interventions | None = None):
    """(adapter's points, clean activations, corrupt activations), from one forward each."""
    adapter = pair_adapter(loaded, pair)
    loaded.model.eval()
    points = Points.of(adapter, {ACTIVATION[w] for w in what})
    with torch.no_grad():
        clean, corrupt = (capture(points, framed, interventions=interventions) for framed in (pair.clean, pair.corrupt))
    return points, clean, corrupt


def check_interventions(loaded, pair: FramedPair, interventions: Interventions | None) -> None:
    """InputError in one sentence when ``interventions`` do not fit the model or the pair's texts
    (a head it lacks, a knocked-out position past the text): before any forward."""

    adapter = pair_adapter(loaded, pair)
    check_fits(interventions, adapter)
    check_fits(interventions, adapter, pair.clean)


def pair_adapter(loaded, pair: FramedPair):
    """The adapter that framed ``pair`` (engine.experiments.pairs.frame_pair: the pair's door,
    passed once), else ``loaded``'s."""
    return pair.adapter if pair.adapter is not None else adapter_for(loaded)


def takes_means(interventions: Interventions | None) -> bool:
    """Some head is mean-ablated: its mean is over a forward's whole batch (see the module)."""
    return interventions is not None and any(mode == MEAN for _, mode in interventions.ablated)


def exact_patching(loaded, pair: FramedPair, what=(HEADS,), noising: bool = False, metric: str = LOGIT_DIFF,
                   max_batch: int | None = None, stop: Callable[[], bool] | None = None,
                   interventions: Interventions | None = None) -> Iterator[Progress]:
    """Yields Progress (the first names the estimate); returns the PatchResult. Every forward
    runs with ``interventions`` (engine.interventions), the patched ones too."""
    what = check_points(what, loaded.role)
    check_interventions(loaded, pair, interventions)
    if takes_means(interventions):
        max_batch = 1
    yield Progress(0, 0, "Running the clean and the corrupted text")
    points, clean, corrupt = prepared(loaded, pair, what, noising, interventions)
    base, source = (clean, corrupt) if noising else (corrupt, clean)
    base_framed = pair.clean if noising else pair.corrupt
    dims = {point: Dims.of(points, clean, point) for point in what}
    est = estimate_patching(points, base_framed, dims, max(clean.seconds, corrupt.seconds), max_batch)
    result = result_frame(pair, metric, EXACT, noising, float(metric_of(clean.last_logits, pair.answers, metric)),
                          float(metric_of(corrupt.last_logits, pair.answers, metric)))
    yield Progress(0, est.runs, f"Patching: {est.describe()}")
    done = 0
    for point, d in dims.items():
        out = np.zeros(d.shape(point), dtype=np.float64)
        for layer, idx in batches(point, d, est.batch):
            if stop is not None and stop():
                raise RunCancelled("Patching was stopped.")
            with torch.no_grad():
                values = patched_metrics(points, base_framed, base, source, point, layer, idx, pair.answers, metric,
                                         interventions)
            for i, v in zip(idx, values):
                out[(layer, *i)] = v
            done += len(idx)
            yield Progress(done, est.runs, f"Patching {point}: layer {layer + 1} of {d.layers}")
        result.results[point] = out
    return result
