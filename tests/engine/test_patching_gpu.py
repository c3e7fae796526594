"""Patching on a GPU (issue 39) equals the CPU's: exact patching of every point and attribution
patching, on a tiny Llama (grouped-query attention) and a tiny T5. Skipped without CUDA."""
import numpy as np
import pytest
import torch

from attnscope.engine.experiments.pairs import PromptPair, frame_pair
from attnscope.engine.experiments.attribution import attribution_patching
from attnscope.engine.experiments.patching import exact_patching, run_to_end
from attnscope.engine.loading.catalog import open_model
from tests.helpers.hf_tiny import tiny_folder

PAIR = PromptPair("the big dog sees the small cat", "the small cat sees the big dog", "id:5", "id:6")
POINTS = {"llama": ("heads", "heads-by-pos", "resid-pre", "attn-out", "mlp-out"),
          "t5": ("heads", "cross-heads-by-pos", "encoder-heads", "resid-pre")}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("arch", ["llama", "t5"])
def test_patching_on_the_gpu_equals_the_cpu(tmp_path, arch):
    folder = str(tiny_folder(tmp_path, arch, seed=3))
    target = "the" if arch == "t5" else None
    out = {}
    for device in ("cpu", "cuda"):
        loaded = open_model(folder, device)
        loaded.model.float()
        pair = frame_pair(loaded, PAIR, target)
        out[device] = (run_to_end(exact_patching(loaded, pair, POINTS[arch])),
                       run_to_end(attribution_patching(loaded, pair, POINTS[arch])))
    for cpu, gpu in zip(out["cpu"], out["cuda"]):
        assert gpu.clean == pytest.approx(cpu.clean, abs=1e-4)
        for point in POINTS[arch]:
            np.testing.assert_allclose(gpu.results[point], cpu.results[point], atol=1e-3, err_msg=point)
