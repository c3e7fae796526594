"""The residual stream at a few positions as a sum of named sources, read off two forwards.

With every norm's scale taken from the run, a transformer is affine in what enters its
residual stream (the embeddings, each head's output, each MLP's output): everything else it
computes at a position (norms, projections, rotary turns, per-head q/k norms) is linear in
the stream there, plus constants. So any query or key is a sum of one part per source and a
constant part. Two forwards find those parts exactly, for every family, without naming a
module:

1. ``read``: the model's own forward on the whole text, stopped at the asked attention call.
   On the way it keeps, at the positions asked only: each head's output (the seam), each
   MLP's output, each embedding's output, what each position adder adds, and the scale each
   norm divided by. At the asked call it keeps the call itself (q, k, mask, bias, scale).
2. ``replay``: a batch of copies of those positions alone (one copy per source, one for the
   constants; each token at its own position, so rotary turns as in the whole text), also
   stopped at the asked call. Each norm divides by the scale the first forward found; each
   attention and MLP output and each embedding is put back, its own source's copy getting
   the value the first forward computed and every other copy zero. Copy c minus the
   constants' copy is then source c's part of everything the model computes there, the asked
   call's q and k included; the constants' copy is the ``bias`` part.

Cost: the first forward is at most a bare one (it stops at the asked layer); the second runs
(sources + 1) x (positions asked) tokens through the layers before it, with no MLP computed
(their outputs are put back), in chunks sized to the memory there is.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import torch

from attnscope.engine.experiments.frozen_norms import frozen, norm_eps, norm_scale, subtracts_mean
from attnscope.engine.inputs import InputError
from attnscope.engine.interventions import applied
from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF, KEY_SIDE, QUERY_SIDE
from attnscope.engine.runtime.modules import handing_back
from attnscope.engine.seam import AttentionCall, SeamHook, Site, hooks
from attnscope.engine.seam.gated import as_heads, at_projection_input

SOURCE, TARGET = "source", "target"          # the sides of engine.kinds.QUERY_SIDE / KEY_SIDE
TYPE_ROWS = 16     # an embedding table outside the blocks with this many rows or fewer holds token types


class _Reached(Exception):
    """Raised at the asked attention call: nothing after it is needed."""


@dataclass
class Parts:
    """Where a model's stream gets its sources, found once per adapter (``Parts.of``)."""
    norms: list[torch.nn.Module]                     # every leaf with an epsilon: LayerNorm, RMSNorm, q/k norms
    embeddings: dict[int, tuple[torch.nn.Module, str]]   # id -> (table, "embed" | "pos" | "type"), outside the blocks
    adders: list[torch.nn.Module]                    # x -> x + PE (our sinusoidal positions)
    mlps: dict[int, tuple[torch.nn.Module, str, int]]    # id -> (module, side, layer)
    encoder_last: torch.nn.Module | None             # an encoder-decoder's last encoder block
    role: str
    projected: dict[Site, tuple[torch.nn.Module, torch.Tensor, torch.Tensor | None]] = field(default_factory=dict)
    #   site -> (its attention module, W_O (D, H * Dv), bias): the sites whose module applies its own
    #   output projection, so the replay can hand back the module's output without computing it
    gated: dict[Site, tuple[torch.nn.Module, int]] = field(default_factory=dict)
    #   site -> (its projection, H) where a gate multiplies the heads' output first (Qwen3.5)

    @classmethod
    def of(cls, adapter) -> "Parts":
        kept = adapter.__dict__.get("_stream_parts")
        if kept is None:
            kept = adapter.__dict__["_stream_parts"] = cls._find(adapter)
        return kept

    @classmethod
    def _find(cls, adapter) -> "Parts":
        model, role = adapter.model, adapter.role
        stacks = {ENCODER_SELF: SOURCE, DECODER_SELF: TARGET} if role == "encoder-decoder" else \
            {ENCODER_SELF: SOURCE} if role == "encoder" else {DECODER_SELF: TARGET}
        blocks = {kind: adapter.residual_blocks(kind) for kind in stacks}
        inside = {id(m) for bs in blocks.values() for b in bs for m in b.modules()}
        tokens = {id(m) for m in adapter.token_embeddings()}
        embeddings = {}
        for m in model.modules():
            if isinstance(m, torch.nn.Embedding) and id(m) not in inside:
                name = "embed" if id(m) in tokens else "type" if m.num_embeddings <= TYPE_ROWS else "pos"
                embeddings[id(m)] = (m, name)
        mlps = {}
        for kind, side in stacks.items():
            for layer, m in enumerate(adapter.mlp_outputs(kind)):
                mlps[id(m)] = (m, side, layer)
        norms = [m for m in model.modules() if not list(m.children()) and norm_eps(m) is not None]
        last = blocks[ENCODER_SELF][-1] if role == "encoder-decoder" else None
        projected = {}
        for site, module in adapter.site_modules().items():
            w_o, bias = adapter.output_projection(site)
            if any(p.data_ptr() == w_o.data_ptr() for p in module.parameters()):
                projected[site] = (module, w_o, bias)
        gated = adapter.gated_projections()
        return cls(norms, embeddings, list(adapter.position_adders()), mlps, last, role, projected, gated)


