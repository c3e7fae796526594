"""AttentionTrace: the one data type the GUI draws.

A trace is a CPU snapshot of one forward pass on one example: for each attention kind an
array (layers, heads, T_query, T_key), and the token strings that label its axes. It is
built in one call from a model output (``AttentionTrace.from_output``) and holds numpy
arrays in a compact dtype, so it can cross from a worker thread to the GUI cheaply.
Only ``from_output`` needs torch (in the worker that ran the model): the window holds and
draws traces without it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from engine.kinds import KEY_SIDE, KINDS, QUERY_SIDE

if TYPE_CHECKING:
    from engine.models.outputs import ModelOutput


@dataclass
class AttentionTrace:
    model_name: str
    family: str
    attentions: dict[str, np.ndarray]          # kind -> (L, H, Tq, Tk)
    source_tokens: list[str] = field(default_factory=list)
    target_tokens: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "input truncated to 512 tokens"

    # ---- construction -------------------------------------------------------------
    @classmethod
    def from_output(
        cls,
        output: ModelOutput,
        *,
        model_name: str,
        family: str,
        source_tokens: list[str] | None = None,
        target_tokens: list[str] | None = None,
        batch_index: int = 0,
        dtype=np.float32,
        notes: list[str] | None = None,
    ) -> "AttentionTrace":
        """Take example ``batch_index`` of a batched output, trimmed to its real tokens.

        Padding positions are cut off using the token lists' lengths, so a trace never
        shows pad rows or columns.
        """
        import torch

        source_tokens = list(source_tokens or [])
        target_tokens = list(target_tokens or [])
        lengths = {"source": len(source_tokens), "target": len(target_tokens)}
        attentions: dict[str, np.ndarray] = {}
        for kind in KINDS:
            layers = output.attentions.get(kind)
            if not layers:
                continue
            tq, tk = lengths[QUERY_SIDE[kind]], lengths[KEY_SIDE[kind]]
            heads = layers[0].shape[1]
            # Each layer is copied straight into one numpy array: torch.stack into a fresh
            # tensor took 22 ms for MiniLM at 512 tokens (75 MB), this 6 ms.
            stacked = np.empty((len(layers), heads, tq, tk), dtype)       # (L, H, Tq, Tk)
            into = torch.from_numpy(stacked)
            for i, a in enumerate(layers):
                into[i].copy_(a.detach()[batch_index, :, :tq, :tk])     # casts and leaves the device
            attentions[kind] = stacked
        return cls(model_name, family, attentions, source_tokens, target_tokens, list(notes or []))

    # ---- queries --------------------------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        """The attention kinds this trace holds, in canonical order."""
        return [k for k in KINDS if k in self.attentions]

    def weights(self, kind: str) -> np.ndarray:
        """(L, H, Tq, Tk) for one kind."""
        return self.attentions[kind]

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        return tuple(self.attentions[kind].shape)  # type: ignore[return-value]

    def query_tokens(self, kind: str) -> list[str]:
        return self.source_tokens if QUERY_SIDE[kind] == "source" else self.target_tokens

    def key_tokens(self, kind: str) -> list[str]:
        return self.source_tokens if KEY_SIDE[kind] == "source" else self.target_tokens

    def head(self, kind: str, layer: int, head: int) -> np.ndarray:
        """(Tq, Tk) for one head."""
        return self.attentions[kind][layer, head]
