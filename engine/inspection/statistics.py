"""The one list of head statistics: each is a row-block reducer with its name, definition and tip.

A reducer sees one block of exact attention weights of every head of a layer, ``w`` (H, r, c):
queries ``rows`` (r of them) against keys 0..c-1 (never a T x T array), and returns each row's
value (H, r), and which rows count (r,) where the statistic is not defined for every row (a
first token has no previous token). Head statistics, ``attnscope heads`` and the atlas all read
this list: the window's columns and tips, the CLI's JSON, the atlas's metrics, the help and
docs/atlas.md. A new role detector is one more entry in ``STATISTICS``; readers look the list
up at call time (``statistics.STATISTICS``), so a test can append one.

Why here: engine/inspection sits below the atlas in the engine's layers (tests/engine/
test_layering.py), so both read it. torch is imported inside the functions that need it:
the window imports this list at start, before torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from dataclasses import field

import numpy as np

if TYPE_CHECKING:        # annotations only: torch is imported where a statistic is computed
    import torch

LOCAL_WINDOW = 16     # |i - j| <= 16: the local-window mass


@dataclass
class Rows:
    """What a reducer knows of one block besides its weights, all on the weights' device."""
    qpos: torch.Tensor          # (r,) long: each query's position among the keys
    keys: torch.Tensor          # (c, 2) float: 1 and each key's position (row sums and position sums in one matmul)
    causal: bool                # no key after its query has weight (a causal call)
    copy_rows: torch.Tensor     # (P,) long: the block's row of each (query, earlier copy of its token) pair
    copy_keys: torch.Tensor     # (P,) long: that earlier copy's position
    has_copy: torch.Tensor      # (r,) bool: the query's token came before
    logw: torch.Tensor          # (H, r, c) log-weights, a masked cell's held at -1e30 (its weight is 0)
    markers: dict = field(default_factory=dict)   # marker name -> (c,) bool: keys that are [CLS]-like, ...


def copies(ids, r0: int, r1: int, offset: int = 0):
    """(rows, keys, has_copy) of queries r0..r1-1 (key positions r0 + offset, ...): every pair of a
    query and an earlier position of its token, as numpy arrays. Made from the document's tokens
    grouped once (``token_groups``), so a block's pairs are the only thing built: never a
    (T, T) mask."""
    order, start, rank = ids
    q = np.arange(r0, r1) + offset
    n = rank[q]                                                                # earlier copies of each query
    rows = np.repeat(np.arange(r1 - r0), n)
    first = np.repeat(start[q], n)
    within = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    return rows, order[first + within], n > 0


def token_groups(ids: np.ndarray):
    """(order, start, rank): positions sorted by token (stable), where each position's token
    group starts in ``order``, and how many copies of its token came before it."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    new = np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]
    group_start = np.maximum.accumulate(np.where(new, np.arange(len(ids)), 0))
    start, rank = np.empty(len(ids), np.int64), np.empty(len(ids), np.int64)
    start[order], rank[order] = group_start, np.arange(len(ids)) - group_start
    return order, start, rank


@dataclass(frozen=True)
class Statistic:
    name: str
    definition: str                                        # what docs/atlas.md and the help say
    tip: str                                               # one line for a column's tooltip
    reduce: Callable[[torch.Tensor, Rows], tuple[torch.Tensor, torch.Tensor | None]]
    upper: Callable[[int], float]                          # the histogram's top for documents of n tokens
    source: str = ""
    self_only: bool = False      # only where queries and keys are one text's positions (nan for cross-attention)
    atlas: bool = True           # measured by the atlas too (False: where the atlas's framing makes it moot)


def _on_pairs(w: torch.Tensor, rows: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """(H, r, c) weights, P (row, key) pairs -> (H, r): each row's weight summed over its pairs' keys."""
    out = w.new_zeros(w.shape[0], w.shape[1])
    if len(rows):
        out.index_add_(1, rows, w.reshape(w.shape[0], -1).index_select(1, rows * w.shape[-1] + keys))
    return out


def _diagonal(w: torch.Tensor, rows: Rows, shift: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's weight on key qpos - shift (0 where that key is not in the block), and the rows that have it."""
    at = rows.qpos - shift                                                   # (r,)
    valid = (at >= 0) & (at < w.shape[-1])
    picked = w.gather(2, at.clamp(0, w.shape[-1] - 1)[None, :, None].expand(w.shape[0], -1, 1))[..., 0]
    return picked * valid, valid


def entropy(w, rows):
    return -(w * rows.logw).sum(-1), None


