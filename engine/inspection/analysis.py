"""Numbers computed from a trace: attention rollout, layer aggregates, head statistics (each
entry of the one list, engine/inspection/statistics.py, from row blocks), comparisons and
mechanism scores. How they are shown (hide special tokens, threshold,
per-head scale, log colour) is gui/display.py's.

All functions take numpy arrays (L, H, Tq, Tk) and return numpy arrays, so the GUI, the
CLI and the tests share them.
"""
from __future__ import annotations

import weakref

import numpy as np

from attnscope.engine.adapters import adapter_for
from attnscope.engine.kinds import CROSS, NOT_SOFTMAX, QUERY_SIDE
from attnscope.engine.traces import base
from attnscope.engine.traces.base import TraceTooLarge, layer_started, sizes_apart
from attnscope.engine.inputs import check_kind
from attnscope.engine.inspection import statistics
from attnscope.engine.inspection.statistics import head_means
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces import reading
from attnscope.engine.loading.loaded import LoadedModel


def layer_aggregate(weights: np.ndarray, how: str = "mean") -> np.ndarray:
    """(L, H, Tq, Tk) -> (L, Tq, Tk): the mean or the max over a layer's heads."""
    check_kind(weights, np.ndarray, "weights", "a numpy array (L, H, Tq, Tk)")
    if how == "mean":
        return weights.mean(axis=1)
    if how == "max":
        return weights.max(axis=1)
    raise ValueError(f"unknown aggregate {how!r}")


def rollout(weights: np.ndarray, residual: bool = True) -> np.ndarray:
    """Attention rollout (Abnar and Zuidema, 2020) of self-attention, (L, H, T, T) -> (L, T, T).

    Each layer's heads are averaged; with ``residual`` the identity is added for the skip
    connection and rows renormalised, A_l = (W_l + I) / 2; then R_l = A_l @ R_(l-1), so
    R_l[i, j] is how much of input token j reaches position i after layer l."""
    t = weights.shape[-1]
    if weights.shape[-2] != t:
        raise ValueError("rollout needs self-attention (square maps)")
    out, r = [], np.eye(t, dtype=np.float32)
    for layer in weights.mean(axis=1).astype(np.float32):
        a = 0.5 * layer + 0.5 * np.eye(t, dtype=np.float32) if residual else layer
        a = a / a.sum(axis=-1, keepdims=True)
        r = a @ r
        out.append(r)
    return np.stack(out)


