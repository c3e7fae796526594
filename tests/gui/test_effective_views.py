"""Every view draws a linear layer's effective attention (issue 57, item 4) without crashing:
cells that may be negative, rows that need not sum to 1 (engine.seam.linear_mixing)."""
import numpy as np
import pytest
from PySide6.QtCore import QPointF

from attnscope.engine.kinds import EFFECTIVE
from tests.helpers.views import drawing_views


@pytest.fixture(scope="module")
def effective_folder(tmp_path_factory) -> str:
    """A tiny Qwen3.5 text model (a hybrid: linear-attention layers) saved as a Hugging Face folder."""
    from tools.family_sweep import build

    return str(build(tmp_path_factory.mktemp("qwen35"), "qwen3_5_text", "decoder"))


@pytest.fixture(scope="module")
def effective_model(effective_folder):
    from attnscope.engine.loading.catalog import open_model

    return open_model(effective_folder, "cpu")


def test_every_view_draws_effective_attention(effective_model, qtbot, drawn):
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.gui.state import AppState
    from tools.family_sweep import TEXT

    state = AppState()
    state.set_model(effective_model)
    state.set_trace(trace_text(effective_model, TEXT))
    views = drawing_views(qtbot, state)
    drawn(*views)
    state.select_head(EFFECTIVE, 0, 1)
    drawn(*views)
    for view in views:
        kind_box = getattr(view, "kind_box", None)
        if kind_box is not None:
            kind_box.setCurrentText(EFFECTIVE)
    drawn(*views)
    by_name = {type(v).__name__: v for v in views}
    assert {"HeadGrid", "HeadDetail", "HeadStats"} <= set(by_name)
    detail = by_name["HeadDetail"]
    assert detail.drawing is not None and detail.drawing.kind == EFFECTIVE
    stats = by_name["HeadStats"]
    assert stats.drawing.kind == EFFECTIVE
    assert {"entropy", "distance", "learned_sink"} <= set(stats.drawing.hidden)   # they read a distribution


# ---- the signed scale (issue 57's effective attention drawn as it is) -------------------------------------------
# A linear layer's mixing M is signed and unbounded: the tiny Qwen3.5 text model's layer 0 reads
# -0.120 .. 0.123 (39% of its causal cells negative), the tiny Bamba's reaches 1.0001. On the 0..1
# scale of weights the negative cells were drawn as 0 and the rest near the map's bottom colour.

def _rgb(widget) -> np.ndarray:
    """``widget`` grabbed as (h, w, 3) uint8."""
    from PySide6.QtGui import QImage

    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, :image.width() * 3].reshape(image.height(), image.width(), 3).copy()


def _painted_at(widget, item, x: float, y: float) -> np.ndarray:
    """The colour painted where ``item``'s point (x, y) lands in ``widget``."""
    from PySide6.QtCore import QPointF

    from attnscope.gui.drawing.settling import settle

    settle(widget)
    at = widget.mapFromScene(item.mapToScene(QPointF(x, y)))
    return _rgb(widget)[at.y(), at.x()]


def _colour(value: float, levels) -> np.ndarray:
    """The RGB the diverging map gives ``value`` on ``levels``."""
    from attnscope.gui.colormaps import colormap
    from attnscope.gui.drawing.kinds import DIVERGING

    lo, hi = levels
    return np.asarray(colormap(DIVERGING).map((value - lo) / (hi - lo), mode="byte"))[:3].astype(int)


def _signed_trace(n: int = 6, kind: str = EFFECTIVE):
    """One effective-attention head of ``n`` tokens, causal, with a strong negative cell (q3 -> k1
    at -2.0) and a positive one past 1 (q4 -> k4 at 1.5): what the 0..1 scale drew as 0 and 1."""
    from attnscope.engine.traces.dense import DenseTrace

    m = np.tril(np.full((n, n), 0.05, np.float32))
    m[3, 1], m[4, 4] = -2.0, 1.5
    return DenseTrace(attentions={kind: m[None, None]}, model_name="signed", family="gpt",
                      target_tokens=[f"t{i}" for i in range(n)])


