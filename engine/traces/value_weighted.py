"""Value-weighted attention (Kobayashi et al., 2020): how much each key moves the output.

A head's output at query i is sum_j alpha_ij f(x_j) with f(x_j) = (x_j W_V + b_V) W_O^h:
the value the head reads (its bias included: the recorded v) carried through the head's
slice of the output projection. ||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)|| says how far key j
actually moves the output, which a large weight on a small vector (a sink token) does not.
W_O^h comes from the adapter (``output_projection``): the family knows its projection.
The trace shown divides each row by its sum, so rows read as shares (0..1) like weights.
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.inputs import InputError
from attnscope.engine.seam import AttentionCall
from attnscope.engine.traces import reading
from attnscope.engine.traces.base import AttentionTrace, TraceDefaults, array_block
from attnscope.engine.traces.capabilities import FasterPaths


def head_vectors(call: AttentionCall, w_out: torch.Tensor, head: int, b: int = 0) -> torch.Tensor:
    """f(x_j) of one head for every key j: (Tk, D) = v_j (Dv,) @ W_O^h.T, W_O (D, Hq * Dv)."""
    v = call.v[b, call.kv_head(head)].float()                       # (Tk, Dv)
    dv = v.shape[-1]
    return v @ w_out[:, head * dv:(head + 1) * dv].float().T          # (Tk, D)


@torch.no_grad()
def value_norms(call: AttentionCall, w_out: torch.Tensor, b: int = 0) -> torch.Tensor:
    """||f(x_j)|| per head and key: (Hq, Tk) float32."""
    return torch.stack([head_vectors(call, w_out, h, b).norm(dim=-1) for h in range(call.q.shape[1])])


class ValueWeightedTrace(TraceDefaults):
    """A trace whose rows are alpha_ij ||f(x_j)||, each row divided by its sum; everything else
    (kinds, tokens, notes) is the weights trace's."""

    def __init__(self, base: AttentionTrace, norms: dict[str, np.ndarray]):
        self.base = base
        self.norms = norms                               # kind -> (L, H, Tk) float32
        self.model_name, self.family = base.model_name, base.family
        self.source_tokens, self.target_tokens = base.source_tokens, base.target_tokens
        self.notes = list(base.notes) + ["Value-weighted attention: alpha_ij ||f(x_j)|| with f(x_j) = (x_j W_V + b_V) "
                                          "W_O^h, each row divided by its sum (Kobayashi et al., 2020)."]

    @property
    def kinds(self) -> list[str]:
        return self.base.kinds

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        return self.base.shape(kind)

    def block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice) -> torch.Tensor:
        """(h, r, c) on the host, from the layer (a row's share needs every key of the row)."""
        return array_block(self._layer(kind, layer), heads, rows, cols)

    @property
    def faster(self) -> FasterPaths:
        """A layer is computed whole from the weights trace's layer: every view reads it there."""
        return FasterPaths(layer=self._layer)

    def _layer(self, kind: str, layer: int) -> np.ndarray:
        """(H, Tq, Tk) each row alpha_ij ||f(x_j)||, divided by its sum."""
        w = reading.layer(self.base, kind, layer) * self.norms[kind][layer][:, None, :]     # (H, Tq, Tk)
        total = w.sum(-1, keepdims=True)
        return np.divide(w, total, out=np.zeros_like(w), where=total > 0).astype(np.float32, copy=False)


@torch.no_grad()
def value_weighted(trace, calls: dict, adapter) -> ValueWeightedTrace:
    """``trace`` (from the recorded ``calls``: kind -> calls by layer, values kept) as value-weighted
    attention; W_O of each site from ``adapter.output_projection``."""
    gated = list(adapter.gated_projections())
    if gated:         # the output is sum_j alpha_ij (v_j ⊙ g_i) W_O: each query scales each value its own way
        raise InputError(f"{adapter.loaded.name}: the heads of {gated[0]} reach their output projection through "
                         "a gate read from each query, so a key's value has no one norm and value-weighted "
                         "attention cannot be drawn (their weights can).")
    norms = {}
    for kind, layer_calls in calls.items():
        tk = trace.shape(kind)[3]
        norms[kind] = np.stack([value_norms(c, adapter.output_projection(c.site)[0])[:, :tk].cpu().numpy()
                                for c in layer_calls]).astype(np.float32)
    return ValueWeightedTrace(trace, norms)
