"""A Run's recording as one file: record on a GPU machine, look on a laptop, with no model.

One ``.safetensors`` file (tensors and a string table only: opening it can never run code)
holding, per attention site, the queries and keys as the model used them, each row's
log-sum-exp when the kernel gave it, the mask and bias when there were any, the head's
attention sinks where the model has them (gpt-oss); and in its
metadata the format's name and version, the model's name and family, the tokens of each
side (and the word pieces behind merged words), the notes, and per site its scale,
softcap, window and causal flag. Every view draws a trace opened from it exactly as the
Run's own: it is the same RecordedTrace. Opening validates it all and refuses a damaged,
foreign or inconsistent file in one sentence.

A trace with q of some query rows only (engine.traces.partial.PartialTrace: an ``ndif:`` Run
before every row is fetched) is kept as it is, at format version 3: per layer k, each row's
log-sum-exp and the sinks, q (with its rows of mask and bias) of each block of rows held, the
overview's pixels, and in the metadata which rows are exact and which overviews are held
(``partial``). It opens as a PartialTrace: the rows held exact, the others refused in one
sentence. Nothing else of the Run (an API key, a session) is written.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from attnscope.engine.errors import OneLine
from attnscope.engine.kinds import DECODER_SELF, KEY_SIDE, KINDS, NOT_SOFTMAX, QUERY_SIDE
from attnscope.engine.runtime.device import pick_device
from attnscope.engine.runtime.files import atomic_path
from attnscope.engine.seam.call import AttentionCall, Site
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.inputs import check_kind, too_long
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces.partial import FACTS, PartialTrace
from attnscope.engine.traces.pooling import bins

FORMAT = "attnscope-recording"
VERSION = 2                        # version 1 and sinks: an attnscope that knows no sinks must not read them
PARTIAL_VERSION = 3                # q of some rows only: an attnscope that reads every row from q must not read it
READS = (1, 2, 3)                  # a file of version 1 (written before sinks, or without any) reads as ever
MAX_META_BYTES = 64 << 20
PARTS = ("q", "k", "lse")          # per site, per example
SINK = "sink"                      # per site, (Hq,): one per head, whatever the example
SHARED = ("mask", "bias")          # often one tensor for every layer: stored once, named by the sites


class RecordingError(OneLine, ValueError):
    """A recording file that cannot be opened, said in one sentence for the user."""


def _is_path(path) -> bool:
    """Whether ``path`` names a file at all: a non-blank str or Path (the one test of the three
    doors below, each of which says in its own words what it wanted)."""
    return isinstance(path, (str, Path)) and bool(str(path).strip())


def recording_target(path: str | Path, replace: bool = False) -> Path:
    """The file a recording will be written to (``.safetensors`` added when missing), or
    RecordingError when that would destroy something: an existing file that is not a
    recording of ours (a user's checkpoint, the very model being recorded) is never written
    over unless ``replace`` says a person confirmed it (the window asks). An older recording
    is replaced. Asked before the Run, so a refusal costs nothing."""
    if not _is_path(path) or str(path).strip() == ".":                  # Path("") is "."
        got = "an empty name" if isinstance(path, (str, Path)) else repr(path)
        raise RecordingError(f"Give the name of the .safetensors file to write the recording to (got {got}).")
    said = too_long(path, "recording")
    if said:
        raise RecordingError(said)
    path = Path(path).expanduser()
    if path.is_dir():
        raise RecordingError(f"{path} is a folder; give the name of a .safetensors file to write the recording to.")
    if path.suffix and path.suffix != ".safetensors":    # config.json, model.safetensors.index.json: not ours to name
        raise RecordingError(f"{path.name} is not a .safetensors file name; name the recording like "
                             f"{path.stem}.recording.safetensors.")
    if path.suffix != ".safetensors":
        path = path.with_name(path.name + ".safetensors")
    if path.is_dir():
        raise RecordingError(f"{path} is a folder; give the name of a .safetensors file to write the recording to.")
    if path.exists() and not replace and not is_recording(path):
        raise RecordingError(f"{path.name} already exists and is not an attnscope recording (a model's weights or "
                             "another file): attnscope will not write over it; choose another name.")
    return path


def save_recording(trace: RecordedTrace, path: str | Path, replace: bool = False) -> Path:
    """Write ``trace``'s recording to ``path`` (.safetensors), atomically; an existing file that
    is not a recording is refused unless ``replace`` (``recording_target``)."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    from safetensors.torch import save_file

    if trace.recording is None:
        raise RecordingError("Only a Run's own trace has a recording to save (this one was read from a file of "
                             "weights); run the model on the text first.")
    path = recording_target(path, replace)
    if trace.fetcher is not None and not trace.fetcher.complete:
        return _save_partial(trace, path)
    tensors, sites, shared = {}, [], {}
    b = trace.batch_index
    notes = list(trace.notes)
    if any(kind in NOT_SOFTMAX for kind in trace.kinds):   # computed by the model's own function, not held here
        notes.append("Effective attention is not in this recording: a linear layer's mixing is computed by the "
                     "model's own function, which a recording does not hold; run the model to see it.")
    for kind in (k for k in trace.kinds if k not in NOT_SOFTMAX):
        for layer, call in enumerate(trace.calls[kind]):
            site = {"kind": kind, "layer": layer, "scale": call.scale, "softcap": call.softcap,
                    "window": call.window, "causal": call.causal}
            for part in PARTS + SHARED:
                value = getattr(call, part)
                if value is None:
                    continue
                if part in SHARED:         # the same mask object in every layer is written once
                    key = (value.data_ptr(), tuple(value.shape), tuple(value.stride()))
                    if key not in shared:
                        shared[key] = f"{part}/{len(shared)}"
                        tensors[shared[key]] = _example(value, b)
                    site[part] = shared[key]
                else:
                    tensors[f"{kind}/{layer}/{part}"] = _example(value, b)
            if call.sink is not None:
                sink = call.sink if call.sink.dim() == 1 else _example(call.sink, b)    # (Hq,) or (1, Hq, Tq)
                tensors[f"{kind}/{layer}/{SINK}"] = sink.detach().to("cpu").contiguous()
            sites.append(site)
    version = VERSION if any(name.endswith(f"/{SINK}") for name in tensors) else 1
    meta = {"format": FORMAT, "version": version, "model_name": trace.model_name, "family": trace.family,
            "source_tokens": trace.source_tokens, "target_tokens": trace.target_tokens, "pieces": trace.pieces,
            "groups": trace.groups, "notes": notes, "sites": sites}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"attnscope": json.dumps(meta)})
    return path


