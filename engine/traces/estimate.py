"""How much a Run needs, known before its forward: refused with the numbers when it cannot fit.

A Run keeps, per attention site, the queries and keys the model computed (linear in the
text's length: the recording), plus the forward's own working memory; a trace small enough
(engine.traces.recorded.DENSE_LIMIT_BYTES) is also densified. The recording's bytes per
token are read off one tiny recorded forward of the model (cached per model), so the
estimate knows grouped-query attention, head sizes and dtypes without a table of families.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from engine.inputs import InputError
from engine.kinds import KEY_SIDE, QUERY_SIDE
from engine.loading.validation import MEMORY_SHARE, available_memory, gib
from engine.seam import recording
from engine.traces.recorded import DENSE_LIMIT_BYTES


class RunTooLarge(InputError):
    """A Run that would not fit in memory, said with the numbers before anything runs."""


@dataclass
class RunEstimate:
    tokens: dict[str, int]     # side -> tokens ("source", "target")
    recording: int             # bytes of the recorded queries and keys
    working: int               # bytes the forward itself needs at its peak (activations)
    dense: int                 # bytes of every head of every kind as float32
    free: int                  # bytes free where the recording will live (the model's GPU, or this machine)
    where: str = "in memory"   # that place, as the refusal says it ("on cuda:0")

    @property
    def densify(self) -> bool:
        return self.dense <= DENSE_LIMIT_BYTES

    @property
    def need(self) -> int:
        return self.recording + self.working + (self.dense if self.densify else 0)

    @property
    def fits(self) -> bool:
        return self.need <= MEMORY_SHARE * self.free

    def describe(self) -> str:
        n = max(self.tokens.values())
        held = "every head computed at once" if self.densify else (
            f"heads computed when drawn; all at once would be {gib(self.dense)}")
        return (f"{n:,} tokens: recording {gib(self.recording)}, forward {gib(self.working)}, {held}; "
                f"about {gib(self.need)} in all, {gib(self.free)} free {self.where}")


@dataclass
class _PerToken:
    q: dict[str, int]          # kind -> bytes of queries per query token, summed over layers
    k: dict[str, int]          # kind -> bytes of keys per key token, summed over layers
    width: int                 # the widest query projection (heads x head size), for activations
    heads: dict[str, int]      # kind -> layers x heads (for the dense size)
    sites: dict                # Site -> its query heads (interventions are checked against them)


@torch.no_grad()
def _per_token(adapter) -> _PerToken:
    cached = adapter.__dict__.get("_per_token")
    if cached is None:
        ids = adapter.plain_token_ids()[:4]
        framed, _ = adapter.frame_ids(ids)
        with recording() as rec:
            adapter.forward(framed)
        q, k, heads, width = {}, {}, {}, 0
        sites = {site: call.q.shape[1] for site, call in rec.calls.items()}
        for site, call in rec.calls.items():
            q[site.kind] = q.get(site.kind, 0) + call.q.nbytes // call.q.shape[2]
            k[site.kind] = k.get(site.kind, 0) + call.k.nbytes // call.k.shape[2]
            heads[site.kind] = heads.get(site.kind, 0) + call.q.shape[1]
            width = max(width, call.q.shape[1] * call.q.shape[3])
        cached = adapter.__dict__["_per_token"] = _PerToken(q, k, width, heads, sites)
    return cached


def site_heads(adapter) -> dict:
    """Every attention site of ``adapter``'s model and its query heads (Site -> heads), from the
    same tiny recorded forward the estimates read (kept per model)."""
    return _per_token(adapter).sites


def estimate_run(adapter, framed) -> RunEstimate:
    """What a Run of ``framed`` (engine.adapters.Framed) will take."""
    per = _per_token(adapter)
    sides = {"source": len(framed.source_ids), "target": len(framed.target_ids)}
    rec = sum(per.q[kind] * sides[QUERY_SIDE[kind]] + per.k[kind] * sides[KEY_SIDE[kind]] for kind in per.q)
    dense = sum(per.heads[kind] * sides[QUERY_SIDE[kind]] * sides[KEY_SIDE[kind]] * 4 for kind in per.heads)
    # The forward's peak: a few hidden-sized activations per token (attention in, out, MLP),
    # float32 or the model's dtype, whatever its depth (layers run one after another).
    working = 16 * per.width * max(sides.values()) * 4
    free, where = free_where(adapter.device)
    return RunEstimate({s: n for s, n in sides.items() if n}, rec, working, dense, free, where)


def free_where(device) -> tuple[int, str]:
    """(bytes free, where) for work on ``device``: a GPU's own free memory (a recording lives
    where the model runs: 128k tokens of a 1B model record 10 GB on the GPU, whatever the
    host has), else this machine's."""
    from engine.runtime.blocks import free_bytes

    free = free_bytes(device)
    return (available_memory(), "in memory") if free is None else (free, f"on {device}")


