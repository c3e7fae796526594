"""Head lines, head statistics and rollout views draw the trace's numbers."""
import numpy as np
from PySide6.QtCore import Qt
import pytest

from attnscope.engine.inspection.analysis import rollout, trace_head_statistics
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.tracing import trace_text
from attnscope.gui.state import AppState
from attnscope.gui.views.head_lines import HeadLines, segments
from attnscope.gui.views.head_stats import HeadStats
from attnscope.gui.views.rollout import RolloutView
from attnscope.engine.traces import reading


@pytest.fixture
def state():
    s = AppState()
    s.set_model(random_model("bert", seed=1))
    s.set_trace(trace_text(s.loaded, "the big dog sees the small cat .", pair="the woman gives the man a book ."))
    return s


def test_head_lines_draw_one_segment_per_weight_above_threshold(state, qtbot, drawn):
    view = HeadLines(state)
    qtbot.addWidget(view)
    w = reading.weights(state.trace, "encoder self")
    view.threshold.setValue(0.05)
    view.set_heads([0, 2])
    drawn(view)
    assert view.drawn == {0: int((w[0, 0] >= 0.05).sum()), 2: int((w[0, 2] >= 0.05).sum())}
    view.threshold.setValue(0.0)
    drawn(view)
    assert view.drawn[0] == w[0, 0].size


def test_hovering_a_token_keeps_only_its_lines(state, qtbot, drawn):
    view = HeadLines(state)
    qtbot.addWidget(view)
    view.threshold.setValue(0.0)
    view.focus = ("query", 3)
    view.redraw()
    drawn(view)
    assert view.drawn[0] == state.trace.shape("encoder self")[-1]   # one line to every key


def test_pair_filter_and_hidden_specials(state, qtbot, drawn):
    view = HeadLines(state)
    qtbot.addWidget(view)
    view.show()
    view.threshold.setValue(0.0)
    tokens = state.trace.source_tokens
    sep = tokens.index("[SEP]")
    assert view.pair_filter.isVisible()
    view.pair_filter.setCurrentText("A -> B")
    drawn(view)
    assert view.drawn[0] == (sep + 1) * (len(tokens) - sep - 1)
    view.pair_filter.setCurrentText("all")
    view.hide_special.setChecked(True)
    drawn(view)
    n_plain = sum(t not in ("[CLS]", "[SEP]") for t in tokens)
    assert view.drawn[0] == n_plain * n_plain


def test_segments_bucket_opacity():
    w = np.array([[[[0.9, 0.1], [0.5, 0.5]]]])
    out = segments(w, 0, [0], np.ones(2), np.ones(2), 0.0, False)[0]
    assert sorted(alpha for _, _, alpha in out) == [0.125, 0.5, 1.0]


def test_stats_table_sorts_and_opens_heads(state, qtbot, drawn):
    view = HeadStats(state)
    qtbot.addWidget(view)
    drawn(view)
    stats = trace_head_statistics(state.trace, "encoder self")
    L, H = stats["entropy"].shape
    assert view.table.rowCount() == L * H
    view.table.sortItems(2)  # entropy, ascending
    l, h = view.row_head(0)
    assert stats["entropy"][l, h] == pytest.approx(stats["entropy"].min(), abs=1e-3)
    with qtbot.waitSignal(state.head_selected) as sig:
        view._open_row(0, 2)
    assert sig.args == ["encoder self", l, h]




def test_a_sorted_table_refilled_by_a_new_text_keeps_each_heads_cells_in_its_row(state, qtbot, drawn):
    """The table keeps its cells from one Run to the next and writes the new numbers into them:
    sorted by a column before, every row still reads one head's own numbers after, in the new
    order, and none of the old text's."""
    view = HeadStats(state)
    qtbot.addWidget(view)
    drawn(view)
    view.table.sortItems(3, Qt.SortOrder.DescendingOrder)      # distance, largest first
    state.set_trace(trace_text(state.loaded, "a red bird flew over the quiet lake at dawn", pair="it sang ."))
    drawn(view)
    stats = {**view.stats, **trace_head_statistics(state.trace, "encoder self")}   # the new text's, and the model's scores
    columns = [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())]
    shown = []
    for row in range(view.table.rowCount()):
        l, h = view.row_head(row)
        shown.append((l, h))
        for c, name in enumerate(columns[2:], start=2):
            item = view.table.item(row, c)
            if not np.isnan(stats[name][l, h]):
                assert item.value == pytest.approx(float(stats[name][l, h])), (row, name)
    assert sorted(shown) == [(l, h) for l in range(stats["entropy"].shape[0]) for h in range(stats["entropy"].shape[1])]
    distances = [view.table.item(row, 3).value for row in range(view.table.rowCount())]
    assert distances == sorted(distances, reverse=True)
