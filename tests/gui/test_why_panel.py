"""The Why panel (issue 48, the window's part) on the bundled GPT with a text repeated twice:
asked from a Head detail cell (its context menu, or Alt+click), it splits the score in the
model worker and draws the strongest sources as a heatmap centred at 0 (the rest summed as
"other (N)"), the marginals as bars, the score and the weight; a head's name opens that head
in Head detail; a Run of another text marks the split stale; a recording opened with no model
is told in one sentence that Why needs the model; Stop drops the job; an input error is said
in the panel.

``split_for`` stands in for the engine's split where a test is about the window (a table with
a known largest term): the engine's own numbers are checked in the engine's tests."""
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu

from attnscope.engine.experiments.patching import Progress
from attnscope.engine.experiments.why_result import ScoreSplit, Versus
from attnscope.engine.interventions import HeadRef
from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF
from attnscope.gui.drawing.why_drawing import DIFFERENCE, LOADINGS, THIS, VERSUS, head_of, why_drawing
from attnscope.engine.traces import reading

ROOT = Path(__file__).resolve().parents[2]
GPT = str(ROOT / "resources/checkpoints/gpt.safetensors")
REPEATED = "the cat sat on the mat . the cat sat on the mat ."


def split_for(loaded, kind, layer, head, query, key, versus) -> ScoreSplit:
    """A split of the bundled GPT's shape: every source before ``layer``, the largest term
    L0.mlp (query side) x L2.H1 (key side), and a versus key one before ``key``."""
    sources = ("embed", *(f"L{lay}.{part}" for lay in range(layer) for part in ("H0", "H1", "H2", "H3", "mlp")), "bias")
    rng = np.random.default_rng(query * 97 + key)
    terms = rng.normal(scale=0.2, size=(len(sources), len(sources)))
    terms[sources.index("L0.mlp"), sources.index("L2.H1")] = 3.0
    other = rng.normal(scale=0.2, size=terms.shape)
    tokens = tuple(f"t{i}" for i in range(max(query, key) + 2))
    ids = tuple(range(len(tokens)))
    return ScoreSplit(model=loaded.name, kind=kind, layer=layer, head=head, query=query, key=key, query_tokens=tokens,
                      key_tokens=tokens, query_ids=ids, key_ids=ids, score=float(terms.sum()), weight=0.6,
                      position_bias=0.0, query_sources=sources, key_sources=sources, terms=terms,
                      versus=Versus(key=max(0, key - 1) if versus == "runner-up" else versus, score=float(other.sum()),
                                    weight=0.1, terms=other),
                      notes=("a split for the window's tests",), exact_sum=float(terms.sum()))


@pytest.fixture
def fake_engine(monkeypatch):
    """``why_steps`` as the engine's contract says: Progress, then a ScoreSplit; the calls it got
    in ``calls``; ``hold`` (a threading.Event) set: the split waits for Stop."""
    import threading

    import attnscope.engine.experiments as experiments

    calls, hold = [], threading.Event()

    def why_steps(loaded, text, kind, layer, head, query, key, versus=None, loadings=False, pair=None, target=None,
                  interventions=None, stop=None):
        calls.append(dict(text=text, kind=kind, layer=layer, head=head, query=query, key=key, versus=versus,
                          interventions=interventions))
        yield Progress(0, 2, "one forward, capturing the sources at the two positions")
        while hold.is_set() and not (stop and stop()):
            threading.Event().wait(0.01)
        yield Progress(1, 2, "splitting")
        return split_for(loaded, kind, layer, head, query, key, versus)
    monkeypatch.setattr(experiments, "why_steps", why_steps, raising=False)
    why_steps.calls, why_steps.hold = calls, hold
    return why_steps


def _repeated(w, qtbot, drawn):
    """The repeated text Run, Head detail open on layer 3 head 3."""
    w.input_bar.text_edit.setText(REPEATED)
    w.run()
    qtbot.waitUntil(lambda: not w.run_jobs.busy and w.state.text == REPEATED and w.state.trace is not None,
                    timeout=30000)
    w.docks["Head detail"].show()
    w.docks["Head detail"].raise_()
    detail = w.dock_layout.view("Head detail")
    w.state.select(DECODER_SELF, 3, 3)
    qtbot.waitUntil(lambda: detail.drawing is not None and (detail.drawing.layer, detail.drawing.head) == (3, 3),
                    timeout=20000)
    drawn(detail)
    return detail


