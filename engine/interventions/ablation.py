"""Head ablation: a head's output removed (zero) or replaced by its mean over the text.

Why at the seam's ``output``: the heads' outputs (B, Hq, Tq, Dv) are what the output
projection mixes; zeroing head h there is exactly zeroing h's slice of W_O's input columns,
and the fused kernel still runs (``edits_output_only``). The mean of a head is taken over
the positions of the first call at its site (the whole text in a Run; a decoding session
first runs the text once for it) and kept for the calls that follow (one new token per step).
"""
from __future__ import annotations

import torch

from attnscope.engine.interventions.refs import ZERO, HeadRef
from attnscope.engine.seam import SeamHook, Site


class HeadAblation(SeamHook):
    def __init__(self, modes: dict[HeadRef, str]):
        self.at: dict[Site, list[tuple[int, str]]] = {}
        for ref, mode in modes.items():
            self.at.setdefault(Site(ref.kind, ref.layer), []).append((ref.head, mode))
        self.means: dict[tuple[Site, int], torch.Tensor] = {}     # (site, head) -> (Dv,)

    @property
    def takes_means(self) -> bool:
        """True when some head is mean-ablated (its mean is taken from the first call it sees)."""
        return any(mode != ZERO for heads in self.at.values() for _, mode in heads)

    def edits(self, site):
        return site in self.at

    def edits_output_only(self, site):
        return True

    def output(self, call, out):                                  # out (B, Hq, Tq, Dv)
        out = out.clone()
        for head, mode in self.at[call.site]:
            if mode == ZERO:
                out[:, head] = 0
                continue
            key = (call.site, head)
            if key not in self.means:
                self.means[key] = out[:, head].mean(dim=(0, 1))   # over the text's positions
            out[:, head] = self.means[key]
        return out
