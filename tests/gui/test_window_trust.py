"""A window you can trust, tried in sequence as a user would: nothing stale, nothing piled up,
nothing drawn on the GUI thread, every failure a dialog, themes that reach every plot."""
import threading

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QFileDialog

import attnscope.gui.window.engine_calls
import attnscope.gui.window.main_window
from attnscope.gui.window.main_window import MainWindow
from attnscope.gui.theme import FOREGROUND
from tests.helpers.window import open_views

ALL_VIEWS = ("Head detail", "Head lines", "Rollout", "Head statistics", "Neurons", "Decoding", "Compare")


def _run(window, qtbot, text: str):
    window.input_bar.text_edit.setText(text)
    window.run()
    qtbot.waitUntil(lambda: window.state.trace is not None and window.state.text == text
                    and not window.run_jobs.busy, timeout=20000)


def test_readouts_forget_the_old_text(window, qtbot, drawn):
    grid = window.grid
    detail, = open_views(window, "Head detail")
    drawn(grid, detail)
    grid._on_hover(grid.scene_pos_of(0, 0, 0, 1))
    assert "query 0" in grid.readout.text()
    detail._on_hover(detail.item.vb.mapViewToScene(pg.Point(0.5, 0.5)))
    assert "query 0" in detail.readout.text()
    _run(window, qtbot, "a cat sleeps .")
    assert "query" not in grid.readout.text() and grid.last_tooltip == ""
    assert detail.readout.text().strip() == ""


def test_every_view_follows_the_head_selected_in_the_grid(window, qtbot, drawn):
    lines, rollout, stats, detail = open_views(window, "Head lines", "Rollout", "Head statistics", "Head detail")
    kind = window.state.trace.kinds[0]
    window.state.select_head(kind, 1, 3)
    drawn(lines, rollout, stats, detail)
    assert lines.kind_box.currentText() == kind and lines.layer_box.value() == 1 and lines.heads() == [3]
    assert rollout.kind_box.currentText() == kind and rollout.layer.value() == 1
    assert stats.kind_box.currentText() == kind
    assert stats.row_head(stats.table.currentRow()) == (1, 3)
    assert (detail.kind, detail.layer, detail.head) == (kind, 1, 3)
    detail.head_box.setValue(2)                  # a change made in one view reaches the others
    drawn(lines)
    assert lines.heads() == [2] and window.state.head == 2


def test_a_new_model_leaves_no_old_readouts(window, qtbot, drawn):
    decoding, compare = open_views(window, "Decoding", "Compare")
    decoding.step()
    qtbot.waitUntil(lambda: len(decoding.history) == 1 and not decoding.jobs.busy, timeout=20000)
    assert decoding.alignment.image.image is not None
    decoding.strategy.setCurrentText("beam")     # other settings: the old steps are gone
    assert decoding.history == [] and decoding.alignment.image.image is None
    decoding.step()
    qtbot.waitUntil(lambda: len(decoding.history) == 1 and not decoding.jobs.busy, timeout=20000)
    with qtbot.waitSignal(window.state.model_changed, timeout=20000):
        window.opening.open_source("random-gpt")
    assert decoding.history == [] and decoding.alignment.image.image is None and decoding.heads.image.image is None
    assert decoding.beams.topLevelItemCount() == 0
    assert compare.result is None and compare.images[0].image is None


def test_compare_runs_again_when_the_text_changes(qtbot, drawn, tmp_path):
    from tests.helpers.hf_tiny import tiny_bert_folder

    folder = tiny_bert_folder(tmp_path, 48, 2, 3)
    w = MainWindow(source=str(folder), device="cpu")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.state.trace is not None, timeout=20000)
    compare, = open_views(w, "Compare")
    compare.run()
    qtbot.waitUntil(lambda: compare.result is not None and not compare.jobs.busy, timeout=20000)
    first = compare.result
    _run(w, qtbot, "the small cat sees a dog")
    qtbot.waitUntil(lambda: compare.result is not first and not compare.jobs.busy, timeout=20000)
    assert compare.compared_text[0] == "the small cat sees a dog"
    assert "the small cat sees a dog" in compare.summary.text()
    w.close()


def test_ten_quick_runs_compute_only_the_newest(window, qtbot, monkeypatch):
    gate, texts = threading.Event(), []
    real = attnscope.gui.window.engine_calls.timed_trace

    def slow_first(loaded, text, *args, **kwargs):  # text: the input bar's Prompt, checked once
        texts.append(text.text)
        if len(texts) == 1:
            gate.wait(10)
        return real(loaded, text, *args, **kwargs)

    monkeypatch.setattr(attnscope.gui.window.engine_calls, "timed_trace", slow_first)
    before = window.state.trace
    for i in range(10):
        window.input_bar.text_edit.setText(f"the dog sees {i} cats .")
        window.run()
        if i == 0:
            qtbot.waitUntil(lambda: len(texts) == 1)
    gate.set()
    qtbot.waitUntil(lambda: not window.run_jobs.busy and window.state.trace is not before, timeout=20000)
    assert window.state.text == "the dog sees 9 cats ."
    assert texts == ["the dog sees 0 cats .", "the dog sees 9 cats ."]


