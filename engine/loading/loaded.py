"""LoadedModel: a model ready to inspect, with the tokenizers and facts that belong to it.

Whatever the source (a checkpoint of ours, a nanoGPT file, a Hugging Face folder, a fresh
random model), the GUI and the CLI hold one of these and ask engine.traces.tracing for traces.
Importing this module does not import torch (the window does, before any model is loaded).

The facts a model is opened with (its kinds, role, whether it generates, is spread, how many
parameters) are worked out the first time they are asked and then read as fields: the window's
status line and output row read them for every trace on screen, and they do not change while the
model is open (the dense fallback reads the same weights again, eager; a spread model is refused
it). Where the model takes its input, ``device``, is a fact of the same kind: worked out once (by
``to``, which the loader calls, or at the first question) and set again by ``to``, the one way a
loaded model moves, so a Run reads a field rather than asking the weights through two modules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from attnscope.engine.roles import KINDS_OF_FAMILY, ROLE_OF_FAMILY
from attnscope.engine.runtime.device import input_device

if TYPE_CHECKING:
    import torch
    from torch import nn

@dataclass
class LoadedModel:
    name: str
    family: str                         # a key of ROLE_OF_FAMILY
    model: nn.Module
    tokenizer: Any                      # engine.models.tokenizer.Tokenizer (source side) or a HF tokenizer
    target_tokenizer: Any = None        # translator with separate vocabularies
    meta: dict = field(default_factory=dict)  # training facts, source path, ...

    @cached_property
    def kinds(self) -> tuple[str, ...]:
        return KINDS_OF_FAMILY[self.family]

    @cached_property
    def role(self) -> str:
        """"encoder", "decoder" or "encoder-decoder": what the model does with text."""
        return ROLE_OF_FAMILY[self.family]

    @cached_property
    def is_hf(self) -> bool:
        return self.family.startswith("hf-")

    @cached_property
    def generates(self) -> bool:
        """Decoders continue a prompt and encoder-decoders translate: both can be stepped here (a
        model served by NDIF, built without weights, engine.loading.remote_source, cannot)."""
        return self.role != "encoder" and self.meta.get("ndif", {}).get("mode") != "ndif"

    @property
    def tgt_tokenizer(self):
        return self.target_tokenizer or self.tokenizer

    @cached_property
    def spread(self) -> bool:
        """Spread over several devices by accelerate (engine.loading.placement): it cannot move whole."""
        return bool(getattr(self.model, "hf_device_map", None))

    @cached_property
    def device(self) -> torch.device:
        """Where the model takes its input (a spread model: where its first module runs)."""
        return input_device(self.model)

    @cached_property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in {id(p): p for p in self.model.parameters()}.values())

    @property
    def max_len(self) -> int:
        """The most tokens the model takes in one sequence (specials included)."""
        c = getattr(self.model, "config", None)
        for attr in ("max_len", "block_size", "max_position_embeddings"):
            if hasattr(c, attr):
                return int(getattr(c, attr))
        return 512

    def to(self, device: torch.device | str) -> "LoadedModel":
        if self.spread:    # accelerate's hooks hold each layer's place: open it again instead
            raise ValueError(f"{self.name} is spread over several devices; open it again to run it on {device}.")
        self.model.to(device)
        self.__dict__["device"] = input_device(self.model)    # the field ``device``, set again where it moved
        return self