class _Sides:
    """Which side's stream a call belongs to. An encoder-decoder runs its encoder first: after
    its last block, norms are still the encoder's (T5's final norm) until the decoder's first
    embedding."""

    def __init__(self, parts: Parts):
        self.state = TARGET if parts.role == "decoder" else SOURCE
        self.handle = None if parts.encoder_last is None else \
            parts.encoder_last.register_forward_hook(lambda *_: setattr(self, "state", "tail"))

    def embedding(self) -> str:
        if self.state == "tail":
            self.state = TARGET
        return self.now()

    def now(self) -> str:
        return TARGET if self.state == TARGET else SOURCE

    def close(self) -> None:
        if self.handle is not None:
            self.handle.remove()


def source_name(site_or_part, side: str, enc_dec: bool, head: int | None = None) -> str:
    """The name of a source: L{l}.H{h}, L{l}.X{h} (cross), L{l}.mlp, embed, pos, type; an
    encoder-decoder's encoder sources prefixed "enc."."""
    if isinstance(site_or_part, Site):
        name = f"L{site_or_part.layer}.{'X' if site_or_part.kind == CROSS else 'H'}{head}"
    else:
        name = site_or_part
    return f"enc.{name}" if enc_dec and side == SOURCE else name


@dataclass
class Reading:
    """What the first forward kept (batch axis dropped; positions are those of ``at``)."""
    at: dict[str, list[int]]                           # side -> the positions kept, ascending
    wanted: tuple[str, ...] = (SOURCE, TARGET)         # the sides whose sources the asked call reads
    call: AttentionCall | None = None                  # the asked call, whole
    sources: list[tuple[str, str]] = field(default_factory=list)   # (name, side), in the order they enter
    heads: dict[Site, torch.Tensor] = field(default_factory=dict)  # (H, |P|, Dv) each head's output
    mlps: dict[tuple[str, int], torch.Tensor] = field(default_factory=dict)    # (side, layer) -> (|P|, D)
    mlp_extras: dict[tuple[str, int], int] = field(default_factory=dict)   # an MLP that returns (out, ...):
    #   how many items follow its output (a mixture of experts' router scores, which its block drops)
    inputs: dict[tuple[str, str], torch.Tensor] = field(default_factory=dict)  # (side, name) -> (|P|, D)
    scales: dict[int, list[torch.Tensor]] = field(default_factory=dict)        # id(norm) -> per call (1, |P|, ..., 1)
    centres: dict[int, bool] = field(default_factory=dict)                     # id(norm) -> subtracts the mean
    handed: dict[Site, int | None] = field(default_factory=dict)   # projected sites whose module returns its
    #   output alone (None) or followed by this many Nones: the replay hands it back whole
    seconds: float = 0.0

    def add_source(self, name: str, side: str) -> None:
        if side in self.wanted and (name, side) not in self.sources:
            self.sources.append((name, side))


