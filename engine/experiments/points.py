"""The points an experiment reads and patches, and the hooks that do it.

Each point is where the adapter says it is (no table of module names): a head's output is
the seam's ``output`` at its decoder self-attention site (B, H, T, Dv), before the output
projection mixes the heads (where a gate multiplies it first, Qwen3.5's (p·v) ⊙ σ(g), the
gated output at the projection's input: adapter.gated_projection); the residual stream before layer l is the input of the adapter's
block l (B, T, D); a layer's attention output and MLP output are the outputs of its attention
module and MLP module (B, T, D). ``edited`` installs one function per (point, layer) that
sees the batch's tensor and returns it, changed or not: capturing a run, patching a batch of
copies and adding the zero whose gradient attribution patching reads are all such functions.

Two savings make a batch of patched copies cheap (``skipping``, ``last_position_only``):
the blocks before the first patched layer compute exactly what the unpatched run computed,
so they hand back its cached outputs instead of running; and only the last position's
logits are read, so the unembedding sees the last position only (for a 50k vocabulary and 20
tokens, the other 19 positions' logits cost about as much as the rest of the model).
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from attnscope.engine.interventions import Interventions, applied
from attnscope.engine.kinds import ENCODER_SELF
from attnscope.engine.runtime.modules import handing_back
from attnscope.engine.seam import SeamHook, Site, hooks
from attnscope.engine.seam.gated import as_heads, at_projection_input, merged

from attnscope.engine.experiments.names import (ATTN_OUT, CROSS_HEADS, CROSS_HEADS_BY_POS, ENCODER_HEADS,  # noqa: F401
                                      ENCODER_HEADS_BY_POS, HEAD_KIND, HEADS, HEADS_BY_POS, LOGIT_DIFF, LOGPROB,
                                      METRICS, MLP_OUT, POINTS, RESID_PRE, SEQ2SEQ_POINTS)
from attnscope.engine.inputs import InputError
# The activation each point patches: a head by position patches the same tensor as a head.
ACTIVATION = {HEADS: HEADS, HEADS_BY_POS: HEADS, RESID_PRE: RESID_PRE, ATTN_OUT: ATTN_OUT, MLP_OUT: MLP_OUT,
              CROSS_HEADS: CROSS_HEADS, CROSS_HEADS_BY_POS: CROSS_HEADS,
              ENCODER_HEADS: ENCODER_HEADS, ENCODER_HEADS_BY_POS: ENCODER_HEADS}
BY_POSITION = {HEADS_BY_POS, CROSS_HEADS_BY_POS, ENCODER_HEADS_BY_POS, RESID_PRE, ATTN_OUT, MLP_OUT}


@dataclass
class Activations:
    """One run's activations at every point asked, batch of one (the batch axis dropped)."""
    at: dict[tuple[str, int], torch.Tensor] = field(default_factory=dict)   # (activation, layer) ->
    #                                         heads (H, T, Dv); resid-pre, attn-out, mlp-out (T, D)
    blocks: list = field(default_factory=list)      # each decoder block's output as it returned it (batch of 1)
    encoder_blocks: list = field(default_factory=list)   # an encoder-decoder's encoder blocks' outputs
    last_logits: torch.Tensor | None = None          # (V,) float32, the last position
    seconds: float = 0.0                             # how long the forward took


class Points:
    """A decoder's modules for each point, asked of its adapter once (``of``: kept with it,
    since finding them walks the model's modules: milliseconds, a fair share of a small
    model's forward on a GPU). An encoder-decoder's encoder blocks too: a patch in the
    decoder skips the whole encoder, whose outputs are the unpatched run's."""

    @classmethod
    def of(cls, adapter, activations: set[str]) -> "Points":
        kept = adapter.__dict__.setdefault("_points", {})
        key = frozenset(activations)
        if key not in kept:
            kept[key] = cls(adapter, activations)
        return kept[key]

    def __init__(self, adapter, activations: set[str]):
        self.adapter = adapter
        self.blocks = adapter.residual_blocks()
        self.encoder_blocks = adapter.residual_blocks(ENCODER_SELF) if adapter.role == "encoder-decoder" else []
        self.attention = adapter.decoder_attention()
        self.mlp = adapter.mlp_outputs() if MLP_OUT in activations else []
        self.head = adapter.unembedding()
        self.activations = activations
        kinds = {s.kind for s in adapter.site_modules()}
        # asked here, before any run's hooks: finding a gate runs the probe forward (engine.adapters.output_gates)
        heads = {HEAD_KIND[a] for a in activations if a in HEAD_KIND}
        self.gates = adapter.gated_projections(heads)
        missing = [a for a in activations if a in HEAD_KIND and HEAD_KIND[a] not in kinds]
        if missing:

            raise InputError(f"{adapter.loaded.name} has no {HEAD_KIND[missing[0]]} attention to patch "
                             f"({missing[0]}).")

    @property
    def layers(self) -> int:
        return len(self.blocks)

    def layers_of(self, act: str) -> int:
        return len(self.encoder_blocks) if act == ENCODER_HEADS else len(self.blocks)


class _SeamEdit(SeamHook):
    """Heads' outputs (B, H, T, Dv) at some attention sites through functions."""

    def __init__(self, fns: dict[Site, Callable]):
        self.fns = fns

    def edits(self, site):
        return site in self.fns

    def edits_output_only(self, site):
        return True

    def output(self, call, out):
        return self.fns[call.site](out)


