"""The window opens an ndif: model (ATTNSCOPE_NDIF=local: run here through nnsight's stand-in for
NDIF) from File > Open Remote Model (NDIF)…, runs it as one nnsight job and draws the trace."""
import pytest

pytest.importorskip("nnsight")

from tests.helpers.hf_tiny import tiny_folder  # noqa: E402
from tests.helpers.lanes import lanes_computing  # noqa: E402,F401  (the fixture: each computation's lane)
from attnscope.engine.traces import reading

KIND = "decoder self"


def test_the_file_menu_opens_a_remote_model_and_its_run_is_drawn(window, qtbot, tmp_path, monkeypatch, drawn):
    from PySide6.QtWidgets import QInputDialog

    from attnscope.engine.remote import RemoteTrace
    from attnscope.engine.traces import trace_text

    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")
    folder = tiny_folder(tmp_path, "llama")
    assert window.open_remote_action.text() == "Open Remote Model (&NDIF)…"
    window.open_remote_action.trigger()
    dialog = next(d for d in window.findChildren(QInputDialog) if d.isVisible())
    assert "ATTNSCOPE_NDIF=local" in dialog.labelText()
    said = []
    window.opening.remote_notices.said.connect(said.append)
    dialog.setTextValue(str(folder))
    dialog.accept()                                              # opened as ndif:<folder>
    qtbot.waitUntil(lambda: isinstance(window.state.trace, RemoteTrace) and not window.run_jobs.busy, timeout=30000)
    qtbot.waitUntil(lambda: bool(said), timeout=10000)
    assert "will travel back" in said[0]                         # said before the job went
    assert window.state.loaded.meta["ndif"] == {"model": str(folder), "mode": "local"}
    drawn(window.grid)
    assert window.last_error is None
    assert window.state.trace.jobs == 1 and window.state.trace.complete    # a short text: whole in the Run's job
    trace = window.state.trace
    plain = trace_text(window.state.loaded, window.state.text)   # the same model, run here
    assert trace.shape(KIND) == plain.shape(KIND)
    assert abs(reading.weights(trace, KIND) - reading.weights(plain, KIND)).max() < 1e-6


def test_the_api_key_is_kept_in_the_settings_and_never_shown(window, qtbot, monkeypatch):
    from PySide6.QtWidgets import QInputDialog, QLineEdit

    from attnscope.engine.loading.remote_source import api_key, use_api_key

    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    try:
        window.api_key_action.trigger()
        dialog = next(d for d in window.findChildren(QInputDialog) if d.isVisible())
        assert dialog.textEchoMode() == QLineEdit.EchoMode.Password and dialog.textValue() == ""
        dialog.setTextValue("  secret-key-123 ")
        dialog.accept()
        assert window.settings.value("ndif/api_key") == "secret-key-123" and api_key() == "secret-key-123"
        assert "secret-key-123" not in window.statusBar().currentMessage()
    finally:
        use_api_key(None)


def test_a_model_served_by_ndif_runs_there_and_writes_no_output_here(window, qtbot, tmp_path, monkeypatch):
    """No network here: the Run goes as far as the key, and says so in one sentence; the output
    line (greedy decoding needs the weights) is not asked of a model built on the meta device."""
    import nnsight

    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    monkeypatch.setattr(nnsight.CONFIG.API, "APIKEY", None)
    window.opening.open_source(f"ndif:{tiny_folder(tmp_path, 'llama')}")
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=30000)
    assert window.state.loaded.meta["ndif"]["mode"] == "ndif" and not window.state.loaded.generates
    assert "No NDIF API key is set" in window.last_error and "\n" not in window.last_error.strip()


def test_every_view_draws_a_remote_trace_computing_on_the_model_lane_only(qtbot, drawn, monkeypatch, tmp_path,
                                                                          lanes_computing):
    """As tests/gui/test_thread_rule.py holds for a recording: a remote trace with a few rows here
    (every view asks for more: each runs a job, and computes the weights) is drawn on the MODEL
    lane, its jobs included."""
    import attnscope.gui.views.head_detail as detail
    import attnscope.gui.drawing.overview as overview
    import attnscope.gui.worker as worker
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.remote import trace_remote
    from attnscope.gui.state import AppState
    from tests.helpers.views import drawing_views

    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")
    monkeypatch.setattr(overview, "EXACT_TOKENS", 8)         # the overview pools: "long" from 9 tokens on
    monkeypatch.setattr(detail, "DETAIL_EXACT", 8)
    state = AppState()
    state.set_model(open_model(f"ndif:{tiny_folder(tmp_path, 'llama')}", "cpu"))
    views = drawing_views(qtbot, state)
    trace = trace_remote(state.loaded, "the big dog sees the small cat and the cat sees the big dog", rows=3)
    lanes_computing.clear()                               # the Run itself (here on the test's thread)
    state.set_trace(trace)
    drawn(*views)
    qtbot.waitUntil(lambda: worker.active_threads() == 0, timeout=30000)   # every view's jobs done, none left running
    assert trace.jobs > 1                                 # the views asked for rows and pixels not here
    assert lanes_computing and set(lanes_computing) == {worker.MODEL}, sorted(set(map(str, lanes_computing)))


def test_the_dialog_offers_what_ndif_serves(window, qtbot, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    from attnscope.gui.window import engine_calls

    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    served = ["meta-llama/Llama-3.1-70B", "openai-community/gpt2"]          # a stand-in for NDIF's answer
    monkeypatch.setattr(engine_calls, "served_models", lambda: served)
    window.open_remote_action.trigger()
    dialog = next(d for d in window.findChildren(QInputDialog) if d.isVisible())
    qtbot.waitUntil(lambda: dialog.comboBoxItems() == served, timeout=10000)
    assert "NDIF_API_KEY" in dialog.labelText()
    dialog.reject()
