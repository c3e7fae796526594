"""Why does a head attend here: one attention score split into (query source x key source) terms.

A head's pre-softmax score is s = scale * q_i . k_j. With each norm's scale taken from the
run, q_i and k_j are sums of one part per source of the residual stream (the embeddings,
each earlier head's output, each MLP's output) and a constant part (engine.experiments.stream
finds the parts, for every family, in two forwards). So s is exactly the sum of the table
terms[a][b] = scale * q_i(a) . k_j(b), query-side source a with key-side source b. Rotary
positions are a rotation per position, linear too; grouped key/value heads only choose which
k. What is added to the score apart from q.k (T5's relative bias, ALiBi) is one number apart
from the table; a soft-cap (Gemma 2) comes after the score, so the split is of the score
before it, as said in the notes.

Versus another key j2 of the same row: the same table for j2 (softmax sees only
differences). Loadings: the attention-weighted mean of the table over a head's cells, which
sources drive the head on this text: every cell of a short text; on a long one the rows of a
stated sample, each over its strongest keys, with the weight those keys cover.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import torch

from attnscope.engine.decoding.greedy import request
from attnscope.engine.experiments.patching import Progress
from attnscope.engine.experiments.stream import SOURCE, TARGET, Reading, asked_call, read, replay, sides_of
from attnscope.engine.experiments.why_result import BIAS, Loadings, ScoreSplit, Versus
from attnscope.engine.inputs import InputError, check_callback
from attnscope.engine.interventions.spec import check_fits
from attnscope.engine.loading.dense import check_seam
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.runtime.free_memory import free_bytes, gib
from attnscope.engine.seam import Site
from attnscope.engine.traces.base import RunCancelled
from attnscope.engine.traces.estimate import duration

RUNNER_UP = "runner-up"      # ``versus``: the row's strongest key other than ``key``
WHY_SPLIT = "Why (the split of one attention score)"    # the tool, as a refusal names it
EXACT_CELLS = 64             # loadings are exact (every row, every key) up to this many query positions
SAMPLED_ROWS = 32            # past it: this many rows, evenly spread
KEYS_PER_ROW = 16            # each over its strongest keys
COPY_TOKENS = 4096           # copies x positions in one replay forward (memory)
REPLAY_SHARE = 0.1           # a copy's token in the replay costs about this share of a token of the first forward
#                              (no MLP, no attention but the asked one: measured 0.07 s for 1,491 copy-tokens
#                              against 0.75 s for 1,024 tokens, the 1B attention shape on a 2-core CPU)
NEEDS_MODEL = ("Why a head attends needs the model itself: a recording keeps each head's queries and keys, not the "
               "sources that wrote them. Open the model, then ask again.")


def _whole(value, what: str, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"The {what} is a whole number, not {value!r:.40}.")
    if not 0 <= int(value) < hi:
        raise InputError(f"The {what} is {int(value)}, but there are {hi} (0 to {hi - 1}).")
    return int(value)


def _row(call, head: int, query: int) -> torch.Tensor:
    """(Tk,) the row's weights, as every view draws them (softmax with the sink, masked cells 0)."""
    return call.weights(0, heads=[head], rows=slice(query, query + 1))[0, 0].float()


def _parts(x: torch.Tensor, reading: Reading, side: str) -> tuple[torch.Tensor, list[str]]:
    """Every copy's q (or k), (C, n, Dh) -> (N + 1, n, Dh) float64: each source of ``side``'s
    part (its copy minus the constants' copy) and the constants last; and the names in that
    order."""
    x = x.double()
    idx = [i + 1 for i, (_, s) in enumerate(reading.sources) if s == side]
    names = [n for n, s in reading.sources if s == side] + [BIAS]
    return torch.cat([x[idx] - x[:1], x[:1]]), names


def _split_terms(qs: torch.Tensor, ks: torch.Tensor, scale: float) -> np.ndarray:
    """(Nq, Dh) x (Nk, Dh) -> (Nq, Nk) float64 terms."""
    return (scale * (qs @ ks.T)).cpu().numpy()


