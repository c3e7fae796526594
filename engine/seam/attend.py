"""``attend``: the one function every attention call of every model goes through.

Hooks are per thread of work (a ContextVar): a Run recording in a worker changes nothing
for a decoding session in another. The output is computed by torch's fused
``scaled_dot_product_attention`` unless a hook edits scores or weights, or the model soft-
caps its scores (no fused kernel does that): then the same maths is written out once here.
A call with attention sinks (``call.sink``) still runs fused: the kernel's output over the
keys is rescaled by exp(lse - lse with the sink), its share of each row, where the kernel
hands back each row's log-sum-exp; elsewhere the sink becomes one more key whose score is
the sink and whose value is 0 (``_sink_as_key``). Both are exact.

The ``Recorder`` is the hook that keeps each site's last call (queries, keys, mask and bias
as used): a Run records one forward and builds its trace from the recording; the neuron view
reads the same q and k; a decoding step reads its newest row. Memory is what the model
computed anyway (references, no copies): about layers x (q heads + kv heads) x T x head_dim x
bytes.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import replace

import torch
import torch.nn.functional as F

from attnscope.engine.seam.call import AttentionCall, Site, softmax_rows

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


class Recorder(SeamHook):
    """``calls[site]``: the last call seen at each site, detached (values kept if asked), with
    each query's log-sum-exp when ``lse`` is asked and the kernel gives it for free."""

    def __init__(self, keep_values: bool = False, lse: bool = False):
        self.keep_values = keep_values
        self.wants_lse = lse
        self.calls: dict[Site, AttentionCall] = {}

    def after(self, call: AttentionCall) -> None:
        """Kept once the call is computed, its log-sum-exp with it (when the kernel gave one): one
        visit to the call, not one to see it and another to add what the kernel found."""
        if call.site is not None:
            self.calls[call.site] = call.detached(self.keep_values)

    def kinds(self) -> list[str]:
        return list(dict.fromkeys(s.kind for s in self.calls))

    def layers(self, kind: str) -> list[AttentionCall]:
        """The calls of one kind, by layer."""
        found = sorted((s.layer, c) for s, c in self.calls.items() if s.kind == kind)
        return [c for _, c in found]


@contextlib.contextmanager
def recording(keep_values: bool = False, lse: bool = False):
    """``with recording() as rec: model(...)``: every attention call inside lands in ``rec``."""
    rec = Recorder(keep_values, lse)
    with hooks(rec):
        yield rec


def attend(call: AttentionCall) -> torch.Tensor:
    """The call's output (B, Hq, Tq, Dv), after every active hook has seen and edited it."""
    active = _HOOKS.get()
    for h in active:
        h.see(call)
    editors = [h for h in active if h.edits(call.site)]
    dense = call.softcap is not None or any(not h.edits_output_only(call.site) for h in editors)
    if dense:
        out = _eager(call, editors)
    elif call.sink is not None or any(h.wants_lse for h in active):
        out = _fused_with_lse(call)
    else:
        out = _fused(call)
    for h in editors:
        out = h.output(call, out)
    for h in active:
        h.after(call)
    return out


def _fused_with_lse(call: AttentionCall) -> torch.Tensor:
    """The fused output, and ``call.lse`` (B, Hq, Tq) where the device's kernel hands it back:
    what a recorded trace needs to compute any block of weights exactly later without a pass
    over whole rows. Where no kernel gives it (or a kernel refuses these inputs), the output
    is the plain fused one and the trace computes the log-sum-exp itself when first asked.
    A call with sinks: the output and the log-sum-exp with the sink's term (``_with_sink``),
    or, without a kernel's log-sum-exp, the fused output of the sink as one more key."""
    found = _kernel_with_lse(call)
    if found is not None:
        out, lse = found if call.sink is None else _with_sink(call, *found)
        call.lse = lse
        return out
    return _fused(call) if call.sink is None else _fused(_sink_as_key(call))