def test_rollout_view_shows_the_engine_rollout(state, qtbot, drawn):
    view = RolloutView(state)
    qtbot.addWidget(view)
    state.select(layer=1)
    drawn(view)
    expected = rollout(reading.weights(state.trace, "encoder self"))[-1]
    np.testing.assert_allclose(view.image.image, expected, atol=1e-6)
    view.mode.setCurrentText("max of heads")
    drawn(view)
    np.testing.assert_allclose(view.image.image, reading.weights(state.trace, "encoder self")[-1].max(0), atol=1e-6)


def test_head_detail_display_options(qtbot, drawn):
    from attnscope.gui.views.head_detail import HeadDetail
    state = AppState()
    state.set_model(random_model("translator", seed=2))
    state.set_trace(trace_text(state.loaded, "the big dog sees the cat .", target="der große hund"))
    view = HeadDetail(state)
    qtbot.addWidget(view)
    state.select_head("cross", 1, 2)
    drawn(view)
    head = reading.head(state.trace, "cross", 1, 2)
    np.testing.assert_array_equal(view.image.image, head)
    view.threshold.setValue(0.2)
    drawn(view)
    np.testing.assert_array_equal(view.image.image, np.where(head < 0.2, 0, head))
    view.threshold.setValue(0.0)
    view.normalise.setChecked(True)
    drawn(view)
    assert view.image.image.max() == pytest.approx(1.0)
    view.hide_special.setChecked(True)
    drawn(view)
    src, tgt = state.trace.source_tokens, state.trace.target_tokens
    assert "[EOS]" in src and "[BOS]" in tgt
    assert view.image.image.shape == (len(tgt) - 1, len(src) - 1)
    np.testing.assert_array_equal(view.matrix, head[1:, :-1])   # readout keeps the true weights


def test_grid_threshold_hides_weak_cells_but_hover_reads_true_weights(state, qtbot, drawn):
    from attnscope.gui.views.head_grid import HeadGrid
    grid = HeadGrid(state)
    qtbot.addWidget(grid)
    grid.threshold.setValue(0.3)
    drawn(grid)
    head = reading.head(state.trace, grid.kind, 1, 2)
    y, x = grid.layout_.tile_origin(1, 2)
    tq, tk = head.shape
    drawn = grid.mosaic[y:y + tq, x:x + tk]
    assert ((drawn == 1) == (head < 0.3)).all()   # code 1 is weight 0
    grid._on_hover(grid.scene_pos_of(1, 2, 0, 0))
    assert f"{head[0, 0]:.4f}" in grid.last_tooltip


def test_grid_labels_name_every_layer_and_head_at_its_tiles_across_texts_and_models(state, qtbot, drawn):
    """The labels follow the layout: a longer text moves them, another model's shape changes
    which there are (the items are kept between layouts, so none may be left behind)."""
    from attnscope.gui.views.head_grid import HeadGrid

    grid = HeadGrid(state)
    qtbot.addWidget(grid)

    def labels():
        return {item.toPlainText(): (item.pos().x(), item.pos().y()) for item in grid.labels}

    def expected():
        lay = grid.layout_
        want = {f"L{r}": (-1, lay.tile_origin(r, 0)[0] + lay.tile_h / 2) for r in range(lay.rows)}
        return want | {f"H{c}": (lay.tile_origin(0, c)[1] + lay.tile_w / 2, -1) for c in range(lay.cols)}

    drawn(grid)
    first = labels()
    assert first == expected() and len(first) == 2 + 4
    state.set_trace(trace_text(state.loaded, "the big dog sees the small cat . " * 6))
    drawn(grid)
    assert labels() == expected() and labels() != first
    state.set_model(random_model("bert", seed=2, layers=3, heads=2))
    state.set_trace(trace_text(state.loaded, "the big dog"))
    drawn(grid)
    assert labels() == expected() and set(labels()) == {"L0", "L1", "L2", "H0", "H1"}
    on_scene = [item for item in grid.view.addedItems if isinstance(item, type(grid.labels[0]))]
    assert len(on_scene) == 5


def test_stats_run_the_models_forward_on_the_model_thread_once(qtbot, drawn, monkeypatch):
    """The induction / previous-token columns need a forward: on the model thread (no second
    thread runs torch), and once per model however many Runs redraw the table."""
    import threading

    import attnscope.engine.inspection.analysis as analysis
    from attnscope.gui.worker import MODEL, call_on_lane

    threads = []
    real = analysis._mechanism_forward
    monkeypatch.setattr(analysis, "_mechanism_forward", lambda lm: threads.append(threading.get_ident()) or real(lm))
    s = AppState()
    s.set_model(random_model("gpt", seed=3))
    s.set_trace(trace_text(s.loaded, "the big dog"))
    view = HeadStats(s)
    qtbot.addWidget(view)
    drawn(view)
    assert not np.isnan(view.stats["induction (repeat)"]).any()
    s.set_trace(trace_text(s.loaded, "the small cat sees the dog"))
    drawn(view)
    assert threads == [call_on_lane(MODEL, threading.get_ident)]


