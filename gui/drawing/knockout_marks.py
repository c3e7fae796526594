"""Knocked-out attention, marked in Head detail: a dashed frame around each blocked cell,
column or row of the layer shown.

The trace already reads 0 where the forward blocked a score (engine.interventions.spec.
marked), but a 0 looks like any weak weight; the frame says it was the user's knockout.
Positions in an Edge are the ids fed (word pieces); the map's rows and columns may be
words (pieces merged) or leave out special tokens, so each position is mapped to the row
or column that shows it. Runs of neighbouring positions become one rectangle, and a
knockout over a huge range (``0-1000000000`` at the command line) stays one rectangle:
nothing here walks positions beyond the text's length.
"""
from __future__ import annotations

import numpy as np

from attnscope.engine.kinds import KEY_SIDE, QUERY_SIDE
from attnscope.engine.traces import reading

MAX_RECTS = 2000     # frames drawn for one knockout, at most


def shown_positions(xs, n: int, word_of, shown_index) -> list[int]:
    """The rows (or columns) of the map that positions ``xs`` (None: all) fall in: pieces to
    words (``word_of``: the piece -> word list, or None), then to the index shown (``shown_index``:
    the sorted original indices the map keeps)."""
    if xs is None:
        pieces = range(n if word_of is None else len(word_of))
    elif isinstance(xs, range):
        pieces = range(max(0, xs.start), min(xs.stop, n if word_of is None else len(word_of)))
    else:
        pieces = [x for x in xs if 0 <= x < (n if word_of is None else len(word_of))]
    tokens = sorted({word_of[p] for p in pieces}) if word_of is not None else list(pieces)
    index = np.asarray(shown_index)
    rows = np.searchsorted(index, tokens)
    return [int(r) for r, t in zip(rows, tokens) if r < len(index) and index[r] == t]


def runs(xs: list[int]) -> list[tuple[int, int]]:
    """Sorted positions as [start, stop) runs of neighbours."""
    out: list[tuple[int, int]] = []
    for x in xs:
        if out and out[-1][1] == x:
            out[-1] = (out[-1][0], x + 1)
        else:
            out.append((x, x + 1))
    return out


def knockout_rects(spec, trace, kind: str, layer: int, q_index, k_index) -> list[tuple[int, int, int, int]]:
    """(x, y, width, height) in map cells of every block the interventions knock out in this
    kind and layer: the map's columns are keys (x), its rows queries (y)."""
    groups, pieces = reading.groups(trace), reading.pieces(trace)
    q_side, k_side = QUERY_SIDE[kind], KEY_SIDE[kind]
    rects: list[tuple[int, int, int, int]] = []
    for edge in spec.knockout:
        if edge.kind != kind or (edge.layers is not None and layer not in edge.layers):
            continue
        rows = runs(shown_positions(edge.queries, len(pieces[q_side]), groups.get(q_side), q_index))
        cols = runs(shown_positions(edge.keys, len(pieces[k_side]), groups.get(k_side), k_index))
        if len(rows) * len(cols) > MAX_RECTS:     # scattered positions: their bounding box, one frame
            rows, cols = rows and [(rows[0][0], rows[-1][1])], cols and [(cols[0][0], cols[-1][1])]
        for r0, r1 in rows:
            for c0, c1 in cols:
                rects.append((c0, r0, c1 - c0, r1 - r0))
    return rects
