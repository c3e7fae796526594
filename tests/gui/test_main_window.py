"""The main window, offscreen: it runs a text, its grid holds the trace's numbers, hover reads a
cell, a click opens the head, and closing it mid-run leaves nothing running."""
import numpy as np
from attnscope.gui.worker import active_threads

from attnscope.gui.window.main_window import MainWindow
from attnscope.engine.traces import reading


def test_window_runs_text_and_grid_holds_trace_numbers(window, qtbot):
    window.input_bar.text_edit.setText("the big dog sees the cat .")
    window.input_bar.target_edit.setText("der große hund")
    old = window.state.trace
    window.run()
    qtbot.waitUntil(lambda: window.state.trace is not old, timeout=20000)
    trace = window.state.trace
    assert trace.source_tokens[:3] == ["the", "big", "dog"]
    assert trace.target_tokens[0] == "[BOS]"
    grid = window.grid
    qtbot.waitUntil(lambda: not grid.draw_jobs.busy)
    assert grid.kind in trace.kinds
    image = grid.image.image            # uint8 codes 1 + round(254 w); gaps 0
    layout = grid.layout_
    L, H, Tq, Tk = trace.shape(grid.kind)
    assert (layout.rows, layout.cols, layout.tile_h, layout.tile_w) == (L, H, Tq, Tk)
    y, x = layout.tile_origin(1, 2)
    head = reading.head(trace, grid.kind, 1, 2)
    drawn = image[y:y + Tq, x:x + Tk]
    np.testing.assert_allclose((drawn.astype(np.float64) - 1) / 254, head, atol=0.5 / 254 + 1e-6)
    assert (drawn > 0).all() and image[y, x + Tk] == 0   # cells are opaque, the gap beside is not
    assert "untrained" in window.banner.text()
    assert "parameters" in window.status_line.params_label.text()


def test_hover_reads_cell_and_click_opens_head(window, qtbot, drawn):
    grid = window.grid
    drawn(grid)
    trace = window.state.trace
    kind = grid.kind
    pos = grid.scene_pos_of(1, 3, 0, 2)
    grid._on_hover(pos)
    w = reading.head(trace, kind, 1, 3)[0, 2]
    q, k = reading.query_tokens(trace, kind)[0], reading.key_tokens(trace, kind)[2]
    assert grid.last_tooltip == f"layer 1, head 3: weight {w:.4f} | query 0 {q!r} -> key 2 {k!r}"
    detail = window.dock_layout.view("Head detail")
    with qtbot.waitSignal(window.state.head_selected):
        window.state.select_head(kind, 1, 3)
    drawn(detail)
    assert (detail.layer, detail.head) == (1, 3)
    np.testing.assert_array_equal(detail.image.image, reading.head(trace, kind, 1, 3))


def test_empty_text_gets_a_note_not_a_crash(window):
    window.input_bar.text_edit.setText("   ")
    window.run()
    assert "no text" in window.banner.text().lower()


def test_close_during_long_run_leaves_nothing_running(qtbot):
    w = MainWindow(source="random-gpt", device="cpu")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.state.trace is not None, timeout=20000)

    def endless():
        while True:
            yield 1

    seen = []
    w.run_jobs.start(endless, on_yielded=seen.append)
    qtbot.waitUntil(lambda: len(seen) > 0, timeout=60000)     # after the model thread's drawings (load 18: > 5 s)
    w.close()
    assert not w.run_jobs.busy
    qtbot.waitUntil(lambda: active_threads() == 0, timeout=60000)   # cancelled: it ends at its next yield


def test_head_detail_keys_move_between_heads_and_layers(window, qtbot, drawn):
    from PySide6.QtCore import Qt
    detail = window.dock_layout.view("Head detail")
    kind = detail.kind
    window.state.select_head(kind, 0, 0)
    qtbot.keyClick(detail, Qt.Key.Key_Right)
    qtbot.keyClick(detail, Qt.Key.Key_Down)
    assert (detail.layer, detail.head) == (1, 1)
    qtbot.keyClick(detail, Qt.Key.Key_Down)      # clamps at the last layer
    assert detail.layer == 1
    detail.agg_box.setCurrentText("mean of heads")
    drawn(detail)
    np.testing.assert_allclose(detail.image.image, reading.weights(window.state.trace, kind)[1].mean(axis=0), atol=1e-6)


