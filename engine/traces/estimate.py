"""How much a Run needs, known before its forward: refused with the numbers when it cannot fit.

A Run keeps, per attention site, the queries and keys the model computed (linear in the
text's length: the recording), plus the forward's own working memory; a trace small enough
(engine.traces.recorded.DENSE_LIMIT_BYTES) is also densified. The recording's bytes per
token are read off one tiny recorded forward of the model (``Adapter.recorded_sizes``, kept
per model), so the estimate knows grouped-query attention, head sizes and dtypes without a
table of families. A dense-fallback model (engine.adapters.hf_dense: attention in its own
classes) records nothing: its Run holds every head whole, read from its own eager weights,
so its estimate is those (L, H, T, T) float32 weights twice (ours and eager's own copy in the
forward), at most EAGER_LIMIT_BYTES, and its refusal names the longest text that fits.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import torch

from attnscope.engine.kinds import KEY_SIDE, QUERY_SIDE
from attnscope.engine.runtime.free_memory import MEMORY_SHARE, RunTooLarge, gib
from attnscope.engine.traces.recorded import DENSE_LIMIT_BYTES
from attnscope.engine.inputs import check_kind
from attnscope.engine.loading.dense import SAID
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces import reading


EAGER_LIMIT_BYTES = 1 << 30    # the most a dense-fallback Run holds: its weights (float32) and eager's own copy


@dataclass
class RunEstimate:
    tokens: dict[str, int]     # side -> tokens ("source", "target")
    recording: int             # bytes of the recorded queries and keys
    working: int               # bytes the forward itself needs at its peak (activations)
    dense: int                 # bytes of every head of every kind as float32
    free: int                  # bytes free where the recording will live (the model's GPU, or this machine)
    where: str = "in memory"   # that place, as the refusal says it ("on cuda:0")
    eager: bool = False        # a dense-fallback model: every head held whole, from its own eager weights
    longest: int | None = None  # the dense fallback: the most tokens a text may have to fit (else not worked out)

    @property
    def densify(self) -> bool:
        return self.eager or self.dense <= DENSE_LIMIT_BYTES

    @property
    def need(self) -> int:
        return self.recording + self.working + (self.dense if self.densify else 0)

    @property
    def room(self) -> float:
        """The bytes a Run may take: a share of the free memory (and for the dense fallback, its cap)."""
        share = MEMORY_SHARE * self.free
        return min(share, EAGER_LIMIT_BYTES) if self.eager else share

    @property
    def fits(self) -> bool:
        return self.need <= self.room

    def describe(self) -> str:
        n = max(self.tokens.values())
        if self.eager:
            return (f"{n:,} tokens: every head held whole, from the model's own weights, {gib(self.dense)}; "
                    f"forward (with eager's own copy) {gib(self.working)}; about {gib(self.need)} in all, "
                    f"{gib(self.free)} free {self.where}, and the dense fallback holds at most "
                    f"{gib(EAGER_LIMIT_BYTES)}")
        held = "every head computed at once" if self.densify else (
            f"heads computed when drawn; all at once would be {gib(self.dense)}")
        return (f"{n:,} tokens: recording {gib(self.recording)}, forward {gib(self.working)}, {held}; "
                f"about {gib(self.need)} in all, {gib(self.free)} free {self.where}")


def estimate_run(adapter, framed) -> RunEstimate:
    """What a Run of ``framed`` (engine.adapters.Framed) will take, from the adapter's facts."""
    return estimate_from(adapter.run_facts(), framed)


def estimate_from(facts, framed) -> RunEstimate:
    """What a Run of ``framed`` will take, from ``facts`` (engine.adapters.base.RunFacts: asked of
    the adapter once, so the estimate never calls back into the adapter, the model or the device)."""
    if facts.eager is not None:
        return _estimate_eager(facts, framed)
    per = facts.sizes
    sides = {"source": len(framed.source_ids), "target": len(framed.target_ids)}
    rec = sum(per.q[kind] * sides[QUERY_SIDE[kind]] + per.k[kind] * sides[KEY_SIDE[kind]] for kind in per.q)
    # A sparse attention's layers each keep their own (Tq, Tk) mask of the keys picked.
    rec += sum(cell * sides[QUERY_SIDE[kind]] * sides[KEY_SIDE[kind]] for kind, cell in per.masks.items())
    dense = sum(per.heads[kind] * sides[QUERY_SIDE[kind]] * sides[KEY_SIDE[kind]] * 4 for kind in per.heads)
    # The forward's peak: a few hidden-sized activations per token (attention in, out, MLP),
    # float32 or the model's dtype, whatever its depth (layers run one after another).
    working = 16 * per.width * max(sides.values()) * 4
    return RunEstimate({s: n for s, n in sides.items() if n}, rec, working, dense, facts.free, facts.where)


