"""The probe traces of a training run, saved beside its checkpoint so the run can be replayed.

``X.safetensors`` gets ``X.timelapse.npz``: per probe its step, training loss, token lists
(JSON) and one (L, H, Tq, Tk) array per attention kind. Plain arrays and strings only, read
back with ``allow_pickle=False``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.trace import AttentionTrace


@dataclass
class Probe:
    step: int
    loss: float
    trace: AttentionTrace


def timelapse_path(checkpoint: str | Path) -> Path:
    p = Path(checkpoint)
    return p.with_name(p.name.removesuffix(".safetensors") + ".timelapse.npz")


def save_timelapse(path: str | Path, probes: list[Probe]) -> Path:
    arrays, meta = {}, []
    for i, p in enumerate(probes):
        t = p.trace
        for j, kind in enumerate(t.kinds):
            arrays[f"p{i}_k{j}"] = t.weights(kind)
        meta.append({"step": p.step, "loss": p.loss, "kinds": t.kinds, "source_tokens": t.source_tokens,
                     "target_tokens": t.target_tokens, "model_name": t.model_name, "family": t.family})
    np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)
    return Path(path)


def load_timelapse(path: str | Path) -> list[Probe]:
    try:
        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(str(f["meta"]))
            return [Probe(m["step"], m["loss"], AttentionTrace(
                m["model_name"], m["family"], {k: f[f"p{i}_k{j}"] for j, k in enumerate(m["kinds"])},
                m["source_tokens"], m["target_tokens"])) for i, m in enumerate(meta)]
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"{Path(path).name} is not a training time-lapse file ({exc}).") from None
