"""An independent float64 reference for engine.experiments.why: each score split by hand.

The model is copied to float64 (a Hugging Face model switched to transformers' own eager
attention, so no step passes through the seam), run once on the ids the engine frames, with a
plain forward hook on every module. The residual stream at every position is then rebuilt as a
sum of source vectors (the embeddings; each head's z_h through its slice of the output
projection; each MLP's output; the constants as ``bias``), pushed through each norm as the
linear map x -> g * P(x) / s_run (+ the shift, into ``bias``), the q / k projections, per-head
q / k norms, rotary (transformers' own ``apply_rotary_pos_emb`` with the model's rotary
embedding; our GPT's own ``rotate``) and the scale. The family's modules are named here, one
walk per family. Every step checks itself against the module's own input and output, so the
reference cannot drift from the model it describes; ``compare`` then holds why against it.
"""
from __future__ import annotations

import copy
import sys
from dataclasses import dataclass

import torch
from torch import nn
from attnscope.engine.traces import reading

BIAS = "bias"
# A rebuilt activation equals the model's own to this, relative: not 1e-12, as transformers'
# RMSNorms compute in float32 even in a float64 model (the reference's maths stays float64).
SELF_CHECK = 1e-6


def close(mine: torch.Tensor, theirs: torch.Tensor, what: str) -> None:
    """The reference's own bookkeeping: a sum of parts is the model's activation."""
    gap = float((mine - theirs).abs().max())
    size = float(theirs.abs().max()) + 1e-30
    assert gap <= SELF_CHECK * max(1.0, size), f"reference: {what} off by {gap:.3g} (size {size:.3g})"


class Calls:
    """Each module's (first input, output) per call, from plain forward hooks."""

    def __init__(self, model: nn.Module):
        self.seen: dict[int, list] = {}
        self.handles = [m.register_forward_hook(self._keep, with_kwargs=True) for m in model.modules()]

    def _keep(self, module, args, kwargs, out):
        first = args[0] if args else next(iter(kwargs.values()), None)
        self.seen.setdefault(id(module), []).append((first, out[0] if isinstance(out, tuple) else out))

    def close(self):
        for h in self.handles:
            h.remove()

    def input(self, module, call: int = 0) -> torch.Tensor:
        """(T, ...) the call's first input, batch dropped."""
        return _unbatch(self.seen[id(module)][call][0])

    def output(self, module, call: int = 0) -> torch.Tensor:
        return _unbatch(self.seen[id(module)][call][1])


def _unbatch(x: torch.Tensor) -> torch.Tensor:
    return x[0] if x.dim() >= 3 else x        # (1, T, ...) -> (T, ...); a (T, D) table read stays


class Stream:
    """A stream at every position as a sum of named parts: names and (N, T, ...) float64."""

    def __init__(self, length: int, width: int):
        self.names = [BIAS]
        self.parts = torch.zeros(1, length, width, dtype=torch.float64)

    def add(self, name: str, value: torch.Tensor) -> None:
        value = value.expand_as(self.parts[0])
        if name in self.names:
            self.parts[self.names.index(name)] += value
        else:
            self.names.append(name)
            self.parts = torch.cat([self.parts, value[None]])

    def extend(self, other: "Stream") -> None:
        for name, value in zip(other.names, other.parts):
            self.add(name, value)

    def total(self) -> torch.Tensor:
        return self.parts.sum(0)

    def mapped(self, f, shift: torch.Tensor | None = None) -> "Stream":
        """Each part through the linear map ``f``; ``shift`` (a constant) into ``bias``."""
        out = Stream.__new__(Stream)
        out.names, out.parts = list(self.names), f(self.parts)
        if shift is not None:
            out.parts[out.names.index(BIAS)] += shift
        return out


