"""The neuron view's numbers: a head's query and key vectors for a text.

Attention weights come back from the forward pass; the q and k vectors behind them are
recomputed here from the attention module's *input*, which a forward pre-hook copies out
for the duration of one traced forward and is removed right after. Then
softmax(q . k / sqrt(d)) with the model's mask reproduces the trace's weights, which the
tests check for every family.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from engine.loaded import LoadedModel
from engine.models.outputs import CROSS, DECODER_SELF, ENCODER_SELF
from engine.trace import AttentionTrace


@dataclass
class QueryKeys:
    queries: np.ndarray      # (Tq, Dh) this head's query vectors
    keys: np.ndarray         # (Tk, Dh) this head's key vectors
    causal: bool             # keys after the query are masked (decoder self-attention)
    trace: AttentionTrace    # the trace of the same forward, for labels and checking

    def row(self, qi: int) -> dict[str, np.ndarray]:
        """Everything the view draws for query ``qi``: q, k, q*k, q.k, softmax (masked keys 0)."""
        q, k = self.queries[qi], self.keys
        product = k * q[None, :]                               # (Tk, Dh)
        scores = product.sum(-1) / math.sqrt(q.shape[-1])      # (Tk,)
        live = np.ones(len(k), dtype=bool)
        if self.causal:
            live[qi + 1:] = False
        e = np.where(live, np.exp(scores - scores[live].max()), 0.0)
        return {"query": q, "keys": k, "product": product, "scores": scores, "weights": e / e.sum()}


def _module(loaded: LoadedModel, kind: str, layer: int):
    m = loaded.model
    if loaded.family == "translator":
        return {ENCODER_SELF: lambda: m.encoder[layer].self_attn, DECODER_SELF: lambda: m.decoder[layer].self_attn,
                CROSS: lambda: m.decoder[layer].cross_attn}[kind]()
    if loaded.family == "gpt":
        return m.transformer.h[layer].attn
    if loaded.family == "bert":
        return m.layers[layer].attention
    if loaded.family == "hf-bert":
        return m.encoder.layer[layer].attention.self
    raise ValueError(f"no neuron view for a {loaded.family} model")


def _heads(x: torch.Tensor, n_head: int, head: int) -> torch.Tensor:
    t, d = x.shape[-2:]
    return x.reshape(t, n_head, d // n_head)[:, head]  # (T, Dh)


@torch.no_grad()
def query_keys(loaded: LoadedModel, text: str, kind: str, layer: int, head: int,
               target: str | None = None, pair: str | None = None) -> QueryKeys:
    from engine.tracing import trace_text

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
    if loaded.family == "hf-bert":
        n = loaded.model.config.num_attention_heads
        q, k = _heads(module.query(x), n, head), _heads(module.key(x), n, head)
    elif kind == CROSS:
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
