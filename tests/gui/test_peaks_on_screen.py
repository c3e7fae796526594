"""What is painted keeps every peak (issue 45, item 4): a heatmap drawn on fewer screen pixels
than it has cells was sampled (Qt) or averaged, so on a 4k-token text the overview's 1.0 at
layer 0 head 0's first cell showed dark purple and Rollout's 0.5 diagonal broke into dashes.
These tests read the painted widget itself."""
from __future__ import annotations

import numpy as np
import pytest

from attnscope.gui.colormaps import lookup_table
from attnscope.gui.state import AppState
from attnscope.gui.widgets.peak_image import peak_pool
from attnscope.gui.widgets.token_matrix import TokenMatrix


def _rgb(image) -> np.ndarray:
    """A grabbed QImage as (h, w, 3) uint8."""
    from PySide6.QtGui import QImage

    image = image.convertToFormat(QImage.Format.Format_RGB888)
    h, w = image.height(), image.width()
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(h, image.bytesPerLine())
    return rows[:, :w * 3].reshape(h, w, 3).copy()       # copied while the converted image is alive


def _on_image(pixels: np.ndarray, view, item) -> np.ndarray:
    """The pixels where ``item`` (an image in ``view``) is painted: not the colour bar beside it,
    which holds every colour of the map."""
    rect = view.mapFromScene(item.mapRectToScene(item.boundingRect())).boundingRect()
    return pixels[max(0, rect.top()):rect.bottom(), max(0, rect.left()):rect.right()]


def _near(pixels: np.ndarray, colour, tol: int = 24) -> np.ndarray:
    return np.abs(pixels.astype(int) - np.asarray(colour[:3], int)).max(-1) <= tol


def test_peak_pool_keeps_the_max_and_the_signed_extreme():
    a = np.zeros((7, 9), np.float32)
    a[6, 8], a[0, 0] = 1.0, 0.25
    pooled = peak_pool(a, 3, 4)
    assert pooled.shape == (3, 3) and pooled[2, 2] == 1.0 and pooled[0, 0] == 0.25 and pooled.sum() == 1.25
    signed = np.zeros((4, 4), np.float32)
    signed[1, 1], signed[0, 0] = -0.9, 0.5
    assert peak_pool(signed, 2, 2, extreme=True)[0, 0] == pytest.approx(-0.9)
    codes = np.zeros((5, 5), np.uint8)      # the overview's display codes: 0 is a gap
    codes[4, 4] = 255
    assert peak_pool(codes, 2, 2)[2, 2] == 255


@pytest.fixture(params=[False, True], ids=["plain", "antialiased"])
def antialias(request):
    """With and without the window's antialiasing (gui.app sets it on): a smooth enlargement
    blended a one-cell line into its neighbours. Restored after, as the test found it."""
    import pyqtgraph as pg

    before = pg.getConfigOption("antialias")
    pg.setConfigOptions(antialias=request.param)
    yield request.param
    pg.setConfigOptions(antialias=before)


