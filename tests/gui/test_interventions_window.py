"""The window with interventions (issue 33): a Shift-click on a tile switches a head off,
the tile is marked, every view re-runs with the change, the translation on the output line
and in the Decoding panel changes, and each step shows its probabilities before/after; a
knockout from the panel zeroes its cell in Head detail; the Lens view fills its table."""
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt

from attnscope.engine.interventions import HeadRef
from attnscope.engine.kinds import CROSS, DECODER_SELF
from attnscope.engine.traces import reading

ROOT = Path(__file__).resolve().parents[2]
TRANSLATOR = str(ROOT / "resources/checkpoints/translator.safetensors")
GPT = str(ROOT / "resources/checkpoints/gpt.safetensors")
CHANGED = "The woman helps the man who cannot work."   # one of the ten texts the head changes (test_interventions)
STRONGEST = HeadRef(CROSS, 1, 1)                        # test_interventions.strongest_cross_head on the bundled translator


def _open(window, title):
    window.docks[title].show()
    return window.dock_layout.view(title)


def _run(w, qtbot, text):
    w.input_bar.text_edit.setText(text)
    w.run()
    qtbot.waitUntil(lambda: not w.run_jobs.busy and not w.output_jobs.busy and bool(w.state.output), timeout=30000)


def test_shift_click_ablates_a_head_and_the_translation_changes_everywhere(window_on, qtbot, drawn):
    w = window_on(TRANSLATOR)
    _run(w, qtbot, CHANGED)
    before = w.state.output
    w.state.select(kind=CROSS)
    drawn(w.grid)
    grid = w.grid
    qtbot.waitUntil(lambda: grid.drawing is not None and grid.drawing.kind == CROSS, timeout=20000)
    old_trace = w.state.trace
    pos = grid.plot.mapFromScene(grid.scene_pos_of(STRONGEST.layer, STRONGEST.head, 0, 0))
    qtbot.mouseClick(grid.plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, pos)
    assert w.state.interventions.mode(STRONGEST) == "zero"
    qtbot.waitUntil(lambda: w.state.trace is not old_trace and not w.run_jobs.busy, timeout=30000)
    qtbot.waitUntil(lambda: bool(w.state.output) and w.state.output != before, timeout=30000)
    drawn(grid)
    assert (STRONGEST.layer, STRONGEST.head) in grid.marks.tiles and not grid.marks.item.path().isEmpty()
    assert "den nicht" in w.output_row.label.text() and "der nicht" in before
    panel = _open(w, "Decoding")
    panel.step()
    qtbot.waitUntil(lambda: bool(panel.history), timeout=30000)
    assert panel.diff.isVisible() and "KL" in panel.diff.text()
    while not panel.ended:
        n = len(panel.history)
        panel.step()
        qtbot.waitUntil(lambda: len(panel.history) > n or panel.ended, timeout=30000)
    assert "den" in [s.token for s in panel.history] and "(plain choice)" in " ".join(
        __import__("attnscope.gui.views.decoding", fromlist=["diff_text"]).diff_text(s) for s in panel.history)
    effect = _open(w, "Interventions")
    effect._on_trace(w.state.trace)
    qtbot.waitUntil(lambda: "KL" in effect.effect.text(), timeout=30000)
    # Shift-click again: the head is back, and so is the translation
    old_trace = w.state.trace
    qtbot.mouseClick(grid.plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, pos)
    assert w.state.interventions.empty
    qtbot.waitUntil(lambda: w.state.trace is not old_trace and w.state.output == before, timeout=30000)


def test_knockout_from_the_panel_zeroes_its_cell_and_the_lens_fills(window_on, qtbot, drawn):
    w = window_on(GPT)
    _run(w, qtbot, "To be, or not to be, that is")
    w.state.select(kind=DECODER_SELF, layer=2, head=1)
    panel = _open(w, "Interventions")
    lens = _open(w, "Lens")
    qtbot.waitUntil(lambda: lens.lens is not None, timeout=30000)
    assert lens.table.rowCount() == 4 and lens.table.columnCount() == len(w.state.trace.target_tokens)
    base = reading.head(w.state.trace, DECODER_SELF, 2, 1)
    panel.query_box.setCurrentIndex(panel.query_box.findData(5))
    panel.key_box.setCurrentIndex(panel.key_box.findData(4))
    panel.layers_box.setCurrentIndex(panel.layers_box.findData(2))
    old = w.state.trace
    panel.block_button.click()
    qtbot.waitUntil(lambda: w.state.trace is not old and not w.run_jobs.busy, timeout=30000)
    after = reading.head(w.state.trace, DECODER_SELF, 2, 1)
    assert base[5, 4] > 0 and after[5, 4] == 0 and abs(after[5].sum() - 1) < 1e-5
    assert np.array_equal(base[:5], after[:5])
    qtbot.waitUntil(lambda: "KL" in panel.effect.text(), timeout=30000)
    assert "knockout: decoder self 5->4 @ 2" in [panel.active.item(i).text() for i in range(panel.active.count())]