def test_levels_are_symmetric_for_a_signed_kind_and_unit_for_weights():
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.gui.drawing.kinds import display_values, levels_for

    m = np.array([[0.5, -2.0], [1.5, 0.0]], np.float32)
    assert levels_for(EFFECTIVE, m) == (-2.0, 2.0)
    assert levels_for(DECODER_SELF, m) == (0.0, 1.0)
    assert levels_for(EFFECTIVE, np.zeros((2, 2))) == (-1.0, 1.0)          # nothing to scale by: never (0, 0)
    shown = display_values(EFFECTIVE, m, threshold=0.6, normalise=True)  # by magnitude, sign kept
    assert shown.tolist() == [[0.0, -1.0], [0.75, 0.0]]


def test_extreme_pooling_keeps_the_sign_of_the_strongest_value():
    import torch

    from attnscope.engine.traces.pooling import pool_2d

    m = torch.zeros(4, 4)
    m[1, 1], m[0, 0], m[3, 3] = -0.9, 0.5, 0.2
    pooled = pool_2d(m, 2, 2, "extreme")
    assert np.allclose(pooled.numpy(), [[-0.9, 0.0], [0.0, 0.2]])
    assert pool_2d(m, 2, 2, "max")[0, 0] == pytest.approx(0.5)             # weights: unchanged


def test_head_detail_draws_a_negative_cell_in_the_negative_colour(qtbot, drawn):
    from attnscope.gui.state import AppState
    from attnscope.gui.views.head_detail import HeadDetail

    state = AppState()
    state.set_trace(_signed_trace())
    view = HeadDetail(state)                 # drawn from the state's trace as it opens
    qtbot.addWidget(view)
    view.resize(520, 560)
    view.show()
    drawn(view)
    qtbot.waitExposed(view)
    d = view.drawing
    assert d.kind == EFFECTIVE and d.levels == (-2.0, 2.0)                # symmetric, out to the largest |M|
    assert tuple(view.colorbar.levels()) == (-2.0, 2.0)                  # the bar says the range
    negative, past_one = _painted_at(view.plot, view.image, 1.5, 3.5), _painted_at(view.plot, view.image, 4.5, 4.5)
    assert np.abs(negative.astype(int) - _colour(-2.0, d.levels)).max() <= 24   # blue end, not 0's colour
    assert np.abs(past_one.astype(int) - _colour(1.5, d.levels)).max() <= 24
    assert np.abs(negative.astype(int) - _colour(0.0, d.levels)).max() > 60
    view._on_hover(view.image.mapToScene(QPointF(1.5, 3.5)))
    assert view.readout.text().startswith("mixing (signed, not a softmax weight) -2.0000 | query 3")


def test_overview_codes_keep_the_sign_and_softmax_kinds_stay_on_0_1(effective_model, qtbot, drawn):
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.engine.traces import reading
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.gui.state import AppState
    from attnscope.gui.views.head_detail import HeadDetail
    from attnscope.gui.views.head_grid import HeadGrid
    from tools.family_sweep import TEXT

    state = AppState()
    trace = trace_text(effective_model, TEXT)
    grid, detail = HeadGrid(state), HeadDetail(state)
    for view in (grid, detail):
        qtbot.addWidget(view)
    state.set_model(effective_model)
    state.set_trace(trace)
    state.select_head(EFFECTIVE, 0, 0)
    drawn(grid, detail)
    layer = reading.layer(trace, EFFECTIVE, 0)                          # (H, T, T) the mixing itself
    s = float(np.abs(layer).max())
    assert layer.min() < -0.05                                           # the tiny Qwen3.5 mixes with negatives
    assert grid.drawing.levels == pytest.approx((-s, s)) and tuple(grid.colorbar.levels()) == pytest.approx((-s, s))
    h, q, k = np.unravel_index(int(np.argmin(layer)), layer.shape)
    y, x = grid.layout_.tile_origin(0, int(h))
    assert grid.mosaic[y + q, x + k] < 128 < grid.mosaic[y, x]           # below the middle code: the negative side
    assert grid.describe(0, int(h), int(q), int(k)).startswith(f"layer 0, head {h}: mixing -")
    head = reading.head(trace, EFFECTIVE, 0, 0)
    assert detail.drawing.levels == pytest.approx((-np.abs(head).max(), np.abs(head).max()))
    assert not detail.log_box.isEnabled() and not grid.log_box.isEnabled()   # a scale of weights: not for mixing
    assert all("|mixing|" in v.threshold.toolTip() for v in (detail, grid))  # the threshold is on |value|
    state.select_head(DECODER_SELF, detail.drawing.layer, 0)            # a softmax kind: exactly as before
    drawn(grid, detail)
    assert grid.drawing.levels == (0.0, 1.0) and tuple(grid.colorbar.levels()) == (0.0, 1.0)
    assert detail.drawing.levels == (0.0, 1.0) and tuple(detail.colorbar.levels()) == (0.0, 1.0)
    assert grid.describe(detail.drawing.layer, 0, 0, 0).split(": ")[1].startswith("weight ")
    assert detail.log_box.isEnabled() and grid.log_box.isEnabled() and "log10" in grid.log_box.toolTip()
    assert all("weight" in v.threshold.toolTip() and "|" not in v.threshold.toolTip() for v in (detail, grid))


