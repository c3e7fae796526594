"""What a new user trips over (issue 34), driven through the real window and panels."""
from __future__ import annotations

import pytest

from engine.loading import catalog
from gui.worker import job_failures

GPT = next(str(p) for p in catalog.bundled_checkpoints() if p.stem == "gpt")


def _open(window, title):
    window.docks[title].show()
    window.docks[title].raise_()
    return window.view(title)


@pytest.fixture
def gpt_window(window_on):
    return window_on(GPT)


def test_a_model_that_ends_at_once_says_so_on_the_output_line(gpt_window, qtbot):
    w = gpt_window
    w.text_edit.setText("Good night, sweet prince, and they sleep.")
    w.run()
    qtbot.waitUntil(lambda: "ended immediately" in w.output_label.text(), timeout=30000)
    assert "([EOS] p = 0." in w.output_label.text() and w.output_label.isVisible()
    panel = _open(w, "Decoding")
    panel.step()
    qtbot.waitUntil(lambda: panel.ended, timeout=30000)
    assert "ended immediately ([EOS] p = 0." in w.state.output


def test_empty_text_then_step_is_one_calm_message_and_clears_the_views(window, qtbot):
    panel = _open(window, "Decoding")
    detail = _open(window, "Head detail")
    window.state.set_output("der hund")
    before = window.error_box
    failures = []
    job_failures().failed.connect(lambda title, message: failures.append(title))
    window.text_edit.setText("")
    window.run()
    assert window.state.trace is None and window.grid.mosaic is None and detail.matrix is None
    assert window.output_label.text() == ""
    assert window.banner.isVisible() and "no text" in window.banner.text().lower()
    assert not panel.step_button.isEnabled()
    panel.step()                               # the key press does nothing either
    assert not panel.jobs.busy and panel.session is None
    qtbot.wait(50)
    assert failures == [] and window.error_box is before, window.error_box and window.error_box.text()
    assert "no text" not in panel.output.text().lower()     # said once, in the banner
