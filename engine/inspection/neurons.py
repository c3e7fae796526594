"""The neuron view's numbers: a head's query and key vectors for a text.

Attention weights come back from the forward pass; the q and k vectors behind them are
taken as the model uses them. For attnscope's own models they are recomputed from the
attention module's *input*, which a forward pre-hook copies out for the duration of one
traced forward. For Hugging Face models (any architecture: rotary positions, grouped-query
attention, T5's relative position bias) they are read where transformers hands them to its
eager attention function, after rotation and before the key heads are shared out: a thin
wrapper around that function records them, in this thread only, during one traced forward.
Then softmax(q . k * scale + bias) reproduces the trace's weights, which the tests check
for every family and architecture.
"""
from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass

import numpy as np
import torch

from engine.loading.loaded import LoadedModel
from engine.models.outputs import CROSS, DECODER_SELF, ENCODER_SELF
from engine.traces.dense import AttentionTrace


@dataclass
class QueryKeys:
    queries: np.ndarray      # (Tq, Dh) this head's query vectors
    keys: np.ndarray         # (Tk, Dh) this head's key vectors
    causal: bool             # keys after the query are masked (decoder self-attention)
    trace: AttentionTrace    # the trace of the same forward, for labels and checking
    scale: float | None = None       # scores = q.k * scale (None: 1 / sqrt(Dh))
    bias: np.ndarray | None = None   # (Tq, Tk) added to the scores: -inf where masked, T5's position bias
    note: str = ""                   # e.g. which key head a query head shares (grouped-query attention)
    softcap: float | None = None     # Gemma 2: scores = cap * tanh(scores / cap), before the bias

    def row(self, qi: int) -> dict[str, np.ndarray]:
        """Everything the view draws for query ``qi``: q, k, q*k, q.k, softmax (masked keys 0)."""
        q, k = self.queries[qi], self.keys
        product = k * q[None, :]                               # (Tk, Dh)
        scale = 1 / math.sqrt(q.shape[-1]) if self.scale is None else self.scale
        scores = product.sum(-1) * scale                       # (Tk,)
        if self.softcap:
            scores = self.softcap * np.tanh(scores / self.softcap)
        if self.bias is not None:
            scores = scores + self.bias[qi]
        live = np.isfinite(scores)
        if self.causal:
            live[qi + 1:] = False
        e = np.where(live, np.exp(np.where(live, scores, 0.0) - scores[live].max()), 0.0)
        return {"query": q, "keys": k, "product": product, "scores": scores,   # -inf where the bias masks
                "weights": e / e.sum()}


def _module(loaded: LoadedModel, kind: str, layer: int):
    m = loaded.model
    if loaded.family == "translator":
        return {ENCODER_SELF: lambda: m.encoder[layer].self_attn, DECODER_SELF: lambda: m.decoder[layer].self_attn,
                CROSS: lambda: m.decoder[layer].cross_attn}[kind]()
    if loaded.family == "gpt":
        return m.transformer.h[layer].attn
    if loaded.family == "bert":
        return m.layers[layer].attention
    raise ValueError(f"no neuron view for a {loaded.family} model")