def _split(w, qtbot):
    p = w.views["Why"]
    qtbot.waitUntil(lambda: p.result is not None and not p.jobs.busy, timeout=60000)
    return p


def _label_pos(p, axis, index: int):
    """Where the label of row (left axis) or column (key axis) ``index`` of the map is, in the plots' viewport."""
    vb, rect = p.map.vb, axis.sceneBoundingRect()
    if axis is p.key_axis:
        x = vb.mapViewToScene(pg.Point(index + 0.5, 0)).x()
        scene = pg.Point(x, rect.bottom() - 10)
    else:
        y = vb.mapViewToScene(pg.Point(0, index + 0.5)).y()
        scene = pg.Point(rect.right() - 6, y)
    return p.plots.mapFromScene(scene)


def test_a_cell_menu_asks_why_and_the_split_is_drawn(window_on, qtbot, drawn, fake_engine):
    w = window_on(GPT)
    detail = _repeated(w, qtbot, drawn)
    menu = detail.cell_menu(9, 3)
    assert [a.text() for a in menu.actions()] == ["Why does query 9 attend to key 3?"]
    menu.actions()[0].trigger()
    assert w.docks["Why"].isVisible()
    p = _split(w, qtbot)
    call = fake_engine.calls[-1]
    assert (call["kind"], call["layer"], call["head"], call["query"], call["key"]) == (DECODER_SELF, 3, 3, 9, 3)
    assert call["text"] == REPEATED and call["versus"] == "runner-up"      # the row's runner-up by default
    t = p.shown()
    assert t.rows[0] == "L0.mlp" and t.cols[0] == "L2.H1" and t.rows[-1].startswith("other (")
    np.testing.assert_array_equal(p.image.image, t.table.astype(np.float32))
    assert abs(t.table.sum() - p.result.score) < 1e-9                     # the rest summed: the total kept
    lo, hi = p.image.getLevels()
    assert lo == -hi == -3.0                                               # centred at 0
    assert p.query_bars.opts["y"].tolist() == list(range(len(t.query_bars[0])))
    assert "weight <b>0.6000</b>" in p.summary.text() and "each norm's scale from this run" in p.summary.text()
    assert "versus key 2" in p.summary.text() and "runner-up" in p.summary.text()
    assert '<a href="L2.H1">L2.H1</a>' in p.links.text() and 'href="L0.mlp"' not in p.links.text()
    assert [p.table_box.itemText(i) for i in range(p.table_box.count())] == [THIS, VERSUS, DIFFERENCE]
    p.table_box.setCurrentText(DIFFERENCE)
    np.testing.assert_allclose(p.shown().total, p.result.score - p.result.versus.score)
    p._on_hover(p.map.vb.mapViewToScene(pg.Point(0.5, 0.5)))
    assert p.readout.text().startswith("query side ") and not p.mark.isVisible()

    assert p.versus_box.maximum() == 9                                     # a causal row's keys: up to itself
    p.versus_box.setValue(5)                                               # another key: asked anew
    qtbot.waitUntil(lambda: fake_engine.calls[-1]["versus"] == 5 and not p.jobs.busy, timeout=20000)
    assert p.result.versus.key == 5 and "(chosen)" in p.summary.text()


def test_alt_click_asks_and_a_head_name_opens_that_head(window_on, qtbot, drawn, fake_engine):
    w = window_on(GPT)
    detail = _repeated(w, qtbot, drawn)
    scene = detail.item.vb.mapViewToScene(pg.Point(3 + 0.5, 9 + 0.5))
    qtbot.mouseClick(detail.plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.AltModifier,
                     detail.plot.mapFromScene(scene))
    assert w.state.interventions.empty                                     # Alt+click knocks nothing out
    p = _split(w, qtbot)
    assert tuple(p.asked) == (DECODER_SELF, 3, 3, 9, 3)
    scene = detail.item.vb.mapViewToScene(pg.Point(3 + 0.5, 9 + 0.5))     # anew: the Why dock moved the layout
    qtbot.mouseClick(detail.plot.viewport(), Qt.MouseButton.RightButton, pos=detail.plot.mapFromScene(scene))
    menu = detail.findChild(QMenu)                                         # a right-click: the cell's menu
    qtbot.waitUntil(lambda: menu is not None and menu.isVisible(), timeout=5000)
    assert [a.text() for a in menu.actions()] == ["Why does query 9 attend to key 3?"]
    menu.close()
    qtbot.waitUntil(lambda: p.map.vb.width() > 50, timeout=10000)

    before = w.state.trace
    qtbot.mouseClick(p.plots.viewport(), Qt.MouseButton.LeftButton, pos=_label_pos(p, p.key_axis, 0))   # "L2.H1"
    assert (w.state.kind, w.state.layer, w.state.head) == (DECODER_SELF, 2, 1)
    assert w.docks["Head detail"].isVisible() and w.state.trace is before   # the same Run, another head
    qtbot.waitUntil(lambda: (detail.drawing.layer, detail.drawing.head) == (2, 1), timeout=20000)
    assert not p.open_source("L0.mlp") and not p.open_source("embed")      # not heads: no links
    assert (w.state.layer, w.state.head) == (2, 1)
    p.links.linkActivated.emit("L1.H3")
    assert (w.state.layer, w.state.head) == (1, 3)