def test_settings_persist_colormap_device_and_layout(qtbot, tmp_path, monkeypatch):
    from attnscope.gui.settings import app_settings
    monkeypatch.setenv("ATTNSCOPE_SETTINGS", str(tmp_path / "s.ini"))
    w = MainWindow(source="random-bert")
    qtbot.addWidget(w)
    w.input_bar.device_box.setCurrentText("cpu")
    w.set_colormap("inferno")
    w.docks["Head detail"].setFloating(True)
    w.close()
    w2 = MainWindow(source="random-bert")
    qtbot.addWidget(w2)
    assert w2.state.colormap == "inferno"
    assert w2.state.device == "cpu"
    assert w2.docks["Head detail"].isFloating()
    w2.dock_layout.reset()
    assert not w2.docks["Head detail"].isFloating()
    w2.close()
    assert app_settings().value("colormap") == "inferno"


def test_a_device_this_machine_lacks_becomes_auto_once_the_worker_lists_the_devices(qtbot):
    from attnscope.engine.runtime.device import available_devices, pick_device

    w = MainWindow(source="random-gpt", device="cuda:7")    # e.g. saved on another machine
    qtbot.addWidget(w)
    assert w.input_bar.device_box.currentText() == "cuda:7"            # shown until the worker has asked torch
    qtbot.waitUntil(lambda: w.state.loaded is not None, timeout=20000)
    assert w.state.device == "auto" and w.input_bar.device_box.currentText() == "auto"
    assert [w.input_bar.device_box.itemText(i) for i in range(w.input_bar.device_box.count())] == ["auto", *available_devices(), "spread"]
    assert w.state.loaded.device.type == pick_device("auto").type
    w.close()


def test_open_checkpoint_from_the_file_menu_and_refuse_a_corrupt_one(window, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    from attnscope.engine.loading.checkpoint import save_checkpoint
    from attnscope.engine.loading.demo import random_model

    good = save_checkpoint(random_model("gpt", seed=9), tmp_path / "gpt.safetensors")
    corrupt = tmp_path / "corrupt.safetensors"
    corrupt.write_bytes(good.read_bytes()[:300])
    chosen = {"path": str(good)}
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (chosen["path"], ""))

    with qtbot.waitSignal(window.state.model_changed, timeout=20000):
        window.open_action.trigger()
    assert window.state.loaded.family == "gpt"
    qtbot.waitUntil(lambda: window.state.trace is not None and window.state.trace.family == "gpt", timeout=20000)
    before = window.state.loaded

    chosen["path"] = str(corrupt)
    window.open_action.trigger()
    qtbot.waitUntil(lambda: window.error_box is not None and window.error_box.isVisible(), timeout=20000)
    assert "corrupt.safetensors is damaged or truncated" in window.error_box.text()
    assert window.state.loaded is before
    window.error_box.close()

    old_trace = window.state.trace
    window.input_bar.text_edit.setText("the big dog")
    window.run()
    qtbot.waitUntil(lambda: window.state.trace is not old_trace, timeout=20000)
    assert window.state.trace.target_tokens == ["the", "big", "dog"]


def test_model_menu_opens_the_bundled_minilm(window, qtbot):
    action = next(a for a in window.model_menu.actions() if "MiniLM" in a.text())
    with qtbot.waitSignal(window.state.model_changed, timeout=30000):
        action.trigger()
    assert window.state.loaded.family == "hf-bert" and window.input_bar.pair_edit.isVisible()
    qtbot.waitUntil(lambda: window.state.trace is not None and window.state.trace.family == "hf-bert", timeout=30000)
    assert window.state.trace.shape("encoder self")[:2] == (6, 12)
    assert window.state.trace.source_tokens[0] == "[CLS]"
    window.input_bar.text_edit.setText("tokenization is unbelievable")
    window.run()
    qtbot.waitUntil(lambda: "##" in "".join(window.state.trace.source_tokens), timeout=30000)
    assert window.input_bar.merge_box.isVisible()
    window.input_bar.merge_box.setChecked(True)   # runs again
    qtbot.waitUntil(lambda: "tokenization" in window.state.trace.source_tokens, timeout=30000)
    assert not any(t.startswith("##") for t in window.state.trace.source_tokens)


