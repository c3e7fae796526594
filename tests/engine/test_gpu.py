"""On a GPU: a Run records on the device, only drawn tiles come to the host, and the numbers
equal the CPU's. Skipped without CUDA (marked ``gpu``); the device list names each GPU."""
import numpy as np
import pytest
import torch

from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat and the cat sees the dog"


def test_each_gpu_is_offered_by_its_index(monkeypatch):
    from attnscope.engine.runtime import device
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
        np.testing.assert_allclose(reading.weights(gpu, kind), reading.weights(cpu, kind), atol=1e-4)
    assert isinstance(reading.thumbnails(gpu, "decoder self", 4).pooled, np.ndarray)


def _float64_scores(call, head: int, rows: slice) -> torch.Tensor:
    """(r, Tk) float64 scores of the recorded q and k with the call's own additive terms (-inf masked)."""
    q = call.q[0, head, rows].double()
    k = call.k[0, call.kv_head(head)].double()
    exact = (q @ k.T) * call.scale
    if call.softcap:
        exact = call.softcap * torch.tanh(exact / call.softcap)
    terms = call.terms(0, [head], rows)
    return exact if terms is None else exact + terms[0, 0].double()


CUDA_CASES = [("llama", torch.bfloat16), ("llama", torch.float32), ("mistral", torch.bfloat16),
              ("t5", torch.float32), ("gemma2", torch.bfloat16)]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("arch,dtype", CUDA_CASES)
def test_on_cuda_the_kernels_log_sum_exp_and_every_view_equal_float64(tmp_path, arch, dtype):
    """The log-sum-exp comes from the CUDA kernel (flash for a plain half-precision call,
    memory-efficient with the mask or bias otherwise; none for Gemma 2's softcap), and every
    weight drawn from it (tiles, the pooled overview, Head detail's viewport, pooled on the GPU)
    equals float64 maths on the recorded queries and keys."""
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.traces.recorded import RecordedTrace
    from attnscope.engine.traces.viewport import viewport_weights
    from tests.helpers.hf_tiny import tiny_folder

    loaded = open_model(str(tiny_folder(tmp_path, arch)), "cuda")
    loaded.model.to(dtype)
    trace = trace_text(loaded, TEXT, target="the dog" if arch == "t5" else None)
    for kind in trace.kinds:
        lazy = RecordedTrace(trace.calls, model_name=trace.model_name, family=trace.family,
                             source_tokens=trace.source_tokens, target_tokens=trace.target_tokens)
        L, H, tq, tk = lazy.shape(kind)
        call = lazy.call(kind, L - 1)
        assert call.q.is_cuda and lazy.device.type == "cuda"
        if arch != "gemma2":
            assert call.lse is not None, f"{arch} {kind}: no log-sum-exp from the kernel"
        exact = _float64_scores(call, H - 1, slice(0, tq))                  # (Tq, Tk)
        want = torch.nan_to_num(torch.softmax(exact, -1), nan=0.0).cpu()
        if call.lse is not None:
            lse64 = torch.logsumexp(exact, -1)
            assert (call.lse[0, H - 1].double() - lse64).abs().max() < 1e-5
        got = torch.from_numpy(reading.tile(lazy, kind, L - 1, H - 1, slice(0, tq), slice(0, tk))).double()
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6, rtol=1e-5)
        th = reading.thumbnails(lazy, kind, 4)
        assert th.pooled.shape[:2] == (L, H)
        view = viewport_weights(lazy, kind, L - 1, H - 1, "one head", (0, tq), (0, tk), (tq, tk))
        np.testing.assert_allclose(view, want.numpy(), atol=1e-6, rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_gpu_block_is_sized_from_the_gpus_free_memory_and_the_numbers_do_not_move():
    from attnscope.engine.runtime import blocks
    from attnscope.engine.traces.recorded import RecordedTrace

    free = blocks.free_bytes(torch.device("cuda"))
    assert free is not None and free > 0
    size = blocks.score_block_bytes(torch.device("cuda"))
    assert blocks.GPU_MIN_BYTES <= size <= blocks.GPU_MAX_BYTES
    trace = trace_text(random_model("gpt", seed=2).to("cuda"), TEXT)

    def pooled():
        lazy = RecordedTrace(trace.calls, model_name="g", family="gpt", source_tokens=[],
                             target_tokens=trace.target_tokens)
        return reading.thumbnails(lazy, "decoder self", 4).pooled

    with blocks.forced(1):
        small = pooled()
    np.testing.assert_allclose(pooled(), small, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_on_cuda_the_overviews_fused_maxima_equal_the_torch_path(tmp_path, monkeypatch, dtype):
    """Where Triton is there, a causal overview's block maxima come from one kernel that never
    writes the scores (engine.traces.block_max); its pixels equal the torch path's."""
    pytest.importorskip("triton")
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.traces import block_max
    from attnscope.engine.traces.recorded import RecordedTrace
    from tests.helpers.hf_tiny import tiny_folder

    loaded = open_model(str(tiny_folder(tmp_path, "llama", positions=512)), "cuda")
    loaded.model.to(dtype)
    trace = trace_text(loaded, " ".join([TEXT] * 30))                      # some 360 tokens
    call = trace.call("decoder self", 1)
    assert call.lse is not None and block_max.applies(call)

    def fresh():
        return RecordedTrace(trace.calls, model_name="m", family="llama", source_tokens=[],
                             target_tokens=trace.target_tokens)
    for size in (7, 64):
        fused = reading.thumbnails(fresh(), "decoder self", size)
        with monkeypatch.context() as m:
            m.setattr(block_max, "applies", lambda call: False)
            plain = reading.thumbnails(fresh(), "decoder self", size)
        np.testing.assert_allclose(fused.pooled, plain.pooled, atol=1e-6, rtol=1e-5)
        np.testing.assert_allclose(fused.sink, plain.sink, atol=1e-6, rtol=1e-5)
