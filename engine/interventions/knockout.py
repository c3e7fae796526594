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

from attnscope.engine.interventions.refs import Edge
from attnscope.engine.kinds import CROSS
from attnscope.engine.seam import AttentionCall, SeamHook, Site


class Knockout(SeamHook):
    def __init__(self, edges: tuple[Edge, ...]):
        self.edges = edges
        self.fed: dict[Site, int] = {}         # queries seen so far per site
        self.last: dict[Site, torch.Tensor] = {}   # the blocked cells (Tq, Tk) of the last call per site
        self.starved: dict[Site, set[int]] = {}    # query positions left no key at all, per site

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
        rows = keyless_rows(with_blocked(call, self.last[call.site]))
        if rows:
            self.starved.setdefault(call.site, set()).update(start + r for r in rows)

    def scores(self, call, s):                # s (B, H, Tq, Tk)
        return s.masked_fill(self.last[call.site], float("-inf"))

    def notes(self) -> list[str]:
        """What the user should know: a query whose every key was knocked out (with the mask it
        already had) attends to nothing, and its attention output there is zero."""
        by_positions: dict[tuple[str, tuple[int, ...]], list[int]] = {}
        for site, rows in sorted(self.starved.items(), key=lambda sr: (sr[0].kind, sr[0].layer)):
            by_positions.setdefault((site.kind, tuple(sorted(rows))), []).append(site.layer)
        out = []
        for (kind, rows), layers in by_positions.items():
            shown = ", ".join(map(str, rows[:8])) + (f" and {len(rows) - 8} more" if len(rows) > 8 else "")
            out.append(f"The knockout leaves {kind} query position{'s' if len(rows) > 1 else ''} {shown} no key to "
                       f"attend to in layer{'s' if len(layers) > 1 else ''} {', '.join(map(str, layers))}: "
                       "its attention output there is zero.")
        return out

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
        if wanted is None:
            return torch.ones_like(pos, dtype=torch.bool)
        if isinstance(wanted, range) and wanted.step == 1:  # a range as its two ends: never a tuple of its length
            return (pos >= wanted.start) & (pos < wanted.stop)
        return torch.isin(pos, torch.tensor(list(wanted), dtype=torch.long, device=dev))

    out = torch.zeros(tq, tk, dtype=torch.bool, device=dev)
    for e in edges:
        out |= hit(qpos, e.queries)[:, None] & hit(kpos, e.keys)[None, :]
    return out


def keyless_rows(call: AttentionCall) -> list[int]:
    """The query rows of ``call`` (its mask, causal flag and window as given) that may attend to
    no key at all: the knockout left them nothing. Linear in Tq x Tk bools, as the mask is."""
    tq, tk, dev = call.q.shape[2], call.k.shape[2], call.q.device
    keep = torch.ones(tq, tk, dtype=torch.bool, device=dev)
    if call.causal:
        keep &= keep.tril(tk - tq)
    if call.mask is not None:                # a sliding window is in the mask already
        allowed = call.mask if call.mask.dtype == torch.bool else call.mask > float("-inf")  # (B|1, H|1, Tq|1, Tk)
        keep &= allowed[0].any(0).expand(tq, tk)           # a row some head may still read is not keyless
    return (~keep.any(-1)).nonzero().flatten().tolist()


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