def _save_partial(trace: PartialTrace, path: Path) -> Path:
    """``trace`` with the rows it holds, which rows those are in its description (version 3)."""
    from safetensors.torch import save_file

    description, tensors = trace.held()
    meta = {"format": FORMAT, "version": PARTIAL_VERSION, "model_name": trace.model_name, "family": trace.family,
            "source_tokens": [], "target_tokens": trace.target_tokens, "notes": trace.notes,
            "sites": description.pop("sites"), "partial": description}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"attnscope": json.dumps(meta)})
    return path


def _example(value, b: int):
    """The example the trace shows, on the CPU, contiguous."""
    value = value[b:b + 1] if value.shape[0] > 1 else value
    return value.detach().to("cpu").contiguous()


def is_recording(path: str | Path) -> bool:
    """Whether ``path`` is a file attnscope would open as a recording (read from its header only);
    RecordingError for something that is not a path at all."""
    if not _is_path(path):
        raise RecordingError(f"Give the path of a file to ask whether it is a recording, not {path!r:.40}.")
    try:
        return _meta(Path(path)).get("format") == FORMAT
    except (RecordingError, OSError):
        return False


def _meta(path: Path) -> dict:
    from safetensors import safe_open

    if not path.is_file():
        raise RecordingError(f"{path} is not a file.")
    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get("attnscope")
    except Exception as exc:
        raise RecordingError(f"{path.name} is not a readable safetensors file ({str(exc).splitlines()[0][:120]}). "
                             "Copy it again.") from None
    if raw is None:
        raise RecordingError(f"{path.name} is a safetensors file but not an attnscope recording.")
    if len(raw) > MAX_META_BYTES:
        raise RecordingError(f"{path.name}: its description is {len(raw):,} bytes, too large to be a recording's.")
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):               # RecursionError: nested past Python's limit
        raise RecordingError(f"{path.name}: its description is not valid JSON, or nested deeper than a recording's "
                             "is; the file is damaged.") from None
    if not isinstance(meta, dict):
        raise RecordingError(f"{path.name}: its description is not a JSON object; the file is damaged.")
    return meta