def test_a_lone_peak_and_a_thin_diagonal_survive_being_drawn_small(qtbot, antialias):
    """2,000 x 2,000 cells in a ~300-pixel plot: the one cell at 1.0 is painted in the top colour,
    and the 0.5 diagonal is painted on every pixel row it crosses (it came out as dashes)."""
    state = AppState()
    view = TokenMatrix(state)
    qtbot.addWidget(view)
    view.resize(380, 380)
    view.show()
    n = 2000
    m = np.zeros((n, n), np.float32)
    np.fill_diagonal(m, 0.5)
    m[1000, 1500] = 1.0
    view.show_matrix(m, [str(i) for i in range(n)], [str(i) for i in range(n)], top=1.0)
    qtbot.waitExposed(view)
    pixels = _on_image(_rgb(view.grab().toImage()), view, view.image)
    lut = lookup_table(state.colormap)
    assert pixels.shape[0] > 250 and pixels.shape[1] > 250              # the map itself, ~300 pixels a side
    assert _near(pixels, lut[-1]).any()                               # the peak, drawn in the top colour
    rows = np.flatnonzero(_near(pixels, lut[len(lut) // 2], tol=30).any(1))
    # the diagonal's pixel rows, one run without gaps (the plot is ~300 pixels tall)
    assert len(rows) > 150 and (np.diff(rows) == 1).mean() > 0.97


def test_the_overviews_first_cell_of_a_long_text_is_painted_at_its_peak(qtbot, drawn):
    """A 1,500-token text of 3 layers x 4 heads, one cell at 1.0 and every other weight small, in an overview a few
    hundred pixels wide: its painted tile shows the top colour (it showed dark purple)."""
    from attnscope.engine.traces.dense import DenseTrace
    from attnscope.gui.views.head_grid import HeadGrid

    n = 1500
    w = np.full((3, 4, n, n), 0.02, np.float32)
    w[0, 0, 777, 777] = 1.0
    tokens = [f"t{i}" for i in range(n)]
    trace = DenseTrace(attentions={"encoder self": w}, model_name="peaks", family="bert", source_tokens=tokens)
    state = AppState()
    grid = HeadGrid(state)
    qtbot.addWidget(grid)
    grid.resize(330, 260)
    grid.show()
    state.set_trace(trace)
    drawn(grid)
    qtbot.waitExposed(grid)
    pixels = _on_image(_rgb(grid.plot.grab().toImage()), grid.plot, grid.image)
    assert _near(pixels, lookup_table(state.colormap)[-1]).any()


# ---- every pooled view: Head detail's whole head, its minimap, Rollout (issue 53) ----------------
def _painted_at(widget, item, x: float, y: float) -> np.ndarray:
    """The colour painted where ``item``'s point (x, y) (its own coordinates) lands in ``widget``."""
    from attnscope.gui.drawing.settling import settle

    settle(widget)                   # laid out and ranged as it will be painted
    pixels = _rgb(widget.grab().toImage())
    at = widget.mapFromScene(item.mapToScene(pg_point(x, y)))
    return pixels[at.y(), at.x()]


def pg_point(x: float, y: float):
    from PySide6.QtCore import QPointF

    return QPointF(x, y)


def _long_causal_trace(n: int = 4013):
    """One decoder head of ``n`` tokens, causal, every row summing to 1: q0 -> k0 is 1.0 and,
    further down, every weight is about 1/T (the dark purple the peak was lost in)."""
    from attnscope.engine.traces.dense import DenseTrace

    w = np.tril(np.random.default_rng(0).random((n, n), dtype=np.float32))
    w /= w.sum(-1, keepdims=True)
    return DenseTrace(attentions={"decoder self": w[None, None]}, model_name="peaks", family="gpt",
                      target_tokens=[f"t{i}" for i in range(n)])


def test_head_detail_and_its_minimap_paint_q0_k0_of_a_long_head_at_its_peak(qtbot, drawn):
    """4,013 tokens in a dock-sized Head detail: the whole-head view's pixel at q0 -> k0 and the
    minimap's are painted in the map's top colour (they showed #481B6D under the axis line and a
    uniformly purple minimap), and the readout there names the block and its maximum."""
    from attnscope.gui.views.head_detail import HeadDetail

    state = AppState()
    view = HeadDetail(state)
    qtbot.addWidget(view)
    view.resize(420, 500)
    view.show()
    state.set_trace(_long_causal_trace())
    drawn(view)
    qtbot.waitExposed(view)
    top = lookup_table(state.colormap)[-1]
    assert _near(_painted_at(view.plot, view.image, 0.5, 0.5)[None], top).all()
    assert view.minimap.isVisible()
    assert _near(_painted_at(view.plot, view.minimap.image, 0.5, 0.5)[None], top).all()
    view._on_hover(view.image.mapToScene(pg_point(0.5, 0.5)))
    text = view.readout.text()
    assert text.startswith("weight 1.0000 (strongest) | query 0 't0' -> key 0 't0'") and "max of the block" in text
    assert "of queries 0-" in text and "x keys 0-" in text


def test_rollout_paints_q0_k0_of_a_long_text_at_its_peak(qtbot):
    """Rollout's pooled 1,024-cell map of a 4,013-token text (q0 -> k0 = 1.0, the rest about 1/T):
    the pixel at q0 -> k0 is painted in the top colour (it was #481D6F, under the axis line)."""
    from attnscope.gui.drawing.drawings import RolloutDrawing
    from attnscope.gui.views.rollout import RolloutView

    state = AppState()
    view = RolloutView(state)
    qtbot.addWidget(view)
    view.resize(420, 500)
    view.show()
    m = np.tril(np.full((1004, 1004), 0.004, np.float32))
    m[0, 0] = 1.0
    labels = [str(4 * i) for i in range(1004)]
    view.apply_drawing(RolloutDrawing(matrix=m, note="pooled", rows=labels, cols=labels, top=1.0))
    qtbot.waitExposed(view)
    top = lookup_table(state.colormap)[-1]
    assert _near(_painted_at(view.plot, view.image, 0.5, 0.5)[None], top).all()
    pixels = _on_image(_rgb(view.plot.grab().toImage()), view.plot, view.image)
    assert _near(pixels, top).sum() <= 4       # the peak, not a map drawn in the top colour
