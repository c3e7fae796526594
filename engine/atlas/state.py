"""What an atlas keeps, and its one file.

Everything is bounded whatever the corpus's length: per head of every layer, each statistic's
running sum, row count and fixed-bin histogram (``BINS``); the activation's sum and count;
the top ``top`` contexts by activation (a bounded heap kept as a sorted array); and one shared
sample of ``samples`` query rows (bottom-k by a priority drawn per document from a fixed
seed: a uniform sample, the same whether the pass ran in one go or was resumed) with each
head's query and key as used in its dot product, its activation and strongest keys.

One file: a ``.safetensors`` whose metadata ``atlas`` is JSON (model, corpus, lengths,
definitions, version, documents done). Written to a temporary name and renamed; it opens
without the model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attnscope.engine.inspection import statistics
from attnscope.engine.inputs import InputError
from attnscope.engine.runtime.files import atomic_path

VERSION = 1
BINS = 64            # each statistic's histogram: BINS equal bins from 0 to its top
STRONGEST = 8        # strongest keys kept per context
WINDOW = 32          # tokens of a context's window (half before the query, half after)
SAMPLE_SEED = 20260511


@dataclass
class AtlasState:
    meta: dict                                   # model, family, kind, layers, heads, corpus, length, ...
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    tokens: dict[int, str] = field(default_factory=dict)      # id -> text of every id a kept window holds

    @classmethod
    def empty(cls, meta: dict) -> "AtlasState":
        L, H, K, M = meta["layers"], meta["heads"], meta["top"], meta["samples"]
        a = {}
        for s in statistics.atlas_statistics():
            a[f"stat.{s.name}.sum"] = np.zeros((L, H))
            a[f"stat.{s.name}.count"] = np.zeros((L, H))
            a[f"stat.{s.name}.hist"] = np.zeros((L, H, BINS))
        a["act.sum"], a["act.count"] = np.zeros((L, H)), np.zeros((L, H))
        a["top.value"] = np.full((L, H, K), -np.inf, np.float32)
        a["top.doc"], a["top.pos"] = np.full((L, H, K), -1, np.int64), np.full((L, H, K), -1, np.int64)
        a["top.keys"], a["top.weights"] = np.full((L, H, K, STRONGEST), -1, np.int64), np.zeros((L, H, K, STRONGEST), np.float32)
        a["top.window"] = np.full((L, H, K, WINDOW), -1, np.int64)
        a["sample.priority"] = np.full(M, np.inf)
        for name in ("doc", "pos", "token"):
            a[f"sample.{name}"] = np.full(M, -1, np.int64)
        a["sample.window"] = np.full((M, WINDOW), -1, np.int64)
        a["sample.act"] = np.zeros((L, H, M), np.float32)
        a["sample.keys"], a["sample.weights"] = np.full((L, H, M, STRONGEST), -1, np.int64), np.zeros((L, H, M, STRONGEST), np.float32)
        a["sample.q"] = np.zeros((L, H, M, meta["head_dim"]), np.float32)
        a["sample.k"] = np.zeros((L, H, M, meta["head_dim"]), np.float32)
        a["sim.gram"] = np.zeros((L * H, L * H))
        meta.setdefault("docs_done", 0)
        meta.setdefault("tokens_done", 0)
        return cls(meta, a)

    @property
    def docs_done(self) -> int:
        return int(self.meta["docs_done"])

    def save(self, path: str | Path) -> None:
        from safetensors.numpy import save_file

        meta = dict(self.meta, version=VERSION, bins=BINS, strongest=STRONGEST, window=WINDOW,
                    definitions={s.name: {"definition": s.definition, "tip": s.tip, "source": s.source}
                                 for s in statistics.atlas_statistics()},
                    tokens={str(i): t for i, t in sorted(self.tokens.items())})
        with atomic_path(path) as tmp:
            save_file({k: np.ascontiguousarray(v) for k, v in self.arrays.items()}, str(tmp),
                      metadata={"atlas": json.dumps(meta)})


def load_state(path: str | Path) -> AtlasState:
    """An atlas file read back; InputError (one sentence) for anything that is not one."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path} is not a file.")
    try:
        with safe_open(str(path), "np") as f:
            raw = (f.metadata() or {}).get("atlas")
            arrays = {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise InputError(f"{path} is not a readable atlas (a damaged .safetensors file: {exc}).") from None
    if raw is None:
        raise InputError(f"{path} is a .safetensors file but not an atlas (no atlas metadata).")
    try:
        meta = json.loads(raw)
    except ValueError:
        raise InputError(f"{path} is a damaged atlas: its metadata is not JSON.") from None
    if meta.get("version") != VERSION:
        raise InputError(f"{path} is an atlas of version {meta.get('version')}; this attnscope reads version {VERSION}.")
    tokens = {int(i): t for i, t in meta.pop("tokens", {}).items()}
    for key in ("bins", "strongest", "window", "definitions", "version"):
        meta.pop(key, None)
    state = AtlasState(meta, arrays, tokens)
    missing = set(AtlasState.empty(dict(meta)).arrays) - set(arrays)
    if missing:
        raise InputError(f"{path} is a damaged atlas: it lacks {', '.join(sorted(missing)[:3])}.")
    return state
