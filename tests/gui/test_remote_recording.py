"""A remote trace with rows not fetched is saved as it is (engine.traces.recording_file, version
3: which query rows are exact kept in the file) and opened with no model: the rows held equal
the remote trace's, a row not held is refused in one sentence, the overview is the pixels
saved, the API key is never written, and ``attnscope export`` writes what the file holds.
Run through nnsight's local stand-in for NDIF (ATTNSCOPE_NDIF=local)."""
import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest

pytest.importorskip("nnsight")

from attnscope.engine.loading.catalog import open_model  # noqa: E402
from attnscope.engine.remote import trace_remote  # noqa: E402
from attnscope.engine.traces.partial import PartialTrace, RowsNotHeld  # noqa: E402
from attnscope.engine.traces.recording_file import RecordingError, load_recording, save_recording  # noqa: E402
from tests.helpers.hf_tiny import tiny_folder  # noqa: E402
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat . time flies like an arrow ; fruit flies like a banana ."
KIND = "decoder self"
KEY = "secret-key-123"


@pytest.fixture
def remote(tmp_path, monkeypatch):
    """A tiny Mistral (a sliding window: rows of mask travel) run through local nnsight: q of
    the last 4 rows and of rows 2-4 here, the overview whole (256 pixels: every token of this
    text) and pooled to 7 pixels."""
    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")
    monkeypatch.setenv("NDIF_API_KEY", KEY)
    loaded = open_model(f"ndif:{tiny_folder(tmp_path / 'models', 'mistral')}", "cpu")
    trace = trace_remote(loaded, TEXT, rows=4, overview=256)        # the size the export pools to
    reading.tile(trace, KIND, 0, 0, slice(2, 5), slice(None))                 # a second block: one more job
    reading.thumbnails(trace, KIND, 7)                                        # another size: one more job
    assert trace.jobs == 3
    return trace


def test_a_partial_remote_trace_is_saved_and_opened_with_its_exact_rows(remote, tmp_path):
    t = remote.shape(KIND)[2]
    assert not remote.complete and remote.rows_fetched == [(2, 5), (t - 4, t)]
    path = save_recording(remote, tmp_path / "r")
    assert KEY.encode() not in path.read_bytes()                     # the key is never written
    back = load_recording(path)
    assert isinstance(back, PartialTrace) and back.rows_fetched == remote.rows_fetched
    assert back.shape(KIND) == remote.shape(KIND) and back.target_tokens == remote.target_tokens
    assert "query rows 2-4, " in back.notes[-1] and "are exact" in back.notes[-1]
    for layer in range(back.shape(KIND)[0]):
        for rows in (slice(2, 5), slice(t - 4, t)):
            np.testing.assert_array_equal(back.block(KIND, layer, [0, 1, 2, 3], rows, slice(None)).numpy(),
                                          remote.block(KIND, layer, [0, 1, 2, 3], rows, slice(None)).numpy())
    for size in (7, 256):
        mine, theirs = reading.thumbnails(remote, KIND, size), reading.thumbnails(back, KIND, size)
        np.testing.assert_array_equal(theirs.pooled, mine.pooled)
        np.testing.assert_array_equal(theirs.sink, mine.sink)
    jobs = remote.jobs
    with pytest.raises(RowsNotHeld) as caught:
        reading.row(back, KIND, 1, 0, 7)
    said = str(caught.value)
    assert said.startswith("Query row 7 is not in this trace") and "there is no model here to fetch it from" in said and "\n" not in said
    with pytest.raises(RowsNotHeld, match="at 9 pixels a side by max is not in this trace"):
        reading.thumbnails(back, KIND, 9)
    with pytest.raises(RowsNotHeld, match="fetch every row"):
        back.calls                                                    # never a whole recording with holes
    assert remote.jobs == jobs                                        # the opened file asked nothing remote


def test_a_saved_partial_trace_saves_again_and_a_whole_one_is_a_plain_recording(remote, tmp_path):
    back = load_recording(save_recording(remote, tmp_path / "a"))
    again = load_recording(save_recording(back, tmp_path / "b"))
    assert again.rows_fetched == remote.rows_fetched
    np.testing.assert_array_equal(reading.row(again, KIND, 1, 2, 3), reading.row(remote, KIND, 1, 2, 3))
    reading.weights(remote, KIND)                                              # every row: one job more
    whole = load_recording(save_recording(remote, tmp_path / "c"))
    assert not isinstance(whole, PartialTrace)
    np.testing.assert_allclose(reading.weights(whole, KIND), reading.weights(remote, KIND), atol=1e-6)


