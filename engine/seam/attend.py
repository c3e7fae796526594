"""``attend``: the one function every attention call of every model goes through.

Hooks are per thread of work (a ContextVar): a Run recording in a worker changes nothing
for a decoding session in another. The output is computed by torch's fused
``scaled_dot_product_attention`` unless a hook edits scores or weights, or the model soft-
caps its scores (no fused kernel does that): then the same maths is written out once here.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar

import torch
import torch.nn.functional as F

from engine.seam.call import AttentionCall, Site, softmax_rows

_HOOKS: ContextVar[tuple] = ContextVar("attnscope_seam_hooks", default=())


class SeamHook:
    """Sees every call (``see``) and, at the sites it ``edits``, may replace the pre-softmax
    scores (B, H, Tq, Tk), the weights (B, H, Tq, Tk) or the heads' outputs (B, H, Tq, Dv).
    The base class changes nothing: an empty intervention is bit-identical to none."""

    def see(self, call: AttentionCall) -> None:
        pass

    def edits(self, site: Site | None) -> bool:
        return False

    def scores(self, call: AttentionCall, scores: torch.Tensor) -> torch.Tensor:
        return scores

    def weights(self, call: AttentionCall, weights: torch.Tensor) -> torch.Tensor:
        return weights

    def output(self, call: AttentionCall, out: torch.Tensor) -> torch.Tensor:
        return out

    def edits_output_only(self, site: Site | None) -> bool:
        """True when this hook only replaces head outputs at ``site`` (the fused kernel still runs)."""
        return False

    wants_lse = False   # a hook that keeps each query's log-sum-exp asks the kernel for it

    def after(self, call: AttentionCall) -> None:
        """Called once the call's output is computed (``call.lse`` set when a hook wanted it)."""


@contextlib.contextmanager
def hooks(*new: SeamHook):
    """Install ``new`` for the calls made inside the block, in this thread of work only."""
    token = _HOOKS.set(_HOOKS.get() + tuple(new))
    try:
        yield new[0] if len(new) == 1 else new
    finally:
        _HOOKS.reset(token)


def attend(call: AttentionCall) -> torch.Tensor:
    """The call's output (B, Hq, Tq, Dv), after every active hook has seen and edited it."""
    active = _HOOKS.get()
    for h in active:
        h.see(call)
    editors = [h for h in active if h.edits(call.site)]
    dense = call.softcap is not None or any(not h.edits_output_only(call.site) for h in editors)
    if dense:
        out = _eager(call, editors)
    elif any(h.wants_lse for h in active) and _cpu_flash(call):
        out = _fused_with_lse(call)
    else:
        out = _fused(call)
    for h in editors:
        out = h.output(call, out)
    for h in active:
        h.after(call)
    return out


def _cpu_flash(call: AttentionCall) -> bool:
    """torch's CPU flash kernel computes each row's log-sum-exp as it goes and hands it back
    (float32, no mask but the causal flag: the long causal prompt, or a text with no padding)."""
    return (call.q.device.type == "cpu" and call.q.dtype == torch.float32 and call.bias is None
            and call.mask is None and call.dropout == 0.0
            and hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"))


def _fused_with_lse(call: AttentionCall) -> torch.Tensor:
    """The fused output, and ``call.lse`` (B, Hq, Tq): what a recorded trace needs to compute
    any block of weights exactly later without a pass over whole rows."""
    k, v = call.k, call.v
    if call.group > 1:
        k, v = k.repeat_interleave(call.group, dim=1), v.repeat_interleave(call.group, dim=1)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(call.q, k, v, 0.0, call.causal,
                                                                          scale=call.scale)
    call.lse = lse
    return out


def _fused(call: AttentionCall) -> torch.Tensor:
    mask, causal = call.mask, call.causal
    if call.bias is not None:
        mask, causal = call.additive(call.q.dtype), False      # the causal triangle is in the additive term
    elif mask is not None and mask.dtype != torch.bool:
        mask = mask.to(call.q.dtype)
    return F.scaled_dot_product_attention(call.q, call.k, call.v, attn_mask=mask, dropout_p=call.dropout,
                                          is_causal=causal, scale=call.scale, enable_gqa=call.group > 1)


def _eager(call: AttentionCall, editors) -> torch.Tensor:
    q, k, v = call.q, call.k, call.v
    if call.group > 1:
        k, v = k.repeat_interleave(call.group, dim=1), v.repeat_interleave(call.group, dim=1)
    s = (q @ k.transpose(-1, -2)) * call.scale                                   # (B, H, Tq, Tk)
    if call.softcap:
        s = call.softcap * torch.tanh(s / call.softcap)
    add = call.additive(s.dtype)
    if add is not None:
        s = s + add
    for h in editors:
        s = h.scores(call, s)
    w = softmax_rows(s.float()).to(q.dtype)
    for h in editors:
        w = h.weights(call, w)
    if call.dropout:
        w = F.dropout(w, p=call.dropout)
    return w @ v
