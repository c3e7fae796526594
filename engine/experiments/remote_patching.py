"""Exact activation patching of every head of an ``ndif:`` model, run where the model is served.

A model served by NDIF has no weights here, so its patched runs cannot go through the local
path's hooks (engine.experiments.patching). They go as one nnsight job instead (an nnsight
session: several forwards, one request), through the same attention op a remote Run reads
(engine.remote.jobs finds it from the model's source):

- the source run (the clean text; noising: the corrupted one) keeps every head's output at
  that op, (T, H, Dv) a layer, on the server: the seam's ``output`` of the local path, which
  transformers' attention interface hands back as (B, T, H, Dv);
- the base run (the other text) gives the unpatched metric;
- then the base text runs in batches of copies, as the local path batches them (at most
  MAX_BATCH_TOKENS tokens a batch, all copies of a batch patching one layer): row b of a batch
  has one head's output of the source run put in place at that op.

Only the metric travels back (the answers' logit difference, or the answer's log-probability,
at the last position): a float per patched run. What travels and the time are estimated before
the job is sent, and a job past NDIF's time limit is refused with the numbers. What needs the
weights here (points other than heads, attribution patching, direct logit attribution) is
refused in one sentence.

Interventions (heads switched off, links knocked out) hold in every forward, as in the local
path: each forward makes fresh seam hooks there and every attention op runs through the seam
under them (engine.remote.server.changed, as a remote Run's); a patched head replaces what they
left. A mean-ablated head takes its mean over a forward's batch, so with one the copies go one
a forward, as locally.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from attnscope.engine.experiments.names import ATTRIBUTION, DLA, EXACT
from attnscope.engine.experiments.pairs import FramedPair
from attnscope.engine.experiments.patching import (MAX_BATCH_TOKENS, Dims, PatchResult, Progress, batches, check_points,
                                         result_frame, takes_means)
from attnscope.engine.experiments.points import HEADS, LOGIT_DIFF, metric_of
from attnscope.engine.inputs import InputError
from attnscope.engine.remote.estimate import (DOWNLOAD_BYTES_PER_S, SERVER_FLOPS, Travel, check_travel, model_dims)
from attnscope.engine.remote.jobs import Session, received_bytes
from attnscope.engine.remote.run import check_remote_interventions as check_interventions
from attnscope.engine.remote.run import session_for
from attnscope.engine.remote.server import changed, layer_call
from attnscope.engine.runtime.free_memory import gib
from attnscope.engine.traces.base import RunCancelled
from attnscope.engine.traces.estimate import duration

METRIC_BYTES = 4             # one float32 a run back


def remote_patching(loaded, pair: FramedPair, method: str = EXACT, what=(HEADS,), noising: bool = False,
                    metric: str = LOGIT_DIFF, max_batch: int | None = None, stop: Callable[[], bool] | None = None,
                    interventions=None) -> Iterator[Progress]:
    """Yields Progress (the second names the estimate); returns the PatchResult of exact
    patching of every head of the ``ndif:`` model ``loaded`` on ``pair``, computed where the
    model is served in one job. Refuses in one sentence what cannot run there."""
    check_remote_patching(loaded, method, what)
    tokens = pair.tokens
    check_interventions(interventions, loaded, tokens)
    spec = interventions or None
    if takes_means(spec):                    # a head's mean is over a forward's batch: one copy a forward
        max_batch = 1
    session = session_for(loaded)
    layers, heads, _, _ = model_dims(loaded)
    dims = Dims(layers, heads, tokens)
    batch = max(1, min(MAX_BATCH_TOKENS // tokens, max_batch or 1 << 30))
    plan = batches(HEADS, dims, batch)                                   # [(layer, [(head,), ...]), ...]
    runs = layers * heads
    travel = patching_travel(loaded, tokens, runs)
    check_travel(travel, loaded.name)
    yield Progress(0, 0, f"Running the clean and the corrupted text where {loaded.name} is served")
    where = "here through nnsight (ATTNSCOPE_NDIF=local)" if session.local else "on NDIF"
    yield Progress(0, runs, f"Patching {where}: {runs:,} patched runs in {len(plan):,} batches of at most {batch} "
                            f"in one job ({runs + 2:,} forwards of {tokens:,} tokens; every head's output of the "
                            f"{'corrupted' if noising else 'clean'} run, {gib(cache_bytes(loaded, tokens))}, stays "
                            f"there); {travel.total:,} bytes will travel back (a float a run) in about "
                            f"{duration(travel.seconds)}")
    if stop is not None and stop():
        raise RunCancelled("Patching was stopped.")
    clean, corrupt = pair.clean.target_ids, pair.corrupt.target_ids
    base, source = (clean, corrupt) if noising else (corrupt, clean)
    back = patching_job(session, base, source, pair.answers, metric, plan, spec)
    source_metric, base_metric = float(back["source"]), float(back["base"])
    clean_metric, corrupt_metric = (base_metric, source_metric) if noising else (source_metric, base_metric)
    result: PatchResult = result_frame(pair, metric, EXACT, noising, clean_metric, corrupt_metric)
    out = np.zeros(dims.shape(HEADS), dtype=np.float64)                  # (L, H)
    for (layer, idx), values in zip(plan, back["patched"]):
        for (head,), v in zip(idx, values.double().numpy()):
            out[layer, head] = v
    result.results[HEADS] = out
    yield Progress(runs, runs, f"Patched {where}: {back['received']:,} bytes came back in {back['seconds']:.1f} s")
    return result


def check_remote_patching(loaded, method: str, what) -> None:
    """InputError in one sentence for what cannot run where an ``ndif:`` model is served."""
    name = loaded.name
    if method == ATTRIBUTION:
        raise InputError(f"Attribution patching runs a backward pass through {name}'s weights here, which a model "
                         "served by NDIF does not have: use the exact method, which patches every head there.")
    if method == DLA:
        raise InputError(f"Direct logit attribution reads {name}'s unembedding and output projections here, which a "
                         "model served by NDIF does not have: use the exact method, which patches every head there.")
    others = [w for w in check_points(what, loaded.role) if w != HEADS]
    if others:
        raise InputError(f"Patching {', '.join(others)} needs {name}'s weights here, which a model served by NDIF "
                         "does not have: patch heads, which run there.")


def cache_bytes(loaded, tokens: int) -> int:
    """Every head's output of the source run, kept on the server for the patched runs."""
    layers, heads, _, width = model_dims(loaded)
    first = next(iter(loaded.model.parameters()))
    return layers * tokens * heads * width * first.element_size()


