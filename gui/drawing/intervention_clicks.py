"""Clicks that change the model: Shift/Ctrl-click a heads-grid tile to switch the head off,
Shift/Ctrl/Ctrl+Shift-click a Head detail cell to knock an edge, a column or a row out (Alt+click
there asks Why, gui.views.why_panel). Each only
writes AppState.interventions; the window re-runs and every view follows."""
from __future__ import annotations

from PySide6.QtCore import Qt

from attnscope.engine.interventions import Edge, HeadRef
from attnscope.engine.kinds import KEY_SIDE, QUERY_SIDE
from attnscope.engine.traces import reading

KEYS = Qt.KeyboardModifier
SHIFT, CTRL = KEYS.ShiftModifier, KEYS.ControlModifier


def toggle_from_click(state, kind: str, layer: int, head: int, modifiers) -> bool:
    """Shift/Ctrl-click on a tile switches that head off (zero ablation) or back on; True when
    the click was that (a plain click opens the head as before)."""
    if not modifiers & (SHIFT | CTRL):
        return False
    state.set_interventions(state.interventions.toggle(HeadRef(kind, layer, head)))
    return True


def positions(trace, kind: str, side: str, index: int) -> tuple[int, ...]:
    """The token positions fed that row or column ``index`` of a trace stands for: itself, or
    every piece of the word when the trace merges word pieces (a knockout blocks ids fed)."""
    side_name = (QUERY_SIDE if side == "query" else KEY_SIDE)[kind]
    word_of = reading.groups(trace).get(side_name)
    return (index,) if word_of is None else tuple(i for i, w in enumerate(word_of) if w == index)


def knockout_from_click(state, kind: str, layer: int, query: int, key: int, modifiers) -> bool:
    """Shift-click: the edge query -> key in this layer; Ctrl-click: the key's whole column;
    Ctrl+Shift-click: the query's whole row. True when the click was one of those."""
    q, k = positions(state.trace, kind, "query", query), positions(state.trace, kind, "key", key)
    if modifiers & CTRL and modifiers & SHIFT:
        edge = Edge(kind, q, None, (layer,))
    elif modifiers & CTRL:
        edge = Edge(kind, None, k, (layer,))
    elif modifiers & SHIFT:
        edge = Edge(kind, q, k, (layer,))
    else:
        return False
    state.set_interventions(state.interventions.block(edge))
    return True
