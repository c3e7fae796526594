"""The dense fallback's adapters: a Hugging Face family whose attention never reaches the seam.

Such a model was read again with transformers' eager attention when the seam refused it at load
(engine.loading.dense_eager.fall_back; marked ``meta["dense"]``). Its trace is read here from the
model's own returned weights (engine.loading.dense_eager.eager_attentions, the one reader):
exact by definition, held in full (L, H, T, T) per kind as a DenseTrace. The memory it needs grows with T squared, so a Run's estimate
(engine.traces.estimate) measures a text first and refuses a long one with the numbers.

What needs the seam (interventions, patching, Why, recording) asks ``site_modules`` or
``recorded_sizes`` first, and is refused there in one sentence.
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.adapters.hf import HFDecoderAdapter, HFEncoderAdapter
from attnscope.engine.kinds import DECODER_SELF, ENCODER_SELF
from attnscope.engine.loading.dense import SAID, needs_seam
from attnscope.engine.loading.dense_eager import eager_attentions


class _Dense:
    """What the two fallback adapters share: the estimate, the eager forward, the refusals."""

    dense = True
    kind = DECODER_SELF

    def prepare(self, prompt, interventions=None, *args, **kwargs):
        if interventions:   # the window passes an empty Interventions: nothing to change
            raise needs_seam(self.loaded.name, "an intervention")
        return super().prepare(prompt, None, *args, **kwargs)

    def site_modules(self):
        raise needs_seam(self.loaded.name)

    def recorded_sizes(self):
        raise needs_seam(self.loaded.name)

    def cache_sizes(self) -> tuple[int, int]:
        """From the config, with no recorded forward (there is none without the seam): keys as
        wide as the hidden state in every layer, an upper bound where keys are grouped. So the
        model's own continuation is estimated and written, though its heads cannot be recorded."""
        layers, _, width = self.sizes()
        return layers * width * next(self.model.parameters()).element_size(), width

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
        layers, heads, width = (int(getattr(config, name, None) or 1)
                                for name in ("num_hidden_layers", "num_attention_heads", "hidden_size"))
        return layers, heads, width

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
