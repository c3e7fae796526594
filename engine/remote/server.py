"""What runs where the model is: inside one nnsight trace, on NDIF's GPUs (or here, under
ATTNSCOPE_NDIF=local), one attention call reduced to what travels back.

Each layer's attention-interface op hands transformers' arguments (module, q, k, v, mask,
scaling, ...); ``layer_call`` reads them as the seam does (engine.seam.hf_attention's
``interface_call``, so a keyword the seam does not understand is refused there too); with
interventions, ``changed`` runs the call through the seam under their hooks there and its
output replaces the op's (the seam's rules hold on the server too); ``reduce_call`` keeps:

- k, as the model used it (after rotary, one per key/value head);
- each query row's log-sum-exp (the softmax's log-denominator, the sink's term in it);
- every head's overview pixels, pooled by engine.traces.reading.thumbnails: the very
  code the local path draws with, run on the one call;
- q for the rows asked, with those rows of the mask and bias (a plain causal call: none; the
  triangle is rebuilt where the rows are read).

Everything is moved to the CPU before it is saved: a saved tensor on the server's GPU could
not be opened on a laptop without one. The functions here are shipped with the job by value
(engine.remote.jobs registers the engine with nnsight), so the server needs no attnscope.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from attnscope.engine.interventions.spec import marked
from attnscope.engine.kinds import DECODER_SELF, QUERY_SIDE
from attnscope.engine.seam import AttentionCall, Site, attend, hooks
from attnscope.engine.seam.hf_attention import interface_call
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces import reading


def layer_call(args: tuple, kwargs: dict, layer: int) -> AttentionCall:
    """The op's inputs ``(args, kwargs)`` as the seam's call at decoder self-attention ``layer``
    (engine.seam.hf_attention.interface_call: a keyword it does not understand is refused)."""
    module, query, key, value, mask, *rest = args
    call = interface_call(module, query, key, value, mask, *rest, **kwargs)
    return replace(call, site=Site(DECODER_SELF, layer))


def changed(call: AttentionCall, made: list) -> tuple[torch.Tensor, AttentionCall]:
    """The call run through the seam under the intervention hooks ``made`` (engine.interventions:
    one set for the whole forward, as a local Run's): (its output as transformers' attention
    interface returns it, (B, Tq, H, Dh); the call as the hooks changed it: a knockout's
    blocked cells masked), so what is drawn is what was computed."""
    with hooks(*made):
        out = attend(call)                                                         # (B, H, Tq, Dh)
    return out.transpose(1, 2).contiguous(), marked(made, {call.site: call})[call.site]


@torch.no_grad()
def reduce_call(call: AttentionCall, rows: tuple[int, int] | None, overviews: list[tuple[int, str]],
                keep_k: bool = True) -> dict:
    """One attention call -> the tensors that travel: ``k`` (Hkv, T, Dh), ``lse`` (H, T)
    float32, per (size, how) in ``overviews`` the pooled pixels (H, rows, cols) and the first
    key's (H, rows), and for ``rows`` [r0, r1): ``q`` (H, r, Dh) and the rows of the mask and
    bias (None where there are none). Plain numbers (scale, softcap, window, causal) and the
    sink logits (H,) go with them."""
    call = call.detached()
    t = call.q.shape[2]
    sides = {"source": [], "target": []}
    sides[QUERY_SIDE[DECODER_SELF]] = [""] * t
    one = RecordedTrace({DECODER_SELF: [call]}, model_name="", family="", source_tokens=sides["source"],
                        target_tokens=sides["target"])
    out = {"scale": call.scale, "softcap": call.softcap, "window": call.window, "causal": call.causal,
           "heads": call.q.shape[1], "tokens": t, "overviews": {}}
    for size, how in overviews:
        thumbs = reading.thumbnails(one, DECODER_SELF, size, how)
        out["overviews"][(size, how)] = (torch.from_numpy(thumbs.pooled[0]), torch.from_numpy(thumbs.sink[0]))
    lse = one.row_lse(DECODER_SELF, 0)
    if lse is None:                                 # no overview asked: the rows' log-denominators, a layer at once
        lse = call.log_denominators(call.scores(0), 0)
    out["lse"] = lse.float().cpu()                                                   # (H, T)
    out["k"] = call.k[0].cpu() if keep_k else None                                   # (Hkv, T, Dh)
    out["sink"] = None if call.sink is None else (call.sink if call.sink.dim() == 1 else call.sink[0]).float().cpu()
    # (H,) one per head, or (H, T) one per query (Inkling 2)
    out["q"] = out["mask"] = out["bias"] = None
    if rows is not None:
        r = slice(*rows)
        out["q"] = call.q[0, :, r].cpu()                                             # (H, r, Dh)
        out["mask"] = _rows_of(call.mask, r, boolean=True)                          # (1, 1|H, r, T) bool
        out["bias"] = _rows_of(call.bias, r, boolean=False)                         # (1, 1|H, r, T)
    return out


def _rows_of(x: torch.Tensor | None, rows: slice, boolean: bool) -> torch.Tensor | None:
    """The first example's ``rows`` of a (B|1, H|1, T|1, T) mask or bias, on the CPU; a float
    mask (eager attention's: 0 where seen, the dtype's minimum where not) as bool, True = seen."""
    if x is None:
        return None
    x = x[:1]
    x = x[:, :, rows] if x.shape[2] > 1 else x
    if boolean and x.dtype != torch.bool:
        x = x > torch.finfo(x.dtype).min / 2
    return x.contiguous().cpu()