def test_a_long_signed_overview_keeps_its_negative_peak(qtbot):
    from attnscope.gui.drawing.overview import EXACT_TOKENS, overview_drawing

    n = EXACT_TOKENS + 88
    d = overview_drawing(_signed_trace(n), EFFECTIVE, 0.0)
    assert not d.thumbs.exact and d.thumbs.pooled.min() == pytest.approx(-2.0)   # max pooling drew it as 0.05
    assert d.levels == (-2.0, 2.0)


def test_a_long_signed_head_keeps_its_negative_peak_in_head_detail(qtbot, drawn):
    from attnscope.gui.state import AppState
    from attnscope.gui.views.head_detail import DETAIL_EXACT, HeadDetail

    state = AppState()
    state.set_trace(_signed_trace(DETAIL_EXACT + 76))
    view = HeadDetail(state)                 # a long head: the whole head pooled, zoomable, with its minimap
    qtbot.addWidget(view)
    view.resize(520, 560)
    view.show()
    drawn(view)
    d = view.drawing
    assert d.long and d.levels == (-2.0, 2.0)
    assert d.shown.min() == pytest.approx(-2.0) and d.overview.min() == pytest.approx(-2.0)   # max pooling: 0.05
    assert view.image.extreme and view.minimap.image.extreme          # and on the way to the screen
    read = []
    for y in (1.5, 2.5, 3.5):                # the painted pixel holding q3 -> k1 (its block's bounds are the screen's)
        view._on_hover(view.image.mapToScene(QPointF(1.5, y)))
        read.append(view.readout.text())
    assert any(t.startswith("mixing -2.0000 (strongest) | query 3 't3' -> key 1 't1'") for t in read), read
    assert all("largest magnitude of the block" in t for t in read)


def _two_head_trace(n: int = 6, kind: str = EFFECTIVE):
    """Two heads of ``kind``: head 0 as ``_signed_trace`` (q3 -> k1 at -2.0), head 1 all 0.05."""
    from attnscope.engine.traces.dense import DenseTrace

    m = np.tril(np.full((2, n, n), 0.05, np.float32))
    m[0, 3, 1], m[0, 4, 4] = -2.0, 1.5
    return DenseTrace(attentions={kind: m[None]}, model_name="signed", family="gpt",
                      target_tokens=[f"t{i}" for i in range(n)])


def _max_of_heads(qtbot, drawn, view_class, kind: str, box: str):
    """``view_class`` on ``_two_head_trace(kind)``, shown, its ``box`` on "max of heads", drawn."""
    from attnscope.gui.state import AppState

    state = AppState()
    state.set_trace(_two_head_trace(kind=kind))
    view = view_class(state)
    qtbot.addWidget(view)
    view.resize(560, 520)
    view.show()
    getattr(view, box).setCurrentText("max of heads")
    drawn(view)
    return view