def test_a_new_text_marks_the_split_stale_and_why_again_computes_it_anew(window_on, qtbot, drawn, fake_engine):
    w = window_on(GPT)
    detail = _repeated(w, qtbot, drawn)
    detail.ask_why(9, 3)
    p = _split(w, qtbot)
    assert not p.mark.isVisible()
    w.input_bar.text_edit.setText("a dog ran to the park")
    w.run()
    qtbot.waitUntil(lambda: not w.run_jobs.busy and w.state.text == "a dog ran to the park", timeout=30000)
    assert p.mark.isVisible() and p.image.opacity() < 1
    p._on_hover(p.map.vb.mapViewToScene(pg.Point(0.5, 0.5)))
    assert p.readout.text().startswith("STALE")
    p.run()
    qtbot.waitUntil(lambda: not p.jobs.busy and p.current(), timeout=30000)
    assert not p.mark.isVisible() and fake_engine.calls[-1]["text"] == "a dog ran to the park"
    w.activateWindow()
    p.versus_box.setFocus()
    qtbot.waitUntil(lambda: w.focused_view()[0] == "Why", timeout=5000)
    w.help_action.trigger()                                                # F1: the panel's own page
    assert w.help_dialog.pages.currentItem().text() == "Why" and "Alt+click" in w.help_dialog.text.toPlainText()

    fake_engine.hold.set()                                                 # Stop drops a split under way
    p.run()
    qtbot.waitUntil(lambda: len(fake_engine.calls) == 3, timeout=20000)
    shown = p.result
    p.stop()
    assert not p.jobs.busy and p.result is shown and p.status.text().startswith("Stopped")


def test_a_recording_without_its_model_is_told_why_needs_the_model(window_on, qtbot, drawn, tmp_path, fake_engine):
    from attnscope.engine.traces import save_recording
    from attnscope.gui.views.why_panel import NEEDS_MODEL

    w = window_on(GPT)
    _repeated(w, qtbot, drawn)
    path = save_recording(w.state.trace, tmp_path / "run")
    w.recordings.open(str(path))
    qtbot.waitUntil(lambda: w.state.recording is not None, timeout=20000)
    w.state.ask_why(DECODER_SELF, 3, 3, 9, 3)
    p = w.views["Why"]
    assert p.status.text() == NEEDS_MODEL and not p.jobs.busy and not fake_engine.calls
    assert NEEDS_MODEL.count(". ") == 0 and NEEDS_MODEL.endswith(".")     # one sentence


def test_an_input_error_is_said_in_the_panel(window_on, qtbot, drawn, monkeypatch):
    import attnscope.engine.experiments as experiments
    from attnscope.engine.inputs import InputError

    def why_steps(*_args, **_kwargs):
        raise InputError("Key 12 is hidden from query 3 by the causal mask: choose a key at or before the query.")
        yield
    monkeypatch.setattr(experiments, "why_steps", why_steps, raising=False)
    w = window_on(GPT)
    _repeated(w, qtbot, drawn)
    w.state.ask_why(DECODER_SELF, 3, 3, 3, 12)
    p = w.views["Why"]
    qtbot.waitUntil(lambda: not p.jobs.busy and "causal mask" in p.status.text(), timeout=20000)
    assert p.result is None and w.last_error is None                      # said once, in the panel