def check_run(adapter, framed, name: str) -> RunEstimate:
    """The estimate, or RunTooLarge naming the numbers when it does not fit."""
    est = estimate_run(adapter, framed)
    if not est.fits:
        raise RunTooLarge(f"A Run of {name} on this text would not fit {est.where}: {est.describe()}. "
                          "Shorten the text, or run on a machine (or GPU) with more memory.")
    return est


def check_decoding(adapter, prompt_tokens: int, new_tokens: int, beams: int, name: str) -> int:
    """Bytes a decoding session's cache will reach (keys and values of every layer for the
    prompt and every token it may add, per beam, plus one prefill's working memory);
    RunTooLarge naming the numbers when that does not fit."""
    per = _per_token(adapter)
    total = prompt_tokens + new_tokens
    cache = 2 * sum(per.k.values()) * total * max(1, beams)
    need = cache + 16 * per.width * prompt_tokens * 4
    free = available_memory()
    if need > MEMORY_SHARE * free:
        raise RunTooLarge(f"Decoding {name} from a {prompt_tokens:,}-token prompt for up to {new_tokens:,} tokens "
                          f"({max(1, beams)} beam(s)) would need about {gib(need)} (its cache {gib(cache)}), and "
                          f"{gib(free)} is free. Shorten the text or ask for fewer tokens or beams.")
    return need


@dataclass
class DrawEstimate:
    """What drawing some heads of one kind of a trace will compute, and about how long it takes."""
    heads: int                 # heads whose every weight is computed
    queries: int
    keys: int
    cells: int                 # scores computed (a causal map: its lower triangle)
    seconds: float             # at the rate measured on this trace's device, now
    device: str

    def describe(self) -> str:
        took = f"{self.seconds:,.0f} s" if self.seconds < 120 else f"{self.seconds / 60:,.1f} min"
        return (f"{self.heads:,} head{'s' if self.heads != 1 else ''} x {self.queries:,} x {self.keys:,} positions, "
                f"{self.cells / 1e9:,.2f} billion scores: about {took} on {self.device}")


SAMPLE_CELLS = 1 << 23          # scores timed for the rate (8 M: a few ms, past the timer's noise)
SAMPLE_BLOCK_BYTES = 4 << 20    # scores computed at once while timing (the overview's block on a CPU)


@torch.no_grad()
def estimate_drawing(trace, kind: str, heads: int) -> DrawEstimate:
    """Time to compute every weight of ``heads`` heads of ``kind`` (a view drawing a long
    recording pools or ranks each of them whole: the overview every head, Head detail and
    Head lines one), measured, not guessed: the first query rows of this trace's first layer
    go through the overview's own steps (scores a block of rows at a time, each row's
    log-sum-exp where the recording lacks it, pooling), and the rest is scaled from them.
    Nothing to compute for a trace held whole (small, or read from an export): 0 s."""
    _layers, n_heads, tq, tk = trace.shape(kind)
    calls = getattr(trace, "calls", None)
    if calls is None or kind in getattr(trace, "_dense", {}):
        return DrawEstimate(heads, tq, tk, 0, 0.0, "cpu")
    call = calls[kind][0]
    # The overview scores a causal map's lower triangle only when the kernel's log-sum-exp is known.
    halved = call.causal and call.lse is not None and call.mask is None and call.bias is None
    cells = heads * tq * tk // (2 if halved else 1)
    rows = max(1, min(tq, SAMPLE_CELLS // max(1, n_heads * tk)))
    chunk = max(1, SAMPLE_BLOCK_BYTES // (n_heads * max(1, tk) * 4))
    best = float("inf")
    for _ in range(3):                     # the best of three: the first pays for warming up, a busy machine varies
        started = time.perf_counter()
        for r0 in range(0, rows, chunk):
            _overview_block(call, trace.batch_index, slice(r0, min(rows, r0 + chunk)), tk)
        if call.q.is_cuda:
            torch.cuda.synchronize(call.q.device)
        best = min(best, time.perf_counter() - started)
    rate = n_heads * rows * tk / max(best, 1e-6)                                 # scores per second
    return DrawEstimate(heads, tq, tk, cells, cells / rate, str(call.q.device))


def _overview_block(call, b: int, rows: slice, tk: int) -> None:
    """One block of rows through the steps RecordedTrace.thumbnails takes (for timing)."""
    from engine.traces.pooling import block, pool_blocks

    s = call.scores(b, None, rows, None)                                        # (H, r, Tk)
    lse = torch.logsumexp(s, -1) if call.lse is None else call.lse[b][:, rows].float()   # (H, r)
    pool_blocks(s, block(tk, 256), "max").sub_(lse[..., None])