def test_max_of_heads_keeps_a_signed_kinds_negative_peak():
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.engine.traces import cell, reading, viewport_weights
    from attnscope.gui.views.head_detail import aggregate

    trace = _two_head_trace()
    pooled = viewport_weights(trace, EFFECTIVE, 0, 0, "max of heads", (0, 6), (0, 6), (3, 3))   # 2 x 2 tokens a pixel
    assert pooled[1, 0] == pytest.approx(-2.0)                                    # plain max: 0.05
    exact = viewport_weights(trace, EFFECTIVE, 0, 0, "max of heads", (0, 6), (0, 6), (64, 64))
    assert exact[3, 1] == pytest.approx(-2.0) and exact[4, 4] == pytest.approx(1.5)
    assert cell(trace, EFFECTIVE, 0, 0, "max of heads", 3, 1) == pytest.approx(-2.0)
    assert aggregate(reading.layer(trace, EFFECTIVE, 0), 0, "max of heads", EFFECTIVE)[3, 1] == pytest.approx(-2.0)
    assert cell(trace, EFFECTIVE, 0, 0, "mean of heads", 3, 1) == pytest.approx(-0.975)
    weights = _two_head_trace(kind=DECODER_SELF)                                  # a softmax kind: plain max, as before
    assert viewport_weights(weights, DECODER_SELF, 0, 0, "max of heads", (0, 6), (0, 6), (64, 64))[3, 1] == \
        pytest.approx(0.05)
    assert cell(weights, DECODER_SELF, 0, 0, "max of heads", 3, 1) == pytest.approx(0.05)
    assert aggregate(reading.layer(weights, DECODER_SELF, 0), 0, "max of heads", DECODER_SELF)[3, 1] == \
        pytest.approx(0.05)


def test_head_detail_max_of_heads_paints_the_negative_peak(qtbot, drawn):
    from attnscope.gui.views.head_detail import HeadDetail

    view = _max_of_heads(qtbot, drawn, HeadDetail, EFFECTIVE, "agg_box")
    qtbot.waitExposed(view)
    d = view.drawing
    assert d.how == "max of heads" and d.levels == (-2.0, 2.0) and d.shown[3, 1] == pytest.approx(-2.0)
    negative = _painted_at(view.plot, view.image, 1.5, 3.5)
    assert np.abs(negative.astype(int) - _colour(-2.0, d.levels)).max() <= 24
    view._on_hover(view.image.mapToScene(QPointF(1.5, 3.5)))
    assert view.readout.text().startswith("mixing (signed, not a softmax weight) -2.0000 | query 3")


def test_compare_draws_a_signed_kind_on_a_diverging_scale(qtbot):
    from attnscope.engine.inspection import compare_traces
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.gui.state import AppState
    from attnscope.gui.views.compare import CompareView

    state = AppState()
    view = CompareView(state)
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    view.split.setVisible(True)              # as when a model B is chosen
    qtbot.waitExposed(view)
    for kind in (EFFECTIVE, DECODER_SELF):
        ta, tb = _signed_trace(kind=kind), _signed_trace(kind=kind)
        view._done((None, ta, tb, {kind: compare_traces(ta, tb, kind)}), ("t", None))
        signed = kind == EFFECTIVE
        levels = (-2.0, 2.0) if signed else (0.0, 1.0)
        assert [tuple(i.levels) for i in view.images[:2]] == [levels, levels]        # was (0, 1): -2.0 drawn as 0
        assert tuple(view.bar.levels()) == levels and all(i.extreme == signed for i in view.images[:2])
        if signed:                    # A and B each paint q3 -> k1 in the negative colour (it was 0's)
            for image in view.images[:2]:
                assert _paints(view.plots, image, _colour(-2.0, levels))


