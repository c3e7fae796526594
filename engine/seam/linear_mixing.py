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

from attnscope.engine.errors import first_line
from attnscope.engine.kinds import EFFECTIVE
from attnscope.engine.runtime.blocks import score_block_bytes
from attnscope.engine.seam.attend import _HOOKS, Recorder
from attnscope.engine.seam.call import Site

@dataclass(frozen=True)
class Mixer:
    """One module-level function of transformers' modeling files that mixes a layer's values linearly:
    which argument holds the values (B, T, H, D), which the state a cache carries in (zero or None: the
    output is linear in the values), what the layer is called, and whether the function returns a pair."""
    values: str
    state: str
    what: str
    pair: bool          # returns (output, final state) rather than the output alone
    plain: dict         # arguments the one-hot calls set: no final state asked


# By the function's name, the same in every family that has it; each is wrapped where it is defined.
MIXERS = {
    "torch_chunk_gated_delta_rule": Mixer("value", "initial_state", "gated delta net", True,
                                          {"output_final_state": False}),
    "mamba2_chunk_scan": Mixer("hidden_states", "initial_states", "Mamba-2", False, {"return_final_states": False}),
}
# How far M @ v may be from the function's own output on the probe, as a share of its largest magnitude,
# by the values' dtype (the one-hot calls run in float32; half precision rounds the model's own).
TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}
TEMPORARIES = 8                # the function's copies of its values (beta-scaled, solved, per chunk ...), about

_FOUND: ContextVar[list | None] = ContextVar("attnscope_mixing_discovery", default=None)


