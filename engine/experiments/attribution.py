"""Attribution patching: every cell of exact patching estimated from one backward.

The first-order estimate of patching activation a: metric(base with a_source) - metric(base)
is about (a_source - a_base) . d metric / d a, the gradient taken on the base run (the
corrupted run when denoising). So one forward of the source text (its activations), one
forward and one backward of the base text give every head, every position and every layer
at once, for models and prompts where exact patching would take too long (Nanda, 2023;
Syed et al., 2023). The gradient at each point is read by adding a zero tensor there whose
gradient is the activation's (the forward's values are unchanged), through the same hooks
exact patching uses. The numbers are reported as exact patching's are: base + the estimate.
Interventions hold in both forwards (and so in the gradient), as in exact patching.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import torch

from attnscope.engine.experiments.pairs import FramedPair
from attnscope.engine.experiments.patching import (ATTRIBUTION, Progress, check_interventions, check_points,
                                                  pair_adapter, result_frame)
from attnscope.engine.experiments.points import (ACTIVATION, HEAD_KIND, HEADS, LOGIT_DIFF, Points, capture, edited,
                                       last_position_only, metric_of)
from attnscope.engine.interventions import Interventions, applied
from attnscope.engine.traces.base import RunCancelled
from attnscope.engine.inputs import check_kind
from attnscope.engine.experiments.patching import PatchResult


def gradients(points: Points, framed, answers, metric: str, interventions: Interventions | None = None
              ) -> tuple[float, dict, dict]:
    """(metric, activations, d metric / d activation) of one forward and backward of ``framed``
    at every (activation, layer) of ``points``, batch axis dropped, with ``interventions``."""
    values, zeros = {}, {}

    def through(key):
        def fn(x):
            values[key] = x[0].detach()
            zeros[key] = torch.zeros_like(x, requires_grad=True)
            return x + zeros[key]
        return fn

    fns = {(act, layer): through((act, layer)) for act in points.activations for layer in range(points.layers_of(act))}
    with torch.enable_grad():
        with applied(interventions), edited(points, fns), last_position_only(points.head):   # unembeds one row
            logits = points.adapter.forward(framed)                          # (1, 1, V)
        m = metric_of(logits[0, -1], answers, metric)
        keys = list(zeros)
        grads = torch.autograd.grad(m, [zeros[k] for k in keys])
    return float(m.detach()), values, {k: g[0] for k, g in zip(keys, grads)}


def attribution_patching(loaded, pair: FramedPair, what=(HEADS,), noising: bool = False, metric: str = LOGIT_DIFF,
                         stop: Callable[[], bool] | None = None, interventions: Interventions | None = None
                         ) -> Iterator[Progress]:
    """Yields Progress; returns a PatchResult (method "attribution") shaped as exact patching's."""
    what = check_points(what, loaded.role)
    check_interventions(loaded, pair, interventions)
    adapter = pair_adapter(loaded, pair)
    loaded.model.eval()
    points = Points.of(adapter, {ACTIVATION[w] for w in what})
    base_framed, source_framed = (pair.clean, pair.corrupt) if noising else (pair.corrupt, pair.clean)
    yield Progress(0, 2, "Attribution: a forward of the " + ("corrupted" if noising else "clean") + " text")
    with torch.no_grad():
        source = capture(points, source_framed, keep_blocks=False, interventions=interventions)
    if stop is not None and stop():
        raise RunCancelled("Attribution patching was stopped.")
    yield Progress(1, 2, "Attribution: a forward and a backward of the " + ("clean" if noising else "corrupted") + " text")
    base_metric, base, grads = gradients(points, base_framed, pair.answers, metric, interventions)
    source_metric = float(metric_of(source.last_logits, pair.answers, metric))
    clean, corrupt = (base_metric, source_metric) if noising else (source_metric, base_metric)
    result = result_frame(pair, metric, ATTRIBUTION, noising, clean, corrupt)
    changes = {}
    for act in {ACTIVATION[w] for w in what}:           # every layer at once: a few launches, not L
        keys = [(act, layer) for layer in range(points.layers_of(act))]
        diff = torch.stack([source.at[k] for k in keys]) - torch.stack([base[k] for k in keys])
        changes[act] = diff.float() * torch.stack([grads[k] for k in keys]).float()   # (L, H, T, Dv) or (L, T, D)
    for point in what:
        change = changes[ACTIVATION[point]]
        if point in HEAD_KIND:
            estimate = change.sum(dim=(2, 3))                                          # (L, H)
        elif ACTIVATION[point] in HEAD_KIND:
            estimate = change.sum(dim=3).transpose(1, 2)                               # (L, T, H)
        else:
            estimate = change.sum(dim=2)                                               # (L, T)
        result.results[point] = base_metric + estimate.double().cpu().numpy()
    yield Progress(2, 2, "Attribution done")
    return result


def agreement(exact, estimated) -> dict[str, float]:
    """Pearson correlation over the cells of each point both results have (nan when a side is
    constant): how far attribution patching can stand in for exact patching here."""
    check_kind(exact, PatchResult, "exact", "a PatchResult of exact patching")
    check_kind(estimated, PatchResult, "estimated", "a PatchResult of attribution patching")
    out = {}
    for point in exact.results.keys() & estimated.results.keys():
        a, b = np.ravel(exact.results[point]), np.ravel(estimated.results[point])
        out[point] = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")
    return out
