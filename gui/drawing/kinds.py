"""How an attention kind's cells are scaled and coloured, decided here once for every view (the
kind selector every trace view has is a widget: gui.widgets.kind_box).

Why the scale lives with the kind: softmax weights lie in [0, 1] and are drawn on that fixed
scale (a head's 0.9 looks as strong as another's). A kind in NOT_SOFTMAX (a linear layer's
effective attention, engine.seam.linear_mixing) is signed and unbounded: on the 0..1 scale its
negative mixing was drawn as 0 and its values past 1 were clipped, a wrong picture with no
word said. Such a kind is drawn on a diverging map, symmetric about 0, out to the largest
magnitude shown (``levels_for``), and its cells are called "mixing", not "weight".
"""
from __future__ import annotations

import numpy as np

from attnscope.engine.kinds import NOT_SOFTMAX
from attnscope.gui.display import display_weights

DIVERGING = "CET-D1"      # blue - white - red, centred at 0 (as the neuron and patching views draw signed values)
UNIT = (0.0, 1.0)         # a softmax kind's fixed levels


def is_signed(kind: str | None) -> bool:
    """True for a kind whose cells are not softmax weights (signed, unbounded)."""
    return kind in NOT_SOFTMAX


def largest(values) -> float:
    """The largest finite magnitude in ``values`` (any shape), or 1.0 when there is none (all 0, empty)."""
    a = np.abs(np.asarray(values, dtype=np.float32))
    a = a[np.isfinite(a)]
    top = float(a.max()) if a.size else 0.0
    return top if top > 0 else 1.0


def levels_for(kind: str | None, values) -> tuple[float, float]:
    """The colour levels of ``values`` drawn as ``kind``: (0, 1) for softmax weights, (-s, s)
    for a signed kind, s the largest magnitude of what is shown (a head, or a layer's heads)."""
    if not is_signed(kind):
        return UNIT
    s = largest(values)
    return -s, s


def colormap_name(kind: str | None, chosen: str) -> str:
    """The colour map ``kind`` is drawn with: the user's choice for weights, a diverging one for a signed kind."""
    return DIVERGING if is_signed(kind) else chosen


def value_word(kind: str | None) -> str:
    """What a cell of ``kind`` is called in hovers and readouts."""
    return "mixing" if is_signed(kind) else "weight"


def value_note(kind: str | None) -> str:
    """A readout's word for a cell of ``kind``: "mixing (not a softmax weight)" for a signed kind."""
    return "mixing (signed, not a softmax weight)" if is_signed(kind) else "weight"


def pooling_for(kind: str | None) -> str:
    """How a long map of ``kind`` is pooled to pixels (engine.traces.pooling): by max for weights,
    by the largest magnitude with its sign for a signed kind, so a negative peak is not lost."""
    return "extreme" if is_signed(kind) else "max"


def strongest(values: np.ndarray, kind: str | None) -> int:
    """The flat index of ``values``' strongest cell as ``kind`` draws it (largest magnitude when signed)."""
    return int(np.argmax(np.abs(values) if is_signed(kind) else values))


def display_values(kind: str | None, values: np.ndarray, threshold: float = 0.0, normalise: bool = False,
                   log_scale: bool = False) -> np.ndarray:
    """A (Tq, Tk) map prepared for drawing as ``kind``: softmax weights as gui.display.display_weights;
    a signed kind keeps its sign: ``normalise`` divides by the largest magnitude, ``threshold``
    hides cells of smaller magnitude, and the log colour (a scale of weights 1e-4..1) is not applied."""
    if not is_signed(kind):
        return display_weights(values, threshold, normalise, log_scale)
    out = np.asarray(values, dtype=np.float32).copy()
    if normalise:
        out /= largest(out)
    if threshold > 0:
        out[np.abs(out) < threshold] = 0.0
    return out


def paint_kind(kind: str | None, chosen: str, levels: tuple[float, float], bar=None, images=()) -> None:
    """Colour ``bar`` (a pg.ColorBarItem, and the image it drives) and ``images`` (PeakImages) as
    ``kind`` is drawn: the map (``colormap_name``), the bar's range (``levels``), and a signed
    kind's images pooled to the screen by largest magnitude, so a negative peak is not lost."""
    from attnscope.gui.colormaps import colormap

    cmap = colormap(colormap_name(kind, chosen))
    for image in images:
        image.extreme = is_signed(kind)
        image.setColorMap(cmap)
    if bar is not None:
        bar.setColorMap(cmap)
        bar.setLevels(levels)


def _tip_for(box, kind: str | None, signed_tip: str) -> None:
    """``box``'s tooltip for the kind drawn: ``signed_tip`` for a signed kind, else the one it was
    built with (kept the first time, for the next softmax kind)."""
    if box.property("weights_tip") is None:
        box.setProperty("weights_tip", box.toolTip())
    box.setToolTip(signed_tip if is_signed(kind) else box.property("weights_tip"))


def offer_log_colour(box, kind: str | None) -> None:
    """A view's "log colour" box (a QCheckBox) for the kind drawn: a scale of weights 1e-4..1,
    so a signed kind, drawn linearly about 0, has it switched off and its tooltip says why
    (the box keeps its state for the next softmax kind)."""
    box.setEnabled(not is_signed(kind))
    _tip_for(box, kind, "A signed kind (mixing, not weights) is drawn on a linear scale symmetric about 0: log colour "
                        "is for weights")


def say_threshold(box, kind: str | None) -> None:
    """A view's "hide below" box for the kind drawn: for a signed kind the threshold applies to
    the magnitude (display_values), so its tooltip says |mixing|, not weight."""
    _tip_for(box, kind, "Cells whose magnitude |mixing| is smaller are drawn as 0, negative or positive (hover "
                        "still reads the signed mixing)")
