"""The atlas pass: one recorded forward per document, every statistic from q, k and each row's
log-sum-exp in row blocks, and each head's activation from the seam's head outputs.

Per document: the forward runs under the seam's recorder (``engine.seam.recording``, the
fused kernel handing back each row's log-sum-exp) and one more hook at the seam that reads
each head's output z_h (B, H, T, Dv) as it passes and keeps the norm of z_h W_O,h per query
position (``HeadNorms``; it changes nothing). The top contexts and the sample are merged
first (they need only the activations), so the one pass over each layer's row blocks also
reads the strongest keys of the rows they keep. Nothing is (T, T): a block is (H, r, c).

Resume: the state is written every ``every`` documents and when stopped; the same call with
the same file skips the documents done. Documents are read in order and the sums are float64
added in the same order, so a resumed atlas equals one built in one go.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from attnscope.engine.adapters import adapter_for
from attnscope.engine.adapters.chat import chat_template
from attnscope.engine.atlas.corpus import corpus_files, documents, fingerprint
from attnscope.engine.atlas.forward import HeadNorms, atlas_kind, probe_meta, record, side_ids
from attnscope.engine.atlas.state import BINS, SAMPLE_SEED, STRONGEST, WINDOW, AtlasState, load_state
from attnscope.engine.atlas.similarity import ROWS, fold_gram, similarity_rows
from attnscope.engine.inspection import statistics
from attnscope.engine.inspection.statistics import Rows, copies, token_groups
from attnscope.engine.inputs import Chat, InputError
from attnscope.engine.kinds import QUERY_SIDE
from attnscope.engine.runtime.blocks import causal_rows, rows_per_block, score_block_bytes
from attnscope.engine.runtime.free_memory import available_memory, gib
from attnscope.engine.traces import RunCancelled
from attnscope.engine.traces.estimate import check_run

DEFAULT_LENGTH = 4096
DEFAULT_TOP = 32
DEFAULT_SAMPLES = 256
EVERY = 8            # documents between two writes of the file


def build_atlas(loaded, out: str | Path, corpus: str | Path | None = None, length: int | None = None,
                docs: int | None = None, top: int = DEFAULT_TOP, samples: int = DEFAULT_SAMPLES,
                every: int = EVERY, report=None, stop=None, chat: bool = False) -> AtlasState:
    """Build the atlas of ``loaded`` over ``corpus`` into ``out``, or resume it there.
    ``chat``: each document is the user's turn of a chat, framed by the model's own chat
    template (``chat_framer``), as a chat prompt is elsewhere.
    ``report(("atlas", docs done, docs asked or None))`` after each document; ``stop()`` true
    ends it after the document it is on, the file holding every document done (RunCancelled)."""
    loaded.model.eval()
    adapter = adapter_for(loaded)
    kind = atlas_kind(loaded)
    cap = int(loaded.max_len)
    length = min(DEFAULT_LENGTH, cap) if length is None else int(length)
    if not 2 <= length <= cap:
        raise InputError(f"A document of {length:,} tokens is past what {loaded.name} reads ({cap:,} tokens); "
                         f"give --length from 2 to {cap:,}.")
    frame = chat_framer(loaded, adapter, length) if chat else (lambda ids: adapter.frame_ids(ids)[0])
    framed = frame([adapter.plain_token_ids()[0]])
    framing = len(side_ids(framed, kind)) - 1
    body = length - framing
    corpus_path = str(Path(corpus).resolve()) if corpus else str(corpus_files(None)[0])
    out = Path(out)
    if out.exists():
        state = load_state(out)
        _check_same(state, loaded, corpus_path, length, top, samples, out, chat)
    else:
        probe, facts = probe_meta(adapter, framed, kind)                   # the widest head, layers left out
        meta = dict(model=loaded.name, family=loaded.family, kind=kind, layers=len(probe), heads=probe[0].q.shape[1],
                    kv_heads=probe[0].k.shape[1], corpus=corpus_path,
                    corpus_fingerprint=fingerprint(corpus_path), length=length, framing=framing, top=top,
                    samples=samples, docs_asked=docs, chat=bool(chat), **facts)
        state = AtlasState.empty(meta)
    _check_fits(state, loaded.device, loaded.name)
    norms = HeadNorms(adapter, kind, state.meta["layers"])
    done = state.docs_done
    for index, ids in enumerate(documents(adapter, corpus_path, body)):
        if docs is not None and index >= docs:
            break
        if index < done:
            continue
        if stop is not None and stop():
            state.save(out)
            raise RunCancelled(f"The atlas was stopped after {index:,} documents; the same command resumes it.")
        framed = frame(ids)
        if index == done:
            check_run(adapter.run_facts(), framed, loaded.name)
        add_document(state, adapter, framed, kind, index, norms)
        state.meta["docs_done"] = index + 1
        if (index + 1) % every == 0:
            state.save(out)
        if report is not None:
            report(("atlas", index + 1, docs))
    if state.docs_done == 0:
        raise InputError(f"The corpus {corpus_path} gave no document of two tokens or more.")
    state.save(out)
    return state


def _check_fits(state: AtlasState, device, name: str) -> None:
    """The pass's own memory, beside the Run that check_run estimates: the summaries (heaps,
    sample, histograms, similarity: bounded by the model and the options, never the corpus),
    held twice while a document is merged, and a document's working arrays (each row's value
    of every statistic, the rows read whole for similarity, three score blocks). Said in the
    file's metadata; an atlas that does not fit is refused with the numbers."""
    m = state.meta
    held = sum(v.nbytes for v in state.arrays.values())
    per_doc = 4 * m["length"] * m["heads"] * (len(statistics.atlas_statistics()) + m["layers"] * (ROWS + 1)) \
        + 3 * score_block_bytes(device, "select")
    m["memory"] = {"summaries_bytes": int(held), "per_document_bytes": int(per_doc)}
    free = available_memory()
    if 2 * held + per_doc > free:
        raise InputError(f"An atlas of {name} holds {gib(held)} of summaries (twice while a document is merged) "
                         f"and {gib(per_doc)} a document beside the Run; {gib(free)} is free. Lower --top, "
                         "--length or the sample.")