def test_the_induction_heads_largest_key_source_is_the_previous_token_head(window_on, qtbot, drawn):
    """The engine's own split, through the window: the second "c" attends to the "##at" after
    the first one (0.83); the key's largest source is L2.H1, whose name opens it."""
    w = window_on(GPT)
    detail = _repeated(w, qtbot, drawn)
    detail.cell_menu(12, 2).actions()[0].trigger()
    p = _split(w, qtbot)
    s, t = p.result, p.shown()
    assert s.key_sources[int(np.argmax(s.key_marginal))] == "L2.H1" == t.key_bars[0][0]
    assert abs(s.weight - reading.head(w.state.trace, DECODER_SELF, 3, 3)[12, 2]) < 1e-5      # the weight drawn
    assert abs(t.total - s.score) < 1e-3 * max(1.0, abs(s.score))
    assert s.versus is not None and s.versus.key != 2 and "runner-up" in p.summary.text()
    qtbot.waitUntil(lambda: p.map.vb.width() > 50, timeout=10000)
    label = _label_pos(p, p.key_axis, t.cols.index("L2.H1"))
    qtbot.mouseClick(p.plots.viewport(), Qt.MouseButton.LeftButton, pos=label)
    assert (w.state.kind, w.state.layer, w.state.head) == (DECODER_SELF, 2, 1)


def test_head_loadings_are_shown_when_ticked(window_on, qtbot, drawn):
    """Ticked: the split again with the head's loadings over the text, shown at once; exact on a short text."""
    w = window_on(GPT)
    _repeated(w, qtbot, drawn)
    w.state.ask_why(DECODER_SELF, 3, 3, 12, 2)
    p = _split(w, qtbot)
    first = p.result
    p.loadings_box.setChecked(True)
    qtbot.waitUntil(lambda: p.result is not first and not p.jobs.busy, timeout=60000)
    ld = p.result.loadings
    assert ld is not None and ld.exact and p.table_box.currentText() == LOADINGS
    np.testing.assert_allclose(p.shown().total, ld.terms.sum())
    assert "every cell of the head" in p.summary.text() and "100% of those rows' weight" in p.summary.text()
    p.loadings_box.setChecked(False)                                       # kept with the panel's options
    assert not p.jobs.busy


def test_a_cross_heads_sources_open_the_heads_of_their_own_kind(window_on, qtbot):
    w = window_on(str(ROOT / "resources/checkpoints/translator.safetensors"))
    w.state.ask_why(CROSS, 1, 2, 2, 3)
    p = _split(w, qtbot)
    assert p.result.key_sources[0].startswith("enc.") and "L0.X1" in p.result.query_sources
    for name, head in (("enc.L0.H1", (ENCODER_SELF, 0, 1)), ("L0.X3", (CROSS, 0, 3)), ("L1.H2", (DECODER_SELF, 1, 2))):
        assert p.open_source(name)
        assert (w.state.kind, w.state.layer, w.state.head) == head
    assert not p.open_source("enc.L1.mlp")


def test_merged_word_pieces_are_told_why_splits_a_piece(qtbot):
    from types import SimpleNamespace

    from attnscope.gui.state import AppState
    from attnscope.gui.views.why_panel import MERGED, WhyPanel

    state = AppState()
    p = WhyPanel(state)
    qtbot.addWidget(p)
    state.loaded = SimpleNamespace(model=object())
    state.trace = SimpleNamespace(kinds=(ENCODER_SELF,), recording=SimpleNamespace(groups={"source": [0, 0, 1]}),
                                  source_tokens=["a", "b"], target_tokens=[])
    p.ask(ENCODER_SELF, 0, 0, 1, 0)
    assert p.status.text() == MERGED and not p.jobs.busy and p.result is None


def test_a_position_bias_and_a_softcap_are_said(qtbot):
    """T5's bias is added apart from the table, Gemma 2's cap comes after the score: both said."""
    from dataclasses import replace
    from types import SimpleNamespace

    from attnscope.gui.state import AppState
    from attnscope.gui.views.why_panel import WhyPanel

    state = AppState()
    p = WhyPanel(state)
    qtbot.addWidget(p)
    p.show()
    split = replace(split_for(SimpleNamespace(name="m"), DECODER_SELF, 3, 0, 4, 2, "runner-up"), position_bias=0.5,
                    softcap=50.0)
    p._done((split, why_drawing(split)), p.inputs(), "runner-up")
    text = p.summary.text()
    assert "position bias +0.500, added to the score apart from the table" in text
    assert "soft-capped at 50 after the score: the table splits the score before the cap" in text
    assert p.current() and not p.mark.isVisible()
    state.set_interventions(state.interventions.toggle(HeadRef(DECODER_SELF, 0, 1)))   # another model state: stale
    assert p.mark.isVisible()


