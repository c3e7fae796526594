"""The dense fallback's load-time half: a family whose attention never reaches the seam, read again eager.

Some families compute attention in their own classes (GPT-Neo, BLOOM, Falcon, DeBERTa ...) or call
one attention module in every layer (ALBERT), so the seam cannot see or tell apart their heads.
When the seam refuses such a model at load (``UnseenAttention``), ``fall_back`` reads it again with
transformers' eager attention and marks it ``meta["dense"]``; its trace is then read from the
model's own ``output_attentions=True`` by the adapter (engine.adapters.hf_dense). ``eager_attentions``
is the one reader of a model's returned weights, for the load-time probe and for every draw. It
lives in loading, below the adapters, because the loader asks it before any adapter exists; its
note and the refusal of seam-only tools are in engine.loading.dense (torch-free).
"""
from __future__ import annotations

import inspect

import torch

from attnscope.engine.loading.dense import DENSE_NOTE
from attnscope.engine.runtime.quiet import quiet_transformers
from attnscope.engine.seam.hf_attention import SiteError, UnseenAttention

PROBE = 7                                    # tokens of the load-time probe


@torch.no_grad()
def eager_attentions(model, given: dict) -> list[torch.Tensor]:
    """The (1, H, T, T) weights ``model`` (opened eager) returns for the inputs ``given``, one per
    layer that returns some: the one reader of a model's own ``output_attentions``."""
    out = model(**given, output_attentions=True).attentions
    return [w for w in (out or ()) if isinstance(w, torch.Tensor)]


@torch.no_grad()
def fall_back(loaded, role: str, device, refused: Exception) -> list[str]:
    """The loader's notes for ``loaded`` read again with eager attention and marked ``meta["dense"]``,
    when the seam refused it (``refused``) and eager's own weights are a trace: a decoder or an
    encoder whose every layer returns (1, H, T, T) on a probe. Else ``refused`` is raised again
    (a state-space or Fourier layer, pooled keys: no token-to-token weights to draw)."""
    if not isinstance(refused, UnseenAttention):     # a wrong number, a keyword not understood: the refusal stands
        raise refused
    folder, model = loaded.meta.get("folder"), loaded.model
    if role == "encoder-decoder" or not folder or getattr(model, "hf_device_map", None):
        said = "an encoder-decoder" if role == "encoder-decoder" else "a model spread over devices"
        raise type(refused)(f"{str(refused).rstrip('.')}; the dense fallback (its own attention weights) does not "
                            f"take {said}.") if isinstance(refused, SiteError) else refused
    try:     # read again, eager (BLOOM cannot switch in place: its mask would stay the seam's)
        with quiet_transformers():
            eager = type(model).from_pretrained(folder, config=model.config, attn_implementation="eager",
                                                local_files_only=True, trust_remote_code=False, dtype=model.dtype)
        eager.to(device).eval()
        ids = torch.arange(3, 3 + PROBE, device=device)[None]                   # (1, 7)
        given = {"input_ids": ids}
        if role == "encoder" and "token_type_ids" in inspect.signature(eager.forward).parameters:
            given["token_type_ids"] = torch.zeros_like(ids)     # as the encoder adapter frames a text (TAPAS fails)
        weights = eager_attentions(eager, given)
    except Exception:      # transformers' own refusal to run eager or return weights: the seam's sentence stands
        raise refused from None
    if not weights or any(w.dim() != 4 or w.shape[-2:] != (PROBE, PROBE) for w in weights):
        raise refused
    if len({w.shape[1] for w in weights}) != 1:
        raise refused
    loaded.model = eager
    loaded.meta["dense"] = True
    return [DENSE_NOTE]