def load_recording(path: str | Path, device: str = "cpu") -> RecordedTrace | PartialTrace:
    """The trace a recording file holds, every check passed; RecordingError otherwise."""
    from safetensors import safe_open

    if not _is_path(path):
        raise RecordingError(f"Give the path of a recording file (.safetensors written by attnscope record or "
                             f"File > Save Recording), not {path!r}.")
    said = too_long(path, "recording")
    if said:
        raise RecordingError(said)
    path = Path(path)
    device = _device(device, path)
    meta = _meta(path)
    if meta.get("format") != FORMAT:
        raise RecordingError(f"{path.name} is a safetensors file but not an attnscope recording.")
    if not isinstance(meta.get("version"), int) or isinstance(meta.get("version"), bool):
        raise RecordingError(f"{path.name}: its format version is {meta.get('version')!r}, not a whole number; "
                             "the file is damaged.")
    if meta.get("version") not in READS:
        raise RecordingError(f"{path.name} is a recording of format version {meta.get('version')!r}; this attnscope "
                             f"reads versions {' and '.join(map(str, READS))}. Open it with the attnscope that wrote it.")
    tokens, pieces, groups = _checked_meta(path.name, meta)
    if meta["version"] == PARTIAL_VERSION:
        return _load_partial(path, meta, tokens["target"])
    try:
        with safe_open(str(path), framework="pt", device=device) as f:
            names = set(f.keys())
            calls: dict[str, list[AttentionCall]] = {}
            for site in meta["sites"]:
                kind, layer = site.get("kind"), site.get("layer")
                if kind not in KINDS or not isinstance(layer, int):
                    raise RecordingError(f"{path.name}: it names an attention site {kind!r} {layer!r} attnscope "
                                         "does not know; the file is damaged or foreign.")
                parts = {p: f.get_tensor(f"{kind}/{layer}/{p}") if f"{kind}/{layer}/{p}" in names else None
                         for p in PARTS + (SINK,)}
                for p in SHARED:
                    ref = site.get(p)
                    if ref is not None and ref not in names:
                        raise RecordingError(f"{path.name}: {kind} {layer} names a {p} the file does not hold; "
                                             "the file is damaged.")
                    parts[p] = None if ref is None else f.get_tensor(ref)
                calls.setdefault(kind, []).append(_checked_call(path, Site(kind, layer), parts, site, pieces, tokens))
    except RecordingError:
        raise
    except Exception as exc:
        raise RecordingError(f"{path.name} is damaged or truncated ({str(exc).splitlines()[0][:120]}). "
                             "Copy it again.") from None
    if not calls:
        raise RecordingError(f"{path.name} holds no attention sites.")
    for kind, layers in calls.items():
        if [c.site.layer for c in layers] != list(range(len(layers))):
            raise RecordingError(f"{path.name}: the {kind} layers are not numbered 0, 1, ... ; the file is damaged.")
    trace = RecordedTrace(calls, model_name=str(meta.get("model_name", path.stem)), family=str(meta.get("family", "")),
                          source_tokens=tokens["source"], target_tokens=tokens["target"],
                          notes=[str(n) for n in meta.get("notes") or []] + [f"Opened from the recording {path.name}."],
                          groups=groups, pieces=pieces or None)
    return trace.densify()