def _positions(x: torch.Tensor, at: list[int], length: int, what: str) -> torch.Tensor:
    """x (B, T, ...) -> x[:, at]; the positions axis is the second, as every model here keeps it
    (a table read for positions alone, (T, D), is taken as a batch of one)."""
    if x.dim() == 2 and x.shape[0] == length:
        x = x[None]
    if x.dim() < 3 or x.shape[1] != length:
        raise InputError(f"A {what} sees its positions on an axis other than the second ({tuple(x.shape)}), so its "
                         "scores cannot be split.")
    return x[:, at]


class _Stopper(SeamHook):
    """Keeps the asked call and stops the forward there."""

    def __init__(self, target: Site):
        self.target, self.call = target, None

    def see(self, call):
        if call.site == self.target:
            self.call = call.detached()
            raise _Reached


class _Reader(_Stopper):
    """Keeps each head's output at the query positions asked; stops at the asked call."""

    def __init__(self, target: Site, reading: Reading, enc_dec: bool):
        super().__init__(target)
        self.reading, self.enc_dec = reading, enc_dec

    def edits(self, site):
        return site is not None and site != self.target

    def edits_output_only(self, site):
        return True

    def output(self, call, out):                                       # (B, H, Tq, Dv)
        side = QUERY_SIDE[call.site.kind]
        self.reading.heads[call.site] = out[0][:, self.reading.at[side]].detach()
        for h in range(out.shape[1]):
            self.reading.add_source(source_name(call.site, side, self.enc_dec, h), side)
        return out


@contextlib.contextmanager
def _installed():
    """Inside: ``keep(handle)`` keeps a hook's handle; all are removed on the way out."""
    handles = []
    try:
        yield lambda h: handles.append(h)
    finally:
        for h in handles:
            h.remove()


def read(adapter, framed, target: Site, at: dict[str, list[int]], lengths: dict[str, int],
         interventions=None) -> Reading:
    """The first forward: the model's own, on the whole text, stopped at ``target``."""
    parts = Parts.of(adapter)
    reading, sides, enc_dec = Reading(at, tuple(set(sides_of(target.kind)))), _Sides(parts), \
        parts.role == "encoder-decoder"

    def on_embedding(module, _args, out):
        side, name = sides.embedding(), parts.embeddings[id(module)][1]
        kept = _positions(out, at[side], lengths[side], "token embedding")[0].detach()
        key = (side, name)
        reading.inputs[key] = kept if key not in reading.inputs else reading.inputs[key] + kept
        reading.add_source(source_name(name, side, enc_dec), side)

    def on_adder(_module, args, out):
        side = sides.embedding()
        added = (_positions(out, at[side], lengths[side], "position encoding")
                 - _positions(args[0], at[side], lengths[side], "position encoding"))[0].detach()
        reading.inputs[(side, "pos")] = reading.inputs.get((side, "pos"), 0) + added
        reading.add_source(source_name("pos", side, enc_dec), side)

    def on_mlp(module, _args, out):
        _, side, layer = parts.mlps[id(module)]
        if isinstance(out, tuple):                 # (what it adds to the stream, router scores): gpt-oss's experts
            reading.mlp_extras[(side, layer)] = len(out) - 1
            out = out[0]
        reading.mlps[(side, layer)] = _positions(out, at[side], lengths[side], "MLP")[0].detach()
        reading.add_source(source_name(f"L{layer}.mlp", side, enc_dec), side)

    by_module = {id(m): site for site, (m, _, _) in parts.projected.items() if site != target}

    def on_site(module, _args, out):
        """A module that returns its output alone, or with Nones (no weights, no cache), can be
        handed back whole in the replay."""
        if isinstance(out, torch.Tensor):
            reading.handed[by_module[id(module)]] = None
        elif isinstance(out, tuple) and out and all(r is None for r in out[1:]):
            reading.handed[by_module[id(module)]] = len(out) - 1

    def on_gated(site, heads):
        """A gated site's heads' outputs as its projection reads them, (p·v) ⊙ σ(g): what each
        head adds to the stream (engine.adapters.output_gates)."""
        def read(args):
            z = as_heads(args[0], heads)                                       # (B, H, T, Dv)
            reading.heads[site] = z[0][:, at[QUERY_SIDE[site.kind]]].detach()
        return read

    def on_norm(module, args, _out):
        side = sides.now()
        z = _positions(args[0], at[side], lengths[side], "norm")
        if id(module) not in reading.centres:
            reading.centres[id(module)] = subtracts_mean(module, z)
        scale = norm_scale(z, reading.centres[id(module)], norm_eps(module))      # (1, |P|, ..., 1)
        reading.scales.setdefault(id(module), []).append(scale)

    start = time.perf_counter()
    try:
        with _installed() as keep:
            for m, _ in parts.embeddings.values():
                keep(m.register_forward_hook(on_embedding))
            for m in parts.adders:
                keep(m.register_forward_hook(on_adder))
            for m, _, _ in parts.mlps.values():
                keep(m.register_forward_hook(on_mlp))
            for m in parts.norms:
                keep(m.register_forward_hook(on_norm))      # its input, once it has run
            for site, (m, _, _) in parts.projected.items():
                if site != target:
                    keep(m.register_forward_hook(on_site))
            for site, (m, heads) in parts.gated.items():
                if site != target:
                    keep(at_projection_input(m, on_gated(site, heads)))
            reader = _Reader(target, reading, enc_dec)
            with applied(interventions), hooks(reader):
                adapter.forward(framed, last_only=True)
    except _Reached:
        reading.call = reader.call
    finally:
        sides.close()
    reading.seconds = time.perf_counter() - start
    if reading.call is None:
        raise InputError(f"{adapter.loaded.name} never reached {target}, so its scores cannot be split.")
    return reading


