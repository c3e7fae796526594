"""The loader's last question before it refuses a Hugging Face folder the seam cannot see.

Some families compute attention in their own classes (GPT-Neo, BLOOM, Falcon, DeBERTa ...) or
call one attention module in every layer (ALBERT): the seam refuses them (a SiteError). Such a
model can still be drawn exactly from its own eager ``output_attentions`` at short lengths
(engine.adapters.hf_dense runs it so); here, at load time, the model is read again with eager
attention and marked ``meta["dense"]`` when eager gives token-to-token weights, or the seam's
refusal stands.
"""
from __future__ import annotations

import inspect

import torch

from attnscope.engine.runtime.quiet import quiet_transformers
from attnscope.engine.seam.hf_attention import SiteError, UnseenAttention

NOTE = "This family is drawn from its own attention weights; long texts need the seam."


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
        ids = torch.arange(3, 10, device=device)[None]                       # (1, 7)
        given = {"input_ids": ids}
        if role == "encoder" and "token_type_ids" in inspect.signature(eager.forward).parameters:
            given["token_type_ids"] = torch.zeros_like(ids)     # as the encoder adapter frames a text (TAPAS fails)
        weights = eager(**given, output_attentions=True).attentions
    except Exception:      # transformers' own refusal to run eager or return weights: the seam's sentence stands
        raise refused from None
    weights = [w for w in (weights or ()) if isinstance(w, torch.Tensor)]
    if not weights or any(w.dim() != 4 or w.shape[-2:] != (7, 7) for w in weights):
        raise refused
    if len({w.shape[1] for w in weights}) != 1:
        raise refused
    loaded.model = eager
    loaded.meta["dense"] = True
    return [NOTE]


