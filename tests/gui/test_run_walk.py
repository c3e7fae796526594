"""The walk of one typed text to the painted tiles (issue 54, tools/run_walk.py): followed through
``self``, a returned record's fields and the lanes' threads, it enters the rooms where tiles are
made, and it is held to 35 stays and 12 returns."""
import pytest

from tools import loading_walk
from tools.run_walk import measure


@pytest.fixture(scope="module")
def order(tmp_path_factory, qapp):
    import os

    settings = tmp_path_factory.mktemp("walk") / "settings.ini"
    before = os.environ.get("ATTNSCOPE_SETTINGS")
    os.environ["ATTNSCOPE_SETTINGS"] = str(settings)
    try:
        yield measure()
    finally:
        if before is None:
            os.environ.pop("ATTNSCOPE_SETTINGS", None)
        else:
            os.environ["ATTNSCOPE_SETTINGS"] = before


def test_the_walk_enters_the_rooms_where_tiles_are_made(order):
    rooms = set(loading_walk.stays(order))
    for room in ("gui.widgets.text_box", "engine.traces.pooling", "gui.widgets.mosaic", "gui.drawing.prepared",
                 "gui.widgets.peak_image"):
        assert room in rooms, loading_walk.stays(order)
    assert "gui.widgets.peak_image:paint" in order, order      # painted, not only prepared


@pytest.mark.xfail(reason="counted the honest way (self, a record's fields, the lanes) the walk was 62 stays / 35 "
                          "returns at d414577 and 85 / 49 with the Prompt and trace-protocol work at db12b5c: the "
                          "trace's rooms (engine.traces recorded <-> base <-> reading), the adapters, the window's "
                          "state, loaded's properties and the prepared drawing ping-pong; to be cut by structure, "
                          "never by raising the bound", strict=False)
def test_the_walk_is_at_most_35_stays_and_12_returns(order):
    counts = loading_walk.summary(order)
    assert counts["stays"] <= 35 and counts["returns"] <= 12, loading_walk.stays(order)
