"""Issue 58 item 3 and issue 53 part 4: damaged recordings are "the file is damaged: ..." in one
sentence (RecordingError), never "internal error" nor drawn. Before: metadata nested 100,000 deep
gave a RecursionError; bf16 overview pixels in a format-3 file "unsupported ScalarType BFloat16";
an integer mask a thread's traceback; a format-3 file with its row list emptied, or with negative,
zero, huge or duplicated overview sizes, was drawn as a PNG and a pooled NPZ."""
from __future__ import annotations

import json

import pytest
import torch

from attnscope.engine.traces.pooling import bins
from attnscope.engine.traces.recording_file import RecordingError, load_recording
from tests.bad_inputs.cases import synthetic_recording

T, LAYERS, HEADS, DIM = 12, 2, 2, 8
KIND = "decoder self"


def _partial(rows=((8, 12),), overviews=((6, "max"), (12, "max"))) -> tuple[dict, dict]:
    """A valid format-3 description and its tensors: q of ``rows`` only, the overviews pooled."""
    g = torch.Generator().manual_seed(0)
    tensors, sites = {}, []
    for n in range(LAYERS):
        sites.append({"kind": KIND, "layer": n, "scale": DIM ** -0.5, "softcap": None, "window": None,
                      "causal": True, "heads": HEADS})
        tensors[f"{KIND}/{n}/k"] = torch.randn(HEADS, T, DIM, generator=g)
        tensors[f"{KIND}/{n}/lse"] = torch.rand(HEADS, T, generator=g) + 1
        for i, (a, b) in enumerate(rows):
            tensors[f"{KIND}/{n}/rows/{i}/q"] = torch.randn(HEADS, b - a, DIM, generator=g)
    for i, (size, _) in enumerate(overviews):
        n = bins(T, size)
        tensors[f"overview/{i}/pooled"] = torch.rand(LAYERS, HEADS, n, n, generator=g)
        tensors[f"overview/{i}/sink"] = torch.zeros(LAYERS, HEADS, n)
    meta = {"format": "attnscope-recording", "version": 3, "model_name": "synthetic", "family": "hf-llama",
            "source_tokens": [], "target_tokens": [f"t{i}" for i in range(T)], "notes": [], "sites": sites,
            "partial": {"sites": sites, "rows": [list(r) for r in rows],
                        "overviews": [list(o) for o in overviews], "same": {}}}
    return meta, tensors


def _write(path, meta, tensors, raw: str | None = None):
    from safetensors.torch import save_file

    save_file(tensors, str(path), metadata={"attnscope": raw if raw is not None else json.dumps(meta)})
    return path


def _damaged(path) -> str:
    with pytest.raises(RecordingError) as err:
        load_recording(path)
    said = str(err.value)
    assert "\n" not in said and "damaged" in said and "internal" not in said, said
    return said


def test_the_synthetic_partial_recording_opens(tmp_path):
    trace = load_recording(_write(tmp_path / "ok.safetensors", *_partial()))
    assert trace.rows_fetched == [(8, 12)]


def test_metadata_nested_100000_deep_is_damaged(tmp_path):
    meta, tensors = _partial()
    raw = json.dumps(meta)[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    _damaged(_write(tmp_path / "deep.safetensors", meta, tensors, raw))


def test_bf16_overview_pixels_are_damaged(tmp_path):
    meta, tensors = _partial()
    tensors["overview/0/pooled"] = tensors["overview/0/pooled"].to(torch.bfloat16)
    assert "overview/0/pooled" in _damaged(_write(tmp_path / "bf16.safetensors", meta, tensors))


@pytest.mark.parametrize("version", [1, 3])
def test_an_integer_mask_is_damaged(tmp_path, version):
    if version == 3:
        meta, tensors = _partial()
        for n in range(LAYERS):
            tensors[f"{KIND}/{n}/rows/0/mask"] = torch.ones(1, 1, 4, T, dtype=torch.int64)
        path = _write(tmp_path / "mask3.safetensors", meta, tensors)
    else:
        from safetensors import safe_open

        path = synthetic_recording(tmp_path / "mask1.safetensors", T)
        with safe_open(str(path), framework="pt") as f:
            meta, tensors = json.loads(f.metadata()["attnscope"]), {k: f.get_tensor(k) for k in f.keys()}
        tensors["mask/0"] = torch.ones(1, 1, T, T, dtype=torch.int64)
        for site in meta["sites"]:
            site["mask"] = "mask/0"
        path = _write(path, meta, tensors)
    assert "mask" in _damaged(path)


def test_a_partial_file_with_its_row_list_emptied_is_damaged(tmp_path):
    meta, tensors = _partial()
    meta["partial"]["rows"] = []
    assert "rows/0/q" in _damaged(_write(tmp_path / "rows.safetensors", meta, tensors))


def test_a_partial_file_holding_nothing_is_damaged(tmp_path):
    meta, tensors = _partial(rows=(), overviews=())
    _damaged(_write(tmp_path / "nothing.safetensors", meta, tensors))


@pytest.mark.parametrize("sizes", [[-6, 12], [0, 12], [10 ** 30, 12], [2 ** 40, 12], [12, 12], [6, 6]])
def test_overview_sizes_that_no_overview_has_are_damaged(tmp_path, sizes):
    meta, tensors = _partial()
    meta["partial"]["overviews"] = [[s, "max"] for s in sizes]
    said = _damaged(_write(tmp_path / "sizes.safetensors", meta, tensors))
    assert "overview" in said