def _replay_all(adapter, framed, target, reading, stop, chunk: int, head: int, kv: int):
    """The replay over the reading's positions in chunks of ``chunk`` per side: q of query head
    ``head`` and k of key head ``kv``, of every copy at every position (C, 1, n, Dh) each."""
    sides = [s for s in (SOURCE, TARGET) if s in reading.at]
    n = max(len(reading.at[s]) for s in sides)
    qs, ks = [], []
    q_side, k_side = sides_of(target.kind)
    for start in range(0, n, chunk):
        if stop is not None and stop():
            raise RunCancelled("Stopped.")
        at = {s: reading.at[s][start:start + chunk] or reading.at[s][:1] for s in sides}
        qk = replay(adapter, framed, target, reading, at)
        qs.append((at[q_side], qk.q[:, head:head + 1]))
        ks.append((at[k_side], qk.k[:, kv:kv + 1]))
    return qs, ks


def _gather(pieces, wanted: list[int]) -> torch.Tensor:
    """Chunks [(positions, (C, 1, n, Dh))] -> (C, |wanted|, Dh) at the ``wanted`` positions."""
    where = {}
    for ci, (positions, x) in enumerate(pieces):
        for i, p in enumerate(positions):
            where.setdefault(p, (ci, i))
    return torch.stack([pieces[where[p][0]][1][:, 0, where[p][1]] for p in wanted], 1)