def _kernel_with_lse(call: AttentionCall) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(out (B, Hq, Tq, Dv), lse over the keys (B, Hq, Tq)) from the device's kernel, or None
    where it has none for these inputs or a row sees no key."""
    kernel = _LSE_KERNELS.get(call.q.device.type)
    if kernel is not None and call.dropout == 0.0:
        found = None
        if call.group > 1 and call.q.is_cuda:    # CUDA's kernels take grouped key/value heads as they are
            try:
                found = kernel(call, call.k, call.v)
            except RuntimeError:
                found = None
        if found is None:
            k, v = call.k, call.v
            if call.group > 1:                  # one key/value head per query head (copies)
                k, v = k.repeat_interleave(call.group, dim=1), v.repeat_interleave(call.group, dim=1)
            try:
                found = kernel(call, k, v)
            except RuntimeError:          # shapes, dtypes or alignments this kernel does not take
                found = None
        if found is not None:
            out, lse = found
            lse = lse[..., :call.q.shape[2]]                             # (B, Hq, Tq); some pad to 32 rows
            # A row with every key masked has no log-sum-exp, and kernels disagree on its output
            # (0 or NaN): such a call (padding) is left to the plain fused path, as without a hook.
            # Only a mask or bias can mask a whole row (asking waits for the GPU, once a layer).
            plain = call.mask is None and call.bias is None
            if plain or bool(torch.isfinite(lse).all()):
                return out, lse
    return None


def _with_sink(call: AttentionCall, out: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel's output and log-sum-exp over the keys -> those of the softmax with the sink's
    term: each row's denominator grows to exp(lse) + exp(sink), so its weights, and the output
    they mix, shrink by exp(lse - lse'); lse' = logaddexp(lse, sink) is what the trace reads."""
    total = torch.logaddexp(lse.float(), call.sink_logits(None))                # (B, Hq, Tq)
    share = (lse.float() - total).exp_()[..., None]                              # (B, Hq, Tq, 1)
    return (out.float() * share).to(out.dtype), total


def _sink_as_key(call: AttentionCall) -> AttentionCall:
    """``call`` with its sink as one more key, for a kernel that knows no sinks: each query gets
    one more dimension holding sink / scale and each key a 0 there; the last key is 0 but for a
    1 there and its value is 0. Its score is the sink, so it adds exp(sink) to each row's
    denominator and nothing to the output: exact. Copies q, k and v (linear in T); a mask
    gets one more column, and a causal call its triangle as a mask (the kernel's own flag
    would hide the new key from every query)."""
    q, k, v = call.q, call.k, call.v
    b, hq, tq, _ = q.shape
    tk = k.shape[2]
    extra = (call.sink_logits(None) / call.scale).to(q.dtype)[..., None].expand(b, hq, tq, 1)   # (B, Hq, Tq, 1)
    k = F.pad(k, (0, 1, 0, 1))                                                   # (B, Hkv, Tk + 1, Dh + 1)
    k[:, :, tk, -1] = 1
    mask = call.mask
    if call.causal:
        mask = ~call._future(slice(None))[None, None]                            # (1, 1, Tq, Tk) True = may attend
    if mask is not None:
        mask = F.pad(mask.expand(*mask.shape[:-1], tk), (0, 1), value=True if mask.dtype == torch.bool else 0.0)
    bias = None if call.bias is None else F.pad(call.bias.expand(*call.bias.shape[:-1], tk), (0, 1))
    return replace(call, q=torch.cat([q, extra], -1), k=k, v=F.pad(v, (0, 0, 0, 1)), mask=mask, bias=bias,
                   causal=False, sink=None)


def _cpu_lse_kernel(call: AttentionCall, k: torch.Tensor, v: torch.Tensor):
    """torch's CPU flash kernel computes each row's log-sum-exp as it goes (float32, no mask
    but the causal flag: the long causal prompt, or a text with no padding)."""
    if (call.q.dtype != torch.float32 or call.bias is not None or call.mask is not None
            or not hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu")):
        return None
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(call.q, k, v, 0.0, call.causal,
                                                                          scale=call.scale)
    return out, lse


def _cuda_lse_kernel(call: AttentionCall, k: torch.Tensor, v: torch.Tensor):
    """On CUDA: flash attention for a call with no mask and no bias in half precision (the
    causal LLM prompt); otherwise memory-efficient attention asked to compute the log-sum-exp,
    with the mask and bias as one additive term (float32 models too)."""
    q = call.q
    plain = call.mask is None and call.bias is None
    if plain and q.dtype in (torch.float16, torch.bfloat16) and q.shape[-1] <= 256:
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, call.causal, False,
                                                                      scale=call.scale)[:2]
        return out, lse
    bias = None if plain else _aligned(call.additive(q.dtype), q.shape[0], q.shape[1])
    out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, 0.0,
                                                                      plain and call.causal, scale=call.scale)[:2]
    return out, lse


def _aligned(bias: torch.Tensor, batch: int, heads: int) -> torch.Tensor:
    """(B|1, H|1, Tq, Tk) additive term -> (B, H, Tq, Tk) whose rows start on 16-element
    boundaries, as the memory-efficient kernel requires (a padded buffer, viewed to Tk)."""
    tk = bias.shape[-1]
    pad = (-tk) % 16
    if pad:
        bias = torch.nn.functional.pad(bias, (0, pad))[..., :tk]
    return bias.expand(batch, heads, bias.shape[-2], tk)


_LSE_KERNELS = {"cpu": _cpu_lse_kernel, "cuda": _cuda_lse_kernel}


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
    w = softmax_rows(s.float(), call.sink_logits(None)).to(q.dtype)
    for h in editors:
        w = h.weights(call, w)
    if call.dropout:
        w = F.dropout(w, p=call.dropout)
    return w @ v