def distance(w, rows):
    if rows.causal:     # every key read is at or before its query: sum_j a_ij (i - j), one matmul
        sums = w @ rows.keys                                                     # (H, r, 2)
        return rows.qpos.to(w.dtype) * sums[..., 0] - sums[..., 1], None
    gap = (rows.qpos[:, None] - rows.keys[None, :, 1]).abs().to(w.dtype)     # (r, c)
    return (w * gap).sum(-1), None


def sink(w, rows):
    return w[:, :, 0], None


def learned_sink(w, rows):
    """A model with attention sinks (gpt-oss's learned logit per head) gives each row's softmax one
    more term that reads no value: its share is what the row's weights leave of 1."""
    return (1.0 - w.sum(-1)).clamp_min_(0.0), None


def previous(w, rows):
    return _diagonal(w, rows, 1)


def self_mass(w, rows):
    return _diagonal(w, rows, 0)


def local(w, rows):
    import torch

    at = rows.qpos[:, None] + torch.arange(-LOCAL_WINDOW, LOCAL_WINDOW + 1, device=w.device)[None, :]   # (r, 33)
    inside = (at >= 0) & (at < w.shape[-1])
    near = w.gather(2, at.clamp(0, w.shape[-1] - 1)[None].expand(w.shape[0], -1, -1))   # (H, r, 33)
    return (near * inside).sum(-1), None


def duplicate(w, rows):
    return _on_pairs(w, rows.copy_rows, rows.copy_keys), rows.has_copy


def induction(w, rows):
    """The key after each earlier copy e of the query's token is e + 1 (<= the query, since e < it)."""
    return _on_pairs(w, rows.copy_rows, rows.copy_keys + 1), rows.has_copy


MARKERS = {"cls": ("[CLS]", "[BOS]", "<s>"), "sep": ("[SEP]", "[EOS]", "</s>")}   # marker -> its key tokens


def _marker(name: str):
    def mass(w, rows):
        """The weight on keys that are this marker; no row counts where the text has none (nan: hidden)."""
        keys = rows.markers.get(name)
        if keys is None or not bool(keys.any()):
            return w.new_zeros(w.shape[:2]), rows.qpos.new_zeros(w.shape[1], dtype=bool)
        return w @ keys.to(w.dtype), None                                       # (H, r, c) @ (c,)
    return mass


def _one(n: int) -> float:
    return 1.0


STATISTICS: list[Statistic] = [
    Statistic("entropy", "-sum_j a_ij log a_ij, in nats, over the keys j query i sees",
              "how spread a row is (0: one key; ln T: uniform)", entropy, lambda n: math.log(max(n, 2)),
              "Shannon entropy of each attention row (as Clark et al., 2019, What does BERT look at?)"),
    Statistic("distance", "sum_j a_ij |i - j|: the mean distance, in tokens, from a query to what it reads",
              "how far back a head looks (tokens)", distance, lambda n: float(n),
              "mean attention distance (Vig and Belinkov, 2019; Dosovitskiy et al., 2021)"),
    Statistic("sink", "a_i0: the weight on the first token",
              "weight on the first token (the attention sink)", sink, _one,
              "attention sinks (Xiao et al., 2023, StreamingLLM)"),
    Statistic("learned_sink", "1 - sum_j a_ij: the share of a learned sink (a softmax term that reads no value; "
              "Head statistics hides it for a model without one)", "weight on the model's learned sink", learned_sink, _one,
              "learned attention sinks (gpt-oss, OpenAI 2025; Sun et al., 2024, Massive activations)"),
    Statistic("previous", "a_i,i-1: the weight on the token just before (queries i >= 1)",
              "weight on the previous token", previous, _one,
              "previous-token heads (Olsson et al., 2022, In-context learning and induction heads)", self_only=True),
    Statistic("self", "a_ii: the weight on the query's own token", "weight on the token itself", self_mass, _one,
              "Clark et al., 2019", self_only=True),
    Statistic("local", f"sum of a_ij over |i - j| <= {LOCAL_WINDOW}: the weight within {LOCAL_WINDOW} tokens",
              f"weight within {LOCAL_WINDOW} tokens", local, _one,
              "local heads (Voita et al., 2019; Xiao et al., 2024, DuoAttention's streaming heads)", self_only=True),
    Statistic("duplicate", "sum of a_ij over j < i with token j = token i (queries whose token came before)",
              "weight on earlier copies of the query's token", duplicate, _one,
              "duplicate-token heads (Wang et al., 2022, Interpretability in the wild)", self_only=True),
    Statistic("induction", "sum of a_ij over 1 <= j <= i with token j-1 = token i (queries with such a key): "
              "the keys right after an earlier copy of the query's token",
              "weight on what followed earlier copies of the query's token", induction, _one,
              "induction heads (Olsson et al., 2022)", self_only=True),
    Statistic("cls", "sum of a_ij over keys j that are [CLS], [BOS] or <s> (texts that have one)",
              "weight on [CLS] / [BOS]", _marker("cls"), _one, "Clark et al., 2019", atlas=False),
    Statistic("sep", "sum of a_ij over keys j that are [SEP], [EOS] or </s> (texts that have one)",
              "weight on [SEP] / [EOS]: a no-op for BERT's heads", _marker("sep"), _one,
              "Clark et al., 2019", atlas=False),
]
NAMES = [s.name for s in STATISTICS if s.atlas]     # the atlas's, at import (tests); readers use atlas_statistics()


