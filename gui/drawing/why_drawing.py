"""What the Why panel draws of one score split (engine.experiments.ScoreSplit), prepared in the
worker: for each table it can show (this key's, the versus key's, their difference, the head's
loadings over the text), the
strongest sources as a heatmap with the rest summed as "other (N)", each side's marginal as
bars, and the strongest single terms. Plain numbers and names: the GUI thread only hands them
to its plot items. Which source names are heads, and so links to Head detail, is ``head_of``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF

THIS, VERSUS, DIFFERENCE, LOADINGS = "this key", "versus key", "difference", "head loadings"   # the tables
ROWS, COLS = 10, 10      # the heatmap's strongest sources a side (the rest: "other (N)")
BARS = 12                # each marginal's strongest sources
TOP_TERMS = 6            # the strongest single terms, named as links under the map
_HEAD = re.compile(r"^(enc\.)?L(\d+)\.([HX])(\d+)$")


def head_of(source: str, kind: str) -> tuple[str, int, int] | None:
    """(kind, layer, head) of a head's source name in a split of ``kind``: ``L2.H1`` is a
    self-attention head of the stack the split's queries come from (the encoder's in an encoder
    split, else the decoder's), ``L1.X0`` a cross-attention head, ``enc.L0.H2`` an encoder head.
    None for the sources that are no head (embed, pos, type, mlp, bias, other)."""
    match = _HEAD.match(source)
    if match is None:
        return None
    enc, layer, letter, head = match.groups()
    if letter == "X":
        which = CROSS
    elif enc or kind == ENCODER_SELF:
        which = ENCODER_SELF
    else:
        which = DECODER_SELF
    return which, int(layer), int(head)


@dataclass(frozen=True, eq=False)
class WhyTable:
    """One table as drawn: ``table[r, c]`` is row source ``rows[r]`` (query side) with column
    source ``cols[c]`` (key side); the bars are each side's marginal, the strongest first."""
    rows: list[str]
    cols: list[str]
    table: np.ndarray                       # (R, C) float64: sums of terms, the total kept
    span: float                             # the colour scale: -span..span, centred at 0
    query_bars: tuple[list[str], np.ndarray]   # names, (n,) values
    key_bars: tuple[list[str], np.ndarray]
    top_terms: list[tuple[str, str, float]]    # (query source, key source, term), largest by size
    total: float                            # the table's sum (the score, or the difference of scores)


@dataclass(frozen=True, eq=False)
class WhyDrawing:
    """A split ready to draw: its tables by name (THIS always; VERSUS and DIFFERENCE with a versus
    key; LOADINGS when the head's loadings were asked)."""
    split: object                           # the ScoreSplit drawn (numbers and names, no torch)
    tables: dict[str, WhyTable]


def _table(split, terms: np.ndarray) -> WhyTable:
    rows, cols, table = split.strongest(ROWS, COLS, terms)
    q_names, _, q_side = split.strongest(BARS, 1, terms)   # each row summed over every key source
    _, k_names, k_side = split.strongest(1, BARS, terms)
    flat = np.argsort(-np.abs(terms), axis=None, kind="stable")[:TOP_TERMS]
    top = [(split.query_sources[a], split.key_sources[b], float(terms[a, b]))
           for a, b in zip(*np.unravel_index(flat, terms.shape))]
    span = float(np.abs(table).max()) if table.size else 0.0
    return WhyTable(rows=rows, cols=cols, table=table, span=max(span, 1e-9), query_bars=(q_names, q_side.sum(1)),
                    key_bars=(k_names, k_side.sum(0)), top_terms=top, total=float(terms.sum()))


def why_drawing(split) -> WhyDrawing:
    """The tables of ``split`` (in the worker)."""
    tables = {THIS: _table(split, split.terms)}
    if split.versus is not None:
        tables[VERSUS] = _table(split, split.versus.terms)
        tables[DIFFERENCE] = _table(split, split.terms - split.versus.terms)
    if split.loadings is not None:
        tables[LOADINGS] = _table(split, split.loadings.terms)
    return WhyDrawing(split=split, tables=tables)