def chat_framer(loaded, adapter, length: int):
    """``ids -> Framed``: a document's tokens as the user's turn of a chat, through the model's
    own chat template (engine.adapters.chat), with the start of the reply; the body is cut
    from its end until the whole fits ``length`` (a template may tokenize the text's edges
    anew). InputError in one sentence for a model that does not read chats."""
    if loaded.role != "decoder" or chat_template(loaded) is None:
        raise InputError(f"{loaded.name} has no chat template (a decoder's tokenizer carries one), so its atlas "
                         "cannot read documents as chats; leave out --chat.")
    tok = loaded.tokenizer

    def frame(ids: list[int]):
        for _ in range(4):
            framed = adapter.frame(Chat.of(tok.decode(ids)))
            over = len(framed.target_ids) - length
            if over <= 0 or len(ids) <= 1:
                return framed
            ids = ids[:max(1, len(ids) - over)]
        return framed
    return frame


def _check_same(state, loaded, corpus_path, length, top, samples, out, chat=False) -> None:
    m = state.meta
    if m["model"] != loaded.name or m["family"] != loaded.family:
        raise InputError(f"{out} is an atlas of {m['model']}, not of {loaded.name}; give another --out.")
    asked = dict(corpus=corpus_path, length=length, top=top, samples=samples)
    if bool(m.get("chat", False)) != bool(chat):
        raise InputError(f"{out} was built {'with' if m.get('chat') else 'without'} --chat; give the same options "
                         "to resume it, or another --out.")
    for key, value in asked.items():
        if m[key] != value:
            raise InputError(f"{out} was built with {key} {m[key]}, not {value}; give the same options to resume "
                             "it, or another --out.")
    if m["corpus_fingerprint"] != fingerprint(corpus_path):
        raise InputError(f"The corpus {corpus_path} changed since {out} was started; give another --out.")