def why_steps(loaded, text, kind: str, layer: int, head: int, query: int, key: int, versus=None,
              loadings: bool = False, pair: str | None = None, target: str | None = None, interventions=None,
              stop: Callable[[], bool] | None = None) -> Iterator[Progress]:
    """Yields Progress; returns the ScoreSplit of head ``head`` of ``kind`` layer ``layer`` at
    (query, key) on ``text`` as a Run frames it (``pair``, ``target`` as for trace_text), with
    ``interventions`` as the Run has them; ``versus``: another key, or RUNNER_UP (one forward
    more, to find it); ``loadings``: the head's loadings over the text too. Positions are the
    tokens the model reads, specials included (query side and key side of ``kind``)."""
    if not isinstance(loaded, LoadedModel):
        raise InputError(NEEDS_MODEL)
    check_seam(loaded, WHY_SPLIT)
    stop = check_callback(stop, "stop")
    if not isinstance(loadings, bool):
        raise InputError(f"loadings is True or False, not {loadings!r:.40}.")
    loaded.model.eval()
    with torch.no_grad():          # checked once, framed once under the interventions (a Prepared: as given)
        prepared = request(loaded, text, target, pair, interventions, "split",
                           fits=lambda adapter: check_fits(interventions, adapter))
    adapter, framed = prepared.adapter, prepared.framed
    heads = adapter.site_heads()
    kinds = sorted({s.kind for s in heads})
    if kind not in kinds:
        raise InputError(f"{loaded.name} has no {kind!r:.40} attention; its kinds are {', '.join(kinds)}.")
    layers = sum(1 for s in heads if s.kind == kind)
    layer = _whole(layer, f"{kind} layer", layers)
    site = Site(kind, layer)
    head = _whole(head, f"head of {kind} layer {layer}", heads[site])
    yield Progress(0, 3, "Reading the text")
    with torch.no_grad():
        q_side, k_side = sides_of(kind)
        tokens = {SOURCE: framed.source_tokens, TARGET: framed.target_tokens}
        ids = {SOURCE: framed.source_ids, TARGET: framed.target_ids}
        lengths = {s: len(ids[s]) for s in ids}
        query = _whole(query, f"query position ({q_side} side)", lengths[q_side])
        key = _whole(key, f"key position ({k_side} side)", lengths[k_side])
        if versus is not None and versus != RUNNER_UP:
            versus = _whole(versus, f"versus key position ({k_side} side)", lengths[k_side])
        row_call = None
        if versus == RUNNER_UP or (loadings and lengths[q_side] > EXACT_CELLS):
            row_call = asked_call(adapter, framed, site, interventions)
            w = _row(row_call, head, query).clone()
            if versus == RUNNER_UP:
                w[key] = -1.0
                versus = int(w.argmax()) if float(w.max()) > 0 else None
        if stop is not None and stop():
            raise RunCancelled("Stopped.")
        plan = _loading_plan(row_call, head, lengths[q_side], lengths[k_side]) if loadings else None
        at_q = {query} | (set(plan[0]) if plan else set())
        at_k = {key} | ({versus} if versus is not None else set()) | (set(plan[1]) if plan else set())
        at = {q_side: sorted(at_q)} if q_side == k_side else {q_side: sorted(at_q), k_side: sorted(at_k)}
        if q_side == k_side:
            at[q_side] = sorted(at_q | at_k)
        for side in (SOURCE, TARGET):
            if lengths[side] and side not in at:
                at[side] = [0]                  # a side the call does not read: one position, for the forward
        reading = read(adapter, framed, site, at, lengths, interventions)
        call = reading.call
        row = _row(call, head, query)
        additive = call.terms(0, [head], slice(query, query + 1))
        hidden = lambda j: additive is not None and bool(additive[0, 0, 0, j] == float("-inf"))  # noqa: E731
        if hidden(key):
            raise InputError(f"Query {query} cannot see key {key} at {kind} layer {layer} (the mask hides it), so the "
                             "head gives it no score to split.")
        if versus is not None and hidden(versus):
            raise InputError(f"Query {query} cannot see key {versus} (the mask hides it): choose a key it sees to "
                             "compare with.")
        copies = len(reading.sources) + 1
        positions = sum(len(ps) for ps in reading.at.values())
        _check_fits(adapter, copies, positions, call.q.shape[-1], loaded.name)
        seconds = REPLAY_SHARE * reading.seconds * copies * positions / max(1, lengths[q_side])
        yield Progress(1, 3, f"Splitting the score over {copies - 1} sources at {positions} positions (about "
                             f"{duration(seconds)})")
        chunk = max(1, COPY_TOKENS // copies)
        kv = call.kv_head(head)
        qs, ks = _replay_all(adapter, framed, site, reading, stop, chunk, head, kv)
        order_q = list(dict.fromkeys([query] + (sorted(plan[0]) if plan else [])))
        versus_keys = [versus] if versus is not None else []
        order_k = list(dict.fromkeys([key] + versus_keys + (sorted(plan[1]) if plan else [])))
        qparts, q_names = _parts(_gather(qs, order_q), reading, q_side)      # (Nq, nq, Dh): the asked query first
        kparts, k_names = _parts(_gather(ks, order_k), reading, k_side)      # (Nk, nk, Dh): the key, the versus key
        scale = float(call.scale)
        terms = _split_terms(qparts[:, 0], kparts[:, 0], scale)
        score = _own_score(call, head, query, key)
        notes = _notes(loaded, call, reading, terms, score)
        vs = None
        if versus is not None:
            vi = order_k.index(versus)
            vs = Versus(versus, _own_score(call, head, query, versus), float(row[versus]),
                        _split_terms(qparts[:, 0], kparts[:, vi], scale))
        ld = None
        if plan is not None:
            yield Progress(2, 3, "Averaging over the head's cells")
            ld = _loadings(plan, row_call or call, head, qparts, kparts, order_q, order_k, scale)
    bias = 0.0 if additive is None else float(additive[0, 0, 0, key])
    yield Progress(3, 3, "Done")
    return ScoreSplit(loaded.name, kind, layer, head, query, key, tuple(tokens[q_side]), tuple(tokens[k_side]),
                      tuple(int(i) for i in ids[q_side]), tuple(int(i) for i in ids[k_side]), score,
                      float(row[key]), bias, tuple(q_names), tuple(k_names), terms, vs, ld, tuple(notes),
                      call.softcap, exact_sum=float(terms.sum()))


def _own_score(call, head: int, query: int, key: int) -> float:
    """The model's own q.k * scale, as the seam computes it (float32), before any cap or bias."""
    q = call.q[0, head, query].float() * call.scale
    return float(q @ call.k[0, call.kv_head(head), key].float())


def _check_fits(adapter, copies: int, positions: int, head_dim: int, name: str) -> None:
    """Refuse, with the numbers, a replay whose one-position batch, or whose parts of q and k
    at every position asked (float64, kept for the table), do not fit."""
    width = max(adapter.recorded_sizes().width, 1)
    needed = copies * width * 4 * 16 + copies * positions * head_dim * 8 * 3   # activations, generously; the parts
    free = free_bytes(adapter.device)
    if needed > free // 2:
        raise InputError(f"Splitting a score of {name} reads {copies - 1} sources at once: about {gib(needed)} for "
                         f"one position, and {gib(free)} is free. Ask on a machine with more memory.")


def _notes(loaded, call, reading: Reading, terms: np.ndarray, score: float) -> list[str]:
    notes = []
    if call.softcap:
        notes.append(f"The score is split before the soft-cap: the weights see {call.softcap:g} * tanh(score / "
                     f"{call.softcap:g}).")
    if call.bias is not None:
        notes.append("A position bias is added to the score apart from the table (position_bias).")
    gap = abs(float(terms.sum()) - score)
    dtype = next(loaded.model.parameters()).dtype
    if dtype != torch.float32 and gap > 1e-4 * max(1.0, abs(score)):
        notes.append(f"The model computes in {str(dtype).replace('torch.', '')}: its terms sum to the score within "
                     f"{gap:.3g}, its own rounding.")
    elif gap > 1e-3 * max(1.0, float(np.abs(terms).sum())):
        raise InputError(f"{loaded.name}'s score is not the sum of its sources' terms ({float(terms.sum()):.5g} "
                         f"against {score:.5g}): something in it is not linear in its residual stream, so it "
                         "cannot be split.")
    n, (rows, cols) = len(reading.sources), terms.shape    # rows, cols: a side's sources and its constants
    notes.append(f"{n} source{'' if n == 1 else 's'} in the residual stream and a constant part: {rows} x {cols} "
                 f"terms; the first forward took {duration(reading.seconds)}.")
    return notes


def _loading_plan(row_call, head: int, n_rows: int, n_keys: int):
    """(rows, keys, keys_by_row, weights_by_row, exact): every cell of a short text; else an
    even sample of rows, each over its strongest keys."""
    if n_rows <= EXACT_CELLS:
        return list(range(n_rows)), list(range(n_keys)), None, None, True
    rows = sorted({int(round(x)) for x in np.linspace(0, n_rows - 1, SAMPLED_ROWS)})
    keys_by_row, weights_by_row = {}, {}
    for r in rows:
        w = _row(row_call, head, r)
        top = torch.topk(w, min(KEYS_PER_ROW, w.numel()))
        keep = [(int(j), float(x)) for x, j in zip(top.values, top.indices) if float(x) > 0]
        keys_by_row[r] = [j for j, _ in keep]
        weights_by_row[r] = (np.array([x for _, x in keep]), float(w.sum()))
    keys = sorted({j for js in keys_by_row.values() for j in js})
    return rows, keys, keys_by_row, weights_by_row, False


def _loadings(plan, call, head, qparts, kparts, order_q, order_k, scale) -> Loadings:
    """The attention-weighted mean of the table over the plan's cells."""
    rows, keys, keys_by_row, weights_by_row, exact = plan
    total = np.zeros((qparts.shape[0], kparts.shape[0]))
    mass, covered = 0.0, 0.0
    if exact:
        n_keys = call.k.shape[2]
        keys_all = list(range(n_keys))
        kidx = [order_k.index(j) for j in keys_all]
        weights = call.weights(0, heads=[head])[0].double()                 # (Tq, Tk)
        for r in rows:
            w = weights[r]
            kbar = torch.einsum("j,njd->nd", w, kparts[:, kidx])             # (Nk, Dh)
            total += _split_terms(qparts[:, order_q.index(r)], kbar, scale)
            mass += float(w.sum())
        covered = mass
        ld_rows, per_row = tuple(rows), None
    else:
        for r in rows:
            js = keys_by_row[r]
            w, row_sum = weights_by_row[r]
            if not js:
                continue
            kbar = torch.einsum("j,njd->nd", torch.tensor(w, dtype=torch.float64),
                                kparts[:, [order_k.index(j) for j in js]])
            total += _split_terms(qparts[:, order_q.index(r)], kbar, scale)
            covered += float(w.sum())
            mass += row_sum
        ld_rows, per_row = tuple(rows), KEYS_PER_ROW
    terms = total / covered if covered > 0 else total
    return Loadings(terms, ld_rows, per_row, covered / mass if mass > 0 else 0.0, exact)


def why(loaded, text, kind, layer, head, query, key, **options) -> ScoreSplit:
    """``why_steps`` run to the end."""
    steps = why_steps(loaded, text, kind, layer, head, query, key, **options)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value

