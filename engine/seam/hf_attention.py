"""Hugging Face models at the seam: one attention function registered with transformers.

transformers 5 routes every supported architecture's attention through
``ALL_ATTENTION_FUNCTIONS[config._attn_implementation]`` with (module, query, key, value,
mask, scaling, dropout, and per model: sliding_window, softcap, position_bias). We register
``attnscope`` there, with the boolean mask builder transformers gives its sdpa path (True =
may attend; left out, as for sdpa, where the call is plainly causal or sees every key: the
call then says ``causal``, which the fused kernel runs fastest and the recording keeps),
and switch a model to it. Each attention module
learns its ``Site`` once, by one small forward that notes the order and shapes of the calls
(``assign_sites``): that needs no table of module names per architecture.
"""
from __future__ import annotations

import torch

from engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF
from engine.runtime.device import input_device
from engine.seam.attend import SeamHook, attend, hooks
from engine.seam.call import AttentionCall, Site

NAME = "attnscope"
_registered = False


def attnscope_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' attention-function signature -> ``attend``; returns ((B, Tq, H, Dh), None):
    weights are never returned by the model, a Recorder keeps what they are computed from."""
    scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
    softcap = kwargs.get("softcap")
    is_causal = kwargs.get("is_causal")
    is_causal = getattr(module, "is_causal", True) if is_causal is None else is_causal   # as transformers' sdpa path
    call = AttentionCall(getattr(module, "attnscope_site", None), query, key, value, mask=attention_mask,
                         bias=kwargs.get("position_bias"), scale=scale, softcap=float(softcap) if softcap else None,
                         window=kwargs.get("sliding_window"), dropout=dropout, module=module,
                         causal=bool(is_causal) and attention_mask is None and query.shape[2] > 1)
    return attend(call).transpose(1, 2).contiguous(), None


def register() -> None:
    """Register the function and its mask builder with transformers (once per process)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, attnscope_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    _registered = True


class SiteError(RuntimeError):
    """A model whose attention does not reach the seam the way attnscope needs."""


class _Discovery(SeamHook):
    def __init__(self):
        self.seen: list[tuple[object, int, int]] = []   # (module, Tq, Tk) in call order

    def see(self, call):
        self.seen.append((call.module, call.q.shape[2], call.k.shape[2]))


@torch.no_grad()
def assign_sites(model, role: str) -> list[Site]:
    """Switch ``model`` to the seam and give each attention module its Site, from one forward
    on a short source (5 tokens) and target (3): encoder self-attention is 5 x 5, decoder
    self-attention 3 x 3 and cross-attention 3 x 5; layers count in call order."""
    register()
    model.set_attn_implementation(NAME)
    if model.config._attn_implementation != NAME:
        raise SiteError(f"{type(model).__name__} does not route its attention through transformers' "
                        "AttentionInterface, so attnscope cannot see it.")
    found = _Discovery()
    dev = input_device(model)                       # a spread model: where its first module runs
    src, tgt = torch.full((1, 5), 3, device=dev), torch.full((1, 3), 3, device=dev)
    with hooks(found):
        if role == "encoder-decoder":
            model(input_ids=src, decoder_input_ids=tgt)
        else:
            model(input_ids=src)
    kind_of = {"encoder": {(5, 5): ENCODER_SELF}, "decoder": {(5, 5): DECODER_SELF},
               "encoder-decoder": {(5, 5): ENCODER_SELF, (3, 3): DECODER_SELF, (3, 5): CROSS}}[role]
    counts: dict[str, int] = {}
    sites, modules = [], set()
    for module, tq, tk in found.seen:
        kind = kind_of.get((tq, tk))
        if kind is None or id(module) in modules:
            raise SiteError(f"{type(model).__name__}'s attention calls do not line up with its layers "
                            "(a module shared across layers, or an unusual shape), so attnscope cannot name them.")
        modules.add(id(module))
        site = Site(kind, counts.get(kind, 0))
        counts[kind] = site.layer + 1
        module.attnscope_site = site
        sites.append(site)
    if not sites:
        raise SiteError(f"{type(model).__name__} made no attention call through the seam.")
    return sites