def asked_call(adapter, framed, target: Site, interventions=None) -> AttentionCall:
    """The asked call of the whole text alone (a forward stopped there, nothing kept on the
    way): its row's weights decide which keys a split compares with or a loading reads."""
    stopper = _Stopper(target)
    try:
        with applied(interventions), hooks(stopper):
            adapter.forward(framed, last_only=True)
    except _Reached:
        pass
    if stopper.call is None:
        raise InputError(f"{adapter.loaded.name} never reached {target}, so its scores cannot be split.")
    return stopper.call


@dataclass
class QK:
    """The asked call's queries and keys per copy: (C, Hq, |Pq|, Dh) and (C, Hkv, |Pk|, Dh);
    copy 0 holds the constants, copy c the part of ``Reading.sources[c - 1]``."""
    q: torch.Tensor
    k: torch.Tensor


class _Replayer(SeamHook):
    """Puts back each head's output in its own copy (zero elsewhere); keeps the asked call's q
    and k and stops there."""

    def __init__(self, target: Site, reading: Reading, index: dict, at: dict, copies: int, enc_dec: bool,
                 gated: dict):
        self.target, self.reading, self.index, self.at, self.copies = target, reading, index, at, copies
        self.enc_dec, self.qk, self.gated = enc_dec, None, gated      # gated: site -> (projection, heads)

    def see(self, call):
        if call.site == self.target:
            self.qk = QK(call.q.detach(), call.k.detach())
            raise _Reached

    def edits(self, site):
        return site is not None and site != self.target

    def edits_output_only(self, site):
        return True

    def output(self, call, out):                                       # (C, H, |P|, Dv)
        if call.site in self.gated:
            raise InputError(f"The heads of {call.site} reach the stream through a gate their module does not "
                             "hand back whole, so their parts of the scores cannot be split.")
        side = QUERY_SIDE[call.site.kind]
        real = self.reading.heads[call.site][:, self.at[side]]          # (H, |P|, Dv)
        new = torch.zeros_like(out)
        for h in range(real.shape[0]):
            copy = self.index.get((source_name(call.site, side, self.enc_dec, h), side))
            if copy is not None:              # a head of a side the asked call does not read: zero everywhere
                new[copy, h] = real[h]
        return new


