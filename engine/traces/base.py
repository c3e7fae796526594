"""AttentionTrace: the protocol every view draws from.

A trace answers for one forward on one example: which attention kinds it has, their shapes,
the tokens that label each axis, and any head, layer or row of weights as float32 numpy.
Two implementations stand behind it: ``DenseTrace`` (arrays held in full: small Runs kept
from older files, time-lapse probes, exports read back) and ``RecordedTrace`` (computed
from the queries and keys the seam recorded). A view never asks which one it has.
"""
from __future__ import annotations

import numpy as np

from engine.kinds import KEY_SIDE, KINDS, QUERY_SIDE


class AttentionTrace:
    model_name: str
    family: str
    source_tokens: list[str]
    target_tokens: list[str]
    notes: list[str]

    # ---- what implementations provide ------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        """The attention kinds this trace holds, in canonical order."""
        raise NotImplementedError

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        """(L, H, Tq, Tk) of one kind."""
        raise NotImplementedError

    def layer(self, kind: str, layer: int) -> np.ndarray:
        """(H, Tq, Tk) float32: every head of one layer."""
        raise NotImplementedError

    def weights(self, kind: str) -> np.ndarray:
        """(L, H, Tq, Tk) float32: every head of one kind at once (views that draw all heads)."""
        return np.stack([self.layer(kind, i) for i in range(self.shape(kind)[0])])

    # ---- shared ---------------------------------------------------------------------------
    def head(self, kind: str, layer: int, head: int) -> np.ndarray:
        """(Tq, Tk) for one head."""
        return self.layer(kind, layer)[head]

    def row(self, kind: str, layer: int, head: int, query: int) -> np.ndarray:
        """(Tk,) the weights of one query of one head."""
        return self.head(kind, layer, head)[query]

    def query_tokens(self, kind: str) -> list[str]:
        return self.source_tokens if QUERY_SIDE[kind] == "source" else self.target_tokens

    def key_tokens(self, kind: str) -> list[str]:
        return self.source_tokens if KEY_SIDE[kind] == "source" else self.target_tokens

    @staticmethod
    def in_order(kinds) -> list[str]:
        return [k for k in KINDS if k in kinds]
