"""Token labels that fit: an axis shows every n-th token, n as small as keeps the labels
from overlapping in the pixels the axis has (and never more than MAX_LABELS).

Why: measuring and drawing 512 labels that overlap anyway costs tens of milliseconds of
GUI-thread time per axis and shows a smear; the hovered token is always read out in full.
"""
from __future__ import annotations

import math

MAX_LABELS = 160


def label_step(n: int, room_px: float, label_px: float) -> int:
    """Show every ``label_step``-th of ``n`` labels so each gets ``label_px`` of ``room_px``."""
    fit = max(1, int(room_px // max(label_px, 1.0)))
    return max(1, math.ceil(n / min(fit, MAX_LABELS)))


def fitting_ticks(tokens: list[str], room_px: float, label_px: float, scale: float = 1.0) -> list[tuple[float, str]]:
    """(position, text) ticks at the centres of every shown token's cell."""
    step = label_step(len(tokens), room_px, label_px)
    return [((i + 0.5) * scale, tokens[i]) for i in range(0, len(tokens), step)]


def view_ticks(tokens: list[str], vb, horizontal: bool, label_px: float, scale: float = 1.0) -> list[tuple[float, str]]:
    """Ticks for the part of ``tokens`` a ViewBox shows now: zoomed in, more labels fit.
    ``horizontal``: tokens run along x (a top or bottom axis), else along y."""
    (x0, x1), (y0, y1) = vb.viewRange()
    lo, hi = (x0, x1) if horizontal else (y0, y1)
    visible = max(1.0, min(len(tokens) * scale, hi) - max(0.0, lo)) / scale
    room = vb.width() if horizontal else vb.height()
    step = label_step(int(round(visible)), room, label_px)
    return [((i + 0.5) * scale, tokens[i]) for i in range(0, len(tokens), step)]


def zoomable(plot_item, on_change) -> None:
    """Mouse zoom (wheel) and pan (drag) on ``plot_item``, labels re-fitted on every change
    (``on_change``), and a double-click back to the whole map."""
    plot_item.setMouseEnabled(True, True)
    plot_item.vb.sigRangeChanged.connect(lambda *_: on_change())

    def reset(event):
        if event.double() and plot_item.vb.sceneBoundingRect().contains(event.scenePos()):
            from attnscope.gui.widgets.peak_image import show_whole_again

            if not show_whole_again(plot_item.vb):     # the whole map with room at its edges, as first shown
                plot_item.vb.autoRange(padding=0)
    plot_item.scene().sigMouseClicked.connect(reset)
