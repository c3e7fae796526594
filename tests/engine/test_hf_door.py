"""The doors of a Hugging Face folder (issue 57): the check at open compares the weights a trace
would draw, not only each layer's output; transformers' own serialised configs (infinities written
as {"__float__": "Infinity"}) open; whole-number tensors open where the model owns them and are
refused where it computes with floats."""
import json

import pytest
import torch

from attnscope.engine.errors import HFModelError, ModelLoadError
from attnscope.engine.loading.catalog import open_model
from tests.helpers.hf_tiny import tiny_folder


def one_sentence(message: str) -> bool:
    return "\n" not in message and message.rstrip().endswith(".") and "Traceback" not in message


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return tiny_folder(tmp_path_factory.mktemp("door"), "llama")


def test_weights_drawn_otherwise_than_computed_are_refused_at_open(llama, monkeypatch):
    """A recording that lost causality: every layer's output still equals eager's (the kernel ran
    causal), but the weights a trace would draw see future keys: refused with the numbers."""
    import attnscope.engine.seam.hf_attention as hf

    seen = hf._Discovery.see

    def see(self, call):
        seen(self, call)
        kept = self.calls[id(call.module)]
        kept.causal, kept.mask = False, None
    monkeypatch.setattr(hf._Discovery, "see", see)
    with pytest.raises(HFModelError) as err:
        open_model(str(llama), "cpu")
    message = str(err.value)
    assert "does not draw the attention it computes" in message and "weights are up to" in message
    assert one_sentence(message)


def test_the_weight_check_passes_a_plain_model(llama):
    loaded = open_model(str(llama), "cpu")
    assert not loaded.meta.get("notes")


def test_a_config_with_transformers_own_infinity_opens(llama, tmp_path):
    """transformers writes inf as {"__float__": "Infinity"} and reads it back so; so does attnscope
    (Mamba-2's time_step_limit is (0, inf) by default)."""
    from attnscope.engine.loading.check import hf_config

    raw = json.loads((llama / "config.json").read_text())
    raw["rope_parameters"] = {**(raw.get("rope_parameters") or {}), "rope_type": "default", "rope_theta": 10000.0}
    config = hf_config({**raw, "model_type": "falcon_h1", "time_step_limit": [0.0, {"__float__": "Infinity"}]}, "x")
    assert config.time_step_limit == (0.0, float("inf"))


def _with_integer(folder, tmp_path, name: str):
    import shutil

    from safetensors.torch import load_file, save_file

    out = tmp_path / "copy"
    shutil.copytree(folder, out)
    weights = load_file(str(out / "model.safetensors"))
    weights[name] = weights[name].long()
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def test_whole_numbers_where_the_model_computes_with_floats_are_refused(llama, tmp_path):
    folder = _with_integer(llama, tmp_path, "model.norm.weight")
    with pytest.raises(ModelLoadError) as err:
        open_model(str(folder), "cpu")
    assert "not floating point" in str(err.value) and "model.norm.weight" in str(err.value)
    assert one_sentence(str(err.value))


def test_a_router_table_of_whole_numbers_opens(tmp_path):
    """DeepSeek-V4's hash router: tid2eid[token] -> experts, a long buffer of the model's own."""
    from attnscope.engine.loading.build import _check_integers
    from attnscope.engine.loading.describe import Tensor, WeightFiles

    model = torch.nn.Module()
    model.register_buffer("tid2eid", torch.zeros(4, 2, dtype=torch.long))
    model.w = torch.nn.Parameter(torch.zeros(2))
    files = WeightFiles(tmp_path, "safetensors", ("model.safetensors",), None,
                        {"tid2eid": Tensor("I64", 8, "model.safetensors"), "w": Tensor("F32", 2, "model.safetensors")})
    _check_integers("x", files, model)                   # the model's own: no refusal
    files = WeightFiles(tmp_path, "safetensors", ("model.safetensors",), None,
                        {"w": Tensor("I64", 2, "model.safetensors")})
    with pytest.raises(ModelLoadError):
        _check_integers("x", files, model)
