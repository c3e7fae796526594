"""On a GPU: a Run records on the device, only drawn tiles come to the host, and the numbers
equal the CPU's. Skipped without CUDA (marked ``gpu``); the device list names each GPU."""
import numpy as np
import pytest
import torch

from engine.loading.demo import random_model
from engine.traces.tracing import trace_text

TEXT = "the big dog sees the small cat and the cat sees the dog"


def test_each_gpu_is_offered_by_its_index(monkeypatch):
    from engine.runtime import device
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert device.available_devices()[:2] == ["cuda:0", "cuda:1"]
    assert str(device.pick_device("cuda:1")) == "cuda:1"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_run_on_the_gpu_records_there_and_equals_the_cpu():
    cpu = trace_text(random_model("gpt", seed=2), TEXT)
    loaded = random_model("gpt", seed=2).to("cuda")
    gpu = trace_text(loaded, TEXT)
    assert gpu.calls["decoder self"][0].q.device.type == "cuda"
    for kind in cpu.kinds:
        np.testing.assert_allclose(gpu.weights(kind), cpu.weights(kind), atol=1e-4)
    assert isinstance(gpu.thumbnails("decoder self", 4).pooled, np.ndarray)
