"""A model spread over devices by accelerate (``--device spread``): its layers where they fit,
the rest on the disk, and every view's numbers unchanged.

No machine here has a GPU, so the budget of the one device there is (the CPU) is made
smaller than the model: accelerate then keeps some layers on the disk, loads them into RAM
for each forward, and the seam records each layer where it runs. The same code places
layers over GPUs on a machine that has them (the test marked gpu, skipped without CUDA).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from attnscope.engine.adapters import adapter_for
from attnscope.engine.decoding.session import DecodeSettings, decode_all
from attnscope.engine.loading import placement
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.errors import ModelLoadError
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_sharded import build_model, save_sharded
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    model, tokenizer = build_model("llama", dtype=torch.float32)
    path = save_sharded(model, tokenizer, tmp_path_factory.mktemp("spread") / "llama")
    return path


def _reference(folder):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager", local_files_only=True).eval()


def _budget(monkeypatch, share: float, folder) -> None:
    """The CPU allows itself ``share`` of the model's bytes; no GPU."""
    size = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    monkeypatch.setattr(placement, "device_budgets", lambda: {"cpu": int(share * size)})


@pytest.mark.parametrize("share", [0.6, 0.05])      # some layers on the disk; all of it (the first module too)
def test_a_model_larger_than_the_device_runs_from_the_disk_with_the_same_numbers(folder, monkeypatch, share):
    _budget(monkeypatch, share, folder)
    loaded = open_model(str(folder), "spread")
    assert loaded.spread and loaded.device == torch.device("cpu")
    where = set(loaded.model.hf_device_map.values())
    assert "disk" in where, loaded.model.hf_device_map
    assert "on disk" in loaded.meta["placement"] and "stay off the computing device" in loaded.meta["notes"]
    offload = loaded.model.attnscope_offload.name

    ref = _reference(folder)
    trace = trace_text(loaded, TEXT)
    ids = torch.tensor([loaded.tokenizer(TEXT)["input_ids"]])
    with torch.no_grad():
        expected = torch.stack([a[0] for a in ref(input_ids=ids, output_attentions=True).attentions]).numpy()
    np.testing.assert_allclose(reading.weights(trace, trace.kinds[0]), expected, atol=1e-5)
    for calls in trace.calls.values():                 # recorded where each layer ran
        assert all(c.q.device.type == "cpu" for c in calls)

    prompt = torch.tensor([adapter_for(loaded).prompt_ids(TEXT, loaded.max_len - 1, [])])
    ours = decode_all(loaded, TEXT, DecodeSettings(max_new_tokens=4)).steps[-1].output_ids
    with torch.no_grad():
        theirs = ref.generate(prompt, max_new_tokens=4, do_sample=False, num_beams=1,
                              pad_token_id=0)[0, prompt.shape[1]:].tolist()
    assert ours == theirs[:len(ours)] and ours

    with pytest.raises(ValueError, match="open it again"):
        loaded.to("cpu")
    assert Path(offload).is_dir()      # the disk's share lives as long as the model


def test_spread_with_room_everywhere_keeps_every_weight_in_memory(folder, monkeypatch):
    _budget(monkeypatch, 10.0, folder)
    loaded = open_model(str(folder), "spread")
    assert not loaded.spread        # all of it on one device: accelerate adds no hooks, it can move whole
    assert loaded.meta["placement"] == "spread by accelerate: all of it on cpu"
    assert all(p.device.type == "cpu" for p in loaded.model.parameters())
    assert "stay off the computing device" not in loaded.meta.get("notes", "")


def test_a_model_that_fits_nowhere_is_refused_with_the_numbers(folder, monkeypatch):
    monkeypatch.setattr(placement, "device_budgets", lambda: {"cpu": 1000})
    monkeypatch.setattr(placement.shutil, "disk_usage", lambda _p: type("U", (), {"free": 1000})())
    with pytest.raises(ModelLoadError) as err:
        open_model(str(folder), "spread")
    text = str(err.value)
    assert "RAM:" in text and "disk:" in text and "does not fit" in text and "\n" not in text


def test_our_own_models_given_spread_run_on_one_device():
    loaded = open_model("random-gpt", "spread")
    assert not loaded.spread and loaded.device.type in ("cpu", "cuda", "mps")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_layers_split_between_the_gpu_and_the_ram_are_recorded_where_they_run(folder, monkeypatch):
    """With a GPU, accelerate brings a layer kept in RAM to the GPU for its forward: every
    layer runs, and is recorded, there; the numbers are the CPU reference's."""
    size = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    monkeypatch.setattr(placement, "device_budgets", lambda: {0: int(0.5 * size), "cpu": 10 * size})
    loaded = open_model(str(folder), "spread")
    assert {0, "cpu"} <= set(loaded.model.hf_device_map.values()), loaded.model.hf_device_map
    trace = trace_text(loaded, TEXT)
    devices = {c.q.device.type for calls in trace.calls.values() for c in calls}
    assert devices == {"cuda"}
    ref = _reference(folder)
    ids = torch.tensor([loaded.tokenizer(TEXT)["input_ids"]])
    with torch.no_grad():
        expected = torch.stack([a[0] for a in ref(input_ids=ids, output_attentions=True).attentions]).numpy()
    np.testing.assert_allclose(reading.weights(trace, trace.kinds[0]), expected, atol=1e-5)
    thumbs = reading.thumbnails(trace, trace.kinds[0], 4)
    assert thumbs.pooled.shape[:2] == expected.shape[:2]


def test_the_window_offers_spread_and_reopens_the_model_spread(folder, monkeypatch, qtbot, tmp_path):
    from attnscope.gui.window.main_window import MainWindow

    _budget(monkeypatch, 0.6, folder)
    window = MainWindow(source=str(folder), device="cpu")
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.state.loaded is not None and not window.model_jobs.busy, timeout=60000)
    items = [window.input_bar.device_box.itemText(i) for i in range(window.input_bar.device_box.count())]
    assert "spread" in items and not window.state.loaded.spread
    window.input_bar.device_box.setCurrentText("spread")
    qtbot.waitUntil(lambda: window.state.loaded.spread and not window.model_jobs.busy, timeout=60000)
    assert window.status_line.device_label.text() == "spread" and "on disk" in window.status_line.device_label.toolTip()
    window.input_bar.device_box.setCurrentText("cpu")          # back to one device: opened again, whole
    qtbot.waitUntil(lambda: not window.state.loaded.spread and not window.model_jobs.busy, timeout=60000)
    assert window.status_line.device_label.text() == "cpu"