def patching_travel(loaded, tokens: int, runs: int) -> Travel:
    """What the patching job brings back (a float per run, and the two unpatched runs') and its
    time: ``runs`` + 2 whole forwards of ``tokens`` tokens at engine.remote.estimate's assumed
    throughput (nothing is skipped there), plus the bytes at its assumed download rate."""
    back = (runs + 2) * METRIC_BYTES
    seconds = 2 * loaded.n_parameters * tokens * (runs + 2) / SERVER_FLOPS + back / DOWNLOAD_BYTES_PER_S
    return Travel({"metrics": back}, seconds, loaded.n_parameters)


def patching_job(session: Session, base: list[int], source: list[int], answers: tuple[int, int], metric: str,
                 plan: list[tuple[int, list[tuple]]], interventions=None) -> dict:
    """The one job: {"source", "base": the unpatched metrics (0-d), "patched": per batch of
    ``plan`` the metrics (B,), "seconds", "received"}; every forward under fresh hooks of
    ``interventions`` (not empty), as the local path's; its failures said in one sentence
    (Session.sending)."""
    import nnsight
    import torch

    model, ops = session.model, session.ops
    spec = interventions
    with session.sending((PATCHING, spec is not None)) as remote:
        with model.session(remote=remote):
            with model.trace(torch.tensor([source])):
                made = spec.hooks() if spec is not None else []
                kept = []                                                       # each (T, H, Dv)
                for layer, (path, op) in enumerate(ops):
                    kept.append(head_outputs(model, path, op, layer, made)[0].clone())
                source_metric = metric_of(model.output.logits[0, -1], answers, metric).detach().cpu()
            with model.trace(torch.tensor([base])):
                made = spec.hooks() if spec is not None else []
                for layer, (path, op) in enumerate(ops):
                    head_outputs(model, path, op, layer, made)
                base_metric = metric_of(model.output.logits[0, -1], answers, metric).detach().cpu()
            patched = []
            for at, idx in plan:
                with model.trace(torch.tensor([base] * len(idx))):
                    made = spec.hooks() if spec is not None else []
                    for layer, (path, op) in enumerate(ops):
                        if layer == at:
                            head_outputs(model, path, op, layer, made, [i[0] for i in idx], kept[layer])
                        elif made:                               # without them, the other layers run as they are
                            head_outputs(model, path, op, layer, made)
                    patched.append(metric_of(model.output.logits[:, -1], answers, metric).detach().cpu())  # (B,)
            nnsight.save(source_metric)
            nnsight.save(base_metric)
            nnsight.save(patched)
    back = {"source": source_metric, "base": base_metric, "patched": list(patched)}
    return {**back, "seconds": session.last_seconds, "received": received_bytes(back)}


def head_outputs(model, path: str, op: str, layer: int, made: list, heads: list[int] | None = None,
                 source=None):
    """Inside a trace: the attention op's output at ``layer``, every head's (B, T, H, Dv), the
    seam's ``output``; under the intervention hooks ``made`` the seam's output under them in
    the op's place (engine.remote.server.changed). With ``heads``, row b gets head heads[b] of
    ``source`` (T, H, Dv) put in, after the interventions (a patched cell replaces what they
    left, as in engine.experiments.patching)."""
    node = getattr(model.get(path).source, op)
    if made:
        args, kwargs = node.inputs
        out, _ = changed(layer_call(args, kwargs, layer), made)
    else:
        out = node.output[0]
    if heads is not None:
        for row, head in enumerate(heads):
            out[row, :, head] = source[:, head]
    if made:
        node.skip((out, None))
    return out


PATCHING = "patching"        # the kind of job (Session.sending): its code differs from a Run's