@torch.no_grad()
def add_document(state: AtlasState, adapter, framed, kind: str, doc: int, norms: HeadNorms) -> None:
    """One document's recorded forward folded into ``state``."""
    norms.norms.clear()
    calls = record(adapter, framed, kind, norms)
    ids = side_ids(framed, kind)
    tokens = framed.source_tokens if QUERY_SIDE[kind] == "source" else framed.target_tokens
    T = len(ids)
    act = torch.stack([norms.norms[layer] for layer in range(len(calls))]).cpu().numpy()   # (L, H, T)
    a = state.arrays
    a["act.sum"] += act.sum(-1, dtype=np.float64)
    a["act.count"] += T
    ids_np = np.asarray(ids, np.int64)
    windows = _windows(ids_np)                                                   # (T, WINDOW)
    new_top = _merge_top(a, act, doc, windows)                                   # (l, h, slot, pos) rows
    new_sample = _merge_sample(a, state.meta["samples"], doc, T, ids_np, windows)   # (slot, pos)
    for slot, pos in new_sample:
        a["sample.act"][:, :, slot] = act[:, :, pos]
    kept = set(int(t) for t in windows[[p for *_, p in new_top] + [p for _, p in new_sample]].ravel() if t >= 0)
    first = {t: i for i, t in reversed(list(enumerate(ids)))}
    state.tokens.update({t: tokens[first[t]] for t in kept if t not in state.tokens})
    sim_rows = similarity_rows(doc, T)
    whole = torch.zeros(len(calls), calls[0].q.shape[1], len(sim_rows), calls[0].k.shape[2],
                        device=calls[0].q.device)                               # (L, H, n, Tk) rows read in every head
    for layer, call in enumerate(calls):
        _layer_pass(state, call, layer, ids_np, new_top, new_sample, (sim_rows, whole[layer]))
    fold_gram(a, whole)
    state.meta["tokens_done"] = int(state.meta["tokens_done"]) + T


def _windows(ids: np.ndarray) -> np.ndarray:
    """(T, WINDOW) the tokens around each position (-1 past the ends), the query at WINDOW // 2."""
    T = len(ids)
    at = np.arange(T)[:, None] + np.arange(WINDOW)[None, :] - WINDOW // 2
    return np.where((at >= 0) & (at < T), ids[np.clip(at, 0, T - 1)], -1)


def _merge_top(a: dict, act: np.ndarray, doc: int, windows: np.ndarray) -> list[tuple[int, int, int, int]]:
    """The kept top contexts of every head and this document's rows, ranked by activation
    (larger first; equal ones by document, then position): the heap as a sorted array."""
    L, H, K = a["top.value"].shape
    T = act.shape[-1]
    values = np.concatenate([a["top.value"], act.astype(np.float32)], -1)       # (L, H, K + T)
    order = np.argsort(-values, axis=-1, kind="stable")[..., :K]                # old ones first among equals
    old = np.minimum(order, K - 1)
    fresh = order >= K
    for name in ("top.value", "top.doc", "top.pos", "top.keys", "top.weights", "top.window"):
        arr = a[name]
        idx = old.reshape(L, H, K, *([1] * (arr.ndim - 3)))
        a[name] = np.take_along_axis(arr, np.broadcast_to(idx, (L, H, K, *arr.shape[3:])), 2)
    a["top.keys"][fresh], a["top.weights"][fresh] = -1, 0.0
    pos = np.where(fresh, order - K, -1)
    a["top.value"] = np.take_along_axis(values, order, -1)
    out = []
    for l, h, slot in zip(*np.nonzero(fresh)):
        p = int(pos[l, h, slot])
        a["top.doc"][l, h, slot], a["top.pos"][l, h, slot] = doc, p
        a["top.window"][l, h, slot] = windows[p]
        out.append((int(l), int(h), int(slot), p))
    return out


_PER_ROW = ("sample.priority", "sample.doc", "sample.pos", "sample.token", "sample.window")   # (M, ...)