def _load_partial(path: Path, meta: dict, tokens: list[str]) -> PartialTrace:
    """A version-3 file: the PartialTrace it keeps (on the CPU, where its rows are computed),
    every tensor checked against the rows and tokens it names; RecordingError otherwise."""
    from safetensors import safe_open

    name, damaged = path.name, "the file is damaged"
    partial, sites = meta.get("partial"), meta["sites"]
    if not isinstance(partial, dict) or not sites:
        raise RecordingError(f"{name}: it says it holds some query rows only but not which; {damaged}.")
    rows, overviews = partial.get("rows"), partial.get("overviews")
    t = len(tokens)
    ok_rows = isinstance(rows, list) and all(isinstance(r, list) and len(r) == 2 and all(_count(x) for x in r)
                                             for r in rows)
    if not ok_rows or any(not 0 <= a < b <= t for a, b in rows) or any(b > c for (_, b), (c, _) in zip(rows, rows[1:])):
        raise RecordingError(f"{name}: its exact query rows are not blocks in order within its {t:,} tokens; "
                             f"{damaged}.")
    if not (isinstance(overviews, list) and all(isinstance(o, list) and len(o) == 2 and _count(o[0])
                                                and o[1] in ("max", "mean") for o in overviews)):
        raise RecordingError(f"{name}: its overviews are not (pixels, pooling) pairs; {damaged}.")
    if any(not 1 <= o[0] <= t for o in overviews) or len({tuple(o) for o in overviews}) != len(overviews):
        raise RecordingError(f"{name}: its overview sizes {[o[0] for o in overviews]} are not distinct counts of "
                             f"pixels from 1 to its {t:,} tokens; {damaged}.")
    if not rows and not overviews:
        raise RecordingError(f"{name}: it holds no exact query rows and no overview, nothing to draw; {damaged}.")
    for n, site in enumerate(sites):
        if site.get("kind") != DECODER_SELF or site.get("layer") != n or set(FACTS) - set(site):
            raise RecordingError(f"{name}: its layer {n} is not described as a decoder's self-attention layer; "
                                 f"{damaged}.")
        window = site["window"]
        if not (_positive(site["scale"]) and (site["softcap"] is None or _positive(site["softcap"]))
                and (window is None or (_count(window) and window > 0)) and isinstance(site["causal"], bool)):
            raise RecordingError(f"{name}: layer {n}'s scale, softcap, window or causal flag is not what a call "
                                 f"has; {damaged}.")
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            tensors = {key: f.get_tensor(key) for key in f.keys()}
    except Exception as exc:
        raise RecordingError(f"{name} is damaged or truncated ({str(exc).splitlines()[0][:120]}). "
                             "Copy it again.") from None
    same = partial.get("same") or {}
    if not (isinstance(same, dict) and set(same) <= set(tensors)
            and all(isinstance(v, list) and all(isinstance(n, str) for n in v) for v in same.values())):
        raise RecordingError(f"{name}: its shared masks name tensors it does not hold; {damaged}.")
    for written, others in same.items():
        tensors.update(dict.fromkeys(others, tensors[written]))
    _check_partial(name, tensors, sites, rows, overviews, t, same)
    notes = [str(n) for n in meta.get("notes") or []] + [
        f"Opened from the recording {name}: query rows {', '.join(f'{a:,}-{b - 1:,}' for a, b in rows) or 'none'} "
        f"of {t:,} are exact; no model is here to fetch the others."]
    return PartialTrace.from_held({"sites": sites, "rows": rows, "overviews": overviews}, tensors,
                                  model_name=str(meta.get("model_name", path.stem)),
                                  family=str(meta.get("family", "")), tokens=tokens, notes=notes)


def _check_partial(name: str, tensors: dict, sites: list[dict], rows: list, overviews: list, t: int,
                   same: dict) -> None:
    """RecordingError in one sentence for a version-3 file's tensor missing, of the wrong shape
    or not finite (the shapes PartialTrace.held writes)."""
    named: set[str] = set()

    def need(key: str, shape: tuple | None = None, dims: int | None = None, kind: str = "float") -> torch.Tensor:
        value = tensors.get(key)
        named.add(key)
        if value is None or (shape is not None and tuple(value.shape) != shape) or (
                dims is not None and value.dim() != dims):
            raise RecordingError(f"{name}: its {key} is missing or of the wrong shape; the file is damaged.")
        if not _kind_of(kind, value):
            raise RecordingError(f"{name}: its {key} is of {value.dtype}, not {_KINDS_SAID[kind]}; the file is damaged.")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise RecordingError(f"{name}: its {key} holds values that are not numbers (NaN or infinite); "
                                 "the file is damaged.")
        return value

    heads = sites[0].get("heads")
    for n, site in enumerate(sites):
        k = need(f"{DECODER_SELF}/{n}/k", dims=3)                                    # (Hkv, T, Dh)
        if not (_count(heads) and site["heads"] == heads and k.shape[0] > 0 and k.shape[1] == t
                and heads % k.shape[0] == 0):
            raise RecordingError(f"{name}: layer {n}'s keys {tuple(k.shape)} do not fit its {heads} heads and "
                                 f"{t:,} tokens; the file is damaged.")
        need(f"{DECODER_SELF}/{n}/lse", (heads, t))
        if f"{DECODER_SELF}/{n}/sink" in tensors:
            need(f"{DECODER_SELF}/{n}/sink", (heads,) if tensors[f"{DECODER_SELF}/{n}/sink"].dim() == 1 else (heads, t))
        for i, (a, b) in enumerate(rows):
            need(f"{DECODER_SELF}/{n}/rows/{i}/q", (heads, b - a, k.shape[2]))
            for part in ("mask", "bias"):
                if f"{DECODER_SELF}/{n}/rows/{i}/{part}" in tensors:
                    value = need(f"{DECODER_SELF}/{n}/rows/{i}/{part}", dims=4, kind=part)
                    if value.shape[-1] != t:
                        raise RecordingError(f"{name}: its {part} of rows {a}-{b - 1} does not match its keys; "
                                             "the file is damaged.")
    for i, (size, _) in enumerate(overviews):
        side = bins(t, size)
        need(f"overview/{i}/pooled", (len(sites), heads, side, side), kind="pixels")     # (L, H, rows, cols)
        need(f"overview/{i}/sink", (len(sites), heads, side), kind="pixels")
    extra = sorted(set(tensors) - named - {n for others in same.values() for n in others})
    if extra:
        raise RecordingError(f"{name}: it holds {extra[0]}, which its description does not name (its rows or "
                             "overviews were edited); the file is damaged.")


