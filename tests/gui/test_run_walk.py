"""The walk of one typed text to the painted tiles (issue 54, tools/run_walk.py): followed through
``self``, a returned record's fields and the lanes' threads, it enters the rooms where tiles are
made, and it is held to 35 stays and 12 returns."""
import pytest

from tools import loading_walk
from tools.run_walk import Walk, walked


@pytest.fixture(scope="module")
def walk(tmp_path_factory, qapp):
    import os

    settings = tmp_path_factory.mktemp("walk") / "settings.ini"
    before = os.environ.get("ATTNSCOPE_SETTINGS")
    os.environ["ATTNSCOPE_SETTINGS"] = str(settings)
    try:
        yield walked()
    finally:
        if before is None:
            os.environ.pop("ATTNSCOPE_SETTINGS", None)
        else:
            os.environ["ATTNSCOPE_SETTINGS"] = before


@pytest.fixture(scope="module")
def order(walk):
    return walk.order


def test_the_walk_enters_the_rooms_where_tiles_are_made(order):
    rooms = set(loading_walk.stays(order))
    for room in ("gui.widgets.text_box", "engine.traces.pooling", "gui.widgets.mosaic", "gui.drawing.prepared",
                 "gui.widgets.peak_image"):
        assert room in rooms, loading_walk.stays(order)
    assert "gui.widgets.peak_image:paint" in order, order      # painted, not only prepared


@pytest.mark.xfail(reason="counted the honest way (self, a record's fields, the lanes) the walk was 62 stays / 35 "
                          "returns at d414577, 85 / 49 at db12b5c, 86 / 49 at 623eb4f; 74 / 35 once a job's steps "
                          "stand where it was handed over and the gui side was cut (the overview's drawing, mosaic, "
                          "settling, loaded's facts); 77 / 37 all at f579190; to the tiles (side branches left "
                          "out, tools/run_walk.py) 64 / 29 at 2cc5ee4, 56 / 22 (all 67 / 27) at 26174ea once state read "
                          "the Prompt itself, a recorded trace its kinds and shape, the estimate one record of "
                          "facts, the recorder a call once and row_blocks sized the pooling's blocks; 55 / 21 (all 66 / 26) "
                          "at fe55ae8 once a recorded trace's device was a field; with torch's operations carrying the "
                          "request (the forward followed however the sites are counted) 53 / 20 at 65b16a2 after the "
                          "seam's cuts, 50 / 19 (all 62 / 25) at 1faa337 after the loaded device and the sites as "
                          "facts; 42 / 13 (all 54 / 19) once a recorded trace was its own Recording, a kind held "
                          "whole was pooled as held, Thumbnails lived with the pooling, the kind selector among the "
                          "widgets and the output line read the Run's Prompt. Left: the forward's rooms (scratch, gpt, "
                          "layers, positional, attend, call), framing (inputs <-> tokenizer), the trace asked by the "
                          "state, the lane and the drawing in turn; to be cut by structure, never by raising the "
                          "bound", strict=False)
def test_the_walk_to_the_tiles_is_at_most_35_stays_and_12_returns(walk):
    tiles = walk.to_tiles()
    counts = loading_walk.summary(tiles)
    assert counts["stays"] <= 35 and counts["returns"] <= 12, loading_walk.stays(tiles)


def test_the_walk_to_the_tiles_leaves_out_only_side_branches(walk, order):
    """The count to the tiles keeps the way from the text to the painter (the Run, the forward,
    the trace, the pooling, the drawing applied, the painting), in the order of the whole walk,
    and leaves out what does not lead there (the status line's words, the atlas action)."""
    tiles = walk.to_tiles()
    rest = iter(order)      # a subsequence of the whole walk (a name may stand twice: two methods ``after``)
    assert all(any(f == g for g in rest) for f in tiles), (tiles, order)
    rooms = set(loading_walk.stays(tiles))
    # The model's layers too: the walk follows the forward through the tensors torch makes from the
    # framed text (tools/run_walk.py's ``carrying``); a cut elsewhere cannot hide it, only shorten it.
    for room in ("engine.traces.tracing", "engine.models.layers", "engine.seam.attend", "engine.traces.recorded",
                 "engine.traces.pooling", "gui.widgets.mosaic", "gui.views.head_grid", "gui.widgets.peak_image"):
        assert room in rooms, loading_walk.stays(tiles)
    assert "gui.views.head_grid:apply_drawing" in tiles, tiles        # the drawing handed to the image
    for side in ("gui.window.status_line", "gui.window.atlas_actions", "gui.window.output_row"):
        assert side in set(loading_walk.stays(order)) and side not in rooms, loading_walk.stays(tiles)


def test_a_jobs_steps_stand_where_it_was_handed_over():
    """Work on another thread is read where it was handed over, as a call would be, not by the clock:
    the GUI thread's steps taken while the job ran come after the job's, and a function counts once."""
    walk = Walk("typed")
    walk.root.append((("a", 1), "gui.x:a"))
    job = walk.hand_over()                        # Jobs.start on the GUI thread
    walk.root.append((("b", 2), "gui.y:b"))       # the GUI thread goes on meanwhile
    job.append((("c", 3), "engine.z:c"))          # the job's step, later by the clock
    lane = []
    job.append(lane)                              # call_on_lane from inside the job
    lane.append((("d", 4), "engine.z:d"))
    job.append((("a", 1), "gui.x:a"))             # seen before: counted once, at its first place
    assert walk.order == ["gui.x:a", "engine.z:c", "engine.z:d", "gui.y:b"]
