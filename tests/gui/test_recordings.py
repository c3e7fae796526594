"""A Run's recording as one file: saved, opened with no model, drawn by every view exactly as
the Run's own trace; a damaged or foreign file is refused in one sentence."""
import io
import json
import struct
from contextlib import redirect_stdout

import numpy as np
import pytest

from attnscope.engine.loading.catalog import open_model
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.recording_file import RecordingError, is_recording, load_recording, save_recording
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_tiny import tiny_folder
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat and the cat sees the dog"


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    root = tmp_path_factory.mktemp("rec")
    return {"translator": trace_text(random_model("translator", seed=3), TEXT, target="der hund"),
            "llama": trace_text(open_model(str(tiny_folder(root, "llama")), "cpu"), TEXT),     # with the kernel's lse
            "t5": trace_text(open_model(str(tiny_folder(root, "t5")), "cpu"), TEXT, target="the dog"),   # T5's bias
            "gemma2": trace_text(open_model(str(tiny_folder(root, "gemma2")), "cpu"), TEXT)}  # softcap, window


@pytest.mark.parametrize("name", ["translator", "llama", "t5", "gemma2"])
def test_a_recording_round_trips_to_the_same_trace(traces, tmp_path, name):
    trace = traces[name]
    path = save_recording(trace, tmp_path / "r")
    assert path.name == "r.safetensors" and is_recording(path)
    back = load_recording(path)
    assert back.kinds == trace.kinds and back.source_tokens == trace.source_tokens
    assert back.target_tokens == trace.target_tokens and back.model_name == trace.model_name
    for kind in trace.kinds:
        np.testing.assert_array_equal(reading.weights(back, kind), reading.weights(trace, kind))
    if name == "llama":
        assert back.calls["decoder self"][0].lse is not None


def _rewrite_meta(path, tmp_path, change):
    """A copy of ``path`` whose attnscope description is changed by ``change(meta)``."""
    from safetensors.torch import load_file, save_file
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        meta = json.loads(f.metadata()["attnscope"])
    change(meta)
    out = tmp_path / "changed.safetensors"
    save_file(load_file(str(path)), str(out), metadata={"attnscope": json.dumps(meta)})
    return out


def test_damaged_and_foreign_files_are_refused_in_one_sentence(traces, tmp_path):
    from safetensors.torch import save_file
    import torch
    good = save_recording(traces["translator"], tmp_path / "good")
    data = good.read_bytes()
    cases = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "random": bytes(range(256)) * 8,
        "huge header": struct.pack("<Q", 2**40) + b"{}",
    }
    for name, blob in cases.items():
        bad = tmp_path / f"{name}.safetensors"
        bad.write_bytes(blob)
        with pytest.raises(RecordingError, match=r"Copy it again|damaged|not a readable"):
            load_recording(bad)
        assert not is_recording(bad)
    foreign = tmp_path / "weights.safetensors"
    save_file({"w": torch.zeros(2)}, str(foreign))
    with pytest.raises(RecordingError, match="not an attnscope recording"):
        load_recording(foreign)
    with pytest.raises(RecordingError, match="version 99"):
        load_recording(_rewrite_meta(good, tmp_path, lambda m: m.update(version=99)))
    with pytest.raises(RecordingError, match="fewer than its"):
        load_recording(_rewrite_meta(good, tmp_path, lambda m: m.update(source_tokens=m["source_tokens"] * 3,
                                                                         pieces={})))
    with pytest.raises(RecordingError, match="does not know"):
        load_recording(_rewrite_meta(good, tmp_path, lambda m: m["sites"][0].update(kind="sideways")))


def test_record_then_export_from_the_recording_with_no_model(tmp_path):
    from attnscope.cli.entry import main
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["record", "random-gpt", "--text", TEXT, "--out", str(tmp_path / "r.safetensors")]) == 0
    assert json.loads(out.getvalue())["kinds"]["decoder self"][0] == 2
    with redirect_stdout(io.StringIO()):
        assert main(["export", str(tmp_path / "r.safetensors"), "--out", str(tmp_path / "o"), "--format", "npz"]) == 0
    from attnscope.engine.inspection.export import load_npz
    exported = load_npz(tmp_path / "o" / "trace.npz")
    np.testing.assert_allclose(reading.weights(exported, "decoder self"),
                               reading.weights(trace_text(random_model("gpt"), TEXT), "decoder self"), atol=1e-6)
    (tmp_path / "t.txt").write_bytes(b"\xff\xfe not utf-8")
    assert main(["record", "random-gpt", "--text-file", str(tmp_path / "t.txt"), "--out", str(tmp_path / "x")]) == 2


def test_the_window_saves_and_opens_a_recording(window, qtbot, tmp_path, monkeypatch, drawn):
    from PySide6.QtWidgets import QFileDialog
    target = tmp_path / "run.safetensors"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    window.recordings.save_dialog()
    qtbot.waitUntil(lambda: target.exists() and not window.save_jobs.busy, timeout=20000)
    before = window.state.trace
    window.state.set_trace(None)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(target), ""))
    window.recordings.open_dialog()
    qtbot.waitUntil(lambda: window.state.trace is not None, timeout=20000)
    drawn(window.grid)
    for kind in before.kinds:
        np.testing.assert_array_equal(reading.weights(window.state.trace, kind), reading.weights(before, kind))
    assert "no model" in window.statusBar().currentMessage()
