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
