"""Token axes keep their edge labels and their title clear of them: Rollout showed 15
columns and 14 labels (no [EOS], in the window and the exported PNG), Head detail lost its
first [BOS] at 63 tokens, and the key-axis title sat on the rotated labels."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetrics, QImage, QPainter

import numpy as np

from gui.state import AppState
from gui.views.token_matrix import TokenMatrix


def drawn_labels(axis) -> list[str]:
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _rect, _flags, text in texts]


@pytest.mark.parametrize("n, size", [(15, (520, 420)), (63, (700, 700))])
def test_first_and_last_token_keep_their_labels(qtbot, n, size):
    tokens = ["[BOS]"] + [f"word{i}" for i in range(n - 2)] + ["[EOS]"]
    view = TokenMatrix(AppState(), "rollout")
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    qtbot.waitUntil(view.isVisible)
    view.show_matrix(np.full((n, n), 1.0 / n, dtype=np.float32), tokens, tokens)
    qtbot.wait(1)
    ticks = [text for _pos, text in view.key_axis._tickLevels[0]]
    assert ticks[0] == "[BOS]" and (n > 20 or ticks[-1] == "[EOS]")   # thinned at 63: every n-th
    assert drawn_labels(view.key_axis) == ticks


def test_the_key_title_sits_above_the_rotated_labels(qtbot):
    view = TokenMatrix(AppState())
    view.item.setLabel("top", "key")
    qtbot.addWidget(view)
    view.resize(400, 400)
    view.show()
    qtbot.waitUntil(view.isVisible)
    view.show_matrix(np.eye(4, dtype=np.float32), list("abcd"), ["a-long-token", "b", "c", "d"])
    qtbot.wait(1)
    axis = view.key_axis
    widest = QFontMetrics(axis.style.get("tickFont") or axis.font()).horizontalAdvance("a-long-token")
    title = axis.label.boundingRect().height()
    assert axis.height() >= widest + 12 + int(title)
