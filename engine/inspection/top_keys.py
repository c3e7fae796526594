"""The strongest keys of every query of a head, and the weight they leave out.

Why: a view that draws one line per weight (Head lines) cannot draw T x T lines of a long
text, and cannot even hold them (a 1B-shaped model at 8,192 tokens: 128 GB for one kind).
What it can draw, and say plainly, is each query's k strongest keys with their exact weights
and the mass of the rest. This asks the trace (any AttentionTrace: dense, recorded) for a
block of query rows at a time through ``tile``, so memory stays a few MB whatever T is, and
the numbers are the trace's own, not an approximation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.engine.inputs import InputError, check_count, check_kind
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces.strongest import strongest
from attnscope.engine.traces import reading

CHUNK_BYTES = 4 * 2**20     # one block of query rows of one head: (rows, Tk) float32 at most this


@dataclass
class TopKeys:
    """Each query's k strongest keys in one head, strongest first (equal weights in key order,
    as a stable sort would give), and what they leave out."""
    keys: np.ndarray        # (Tq, k) int64 key positions
    weights: np.ndarray     # (Tq, k) float32 their exact weights
    leftover: np.ndarray    # (Tq,) float32: the row's weight on every key not kept (1 - kept for a softmax row)

    @property
    def k(self) -> int:
        return self.keys.shape[1]

    def first(self, k: int) -> "TopKeys":
        """The ``k`` strongest of these: a prefix (they are sorted, ties in key order), so a view
        that reads 16 a query once can show any k up to 16 without reading the head again."""
        k = min(k, self.k)
        rest = self.leftover + self.weights[:, k:].sum(1, dtype=np.float64)
        return TopKeys(self.keys[:, :k], self.weights[:, :k], rest.astype(np.float32))


def layer_top_keys(trace, kind: str, layer: int, heads: list[int], k: int, keys: np.ndarray | None = None,
                   chunk_bytes: int = CHUNK_BYTES) -> dict[int, TopKeys]:
    """Per head of ``heads`` (one layer): its ``k`` strongest keys of every query. A trace that
    can compute them itself for several heads at once (``strongest_keys``: a recorded trace,
    from q and k, in blocks of its own size) is asked for them; any other, and a recorded
    trace that reads its heads another way, goes head by head through ``tile``
    (``head_top_keys``, ``chunk_bytes`` of one head's rows at a time). Both give the same keys
    and weights."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    if not isinstance(heads, (list, tuple, range)) or not all(isinstance(h, int) and not isinstance(h, bool)
                                                               for h in heads):
        raise InputError(f"The argument heads is a list of head numbers, not {heads!r:.40}.")
    check_count(k, "k (the keys to keep)", least=0)
    found = together(trace, kind, layer, list(heads), k, keys) if heads else None
    if found is not None:
        return found
    return {h: head_top_keys(trace, kind, layer, h, k, keys, chunk_bytes) for h in heads}


def together(trace, kind: str, layer: int, heads: list[int], k: int, keys: np.ndarray | None
             ) -> dict[int, TopKeys] | None:
    """``layer_top_keys`` through a trace's ``strongest_keys(kind, layer, heads, rows, k, keys)``, which
    answers (keys (h, r, k), weights (h, r, k), leftover (h, r)) for queries ``rows`` in blocks
    of its own size, or None where it cannot (then None here)."""
    tq, _, k = _sizes(trace, kind, k, keys)
    recording = trace.recording
    found = None if recording is None else recording.strongest_keys(kind, layer, heads, slice(0, tq), k, keys)
    if found is None:
        return None
    return {h: TopKeys(*(np.ascontiguousarray(part[i]) for part in found)) for i, h in enumerate(heads)}


def _sizes(trace, kind: str, k: int, keys: np.ndarray | None) -> tuple[int, int, int]:
    """(queries, keys, k kept): k no more than the keys that may be chosen."""
    _, _, tq, tk = trace.shape(kind)
    return tq, tk, max(0, min(k, tk if keys is None else int(np.count_nonzero(keys))))


def head_top_keys(trace, kind: str, layer: int, head: int, k: int, keys: np.ndarray | None = None,
                  chunk_bytes: int = CHUNK_BYTES) -> TopKeys:
    """The ``k`` strongest keys of every query of one head, computed ``chunk_bytes`` of rows at
    a time through ``reading.tile``. ``keys`` (Tk,) bool, when given, says which keys may be
    chosen (special tokens hidden, one sentence of a pair); the weight on the others counts
    in the leftover, which is each row's own sum minus what was kept (an all-masked row
    leaves 0, not 1)."""
    tq, tk, k = _sizes(trace, kind, k, keys)
    allowed = np.arange(tk) if keys is None else np.flatnonzero(keys)
    out_keys = np.zeros((tq, k), np.int64)
    out_weights = np.zeros((tq, k), np.float32)
    leftover = np.zeros(tq, np.float32)
    step = max(1, chunk_bytes // (4 * max(1, tk)))
    for r0 in range(0, tq, step):
        rows = slice(r0, min(tq, r0 + step))
        w = reading.tile(trace, kind, layer, head, rows, slice(0, tk))              # (r, Tk), exact
        candidates = w if keys is None else w[:, allowed]                # (r, n allowed)
        chosen = allowed[strongest(candidates, k)] if k else np.zeros((w.shape[0], 0), np.int64)
        kept = np.take_along_axis(w, chosen, 1)                          # (r, k)
        out_keys[rows], out_weights[rows] = chosen, kept
        rest = w.sum(1, dtype=np.float64) - kept.sum(1, dtype=np.float64)
        leftover[rows] = np.maximum(rest, 0.0)
    return TopKeys(out_keys, out_weights, leftover)
