"""Which lane computes (gui/worker.py): every computation from a recording passes
AttentionCall.scores, so a fixture that notes the lane of each call proves the thread rule
(attention computed from a recording runs on the MODEL lane only). Import the fixture into a
test module by name (``from tests.helpers.lanes import lanes_computing``)."""
from __future__ import annotations

import pytest

import attnscope.gui.worker as worker
from attnscope.engine.seam.call import AttentionCall


@pytest.fixture
def lanes_computing(monkeypatch) -> list:
    """The lane (None: a thread of no lane) of every computation from a recording from now on."""
    seen: list = []
    real = AttentionCall.scores

    def scores(call, *args, **kwargs):
        seen.append(getattr(worker._CURRENT, "lane", None))
        return real(call, *args, **kwargs)
    monkeypatch.setattr(AttentionCall, "scores", scores)
    return seen
