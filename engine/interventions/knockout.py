"""Attention knockout (Geva et al., 2023): chosen query -> key edges get score -inf.

The other weights of a row renormalise through the softmax. Positions are absolute over
the ids fed: the hook counts the queries it has seen at each site, so a decoding session
that feeds one token a step blocks the same edges a full forward does (a sliding-window
layer's short cache holds the newest keys). ``marked`` puts the same blocked cells into a
recorded call's mask, so a trace drawn from the recording shows what was computed.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from engine.interventions.refs import Edge
from engine.kinds import CROSS
from engine.seam import AttentionCall, SeamHook, Site


class Knockout(SeamHook):
    def __init__(self, edges: tuple[Edge, ...]):
        self.edges = edges
        self.fed: dict[Site, int] = {}         # queries seen so far per site
        self.last: dict[Site, torch.Tensor] = {}   # the blocked cells (Tq, Tk) of the last call per site

    def _at(self, site: Site | None) -> list[Edge]:
        if site is None:
            return []
        return [e for e in self.edges if e.kind == site.kind and (e.layers is None or site.layer in e.layers)]

    def edits(self, site):
        return bool(self._at(site))

    def see(self, call):
        edges = self._at(call.site)
        if not edges:
            return
        start = self.fed.get(call.site, 0)
        self.fed[call.site] = start + call.q.shape[2]
        self.last[call.site] = blocked_cells(edges, call, start)

    def scores(self, call, s):                # s (B, H, Tq, Tk)
        return s.masked_fill(self.last[call.site], float("-inf"))

    def marked(self, calls: dict[Site, AttentionCall]) -> dict[Site, AttentionCall]:
        """Recorded calls with the knocked-out cells masked, as the forward used them."""
        return {s: with_blocked(c, self.last[s]) if s in self.last else c for s, c in calls.items()}


def blocked_cells(edges: list[Edge], call: AttentionCall, start: int) -> torch.Tensor:
    """(Tq, Tk) bool, True where an edge is blocked; queries are positions start .. start+Tq,
    self-attention keys end with the newest query (a KV cache, or a sliding window's)."""
    tq, tk, dev = call.q.shape[2], call.k.shape[2], call.q.device
    qpos = torch.arange(start, start + tq, device=dev)
    first_key = 0 if call.site.kind == CROSS else max(0, start + tq - tk)
    kpos = torch.arange(first_key, first_key + tk, device=dev)
    def hit(pos: torch.Tensor, wanted) -> torch.Tensor:      # (n,) bool: positions among ``wanted`` (None: all)
        return torch.ones_like(pos, dtype=torch.bool) if wanted is None else torch.isin(pos, torch.tensor(wanted, device=dev))

    out = torch.zeros(tq, tk, dtype=torch.bool, device=dev)
    for e in edges:
        out |= hit(qpos, e.queries)[:, None] & hit(kpos, e.keys)[None, :]
    return out


def with_blocked(call: AttentionCall, blocked: torch.Tensor) -> AttentionCall:
    """``call`` whose mask also forbids ``blocked`` (Tq, Tk): a float mask gets -inf there, a
    boolean (or causal) one False; every other term stays as it was."""
    tq, tk = blocked.shape
    mask = call.mask
    if mask is not None and mask.dtype != torch.bool:
        return replace(call, mask=mask.masked_fill(blocked, float("-inf")))
    keep = ~blocked
    if call.causal:
        keep = keep & torch.ones(tq, tk, dtype=torch.bool, device=keep.device).tril(tk - tq)
    return replace(call, mask=keep[None, None] if mask is None else mask & keep, causal=False)
