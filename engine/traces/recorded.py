"""RecordedTrace: attention computed from the queries and keys the seam recorded.

A Run records one forward (engine.seam.Recorder): per site the call's q, k, mask, bias,
scale, softcap and sinks, on the model's device and in its dtype; memory is linear in T. Any
head is then softmax(q k^T * scale + bias) exactly (a sink one more term of each row's
denominator: such rows sum to less than 1), computed when a view asks and kept in a small
cache; ``densify`` computes every head at once in the worker when the whole trace is small,
so the window only copies arrays. A long trace is never held whole: ``thumbnails`` pools
every head in chunks of query rows (and keeps each row's log-sum-exp as it goes), ``tile``
computes any block exactly as exp(q_i k_j * scale + b_ij - lse_i), ``row`` one query.
Word merging (subwords -> words) is applied to what is computed, so every view and the
neuron view see the same merged numbers.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import torch

from attnscope.engine.kinds import KEY_SIDE, QUERY_SIDE
from attnscope.engine.runtime.blocks import causal_rows, rows_per_block, score_block_bytes
from attnscope.engine.seam.call import AttentionCall
import attnscope.engine.traces.block_max as block_max
from attnscope.engine.runtime.free_memory import gib
from attnscope.engine.traces import reading
from attnscope.engine.traces.base import TraceDefaults, TraceTooLarge, array_block, layer_started
from attnscope.engine.traces.capabilities import FasterPaths, Recording
from attnscope.engine.traces.reading import LAYER_BYTES   # one layer at once, at most (a test lowers it here)
from attnscope.engine.traces.pooling import Thumbnails, bins, block, fold_rows, pool_blocks, pool_held, rows_in_bins
from attnscope.engine.traces.strongest import strongest
from attnscope.engine.traces.words import merge_pieces, word_starts

DENSE_LIMIT_BYTES = 256 * 2**20   # a trace whose every head fits here is computed at once, and kept
CACHE_BYTES = 256 * 2**20         # whole layers kept by a trace that computes them on demand, in all
TOP_MARGIN = 8                    # strongest keys: candidates read past k, to see where ties end


class RecordedTrace(TraceDefaults):
    # where the recording lives, and where its views are computed and pooled: set in __init__ (a
    # class value, so it stands in for TraceDefaults' getter)
    device: torch.device = torch.device("cpu")

    def __init__(self, calls: dict[str, list[AttentionCall]], *, model_name: str, family: str,
                 source_tokens: list[str], target_tokens: list[str], notes: list[str] | None = None,
                 batch_index: int = 0, groups: dict[str, list[int]] | None = None,
                 pieces: dict[str, list[str]] | None = None):
        """``calls``: kind -> the recorded call of each layer; the token lists say how many
        queries/keys are real (padding is cut). ``groups`` (side -> word index per piece)
        merges pieces into words; ``pieces`` keeps the piece tokens of each side."""
        self.calls = calls
        # known once the calls are: a field, so pooling a view asks no getter of the trace
        self.device = next(iter(calls.values()))[0].q.device if calls else torch.device("cpu")
        self._kinds = reading.in_order(calls)    # ordered once, as built: asking kinds reads the record alone
        self.model_name, self.family = model_name, family
        self.notes = list(notes or [])
        self.batch_index = batch_index
        self._groups = groups or {}
        self._pieces = pieces or {"source": list(source_tokens), "target": list(target_tokens)}
        self.source_tokens, self.target_tokens = list(source_tokens), list(target_tokens)
        self._dense: dict[str, np.ndarray] = {}
        self._layers: OrderedDict = OrderedDict()
        self._lse: dict[tuple[str, int], torch.Tensor] = {}   # (kind, layer) -> (H, Tq) log-sum-exp per row

    # ---- the protocol ---------------------------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        return list(self._kinds)

    @property
    def recording(self) -> Recording:
        """Itself, typed as the Recording protocol: its calls and what they compute."""
        return self

    @property
    def faster(self) -> FasterPaths:
        """Layers and whole kinds computed at once and kept (``_layer``, ``_weights``); the
        overview pooled a block of rows at a time, fused on a GPU (``_thumbnails``)."""
        return FasterPaths(weights=self._weights, layer=self._layer, thumbnails=self._thumbnails)

    def computes_on_demand(self, kind: str) -> bool:
        return kind not in self._dense

    @property
    def groups(self) -> dict[str, list[int]]:
        return self._groups

    @property
    def pieces(self) -> dict[str, list[str]]:
        return self._pieces

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        """(layers, heads, queries, keys): read from the record itself (the token list of each
        side), not through engine.traces.reading, which reads the shape back from here."""
        sides = {"source": self.source_tokens, "target": self.target_tokens}
        return (len(self.calls[kind]), self.calls[kind][0].q.shape[1], len(sides[QUERY_SIDE[kind]]),
                len(sides[KEY_SIDE[kind]]))

    def _layer(self, kind: str, layer: int) -> np.ndarray:
        """(H, Tq, Tk) every head of one layer, computed at once and kept while the layers kept
        weigh CACHE_BYTES at most; TraceTooLarge past LAYER_BYTES."""
        if kind in self._dense:
            return self._dense[kind][layer]
        L, H, tq, tk = self.shape(kind)
        if H * tq * tk * 4 > LAYER_BYTES:
            raise TraceTooLarge(f"One layer of {kind} is {H} heads x {tq:,} x {tk:,} = {gib(H * tq * tk * 4)} "
                                "at once; ask for thumbnails, a tile or a row.")
        key = (kind, layer)
        if key in self._layers:
            self._layers.move_to_end(key)
            return self._layers[key]
        computed = self._compute(kind, layer)                                   # (H, Tq, Tk)
        # Kept while the layers kept weigh CACHE_BYTES at most, the oldest dropped first: a
        # count of layers let a 4k-token trace keep every layer (0.5 GB each), and with a
        # view's copy of the trace before it the window grew ~5 GB a Run.
        if computed.nbytes <= CACHE_BYTES:
            self._layers[key] = computed
            while sum(a.nbytes for a in self._layers.values()) > CACHE_BYTES:
                self._layers.popitem(last=False)
        return computed

    def _weights(self, kind: str) -> np.ndarray:
        """Every head of ``kind`` (TraceTooLarge past base.DENSE_VIEW_BYTES); kept for the next
        view only when it is as small as what ``densify`` keeps (DENSE_LIMIT_BYTES): a larger one
        lives as long as the view that asked holds it."""
        if kind in self._dense:
            return self._dense[kind]
        w = reading.dense_weights(self, kind)                                   # (L, H, Tq, Tk)
        if w.nbytes <= DENSE_LIMIT_BYTES:
            self._dense[kind] = w
        return w

    @torch.no_grad()
    def _thumbnails(self, kind: str, size: int, how: str = "max", report=None, stop=None) -> Thumbnails:
        """Every head pooled to at most ``size`` a side, computed a block of query rows at a time
        (never a whole layer at once); each row's log-sum-exp is kept for ``block``. ``report``
        and ``stop`` as engine.traces.reading.pooled_thumbnails, which serves a trace merged into
        words or a linear layer's mixing; a kind held whole is pooled as held (pooling.pool_held)."""
        if kind in self._dense:                # computed at once and kept: the arrays pooled as they are
            return pool_held(self._dense[kind], size, how, report, stop)
        L, H, tq, tk = self.shape(kind)
        if self.groups or self._effective(kind):
            return reading.pooled_thumbnails(self, kind, size, how, report, stop)
        rows_n, cols_n = bins(tq, size), bins(tk, size)
        out = np.empty((L, H, rows_n, cols_n), np.float32)
        sink = np.empty((L, H, rows_n), np.float32)
        rb = block(tq, size)
        for layer in range(L):
            layer_started(layer, L, report, stop)
            call = self.calls[kind][layer]
            dev = call.q.device
            # (H, pixel rows, pixel columns): max pooling in the log domain (max score - lse),
            # mean pooling as a running sum of weights; blocks of rows are folded in as they come
            pooled = torch.full((H, rows_n, cols_n), float("-inf") if how == "max" else 0.0, device=dev)
            known = call.lse is not None                                       # the kernel's, from the forward
            lse = call.lse[self.batch_index].float() if known else torch.empty(H, tq, device=dev)
            first = torch.empty(H, tq, device=dev)                             # each row's score of key 0
            # A plain causal call with its log-sum-exp known: a block of rows sees no key past its
            # last row, so only the keys up to there are scored (half the work on average) and
            # the blocks of keys after it are exactly 0.
            causal = known and how == "max" and call.causal and call.mask is None and call.bias is None
            # There, max(s * scale) = scale * max(s): the scale goes on the pooled pixels, not on
            # every score (one pass over the scores fewer; on a GPU the pooling is bound by them).
            later = call.scale if causal and call.softcap is None else None
            offset, kb = call.k.shape[2] - call.q.shape[2], block(tk, size)
            r0 = 0
            if later is not None and block_max.applies(call):   # a GPU: the maxima without writing the scores
                across = block_max.block_maxima(call, self.batch_index, tq, tk, kb).mul_(later).sub_(lse[:, :tq, None])
                pooled = pool_blocks(across.transpose(1, 2), rb, how).transpose(1, 2)
                del across
                first = call.scores(self.batch_index, None, slice(0, tq), slice(0, 1), scaled=False)[:, :, 0]
                r0 = tq
            elif later is not None and (refusal := block_max.refused(call)) and refusal not in self.notes:
                self.notes.append(refusal)                                     # said, never a silent fallback
            while r0 < tq:
                if causal:      # the block is scored up to its last row: its width grows with its rows
                    r1 = min(tq, r0 + causal_rows(score_block_bytes(dev) // (4 * H), r0 + offset))
                else:
                    r1 = min(tq, r0 + rows_per_block(dev, H * call.k.shape[2]))
                rows = slice(r0, r1)
                cols = slice(0, min(tk, -(-(r1 + offset) // kb) * kb)) if causal else slice(None)
                s = call.scores(self.batch_index, None, rows, cols, scaled=later is None)   # (H, r, k)
                s = s if s.shape[-1] <= tk else s[:, :, :tk]
                first[:, rows] = s[:, :, 0]
                if not known:                                                  # the sink's term in it too
                    lse[:, rows] = call.log_denominators(s, self.batch_index, rows=rows)
                row_lse = lse[:, rows, None]                                   # (H, r, 1)
                if how == "max":   # exp is monotonic: the max of a block's weights is exp(max score - lse)
                    part = pool_blocks(s, kb, "max")
                    part = (part if later is None else part.mul_(later)).sub_(row_lse)
                else:
                    part = pool_blocks(s.sub_(row_lse).exp_().nan_to_num_(nan=0.0), kb, "mean")
                fold_rows(pooled, part, r0, rb, how)                           # (H, r, c) into the pixel rows
                r0 = r1
            self._lse[(kind, layer)] = lse
            if how == "max":
                pooled = pooled.exp_().nan_to_num_(nan=0.0)                    # a fully masked block reads 0
            else:
                pooled = pooled.div_(rows_in_bins(tq, rb, dev)[None, :, None])
            out[layer] = pooled.cpu().numpy()
            first = (first if later is None else first.mul_(later)).sub_(lse).exp_().nan_to_num_(nan=0.0)  # key 0's weight
            sink[layer] = pool_blocks(first, rb, how).cpu().numpy()
        return Thumbnails(out, how, tq, tk, sink)

    @torch.no_grad()
    def block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice) -> torch.Tensor:
        """(h, r, c) float32 exact weights of ``heads`` for queries ``rows`` x keys ``cols``, on
        the model's device: a view pools them there and only its pixels cross to the host. With
        the rows' log-sum-exp known (from the kernel, or after the overview), only the block's
        scores are computed; a layer read whole is cut from the layer kept, on the host."""
        if self._reads_whole(kind, layer):
            return array_block(self._layer(kind, layer), heads, rows, cols)
        if self.groups:
            return self._merged_block(kind, layer, heads, rows, cols)
        return self._piece_block(kind, layer, heads, rows, cols)

    def _piece_block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice) -> torch.Tensor:
        """``block`` over word pieces (queries ``rows`` x keys ``cols`` of the recording)."""
        tq, tk = self.piece_span(kind)
        rows, cols = slice(*rows.indices(tq)), slice(*cols.indices(tk))
        call, heads = self.calls[kind][layer], list(heads)
        if self._effective(kind):              # the layer's own function on one-hot values, this block's columns
            return call.mixing(self.batch_index, heads, rows, cols)
        lse = self.row_lse(kind, layer)
        if lse is not None:
            s = call.scores(self.batch_index, heads, rows, cols)                 # (h, r, c)
            w = s.sub_(lse[heads, rows, None]).exp_()
        else:
            w = call.weights(self.batch_index, heads, rows)[:, :, cols]          # full rows, then the block
        return torch.nan_to_num_(w, nan=0.0)

    def _merged_block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice) -> torch.Tensor:
        """(h, r, c) word weights of a trace merged into words that is too long to read a layer
        whole: the pieces of the words asked, computed as one block of the recording and merged
        (a word's key pieces summed, its query pieces averaged), so Head lines and Head detail
        read merged words at any length, a block at a time."""
        _, _, tq, tk = self.shape(kind)                                           # words
        (r0, r1, _), (c0, c1, _) = rows.indices(tq), cols.indices(tk)
        r1, c1 = max(r0, r1), max(c0, c1)
        qb, kb = self._word_bounds(QUERY_SIDE[kind]), self._word_bounds(KEY_SIDE[kind])
        if r1 == r0 or c1 == c0:
            return torch.zeros(len(heads), r1 - r0, c1 - c0)
        w = self._piece_block(kind, layer, heads, slice(qb[r0], qb[r1]), slice(kb[c0], kb[c1]))  # (h, pieces, pieces)
        q_groups = np.repeat(np.arange(r1 - r0), np.diff(qb[r0:r1 + 1]))
        k_groups = np.repeat(np.arange(c1 - c0), np.diff(kb[c0:c1 + 1]))
        return torch.from_numpy(merge_pieces(w.cpu().numpy(), q_groups, k_groups))

    def _word_bounds(self, side: str) -> np.ndarray:
        """(W + 1,) where each word's pieces start on ``side``, and the end."""
        groups = self.groups.get(side)
        if groups is None:
            return np.arange(len(self.pieces[side]) + 1)
        return np.append(word_starts(groups), len(groups))

    @torch.no_grad()
    def strongest_keys(self, kind: str, layer: int, heads: list[int], rows: slice, k: int,
                       keys: np.ndarray | None = None):
        """Each query of ``rows``' ``k`` strongest keys in every head of ``heads`` (one layer): what
        engine.inspection.top_keys reads head by head through ``tile`` (the same weights, ties in
        key order, the leftover each row's own sum minus what is kept), computed for the heads
        together, a block of scores at a time (engine.runtime.blocks, "select"): one score block per block of rows (query
        heads grouped over their key head when every head is asked), ``torch.topk`` on the
        model's device, and for a plain causal call only the keys up to the block's last row.
        ``keys`` (Tk,) bool: the keys that may be chosen. Returns (keys (h, r, k) int64, weights
        (h, r, k) float32, leftover (h, r) float32), or None where this trace reads its heads
        another way (word-merged, computed whole)."""
        if self._reads_whole(kind, layer) or self.groups or self._effective(kind):
            return None
        tq, tk = self.piece_span(kind)
        start, stop, _ = rows.indices(tq)
        call, heads = self.calls[kind][layer], list(heads)
        allowed = np.arange(tk) if keys is None else np.flatnonzero(keys)
        k = max(0, min(k, len(allowed)))
        lse = self.row_lse(kind, layer)
        lse = None if lse is None else lse[heads]                                # (h, Tq)
        causal = call.causal and call.mask is None and call.bias is None
        offset = call.k.shape[2] - call.q.shape[2]
        # A plain causal block of rows sees no key past its last row (those weigh exactly 0) and
        # is scored up to there only, yet always up to the k-th allowed key: a row that sees
        # fewer than k keys takes 0-weight keys in key order, as its whole row gives. Otherwise
        # every key; every recorded key where the softmax of a row is not known yet.
        least = int(allowed[k - 1]) + 1 if k else 0
        full = tk if lse is not None else call.k.shape[2]
        reach = (lambda end: min(tk, max(end + offset, least))) if causal else (lambda end: full)  # noqa: E731
        every = heads == list(range(call.q.shape[1]))
        usable = None if keys is None else torch.as_tensor(np.asarray(keys, bool), device=call.q.device)
        out_keys = np.zeros((len(heads), stop - start, k), np.int64)
        out_weights = np.zeros((len(heads), stop - start, k), np.float32)
        leftover = np.zeros((len(heads), stop - start), np.float32)
        budget = max(1, score_block_bytes(call.q.device, "select") // (4 * len(heads)))  # score cells a head, a block
        r0 = start
        while r0 < stop:
            if causal:   # the most rows n with n * (r0 + n + offset) cells, the block's own width
                n = causal_rows(budget, r0 + offset)
            else:
                n = budget // max(1, full)
            r1 = min(stop, r0 + max(1, n))
            s = call.scores(self.batch_index, None if every else heads, slice(r0, r1), slice(0, reach(r1)))  # (h, r, c)
            row_lse = call.log_denominators(s, self.batch_index, heads, slice(r0, r1))[..., None] if lse is None \
                else lse[:, r0:r1, None]                                         # (h, r, 1) the sink's term in it
            w = s[..., :tk].sub_(row_lse).exp_()                                 # (h, r, c) exact weights, as ``tile``
            if not bool(torch.isfinite(row_lse).all()):
                w.nan_to_num_(nan=0.0)                                           # a row with every key masked: 0
            done = slice(r0 - start, r1 - start)
            # (h, r) each row's own sum, in float32: within 2e-7 of the float64 sum of ``tile``'s path,
            # which torch computes ~15x slower than float32 (at 8k tokens, a quarter of the whole time)
            sums = w.sum(-1).double().cpu().numpy()
            if usable is not None:
                w.masked_fill_(~usable[:w.shape[-1]], -1.0)                      # never chosen (weights are >= 0)
            if k:
                out_keys[:, done], out_weights[:, done] = _strongest_block(w, k)
                sums -= out_weights[:, done].sum(-1, dtype=np.float64)
            leftover[:, done] = np.maximum(sums, 0.0)
            r0 = r1
        return out_keys, out_weights, leftover

    # ---- recording-specific ---------------------------------------------------------------
    def _reads_whole(self, kind: str, layer: int) -> bool:
        """Whether this layer is read from whole heads (computed at once, cached, or merged
        into words while a layer of pieces fits LAYER_BYTES) rather than from the recording a
        block at a time (``_merged_block`` for a long trace merged into words)."""
        if kind in self._dense or (kind, layer) in self._layers:
            return True
        pq, pk = self.piece_span(kind)
        return (bool(self.groups) or self._effective(kind)) and self.shape(kind)[1] * pq * pk * 4 <= LAYER_BYTES

    def _effective(self, kind: str) -> bool:
        """Whether ``kind`` is a linear layer's effective attention (engine.seam.linear_mixing): no softmax,
        so its layers (whole where one fits LAYER_BYTES, else a block at a time) are computed by the
        layer's own function, never from scores and a log-sum-exp."""
        return bool(getattr(self.calls[kind][0], "effective", False))

    def row_lse(self, kind: str, layer: int) -> torch.Tensor | None:
        """(H, Tq) each query row's log-sum-exp, where known: kept by ``thumbnails``, else the
        kernel's from the forward; None when neither has it."""
        lse = self._lse.get((kind, layer))
        call = self.calls[kind][layer]
        if lse is None and call.lse is not None:
            lse = call.lse[self.batch_index].float()
        return lse

    def call(self, kind: str, layer: int) -> AttentionCall:
        """The recorded call behind one layer of one kind (the neuron view reads q and k here)."""
        return self.calls[kind][layer]

    def held_call(self, kind: str, layer: int) -> AttentionCall:
        """Every row is held: the call itself (a time estimate's sample, engine.traces.estimate)."""
        return self.call(kind, layer)

    def piece_span(self, kind: str) -> tuple[int, int]:
        """How many query and key *pieces* (before word merging) the trace covers."""
        return len(self.pieces[QUERY_SIDE[kind]]), len(self.pieces[KEY_SIDE[kind]])

    def merge(self, kind: str, w: np.ndarray) -> np.ndarray:
        """(..., Tq, Tk) piece weights -> word weights when this trace merges words."""
        qg, kg = self.groups.get(QUERY_SIDE[kind]), self.groups.get(KEY_SIDE[kind])
        return w if qg is None else merge_pieces(w, qg, kg)

    def held_bytes(self) -> int:
        """What this trace keeps of the weights it computed (whole kinds and cached layers), on
        top of its recording: at most DENSE_LIMIT_BYTES + CACHE_BYTES, whatever views asked."""
        return sum(a.nbytes for a in self._dense.values()) + sum(a.nbytes for a in self._layers.values())

    def nbytes(self) -> int:
        """What every head of every kind takes as float32."""
        return sum(reading.dense_bytes(self, k) for k in self.kinds)

    def densify(self, limit: int = DENSE_LIMIT_BYTES) -> "RecordedTrace":
        """Compute every head now (in the worker) when all of them fit in ``limit`` bytes."""
        import attnscope.engine.traces.base as base

        if self.nbytes() <= min(limit, base.DENSE_VIEW_BYTES):
            for kind in self.kinds:
                self._weights(kind)
            self._layers.clear()
        return self

    @torch.no_grad()
    def _compute(self, kind: str, layer: int) -> np.ndarray:
        tq, tk = self.piece_span(kind)
        call = self.calls[kind][layer]
        w = call.weights(self.batch_index, rows=slice(0, tq))[:, :, :tk]        # (H, tq, tk) float32
        return self.merge(kind, w.cpu().numpy().astype(np.float32, copy=False))


def _strongest_block(w: torch.Tensor, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(h, r, c) weights -> each row's ``k`` largest: (h, r, k) column indices and weights,
    largest first, equal weights in column order (engine.traces.strongest, which
    sorts with numpy). ``torch.topk`` takes ``k`` + TOP_MARGIN candidates in no set order
    among equals; they are put in (weight desc, column) order, and where the last candidate is
    strictly below the k-th, nothing outside can tie into the k (what topk left out is <= the
    last). The few rows where a tie runs past the candidates (a row with fewer than k nonzero
    weights, equal scores) are chosen again by numpy from the whole row."""
    kk = min(k + TOP_MARGIN, w.shape[-1])
    vals, cols = torch.topk(w, kk, dim=-1)                                        # (h, r, kk)
    cols, order = cols.sort(dim=-1)                                              # column order ...
    vals = vals.gather(-1, order)
    vals, order = vals.sort(dim=-1, descending=True, stable=True)                   # ... then weight, stably
    cols = cols.gather(-1, order)
    keys, kept = cols[..., :k].cpu().numpy(), vals[..., :k].cpu().numpy()
    if kk < w.shape[-1]:
        tied = (vals[..., -1] >= vals[..., k - 1]).cpu().numpy()                  # (h, r) the tie may go on
        if tied.any():
            rows = w[torch.as_tensor(tied, device=w.device)].cpu().numpy()         # (n, c)
            again = strongest(rows, k)
            keys[tied], kept[tied] = again, np.take_along_axis(rows, again, 1)
    return keys.astype(np.int64, copy=False), kept.astype(np.float32, copy=False)
