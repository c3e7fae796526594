"""The window opens models from the Hugging Face cache (issue 31): File > Open from Hugging
Face Cache lists them (name, size, architecture, whether attnscope can open them), a
choice or a typed hub id opens offline, the load shows determinate progress in the status
bar, Cancel keeps the model that was open, and ``--model HUB_ID`` opens one at start."""
from __future__ import annotations

import pytest

from tests.helpers.hf_sharded import build_model, put_in_cache, save_sharded


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-cache-window")
    for arch in ("llama", "gpt2"):
        model, tokenizer = build_model(arch)
        put_in_cache(save_sharded(model, tokenizer, root / arch), root / "hub", f"tiny-org/{arch}")
    return root / "hub"


@pytest.fixture
def offline(cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def test_the_cache_dialog_lists_and_opens_a_model_with_progress(window, qtbot, offline):
    from attnscope.gui.window.hf_cache_dialog import HFCacheDialog

    shown = []
    original = window.status_line.load_progress.show_progress
    window.status_line.load_progress.show_progress = lambda record: (shown.append(record), original(record))
    dialog = window.opening.open_hf_cache_dialog()
    assert isinstance(dialog, HFCacheDialog)
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 2 and not dialog.jobs.busy, timeout=20000)
    assert "2 models" in dialog.where.text()
    rows = {dialog.table.item(r, 0).text(): [dialog.table.item(r, c).text() for c in range(4)] for r in range(2)}
    assert rows["tiny-org/llama"][2] == "llama" and rows["tiny-org/llama"][3] == "opens"
    assert rows["tiny-org/gpt2"][1].endswith("MiB")
    assert str(offline) in dialog.where.text()
    dialog.table.selectRow(list(rows).index("tiny-org/llama"))
    assert dialog.hub_id.text() == "tiny-org/llama"
    dialog.accept()
    qtbot.waitUntil(lambda: window.state.loaded is not None and window.state.loaded.name == "tiny-org/llama",
                    timeout=30000)
    assert shown and shown[-1].fraction == 1.0 and any("of" in r.text for r in shown)
    qtbot.waitUntil(lambda: not window.status_line.load_progress.isVisible(), timeout=5000)


def test_a_typed_hub_id_opens_and_the_file_menu_has_the_action(window, qtbot, offline):
    assert window.open_hf_cache_action.text().startswith("Open from Hugging Face")
    dialog = window.opening.open_hf_cache_dialog()
    dialog.hub_id.setText("tiny-org/gpt2")
    dialog.accept()
    qtbot.waitUntil(lambda: window.state.loaded is not None and window.state.loaded.name == "tiny-org/gpt2",
                    timeout=30000)


def test_cancel_keeps_the_model_that_was_open(window, qtbot, offline):
    before = window.state.loaded
    window.opening.open_source("tiny-org/llama")
    assert window.status_line.load_progress.isVisible()
    window.opening.cancel_load()
    assert not window.status_line.load_progress.isVisible() and "cancelled" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: not window.model_jobs.running, timeout=20000)
    assert window.state.loaded is before and window.last_error is None


def test_the_window_opens_a_hub_id_given_at_start(qtbot, offline):
    from attnscope.gui.window.main_window import MainWindow

    w = MainWindow(source="tiny-org/gpt2", device="cpu")
    qtbot.addWidget(w)
    qtbot.waitUntil(lambda: w.state.trace is not None, timeout=30000)
    assert w.state.loaded.name == "tiny-org/gpt2"
    w.close()
