"""Numbers computed from a trace: attention rollout, layer aggregates, head statistics,
comparisons and mechanism scores. How they are shown (hide special tokens, threshold,
per-head scale, log colour) is gui/display.py's.

All functions take numpy arrays (L, H, Tq, Tk) and return numpy arrays, so the GUI, the
CLI and the tests share them.
"""
from __future__ import annotations

import weakref

import numpy as np

from attnscope.engine.adapters import adapter_for
from attnscope.engine.kinds import CROSS, QUERY_SIDE
from attnscope.engine.traces import base
from attnscope.engine.traces.base import TraceTooLarge, layer_started, sizes_apart
from attnscope.engine.inputs import check_kind
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


def head_statistics(weights: np.ndarray, query_tokens: list[str], key_tokens: list[str], kind: str) -> dict[str, np.ndarray]:
    """Per head (L, H) arrays of attention ``kind`` (engine.kinds):

    entropy    mean over queries of -sum_k w log w (nats; low = focused);
    distance   mean over queries of sum_k w |q - k| (positions; 0 = attends to itself);
    self       mean weight on the query's own position (self-attention only, else nan: in
               cross-attention query i and key i are tokens of two texts, even when both
               texts happen to have the same length);
    previous   mean weight on position q - 1 (queries 1..T-1; self-attention only);
    first      mean weight on the first key;
    cls / sep  mean total weight on keys that are [CLS] / [SEP] (or BOS / EOS)."""
    w = weights.astype(np.float32, copy=False)  # float32: a 6x12x512x512 trace takes ~0.1 s
    tq, tk = w.shape[-2:]
    # Entropy a layer at a time through one scratch buffer: log of the whole (L, H, Tq, Tk)
    # array at once took two fresh 75 MB temporaries at 512 tokens, and their page faults
    # made the view's time swing from 60 to 290 ms.
    entropy = np.empty(w.shape[:2], np.float32)                                # (L, H)
    scratch = np.empty(w.shape[1:], np.float32)                                # (H, Tq, Tk)
    for layer, lw in enumerate(w):
        np.log(np.maximum(lw, 1e-30, out=scratch), out=scratch)
        entropy[layer] = -np.einsum("hqk,hqk->h", lw, scratch) / tq
    offsets = np.abs(np.arange(tq)[:, None] - np.arange(tk)[None, :]).astype(np.float32)  # (Tq, Tk)
    distance = np.einsum("lhqk,qk->lh", w, offsets) / tq
    if tq == tk and kind != CROSS:
        diag = np.diagonal(w, axis1=-2, axis2=-1)
        self_w = diag.mean(-1)
        previous = np.diagonal(w, offset=-1, axis1=-2, axis2=-1).mean(-1) if tq > 1 else np.full(w.shape[:2], np.nan)
    else:
        self_w = previous = np.full(w.shape[:2], np.nan)
    first = w[..., 0].mean(-1)
    is_cls, is_sep = _marker_keys(key_tokens)
    cls = w[..., is_cls].sum(-1).mean(-1) if is_cls.any() else np.zeros(w.shape[:2])
    sep = w[..., is_sep].sum(-1).mean(-1) if is_sep.any() else np.zeros(w.shape[:2])
    return {"entropy": entropy, "distance": distance, "self": self_w, "previous": previous,
            "first": first, "cls": cls, "sep": sep}


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


