"""A trace to files other programs read: NumPy ``.npz`` (arrays and token lists) and CSV.

npz layout: one array per attention kind under ``attn_<kind with _ for spaces>``, each
(L, H, Tq, Tk) float32, plus ``source_tokens``, ``target_tokens``, ``notes`` (string
arrays) and ``model_name``, ``family``. ``load_npz`` reads it back into a DenseTrace.
CSV: one row per weight (kind, layer, head, query index and token, key index and token,
weight), the long format that pandas, R and spreadsheets take directly.
Both are written through engine.runtime.files.atomic_path: a temporary beside the target, renamed
when complete, so a kill half-way never leaves a broken file or destroys the one there.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from engine.runtime.files import atomic_path
from engine.traces.base import AttentionTrace
from engine.traces.dense import DenseTrace


def _key(kind: str) -> str:
    return "attn_" + kind.replace(" ", "_")


def save_npz(trace: AttentionTrace, path: str | Path) -> Path:
    """``path`` (``.npz`` appended when it lacks it, as NumPy does) holding the trace."""
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    arrays = {_key(kind): trace.weights(kind) for kind in trace.kinds}
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, **arrays, kinds=np.array(trace.kinds),
                            source_tokens=np.array(trace.source_tokens, dtype=str),
                            target_tokens=np.array(trace.target_tokens, dtype=str), notes=np.array(trace.notes, dtype=str),
                            model_name=np.array(trace.model_name), family=np.array(trace.family))
    return path


def load_npz(path: str | Path) -> DenseTrace:
    """A trace written by ``save_npz``; ValueError with a message for any other or broken file."""
    from engine.training.timelapse import open_npz

    with open_npz(path, "trace export") as f:
        kinds = [str(k) for k in f["kinds"]]
        return DenseTrace(str(f["model_name"]), str(f["family"]), {k: _attention(f[_key(k)]) for k in kinds},
                              [str(t) for t in f["source_tokens"]], [str(t) for t in f["target_tokens"]],
                              [str(n) for n in f["notes"]])


def _attention(a: np.ndarray) -> np.ndarray:
    if a.ndim != 4 or a.dtype.kind != "f":
        raise ValueError(f"an attention array has shape {a.shape} and type {a.dtype}; expected (L, H, Tq, Tk) floats")
    return a


def save_csv(trace: AttentionTrace, path: str | Path) -> Path:
    path = Path(path)
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["kind", "layer", "head", "query_index", "query_token", "key_index", "key_token", "weight"])
        for kind in trace.kinds:
            w = trace.weights(kind)  # (L, H, Tq, Tk)
            q_tokens, k_tokens = trace.query_tokens(kind), trace.key_tokens(kind)
            for (l, h, q, k), value in np.ndenumerate(w):
                out.writerow([kind, l, h, q, q_tokens[q], k, k_tokens[k], f"{value:.6g}"])
    return path
