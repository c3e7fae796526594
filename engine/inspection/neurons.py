"""The neuron view's numbers: a head's query and key vectors, read from the Run's recording.

The seam recorded every attention call of the Run (engine.seam): the queries and keys as
the model used them (after rotary; the key head a grouped query head shares), the mask,
additive bias (T5's relative positions), scale and softcap. So the view needs no second
forward, and softmax(q . k * scale + bias) over the keys the mask allows is the trace's
head exactly, for every family and architecture (tests/gui/test_neurons.py). With merged word
pieces, a word's row is its pieces' rows merged the way the trace merges them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.engine.kinds import KEY_SIDE, NOT_SOFTMAX, QUERY_SIDE
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces.words import merge_pieces
from attnscope.engine.inputs import check_kind
from attnscope.engine.traces import reading


@dataclass
class QueryKeys:
    queries: np.ndarray      # (Tq, Dh) this head's query vectors (pieces)
    keys: np.ndarray         # (Tk, Dh) this head's key vectors (pieces)
    masked: np.ndarray       # (Tq, Tk) bool: the key may not be attended (causal, padding, window)
    trace: AttentionTrace    # the trace of the same forward, for labels and checking
    kind: str = ""
    scale: float | None = None       # scores = q.k * scale (None: 1 / sqrt(Dh))
    bias: np.ndarray | None = None   # (Tq, Tk) finite additive terms (T5's position bias)
    note: str = ""                   # e.g. which key head a query head shares (grouped-query attention)
    softcap: float | None = None     # Gemma 2: scores = cap * tanh(scores / cap), before the bias
    groups: tuple[list[int], list[int]] | None = None   # word index per query / key piece when merged
    sink: np.ndarray | None = None   # (Tq,) each row's sink logit (gpt-oss: the head's, in every row; Inkling 2: the
                                     # query's own), one more term of each row's denominator

    def _piece_row(self, qi: int) -> dict[str, np.ndarray]:
        q, k = self.queries[qi], self.keys
        product = k * q[None, :]                               # (Tk, Dh)
        scale = 1 / np.sqrt(q.shape[-1]) if self.scale is None else self.scale
        scores = product.sum(-1) * scale                       # (Tk,)
        if self.softcap:
            scores = self.softcap * np.tanh(scores / self.softcap)
        if self.bias is not None:
            scores = scores + self.bias[qi]
        live = ~self.masked[qi]
        top = scores[live].max() if live.any() else 0.0
        sink = None if self.sink is None else float(self.sink[qi])
        if sink is not None:
            top = max(top, sink) if live.any() else sink
        e = np.where(live, np.exp(np.where(live, scores, 0.0) - top), 0.0)
        total = e.sum() + (np.exp(sink - top) if sink is not None else 0.0)
        return {"query": q, "keys": k, "product": product, "scores": scores, "masked": ~live,
                "weights": e / total if total > 0 else e}

    def row(self, qi: int) -> dict[str, np.ndarray]:
        """Everything the view draws for query ``qi``: q, k, q*k, q.k (scaled, biased), softmax.
        With merged words, ``qi`` is a word: its pieces' vectors are averaged for the picture,
        and its weights are the trace's (pieces' rows averaged, keys of a word summed)."""
        if self.groups is None:
            return self._piece_row(qi)
        qg, kg = np.asarray(self.groups[0]), np.asarray(self.groups[1])
        pieces = np.flatnonzero(qg == qi)
        rows = np.stack([self._piece_row(int(p))["weights"] for p in pieces])      # (n, Tk)
        weights = merge_pieces(rows, list(range(len(pieces))), list(kg)).mean(0)   # (Wk,)
        q = self.queries[pieces].mean(0)
        onehot = (kg[:, None] == np.arange(kg.max() + 1)[None, :]).astype(np.float32)   # (Tk, Wk)
        keys = (onehot.T @ self.keys) / onehot.sum(0)[:, None]                     # (Wk, Dh)
        product = keys * q[None, :]
        with np.errstate(divide="ignore"):
            scores = np.log(weights)          # a word's score: the log of its merged weight
        return {"query": q, "keys": keys, "product": product, "scores": scores, "masked": weights == 0,
                "weights": weights}


@torch.no_grad()
def query_keys(trace: AttentionTrace, kind: str, layer: int, head: int) -> QueryKeys:
    """One head's queries and keys from the recording behind ``trace``."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    recording = trace.recording
    if recording is None:
        raise ValueError("This trace was read from a file: it holds the weights, not the queries and keys behind "
                         "them. Run the model on the text to see them.")
    if kind in NOT_SOFTMAX:
        raise ValueError(f"{kind.capitalize()} is what a linear-attention layer mixes its values with, not a softmax "
                         "of query-key scores, so the neuron view has no scores to split.")
    call, b = recording.call(kind, layer), recording.batch_index
    tq, tk = recording.piece_span(kind)
    kv = call.kv_head(head)
    n_heads, n_kv = call.q.shape[1], call.k.shape[1]
    add = call.terms(b, [head], slice(0, tq))   # mask, causal triangle and bias as one term: -inf where masked
    if add is None:
        masked = torch.zeros(tq, tk, dtype=torch.bool)
    else:
        masked = torch.isneginf(add[0, 0].cpu()).expand(tq, call.k.shape[2])[:, :tk]
    bias = None
    if call.bias is not None:
        pb = call.bias[b if call.bias.shape[0] > 1 else 0, head if call.bias.shape[1] > 1 else 0].float().cpu()
        bias = pb.expand(call.q.shape[2], call.k.shape[2])[:tq, :tk].numpy()
    notes = [f"Grouped-query attention: query head {head} uses key/value head {kv}, shared by "
             f"{n_heads // n_kv} query heads."] if n_kv < n_heads else []
    if call.softcap:
        notes.append(f"Scores are soft-capped: {call.softcap:g} x tanh(q.k x scale / {call.softcap:g}), "
                     "so none exceeds the cap.")
    if call.window:
        notes.append(f"Sliding window: each query sees only the last {int(call.window)} tokens.")
    if call.chosen:
        notes.append(f"Sparse attention: an indexer picked {call.chosen} keys for each query; the others are masked, "
                     "their weight exactly 0.")
    sink = call.sink_logits(b, [head], slice(0, tq))                     # (1, 1) or (1, tq)
    if sink is not None:
        sink = sink[0].expand(tq).cpu().numpy()                            # (tq,)
        said = f"exp({sink[0]:.3g})" if call.sink.dim() == 1 else "each query's own exp(sink)"
        notes.append(f"Attention sink: {said} joins each row's softmax denominator and reads no value, "
                     "so the row sums to less than 1.")
    groups = None
    if reading.groups(trace):
        groups = (reading.groups(trace)[QUERY_SIDE[kind]], reading.groups(trace)[KEY_SIDE[kind]])
        notes.append("Words merged: a word's vectors are its pieces' mean; its weights are the trace's.")
    return QueryKeys(call.q[b, head, :tq].float().cpu().numpy(), call.k[b, kv, :tk].float().cpu().numpy(),
                     masked.numpy(), trace, kind, scale=call.scale, bias=bias, note=" ".join(notes),
                     softcap=call.softcap, groups=groups, sink=sink)