def normed(stream: Stream, module: nn.Module, x: torch.Tensor, y: torch.Tensor | None = None) -> Stream:
    """``stream`` through a LayerNorm / RMSNorm with the scale it had on ``x`` (the module's own
    input, which the stream must sum to), its shift into ``bias``; checked against ``y``."""
    close(stream.total(), x, f"the input of {type(module).__name__}")
    centre = isinstance(module, nn.LayerNorm)
    eps = next(float(getattr(module, a)) for a in ("eps", "variance_epsilon") if hasattr(module, a))
    gain = torch.ones(x.shape[-1], dtype=torch.float64) if getattr(module, "weight", None) is None else module.weight
    if type(module).__name__.startswith("Gemma"):       # Gemma's RMSNorm scales by (1 + w)
        gain = 1 + gain
    centred = (lambda v: v - v.mean(-1, keepdim=True)) if centre else (lambda v: v)
    scale = torch.sqrt((centred(x) ** 2).mean(-1, keepdim=True) + eps)
    out = stream.mapped(lambda v: gain * centred(v) / scale, getattr(module, "bias", None))
    if y is not None:
        close(out.total(), y, f"the output of {type(module).__name__}")
    return out


def head_outputs(z: torch.Tensor, proj: nn.Module, heads: int, prefix: str, y: torch.Tensor | None) -> Stream:
    """Each head's z_h (T, H * Dh slice) through its slice of the output projection (nn.Linear,
    or GPT-2's Conv1D), named ``{prefix}{h}``; the projection's bias into ``bias``."""
    t, width = z.shape
    dh = width // heads
    weight = proj.weight if isinstance(proj, nn.Linear) else proj.weight.T       # (D, H * Dh)
    out = Stream(t, weight.shape[0])
    for h in range(heads):
        out.add(f"{prefix}{h}", z[:, h * dh:(h + 1) * dh] @ weight[:, h * dh:(h + 1) * dh].T)
    if proj.bias is not None:
        out.add(BIAS, proj.bias)
    if y is not None:
        close(out.total(), y, "an output projection")
    return out


def projected(stream: Stream, weight: torch.Tensor, bias: torch.Tensor | None, heads: int) -> torch.Tensor:
    """(N, T, D) -> (N, T, H, Dh): ``stream`` through x W^T (+ bias into ``bias``)."""
    parts = stream.mapped(lambda v: v @ weight.T, bias).parts
    return parts.reshape(*parts.shape[:2], heads, -1)


def head_normed(parts: torch.Tensor, module: nn.Module, calls: Calls) -> torch.Tensor:
    """(N, T, H, Dh) through a per-head RMSNorm (Qwen3's q / k norm) with its run's scale."""
    s = Stream.__new__(Stream)
    s.names, s.parts = [BIAS] + [f"part {i}" for i in range(1, len(parts))], parts
    return normed(s, module, calls.input(module), calls.output(module)).parts


@dataclass
class Split:
    """One attention call, by hand: the query side's and key side's parts per head, and what the
    softmax adds (position bias, mask, cap)."""
    q_names: list[str]
    k_names: list[str]
    q: torch.Tensor                   # (Nq, H, Tq, Dh)
    k: torch.Tensor                   # (Nk, Hkv, Tk, Dh)
    scale: float
    mask: torch.Tensor                # (Tq, Tk) bool, True: may attend
    position_bias: torch.Tensor | None = None    # (H, Tq, Tk)
    softcap: float | None = None

    def kv(self, head: int) -> int:
        return head // (self.q.shape[1] // self.k.shape[1])

    def terms(self, head: int, query: int, key: int) -> torch.Tensor:
        """(Nq, Nk) scale * q_i(a) . k_j(b)."""
        return self.scale * self.q[:, head, query] @ self.k[:, self.kv(head), key].T

    def scores(self, head: int) -> torch.Tensor:
        """(Tq, Tk) the whole head's scores (sum of the table) before bias, mask and cap."""
        return self.scale * self.q.sum(0)[head] @ self.k.sum(0)[self.kv(head)].T

    def weights(self, head: int) -> torch.Tensor:
        """(Tq, Tk) softmax of the capped scores plus the position bias, masked."""
        s = self.scores(head)
        if self.softcap:
            s = self.softcap * torch.tanh(s / self.softcap)
        if self.position_bias is not None:
            s = s + self.position_bias[head]
        return torch.softmax(s.masked_fill(~self.mask, float("-inf")), -1)