def trace_rollout(trace, kind: str, layer: int, residual: bool = True, report=None, stop=None) -> np.ndarray:
    """(T, T) ``rollout`` of ``trace``'s ``kind`` after ``layer``, for a trace of any length: from
    its dense weights where every head fits at once; else each layer's mean over heads is summed
    over blocks of query rows (``trace.block``) into one (T, T) array and multiplied into the
    running product, on the trace's device, so three T x T arrays are the most held (at 4k
    tokens of 16 x 20 heads the dense weights are 21 GB, the three 0.2 GB); TraceTooLarge with
    the numbers past base.DENSE_VIEW_BYTES (about 6.5k tokens). ``report``/``stop`` as ``trace_head_statistics``."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")

    tq, tk = trace.shape(kind)[2:]
    if tq != tk:
        raise ValueError("rollout needs self-attention (square maps)")
    try:
        return rollout(reading.weights(trace, kind)[:layer + 1], residual)[layer]
    except TraceTooLarge:
        pass
    need = 3 * tq * tq * 4
    if need > base.DENSE_VIEW_BYTES:       # read when asked: a test lowers it
        need_s, limit_s = sizes_apart(need, base.DENSE_VIEW_BYTES)
        raise TraceTooLarge(f"Rollout of {tq:,} tokens holds three {tq:,} x {tq:,} maps = {need_s}, more than the "
                            f"{limit_s} a view may take; a layer's mean or max of heads draws it.")
    import torch

    product = None                                                             # R_(l-1), (T, T); None: the identity
    for i in range(layer + 1):
        layer_started(i, layer + 1, report, stop)
        a = torch.empty(tq, tk, device=trace.device)                           # the layer's mean of heads, A_l
        for r0, w in reading.row_blocks(trace, kind, i):                                # (H, r, Tk)
            a[r0:r0 + w.shape[1]] = w.mean(0)
        if residual:                                                           # (W_l + I) / 2, in place
            a.mul_(0.5).diagonal().add_(0.5)
        a.div_(a.sum(-1, keepdim=True))
        product = a if product is None else a @ product
    return product.cpu().numpy()


def trace_head_statistics(trace, kind: str, report=None, stop=None, step: int | None = None) -> dict[str, np.ndarray]:
    """{name: (L, H) float32}: every entry of the one list (engine.inspection.statistics) for
    ``trace``'s ``kind``, each head's mean over the query rows it counts, at any length: summed
    over exact row blocks (``reading.row_blocks``, ``step`` rows at a time, default what a block
    may hold on the trace's device), never the dense (L, H, T, T) array, so a short and a long
    trace go one path. ``report(("overview", layers done, layers))`` after each layer;
    ``stop()`` true ends it between two layers (RunCancelled)."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    stats = _every_layer_at_once(trace, kind, report, stop, step)
    if stats is None:
        stats = head_means(_layer_blocks(trace, kind, step), trace.shape(kind), kind != CROSS,
                           reading.key_tokens(trace, kind), report, stop)
    if kind in NOT_SOFTMAX:     # effective attention: no distribution, so what reads one is left out (nan, "-")
        for name in DISTRIBUTION_ONLY:
            stats[name] = np.full_like(stats[name], np.nan)
    if not _has_learned_sink(trace, kind):
        stats["learned_sink"] = np.full_like(stats["learned_sink"], np.nan)
    return stats


def _has_learned_sink(trace, kind: str) -> bool:
    """Whether ``kind``'s softmax had a term that reads no value (gpt-oss's sinks), where the trace
    can tell: a Run's recorded calls say it (``sink``; read from the calls held, nothing fetched).
    Without one, what the rows leave of 1 is rounding (~1e-7), and Head statistics showed a column
    of 0.000 for every such model: nan hides it, as a text without [CLS] hides that column. A trace
    that cannot tell (arrays held whole) keeps the measured share."""
    recording = trace.recording
    calls = [] if recording is None else [recording.held_call(kind, i) for i in range(trace.shape(kind)[0])]
    if not calls or any(call is None for call in calls):     # nothing held for a layer (a remote trace's rows)
        return True
    return any(call.sink is not None for call in calls)


def _layer_blocks(trace, kind: str, step: int | None):
    """``blocks(layer)`` for head_means: on the host, a layer that fits one block is read whole
    (``reading.layer``: the layer a Run of this size holds already, not copied again in blocks
    of rows; MiniLM at 512 tokens, 24 blocks -> 6, engine time ~60 -> ~50 ms); else exact blocks
    of rows, ``step`` at a time."""
    import torch

    from attnscope.engine.runtime.blocks import score_block_bytes   # torch: imported where it is used

    _, H, tq, tk = trace.shape(kind)
    device = torch.device(trace.device)
    if step is not None or device.type != "cpu" or H * tq * tk * 4 > score_block_bytes(device, "select"):
        return lambda i: reading.row_blocks(trace, kind, i, step)

    def whole(i: int):
        layer = _on_host(reading.layer, trace, kind, i)                          # (H, Tq, Tk)
        return [(0, layer)] if layer is not None else reading.row_blocks(trace, kind, i, step)
    return whole


def _on_host(read, *args):
    """``read(*args)`` (reading.weights or reading.layer, host arrays) as a torch tensor sharing
    its memory, or None past what a view may hold at once (TraceTooLarge: base.DENSE_VIEW_BYTES,
    LAYER_BYTES): the caller then reads exact blocks of rows, as for a long trace."""
    import torch

    try:
        held = read(*args)
    except TraceTooLarge:
        return None
    return torch.from_numpy(held if held.flags.writeable else held.copy())


def _every_layer_at_once(trace, kind: str, report, stop, step: int | None) -> dict[str, np.ndarray] | None:
    """``head_means`` of a short trace with its layers side by side as one block of L x H heads
    (the same rows, the same sums: a reducer sees each head apart), or None where every layer's
    rows together are more than one block may hold (a long trace: layer by layer, block by block).
    Why: read layer by layer, a short trace is 11 reducers x L layers of small torch calls, each
    letting go of the GIL and waiting for it again while the GUI thread applies the other views:
    Head statistics, the last view of a Run to land, was drawn 25-30 ms later (MiniLM, 128 tokens,
    trace to job done: 78-91 -> 50-70 ms in the window; tests/engine/test_head_statistics.py
    holds that both ways give the same numbers, to the bit)."""
    from attnscope.engine.runtime.blocks import rows_per_block   # torch: imported where it is used

    import torch

    L, H, tq, tk = trace.shape(kind)
    if step is not None or rows_per_block(trace.device, L * H * tk, "select") < tq:   # 32 MB on a CPU
        return None
    # On the host, the weights a Run of this size holds already (L, H, Tq, Tk); on a GPU, or past
    # what a view may hold whole, the trace's own blocks, on its device (never brought to the host).
    held = _on_host(reading.weights, trace, kind) if torch.device(trace.device).type == "cpu" else None
    layers = []
    for i in range(L):
        layer_started(i, L, report, stop)
        if held is None:
            layers.append(trace.block(kind, i, list(range(H)), slice(0, tq), slice(0, tk)))   # (H, Tq, Tk)
    heads = held.reshape(L * H, tq, tk) if held is not None else torch.cat(layers, 0)   # (L * H, Tq, Tk)
    means = head_means(lambda _: [(0, heads)], (1, L * H, tq, tk), kind != CROSS, reading.key_tokens(trace, kind))
    return {name: value.reshape(L, H) for name, value in means.items()}        # (1, L * H) -> (L, H)


# The statistics that read a row as a distribution (non-negative, summing to at most 1): left out
# for a kind that is not a softmax (engine.kinds.NOT_SOFTMAX), whose cells may be negative.
DISTRIBUTION_ONLY = ("entropy", "distance", "learned_sink")


def compare_traces(a, b, kind: str) -> dict:
    """Cell-by-cell difference of one attention kind in two traces of the same text.

    Returns per_layer and per_head maximum absolute differences, the overall max, and the
    difference maps (L, H, Tq, Tk); ValueError when the traces cannot be lined up."""
    check_kind(a, AttentionTrace, "a", "an AttentionTrace (a Run's trace or a recording)")
    check_kind(b, AttentionTrace, "b", "an AttentionTrace (a Run's trace or a recording)")
    if kind not in a.kinds or kind not in b.kinds:
        raise ValueError(f"Both models need {kind!r} attention to compare it.")
    if (reading.query_tokens(a, kind) != reading.query_tokens(b, kind)
            or reading.key_tokens(a, kind) != reading.key_tokens(b, kind)):
        raise ValueError("The two models split the text into different tokens; their heads cannot be compared cell by cell.")
    wa, wb = reading.weights(a, kind), reading.weights(b, kind)
    if wa.shape != wb.shape:
        raise ValueError(f"The models have different numbers of layers or heads: {wa.shape[:2]} and {wb.shape[:2]}.")
    diff = np.abs(wa.astype(np.float64) - wb.astype(np.float64))  # (L, H, Tq, Tk)
    return {"tokens": reading.key_tokens(a, kind), "per_layer": [float(d.max()) for d in diff],
            "per_head": diff.max(axis=(2, 3)), "max": float(diff.max()), "diff": diff}


# ---- mechanisms: induction and previous-token heads ------------------------------------
# Olsson et al. (2022), "In-context learning and induction heads": run the model on a random
# token sequence repeated twice. An induction head attends from a token in the second copy
# to the token that followed the same token in the first copy; a previous-token head attends
# from every token to the one just before it. The sequence is fixed (seeded), so the scores
# of two models, or of one model at two steps of its training, can be compared.
MECHANISM_SEED = 0
MECHANISM_HALF = 40  # random tokens in one copy (fewer when the model's context is shorter)


def induction_scores(weights: np.ndarray, start: int, half: int) -> np.ndarray:
    """(L, H, T, T) self-attention on [prefix] + A + A (A = ``half`` distinct tokens from
    position ``start``) -> (L, H): the mean weight from position start + half + j (token j of
    the second copy) to start + j + 1 (the token after its first occurrence)."""
    j = np.arange(half)
    return weights[..., start + half + j, start + j + 1].mean(-1)


def previous_token_scores(weights: np.ndarray, start: int, length: int) -> np.ndarray:
    """(L, H, T, T) -> (L, H): mean weight from each of the ``length`` tokens from ``start``
    (the first excepted) to the token just before it."""
    q = np.arange(start + 1, start + length)
    return weights[..., q, q - 1].mean(-1)


def repeated_random_tokens(candidates: list[int], half: int, seed: int = MECHANISM_SEED) -> list[int]:
    """``half`` distinct ids drawn from ``candidates`` by ``seed``, then the same ids again."""
    rng = np.random.default_rng(seed)
    first = rng.choice(np.asarray(sorted(candidates)), size=min(half, len(candidates)), replace=False).tolist()
    return first + first


def mechanism_scores(loaded) -> dict[str, dict[str, np.ndarray]]:
    """Per self-attention kind, {"induction": (L, H), "previous": (L, H)} on the fixed repeated
    random sequence, for every model an adapter drives (ours and Hugging Face's); empty for a
    model that is training (its dropout would make the numbers noise). The sequence is framed
    the way the model reads text (``Adapter.frame_ids``): GPT after [EOS] (what precedes every
    line in training), the translator's encoder with its [EOS] and its decoder after [BOS],
    BERT between [CLS] and [SEP], a Hugging Face model with its tokenizer's own specials.

    The scores depend on the weights only, not on the text shown, so they are computed once
    per model and kept until a weight changes (a training step bumps the tensors' version
    counters): Head statistics redraws on every Run, and the text does not change them."""
    kept = kept_mechanism_scores(loaded)
    if kept is not None:
        return kept
    model = loaded.model
    version = tuple(p._version for p in model.parameters())
    scores = _mechanism_forward(loaded)["kinds"]
    _MECHANISMS[model] = (version, scores)
    return scores


def kept_mechanism_scores(loaded) -> dict[str, dict[str, np.ndarray]] | None:
    """``mechanism_scores(loaded)`` where nothing needs computing (kept for these weights, or a
    model that is training: {}), else None; runs no forward. Why: a thread that only wants kept
    scores need not queue behind the model thread's work (Head statistics waited there for the
    translator's output after every Run, ~60 ms at 128 tokens)."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    model = loaded.model
    if model.training:
        return {}
    kept = _MECHANISMS.get(model)
    if kept is not None and kept[0] == tuple(p._version for p in model.parameters()):
        return kept[1]
    return None


_MECHANISMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # model -> (weight versions, scores)


def mechanism_report(loaded) -> dict:
    """What ``attnscope heads --json`` prints: the ids fed (specials included), where the
    repeated sequence starts and how long one copy is, the scores per self-attention kind, and
    every entry of the one statistics list on that sequence (``statistics``: kind -> name ->
    (L, H), with each entry's ``definitions``)."""
    import torch

    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    found = _mechanism_forward(loaded)
    kinds = {k: {name: v.tolist() for name, v in s.items()} for k, s in found["kinds"].items()}
    listed = {}
    for k, w in found["weights"].items():                                      # (L, H, T, T), a short sequence
        means = head_means(lambda i, w=w: [(0, torch.from_numpy(w[i]))], w.shape, True, found["fed"][k])
        listed[k] = {name: [[None if np.isnan(x) else float(x) for x in row] for row in v]
                     for name, v in means.items()}
    first = next(iter(found["fed"]))
    return {"token_ids": found["fed"][first], "start": found["starts"][first], "half": found["half"], "kinds": kinds,
            "sequences": {k: {"token_ids": found["fed"][k], "start": found["starts"][k]} for k in found["kinds"]},
            "statistics": listed,
            "definitions": {s.name: {"definition": s.definition, "tip": s.tip} for s in statistics.STATISTICS}}


def _mechanism_forward(loaded) -> dict:
    """{"kinds": kind -> scores, "fed": kind -> ids fed on that side, "weights": kind -> (L, H, T, T),
    "starts", "half"}."""
    import torch

    from attnscope.engine.seam import recording   # torch: analysis.py imports none until a forward is asked for

    adapter = adapter_for(loaded)
    ids = repeated_random_tokens(adapter.plain_token_ids(), max(2, min(MECHANISM_HALF, (loaded.max_len - 2) // 2)))
    half = len(ids) // 2
    framed, starts = adapter.frame_ids(ids)
    if adapter.dense:   # its own attention classes: eager's weights, as its Run reads them
        held, _ = adapter.dense_weights(framed)                                  # {kind: (L, H, T, T)}
    else:
        with torch.no_grad(), recording() as rec:
            adapter.forward(framed)
        held = {kind: np.stack([c.weights(0).cpu().numpy() for c in rec.layers(kind)]) for kind in starts}
    scores, fed, weights = {}, {}, {}
    for kind, start in starts.items():
        w = held[kind]                                                           # (L, H, T, T)
        scores[kind] = {"induction": induction_scores(w, start, half),
                        "previous": previous_token_scores(w, start, 2 * half)}
        fed[kind] = framed.source_ids if QUERY_SIDE[kind] == "source" else framed.target_ids
        weights[kind] = w
    return {"kinds": scores, "fed": fed, "weights": weights, "starts": starts, "half": half}
