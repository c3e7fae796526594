"""The dense fallback: a Hugging Face family whose attention never reaches the seam.

Some families compute attention in their own classes (GPT-Neo, BLOOM, Falcon, DeBERTa ...)
or call one attention module in every layer (ALBERT), so the seam cannot see or tell apart
their heads. Such a model is read again with transformers' eager attention (``fall_back``,
asked by the loader when the seam refuses it; marked ``meta["dense"]``), and its trace is read
from the model's own ``output_attentions=True``: exact by definition, held in full
(L, H, T, T) per kind as a DenseTrace. It lives here, beside the adapters, because it is the
adapter's way of running the model (engine.traces holds the seam's traces); the memory it
needs grows with T squared, so a text is measured first and a long one refused with numbers.

What needs the seam (interventions, patching, Why, recording) asks ``site_modules`` or
``recorded_sizes`` first, and is refused there in one sentence.
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.adapters.hf import HFDecoderAdapter, HFEncoderAdapter
from attnscope.engine.inputs import InputError
from attnscope.engine.kinds import DECODER_SELF, ENCODER_SELF
from attnscope.engine.runtime.quiet import quiet_transformers
from attnscope.engine.seam.hf_attention import SiteError

SAID = "this family is drawn from its own attention weights; long texts need the seam"
LIMIT_BYTES = 1 << 30          # the weights held (float32) and eager's own copy in the forward


def needs_seam(name: str, what: str = "this") -> InputError:
    """The one sentence a seam-only tool gets on a fallback model."""
    return InputError(f"{name}: {what} needs attnscope's attention seam, and {SAID.split(';')[0]}, "
                      "so it cannot be changed or recorded.")


@torch.no_grad()
def fall_back(loaded, role: str, device, refused: Exception) -> list[str]:
    """The loader's notes for ``loaded`` read again with eager attention and marked ``meta["dense"]``,
    when the seam refused it (``refused``) and eager's own weights are a trace: a decoder or an
    encoder whose every layer returns (1, H, T, T) on a probe. Else ``refused`` is raised again
    (a state-space or Fourier layer, pooled keys: no token-to-token weights to draw)."""
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
        weights = eager(input_ids=ids, output_attentions=True).attentions
    except Exception:      # transformers' own refusal to run eager or return weights: the seam's sentence stands
        raise refused from None
    weights = [w for w in (weights or ()) if isinstance(w, torch.Tensor)]
    if not weights or any(w.dim() != 4 or w.shape[-2:] != (7, 7) for w in weights):
        raise refused
    if len({w.shape[1] for w in weights}) != 1:
        raise refused
    loaded.model = eager
    loaded.meta["dense"] = True
    return ["This family is drawn from its own attention weights; long texts need the seam."]


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

    def sizes(self) -> tuple[int, int]:
        """(layers, heads) from the config (transformers' attribute map names them alike)."""
        config = self.model.config.get_text_config()
        return int(getattr(config, "num_hidden_layers", None) or 1), int(getattr(config, "num_attention_heads", None) or 1)

    def check_length(self, t: int) -> None:
        """Refuse a text whose (L, H, T, T) float32 weights (twice: eager's and ours) pass LIMIT_BYTES."""
        layers, heads = self.sizes()
        need = 2 * layers * heads * t * t * 4
        if need > LIMIT_BYTES:
            longest = int((LIMIT_BYTES / (2 * layers * heads * 4)) ** 0.5)
            raise InputError(f"{self.loaded.name}: {t} tokens would need {need / 2**30:.1f} GiB of attention weights "
                             f"({layers} layers x {heads} heads x {t} x {t}); {SAID}, so keep the text under "
                             f"{longest} tokens.")

    @torch.no_grad()
    def dense_trace(self, framed):
        """The DenseTrace of ``framed``, read from eager's ``output_attentions``."""
        from attnscope.engine.traces.dense import DenseTrace

        ids = framed.source_ids if self.kind == ENCODER_SELF else framed.target_ids
        self.check_length(len(ids))
        weights = self._attentions(framed)
        held = np.stack([w[0].float().cpu().numpy() for w in weights if isinstance(w, torch.Tensor)])  # (L, H, T, T)
        notes = list(framed.notes) + [f"{self.loaded.name}: {SAID}."]
        return DenseTrace(self.loaded.name, self.loaded.family, {self.kind: held},
                          source_tokens=framed.source_tokens, target_tokens=framed.target_tokens, notes=notes)


class HFDenseDecoderAdapter(_Dense, HFDecoderAdapter):
    kind = DECODER_SELF

    def _attentions(self, framed):
        return self.model(input_ids=self._tensor(framed.target_ids), use_cache=False, output_attentions=True).attentions


class HFDenseEncoderAdapter(_Dense, HFEncoderAdapter):
    kind = ENCODER_SELF

    def _attentions(self, framed):
        return self.model(**{k: self._tensor(v) for k, v in framed.extra.items()}, output_attentions=True).attentions
