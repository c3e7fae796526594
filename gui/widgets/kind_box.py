"""The attention-kind selector every trace view has, filled the same way everywhere.

Why one function: a new trace refills every view's selector, and each must keep the kind the
user chose when the trace has it, and refill without a change signal per kind added (the view
redraws once, for the kind it ends on).
"""
from __future__ import annotations

from PySide6.QtWidgets import QComboBox


def fill_kind_box(box: QComboBox, kinds: list[str], keep: str | None, default_last: bool = True) -> str | None:
    """Put ``kinds`` in ``box`` without emitting signals, keeping ``keep`` when the new trace
    has it (else the last kind, or the first); returns the kind now selected."""
    chosen = keep if keep in kinds else ((kinds[-1] if default_last else kinds[0]) if kinds else None)
    # Wide enough for the longest name ("decoder self"): one name for each kind, never cut.
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    box.setMinimumContentsLength(len("decoder self"))
    box.blockSignals(True)
    box.clear()
    box.addItems(kinds)
    if chosen:
        box.setCurrentText(chosen)
    box.blockSignals(False)
    return chosen