def test_rollout_opens_on_a_self_kind_when_the_selection_is_cross(qtbot, drawn):
    """Rollout cannot follow cross attention: it opens on the first self kind and lists only
    self kinds; the max of heads still follows cross."""
    state = AppState()
    state.set_model(random_model("translator", seed=2))
    state.set_trace(trace_text(state.loaded, "the big dog sees the cat .", target="der große hund"))
    state.select(kind="cross", layer=0)
    view = RolloutView(state)
    qtbot.addWidget(view)
    drawn(view)
    assert view.kind_box.currentText() == "encoder self"
    assert "cross" not in [view.kind_box.itemText(i) for i in range(view.kind_box.count())]
    np.testing.assert_allclose(view.image.image, rollout(reading.weights(state.trace, "encoder self"))[-1], atol=1e-6)
    view.mode.setCurrentText("max of heads")
    drawn(view)
    assert view.kind_box.currentText() == "cross"
    np.testing.assert_allclose(view.image.image, reading.weights(state.trace, "cross")[-1].max(0), atol=1e-6)


def test_rollout_opens_through_all_layers_and_follows_a_layer_chosen(qtbot, drawn):
    """Rollout opened at "after layer 0" (the selection's layer at start): one layer's mean of
    heads, not a rollout. It opens through all layers; a layer chosen there or elsewhere is
    followed and kept through a new text; another model opens through all its layers again."""
    state = AppState()
    state.set_model(random_model("gpt", seed=1))
    state.set_trace(trace_text(state.loaded, "the big dog sees the small cat ."))
    n_layers = state.trace.shape("decoder self")[0]
    assert n_layers >= 2 and state.layer == 0
    view = RolloutView(state)
    qtbot.addWidget(view)
    drawn(view)
    assert view.layer.value() == n_layers - 1
    np.testing.assert_allclose(view.image.image, rollout(reading.weights(state.trace, "decoder self"))[-1], atol=1e-6)
    state.select(head=1)                        # another head of the selection's layer: still all layers
    drawn(view)
    assert view.layer.value() == n_layers - 1 and state.layer == 0
    view.layer.setValue(0)                      # chosen here: shown, and selected for every view
    drawn(view)
    np.testing.assert_allclose(view.image.image, rollout(reading.weights(state.trace, "decoder self"))[0], atol=1e-6)
    state.select(layer=n_layers - 1)            # chosen elsewhere (a head clicked in the overview)
    drawn(view)
    assert view.layer.value() == n_layers - 1
    state.select(layer=0)
    state.set_trace(trace_text(state.loaded, "a cat sleeps ."))    # a new text keeps the layer chosen
    drawn(view)
    assert view.layer.value() == 0
    np.testing.assert_allclose(view.image.image, rollout(reading.weights(state.trace, "decoder self"))[0], atol=1e-6)
    state.set_model(random_model("gpt", seed=2))
    state.set_trace(trace_text(state.loaded, "a cat sleeps ."))
    drawn(view)
    assert view.layer.value() == n_layers - 1 and state.layer == 0


def test_a_view_does_not_paint_its_old_picture_while_its_new_one_is_prepared(state, qtbot, drawn):
    """The first long Run after a short one resized every view, and each painted its old
    picture at the new size before its new drawing came: paints the window waited for."""
    view = RolloutView(state)
    qtbot.addWidget(view)
    view.show()
    drawn(view)
    assert view.updatesEnabled()
    state.set_trace(trace_text(state.loaded, "the big dog sees the small cat near the old house ."))
    assert not view.updatesEnabled()      # held until the drawing is applied (at most HOLD_MS)
    drawn(view)
    qtbot.waitUntil(view.updatesEnabled, timeout=5000)


def test_cross_attention_has_no_self_or_previous_scores_even_when_the_lengths_match(qtbot, drawn):
    """Issue 40: with a source and target of the same length, cross-attention's query i and key
    i are tokens of two texts: "self" and "previous" mean nothing there and read "–"."""
    s = AppState()
    s.set_model(random_model("translator", seed=1))
    s.set_trace(trace_text(s.loaded, "the big dog", target="der große hund"))   # 4 source and 4 target tokens
    assert s.trace.shape("cross")[2] == s.trace.shape("cross")[3]
    stats = trace_head_statistics(s.trace, "cross")
    assert np.isnan(stats["self"]).all() and np.isnan(stats["previous"]).all()
    assert np.isfinite(stats["entropy"]).all()
    from attnscope.engine.inspection.statistics import head_means
    from attnscope.engine.traces import reading
    square_self = head_means(lambda i: reading.row_blocks(s.trace, "cross", i), s.trace.shape("cross"), True,
                             reading.key_tokens(s.trace, "cross"))
    assert np.isfinite(square_self["self"]).all()       # the same square map read as self-attention has them
    s.select(kind="cross")
    view = HeadStats(s)
    qtbot.addWidget(view)
    drawn(view)
    columns = [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())]
    for name in ("self", "previous"):
        c = columns.index(name)
        assert {view.table.item(r, c).text() for r in range(view.table.rowCount())} == {"–"}
