"""RecordedTrace: attention computed from the queries and keys the seam recorded.

A Run records one forward (engine.seam.Recorder): per site the call's q, k, mask, bias,
scale and softcap, on the model's device and in its dtype. Any head is then
softmax(q k^T * scale + bias) exactly, computed when a view asks and kept in a small cache;
``densify`` computes every head at once in the worker when the whole trace is small, so the
window only copies arrays. Word merging (subwords -> words) is applied to what is computed,
so every view and the neuron view see the same merged numbers.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import torch

from engine.kinds import KEY_SIDE, QUERY_SIDE
from engine.seam.call import AttentionCall
from engine.traces.base import AttentionTrace
from engine.traces.words import merge_pieces

DENSE_LIMIT_BYTES = 256 * 2**20   # a trace whose every head fits here is computed at once
HEAD_CACHE = 64                   # layers kept by a large trace that computes on demand


class RecordedTrace(AttentionTrace):
    def __init__(self, calls: dict[str, list[AttentionCall]], *, model_name: str, family: str,
                 source_tokens: list[str], target_tokens: list[str], notes: list[str] | None = None,
                 batch_index: int = 0, groups: dict[str, list[int]] | None = None,
                 pieces: dict[str, list[str]] | None = None):
        """``calls``: kind -> the recorded call of each layer; the token lists say how many
        queries/keys are real (padding is cut). ``groups`` (side -> word index per piece)
        merges pieces into words; ``pieces`` keeps the piece tokens of each side."""
        self.calls = calls
        self.model_name, self.family = model_name, family
        self.notes = list(notes or [])
        self.batch_index = batch_index
        self.groups = groups or {}
        self.pieces = pieces or {"source": list(source_tokens), "target": list(target_tokens)}
        self.source_tokens, self.target_tokens = list(source_tokens), list(target_tokens)
        self._dense: dict[str, np.ndarray] = {}
        self._layers: OrderedDict = OrderedDict()

    # ---- the protocol ---------------------------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        return self.in_order(self.calls)

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        return (len(self.calls[kind]), self.calls[kind][0].q.shape[1],
                len(self.query_tokens(kind)), len(self.key_tokens(kind)))

    def layer(self, kind: str, layer: int) -> np.ndarray:
        if kind in self._dense:
            return self._dense[kind][layer]
        key = (kind, layer)
        if key not in self._layers:
            self._layers[key] = self._compute(kind, layer)
            while len(self._layers) > HEAD_CACHE:
                self._layers.popitem(last=False)
        self._layers.move_to_end(key)
        return self._layers[key]

    def weights(self, kind: str) -> np.ndarray:
        if kind not in self._dense:
            self._dense[kind] = super().weights(kind)
        return self._dense[kind]

    # ---- recording-specific ---------------------------------------------------------------
    def call(self, kind: str, layer: int) -> AttentionCall:
        """The recorded call behind one layer of one kind (the neuron view reads q and k here)."""
        return self.calls[kind][layer]

    def piece_span(self, kind: str) -> tuple[int, int]:
        """How many query and key *pieces* (before word merging) the trace covers."""
        return len(self.pieces[QUERY_SIDE[kind]]), len(self.pieces[KEY_SIDE[kind]])

    def merge(self, kind: str, w: np.ndarray) -> np.ndarray:
        """(..., Tq, Tk) piece weights -> word weights when this trace merges words."""
        qg, kg = self.groups.get(QUERY_SIDE[kind]), self.groups.get(KEY_SIDE[kind])
        return w if qg is None else merge_pieces(w, qg, kg)

    def nbytes(self) -> int:
        """What every head of every kind takes as float32."""
        return sum(int(np.prod(self.shape(k))) * 4 for k in self.kinds)

    def densify(self, limit: int = DENSE_LIMIT_BYTES) -> "RecordedTrace":
        """Compute every head now (in the worker) when all of them fit in ``limit`` bytes."""
        if self.nbytes() <= limit:
            for kind in self.kinds:
                self.weights(kind)
            self._layers.clear()
        return self

    @torch.no_grad()
    def _compute(self, kind: str, layer: int) -> np.ndarray:
        tq, tk = self.piece_span(kind)
        call = self.calls[kind][layer]
        w = call.weights(self.batch_index, rows=slice(0, tq))[:, :, :tk]        # (H, tq, tk) float32
        return self.merge(kind, w.cpu().numpy().astype(np.float32, copy=False))
