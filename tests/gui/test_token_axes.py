"""Token axes keep their edge labels and their title clear of them: Rollout showed 15
columns and 14 labels (no [EOS], in the window and the exported PNG), Head detail lost its
first [BOS] at 63 tokens, and the key-axis title sat on the rotated labels."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetrics

import numpy as np

from attnscope.gui.state import AppState
from attnscope.gui.widgets.token_matrix import TokenMatrix
from tests.helpers.views import label_specs


def drawn_labels(axis) -> list[str]:
    return [text for _rect, _flags, text in label_specs(axis)]


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


def test_a_map_with_longer_tokens_paints_once_at_its_new_size(qtbot):
    """The first long Run after a short one: each view laid out, its axes sized to the new
    tokens and relabelled before it paints, not in three or four paints one after another
    (pyqtgraph widening an axis while painting), which froze the window."""
    from PySide6.QtCore import QCoreApplication
    from attnscope.gui.drawing.settling import settle

    view = TokenMatrix(AppState(), "rollout")
    qtbot.addWidget(view)
    view.resize(700, 400)
    view.show()
    short = ["the", "dog"] * 20
    view.show_matrix(np.random.default_rng(0).random((40, 40)), short, short)
    for _ in range(6):
        QCoreApplication.processEvents()
    paints = []
    original = view.paintEvent
    view.paintEvent = lambda event: (paints.append(view.item.vb.size()), original(event))
    longer = ["attention", "every"] * 200
    view.show_matrix(np.random.default_rng(1).random((400, 400)), longer, longer)
    settle(view)      # what PreparedView does after apply_drawing
    for _ in range(6):
        QCoreApplication.processEvents()
    assert len(paints) == 1
    metrics = QFontMetrics(view.item.getAxis("left").style.get("tickFont") or view.item.getAxis("left").font())
    assert view.item.getAxis("left").width() >= metrics.horizontalAdvance("attention")
