"""The probe traces of a training run, saved beside its checkpoint so the run can be replayed.

``X.safetensors`` gets ``X.timelapse.npz``: per probe its step, training loss, token lists
(JSON), one (L, H, Tq, Tk) array per attention kind, and the heads' induction and
previous-token scores then (engine.inspection.analysis.mechanism_scores), so the step at which an
induction head forms can be read off the file. Plain arrays and strings only, read
back with ``allow_pickle=False``. Saving goes through engine.runtime.files.atomic_path; loading
turns every way a file can be broken (not a zip, truncated, a zip bomb, missing or odd
arrays, bad JSON) into one ValueError that names the file, which the window shows.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnscope.engine.runtime.files import atomic_path, open_npz
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces.dense import DenseTrace
from attnscope.engine.traces import reading
from attnscope.engine.inputs import check_kind, check_path


@dataclass
class Probe:
    step: int
    loss: float
    trace: AttentionTrace
    scores: dict | None = None  # kind -> {"induction": (L, H), "previous": (L, H)}

    @classmethod
    def from_progress(cls, record) -> "Probe":
        """The probe of a training record (engine.training.loops.TrainProgress) that has one."""
        return cls(record.step, record.loss, record.probe, record.head_scores)


def _scores_to_json(scores: dict | None) -> dict | None:
    if not scores:
        return None
    return {kind: {name: np.asarray(a, dtype=float).round(5).tolist() for name, a in by_name.items()}
            for kind, by_name in scores.items()}


def _scores_from_json(i: int, scores) -> dict | None:
    if scores is None:
        return None
    try:
        out = {str(kind): {str(name): np.asarray(a, dtype=np.float32) for name, a in by_name.items()}
               for kind, by_name in scores.items()}
    except (AttributeError, TypeError, ValueError):
        raise ValueError(f"probe {i} has head scores that are not tables of numbers") from None
    if any(a.ndim != 2 for by_name in out.values() for a in by_name.values()):
        raise ValueError(f"probe {i} has head scores that are not (layers, heads) tables")
    return out


def timelapse_path(checkpoint: str | Path) -> Path:
    check_path(checkpoint, "checkpoint")
    p = Path(checkpoint)
    return p.with_name(p.name.removesuffix(".safetensors") + ".timelapse.npz")


def save_timelapse(path: str | Path, probes: list[Probe]) -> Path:
    check_path(path, "time-lapse file to write")
    check_kind(probes, (list, tuple), "probes", "a list of Probe records")
    arrays, meta = {}, []
    for i, p in enumerate(probes):
        t = p.trace
        for j, kind in enumerate(t.kinds):
            arrays[f"p{i}_k{j}"] = reading.weights(t, kind)
        meta.append({"step": p.step, "loss": p.loss, "kinds": t.kinds, "source_tokens": t.source_tokens,
                     "target_tokens": t.target_tokens, "model_name": t.model_name, "family": t.family,
                     "scores": _scores_to_json(p.scores)})
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, meta=np.array(json.dumps(meta)), **arrays)
    return path


def _probe(f, i: int, m) -> Probe:
    if not isinstance(m, dict):
        raise ValueError(f"probe {i} is a {type(m).__name__}, not a record")
    kinds = m["kinds"]
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise ValueError(f"probe {i} has no list of attention kinds")
    arrays = {}
    for j, kind in enumerate(kinds):
        a = f[f"p{i}_k{j}"]
        if a.ndim != 4 or a.dtype.kind != "f":
            raise ValueError(f"probe {i}, {kind}: an array of shape {a.shape} and type {a.dtype}, not (L, H, Tq, Tk) floats")
        arrays[kind] = a
    tokens = [m["source_tokens"], m["target_tokens"]]
    if not all(isinstance(t, list) and all(isinstance(s, str) for s in t) for t in tokens):
        raise ValueError(f"probe {i} has token lists that are not lists of strings")
    trace = DenseTrace(str(m["model_name"]), str(m["family"]), arrays, *tokens)
    return Probe(int(m["step"]), float(m["loss"]), trace, _scores_from_json(i, m.get("scores")))


def load_timelapse(path: str | Path) -> list[Probe]:
    """The probes of a time-lapse file; ValueError with a clear message for any broken file."""
    check_path(path, "time-lapse file")
    with open_npz(path, "training time-lapse file") as f:
        meta = json.loads(str(f["meta"][()]))
        if not isinstance(meta, list):
            raise ValueError("its description is not a list of probes")
        return [_probe(f, i, m) for i, m in enumerate(meta)]
