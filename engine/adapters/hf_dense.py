"""The dense fallback: a Hugging Face family whose attention never reaches the seam.

Some families compute attention in their own classes (GPT-Neo, BLOOM, Falcon, DeBERTa ...)
or call one attention module in every layer (ALBERT), so the seam cannot see or tell apart
their heads. Such a model is read again with transformers' eager attention when the seam
refuses it (``fall_back``, the loader's last question; marked ``meta["dense"]``), and its
trace is read from the model's own ``output_attentions=True``: exact by definition, held in
full (L, H, T, T) per kind as a DenseTrace. This module is the one place attnscope reads a
model's returned weights (``eager_attentions``: the load-time probe and every draw); it lives
beside the adapters because it is the adapter's way of running the model (engine.traces holds
the seam's traces). The memory it needs grows with T squared, so a Run's estimate
(engine.traces.estimate) measures a text first and refuses a long one with the numbers.

What needs the seam (interventions, patching, Why, recording) asks ``site_modules`` or
``recorded_sizes`` first, and is refused there in one sentence.
"""
from __future__ import annotations

import inspect

import numpy as np
import torch

from attnscope.engine.adapters.hf import HFDecoderAdapter, HFEncoderAdapter
from attnscope.engine.inputs import InputError
from attnscope.engine.kinds import DECODER_SELF, ENCODER_SELF
from attnscope.engine.runtime.quiet import quiet_transformers
from attnscope.engine.seam.hf_attention import SiteError, UnseenAttention

SAID = "this family is drawn from its own attention weights; long texts need the seam"
NOTE = SAID[0].upper() + SAID[1:] + "."      # the loader's note, as the window and the CLI show it
PROBE = 7                                    # tokens of the load-time probe


SEAM_TOOLS = "interventions, patching, Why, DLA, the atlas and recordings"   # what the fallback cannot do


def needs_seam(name: str, what: str | None = None) -> InputError:
    """The one sentence a seam-only tool (``what``; else all of them, asked deep inside one) gets
    on a fallback model."""
    said = f"{what} needs" if what else f"{SEAM_TOOLS} need"
    return InputError(f"{name}: {said} attnscope's attention seam, and {SAID.split(';')[0]}, so its heads cannot "
                      "be changed or recorded.")


def check_seam(loaded, what: str) -> None:
    """``what`` refused in one sentence before it runs when ``loaded`` is drawn by the dense fallback."""
    if loaded.meta.get("dense"):
        raise needs_seam(loaded.name, what)


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
    return [NOTE]


class _Dense:
    """What the two fallback adapters share: the estimate, the eager forward, the refusals."""

    dense = True
    kind = DECODER_SELF

    def prepare(self, prompt, interventions=None, *args, **kwargs):
        if interventions:
            raise needs_seam(self.loaded.name, "an intervention")
        return super().prepare(prompt, None, *args, **kwargs)

    def site_modules(self):
        raise needs_seam(self.loaded.name)

    def recorded_sizes(self):
        raise needs_seam(self.loaded.name)

    def output_projection(self, site):
        raise needs_seam(self.loaded.name)

    def residual_blocks(self, kind: str = DECODER_SELF) -> list[torch.nn.Module]:
        """The blocks by layer, found without the seam (the base finds them by their attention
        sites): the one ModuleList of as many children of one class as the config has layers
        (GPT-Neo's, BLOOM's and Falcon's ``h``). What the logit lens reads; it checks the
        unembedding of the last block's output against the model's own logits itself."""
        layers = self.sizes()[0]
        for lst in self.model.modules():
            if (isinstance(lst, torch.nn.ModuleList) and kind == self.kind and len(lst) == layers
                    and len({type(child) for child in lst}) == 1):
                return list(lst)
        raise needs_seam(self.loaded.name, "reading each layer's output")

    def sizes(self) -> tuple[int, int, int]:
        """(layers, heads, hidden width) from the config (transformers' attribute map names them alike):
        what a Run's estimate (engine.traces.estimate) reads in place of a recorded forward."""
        config = self.model.config.get_text_config()
        return tuple(int(getattr(config, name, None) or 1)
                     for name in ("num_hidden_layers", "num_attention_heads", "hidden_size"))

    @torch.no_grad()
    def dense_weights(self, framed) -> tuple[dict[str, np.ndarray], list[str]]:
        """({kind: (L, H, T, T) float32}, notes) of ``framed``, read from eager's ``output_attentions``:
        what engine.traces.tracing holds as a DenseTrace, after the Run's estimate (check_run) let it."""
        weights = eager_attentions(self.model, self._given(framed))
        held = np.stack([w[0].float().cpu().numpy() for w in weights])                    # (L, H, T, T)
        return {self.kind: held}, list(framed.notes) + [f"{self.loaded.name}: {SAID}."]


class HFDenseDecoderAdapter(_Dense, HFDecoderAdapter):
    kind = DECODER_SELF

    def _given(self, framed) -> dict:
        return {"input_ids": self._tensor(framed.target_ids), "use_cache": False}


class HFDenseEncoderAdapter(_Dense, HFEncoderAdapter):
    kind = ENCODER_SELF

    def _given(self, framed) -> dict:
        return {k: self._tensor(v) for k, v in framed.extra.items()}
