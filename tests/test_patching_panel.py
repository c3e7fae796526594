"""The Patching panel (issue 39) on the bundled GPT with an induction pair: a repeated random
sequence against one whose second half is changed. The answers are offered from each run's
top tokens; exact patching of every head puts the induction head (layer 3, head 3) first and
the previous-token head (layer 2, head 1) second; the image is the normalised result on a
scale centred at 0; hover reads raw and normalised; a changed text marks the result stale;
clicking a head runs the clean text and opens the head in Head detail; Stop drops the job;
exact and attribution side by side say how well they agree."""
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

ROOT = Path(__file__).resolve().parents[1]
GPT = str(ROOT / "resources/checkpoints/gpt.safetensors")
CLEAN = "gri when speak King tru him all well gri when speak King tru him all"
CORRUPT = "gri when speak King tru him all well court like arm fear made have thee"


def _panel(w, qtbot):
    w.docks["Patching"].show()
    w.docks["Patching"].raise_()
    p = w.view("Patching")
    p.clean_edit.setText(CLEAN)
    p.corrupt_edit.setText(CORRUPT)
    qtbot.waitUntil(lambda: p.answer_box.count() > 0 and p.wrong_box.count() > 0, timeout=30000)
    return p


def _patch(p, qtbot, point="heads", method="exact"):
    before = p.result
    p.what_box.setCurrentText(point)
    p.method_box.setCurrentIndex(p.method_box.findData(method))
    p.run()
    qtbot.waitUntil(lambda: p.result is not before and p.result is not None and not p.jobs.busy, timeout=60000)
    return p.result


def _cell_pos(p, row: int, col: int):
    return p.plot.mapFromScene(p.item.vb.mapViewToScene(pg.Point(col + 0.5, row + 0.5)))


def test_induction_heads_stand_out_and_a_click_opens_the_head(window_on, qtbot):
    w = window_on(GPT)
    p = _panel(w, qtbot)
    assert p.answer_box.currentText().startswith("id:") and "well" in p.answer_box.currentText()
    assert p.wrong_box.currentText() != p.answer_box.currentText()
    result = _patch(p, qtbot)
    norm = result.normalised()["heads"]
    order = np.argsort(norm.ravel())[::-1]
    assert np.unravel_index(order[0], norm.shape) == (3, 3) and np.unravel_index(order[1], norm.shape) == (2, 1)
    np.testing.assert_array_equal(p.image.image, norm.astype(np.float32))
    lo, hi = p.image.getLevels()
    assert lo == -hi and hi >= 1                                   # centred at 0
    p._on_hover(p.item.vb.mapViewToScene(pg.Point(3.5, 3.5)))
    assert p.readout.text().startswith("L3, H3: patched") and f"normalised {norm[3, 3]:.3f}" in p.readout.text()
    assert not p.mark.isVisible()

    w.text_edit.setText("something else entirely")
    qtbot.mouseClick(p.plot.viewport(), Qt.MouseButton.LeftButton, pos=_cell_pos(p, 2, 1))
    qtbot.waitUntil(lambda: w.state.text == CLEAN and not w.run_jobs.busy and w.state.trace is not None,
                    timeout=30000)
    assert (w.state.layer, w.state.head) == (2, 1) and w.text_edit.text() == CLEAN
    assert w.docks["Head detail"].isVisible()

    p.clean_edit.setText(CLEAN + " well")                          # the result is no longer current
    assert p.mark.isVisible() and p.image.opacity() < 1
    p._on_hover(p.item.vb.mapViewToScene(pg.Point(3.5, 3.5)))
    assert p.readout.text().startswith("STALE")
    p.clean_edit.setText(CLEAN)
    assert not p.mark.isVisible()


def test_attribution_beside_exact_says_how_well_they_agree_and_stop_drops_the_job(window_on, qtbot):
    w = window_on(GPT)
    p = _panel(w, qtbot)
    _patch(p, qtbot, "heads", "exact")
    estimated = _patch(p, qtbot, "heads", "attribution")
    assert estimated.method == "attribution" and "Attribution against exact patching" in p.status.text()
    r = float(p.status.text().split("r = ")[1].rstrip("."))
    assert r > 0.9
    shown = p.result
    p.what_box.setCurrentText("heads-by-pos")
    p.method_box.setCurrentIndex(p.method_box.findData("exact"))
    p.run()
    p.stop()
    assert not p.jobs.busy and p.result is shown and p.status.text().startswith("Stopped")


def test_an_encoder_is_told_there_is_nothing_to_patch_in_the_plot_too(window_on, qtbot):
    """Walked as a user (MiniLM): the status said there was nothing to patch while the plot
    still said "press Patch"; the plot says the same as the status, and a decoder opened
    after it gets the plot's invitation back."""
    w = window_on("random-bert")
    w.docks["Patching"].show()
    panel = w.view("Patching")
    text = lambda: panel.item._empty_label.text                                # noqa: E731
    assert not panel.run_button.isEnabled() and "Nothing to patch" in text() and "press Patch" not in text()
    old = w.state.loaded
    w.open_source("random-gpt")
    qtbot.waitUntil(lambda: w.state.loaded is not old, timeout=20000)
    assert panel.run_button.isEnabled() and "press Patch" in text()
