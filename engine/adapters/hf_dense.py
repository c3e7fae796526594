"""The dense fallback: a Hugging Face family whose attention never reaches the seam.

Some families compute attention in their own classes (GPT-Neo, BLOOM, Falcon, DeBERTa ...)
or call one attention module in every layer (ALBERT), so the seam cannot see or tell apart
their heads. Such a model is read again with transformers' eager attention (the loader's
engine.loading.dense_fallback, asked when the seam refuses it; marked ``meta["dense"]``), and its trace is read
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

SAID = "this family is drawn from its own attention weights; long texts need the seam"
LIMIT_BYTES = 1 << 30          # the weights held (float32) and eager's own copy in the forward


def needs_seam(name: str, what: str = "this") -> InputError:
    """The one sentence a seam-only tool gets on a fallback model."""
    return InputError(f"{name}: {what} needs attnscope's attention seam, and {SAID.split(';')[0]}, "
                      "so it cannot be changed or recorded.")


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
    def dense_weights(self, framed) -> tuple[dict[str, np.ndarray], list[str]]:
        """({kind: (L, H, T, T) float32}, notes) of ``framed``, read from eager's ``output_attentions``:
        what engine.traces.tracing holds as a DenseTrace."""
        ids = framed.source_ids if self.kind == ENCODER_SELF else framed.target_ids
        self.check_length(len(ids))
        weights = self._attentions(framed)
        held = np.stack([w[0].float().cpu().numpy() for w in weights if isinstance(w, torch.Tensor)])  # (L, H, T, T)
        return {self.kind: held}, list(framed.notes) + [f"{self.loaded.name}: {SAID}."]


class HFDenseDecoderAdapter(_Dense, HFDecoderAdapter):
    kind = DECODER_SELF

    def _attentions(self, framed):
        return self.model(input_ids=self._tensor(framed.target_ids), use_cache=False, output_attentions=True).attentions


class HFDenseEncoderAdapter(_Dense, HFEncoderAdapter):
    kind = ENCODER_SELF

    def _attentions(self, framed):
        return self.model(**{k: self._tensor(v) for k, v in framed.extra.items()}, output_attentions=True).attentions
