"""Issue 46: recordings whose sites say nonsense are refused as damaged, in one sentence, and a
recording is written only to a .safetensors name (``record --out config.json`` wrote
config.json.safetensors beside it)."""
from __future__ import annotations

import json

import pytest
import torch

from attnscope.engine.traces.recording_file import RecordingError, load_recording, recording_target
from tests.bad_inputs.cases import synthetic_recording


def _one_sentence(err) -> str:
    text = str(err.value)
    assert "\n" not in text and text.strip() and "damaged" in text, text
    return text


def _with_site(path, **change):
    """A valid recording whose first site's description has ``change``."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    synthetic_recording(path, 12)
    with safe_open(str(path), framework="pt") as f:
        meta = json.loads(f.metadata()["attnscope"])
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    meta["sites"][0].update(change)
    save_file(tensors, str(path), metadata={"attnscope": json.dumps(meta)})
    return path


@pytest.mark.parametrize("change", [{"causal": "yes"}, {"causal": 1}, {"window": 1.5}, {"window": "x"},
                                    {"window": True}, {"window": 0}, {"scale": True}, {"scale": "0.5"},
                                    {"scale": -1.0}, {"softcap": "x"}])
def test_a_site_with_a_field_of_the_wrong_kind_is_damaged(tmp_path, change):
    path = _with_site(tmp_path / "r.safetensors", **change)
    with pytest.raises(RecordingError) as err:
        load_recording(path)
    assert next(iter(change)) in _one_sentence(err)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_queries_that_are_not_numbers_are_damaged(tmp_path, bad):
    from safetensors.torch import save_file

    path = synthetic_recording(tmp_path / "r.safetensors", 12)
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        meta, tensors = f.metadata(), {n: f.get_tensor(n) for n in f.keys()}
    tensors["decoder self/1/q"][0, 0, 3, 2] = bad
    save_file(tensors, str(path), metadata=meta)
    with pytest.raises(RecordingError) as err:
        load_recording(path)
    assert "NaN" in _one_sentence(err)


def test_data_bytes_set_to_ff_are_damaged(tmp_path):
    path = synthetic_recording(tmp_path / "r.safetensors", 12)
    data = bytearray(path.read_bytes())
    data[-64:] = b"\xff" * 64                                     # float32 0xffffffff is a NaN
    path.write_bytes(bytes(data))
    with pytest.raises(RecordingError) as err:
        load_recording(path)
    _one_sentence(err)


def test_a_version_that_is_text_is_damaged_not_a_contradiction(tmp_path):
    path = synthetic_recording(tmp_path / "r.safetensors", 12, meta={"version": "1"})
    with pytest.raises(RecordingError) as err:
        load_recording(path)
    text = _one_sentence(err)
    assert "'1'" in text and "reads version" not in text


@pytest.mark.parametrize("name", ["config.json", "model.safetensors.index.json", "weights.pt"])
def test_a_recording_is_written_only_to_a_safetensors_name(tmp_path, name):
    with pytest.raises(RecordingError) as err:
        recording_target(tmp_path / name)
    assert ".safetensors" in str(err.value) and "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_a_folder_is_refused_and_a_bare_name_gets_the_ending(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(RecordingError):
        recording_target(tmp_path / "out")
    assert recording_target(tmp_path / "run") == tmp_path / "run.safetensors"
    assert torch.isfinite(torch.zeros(1)).all()


@pytest.mark.parametrize("name", ["", "."])
def test_record_out_empty_says_the_name_is_empty(tmp_path, name, capsys, monkeypatch):
    """record --out '' said "PosixPath('.') has an empty name" (issue 46)."""
    from attnscope.cli.entry import main

    monkeypatch.chdir(tmp_path)
    assert main(["record", "random-gpt", "--text", "the dog", "--out", name]) == 2
    err = capsys.readouterr().err
    assert "empty name" in err and "PosixPath" not in err and list(tmp_path.iterdir()) == []