def test_source_names_that_are_heads():
    assert head_of("L2.H1", DECODER_SELF) == (DECODER_SELF, 2, 1)
    assert head_of("L1.X0", CROSS) == (CROSS, 1, 0)
    assert head_of("enc.L0.H2", CROSS) == (ENCODER_SELF, 0, 2)
    assert head_of("L0.H2", CROSS) == (DECODER_SELF, 0, 2)                # a cross split's query side: the decoder
    assert head_of("L3.H0", ENCODER_SELF) == (ENCODER_SELF, 3, 0)
    for name in ("embed", "pos", "type", "bias", "L0.mlp", "enc.L1.mlp", "other (7)", "enc.embed"):
        assert head_of(name, DECODER_SELF) is None


def test_the_drawing_keeps_every_sum():
    from types import SimpleNamespace

    split = split_for(SimpleNamespace(name="m"), DECODER_SELF, 3, 3, 9, 3, "runner-up")
    d = why_drawing(split)
    tables = ((THIS, split.terms), (VERSUS, split.versus.terms), (DIFFERENCE, split.terms - split.versus.terms))
    for name, terms in tables:
        t = d.tables[name]
        np.testing.assert_allclose([t.table.sum(), t.query_bars[1].sum(), t.key_bars[1].sum()], terms.sum())
        assert t.span == np.abs(t.table).max()
    assert d.tables[THIS].top_terms[0] == ("L0.mlp", "L2.H1", 3.0)


def test_in_sequence_another_model_and_a_theme_with_the_panel_open(window_on, qtbot, drawn):
    """As a user goes: a split on the GPT, then the translator opened (the split shown is
    stale, never the new model's), a cross head split on it, and the theme switched with the
    panel open: the table is still the split's, drawn again."""
    w = window_on(GPT)
    _repeated(w, qtbot, drawn)
    w.state.ask_why(DECODER_SELF, 3, 3, 12, 2)
    p = _split(w, qtbot)
    gpt_split = p.result
    old = w.state.loaded
    w.opening.open_source(str(ROOT / "resources/checkpoints/translator.safetensors"))
    qtbot.waitUntil(lambda: w.state.loaded is not old and w.state.loaded is not None and not w.model_jobs.busy,
                    timeout=60000)
    qtbot.waitUntil(lambda: p.mark.isVisible(), timeout=10000)
    assert p.result is gpt_split and not p.current()
    w.state.ask_why(CROSS, 1, 2, 2, 1)
    qtbot.waitUntil(lambda: p.result is not gpt_split and not p.jobs.busy and p.current(), timeout=60000)
    assert p.result.model == w.state.loaded.name and p.result.kind == CROSS
    assert abs(p.result.exact_sum - p.result.score) < 1e-4 and not p.mark.isVisible()
    shown = p.shown()
    w.dark_action.trigger()
    w.dark_action.trigger()
    assert p.shown() is shown and p.image.image is not None and not p.mark.isVisible()


def test_every_row_and_bar_is_named_in_the_default_layout(window_on, qtbot, drawn):
    """In the default layout (1600x1000) every other row of the split was unlabelled, the
    loadings' strongest included, and each bar chart named 2 of its ~11 bars: the bars stand
    beside the map at its full height and short rows get a smaller font, so every row is named.
    The notes say what each number counts ("1 sources" read wrong)."""
    w = window_on(GPT)
    w.resize(1600, 1000)
    w.dock_layout.reset()
    _repeated(w, qtbot, drawn)
    w.state.ask_why(DECODER_SELF, 3, 3, 12, 2)
    p = _split(w, qtbot)
    qtbot.waitUntil(lambda: p.map.vb.height() > 50, timeout=10000)
    p._fit_row_labels()
    t = p.shown()
    for plot, names in ((p.map, t.rows), (p.query_plot, t.query_bars[0]), (p.key_plot, t.key_bars[0])):
        assert len(plot.getAxis("left")._tickLevels[0]) == len(names) >= 10
    notes = " ".join(p.result.notes)
    q, k = len(p.result.query_sources), len(p.result.key_sources)
    assert f"{q} x {k} terms" in notes and "sources in the residual stream and a constant part" in notes
    assert f"its {q} x {k} terms, a source or the constants a side" in p.summary.text()
