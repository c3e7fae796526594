"""An atlas read back, without the model: every head's metrics, and one head's contexts and Q/K projection.

Means are each statistic's float64 sum over rows divided by its row count; deciles are read
off the fixed-bin histogram (linear within a bin, so to 1/BINS of the statistic's range).
The projection is a joint PCA of the head's sampled queries and keys (both scaled by the
square root of the call's scale, so q.k is the score), centred together; it says what share
of the variance its two axes keep.
"""
from __future__ import annotations

import numpy as np

from attnscope.engine.atlas.similarity import seriation, similarity
from attnscope.engine.atlas.state import BINS, AtlasState
from attnscope.engine.inspection import statistics
from attnscope.engine.inputs import InputError

DECILES = np.arange(1, 10) / 10
SIMILAR = 5          # most similar heads listed per head
PER_DECILE = 3       # decile samples shown per activation decile


def means(state: AtlasState) -> dict[str, np.ndarray]:
    """Statistic name -> (L, H) mean over every row it counts (nan where no row counted); "activation" too."""
    a = state.arrays
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for s in statistics.atlas_statistics():
            out[s.name] = a[f"stat.{s.name}.sum"] / np.where(a[f"stat.{s.name}.count"] > 0, a[f"stat.{s.name}.count"], np.nan)
        out["activation"] = a["act.sum"] / np.where(a["act.count"] > 0, a["act.count"], np.nan)
    return out


def deciles(hist: np.ndarray, top: float) -> list[float]:
    """The nine deciles of a (BINS,) histogram over [0, top]."""
    total = hist.sum()
    if total <= 0:
        return [float("nan")] * 9
    cum = np.concatenate([[0.0], np.cumsum(hist)]) / total                     # (BINS + 1,)
    edges = np.linspace(0.0, top, BINS + 1)
    return [float(np.interp(q, cum, edges)) for q in DECILES]


def atlas_summary(state: AtlasState) -> dict:
    """What ``attnscope atlas A.safetensors --json`` prints: the atlas's facts and every head's metrics."""
    m, mean = state.meta, means(state)
    L, H = m["layers"], m["heads"]
    heads = []
    for layer in range(L):
        for head in range(H):
            entry = {"layer": layer, "head": head, "name": f"L{layer}.H{head}",
                     "activation": _num(mean["activation"][layer, head])}
            for s in statistics.atlas_statistics():
                hist = state.arrays[f"stat.{s.name}.hist"][layer, head]
                entry[s.name] = {"mean": _num(mean[s.name][layer, head]), "deciles": deciles(hist, s.upper(m["length"]))}
            if "retrieval.score" in state.arrays:           # retrieval probes (engine.atlas.retrieval), when run
                entry["retrieval"] = _num(state.arrays["retrieval.score"][layer, head])
            heads.append(entry)
    sim = similarity(state.arrays["sim.gram"])
    names = [h["name"] for h in heads]
    for i, entry in enumerate(heads):
        near = [j for j in np.argsort(-sim[i], kind="stable") if j != i][:SIMILAR]
        entry["similar"] = [{"head": names[j], "cosine": round(float(sim[i, j]), 5)} for j in near]
    return {"model": m["model"], "family": m["family"], "kind": m["kind"], "corpus": m["corpus"],
            "length": m["length"], "documents": state.docs_done, "tokens": int(m["tokens_done"]),
            "layers": L, "heads_per_layer": H, "memory": m.get("memory", {}), "retrieval": m.get("retrieval"),
            "skipped": m.get("skipped"),                    # a hybrid's effective-attention layers, left out
            "definitions": {s.name: {"definition": s.definition, "tip": s.tip, "source": s.source}
                            for s in statistics.atlas_statistics()},
            "similarity": {"measure": "cosine of the heads' attention rows on the same rows of every document "
                                      "(8 a document, read whole)", "order": [names[i] for i in seriation(sim)]},
            "heads": heads}


def head_detail(state: AtlasState, layer: int, head: int) -> dict:
    """One head: its metrics, its top contexts, a few samples per activation decile, and its Q/K projection."""
    m, a = state.meta, state.arrays
    if not (0 <= layer < m["layers"] and 0 <= head < m["heads"]):
        raise InputError(f"The atlas has layers 0-{m['layers'] - 1} and heads 0-{m['heads'] - 1}; "
                         f"there is no L{layer}.H{head}.")
    summary = next(h for h in atlas_summary(state)["heads"] if h["layer"] == layer and h["head"] == head)
    top = [_context(state, "top", layer, head, slot) for slot in range(a["top.value"].shape[-1])
           if a["top.doc"][layer, head, slot] >= 0]
    return {**summary, "top": top, "decile_samples": _decile_samples(state, layer, head),
            "projection": projection(state, layer, head)}


def _context(state: AtlasState, kind: str, layer: int, head: int, slot: int) -> dict:
    a = state.arrays
    row = (layer, head, slot)
    if kind == "top":
        doc, pos, value, window = a["top.doc"][row], a["top.pos"][row], a["top.value"][row], a["top.window"][row]
    else:
        doc, pos, value, window = a["sample.doc"][slot], a["sample.pos"][slot], a["sample.act"][row], a["sample.window"][slot]
    keys, weights = a[f"{kind}.keys"][row], a[f"{kind}.weights"][row]
    start = int(pos) - len(window) // 2
    return {"document": int(doc), "position": int(pos), "activation": float(value),
            "keys": [int(k) for k in keys if k >= 0], "weights": [float(w) for k, w in zip(keys, weights) if k >= 0],
            "window_start": max(0, start),
            "window": [state.tokens.get(int(t), "?") for t in window if t >= 0]}


def _decile_samples(state: AtlasState, layer: int, head: int) -> list[list[dict]]:
    """PER_DECILE samples from each activation decile of the head's sampled rows (as HeadVis stratifies)."""
    a = state.arrays
    slots = np.flatnonzero(a["sample.doc"] >= 0)
    if len(slots) == 0:
        return [[] for _ in range(10)]
    order = slots[np.argsort(a["sample.act"][layer, head, slots], kind="stable")]
    return [[_context(state, "sample", layer, head, int(s)) for s in part[:PER_DECILE]]
            for part in np.array_split(order, 10)]


def projection(state: AtlasState, layer: int, head: int) -> dict:
    """A joint 2-D PCA of the head's sampled queries and keys, and the share of variance it keeps."""
    a = state.arrays
    slots = np.flatnonzero(a["sample.doc"] >= 0)
    q, k = a["sample.q"][layer, head, slots].astype(np.float64), a["sample.k"][layer, head, slots].astype(np.float64)
    both = np.concatenate([q, k])                                              # (2n, Dh)
    if len(both) < 2:
        return {"queries": [], "keys": [], "positions": [], "tokens": [], "variance_kept": float("nan")}
    centred = both - both.mean(0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    xy = centred @ vt[:2].T                                                    # (2n, 2)
    var = sv ** 2
    n = len(slots)
    return {"queries": xy[:n].round(5).tolist(), "keys": xy[n:].round(5).tolist(),
            "positions": a["sample.pos"][slots].tolist(), "documents": a["sample.doc"][slots].tolist(),
            "tokens": [state.tokens.get(int(t), "?") for t in a["sample.token"][slots]],
            "variance_kept": float(var[:2].sum() / var.sum()) if var.sum() > 0 else float("nan")}


def _num(x) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x