def _merge_sample(a: dict, M: int, doc: int, T: int, ids: np.ndarray, windows: np.ndarray) -> list[tuple[int, int]]:
    """The shared sample of query rows: the M lowest priorities so far (bottom-k, uniform)."""
    pri = np.random.default_rng([SAMPLE_SEED, doc]).random(T)
    allp = np.concatenate([a["sample.priority"], pri])
    order = np.argsort(allp, kind="stable")[:M]
    old, fresh = np.minimum(order, M - 1), order >= M
    for name in [k for k in a if k.startswith("sample.")]:
        a[name] = np.take(a[name], old, axis=0 if name in _PER_ROW else 2)
    a["sample.keys"][:, :, fresh], a["sample.weights"][:, :, fresh] = -1, 0.0
    a["sample.priority"] = allp[order]
    out = []
    for slot in np.flatnonzero(fresh):
        p = int(order[slot] - M)
        a["sample.doc"][slot], a["sample.pos"][slot], a["sample.token"][slot] = doc, p, ids[p]
        a["sample.window"][slot] = windows[p]
        out.append((int(slot), p))
    return out


def _layer_pass(state: AtlasState, call, layer: int, ids: np.ndarray, new_top, new_sample, similar) -> None:
    """Every statistic of every head of one layer, a block of query rows at a time, and the
    strongest keys of the rows kept (top contexts, sample), with their queries and keys."""
    a, n = state.arrays, state.meta["length"]
    dev = call.q.device
    _, H, tq, _ = call.q.shape
    tk = call.k.shape[2]
    offset = tk - tq
    root = math.sqrt(call.scale)
    dh = call.q.shape[3]                                                        # this layer's own (Gemma 4)
    for slot, pos in new_sample:                                                # (H, Dh) each, as in q.k * scale
        a["sample.q"][layer, :, slot, :dh] = (call.q[0, :, pos].float() * root).cpu().numpy()
        kv = torch.arange(H, device=dev) // call.group
        a["sample.k"][layer, :, slot, :dh] = (call.k[0, kv, pos + offset].float() * root).cpu().numpy()
    mine = [(h, pos, slot) for l, h, slot, pos in new_top if l == layer]
    wanted = {"top": tuple(np.array(col, np.int64) for col in zip(*mine))} if mine else {}
    if new_sample:                     # every head of each new sample row, built as arrays (not H x M tuples)
        slots, at = (np.array(col, np.int64) for col in zip(*new_sample))
        wanted["sample"] = (np.tile(np.arange(H), len(at)), np.repeat(at, H), np.repeat(slots, H))
    listed = statistics.atlas_statistics()
    S = len(listed)
    vals = torch.zeros(S, H, tq, device=dev)                                     # each row's value of each statistic
    valid = torch.ones(S, tq, dtype=torch.bool, device=dev)                      # the rows each one counts
    lse_all = call.lse[0].float() if call.lse is not None else None
    causal = _causal(call)
    groups = token_groups(ids)
    sim_rows, whole = similar                                                     # (n,), (H, n, Tk)
    r0 = 0
    while r0 < tq:
        if causal:
            r1 = min(tq, r0 + causal_rows(score_block_bytes(dev, "select") // (4 * H), r0 + offset))
            c = r1 + offset
        else:
            r1, c = min(tq, r0 + rows_per_block(dev, H * tk, "select")), tk
        s = call.scores(0, None, slice(r0, r1), slice(0, c))                    # (H, r, c)
        lse = lse_all[:, r0:r1] if lse_all is not None else call.log_denominators(s, 0, rows=slice(r0, r1))
        # log-weights, a masked cell's -inf held at -1e30 (its weight exp(-1e30) is exactly 0, and
        # 0 x -1e30 is 0): the entropy is then one dot product of weights and log-weights, no log
        logw = s.sub_(lse[..., None])          # a row with every key masked (padding) is NaN: all -1e30, weights 0
        logw = logw.clamp_min_(-1e30) if causal else logw.nan_to_num_(nan=-1e30, neginf=-1e30)
        w = torch.exp(logw)                                                       # (H, r, c) exact weights
        qpos = torch.arange(r0, r1, device=dev) + offset
        keys = torch.stack([torch.ones(c, device=dev), torch.arange(c, device=dev, dtype=torch.float32)], 1)
        pair_rows, pair_keys, has = copies(groups, r0, r1, offset)
        rows = Rows(qpos=qpos, keys=keys, causal=causal, copy_rows=torch.as_tensor(pair_rows, device=dev),
                    copy_keys=torch.as_tensor(pair_keys, device=dev), has_copy=torch.as_tensor(has, device=dev),
                    logw=logw)
        for i, stat in enumerate(listed):
            v, ok = stat.reduce(w, rows)                                         # (H, r), (r,) | None
            vals[i, :, r0:r1] = v
            if ok is not None:
                valid[i, r0:r1] = ok
        _strongest(a, w, r0, r1, wanted, layer)
        inside = np.flatnonzero((sim_rows >= r0) & (sim_rows < r1))
        if len(inside):
            whole[:, inside, :c] = w[:, sim_rows[inside] - r0]
        del s, logw, w
        r0 = r1
    _fold(a, layer, vals, valid, torch.tensor([st.upper(n) for st in listed], device=dev), listed)


def _fold(a: dict, layer: int, vals: torch.Tensor, valid: torch.Tensor, tops: torch.Tensor, listed: list) -> None:
    """One layer's row values (S, H, T) and the rows each statistic counts (S, T) into the
    running float64 sums, counts and histograms."""
    S, H, _ = vals.shape
    weight = valid.double()[:, None, :]                                           # (S, 1, T)
    sums = (vals.double() * weight).sum(-1)                                       # (S, H)
    counts = valid.sum(-1).double()                                               # (S,)
    bins = (vals / tops[:, None, None] * BINS).floor_().clamp_(0, BINS - 1).long()
    bins += torch.arange(S * H, device=vals.device).view(S, H, 1) * BINS
    hist = torch.bincount(bins.ravel(), weight.expand(S, H, -1).ravel(), minlength=S * H * BINS)
    hist = hist.view(S, H, BINS).cpu().numpy()
    sums, counts = sums.cpu().numpy(), counts.cpu().numpy()
    for i, stat in enumerate(listed):
        a[f"stat.{stat.name}.sum"][layer] += sums[i]
        a[f"stat.{stat.name}.count"][layer] += counts[i]
        a[f"stat.{stat.name}.hist"][layer] += hist[i]


def _causal(call) -> bool:
    """Whether no query of ``call`` sees a key after it: a causal call, or one whose boolean mask
    is the causal triangle (our GPT hands its triangle as a mask), checked once per mask."""
    if call.bias is not None:
        return False
    if call.mask is None:
        return call.causal
    m = call.mask
    if m.dtype != torch.bool or m.shape[-2:] != (call.q.shape[2], call.k.shape[2]):
        return False
    key = (m.data_ptr(), tuple(m.shape))
    if key not in _TRIANGLES:
        future = torch.ones(m.shape[-2:], dtype=torch.bool, device=m.device).triu_(1 + m.shape[-1] - m.shape[-2])
        _TRIANGLES.clear()
        _TRIANGLES[key] = not bool((m & future).any())
    return _TRIANGLES[key]


_TRIANGLES: dict = {}     # the last mask checked -> whether it hides every key after its query


def _strongest(a: dict, w: torch.Tensor, r0: int, r1: int, wanted: dict, layer: int) -> None:
    """The strongest keys (and their weights) of the kept rows that fall in this block."""
    for kind, (heads, rows, slots) in wanted.items():
        inside = (rows >= r0) & (rows < r1)
        if not inside.any():
            continue
        h, r, sl = heads[inside], rows[inside], slots[inside]
        k = min(STRONGEST, w.shape[-1])
        if kind == "sample":            # every head of each row (heads tiled, rows repeated): a slice, no gather
            H = w.shape[0]
            picked = w[:, torch.as_tensor(r[::H] - r0, device=w.device)].transpose(0, 1).reshape(-1, w.shape[-1])
        else:
            picked = w[torch.as_tensor(h, device=w.device), torch.as_tensor(r - r0, device=w.device)]   # (n, c)
        vals, cols = torch.topk(picked, k, dim=-1)                                # (n, k)
        a[f"{kind}.keys"][layer, h, sl, :k] = cols.cpu().numpy()
        a[f"{kind}.weights"][layer, h, sl, :k] = vals.cpu().numpy()
