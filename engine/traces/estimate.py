"""How much a Run needs, known before its forward: refused with the numbers when it cannot fit.

A Run keeps, per attention site, the queries and keys the model computed (linear in the
text's length: the recording), plus the forward's own working memory; a trace small enough
(engine.traces.recorded.DENSE_LIMIT_BYTES) is also densified. The recording's bytes per
token are read off one tiny recorded forward of the model (cached per model), so the
estimate knows grouped-query attention, head sizes and dtypes without a table of families.
"""
from __future__ import annotations

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


@torch.no_grad()
def _per_token(adapter) -> _PerToken:
    cached = adapter.__dict__.get("_per_token")
    if cached is None:
        ids = adapter.plain_token_ids()[:4]
        framed, _ = adapter.frame_ids(ids)
        with recording() as rec:
            adapter.forward(framed)
        q, k, heads, width = {}, {}, {}, 0
        for site, call in rec.calls.items():
            q[site.kind] = q.get(site.kind, 0) + call.q.nbytes // call.q.shape[2]
            k[site.kind] = k.get(site.kind, 0) + call.k.nbytes // call.k.shape[2]
            heads[site.kind] = heads.get(site.kind, 0) + call.q.shape[1]
            width = max(width, call.q.shape[1] * call.q.shape[3])
        cached = adapter.__dict__["_per_token"] = _PerToken(q, k, width, heads)
    return cached


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