def _estimate_eager(facts, framed) -> RunEstimate:
    """The dense fallback's Run (engine.adapters.hf_dense): no recording; its (L, H, T, T) float32
    weights held, eager's own copy and a few hidden-sized activations per token in the forward."""
    layers, heads, width = facts.eager
    side = facts.side
    n = len(framed.source_ids if side == "source" else framed.target_ids)
    per_cell, per_token = layers * heads * 4, 16 * width * 4       # bytes per (query, key) cell; per token
    free, where = facts.free, facts.where
    est = RunEstimate({side: n}, 0, per_cell * n * n + per_token * n, per_cell * n * n, free, where, eager=True)
    # need(T) = 2 a T^2 + b T <= room: the largest whole T
    a, b = 2 * per_cell, per_token
    longest = int((-b + math.sqrt(b * b + 4 * a * max(est.room, 0))) / (2 * a))
    while longest > 0 and 2 * per_cell * longest ** 2 + per_token * longest > est.room:
        longest -= 1
    est.longest = longest
    return est


def check_run(facts, framed, name: str) -> RunEstimate:
    """The estimate from ``facts`` (``Adapter.run_facts``), or RunTooLarge naming the numbers when
    it does not fit."""
    est = estimate_from(facts, framed)
    if not est.fits:
        if est.eager:
            remedy = f"Shorten the text to at most {est.longest:,} tokens: {SAID}."
        else:
            remedy = "Shorten the text, or run on a machine (or GPU) with more memory."
        raise RunTooLarge(f"A Run of {name} on this text would not fit {est.where}: {est.describe()}. {remedy}")
    return est


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
        return (f"{self.heads:,} head{'s' if self.heads != 1 else ''} x {self.queries:,} x {self.keys:,} positions, "
                f"{self.cells / 1e9:,.2f} billion scores: about {duration(self.seconds)} on {self.device}")


def duration(seconds: float) -> str:
    """Seconds as an estimate says them: tenths below 10 s, whole seconds below 2 min, then minutes,
    and hours past two (a file of pairs can run for days)."""
    return (f"{seconds:.1f} s" if seconds < 10 else f"{seconds:,.0f} s" if seconds < 120
            else f"{seconds / 60:,.1f} min" if seconds < 7200 else f"{seconds / 3600:,.1f} h")


SAMPLE_CELLS = {"cpu": 1 << 24, "gpu": 1 << 31}   # scores the timed sample computes (CPU: ~0.1 s; a GPU: past its launch costs)


@torch.no_grad()
def estimate_drawing(trace, kind: str, heads: int) -> DrawEstimate:
    """Time to compute every weight of ``heads`` heads of ``kind`` (a view drawing a long
    recording pools or ranks each of them whole: the overview every head, Head detail and
    Head lines one), measured, not guessed: the leading block of this trace's first layer
    (its first queries and keys, a causal map's own top-left corner) is pooled by the
    overview's own code, on the trace's device with its block sizes and kernels, and the
    whole is scaled from it by its count of scores. Nothing to compute for a trace held whole
    (small, or read from an export): 0 s."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    import dataclasses

    from attnscope.engine.traces.recorded import RecordedTrace

    _layers, n_heads, tq, tk = trace.shape(kind)
    recording = trace.recording
    if recording is None or not recording.computes_on_demand(kind):
        return DrawEstimate(heads, tq, tk, 0, 0.0, "cpu")
    # A trace holding q of some rows only (a remote Run's, or its recording): timed on the rows
    # it holds, none brought for an estimate; with none held there is nothing it can compute.
    call = recording.held_call(kind, 0)
    if call is None:
        return DrawEstimate(heads, tq, tk, 0, 0.0, "cpu")
    side = int((SAMPLE_CELLS["gpu" if call.q.is_cuda else "cpu"] / n_heads) ** 0.5)
    nq, nk = (min(tq, side),) * 2 if QUERY_SIDE[kind] == KEY_SIDE[kind] else (min(tq, side), min(tk, side))
    if call.q.shape[2] < tq:
        nq = nk = min(nq, call.q.shape[2])                 # the rows held, and as many keys (a square)
    corner = lambda t, rows=True: None if t is None else t[..., :nq if rows and t.shape[-2] > 1 else None, :nk]  # noqa: E731
    sub = dataclasses.replace(call, q=call.q[:, :, :nq], k=call.k[:, :, :nk], v=None, mask=corner(call.mask),
                              bias=corner(call.bias), lse=None if call.lse is None else call.lse[..., :nq])
    tokens = {side_: [""] * n for side_, n in ((QUERY_SIDE[kind], nq), (KEY_SIDE[kind], nk))}
    sample = RecordedTrace({kind: [sub]}, model_name="", family="", source_tokens=tokens.get("source", []),
                           target_tokens=tokens.get("target", []), batch_index=trace.batch_index)
    timings: list[float] = []

    def timed() -> None:
        for _ in range(2):                 # the better of two: the first pays for warming up
            started = time.perf_counter()
            reading.thumbnails(sample, kind, 160)
            if call.q.is_cuda:
                torch.cuda.synchronize(call.q.device)
            timings.append(time.perf_counter() - started)
    # Timed on a thread of its own, as the views compute (a worker): on a busy CPU the main
    # thread's torch ops ran ten times slower than a worker's (7.1 min said, 20 s drawn).
    worker = threading.Thread(target=timed, name="attnscope-estimate")
    worker.start()
    worker.join()
    if not timings:
        raise RuntimeError("the drawing's estimate could not be timed")
    cells = heads * tq * tk
    return DrawEstimate(heads, tq, tk, cells, min(timings) * cells / (n_heads * nq * nk), str(call.q.device))
