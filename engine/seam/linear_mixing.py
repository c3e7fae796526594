"""Linear-attention layers at the seam: what a gated delta net mixes its values with.

Why: a hybrid (Qwen3.5, Qwen3.5-MoE, Qwen3-Next, OLMo hybrid ...) has softmax layers, which reach
the seam through transformers' attention interface (hf_attention), and linear-attention layers,
which do not: their mixing is a module-level function of their modeling file,
``torch_chunk_gated_delta_rule(query, key, value, g, beta, ...)``. Its output is linear in the
values, o[t] = sum_s M[t, s] v[s] per head (Yang et al. 2024, "Gated Delta Networks"), so the
matrix M is the layer's *effective attention*: not a softmax (cells may be negative, rows need
not sum to 1), but exactly what the layer mixes its values with.

Here the function is wrapped once, in the modeling module that defines it (the model calls the
same function, with the same arguments; its output is handed back untouched). Each mixing
module learns its ``Site`` (kind EFFECTIVE, layers in call order) from one probe forward (the
calling module is the ``self`` of the frame that called the function: no hook on any module), and a
Recorder active during a forward keeps a ``MixingCall`` (q, k, g, beta, the flags, the function)
at that site. M is never rewritten from the paper: ``MixingCall.effective`` calls the model's own
function with the values replaced by one-hot columns (v = identity over a block of key
positions gives M[:, cols]); the probe checks M @ v against the function's output, layer by
layer, and a layer that does not match is said, and not drawn.
"""
from __future__ import annotations

import inspect
import sys
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

import torch

from attnscope.engine.kinds import EFFECTIVE
from attnscope.engine.seam.attend import _HOOKS
from attnscope.engine.seam.call import Site
from attnscope.engine.seam.recorder import Recorder

# The module-level functions of transformers' modeling files that mix a linear-attention layer's
# values, by name (the same name in every family that has one): each is wrapped where it is defined.
FUNCTIONS = ("torch_chunk_gated_delta_rule",)
# How far M @ v may be from the function's own output on the probe, as a share of its largest magnitude.
TOLERANCE = 1e-4
COLUMN_BYTES = 64 * 2**20      # one-hot values per call of the function, at most

_FOUND: ContextVar[list | None] = ContextVar("attnscope_mixing_discovery", default=None)