def _heads(x: torch.Tensor, n_head: int, head: int) -> torch.Tensor:
    t, d = x.shape[-2:]
    return x.reshape(t, n_head, d // n_head)[:, head]  # (T, Dh)


@torch.no_grad()
def query_keys(loaded: LoadedModel, text: str, kind: str, layer: int, head: int,
               target: str | None = None, pair: str | None = None) -> QueryKeys:
    from engine.traces.tracing import trace_text

    if loaded.is_hf:
        return _hf_query_keys(loaded, text, kind, layer, head, target, pair)
    module = _module(loaded, kind, layer)
    captured = {}

    def grab(_mod, args, kwargs):  # the last call is the traced forward
        captured["x"] = args[0] if args else kwargs.get("hidden_states", kwargs.get("x"))
        captured["memory"] = args[1] if len(args) > 1 else kwargs.get("memory")

    handle = module.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        trace = trace_text(loaded, text, target=target, pair=pair)
    finally:
        handle.remove()
    x = captured["x"][0]                                       # (Tq, D) of example 0
    if kind == CROSS:
        d = module.d_model
        q = _heads(module.c_q(x), module.n_head, head)
        k = _heads(module.c_kv(captured["memory"][0]).split(d, dim=-1)[0], module.n_head, head)
    else:
        d = module.d_model
        qx, kx, _ = module.c_attn(x).split(d, dim=-1)
        q, k = _heads(qx, module.n_head, head), _heads(kx, module.n_head, head)
        rotary = getattr(loaded.model, "rotary", None)
        if rotary is not None:
            pos = torch.arange(x.shape[0], device=x.device)
            q, k = rotary.rotate(q[None], pos)[0], rotary.rotate(k[None], pos)[0]
    tq, tk = trace.shape(kind)[2:]
    return QueryKeys(q[:tq].float().cpu().numpy(), k[:tk].float().cpu().numpy(), kind == DECODER_SELF, trace)


# ---- Hugging Face models: q and k where transformers hands them to eager attention -----------
_RECORDING = threading.local()      # .calls: a list while this thread records, else absent


def _recording_attention(original):
    def eager_attention_forward(module, query, key, value, attention_mask, *args, **kwargs):
        calls = getattr(_RECORDING, "calls", None)
        if calls is not None:
            calls.append((query.detach(), key.detach(), attention_mask, kwargs))
        return original(module, query, key, value, attention_mask, *args, **kwargs)
    eager_attention_forward.attnscope_wraps = original
    return eager_attention_forward


def _wrap_eager_attention(model) -> None:
    """Wrap (once) the eager attention function of every modeling module the model uses.
    The wrapper only records in a thread that asked for it; everywhere else it is a pass-through."""
    for sub in model.modules():
        mod = sys.modules.get(type(sub).__module__)
        fn = getattr(mod, "eager_attention_forward", None)
        if fn is not None and not hasattr(fn, "attnscope_wraps"):
            mod.eager_attention_forward = _recording_attention(fn)


def _hf_query_keys(loaded: LoadedModel, text: str, kind: str, layer: int, head: int, target, pair) -> QueryKeys:
    from engine.traces.tracing import trace_text

    _wrap_eager_attention(loaded.model)
    _RECORDING.calls = calls = []
    try:
        trace = trace_text(loaded, text, target=target, pair=pair)
    finally:
        del _RECORDING.calls
    n_layers = {k: trace.shape(k)[0] for k in trace.kinds}
    # The traced forward is the last one: encoder layers in order, then per decoder layer its
    # self-attention and (encoder-decoders) its cross-attention.
    order = [(ENCODER_SELF, i) for i in range(n_layers.get(ENCODER_SELF, 0))]
    for i in range(n_layers.get(DECODER_SELF, 0)):
        order += [(DECODER_SELF, i)] + ([(CROSS, i)] if CROSS in n_layers else [])
    if len(calls) < len(order):
        raise ValueError(f"{loaded.name}: its attention does not go through transformers' eager function, so the "
                         "neuron view cannot show its queries and keys.")
    query, key, mask, kwargs = calls[len(calls) - len(order):][order.index((kind, layer))]
    n_heads, n_kv = query.shape[1], key.shape[1]
    kv_head = head // (n_heads // n_kv)
    tq, tk = trace.shape(kind)[2:]
    scaling = kwargs.get("scaling")
    scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
    bias = torch.zeros(query.shape[2], key.shape[2])
    if kwargs.get("position_bias") is not None:
        pb = kwargs["position_bias"]
        bias = bias + pb[0, head if pb.shape[1] > 1 else 0].float().cpu()
    if mask is not None:
        m = mask[0, 0 if mask.shape[1] == 1 else head].cpu()
        bias = bias + (torch.where(m, 0.0, float("-inf")) if m.dtype == torch.bool else m.float().clamp(min=-1e30))
        bias = torch.where(bias < -1e29, float("-inf"), bias)
    notes = [f"Grouped-query attention: query head {head} uses key/value head {kv_head}, shared by "
             f"{n_heads // n_kv} query heads."] if n_kv < n_heads else []
    softcap = kwargs.get("softcap")
    if softcap:
        notes.append(f"Scores are soft-capped: {float(softcap):g} x tanh(q.k x scale / {float(softcap):g}), "
                     "so none exceeds the cap.")
    window = kwargs.get("sliding_window")
    if window:
        notes.append(f"Sliding window: each query sees only the last {int(window)} tokens.")
    return QueryKeys(query[0, head, :tq].float().cpu().numpy(), key[0, kv_head, :tk].float().cpu().numpy(),
                     False, trace, scale=scale, bias=bias[:tq, :tk].numpy(), note=" ".join(notes),
                     softcap=float(softcap) if softcap else None)
