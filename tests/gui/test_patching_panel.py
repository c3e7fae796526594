"""The Patching panel (issue 39) on the bundled GPT with an induction pair: a repeated random
sequence against one whose second half is changed. The answers are offered from each run's
top tokens; exact patching of every head puts the induction head (layer 3, head 3) first and
the previous-token head (layer 2, head 1) second; the image is the normalised result on a
scale centred at 0; hover reads raw and normalised; a changed text marks the result stale;
clicking a head runs the clean text and opens the head in Head detail; Stop drops the job;
exact and attribution side by side say how well they agree."""
from pathlib import Path

import numpy as np
import pytest
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, Qt

ROOT = Path(__file__).resolve().parents[2]
GPT = str(ROOT / "resources/checkpoints/gpt.safetensors")
CLEAN = "gri when speak King tru him all well gri when speak King tru him all"
CORRUPT = "gri when speak King tru him all well court like arm fear made have thee"


def _panel(w, qtbot):
    w.docks["Patching"].show()
    w.docks["Patching"].raise_()
    p = w.dock_layout.view("Patching")
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

    w.input_bar.text_edit.setText("something else entirely")
    qtbot.mouseClick(p.plot.viewport(), Qt.MouseButton.LeftButton, pos=_cell_pos(p, 2, 1))
    qtbot.waitUntil(lambda: w.state.text == CLEAN and not w.run_jobs.busy and w.state.trace is not None,
                    timeout=30000)
    assert (w.state.layer, w.state.head) == (2, 1) and w.input_bar.text_edit.text() == CLEAN
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
    panel = w.dock_layout.view("Patching")
    text = lambda: panel.item._empty_label.text                                # noqa: E731
    assert not panel.run_button.isEnabled() and "Nothing to patch" in text() and "press Patch" not in text()
    old = w.state.loaded
    w.opening.open_source("random-gpt")
    qtbot.waitUntil(lambda: w.state.loaded is not old, timeout=20000)
    assert panel.run_button.isEnabled() and "press Patch" in text()


# ---- issue 45: walked as a user ------------------------------------------------------------------------
def _offers_settled(p) -> bool:
    return not p._answers_timer.isActive() and not p.answer_jobs.busy


def _spec(box) -> str:
    return box.currentText().split("  ▸ ")[0]


def test_a_chosen_answer_holds_when_the_texts_change(window_on, qtbot):
    """The third offer picked, then a character typed and deleted in the clean text: the pick
    holds (it reverted silently to the first, and Patch answered another question); with
    another text it is still offered, by its id, whatever its rank; a typed answer stays typed."""
    w = window_on(GPT)
    p = _panel(w, qtbot)
    p.answer_box.setCurrentIndex(2)
    p.wrong_box.setCurrentIndex(3)
    picked, other = _spec(p.answer_box), _spec(p.wrong_box)
    assert picked.startswith("id:")
    qtbot.keyClick(p.clean_edit, "x")
    qtbot.keyClick(p.clean_edit, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: _offers_settled(p), timeout=30000)
    assert p.clean_edit.text() == CLEAN
    assert (_spec(p.answer_box), _spec(p.wrong_box)) == (picked, other)
    assert p.answer_box.currentIndex() == 2
    p.clean_edit.setText("speak King tru him all well court like arm fear made have thee speak King tru")
    qtbot.waitUntil(lambda: _offers_settled(p), timeout=30000)
    assert _spec(p.answer_box) == picked and p.answer_box.findText(p.answer_box.currentText()) >= 0
    p.answer_box.setEditText(" may")
    p.clean_edit.setText(CLEAN)
    qtbot.waitUntil(lambda: _offers_settled(p), timeout=30000)
    assert p.answer_box.currentText() == " may" and p.inputs()[3] == " may"


def test_offered_answers_read_as_their_own_tokens(window_on, qtbot):
    """Each offer is its token's own text, its spaces shown (the leading space a typed answer
    needs: '␣well'), the first of a list as any other (it lost its '##'); picking one gives
    exactly that id."""
    from attnscope.engine.experiments.pairs import answer_texts
    from attnscope.gui.drawing.patching_answers import shown_token

    w = window_on(GPT)
    p = _panel(w, qtbot)
    for box in (p.answer_box, p.wrong_box):
        items = [box.itemText(k) for k in range(box.count())]
        ids = [int(t.split("  ▸ ")[0][3:]) for t in items]
        texts = answer_texts(w.state.loaded, ids)
        assert [t.split("  ▸ ")[1].rsplit("  ", 1)[0] for t in items] == [shown_token(t) for t in texts]
        assert [answer_texts(w.state.loaded, [i])[0] for i in ids] == texts     # alone as in a list
    assert p.answer_box.itemText(0).startswith("id:389  ▸ ␣well")
    p.answer_box.setCurrentIndex(1)
    assert p.inputs()[3] == p.answer_box.itemText(1).split("  ▸ ")[0]


def test_dla_colours_each_share_by_its_own_sign_and_says_the_total(window_on, qtbot):
    """Answers swapped, the clean logit difference is negative: the induction head, which
    pushes toward ' well' (now the other answer), is drawn blue, and a share toward the answer
    red; the colours are the shares on a scale symmetric over them; the total is said."""
    w = window_on(GPT)
    p = _panel(w, qtbot)
    answer, wrong = _spec(p.answer_box), _spec(p.wrong_box)
    p.answer_box.setEditText(wrong)
    p.wrong_box.setEditText(answer)
    result = _patch(p, qtbot, "heads", "dla")
    shares = np.concatenate([result.results["heads"], result.results["mlp"][:, None]], axis=1)
    assert result.clean < -1 and shares[3, 3] < 0 and shares.max() > 0
    np.testing.assert_array_equal(p.image.image, shares.astype(np.float32))
    lo, hi = p.image.getLevels()
    assert hi == -lo == pytest.approx(np.abs(shares).max(), rel=1e-6)
    assert f"{result.clean:+.3f}" in p.status.text() and f"{result.clean:+.3f}" in p.item.titleLabel.text