@dataclass
class MixingCall:
    """One gated-delta-net call as a recording keeps it; its ``weights`` are the effective attention."""
    site: Site | None
    q: torch.Tensor                  # (B, H, T, Dk) one per value head, before the function's l2norm and scale
    k: torch.Tensor                  # (B, H, T, Dk)
    g: torch.Tensor                  # (B, H, T) the log decay of each step
    beta: torch.Tensor               # (B, H, T) the delta rule's step size
    fn: object = None                # the model's own function (the one wrapped)
    options: dict = field(default_factory=dict)   # chunk_size, use_qk_l2norm_in_kernel as the model passed them
    v: torch.Tensor | None = None    # (B, H, T, Dv) kept when the recording keeps values
    # what the views and traces read of any call: an effective call is causal, and has no softmax terms
    causal: bool = True
    mask = None
    bias = None
    softcap = None
    sink = None
    lse = None
    window = None
    chosen = None
    scale: float = 1.0
    effective: bool = True

    group = 1

    def kv_head(self, head: int) -> int:
        return head

    def detached(self, keep_values: bool = False) -> "MixingCall":
        d = lambda t: None if t is None else t.detach()  # noqa: E731
        return replace(self, q=d(self.q), k=d(self.k), g=d(self.g), beta=d(self.beta),
                       v=d(self.v) if keep_values else None)

    @torch.no_grad()
    def mixing(self, b: int | None = 0, heads=None, rows=None, cols=None) -> torch.Tensor:
        """(h, r, c) float32: M[t, s] of ``heads`` for queries ``rows`` and keys ``cols``, from the model's
        own function run on one-hot values (the layer is causal: only the steps up to the last row run)."""
        b = 0 if b is None else b
        t_all = self.q.shape[2]
        heads = list(range(self.q.shape[1])) if heads is None else list(heads)
        r0, r1, _ = (rows or slice(None)).indices(t_all)
        c0, c1, _ = (cols or slice(None)).indices(t_all)
        r1, c1 = max(r0, r1), max(c0, c1)
        out = torch.zeros(len(heads), r1 - r0, c1 - c0, device=self.q.device)
        steps = r1                                                        # the steps the rows depend on
        pick = lambda x: x[b:b + 1, heads, :steps].transpose(1, 2).float()  # noqa: E731  (1, steps, h, ...)
        q, k, g, beta = pick(self.q), pick(self.k), pick(self.g), pick(self.beta)
        width = max(1, COLUMN_BYTES // (4 * max(1, steps) * max(1, len(heads)) * 8))
        for start in range(c0, min(c1, steps), width):
            stop = min(c1, steps, start + width)
            v = torch.zeros(1, steps, len(heads), stop - start, device=q.device)   # one-hot: column j is key start + j
            idx = torch.arange(start, stop, device=q.device)
            v[0, idx, :, idx - start] = 1.0
            o, _ = self.fn(q, k, v, g=g, beta=beta, initial_state=None, output_final_state=False, **self.options)
            out[:, :, start - c0:stop - c0] = o[0, r0:r1].float().permute(1, 0, 2)   # (h, r, c)
        return out

    def weights(self, b: int | None = 0, heads=None, rows=None) -> torch.Tensor:
        """(h, r, T) the effective attention of whole rows (what a recorded trace computes a layer from)."""
        return self.mixing(b, heads, rows, None)


def _wrap(original):
    """The model's own function, and around it: a recording keeps the call. No hook edits it (an ablation
    or knockout of an effective-attention layer is refused where interventions are checked,
    engine.interventions.spec)."""
    params = inspect.signature(original).parameters

    def wrapped(*args, **kwargs):
        out = original(*args, **kwargs)
        found, active = _FOUND.get(), _HOOKS.get()
        if found is None and not active:
            return out
        # the calling layer: the module whose forward called the function (no hook on any module)
        module = sys._getframe(1).f_locals.get("self")
        site = getattr(module, "attnscope_mixing_site", None)
        if found is None and site is None:
            return out
        bound = inspect.signature(original).bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        call = _call(original, site, a, params)
        if found is not None:
            found.append((module if isinstance(module, torch.nn.Module) else None, call, out))
            return out
        if a.get("initial_state") is not None and bool(a["initial_state"].abs().max() > 0):
            return out        # a step after a cache: its state folds in the past, no row of M to draw
        for hook in active:
            if isinstance(hook, Recorder):
                hook.calls[site] = call.detached(hook.keep_values)
        return out

    wrapped.attnscope_original = original
    wrapped.__wrapped__ = original
    return wrapped


def _call(fn, site, a: dict, params) -> MixingCall:
    """The bound arguments as a MixingCall: query/key repeated to one per value head (as the function does)."""
    q, k, v = a["query"], a["key"], a["value"]                             # (B, T, Hk|Hv, D)
    hv = v.shape[2]
    if q.shape[2] != hv:
        q, k = (x.repeat_interleave(hv // x.shape[2], dim=2) for x in (q, k))
    options = {n: a[n] for n in ("chunk_size", "use_qk_l2norm_in_kernel") if n in params and n in a}
    return MixingCall(site, q.transpose(1, 2), k.transpose(1, 2), a["g"].transpose(1, 2),
                      a["beta"].transpose(1, 2), fn=fn, options=options, v=v.transpose(1, 2))


def install(model) -> int:
    """Wrap FUNCTIONS in every modeling module ``model``'s classes come from; how many are wrapped."""
    done = 0
    for name in {type(m).__module__ for m in model.modules()}:
        mod = sys.modules.get(name)
        for fn_name in FUNCTIONS:
            fn = getattr(mod, fn_name, None)
            if fn is None or not callable(fn):
                continue
            if not hasattr(fn, "attnscope_original"):
                setattr(mod, fn_name, _wrap(fn))
            done += 1
    return done


@torch.no_grad()
def attach(model, probe) -> list[str]:
    """Find the layers that mix through a wrapped function (``probe()`` runs the model's probe forward),
    give each its Site (EFFECTIVE, call order) and check M @ v against the function's output on the
    probe. Returns the notes a user reads: which layers are drawn as effective attention, and any whose
    mixing cannot be drawn exactly."""
    if not install(model):
        return []
    found: list = []
    token = _FOUND.set(found)
    try:
        probe()
    finally:
        _FOUND.reset(token)
    drawn, notes, seen = 0, [], set()
    for module, call, out in found:
        if module is None or id(module) in seen:
            continue
        seen.add(id(module))
        site = Site(EFFECTIVE, drawn)
        error = _error(call, out)
        if error is not None:
            notes.append(f"Linear-attention layer {len(seen) - 1} ({type(module).__name__}): its mixing cannot be drawn "
                         f"exactly (effective attention {error:.2g} of its output away from the layer's own), so it "
                         "is not drawn.")
            module.attnscope_mixing_site = None
            continue
        module.attnscope_mixing_site = site
        drawn += 1
    if drawn:
        notes.append(f"Effective attention: {drawn} linear-attention layer{'s' if drawn > 1 else ''} (gated delta "
                     "net) drawn as the matrix each mixes its values with, o[t] = sum over s of M[t, s] v[s], "
                     "computed by the layer's own function; not a softmax: cells can be negative and rows need not "
                     "sum to 1.")
    return notes


def _error(call: MixingCall, out) -> float | None:
    """How far M @ v is from the function's output on the probe (a share of its largest magnitude), or None."""
    o = out[0] if isinstance(out, (tuple, list)) else out                  # (B, T, H, Dv)
    got = torch.einsum("hts,hsd->htd", call.mixing(0), call.v[0].float())   # (H, T, Dv)
    want = o[0].transpose(0, 1).float()
    diff = float((got - want).abs().max())
    scale = max(float(want.abs().max()), 1e-6)
    return None if diff <= TOLERANCE * scale else diff / scale