def test_value_weighted_box_redraws_every_view_from_the_value_weighted_trace(window_on, qtbot):
    from attnscope.engine.traces.value_weighted import ValueWeightedTrace

    w = window_on(GPT)
    _run(w, qtbot, "To be, or not to be, that is")
    panel = _open(w, "Interventions")
    plain = w.state.trace
    panel.value_box.setChecked(True)
    qtbot.waitUntil(lambda: isinstance(w.state.trace, ValueWeightedTrace) and not w.run_jobs.busy, timeout=30000)
    vw = reading.head(w.state.trace, DECODER_SELF, 1, 0)
    assert abs(vw.sum(-1) - 1).max() < 1e-5 and abs(vw - reading.head(plain, DECODER_SELF, 1, 0)).max() > 1e-3
    panel.value_box.setChecked(False)
    qtbot.waitUntil(lambda: not isinstance(w.state.trace, ValueWeightedTrace) and not w.run_jobs.busy, timeout=30000)


def test_clicks_in_head_detail_knock_out_a_cell_a_column_and_a_row(window_on, qtbot, drawn):
    import pyqtgraph as pg

    from attnscope.engine.interventions import Edge

    w = window_on(GPT)
    _run(w, qtbot, "To be, or not to be, that is")
    detail = _open(w, "Head detail")
    w.state.select(kind=DECODER_SELF, layer=2, head=1)
    qtbot.waitUntil(lambda: detail.drawing is not None and detail.drawing.layer == 2, timeout=20000)
    drawn(detail)

    def click(q, k, modifier):
        scene = detail.item.vb.mapViewToScene(pg.Point(k + 0.5, q + 0.5))
        qtbot.mouseClick(detail.plot.viewport(), Qt.MouseButton.LeftButton, modifier, detail.plot.mapFromScene(scene))

    click(5, 4, Qt.KeyboardModifier.ShiftModifier)
    assert w.state.interventions.knockout == (Edge(DECODER_SELF, (5,), (4,), (2,)),)
    click(6, 1, Qt.KeyboardModifier.ControlModifier)
    click(7, 0, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert w.state.interventions.knockout[1:] == (Edge(DECODER_SELF, None, (1,), (2,)), Edge(DECODER_SELF, (7,), None, (2,)))
    qtbot.waitUntil(lambda: not w.run_jobs.busy and reading.head(w.state.trace, DECODER_SELF, 2, 1)[6, 1] == 0, timeout=30000)
    after = reading.head(w.state.trace, DECODER_SELF, 2, 1)
    assert after[5, 4] == 0 and (after[:, 1] == 0).all() and (after[7] == 0).all()
    click(3, 2, Qt.KeyboardModifier.NoModifier)          # a plain click changes nothing
    assert len(w.state.interventions.knockout) == 3


def test_a_click_on_a_merged_word_knocks_out_every_piece_of_it():
    from types import SimpleNamespace

    from attnscope.gui.drawing.intervention_clicks import positions

    merged = SimpleNamespace(recording=SimpleNamespace(groups={"source": [0, 1, 1, 2], "target": [0, 0, 1]}))
    assert positions(merged, CROSS, "key", 1) == (1, 2)          # cross keys are source pieces
    assert positions(merged, CROSS, "query", 0) == (0, 1)        # cross queries are target pieces
    assert positions(SimpleNamespace(recording=None), DECODER_SELF, "query", 4) == (4,)


def test_the_panel_says_where_a_translation_first_changes_and_a_query_left_no_key(window_on, qtbot):
    """Issue 40: the translator's change is read where its output first changes (it read +0.0 %,
    KL 0 after the whole translation), and a knockout that leaves a query no key says so."""
    from attnscope.engine.interventions import Edge

    w = window_on(TRANSLATOR)
    _run(w, qtbot, CHANGED)
    panel = _open(w, "Interventions")
    w.state.set_interventions(w.state.interventions.ablate([STRONGEST]))
    qtbot.waitUntil(lambda: "KL" in panel.effect.text() and not w.run_jobs.busy, timeout=30000)
    assert "where the output first changes" in panel.effect.text() and "+0.0%" not in panel.effect.text()
    w.state.set_interventions(w.state.interventions.restore([STRONGEST]).block(Edge(DECODER_SELF, (0,), (0,), (0,))))
    qtbot.waitUntil(lambda: "no key to attend to" in panel.effect.text(), timeout=30000)