def _first(fn: Callable) -> Callable:
    """A forward hook's output (a tensor, or a tuple whose first item is the hidden states)
    through ``fn``."""
    def hook(_module, _args, out):
        if isinstance(out, tuple):
            return (fn(out[0]), *out[1:])
        return fn(out)
    return hook


def _first_input(fn: Callable) -> Callable:
    def hook(_module, args):
        if not args or not isinstance(args[0], torch.Tensor):
            raise RuntimeError("a block whose hidden states are not its first argument")
        return (fn(args[0]), *args[1:])
    return hook


def _gated_heads(fn: Callable, heads: int) -> Callable:
    """A gated projection's input (B, T, H * Dv), (p·v) ⊙ σ(g) merged, seen by ``fn`` as the
    heads' outputs (B, H, T, Dv) and put back merged (engine.adapters.output_gates)."""
    def edit(args):
        x = args[0]
        return (merged(fn(as_heads(x, heads)), x), *args[1:])                 # fn sees (B, H, T, Dv)
    return edit


@contextlib.contextmanager
def edited(points: Points, fns: dict[tuple[str, int], Callable]):
    """Inside: each (activation, layer)'s tensor passes its function during the forward."""
    handles, seam = [], {}
    try:
        for (act, layer), fn in fns.items():
            gate = points.gates.get(Site(HEAD_KIND[act], layer)) if act in HEAD_KIND else None
            if gate is not None:                    # the heads' gated output, at the projection's input
                handles.append(at_projection_input(gate[0], _gated_heads(fn, gate[1])))
            elif act in HEAD_KIND:
                seam[Site(HEAD_KIND[act], layer)] = fn
            elif act == RESID_PRE:
                handles.append(points.blocks[layer].register_forward_pre_hook(_first_input(fn)))
            else:
                module = (points.attention if act == ATTN_OUT else points.mlp)[layer]
                handles.append(module.register_forward_hook(_first(fn)))
        with hooks(_SeamEdit(seam)):
            yield
    finally:
        for h in handles:
            h.remove()


def _tree(x, fn):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_tree(i, fn) for i in x)
    return x


def skipped(points: Points, act: str, layer: int, base: Activations | None = None) -> tuple[list, list]:
    """(blocks, their outputs in ``base``) that a patch of ``act`` at ``layer`` leaves as they
    were: the blocks before it, and for a patch in an encoder-decoder's decoder the whole encoder."""
    base = base or Activations()
    if act == ENCODER_HEADS:
        return points.encoder_blocks[:layer], base.encoder_blocks[:layer]
    return points.encoder_blocks + points.blocks[:layer], base.encoder_blocks + base.blocks[:layer]


@contextlib.contextmanager
def skipping(blocks: list, outputs: list, copies: int):
    """``blocks`` hand back the unpatched run's ``outputs``, repeated for ``copies`` rows,
    without computing: what they would compute, since nothing before them is patched."""
    repeat = lambda t: t.expand(copies, *t.shape[1:]).contiguous() if t.shape[:1] == (1,) else t  # noqa: E731
    with handing_back(blocks, [_tree(out, repeat) for out in outputs]):
        yield


@contextlib.contextmanager
def last_position_only(head: torch.nn.Module):
    """The unembedding sees the last position only: logits (B, 1, V)."""
    handle = head.register_forward_pre_hook(lambda _m, args: (args[0][:, -1:], *args[1:]))
    try:
        yield
    finally:
        handle.remove()


def capture(points: Points, framed, keep_blocks: bool = True, interventions: Interventions | None = None
            ) -> Activations:
    """One forward of ``framed`` that keeps every activation asked, each block's output (for
    ``skipping``) and the last position's logits. Runs under the caller's grad mode, with
    ``interventions`` (fresh hooks, outside the capture's: it keeps what they left)."""
    acts = Activations()

    def keep(key):
        def fn(x):
            acts.at[key] = x[0].detach()
            return x
        return fn

    fns = {(act, layer): keep((act, layer)) for act in points.activations for layer in range(points.layers_of(act))}
    handles = [b.register_forward_hook(lambda _m, _i, out, into=into: into.append(_tree(out, torch.Tensor.detach)))
               for blocks, into in ((points.blocks, acts.blocks), (points.encoder_blocks, acts.encoder_blocks))
               for b in blocks] if keep_blocks else []
    try:
        start = time.perf_counter()
        with applied(interventions), edited(points, fns), last_position_only(points.head):
            logits = points.adapter.forward(framed)                          # (1, 1, V)
        acts.seconds = time.perf_counter() - start
    finally:
        for h in handles:
            h.remove()
    acts.last_logits = logits[0, -1].detach().float()
    return acts


def metric_of(last_logits: torch.Tensor, answers: tuple[int, int], metric: str) -> torch.Tensor:
    """(B, V) or (V,) last-position logits -> (B,) or () metric: the answers' logit difference,
    or the first answer's log-probability."""
    last_logits = last_logits.float()
    if metric == LOGIT_DIFF:
        return last_logits[..., answers[0]] - last_logits[..., answers[1]]
    if metric == LOGPROB:
        return torch.log_softmax(last_logits, dim=-1)[..., answers[0]]
    raise ValueError(f"the metric is one of {', '.join(METRICS)}, not {metric!r}")