@dataclass
class MixingCall:
    """One call of a MIXERS function as a recording keeps it; its ``weights`` are the effective attention.
    ``args`` are the function's own arguments (the values taken out), as the model passed them."""
    site: Site | None
    fn: object                       # the model's own function (the one wrapped)
    mixer: Mixer
    args: dict = field(default_factory=dict)
    v: torch.Tensor | None = None    # (B, H, T, Dv) the values, kept when the recording keeps them
    shape_: tuple = (1, 1, 1)        # (B, H, T)
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

    @property
    def q(self) -> torch.Tensor:
        """(B, H, T, 1) zeros, no memory: the shape a trace reads of any call (heads, steps); an effective
        call has no queries to show (the neuron view refuses it)."""
        device = next((t.device for t in self.args.values() if isinstance(t, torch.Tensor)), None)
        return torch.zeros(1, device=device).expand(*self.shape_, 1)

    k = q

    def kv_head(self, head: int) -> int:
        return head

    def detached(self, keep_values: bool = False) -> "MixingCall":
        d = lambda t: t.detach() if isinstance(t, torch.Tensor) else t  # noqa: E731
        return replace(self, args={n: d(t) for n, t in self.args.items()},
                       v=d(self.v) if keep_values and self.v is not None else None)

    @torch.no_grad()
    def mixing(self, b: int | None = 0, heads=None, rows=None, cols=None) -> torch.Tensor:
        """(h, r, c) float32: M[t, s] of ``heads`` for queries ``rows`` and keys ``cols``, from the model's
        own function run on one-hot values (the layer is causal: only the steps up to the last row run)."""
        b = 0 if b is None else b
        batch, n_heads, t_all = self.shape_
        heads = list(range(n_heads)) if heads is None else list(heads)
        r0, r1, _ = (rows or slice(None)).indices(t_all)
        c0, c1, _ = (cols or slice(None)).indices(t_all)
        r1, c1 = max(r0, r1), max(c0, c1)
        device = self.q.device
        out = torch.zeros(len(heads), r1 - r0, c1 - c0, device=device)
        steps = r1                                                        # the steps the rows depend on
        args = {n: _steps(t, batch, t_all, b, steps) for n, t in self.args.items()}
        # one-hot columns per call: the device's block budget (engine.runtime.blocks) over the values' copies
        width = max(1, score_block_bytes(device, "view") // (4 * max(1, steps) * n_heads * TEMPORARIES))
        for start in range(c0, min(c1, steps), width):
            stop = min(c1, steps, start + width)
            v = torch.zeros(1, steps, n_heads, stop - start, device=device)   # one-hot: column j is key start + j
            idx = torch.arange(start, stop, device=device)
            v[0, idx, :, idx - start] = 1.0
            o = self.fn(**args, **{self.mixer.values: v, self.mixer.state: None}, **self.mixer.plain)
            o = o[0] if self.mixer.pair else o                                # (1, steps, H, c)
            out[:, :, start - c0:stop - c0] = o[0, r0:r1][:, heads].float().permute(1, 0, 2)   # (h, r, c)
        return out

    def weights(self, b: int | None = 0, heads=None, rows=None) -> torch.Tensor:
        """(h, r, T) the effective attention of whole rows (what a recorded trace computes a layer from)."""
        return self.mixing(b, heads, rows, None)


def _steps(t, batch: int, steps_all: int, b: int, steps: int):
    """One argument for the one-hot call: a per-step tensor (B, T, ...) cut to example ``b`` and the
    first ``steps`` steps, in float32 when floating; any other argument as the model passed it."""
    if not isinstance(t, torch.Tensor):
        return t
    if t.dim() >= 2 and tuple(t.shape[:2]) == (batch, steps_all):
        t = t[b:b + 1, :steps]
    return t.float() if t.is_floating_point() else t


def _wrap(original, mixer: Mixer):
    """The model's own function, and around it: a recording keeps the call. No hook edits it (an ablation
    or knockout of an effective-attention layer is refused where interventions are checked,
    engine.interventions.spec)."""
    signature = inspect.signature(original)

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
        bound = signature.bind(*args, **kwargs)
        a = dict(bound.arguments)
        a.update(a.pop("kwargs", {}) if isinstance(a.get("kwargs"), dict) else {})
        call = _call(original, mixer, site, a)
        if found is not None:
            found.append((module if isinstance(module, torch.nn.Module) else None, call, out))
            return out
        state = a.get(mixer.state)
        if isinstance(state, torch.Tensor) and bool(state.abs().max() > 0):
            return out        # a step after a cache: its state folds in the past, no row of M to draw
        for hook in active:
            if isinstance(hook, Recorder):
                hook.calls[site] = call.detached(hook.keep_values)
        return out

    wrapped.attnscope_original = original
    wrapped.__wrapped__ = original
    return wrapped


def _call(fn, mixer: Mixer, site, a: dict) -> MixingCall:
    """The bound arguments as a MixingCall: the values (B, T, H, D) apart, the rest kept as passed."""
    v = a.pop(mixer.values)
    a.pop(mixer.state, None)
    for name in mixer.plain:
        a.pop(name, None)
    batch, steps, heads = v.shape[:3]
    return MixingCall(site, fn, mixer, args=a, v=v.transpose(1, 2), shape_=(batch, heads, steps))


def install(model) -> int:
    """Wrap MIXERS' functions in every modeling module ``model``'s classes come from; how many are wrapped."""
    done = 0
    for name in {type(m).__module__ for m in model.modules()}:
        mod = sys.modules.get(name)
        for fn_name, mixer in MIXERS.items():
            fn = getattr(mod, fn_name, None)
            if fn is None or not callable(fn):
                continue
            if not hasattr(fn, "attnscope_original"):
                setattr(mod, fn_name, _wrap(fn, mixer))
            done += 1
    return done


@torch.no_grad()
def attach(model, probe) -> list[str]:
    """Find the layers that mix through a wrapped function (``probe()`` runs the model's probe forward),
    give each its Site (EFFECTIVE, call order) and check M @ v against the function's output on the
    probe. Returns the notes a user reads: which layers are drawn as effective attention, and any whose
    mixing cannot be drawn exactly. A failure here never costs the softmax layers: no linear layer is
    drawn, and the note says why in one sentence."""
    if not install(model):
        return _unseen_layers(model)
    try:
        return _attach(model, probe)
    except Exception as exc:        # a family whose function is called otherwise: said, the model still opens
        for module in model.modules():
            if getattr(module, "attnscope_mixing_site", None) is not None:
                module.attnscope_mixing_site = None
        return [f"The linear layers' effective attention could not be computed ({first_line(exc, 120)}), so they "
                "are not drawn; the softmax layers are."] + _unseen_layers(model)


def _attach(model, probe) -> list[str]:
    """``attach`` once the functions are wrapped."""
    found: list = []
    token = _FOUND.set(found)
    try:
        probe()
    finally:
        _FOUND.reset(token)
    drawn, notes, seen, kinds = 0, [], set(), {}
    for module, call, out in found:
        if module is None or id(module) in seen:
            continue
        seen.add(id(module))
        site = Site(EFFECTIVE, drawn)
        error = _error(call, out)
        if error is not None:
            notes.append(f"Linear layer {len(seen) - 1} ({type(module).__name__}, {call.mixer.what}): this layer's "
                         f"mixing cannot be drawn exactly (its effective attention is {error:.2g} of its output away "
                         "from the layer's own), so it is not drawn; the softmax layers are.")
            module.attnscope_mixing_site = None
            continue
        module.attnscope_mixing_site = site
        kinds[call.mixer.what] = kinds.get(call.mixer.what, 0) + 1
        drawn += 1
    notes += _unseen_layers(model)
    if drawn:
        which = " and ".join(f"{n} {what}" for what, n in kinds.items())
        notes.append(f"Effective attention: {drawn} linear-attention layer{'s' if drawn > 1 else ''} ({which}) drawn "
                     "as the matrix each mixes its values with, o[t] = sum over s of M[t, s] v[s], computed by the "
                     "layer's own function; not a softmax: cells can be negative and rows need not sum to 1.")
    return notes


def _unseen_layers(model) -> list[str]:
    """One sentence naming the decoder layers in which no module reached the seam, softmax or linear (a
    state-space scan or a convolution written inline in the model's own forward, Jamba's Mamba layers,
    LFM2's convolutions): what each mixes cannot be drawn exactly. The layers are the model's one list
    of as many modules as the config has layers; none found, nothing said."""
    n = getattr(model.config.get_text_config(), "num_hidden_layers", None)
    layers = next((m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == n), None)
    if not isinstance(n, int) or layers is None:
        return []
    seen = lambda m: getattr(m, "attnscope_site", None) is not None or getattr(m, "attnscope_mixing_site", None) is not None  # noqa: E731
    unseen = [(i, type(layer).__name__) for i, layer in enumerate(layers) if not any(seen(m) for m in layer.modules())]
    if not unseen:
        return []
    said = ", ".join(f"{i} ({name})" for i, name in unseen)
    plural = "s" if len(unseen) > 1 else ""
    return [f"Layer{plural} {said} of {n} mix{'' if plural else 'es'} tokens in code of the model's own that reaches no "
            f"seam (a state-space scan or convolution written inline): this layer's mixing cannot be drawn exactly, "
            "so it is not drawn; the softmax layers are."]


def _error(call: MixingCall, out) -> float | None:
    """How far M @ v is from the function's output on the probe (a share of its largest magnitude), or None."""
    o = out[0] if isinstance(out, (tuple, list)) else out                  # (B, T, H, Dv)
    got = torch.einsum("hts,hsd->htd", call.mixing(0), call.v[0].float())   # (H, T, Dv)
    want = o[0].transpose(0, 1).float()
    diff = float((got - want).abs().max())
    scale = max(float(want.abs().max()), 1e-6)
    rel = TOLERANCE.get(o.dtype, TOLERANCE[torch.bfloat16])
    return None if diff <= rel * scale else diff / scale
