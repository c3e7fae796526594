"""Every view draws a linear layer's effective attention (issue 57, item 4) without crashing:
cells that may be negative, rows that need not sum to 1 (engine.seam.linear_mixing)."""
import pytest

from attnscope.engine.kinds import EFFECTIVE
from tests.helpers.views import drawing_views


@pytest.fixture(scope="module")
def effective_model(tmp_path_factory):
    from attnscope.engine.loading.catalog import open_model
    from tools.family_sweep import build

    return open_model(str(build(tmp_path_factory.mktemp("qwen35"), "qwen3_5_text", "decoder")), "cpu")


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
