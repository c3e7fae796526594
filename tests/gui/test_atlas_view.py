"""The Atlas view on the bundled GPT's atlas (a tiny one: 2 documents of 64 tokens): opened from its
file in a worker, the scatter of every head, a click on the induction head showing its contexts and
Q/K projection, and an atlas of another model said, not mixed. In the window, as a user reaches
it: File > Build Atlas… with Stop and a resume, File > Open Atlas… (the file dialog answered),
the head finder, a click on a head, and a context opened as a door (its document in the text box,
Run, Head detail at its row)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QFileDialog

from attnscope.engine.atlas import build_atlas, load_state
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.traces import reading
from attnscope.gui.state import AppState
from attnscope.gui.views.atlas import AtlasView

GPT = Path(__file__).resolve().parents[2] / "resources" / "checkpoints" / "gpt.safetensors"


@pytest.fixture(scope="module")
def atlas_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("atlas") / "gpt.safetensors"
    build_atlas(open_model(str(GPT), "cpu"), path, length=64, docs=2, top=4, samples=32)
    return path


def test_the_scatter_a_click_and_the_heads_contexts(qtbot, atlas_file):
    view = AtlasView(AppState())
    qtbot.addWidget(view)
    view.open_atlas(str(atlas_file))
    qtbot.waitUntil(lambda: view.atlas is not None, timeout=20000)
    assert len(view.points.data) == 16 and "gpt (small)" in view.readout.text()
    view.boxes["x"].setCurrentText("induction")
    assert view.points.data["x"].max() == pytest.approx(view.values("induction").max())
    view.points.sigClicked.emit(view.points, [view.points.points()[15]], None)       # L3.H3, as a click gives it
    qtbot.waitUntil(lambda: view.detail is not None, timeout=20000)
    assert view.detail["name"] == "L3.H3" and len(view.detail["top"]) == 4
    assert "L3.H3" in view.text.toPlainText() and "[" in view.text.toPlainText()
    assert len(view.queries.data) == len(view.keys.data) == 32
    view.position_box.setChecked(True)                   # queries and keys coloured by their position
    colours = {p.brush().color().name() for p in view.queries.points()}
    assert len(colours) > 4 and view.options.by_position


def test_an_atlas_of_another_model_is_said(qtbot, atlas_file):
    class Other:
        name = "another model"

    state = AppState()
    state.loaded = Other()
    view = AtlasView(state)
    qtbot.addWidget(view)
    view.open_atlas(str(atlas_file))
    qtbot.waitUntil(lambda: view.atlas is not None, timeout=20000)
    assert "not of the open model another model" in view.readout.text()


def test_a_damaged_file_is_one_sentence(qtbot, tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x00" * 16)
    view = AtlasView(AppState())
    qtbot.addWidget(view)
    view.jobs.announce = False
    view.open_atlas(str(bad))
    qtbot.waitUntil(lambda: "not a readable atlas" in view.readout.text(), timeout=20000)


def test_open_filter_click_and_a_context_is_a_door(window_on, qtbot, drawn, atlas_file, monkeypatch):
    w = window_on(str(GPT))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(atlas_file), ""))
    assert w.open_atlas_action.shortcut().toString() == "Ctrl+Shift+A"
    w.open_atlas_action.trigger()
    view = w.views["Atlas"]
    qtbot.waitUntil(lambda: view.atlas is not None, timeout=20000)
    assert len(view.points.data) == 16 and view.finder.list.count() == 16

    view.y_box.setCurrentText("induction")
    y = view.values("induction")
    second, first = sorted(y)[-2:]
    bound = round((first + second) / 2, 3)                 # between the two strongest: the first alone
    view.y_min.setValue(bound)
    assert view.found().sum() == 1 and view.finder.list.count() == 1
    assert view.finder.list.item(0).text().startswith("L3.H3")
    assert view.options.y_min == pytest.approx(bound)
    dimmed = [p.brush().color().alpha() for p in view.points.points()]
    assert dimmed.count(255) == 1

    view.finder.list.itemClicked.emit(view.finder.list.item(0))             # a click in the list
    qtbot.waitUntil(lambda: view.detail is not None, timeout=20000)
    assert view.detail["name"] == "L3.H3" and len(view.detail["top"]) == 4
    heights = view.panel.bars["induction"].opts["height"]
    assert len(heights) == 64 and sum(heights) == pytest.approx(1.0)
    assert "most similar" in view.text.toPlainText()

    ctx = view.detail["top"][0]
    view.panel.text.anchorClicked.emit(QUrl("top:0"))
    detail = w.views.get("Head detail") or w.dock_layout.view("Head detail")
    qtbot.waitUntil(lambda: w.atlas_actions.landed is not None, timeout=60000)
    drawn(detail)
    assert (w.state.layer, w.state.head) == (3, 3)
    assert w.input_bar.text_edit.toPlainText() == w.state.text
    row = ctx["position"] - 1                                      # the atlas framed the ids with [EOS]
    assert f"token {row:,}" in detail.readout.text()
    window_token = ctx["window"][ctx["position"] - ctx["window_start"]]
    assert reading.query_tokens(w.state.trace, w.state.kind)[row] == window_token


def test_another_models_atlas_is_said_and_not_run(window_on, qtbot, atlas_file):
    w = window_on("random-translator")
    w.atlas_actions.open_file(str(atlas_file))
    view = w.views["Atlas"]
    qtbot.waitUntil(lambda: view.atlas is not None, timeout=20000)
    assert "not of the open model" in view.readout.text()
    view.select_head(3, 3)
    qtbot.waitUntil(lambda: view.detail is not None, timeout=20000)
    text = w.state.text
    view.panel.text.anchorClicked.emit(QUrl("top:0"))
    assert "not of the open model" in view.door_note.text() and w.state.text == text


def test_build_stop_resume_and_the_view_opens_it(window_on, qtbot, tmp_path, monkeypatch):
    from attnscope.gui.window import atlas_actions

    w = window_on(str(GPT))
    out = tmp_path / "built.safetensors"
    dialog = w.atlas_actions.build_dialog()
    dialog.length_box.setValue(32)
    dialog.docs_box.setValue(12)
    dialog.top_box.setValue(2)
    dialog.out_edit.setText(str(out))
    # The pass waits after its first document until Stop is pressed: Stop then lands between two
    # documents whatever the machine's speed.
    gate, real = threading.Event(), atlas_actions.build_atlas_file

    def gated(loaded, out, corpus=None, length=None, docs=None, top=32, report=None, stop=None):
        def held(record):
            report(record)
            if record[1] == 1:
                gate.wait(60)
        return real(loaded, out, corpus, length, docs, top, report=held, stop=stop)
    monkeypatch.setattr(atlas_actions, "build_atlas_file", gated)
    dialog.build_button.click()
    qtbot.waitUntil(lambda: dialog.said.text().startswith("1 of 12"), timeout=60000)
    assert "1/12 documents" in w.status_line.busy_label.text()
    dialog.stop_button.click()
    gate.set()
    qtbot.waitUntil(lambda: not w.atlas_actions.jobs.busy, timeout=60000)
    assert "resume" in dialog.said.text() and load_state(out).docs_done == 1
    assert dialog.build_button.isEnabled() and not dialog.stop_button.isEnabled()
    dialog.build_button.click()                                       # the same options resume it
    qtbot.waitUntil(lambda: "Atlas" in w.views and w.views["Atlas"].atlas is not None, timeout=120000)
    assert load_state(out).docs_done == 12 and dialog.said.text().startswith("Built")
    assert w.views["Atlas"].atlas["summary"]["documents"] == 12


def test_the_options_are_kept_for_the_next_view(qtbot, atlas_file):
    from attnscope.gui.view_options import reset_view_options

    first = AtlasView(AppState())
    qtbot.addWidget(first)
    first.x_box.setCurrentText("entropy")
    first.y_min.setValue(0.25)
    second = AtlasView(AppState())
    qtbot.addWidget(second)
    assert (second.options.x, second.options.y_min) == ("entropy", 0.25)
    second.open_atlas(str(atlas_file))
    qtbot.waitUntil(lambda: second.atlas is not None, timeout=20000)
    assert second.plot.getAxis("bottom").labelText == "entropy"
    reset_view_options([second])
    assert (second.options.x, second.options.y_min) == ("previous", 0.0)
    assert second.finder.list.count() == 16


def test_a_contexts_row_is_lined_up_with_the_run_of_its_text():
    from attnscope.gui.window.atlas_actions import aligned_row

    doc = [5, 6, 7, 8, 9, 10]
    assert aligned_row([0] + doc, doc, 3) == 2                       # the atlas framed the ids with a BOS
    assert aligned_row([0] + doc, [1] + doc, 3) == 3                 # both framed alike
    assert aligned_row([0] + doc, doc, 0) is None                    # the framing token: not in the text
    assert aligned_row([0, 5, 6, 7, 8, 9], [5, 66, 67, 6, 7, 8, 9], 4) == 5   # tokenized otherwise before it
    assert aligned_row([0, 5, 6, 7, 8], [1, 2, 3], 4) is None
