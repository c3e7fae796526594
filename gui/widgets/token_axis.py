"""An axis that labels ticks with tokens, written vertically so long tokens never overlap.

Why it overrides pyqtgraph's edge check: pyqtgraph drops a tick label whose *unrotated*
text box sticks out of the axis, so a long first or last token ([BOS], [EOS]) vanished
although, written vertically, it is only a line's height wide and centred on its tick
(Rollout showed 15 columns and 14 labels; Head detail lost [BOS] at 63 tokens). And the
axis height it sets makes room for its title too, which overlapped the labels."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QFontMetrics


class VerticalTokenAxis(pg.AxisItem):
    """A top or bottom axis whose tick labels read bottom-to-top."""

    def __init__(self, orientation: str = "top", **kwargs):
        super().__init__(orientation, **kwargs)
        self._labels: list[str] = []
        self._placing = False      # inside generateDrawSpecs: the edge check lets every tick's label in

    def set_tokens(self, tokens: list[str], every: int = 1) -> None:
        """Label every ``every``-th token."""
        self.set_ticks(tokens, [(i + 0.5, t) for i, t in enumerate(tokens) if i % every == 0])

    def set_ticks(self, tokens: list[str], ticks: list[tuple[float, str]]) -> None:
        """Label ``ticks`` (position, text), a thinned choice of ``tokens``. The axis height
        follows the widest of *all* tokens, so thinning (which follows the plot's size and
        zoom) never changes the plot's size."""
        self._labels = [t for _, t in ticks]
        self.setTicks([ticks])
        metrics = QFontMetrics(self.style.get("tickFont") or self.font())
        widest = max((metrics.horizontalAdvance(t) for t in set(tokens)), default=0)
        height = min(140, widest + 12)
        if self.label.isVisible():     # the title ("key") above the labels, not on them
            height += int(self.label.boundingRect().height())
        if height != self.height():
            self.setHeight(height)

    def generateDrawSpecs(self, p):
        self._placing = True
        try:
            return super().generateDrawSpecs(p)
        finally:
            self._placing = False

    def boundingRect(self):
        """While labels are placed, wide enough for any unrotated label box: every tick shown
        is inside the view, and its label is drawn vertically on it."""
        rect = super().boundingRect()
        return rect.adjusted(-10_000, 0, 10_000, 0) if self._placing else rect

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs):
        super().drawPicture(p, axisSpec, tickSpecs, [])
        p.setPen(self.textPen())
        if self.style.get("tickFont"):
            p.setFont(self.style["tickFont"])
        metrics = p.fontMetrics()
        top = self.orientation == "top"
        edge = self.boundingRect().bottom() - 8 if top else self.boundingRect().top() + 8
        for rect, _flags, text in textSpecs:
            p.save()
            p.translate(rect.center().x() + metrics.ascent() / 2 - 1, edge)
            p.rotate(-90)
            p.drawText(QPointF(0 if top else -metrics.horizontalAdvance(text), 0), text)
            p.restore()


def fit_row_axis(axis: pg.AxisItem, tokens: list[str]) -> None:
    """A left axis as wide as the widest of *all* ``tokens``, set when the tokens change
    (before the view paints). Left to itself, pyqtgraph widens the axis while painting, to
    the labels it just drew: the view box shrinks, is laid out and painted again, three or
    four times a view on the first long Run after a short one."""
    metrics = QFontMetrics(axis.style.get("tickFont") or axis.font())
    widest = max((metrics.horizontalAdvance(t) for t in set(tokens)), default=0)
    width = min(300, widest + axis.style["tickTextOffset"][0] + max(0, axis.style["tickLength"]) + 4)
    if axis.label.isVisible():   # a title ("query") beside the labels
        width += int(axis.label.boundingRect().height() * 0.8)
    if width != axis.fixedWidth:
        axis.setWidth(width)