def test_no_view_prepares_its_drawing_on_the_gui_thread(window, qtbot, drawn, monkeypatch):
    """Structure, not time: every preparing function runs in a worker thread."""
    import attnscope.gui.drawing.overview
    import attnscope.gui.views.head_detail
    import attnscope.gui.views.head_lines
    import attnscope.gui.views.head_stats
    import attnscope.gui.views.positional
    import attnscope.gui.views.rollout
    from attnscope.gui.drawing.prepared import DRAWN_OFF_THREAD

    calls = []
    modules = [attnscope.gui.drawing.overview, attnscope.gui.views.head_detail, attnscope.gui.views.head_lines, attnscope.gui.views.head_stats,
               attnscope.gui.views.rollout, attnscope.gui.views.positional]
    for func in list(DRAWN_OFF_THREAD):
        module = next(m for m in modules if getattr(m, func.__name__, None) is func)

        def spy(*args, _func=func, **kwargs):
            calls.append((_func.__name__, threading.current_thread() is threading.main_thread()))
            return _func(*args, **kwargs)

        monkeypatch.setattr(module, func.__name__, spy)
    views = open_views(window, "Head detail", "Head lines", "Rollout", "Head statistics", "Positions")
    _run(window, qtbot, "the small cat sees the big dog .")
    drawn(window.grid, *views)
    names = {name for name, _ in calls}
    assert names == {"grid_drawing", "detail_drawing", "lines_drawing", "rollout_drawing", "stats_drawing",
                     "lab_drawing"}
    assert not any(on_gui for _, on_gui in calls)


def test_export_view_as_svg_and_png_from_the_window_writes_in_a_worker(window, qtbot, tmp_path, monkeypatch, drawn):
    import attnscope.gui.window.main_window as main_window

    threads = []
    write = main_window.write_capture

    def spy(shot, path):
        threads.append(threading.current_thread() is threading.main_thread())
        return write(shot, path)
    monkeypatch.setattr(main_window, "write_capture", spy)
    drawn(window.grid)
    target = tmp_path / "grid.svg"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    window.export_view_dialog()
    qtbot.waitUntil(lambda: not window.export_jobs.busy and target.exists(), timeout=20000)
    assert target.stat().st_size > 1000 and b"<svg" in target.read_bytes()
    assert list(tmp_path.iterdir()) == [target]          # no temporary left behind
    picture = tmp_path / "grid.png"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(picture), ""))
    window.export_view_dialog()
    qtbot.waitUntil(lambda: not window.export_jobs.busy and picture.exists(), timeout=20000)
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and sorted(tmp_path.iterdir()) == [picture, target]
    assert threads == [False, False]                     # encoded and written off the GUI thread
    bad = tmp_path / "grid.bmp"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(bad), ""))
    window.export_view_dialog()
    assert window.error_box is not None and window.error_box.isVisible()
    assert "png or .svg" in window.error_box.text() and not bad.exists()


def _axis_colors(window):
    colors = set()
    for view in window.findChildren(pg.GraphicsView):
        for item in view.scene().items():
            if isinstance(item, pg.AxisItem):
                colors.add(item.textPen().color().getRgb()[:3])
    return colors


def test_theme_switch_reaches_plots_built_before_and_after(window, qtbot):
    open_views(window, "Head detail", "Rollout")
    window.set_dark(True)
    assert _axis_colors(window) == {FOREGROUND[True]}
    open_views(window, "Decoding", "Training")            # built while dark
    window.set_dark(False)
    assert _axis_colors(window) == {FOREGROUND[False]}
    titles = [i for v in window.findChildren(pg.GraphicsView) for i in v.scene().items() if isinstance(i, pg.LabelItem)]
    assert titles and all(t.opts["color"] == pg.mkColor(FOREGROUND[False]).name() for t in titles)
    window.set_dark(False)


def test_a_corrupt_time_lapse_is_a_dialog(window, qtbot, tmp_path, monkeypatch):
    training, = open_views(window, "Training")
    bad = tmp_path / "run.timelapse.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(bad), ""))
    training.open_timelapse_dialog()
    assert window.error_box is not None and window.error_box.isVisible()
    assert "run.timelapse.npz" in window.error_box.text()
    assert training.probes == []


def test_long_messages_never_widen_the_window(window, qtbot):
    before = window.minimumSizeHint().width()
    window.statusBar().showMessage("a-very-long-file-name-" * 40)
    window.status_line.model_label.setText("model-" * 80)
    window.banner.setText("Not in this model's vocabulary: " + "x" * 900)
    window.banner.setVisible(True)
    qtbot.wait(1)
    assert window.minimumSizeHint().width() <= before


