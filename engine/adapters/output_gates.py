"""Gated attention outputs, found not named (issue 57).

Qwen3.5, Qwen3.5-MoE and Qwen3-Next multiply the heads' merged output by a gate before the
output projection: o_proj((p·v) ⊙ σ(g)), g read from the layer's input by the query
projection. The attention weights are still the softmax's (the seam's), but what each head
adds to the residual stream is its slice of the *gated* output through W_O. So where no
module's input equals the heads' merged output, the projection is the module whose input is
that output times a per-(token, channel) multiplier that does not depend on it.

That is asked of the model, never read off a family table: a second forward multiplies the
seam's output at each such site by a random power of two per element, r (exact in floating
point: it changes no rounding), and the projection is the one module whose input comes back
as its first-forward input times r, element by element. That proves the multiplier is
elementwise and independent of the heads' output (a matrix mixing channels, or a norm, would
not scale that way). The module is then handed its first-forward input, so everything after
it computes what the first forward did and the next sites are tested on the same stream.

Division (input / merged) is never used: it fails where the output is 0 and cannot tell a
gate from any other map. The per-head tools read and edit the projection's input itself
(engine.experiments.points, stream), so the gate is included exactly, never recomputed.
"""
from __future__ import annotations

import torch

from attnscope.engine.seam import SeamHook, hooks
from attnscope.engine.seam.gated import at_projection_input

POWERS = (0.5, 2.0, 4.0)      # never 1: every element of a gated input must move


class _Scaled(SeamHook):
    """The seam's output at ``sites`` times r (one power of two per element); r kept merged as
    the projection reads it: (B, Tq, Hq * Dv)."""

    def __init__(self, sites):
        self.sites, self.r, self.heads = set(sites), {}, {}
        self.generator = torch.Generator().manual_seed(57)

    def edits(self, site):
        return site in self.sites

    def edits_output_only(self, site):
        return True

    def output(self, call, out):                                  # (B, Hq, Tq, Dv)
        pick = torch.randint(len(POWERS), out.shape, generator=self.generator)
        r = torch.tensor(POWERS, dtype=out.dtype)[pick].to(out.device)
        self.r[call.site] = r.transpose(1, 2).flatten(2)
        self.heads[call.site] = out.shape[1]
        return out * r


@torch.no_grad()
def find_gates(forward, pending: dict, inputs: dict) -> dict:
    """{site: (projection module, heads)} for the ``pending`` sites (site -> candidate modules,
    each called once in the first forward with ``inputs[id(module)][0]``) whose projection
    reads the heads' output times an elementwise gate; ``forward()`` runs the probe again."""
    scaled, found = _Scaled(pending), {}
    by_module: dict[int, list] = {}
    for site, modules in pending.items():
        for m in modules:
            by_module.setdefault(id(m), []).append(site)

    def check(module, args):
        if not args or not isinstance(args[0], torch.Tensor):
            return None
        for site in by_module.get(id(module), []):
            r, first = scaled.r.get(site), inputs[id(module)][0]
            if site in found or r is None or args[0].shape != first.shape:
                continue
            if torch.allclose(args[0], first * r, rtol=1e-6, atol=0) and not torch.equal(args[0], first):
                found[site] = (module, scaled.heads[site])
                return (first, *args[1:])             # the rest of the forward as the first one ran
        return None

    handles = [at_projection_input(m, lambda args, m=m: check(m, args)) for ms in pending.values() for m in ms]
    try:
        with hooks(scaled):
            forward()
    finally:
        for h in handles:
            h.remove()
    return found