def _marker_keys(key_tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(is_cls, is_sep): which keys are [CLS]-like (or BOS) and which [SEP]-like (or EOS)."""
    return (np.array([t in ("[CLS]", "[BOS]", "<s>") for t in key_tokens], dtype=bool),
            np.array([t in ("[SEP]", "[EOS]", "</s>") for t in key_tokens], dtype=bool))


def trace_head_statistics(trace, kind: str, report=None, stop=None) -> dict[str, np.ndarray]:
    """``head_statistics`` of ``trace``'s ``kind``, for a trace of any length: from its dense
    weights where every head fits at once, else summed over blocks of query rows (every head
    and key of a layer, ``trace.block``, on the trace's device, sized by engine.runtime.blocks)
    so nothing larger than a block is held: at 4k tokens of 16 layers x 20 heads the dense
    weights are 21 GB, and the view refused. ``report(("overview", layers done, layers))``
    after each layer; ``stop()`` true ends it between two layers (RunCancelled)."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")

    q_tokens, k_tokens = trace.query_tokens(kind), trace.key_tokens(kind)
    try:
        return head_statistics(reading.weights(trace, kind), q_tokens, k_tokens, kind)
    except TraceTooLarge:
        return _blocked_head_statistics(trace, kind, k_tokens, report, stop)


def _blocked_head_statistics(trace, kind: str, key_tokens: list[str], report=None, stop=None) -> dict:
    import torch

    L, H, tq, tk = trace.shape(kind)
    diagonal = tq == tk and kind != CROSS
    is_cls, is_sep = (torch.from_numpy(m).to(trace.device) for m in _marker_keys(key_tokens))
    keys = torch.arange(tk, device=trace.device, dtype=torch.float32)                     # (Tk,)
    sums = {name: np.zeros((L, H), np.float64) for name in ("entropy", "distance", "self", "previous", "first",
                                                            "cls", "sep")}
    for layer in range(L):
        layer_started(layer, L, report, stop)
        for r0, w in reading.row_blocks(trace, kind, layer):                                       # (H, r, Tk)
            r1 = r0 + w.shape[1]
            rows = torch.arange(r0, r1, device=w.device, dtype=torch.float32)            # (r,)
            add = {"entropy": -(w * torch.log(w.clamp_min(1e-30))).sum((1, 2)),
                   "distance": (w * (rows[:, None] - keys[None, :]).abs()).sum((1, 2)),
                   "first": w[:, :, 0].sum(1),
                   "cls": w[:, :, is_cls].sum((1, 2)), "sep": w[:, :, is_sep].sum((1, 2))}
            if diagonal:
                at = torch.arange(r1 - r0, device=w.device)
                add["self"] = w[:, at, at + r0].sum(1)
                before = at[r0 + at >= 1]
                add["previous"] = w[:, before, before + r0 - 1].sum(1)
            for name, value in add.items():
                sums[name][layer] += value.double().cpu().numpy()
    nan = np.full((L, H), np.nan)
    return {"entropy": (sums["entropy"] / tq).astype(np.float32), "distance": (sums["distance"] / tq).astype(np.float32),
            "self": (sums["self"] / tq).astype(np.float32) if diagonal else nan,
            "previous": (sums["previous"] / (tq - 1)).astype(np.float32) if diagonal and tq > 1 else nan,
            "first": (sums["first"] / tq).astype(np.float32), "cls": (sums["cls"] / tq).astype(np.float32),
            "sep": (sums["sep"] / tq).astype(np.float32)}


def compare_traces(a, b, kind: str) -> dict:
    """Cell-by-cell difference of one attention kind in two traces of the same text.

    Returns per_layer and per_head maximum absolute differences, the overall max, and the
    difference maps (L, H, Tq, Tk); ValueError when the traces cannot be lined up."""
    check_kind(a, AttentionTrace, "a", "an AttentionTrace (a Run's trace or a recording)")
    check_kind(b, AttentionTrace, "b", "an AttentionTrace (a Run's trace or a recording)")
    if kind not in a.kinds or kind not in b.kinds:
        raise ValueError(f"Both models need {kind!r} attention to compare it.")
    if a.query_tokens(kind) != b.query_tokens(kind) or a.key_tokens(kind) != b.key_tokens(kind):
        raise ValueError("The two models split the text into different tokens; their heads cannot be compared cell by cell.")
    wa, wb = a.weights(kind), b.weights(kind)
    if wa.shape != wb.shape:
        raise ValueError(f"The models have different numbers of layers or heads: {wa.shape[:2]} and {wb.shape[:2]}.")
    diff = np.abs(wa.astype(np.float64) - wb.astype(np.float64))  # (L, H, Tq, Tk)
    return {"tokens": a.key_tokens(kind), "per_layer": [float(d.max()) for d in diff],
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
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    model = loaded.model
    if model.training:
        return {}
    version = tuple(p._version for p in model.parameters())
    kept = _MECHANISMS.get(model)
    if kept is not None and kept[0] == version:
        return kept[1]
    scores = _mechanism_forward(loaded)["kinds"]
    _MECHANISMS[model] = (version, scores)
    return scores


_MECHANISMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # model -> (weight versions, scores)


def mechanism_report(loaded) -> dict:
    """What ``attnscope heads --json`` prints: the ids fed (specials included), where the
    repeated sequence starts and how long one copy is, and the scores per self-attention kind."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    found = _mechanism_forward(loaded)
    kinds = {k: {name: v.tolist() for name, v in s.items()} for k, s in found["kinds"].items()}
    first = next(iter(found["fed"]))
    return {"token_ids": found["fed"][first], "start": found["starts"][first], "half": found["half"], "kinds": kinds,
            "sequences": {k: {"token_ids": found["fed"][k], "start": found["starts"][k]} for k in found["kinds"]}}


def _mechanism_forward(loaded) -> dict:
    """{"kinds": kind -> scores, "fed": kind -> ids fed on that side, "starts", "half"}."""
    import torch

    from attnscope.engine.seam import recording   # torch: analysis.py imports none until a forward is asked for

    adapter = adapter_for(loaded)
    ids = repeated_random_tokens(adapter.plain_token_ids(), max(2, min(MECHANISM_HALF, (loaded.max_len - 2) // 2)))
    half = len(ids) // 2
    framed, starts = adapter.frame_ids(ids)
    with torch.no_grad(), recording() as rec:
        adapter.forward(framed)
    scores, fed = {}, {}
    for kind, start in starts.items():
        w = np.stack([c.weights(0).cpu().numpy() for c in rec.layers(kind)])   # (L, H, T, T)
        scores[kind] = {"induction": induction_scores(w, start, half),
                        "previous": previous_token_scores(w, start, 2 * half)}
        fed[kind] = framed.source_ids if QUERY_SIDE[kind] == "source" else framed.target_ids
    return {"kinds": scores, "fed": fed, "starts": starts, "half": half}