def test_dla_near_a_zero_total_keeps_the_shares_scale():
    """A clean difference of 0.004 scaled the shares to +-50 (each divided by the total)."""
    from attnscope.engine.experiments.patching import PatchResult
    from attnscope.gui.drawing.patching_drawing import drawing_of

    heads = np.array([[3.0, -2.0], [0.5, -1.496]])
    result = PatchResult({"clean": [1, 2]}, {"clean": ["a", "b"]}, (1, 2), "logit_diff", 0.004, 1.0, "dla",
                         results={"heads": heads, "mlp": np.zeros(2), "embed": np.float64(0.0),
                                  "bias": np.float64(0.0)})
    d = drawing_of(result, "heads")
    assert d.span == pytest.approx(3.0) and d.image[0, 0] == pytest.approx(3.0) and d.image[0, 1] < 0


def test_the_readout_follows_the_result_and_dla_says_no_correlation(window_on, qtbot):
    """Hovered without moving: a new result (another method) rewrites the readout, and
    "STALE" goes once the result is current again; DLA's status has no exact-vs-attribution r."""
    w = window_on(GPT)
    p = _panel(w, qtbot)
    _patch(p, qtbot, "heads", "exact")
    _patch(p, qtbot, "heads", "attribution")
    assert "Attribution against exact" in p.status.text()
    p._on_hover(p.item.vb.mapViewToScene(pg.Point(3.5, 3.5)))
    assert p.readout.text().startswith("L3, H3: estimated metric")
    _patch(p, qtbot, "heads", "dla")
    assert p.readout.text().startswith("L3, H3: share") and "Attribution against exact" not in p.status.text()
    p.clean_edit.setText(CLEAN + " well")
    assert p.readout.text().startswith("STALE")
    p.clean_edit.setText(CLEAN)
    assert p.readout.text().startswith("L3, H3: share")


def test_patching_runs_with_the_interventions_and_says_so(window_on, qtbot):
    """The induction head switched off: patching it brings nothing back, the status names the
    intervention, and switching it on again makes the result stale."""
    from attnscope.engine.interventions import HeadRef, Interventions

    w = window_on(GPT)
    p = _panel(w, qtbot)
    w.state.set_interventions(Interventions().ablate([HeadRef("decoder self", 3, 3)]))
    result = _patch(p, qtbot)
    assert result.results["heads"][3, 3] == pytest.approx(result.corrupt, abs=1e-5)
    assert "zero ablation: decoder self 3.3" in p.status.text() and not p.mark.isVisible()
    w.state.set_interventions(Interventions())
    assert p.mark.isVisible()


def test_an_input_error_is_said_once_in_the_panel(window_on, qtbot):
    """Texts of different lengths: the sentence in the panel's status line, and no dialog or
    status-bar copy (a modal that also swallowed Ctrl+Q)."""
    from attnscope.gui.worker import job_failures

    w = window_on(GPT)
    p = _panel(w, qtbot)
    announced = []
    job_failures().failed.connect(lambda *a: announced.append(a))
    p.corrupt_edit.setText("gri when speak")
    p.run()
    qtbot.waitUntil(lambda: not p.jobs.busy and "same number of tokens" in p.status.text(), timeout=30000)
    assert announced == [] and w.error_box is None and "same number" not in w.statusBar().currentMessage()


def test_the_metric_is_a_choice_kept_with_the_panels_options(window_on, qtbot):
    from attnscope.gui.views.patching import PatchingOptions

    w = window_on(GPT)
    p = _panel(w, qtbot)
    p.metric_box.setCurrentIndex(p.metric_box.findData("logprob"))
    result = _patch(p, qtbot, "heads", "exact")
    assert result.metric == "logprob" and result.clean < 0 and p.status.text().startswith("clean logprob")
    assert PatchingOptions.saved() == PatchingOptions("exact", "heads", "logprob", False)
    p.method_box.setCurrentIndex(p.method_box.findData("dla"))
    assert not p.metric_box.isEnabled() and p.options().metric == "logit_diff"


def test_the_colour_bar_has_room_for_its_labels(window_on, qtbot):
    """Presentation mode's labels on a scale of +-0.0123 ('-0.010'): the bar's axis is as wide
    as its widest label (pyqtgraph's fixed 45 px cut them at the window's edge)."""
    from dataclasses import replace

    w = window_on(GPT)
    p = _panel(w, qtbot)
    _patch(p, qtbot)
    w.set_presentation(True)
    p.drawing = replace(p.drawing, span=0.0123)
    p.draw()
    axis = p.bar.axis
    for _ in range(3):                 # the axis measures its labels as it paints them
        p.plot.grab()
        QCoreApplication.processEvents()
    assert axis.textWidth > 45 and axis.width() >= axis.textWidth + axis.style["tickTextOffset"][0]


def test_the_map_keeps_a_line_a_row_in_a_short_dock(window_on, qtbot):
    """Presentation mode at 1280x800 squeezed the map to ~35 px, its layer labels into one
    another: the map keeps about a line of the font a row, and the panel scrolls instead."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QApplication

    w = window_on(GPT)
    p = _panel(w, qtbot)
    _patch(p, qtbot)
    rows = len(p.drawing.rows)
    assert p.plot.minimumHeight() >= rows * QFontMetrics(QApplication.font()).height()
    assert p.plot.height() >= p.plot.minimumHeight()