_KINDS_SAID = {"float": "floating point", "pixels": "16-, 32- or 64-bit floating point",
               "mask": "true/false or floating point", "bias": "floating point"}


def _kind_of(kind: str, value: torch.Tensor) -> bool:
    """Whether ``value``'s dtype is what a recording's ``kind`` of tensor holds (the overview's
    pixels are read by numpy, which has no bfloat16; a mask is boolean or additive)."""
    if kind == "pixels":
        return value.dtype in (torch.float16, torch.float32, torch.float64)
    if kind == "mask":
        return value.dtype == torch.bool or value.is_floating_point()
    return value.is_floating_point()


def _count(value) -> bool:
    """A whole number, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _device(device, path: Path) -> str:
    """The device a recording is opened on, by name; RecordingError for one that is not a device
    or that this machine lacks (safetensors said "damaged or truncated" of a good file then)."""
    if not isinstance(device, (str, torch.device)):
        raise RecordingError(f"{path.name}: a recording opens on a device named 'cpu', 'cuda', 'cuda:1' or 'mps', "
                             f"not {device!r:.40}.")
    try:
        return str(pick_device(str(device)))
    except ValueError as exc:
        raise RecordingError(f"{path.name} cannot be opened there: {exc}.") from None


def _checked_meta(name: str, meta: dict) -> tuple[dict, dict, dict | None]:
    """(tokens, pieces, groups) of a recording's description, every field of the type and size
    the trace needs; RecordingError in one sentence otherwise (a damaged or hand-edited file
    must not reach the views as an AttributeError or a matmul of mismatched sizes)."""
    def texts(v) -> bool:
        return isinstance(v, list) and all(isinstance(t, str) for t in v)

    damaged = "the file is damaged"
    tokens = {side: meta.get(f"{side}_tokens") for side in ("source", "target")}
    if not all(texts(v) for v in tokens.values()):
        raise RecordingError(f"{name}: its token lists are not lists of text; {damaged}.")
    pieces = meta.get("pieces") or {}
    if not isinstance(pieces, dict) or not set(pieces) <= set(tokens) or not all(texts(v) for v in pieces.values()):
        raise RecordingError(f"{name}: its word pieces are not a list of text per side (source, target); {damaged}.")
    groups = meta.get("groups") or None
    if groups is None and any(len(pieces.get(side, v)) != len(v) for side, v in tokens.items()):
        raise RecordingError(f"{name}: it has more word pieces than tokens but no word groups joining them; {damaged}.")
    if groups is not None:
        if not isinstance(groups, dict) or set(groups) != set(tokens):
            raise RecordingError(f"{name}: its word groups are not a list per side (source and target); {damaged}.")
        for side, g in groups.items():
            n_pieces, n_words = len(pieces.get(side, tokens[side])), len(tokens[side])
            steps_ok = isinstance(g, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in g) and (
                not g or (g[0] == 0 and all(b - a in (0, 1) for a, b in zip(g, g[1:]))))
            if not steps_ok or len(g) != n_pieces or (g[-1] + 1 if g else 0) != n_words:
                raise RecordingError(f"{name}: its {side} word groups do not number its {n_pieces} pieces into its "
                                     f"{n_words} words (0, 0, 1, 2, ...); {damaged}.")
    notes = meta.get("notes")
    if notes is not None and not texts(notes):
        raise RecordingError(f"{name}: its notes are not a list of text; {damaged}.")
    for key in ("model_name", "family"):
        if not isinstance(meta.get(key, ""), str):
            raise RecordingError(f"{name}: its {key} is not text; {damaged}.")
    sites = meta.get("sites")
    if not isinstance(sites, list) or not all(isinstance(s, dict) for s in sites):
        raise RecordingError(f"{name}: its attention sites are not a list of descriptions; {damaged}.")
    return tokens, pieces, groups


def _checked_call(path, site, parts, desc, pieces, tokens) -> AttentionCall:
    q, k = parts["q"], parts["k"]
    name = f"{path.name}: {site}"
    if q is None or k is None:
        raise RecordingError(f"{name} has no queries or keys; the file is damaged.")
    if q.dim() != 4 or k.dim() != 4 or q.shape[0] != 1 or k.shape[0] != 1 or q.shape[3] != k.shape[3]:
        raise RecordingError(f"{name}: queries {tuple(q.shape)} and keys {tuple(k.shape)} do not fit together.")
    if not (q.is_floating_point() and k.is_floating_point()) or q.shape[1] % k.shape[1]:
        raise RecordingError(f"{name}: queries and keys must be floating point, query heads a multiple of key heads.")
    sides = {side: len(pieces.get(side, tokens[side])) for side in ("source", "target")}
    if q.shape[2] < sides[QUERY_SIDE[site.kind]] or k.shape[2] < sides[KEY_SIDE[site.kind]]:
        raise RecordingError(f"{name}: {q.shape[2]} queries and {k.shape[2]} keys, fewer than its "
                             f"{sides[QUERY_SIDE[site.kind]]} x {sides[KEY_SIDE[site.kind]]} tokens.")
    lse = parts["lse"]
    if lse is not None and tuple(lse.shape) != tuple(q.shape[:3]):
        raise RecordingError(f"{name}: its log-sum-exp does not match its queries; the file is damaged.")
    for extra in ("mask", "bias"):
        t = parts[extra]
        if t is not None and (t.dim() != 4 or t.shape[-1] != k.shape[2]):
            raise RecordingError(f"{name}: its {extra} does not match its keys; the file is damaged.")
        if t is not None and not _kind_of(extra, t):
            raise RecordingError(f"{name}: its {extra} is of {t.dtype}, not {_KINDS_SAID[extra]}; the file is damaged.")
    sink = parts[SINK]
    if sink is not None and (tuple(sink.shape) not in ((q.shape[1],), tuple(q.shape[:3]))
                             or not sink.is_floating_point()):
        raise RecordingError(f"{name}: its attention sinks are not one number per query head or per query; the file "
                             "is damaged.")
    scale, softcap, window, causal = desc.get("scale"), desc.get("softcap"), desc.get("window"), desc.get("causal")
    if not _positive(scale) or not (softcap is None or _positive(softcap)):
        raise RecordingError(f"{name}: its scale or softcap is not a positive number; the file is damaged.")
    if not (window is None or (isinstance(window, int) and not isinstance(window, bool) and window > 0)):
        raise RecordingError(f"{name}: its window is {window!r}, not a number of tokens; the file is damaged.")
    if not isinstance(causal, bool):
        raise RecordingError(f"{name}: its causal flag is {causal!r}, not true or false; the file is damaged.")
    for what, t in (("queries", q), ("keys", k), ("log-sum-exp", lse), ("attention sinks", sink)):
        if t is not None and not bool(torch.isfinite(t).all()):     # one pass over the recording: linear in T
            raise RecordingError(f"{name}: its {what} hold values that are not numbers (NaN or infinite); "
                                 "the file is damaged.")
    return AttentionCall(site, q, k, None, mask=parts["mask"], bias=parts["bias"], scale=float(scale),
                         softcap=softcap, window=window, causal=causal, lse=lse, sink=sink)


def _positive(value) -> bool:
    """A real, finite, positive number (not a bool, which Python counts as an int)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and value > 0)
