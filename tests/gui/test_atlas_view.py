"""The Atlas view on the bundled GPT's atlas: opened from its file in a worker, the scatter of
every head, a click on the induction head showing its contexts and Q/K projection, and an
atlas of another model said, not mixed."""
from __future__ import annotations

from pathlib import Path

import pytest

from attnscope.engine.atlas import build_atlas
from attnscope.engine.loading.catalog import open_model
from attnscope.gui.state import AppState
from attnscope.gui.views.atlas import AtlasView

GPT = Path(__file__).resolve().parents[2] / "resources" / "checkpoints" / "gpt.safetensors"


@pytest.fixture(scope="module")
def atlas_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("atlas") / "gpt.safetensors"
    build_atlas(open_model(str(GPT), "cpu"), path, length=96, docs=2, top=4, samples=32)
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