def test_a_damaged_partial_file_is_one_sentence(remote, tmp_path):
    from safetensors import safe_open
    from safetensors.torch import save_file

    path = save_recording(remote, tmp_path / "r")
    with safe_open(str(path), framework="pt") as f:
        meta, tensors = json.loads(f.metadata()["attnscope"]), {k: f.get_tensor(k) for k in f.keys()}
    bad_rows = dict(meta, partial=dict(meta["partial"], rows=[[5, 2]]))
    save_file(tensors, str(tmp_path / "rows.safetensors"), metadata={"attnscope": json.dumps(bad_rows)})
    with pytest.raises(RecordingError, match="exact query rows are not blocks in order"):
        load_recording(tmp_path / "rows.safetensors")
    del tensors[f"{KIND}/1/rows/0/q"]
    save_file(tensors, str(tmp_path / "q.safetensors"), metadata={"attnscope": json.dumps(meta)})
    with pytest.raises(RecordingError, match="rows/0/q is missing or of the wrong shape"):
        load_recording(tmp_path / "q.safetensors")


def test_export_writes_what_a_partial_recording_holds(remote, tmp_path):
    from attnscope.cli.entry import main

    path = save_recording(remote, tmp_path / "r")
    with redirect_stdout(io.StringIO()) as out:
        assert main(["export", str(path), "--out", str(tmp_path / "pooled"), "--view", "pooled",
                     "--format", "npz"]) == 0
    assert json.loads(out.getvalue())["what"] == "pooled"
    with np.load(tmp_path / "pooled" / "overview.npz") as z:
        np.testing.assert_array_equal(z["pooled_decoder_self"], reading.thumbnails(remote, KIND, 256).pooled)
    with redirect_stdout(io.StringIO()):
        assert main(["export", str(path), "--out", str(tmp_path / "grid")]) == 0      # the overview, drawn
    assert (tmp_path / "grid" / "grid.png").stat().st_size > 0
    assert main(["export", str(path), "--out", str(tmp_path / "head"), "--view", "head", "--format", "npz"]) == 2
    assert not list((tmp_path / "head").glob("*.npz"))                 # rows not held: refused, nothing written


def test_every_view_draws_an_opened_partial_recording_or_says_why_in_place(remote, tmp_path, qtbot, drawn,
                                                                            monkeypatch):
    """The views draw what the file holds and, in place of what it does not, the one-sentence
    refusal; the neuron view (it needs q of every row) says it as its one-sentence error."""
    import attnscope.gui.views.head_detail as detail
    import attnscope.gui.views.head_grid as grid
    import attnscope.gui.drawing.overview as overview
    import attnscope.gui.worker as worker
    from attnscope.gui.state import AppState
    from tests.helpers.views import drawing_views

    monkeypatch.setattr(overview, "EXACT_TOKENS", 8)          # the overview pools: from the pixels held (7 a side)
    monkeypatch.setattr(overview, "tile_pixels", lambda layers, heads: 7)
    monkeypatch.setattr(detail, "DETAIL_EXACT", 8)
    failures = []
    worker.job_failures().failed.connect(lambda title, message: failures.append((title, message)))
    back = load_recording(save_recording(remote, tmp_path / "r"))
    state = AppState()
    views = drawing_views(qtbot, state)
    state.set_trace(back)
    drawn(*views)
    qtbot.waitUntil(lambda: worker.active_threads() == 0, timeout=30000)
    assert [title for title, _ in failures] == ["The neuron view could not run"]
    assert failures[0][1].startswith("Query rows 0-1, 5-35 are not in this trace") and "\n" not in failures[0][1]
    from attnscope.gui.drawing.prepared import Refused
    grid_view = next(v for v in views if isinstance(v, grid.HeadGrid))
    assert not isinstance(grid_view.drawing, Refused)     # the overview, from the pixels saved
    said = [v.drawing.reason for v in views if isinstance(v.drawing, Refused)]
    assert all("not in this trace" in s and "\n" not in s for s in said), said