def test_every_model_job_of_the_window_runs_on_one_thread(qtbot, monkeypatch):
    """Open, Run, the model's output and a decoding step: one thread, so torch keeps one team
    of helper threads in the process (gui.worker's lanes say why that halves a small forward)."""
    import inspect
    import threading

    import attnscope.gui.window.engine_calls as calls
    import attnscope.gui.views.decoding as dec

    threads = {}

    def recording(name, real):
        def note():
            threads.setdefault(name, set()).add(threading.get_ident())

        def wrapper(*args, **kwargs):
            note()
            return real(*args, **kwargs)

        def generator(*args, **kwargs):   # Jobs drives generator functions step by step
            note()
            return (yield from real(*args, **kwargs))
        return generator if inspect.isgeneratorfunction(real) else wrapper

    for module, name in ((calls, "open_model"), (calls, "timed_trace"), (calls, "model_output"), (dec, "_start_session")):
        monkeypatch.setattr(module, name, recording(name, getattr(module, name)))
    w = MainWindow(source="random-gpt", device="cpu")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.state.trace is not None and not w.run_jobs.busy and not w.output_jobs.busy,
                    timeout=20000)
    w.input_bar.text_edit.setText("the dog sees the cat")
    w.run()
    qtbot.waitUntil(lambda: w.state.text == "the dog sees the cat" and not w.run_jobs.busy
                    and not w.output_jobs.busy, timeout=20000)
    panel = w.dock_layout.view("Decoding")
    panel.step()
    qtbot.waitUntil(lambda: len(panel.history) >= 1, timeout=20000)
    w.close()
    assert set(threads) == {"open_model", "timed_trace", "model_output", "_start_session"}
    ids = set().union(*threads.values())
    assert len(ids) == 1 and threading.get_ident() not in ids


def test_a_recent_file_that_is_bundled_is_listed_once_in_the_model_menu(window, qtbot):
    from pathlib import Path

    from attnscope.engine.loading import catalog
    from attnscope.gui.settings import push_recent

    gpt = next(p for p in catalog.bundled_checkpoints() if p.stem == "gpt")
    window.settings.setValue("recent_files", [])   # only this file, whatever earlier tests opened
    push_recent(window.settings, str(Path(gpt).resolve()))
    window.current_source = str(gpt)
    window.opening.fill_model_menu()
    gpts = [a for a in window.model_menu.actions() if "gpt" in a.text().lower() and "untrained" not in a.text().lower()]
    assert [a.text() for a in gpts] == ["gpt (bundled)"]
    assert sum(a.isChecked() for a in window.model_menu.actions()) == 1


def test_no_stray_tab_bar_is_drawn_over_the_docks(qtbot):
    """Walked as a user: Qt 6.11 left a second tab bar ("Head statistics", "Neurons") drawn over
    the bottom dock's title when the docks were tabified before the window showed. Every tab bar
    shown is one of the window's dock groups: at a first start, after Reset Layout, and at a
    start from the layout saved on closing."""
    from PySide6.QtWidgets import QApplication, QTabBar

    def bars_and_groups(w):
        for _ in range(3):
            QApplication.processEvents()
        bars = sorted(tuple(sorted(bar.tabText(i) for i in range(bar.count()))) for bar in w.findChildren(QTabBar)
                      if bar.parent() is w and bar.isVisible())
        groups = sorted({tuple(sorted([d.windowTitle()] + [t.windowTitle() for t in w.tabifiedDockWidgets(d)]))
                         for d in w.docks.values() if w.tabifiedDockWidgets(d)})
        return bars, groups

    for start in ("first", "saved layout"):
        w = MainWindow(source="random-gpt", device="cpu")
        qtbot.addWidget(w)
        w.resize(1280, 800)
        w.show()
        qtbot.waitUntil(lambda: w._tab_bars_settled and w.state.trace is not None, timeout=20000)
        bars, groups = bars_and_groups(w)
        assert len(groups) == 2 and bars == groups, (start, bars)
        if start == "first":
            w.dock_layout.reset()
            assert bars_and_groups(w)[0] == groups
        w.close()