def replay(adapter, framed, target: Site, reading: Reading, at: dict[str, list[int]]) -> QK:
    """The second forward: (sources + 1) copies of the positions ``at`` (per side, each a
    subset of the reading's), stopped at ``target``."""
    parts = Parts.of(adapter)
    enc_dec = parts.role == "encoder-decoder"
    copies = len(reading.sources) + 1
    index = {src: i + 1 for i, src in enumerate(reading.sources)}
    picks = {side: [reading.at[side].index(p) for p in ps] for side, ps in at.items() if side in reading.at}
    sides = _Sides(parts)
    counts: dict[int, int] = {}

    def own(value: torch.Tensor, key) -> torch.Tensor:
        """(|P|, D) -> (C, |P|, D): ``value`` in the copy of ``key``, zero elsewhere."""
        out = value.new_zeros((copies, *value.shape))
        if key in index:
            out[index[key]] = value
        return out

    def embedding(module):
        def out():
            side, name = sides.embedding(), parts.embeddings[id(module)][1]
            value = reading.inputs[(side, name)][picks[side]]
            return own(value, (source_name(name, side, enc_dec), side))
        return out

    def mlp(module):
        _, side, layer = parts.mlps[id(module)]
        key = (source_name(f"L{layer}.mlp", side, enc_dec), side)
        extras = reading.mlp_extras.get((side, layer))

        def out():
            value = own(reading.mlps[(side, layer)][picks[side]], key)
            return value if extras is None else (value, *([None] * extras))
        return out

    def on_adder(_module, args, _out):
        side = sides.embedding()
        return args[0] + own(reading.inputs[(side, "pos")][picks[side]], (source_name("pos", side, enc_dec), side))

    def on_norm(module, args, out):
        n = counts.get(id(module), 0)
        counts[id(module)] = n + 1
        side = sides.now()
        real = reading.scales[id(module)][n][:, picks[side]]             # (1, |P|, ..., 1)
        z = args[0]
        shift = module.forward(torch.zeros_like(z[:1, :1]))               # N(0)
        return frozen(out, shift, norm_scale(z, reading.centres[id(module)], norm_eps(module)), real).to(out.dtype)

    def attention(site):
        """The site's module output, as its output projection would make it from the heads put
        back: the bias in every copy, plus head h's slice z_h W_O,h^T in head h's copy."""
        module, w_o, bias = parts.projected[site]
        side = QUERY_SIDE[site.kind]

        def out():
            real = reading.heads[site][:, picks[side]]                    # (H, |P|, Dv)
            h_n, n, dv = real.shape
            new = real.new_zeros((copies, n, w_o.shape[0]))               # (C, |P|, D)
            if bias is not None:
                new += bias
            for h in range(h_n):
                copy = index.get((source_name(site, side, enc_dec, h), side))
                if copy is not None:
                    new[copy] += real[h] @ w_o[:, h * dv:(h + 1) * dv].T
            nones = reading.handed[site]
            return new if nones is None else (new, *([None] * nones))
        return out

    seam = _Replayer(target, reading, index, picks, copies, enc_dec, parts.gated)
    handed = [site for site in reading.handed if site in parts.projected]
    modules = [m for m, _ in parts.embeddings.values()] + [m for m, _, _ in parts.mlps.values()] \
        + [parts.projected[site][0] for site in handed]
    outputs = [embedding(m) for m, _ in parts.embeddings.values()] + [mlp(m) for m, _, _ in parts.mlps.values()] \
        + [attention(site) for site in handed]
    try:
        with _installed() as keep, handing_back(modules, outputs):
            for m in parts.adders:
                keep(m.register_forward_hook(on_adder))
            for m in parts.norms:
                if id(m) in reading.scales:
                    keep(m.register_forward_hook(on_norm))
            with hooks(seam):
                adapter.forward_at(framed, at, copies)
    except _Reached:
        pass
    finally:
        sides.close()
    if seam.qk is None:
        raise InputError(f"{adapter.loaded.name} read at a few positions never reached {target}, so its scores "
                         "cannot be split.")
    return seam.qk


def sides_of(kind: str) -> tuple[str, str]:
    """(query side, key side) of an attention kind."""
    return QUERY_SIDE[kind], KEY_SIDE[kind]