def test_an_output_without_spaces_never_widens_the_window(window, qtbot):
    """Walked as a user: a random Llama's continuation, "<0x0C>" 24 times, is one word the line
    could not wrap; the window grew past its right dock, left ~120 px wide."""
    from PySide6.QtWidgets import QApplication

    before, dock = window.minimumSizeHint().width(), window.docks["Head detail"].width()
    window.state.set_output("<0x0C>" * 300)
    for _ in range(5):                                     # the layout takes the new text in
        QApplication.processEvents()
    assert window.output_row.label.text() == "<0x0C>" * 300
    assert window.minimumSizeHint().width() <= before and window.docks["Head detail"].width() == dock
    assert "<0x0C>" * 16 in window.output_row.label.toolTip().replace("\n", "")   # cut on the line, whole in its tooltip
    window.state.set_output("a short one")
    assert "a short one" not in window.output_row.label.toolTip()


def test_quitting_with_an_unsaved_trained_model_asks(window, qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    training, = open_views(window, "Training")
    training.trained, training.unsaved = window.state.loaded, True
    monkeypatch.setattr(QMessageBox, "exec", lambda self: QMessageBox.StandardButton.Cancel)
    assert not window.close() and window.isVisible()
    monkeypatch.setattr(QMessageBox, "exec", lambda self: QMessageBox.StandardButton.Discard)
    assert window.close()


def test_the_output_line_shows_the_run_and_then_each_decoding_step(window, qtbot):
    qtbot.waitUntil(lambda: window.output_row.label.text() != "" and not window.output_jobs.busy, timeout=20000)
    from attnscope.engine.decoding.session import model_output
    assert window.output_row.label.text() == model_output(window.state.loaded, window.state.text)
    assert window.output_row.title.text() == "Translation:" and window.output_row.label.isVisible()
    decoding, = open_views(window, "Decoding")
    for n in (1, 2):
        decoding.step()
        qtbot.waitUntil(lambda: len(decoding.history) == n and not decoding.jobs.busy, timeout=20000)
        tok = decoding.session.stepper.tokenizer
        assert window.output_row.label.text() == tok.decode(decoding.history[-1].output_ids)
    with qtbot.waitSignal(window.state.model_changed, timeout=20000):
        window.opening.open_source("random-bert")
    assert not window.output_row.label.isVisible()


def test_the_gui_thread_runs_no_torch_work_in_a_session(window, qtbot, drawn):
    """torch gives every thread that computes a team of helper threads, and with two teams
    small operations ran 4x slower for the rest of the process: model work belongs on the
    model thread. A session tried in sequence (views, Runs, a head, decoding steps, another
    model, the dark theme) calls torch on the GUI thread only to read metadata.
    TorchFunctionMode is per thread, so it sees the GUI thread's calls and nothing else."""
    from torch.overrides import TorchFunctionMode

    called = set()

    class Spy(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            called.add(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    with Spy():
        views = open_views(window, "Head detail", "Head lines", "Rollout", "Head statistics", "Positions", "Decoding")
        _run(window, qtbot, "the small cat sees the big dog .")
        window.state.select_head(window.state.trace.kinds[0], 1, 2)
        drawn(window.grid, *views[:-1])
        decoding = views[-1]
        for n in (1, 2):
            decoding.step()
            qtbot.waitUntil(lambda: len(decoding.history) == n and not decoding.jobs.busy, timeout=20000)
        with qtbot.waitSignal(window.state.model_changed, timeout=20000):
            window.opening.open_source("random-gpt")
        qtbot.waitUntil(lambda: window.state.trace is not None and window.state.trace.family == "gpt"
                        and not window.run_jobs.busy and not window.output_jobs.busy, timeout=20000)
        window.set_dark(True)
        drawn(window.grid, *views[:-1])
    assert called, "the spy saw nothing: it did not watch the GUI thread"
    assert called <= {"numel", "__get__"}, f"torch work on the GUI thread: {sorted(called)}"


def test_a_runs_trace_is_let_go_once_the_next_is_drawn(window, qtbot, drawn):
    """Nothing keeps an old trace once every view shows the next one: before, Qt's pool kept
    each drawing job's arguments, and with them every trace of the session (at 512 tokens the
    window grew by ~90 MB a Run)."""
    import gc
    import weakref

    views = open_views(window, "Head detail", "Head lines", "Rollout", "Head statistics", "Neurons")
    _run(window, qtbot, "the small cat sees the big dog .")
    drawn(window.grid, *views[:-1])
    old = weakref.ref(window.state.trace)
    _run(window, qtbot, "the big dog sees the small cat .")
    drawn(window.grid, *views[:-1])
    qtbot.waitUntil(lambda: not views[-1].jobs.busy and not window.output_jobs.busy, timeout=20000)
    gc.collect()
    assert old() is None
