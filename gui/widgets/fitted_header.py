"""A table's column header that never cuts a label off.

Why: Head statistics has 15 columns. Stretched to share the dock's width equally, the long
labels ("induction (repeat)", "previous (repeat)") were cut at both ends at the first-start
width, and a user read "nduction (repea". Here every shown column is first given the width its
label needs (sort arrow included), and whatever width is left is shared out equally, so a wide
table still fills its view; a view narrower than the labels scrolls sideways instead of cutting.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QWidget


class FittedHeader(QHeaderView):
    """A horizontal header whose columns are each at least as wide as their label."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.setSectionsClickable(True)        # as a table's own header: a click sorts
        self.setHighlightSections(True)
        self.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.sectionCountChanged.connect(lambda *_: self.fit())

    def fit(self) -> None:
        """Each shown column its label's width, plus an equal share of the width left over.
        Call it after columns are hidden or shown (Qt says nothing when they are)."""
        shown = [i for i in range(self.count()) if not self.isSectionHidden(i)]
        if not shown:
            return
        needed = [self.sectionSizeFromContents(i).width() for i in shown]
        spare = max(0, self.viewport().width() - sum(needed))
        share, rest = divmod(spare, len(shown))
        for n, (i, width) in enumerate(zip(shown, needed)):
            self.resizeSection(i, width + share + (rest if n == len(shown) - 1 else 0))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()