def _paints(widget, item, rgb) -> bool:
    """Whether ``widget`` shows colour ``rgb`` (within 24) somewhere over ``item``."""
    from attnscope.gui.drawing.settling import settle

    settle(widget)
    box = widget.mapFromScene(item.sceneBoundingRect()).boundingRect()
    seen = _rgb(widget)[max(0, box.top()):box.bottom(), max(0, box.left()):box.right()].astype(int)
    return bool((np.abs(seen - rgb).max(-1) <= 24).any())


def test_rollout_max_of_heads_draws_a_signed_kind_on_a_diverging_scale(qtbot, drawn):
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.gui.views.rollout import RolloutView

    for kind in (EFFECTIVE, DECODER_SELF):
        view = _max_of_heads(qtbot, drawn, RolloutView, kind, "mode")
        signed = kind == EFFECTIVE
        image = view.plot.image
        assert view.matrix[3, 1] == pytest.approx(-2.0 if signed else 0.05)       # plain max: 0.05
        assert tuple(image.levels) == ((-2.0, 2.0) if signed else (0.0, pytest.approx(1.5)))
        assert tuple(view.plot.colorbar.levels()) == tuple(image.levels) and image.extreme == signed
        if signed:
            assert _paints(view.plot, image, _colour(-2.0, (-2.0, 2.0)))


def test_a_statistic_that_rounds_to_zero_prints_without_a_sign(qtbot):
    from attnscope.gui.views.head_stats import NumberItem

    assert [NumberItem(v).text() for v in (-0.0001, -0.0, 0.0002, -0.5, 0.25)] == \
        ["0.000", "0.000", "0.000", "-0.500", "0.250"]          # effective attention's mean read "-0.000"
    assert NumberItem(-0.0001).value < NumberItem(0.0).value                      # it still sorts by its number
    assert NumberItem(-0.04, 1).text() == "0.0" and NumberItem(3, 0).text() == "3"


@pytest.mark.parametrize("view", ["head", "grid"])
def test_an_exported_image_draws_the_negative_peak(qapp, tmp_path, view):
    from attnscope.gui.render import render_view
    from tests.helpers.images import pixels

    path = render_view(None, _signed_trace(), view, EFFECTIVE, 0, 0, "500x400", tmp_path / f"{view}.png")
    seen = pixels(path).astype(int)                   # `attnscope export --format png` draws with these widgets
    assert (np.abs(seen - _colour(-2.0, (-2.0, 2.0))).max(-1) <= 24).any()     # the blue end: -2.0 is not 0


def test_rollout_of_a_signed_kind_is_refused_with_a_reason():
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.gui.views.rollout import NOT_DISTRIBUTION, rollout_drawing

    d = rollout_drawing(_signed_trace(), EFFECTIVE, 0, "rollout (attention only)")
    assert d.matrix is None and d.note == NOT_DISTRIBUTION        # row 3 renormalised by -1.85 drew -2.0 as +1.08
    assert rollout_drawing(_signed_trace(kind=DECODER_SELF), DECODER_SELF, 0, "rollout (with residual)").matrix \
        is not None


def test_cli_export_of_effective_attention_says_it_is_signed(effective_folder, tmp_path, capsys, qapp):
    import json

    from attnscope.cli.entry import main
    from attnscope.engine.kinds import NOT_SOFTMAX

    code = main(["export", effective_folder, "--text", "the big dog", "--out", str(tmp_path), "--view", "head", "--format",
                 "png", "--kind", EFFECTIVE, "--size", "300x240"])
    assert code == 0
    assert NOT_SOFTMAX[EFFECTIVE] in json.loads(capsys.readouterr().out)["notes"]


def test_head_lines_of_a_signed_kind_say_why_they_draw_nothing():
    """A line's opacity has no sign: the -2.0 cell was drawn as no line at all, silently."""
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.gui.views.head_lines import NOT_WEIGHTS, lines_drawing

    d = lines_drawing(_signed_trace(), EFFECTIVE, 0, [0], 0.0, False, False, "all", None)
    assert d.groups == [] and d.summary == NOT_WEIGHTS
    assert lines_drawing(_signed_trace(kind=DECODER_SELF), DECODER_SELF, 0, [0], 0.0, False, False, "all", None).groups