def atlas_statistics() -> list[Statistic]:
    """The entries the atlas measures, read at call time. cls and sep are not among them: the
    atlas frames every document with the model's own specials at the same places, so the weight
    on them says the frame, and ``sink`` reads the first already."""
    return [s for s in STATISTICS if s.atlas]


def head_means(blocks, shape: tuple, self_attention: bool, key_tokens, report=None, stop=None) -> dict:
    """{name: (L, H) float32} every entry of ``STATISTICS``: each head's mean over the rows it
    counts (nan where none: a cross-attention's self_only entry, a text without [CLS]), from
    exact row blocks, the one path for a short or a long trace. ``blocks(layer)`` yields
    (first row, (H, r, Tk) weights) on one device; ``shape`` is (L, H, Tq, Tk); ``key_tokens``
    label the keys (str or ids). Sums are float64. ``report``/``stop`` as layer_started."""
    import torch

    from attnscope.engine.traces.base import layer_started   # it reaches the adapters: not at the window's start

    stats = list(STATISTICS)
    L, H, tq, tk = shape
    offset = tk - tq if self_attention else 0
    labels = np.asarray([str(t) for t in key_tokens])                            # (Tk,)
    _, ids = np.unique(labels, return_inverse=True)
    is_marker = {m: np.isin(labels, names) for m, names in MARKERS.items()}     # (Tk,) bool each
    groups = token_groups(ids.astype(np.int64))
    measured = [i for i, stat in enumerate(stats) if self_attention or not stat.self_only]
    sums, counts = np.zeros((len(stats), L, H)), np.zeros((len(stats), L))
    for layer in range(L):
        layer_started(layer, L, report, stop)
        vals = valid = None           # (S, H, Tq) each row's value of each statistic, (S, Tq) the rows it counts
        for r0, w in blocks(layer):                                              # (H, r, Tk)
            dev, r1 = w.device, r0 + w.shape[1]
            if vals is None:
                vals = torch.zeros(len(measured), H, tq, device=dev)
                valid = torch.ones(len(measured), tq, dtype=torch.bool, device=dev)
            w = w.float()
            qpos = torch.arange(r0, r1, device=dev) + offset
            keys = torch.stack([torch.ones(tk, device=dev), torch.arange(tk, device=dev, dtype=torch.float32)], 1)
            pair_rows, pair_keys, has = copies(groups, r0, r1, offset) if self_attention else \
                (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(r1 - r0, bool))   # cross: two texts
            markers = {m: torch.as_tensor(keys_of, device=dev) for m, keys_of in is_marker.items()}
            rows = Rows(qpos=qpos, keys=keys, causal=False, copy_rows=torch.as_tensor(pair_rows, device=dev),
                        copy_keys=torch.as_tensor(pair_keys, device=dev), has_copy=torch.as_tensor(has, device=dev),
                        logw=torch.log(w.clamp_min(1e-30)), markers=markers)
            for slot, i in enumerate(measured):
                v, ok = stats[i].reduce(w, rows)                                 # (H, r), (r,) | None
                vals[slot, :, r0:r1] = v
                if ok is not None:
                    valid[slot, r0:r1] = ok
        if vals is None:          # a layer without rows
            continue
        # Summed once a layer, in float64: a block's few torch calls each wait for the GIL while the
        # window's thread paints, so the sums are not made block by block and statistic by statistic.
        sums[measured, layer] = (vals.double() * valid.double()[:, None, :]).sum(-1).cpu().numpy()   # (S, H)
        counts[measured, layer] = valid.sum(-1).cpu().numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts[..., None]                                         # 0 / 0: nan, none counted
    return {s.name: means[i].astype(np.float32) for i, s in enumerate(stats)}
