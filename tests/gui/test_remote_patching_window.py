"""The window's Patching panel on an ndif: model (ATTNSCOPE_NDIF=local: run here through
nnsight's stand-in for NDIF): Patch sends every head's patching as one job, through the same
engine entry as the CLI (engine.experiments.experiment), and draws what came back, equal to
the local exact patching of the same model; a method that needs the weights here is said in
the panel, once. No real NDIF job is run."""
import numpy as np
import pytest

pytest.importorskip("nnsight")

from tests.helpers.hf_tiny import tiny_folder  # noqa: E402

CLEAN, CORRUPT = "the big dog sees the small cat", "the big cat sees the small dog"


def test_the_patching_panel_patches_an_ndif_model_there(window_on, qtbot, tmp_path, monkeypatch):
    from attnscope.engine.experiments import PromptPair, frame_pair
    from attnscope.engine.experiments.patching import exact_patching, run_to_end
    from attnscope.engine.loading.catalog import open_model

    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")
    folder = tiny_folder(tmp_path, "llama")
    w = window_on(f"ndif:{folder}")
    w.docks["Patching"].show()
    p = w.dock_layout.view("Patching")
    p.clean_edit.setText(CLEAN)
    p.corrupt_edit.setText(CORRUPT)
    qtbot.waitUntil(lambda: p.answer_box.count() > 0 and p.wrong_box.count() > 0, timeout=30000)
    p.what_box.setCurrentText("heads")
    p.method_box.setCurrentIndex(p.method_box.findData("exact"))
    p.run()
    qtbot.waitUntil(lambda: p.result is not None and not p.jobs.busy, timeout=60000)
    result = p.result
    plain = open_model(str(folder), "cpu")
    answers = [f"id:{i}" for i in result.answers]
    ref = run_to_end(exact_patching(plain, frame_pair(plain, PromptPair(CLEAN, CORRUPT, *answers))))
    np.testing.assert_allclose(result.results["heads"], ref.results["heads"], atol=1e-5)
    np.testing.assert_array_equal(p.image.image, result.normalised()["heads"].astype(np.float32))
    assert w.last_error is None

    before = p.result
    p.method_box.setCurrentIndex(p.method_box.findData("dla"))
    p.run()
    qtbot.waitUntil(lambda: not p.jobs.busy and "Direct logit attribution reads" in p.status.text(), timeout=30000)
    assert p.result is before