def rotated(q: torch.Tensor, k: torch.Tensor, attn: nn.Module, rotary: nn.Module, length: int):
    """(N, H, T, Dh) each: transformers' own apply_rotary_pos_emb, the model's rotary embedding
    at positions 0..T-1."""
    positions = torch.arange(length)[None]
    cos, sin = rotary(q[:1, 0], positions)
    return sys.modules[type(attn).__module__].apply_rotary_pos_emb(q, k, cos, sin)


def causal(tq: int, tk: int, window: int | None = None) -> torch.Tensor:
    i, j = torch.arange(tq)[:, None], torch.arange(tk)[None]
    mask = j <= i
    return mask & (i - j < window) if window else mask


def everything(t: int, s: int) -> torch.Tensor:
    return torch.ones(t, s, dtype=torch.bool)


def float64_copy(model: nn.Module) -> nn.Module:
    """A float64 copy; a Hugging Face model switched to its own eager attention (not the seam)."""
    m = copy.deepcopy(model).double().eval()
    if hasattr(m, "set_attn_implementation"):
        m.set_attn_implementation("eager")
        assert m.config._attn_implementation == "eager"
    return m


def randomized(model: nn.Module, seed: int = 0) -> None:
    """Weights large enough that every term matters, and every bias and norm shift nonzero
    (Hugging Face initialises them to zero, which would leave ``bias`` untested)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype)
            if p.dim() == 1:
                p.add_(0.2 * noise)
            else:
                p.copy_(noise / max(1.0, p.shape[-1]) ** 0.5 if p.shape[-1] > 8 else noise * 0.5)


# ---- one walk per family: the stream where the asked call reads it ------------------------
ENC = "enc."


def _pre_ln_decoder(m, calls: Calls, layer: int, t: int) -> Split:
    """Llama, Qwen2, Qwen3, Mistral, Phi-3, Gemma 2: RMSNorm before each block, rotary."""
    base, cfg = m.model, m.config
    gemma = hasattr(base.layers[0], "pre_feedforward_layernorm")      # sandwich norms
    s = Stream(t, cfg.hidden_size)
    s.add("embed", calls.output(base.embed_tokens))                    # Gemma's sqrt(d) inside the module
    for l in range(layer):
        b = base.layers[l]
        o = b.self_attn.o_proj
        heads = head_outputs(calls.input(o), o, cfg.num_attention_heads, f"L{l}.H", calls.output(o))
        if gemma:
            n = b.post_attention_layernorm
            heads = normed(heads, n, calls.input(n), calls.output(n))
        s.extend(heads)
        s.add(f"L{l}.mlp", calls.output(b.post_feedforward_layernorm if gemma else b.mlp))
    b = base.layers[layer]
    a, h, kvh = b.self_attn, cfg.num_attention_heads, cfg.num_key_value_heads
    x = normed(s, b.input_layernorm, calls.input(b.input_layernorm), calls.output(b.input_layernorm))
    if hasattr(a, "qkv_proj"):                                          # Phi-3: one fused projection
        w, dh = a.qkv_proj.weight, a.head_dim
        q = projected(x, w[:h * dh], None, h)
        k = projected(x, w[h * dh:(h + kvh) * dh], None, kvh)
    else:
        q = projected(x, a.q_proj.weight, a.q_proj.bias, h)            # (N, T, H, Dh)
        k = projected(x, a.k_proj.weight, a.k_proj.bias, kvh)
    if hasattr(a, "q_norm"):                                            # Qwen3: per head, scale frozen too
        q = head_normed(q, a.q_norm, calls)
        k = head_normed(k, a.k_norm, calls)
    q, k = rotated(q.transpose(1, 2), k.transpose(1, 2), a, base.rotary_emb, t)
    types = getattr(cfg, "layer_types", None)
    sliding = types[layer] == "sliding_attention" if types else bool(getattr(cfg, "sliding_window", None))
    window = cfg.sliding_window if sliding else None
    cap = getattr(cfg, "attn_logit_softcapping", None)
    return Split(x.names, x.names, q, k, float(a.scaling), causal(t, t, window), None, cap)


def _gpt2(m, calls: Calls, layer: int, t: int) -> Split:
    tr, cfg = m.transformer, m.config
    d, h = cfg.n_embd, cfg.n_head
    s = Stream(t, d)
    s.add("embed", calls.output(tr.wte))
    s.add("pos", calls.output(tr.wpe))
    for l in range(layer):
        b = tr.h[l]
        s.extend(head_outputs(calls.input(b.attn.c_proj), b.attn.c_proj, h, f"L{l}.H", calls.output(b.attn.c_proj)))
        s.add(f"L{l}.mlp", calls.output(b.mlp))
    b = tr.h[layer]
    x = normed(s, b.ln_1, calls.input(b.ln_1), calls.output(b.ln_1))
    w, bias = b.attn.c_attn.weight, b.attn.c_attn.bias                 # Conv1D: (D, 3D)
    q = projected(x, w[:, :d].T, bias[:d], h).transpose(1, 2)
    k = projected(x, w[:, d:2 * d].T, bias[d:2 * d], h).transpose(1, 2)
    return Split(x.names, x.names, q, k, (d // h) ** -0.5, causal(t, t))


def _our_gpt(m, calls: Calls, layer: int, t: int) -> Split:
    tr, c = m.transformer, m.config
    d, h = c.n_embd, c.n_head
    s = Stream(t, d)
    s.add("embed", calls.output(tr.wte))
    if "wpe" in tr:                            # learned positions (the random GPT); else rotary
        s.add("pos", calls.output(tr.wpe))
    for l in range(layer):
        b = tr.h[l]
        p = b.attn.c_proj
        s.extend(head_outputs(calls.input(p), p, h, f"L{l}.H", calls.output(p)))
        s.add(f"L{l}.mlp", calls.output(b.mlp))
    b = tr.h[layer]
    x = normed(s, b.ln_1, calls.input(b.ln_1), calls.output(b.ln_1))
    w, bias = b.attn.c_attn.weight, b.attn.c_attn.bias                 # (3D, D)
    q = projected(x, w[:d], bias[:d], h).transpose(1, 2)
    k = projected(x, w[d:2 * d], bias[d:2 * d], h).transpose(1, 2)
    if m.rotary is not None:                   # the bundled GPT: the model's own rotation, per position
        q, k = m.rotary.rotate(q, torch.arange(t)), m.rotary.rotate(k, torch.arange(t))
    return Split(x.names, x.names, q, k, (d // h) ** -0.5, causal(t, t))


def _bert(m, calls: Calls, layer: int, t: int) -> Split:
    """BERT, RoBERTa (Hugging Face) and our BERT: post-LN; each LayerNorm after a residual add
    transforms every source."""
    ours = not hasattr(m, "encoder")
    e, width = m.embeddings, m.config.hidden_size
    h = m.config.num_attention_heads
    s = Stream(t, width)
    s.add("embed", calls.output(e.word_embeddings))
    s.add("pos", calls.output(e.position_embeddings))
    s.add("type", calls.output(e.token_type_embeddings))
    s = normed(s, e.LayerNorm, calls.input(e.LayerNorm), calls.output(e.LayerNorm))
    for l in range(layer):
        if ours:
            b = m.layers[l]
            proj, ln1, mlp, ln2 = b.attention.c_proj, b.attention_norm, b.ffn, b.ffn_norm
        else:
            b = m.encoder.layer[l]
            proj, ln1, mlp, ln2 = b.attention.output.dense, b.attention.output.LayerNorm, b.output.dense, \
                b.output.LayerNorm
        s.extend(head_outputs(calls.input(proj), proj, h, f"L{l}.H", calls.output(proj)))
        s = normed(s, ln1, calls.input(ln1), calls.output(ln1))
        s.add(f"L{l}.mlp", calls.output(mlp))
        s = normed(s, ln2, calls.input(ln2), calls.output(ln2))
    if ours:
        a = m.layers[layer].attention.c_attn                              # (3D, D): q, k, v
        wq, bq, wk, bk = a.weight[:width], a.bias[:width], a.weight[width:2 * width], a.bias[width:2 * width]
    else:
        a = m.encoder.layer[layer].attention.self
        wq, bq, wk, bk = a.query.weight, a.query.bias, a.key.weight, a.key.bias
    q = projected(s, wq, bq, h).transpose(1, 2)
    k = projected(s, wk, bk, h).transpose(1, 2)
    scale = float(getattr(a, "scaling", (width // h) ** -0.5))
    return Split(s.names, s.names, q, k, scale, everything(t, t))


def _renamed(s: Stream, prefix: str) -> Stream:
    s.names = [n if n == BIAS else prefix + n for n in s.names]
    return s


def _bart_stream(m, calls: Calls, decoder: bool, upto: int, t: int, cross_query: bool = False) -> Stream:
    """BART (post-LN): the encoder's stream entering layer ``upto`` (all layers: its output), or
    the decoder's entering layer ``upto`` (``cross_query``: after that layer's self-attention)."""
    stack, cfg = (m.model.decoder if decoder else m.model.encoder), m.config
    h, call = cfg.decoder_attention_heads if decoder else cfg.encoder_attention_heads, -1 if decoder else 0
    s = Stream(t, cfg.d_model)
    s.add("embed", calls.output(stack.embed_tokens, call))
    s.add("pos", calls.output(stack.embed_positions))
    ln = stack.layernorm_embedding
    s = normed(s, ln, calls.input(ln), calls.output(ln))
    for l in range(upto + (1 if cross_query else 0)):
        b = stack.layers[l]
        blocks = [(b.self_attn, b.self_attn_layer_norm, "H")]
        if decoder and l < upto:
            blocks.append((b.encoder_attn, b.encoder_attn_layer_norm, "X"))
        for attn, norm, letter in blocks:
            p = attn.out_proj
            s.extend(head_outputs(calls.input(p), p, h, f"L{l}.{letter}", calls.output(p)))
            s = normed(s, norm, calls.input(norm), calls.output(norm))
        if l < upto:
            s.add(f"L{l}.mlp", calls.output(b.fc2))
            s = normed(s, b.final_layer_norm, calls.input(b.final_layer_norm), calls.output(b.final_layer_norm))
    assert getattr(stack, "layer_norm", None) is None, "BART's stacks end without a norm"
    return s if decoder else _renamed(s, ENC)


def _bart(m, calls: Calls, kind: str, layer: int, lengths: dict) -> Split:
    cfg = m.config
    src, tgt = lengths["source"], lengths["target"]
    if kind == "cross":
        qs = _bart_stream(m, calls, True, layer, tgt, cross_query=True)
        ks = _bart_stream(m, calls, False, cfg.encoder_layers, src)
        a, h, mask = m.model.decoder.layers[layer].encoder_attn, cfg.decoder_attention_heads, everything(tgt, src)
    else:
        decoder = kind == "decoder self"
        t = tgt if decoder else src
        qs = ks = _bart_stream(m, calls, decoder, layer, t)
        stack = m.model.decoder if decoder else m.model.encoder
        a = stack.layers[layer].self_attn
        h = cfg.decoder_attention_heads if decoder else cfg.encoder_attention_heads
        mask = causal(t, t) if decoder else everything(t, t)
    q = projected(qs, a.q_proj.weight, a.q_proj.bias, h).transpose(1, 2)
    k = projected(ks, a.k_proj.weight, a.k_proj.bias, h).transpose(1, 2)
    return Split(qs.names, ks.names, q, k, float(a.scaling), mask)


def _t5_stream(m, calls: Calls, decoder: bool, upto: int, t: int, cross_query: bool = False) -> Stream:
    """T5 (pre-RMSNorm, no biases): the stream entering block ``upto``'s self-attention norm
    (``cross_query``: its cross-attention norm)."""
    stack, cfg = (m.decoder if decoder else m.encoder), m.config
    s = Stream(t, cfg.d_model)
    s.add("embed", calls.output(stack.embed_tokens, -1 if decoder else 0))
    for l in range(upto + (1 if cross_query else 0)):
        b = stack.block[l]
        blocks = [(b.layer[0].SelfAttention, "H")] + ([(b.layer[1].EncDecAttention, "X")] if decoder and l < upto
                                                      else [])
        for attn, letter in blocks:
            s.extend(head_outputs(calls.input(attn.o), attn.o, cfg.num_heads, f"L{l}.{letter}", calls.output(attn.o)))
        if l < upto:
            s.add(f"L{l}.mlp", calls.output(b.layer[-1].DenseReluDense))
    return s if decoder else _renamed(s, ENC)


def _t5(m, calls: Calls, kind: str, layer: int, lengths: dict) -> Split:
    cfg = m.config
    src, tgt, h = lengths["source"], lengths["target"], cfg.num_heads
    if kind == "cross":
        b = m.decoder.block[layer].layer[1]
        qs = normed(_t5_stream(m, calls, True, layer, tgt, True), b.layer_norm, calls.input(b.layer_norm))
        n = m.encoder.final_layer_norm
        ks = normed(_t5_stream(m, calls, False, cfg.num_layers, src), n, calls.input(n), calls.output(n))
        a, mask, bias = b.EncDecAttention, everything(tgt, src), None
    else:
        decoder = kind == "decoder self"
        t, stack = (tgt, m.decoder) if decoder else (src, m.encoder)
        b = stack.block[layer].layer[0]
        qs = ks = normed(_t5_stream(m, calls, decoder, layer, t), b.layer_norm, calls.input(b.layer_norm))
        a, mask = b.SelfAttention, causal(t, t) if decoder else everything(t, t)
        bias = stack.block[0].layer[0].SelfAttention.compute_bias(t, t)[0]     # (H, T, T), shared by the stack
    q = projected(qs, a.q.weight, None, h).transpose(1, 2)
    k = projected(ks, a.k.weight, None, h).transpose(1, 2)
    return Split(qs.names, ks.names, q, k, float(getattr(a, "scaling", 1.0)), mask, bias)


def _translator_stream(m, calls: Calls, decoder: bool, upto: int, t: int, cross_query: bool = False) -> Stream:
    """Our translator: embeddings scaled by sqrt(d), sinusoidal positions added by ``positions``
    (its second call is the decoder's). Post-LN (norm_first=False, as shipped): each norm
    after an add transforms the stream; pre-LN: the norms are the asked call's (``_translator``)."""
    stack, c, call = (m.decoder if decoder else m.encoder), m.config, -1 if decoder else 0
    post = (lambda s, n: normed(s, n, calls.input(n), calls.output(n))) if not c.norm_first else (lambda s, n: s)
    s = Stream(t, c.d_model)
    scaled = calls.input(m.positions, call)
    s.add("embed", scaled)
    s.add("pos", calls.output(m.positions, call) - scaled)
    for l in range(upto + (1 if cross_query else 0)):
        b = stack[l]
        blocks = [(b.self_attn, b.res_self.norm if decoder else b.res_attn.norm, "H")]
        if decoder and l < upto:
            blocks.append((b.cross_attn, b.res_cross.norm, "X"))
        for attn, norm, letter in blocks:
            p = attn.c_proj
            s.extend(head_outputs(calls.input(p), p, c.n_head, f"L{l}.{letter}", calls.output(p)))
            s = post(s, norm)
        if l < upto:
            s.add(f"L{l}.mlp", calls.output(b.ffn))
            s = post(s, b.res_ffn.norm)
    return s if decoder else _renamed(s, ENC)


def _translator(m, calls: Calls, kind: str, layer: int, lengths: dict) -> Split:
    c = m.config
    src, tgt, d, h = lengths["source"], lengths["target"], c.d_model, c.n_head
    pre = (lambda s, n: normed(s, n, calls.input(n), calls.output(n))) if c.norm_first else (lambda s, n: s)
    if kind == "cross":
        a = m.decoder[layer].cross_attn
        qs = pre(_translator_stream(m, calls, True, layer, tgt, True), m.decoder[layer].res_cross.norm)
        ks = pre(_translator_stream(m, calls, False, c.n_encoder_layers, src), m.enc_norm)   # pre-LN: a last norm
        q = projected(qs, a.c_q.weight, a.c_q.bias, h)
        k = projected(ks, a.c_kv.weight[:d], a.c_kv.bias[:d], h)
        mask = everything(tgt, src)
    else:
        decoder = kind == "decoder self"
        t, b = (tgt, m.decoder[layer]) if decoder else (src, m.encoder[layer])
        qs = ks = pre(_translator_stream(m, calls, decoder, layer, t), b.res_self.norm if decoder else b.res_attn.norm)
        a = b.self_attn
        q = projected(qs, a.c_attn.weight[:d], a.c_attn.bias[:d], h)
        k = projected(ks, a.c_attn.weight[d:2 * d], a.c_attn.bias[d:2 * d], h)
        mask = causal(t, t) if decoder else everything(t, t)
    return Split(qs.names, ks.names, q.transpose(1, 2), k.transpose(1, 2), (d // h) ** -0.5, mask)


PRE_LN_DECODERS = ("llama", "qwen2", "qwen3", "mistral", "gemma2", "phi3")


class Reference:
    """One float64 forward of ``loaded``'s model on the framed ids, every module hooked; then
    ``split(kind, layer)`` by the family's walk, and ``eager(kind, layer)``: transformers' own
    eager weights (H, Tq, Tk) of a Hugging Face model, None for ours."""

    def __init__(self, loaded, framed):
        self.m = m = float64_copy(loaded.model)
        self.lengths = {"source": len(framed.source_ids), "target": len(framed.target_ids)}
        src = torch.tensor([framed.source_ids]) if framed.source_ids else None
        tgt = torch.tensor([framed.target_ids]) if framed.target_ids else None
        self.hf = hasattr(m, "config") and hasattr(m.config, "model_type")
        self.family = m.config.model_type if self.hf else loaded.family
        calls = Calls(m)
        with torch.no_grad():
            if not self.hf:
                self.out = m(src, tgt) if self.family == "translator" else m(tgt if self.family == "gpt" else src)
            elif self.family in ("t5", "bart"):
                self.out = m(input_ids=src, decoder_input_ids=tgt, output_attentions=True)
            elif self.family in ("bert", "roberta"):
                self.out = m(input_ids=src, token_type_ids=torch.zeros_like(src), output_attentions=True)
            else:
                self.out = m(input_ids=tgt, output_attentions=True)
        calls.close()
        self.calls = calls

    def split(self, kind: str, layer: int) -> Split:
        m, calls, f = self.m, self.calls, self.family
        with torch.no_grad():
            if f in PRE_LN_DECODERS:
                return _pre_ln_decoder(m, calls, layer, self.lengths["target"])
            if f == "gpt2":
                return _gpt2(m, calls, layer, self.lengths["target"])
            if f == "gpt":
                return _our_gpt(m, calls, layer, self.lengths["target"])
            if f in ("bert", "roberta"):
                return _bert(m, calls, layer, self.lengths["source"])
            walk = {"t5": _t5, "bart": _bart, "translator": _translator}[f]
            return walk(m, calls, kind, layer, self.lengths)

    def eager(self, kind: str, layer: int) -> torch.Tensor | None:
        if not self.hf:
            return None
        field = {"encoder self": "encoder_attentions", "decoder self": "decoder_attentions",
                 "cross": "cross_attentions"}[kind] if self.family in ("t5", "bart") else "attentions"
        return getattr(self.out, field)[layer][0]


# ---- the comparison every family runs ---------------------------------------------------
TOLERANCE = 1e-5          # relative to the largest |term|: why runs in float32
TEXT = "the big dog sees the small cat ."
TARGET = "the cat sees the"      # an encoder-decoder's decoder prefix (no greedy translation)


def cells(kind: str, lengths: dict) -> tuple[int, int, int]:
    """(query, key, versus) of a kind: a causal key two back (inside Mistral's window of 4), an
    encoder's key after its query, a cross key near the source's start."""
    tq = lengths["source" if kind == "encoder self" else "target"]
    if kind == "encoder self":
        return 2, tq - 2, tq - 1
    if kind == "cross":
        return tq - 1, 1, 2
    return tq - 2, tq - 4, tq - 3


def aligned(ref: torch.Tensor, split: Split, q_names, k_names) -> torch.Tensor:
    """The reference's (Nq, Nk) table in why's order of names."""
    qi = [split.q_names.index(n) for n in q_names]
    ki = [split.k_names.index(n) for n in k_names]
    return ref[qi][:, ki]


def compare(loaded, reference: Reference, kind: str, layer: int, head: int, target: str | None) -> dict:
    """why against the reference at one cell (and its versus key); the trace's row against the
    reference's softmax; returns the worst relative gaps (for the report)."""
    import numpy as np

    from attnscope.engine.experiments import why
    from attnscope.engine.traces import trace_text

    split = reference.split(kind, layer)
    eager = reference.eager(kind, layer)
    if eager is not None:          # the reference's own scores against transformers' eager weights
        gap = float((split.weights(head) - eager[head]).abs().max())
        assert gap < SELF_CHECK, f"reference softmax differs from eager by {gap:.3g}"
    query, key, versus = cells(kind, reference.lengths)
    got = why(loaded, TEXT, kind, layer, head, query, key, versus=versus, target=target)
    assert sorted(got.query_sources) == sorted(split.q_names), (got.query_sources, split.q_names)
    assert sorted(got.key_sources) == sorted(split.k_names), (got.key_sources, split.k_names)
    gaps = {}
    for name, j, terms in (("terms", key, got.terms), ("versus", versus, got.versus.terms)):
        ref = aligned(split.terms(head, query, j), split, got.query_sources, got.key_sources).numpy()
        size = float(np.abs(ref).max())
        gaps[name] = float(np.abs(terms - ref).max()) / size
        assert gaps[name] <= TOLERANCE, (f"{name}: worst |why - reference| {np.abs(terms - ref).max():.3g} of "
                                         f"{size:.3g}", np.unravel_index(np.abs(terms - ref).argmax(), ref.shape))
    ref_score = float(split.terms(head, query, key).sum())
    assert abs(got.score - ref_score) <= TOLERANCE * max(1.0, abs(ref_score)), (got.score, ref_score)
    bias = 0.0 if split.position_bias is None else float(split.position_bias[head, query, key])
    assert abs(got.position_bias - bias) <= TOLERANCE * max(1.0, abs(bias)), (got.position_bias, bias)
    assert got.softcap == split.softcap, (got.softcap, split.softcap)       # Gemma 2: split before the cap
    trace = trace_text(loaded, TEXT, target=target)
    row = np.asarray(reading.row(trace, kind, layer, head, query), dtype=np.float64)
    ref_row = split.weights(head)[query].numpy()
    gaps["row"] = float(np.abs(row - ref_row).max())
    assert gaps["row"] <= TOLERANCE, (row, ref_row)
    assert abs(got.weight - row[key]) <= 1e-6 and abs(got.versus.weight - row[versus]) <= 1e-6, \
        (got.weight, row[key], got.versus.weight, row[versus])
    return gaps


class Opened:
    """A module's models, each opened once: ``get(family)`` -> (loaded, reference, target).
    Hugging Face families are tiny folders with three layers (so a middle layer has heads
    before it); ``random-*`` are ours as the window opens them; ``bundled-*`` the shipped
    checkpoints (the GPT's rotary path); ``pre-ln-translator`` ours with norm_first=True (its
    encoder ends with a norm). Tiny and random ones get ``randomized`` weights."""

    def __init__(self, root):
        self.root, self.kept = root, {}

    def get(self, family: str):
        if family not in self.kept:
            from attnscope.engine.adapters import adapter_for
            from attnscope.engine.decoding.greedy import frame
            from attnscope.engine.loading.catalog import CHECKPOINTS, open_model
            from tests.helpers.hf_tiny import tiny_folder

            if family == "pre-ln-translator":
                loaded = pre_ln_translator()
                randomized(loaded.model)
            elif family.startswith("bundled-"):
                loaded = open_model(str(CHECKPOINTS / f"{family[len('bundled-'):]}.safetensors"), "cpu")
            else:
                source = family if family.startswith("random-") else str(tiny_folder(self.root, family, layers=3))
                loaded = open_model(source, "cpu")
                randomized(loaded.model)
            adapter = adapter_for(loaded)
            target = TARGET if adapter.role == "encoder-decoder" else None
            self.kept[family] = loaded, Reference(loaded, frame(adapter, TEXT, target=target)), target
        return self.kept[family]


def pre_ln_translator():
    """The random translator rebuilt pre-LN (norm_first=True), three layers a side."""
    import dataclasses

    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.models.translator import Translator

    loaded = random_model("translator", layers=3)
    config = dataclasses.replace(loaded.model.config, norm_first=True)
    torch.manual_seed(0)
    return dataclasses.replace(loaded, model=Translator(config).eval())
