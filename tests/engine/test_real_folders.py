"""Models kept the way researchers keep them (issue 31): sharded, in bfloat16, in the Hugging
Face cache, opened offline by hub id and by folder through the paths a user takes.

Tiny random models of three architectures (Llama with grouped-query attention, GPT-2, BERT)
are saved in shards of 200 KB, as safetensors (transformers' save_pretrained) and as PyTorch
.bin files, in bfloat16, and put into a fake hub cache laid out as huggingface_hub writes
it (tests/helpers/hf_sharded.py). Each is opened by id with HF_HUB_OFFLINE=1 and checked against
transformers' own eager model: logits close in bfloat16, and, on a float32 copy, every
traced attention weight within 1e-5 of ``output_attentions``. Nothing is downloaded.
"""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

import attnscope.engine.runtime.free_memory as free_memory
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.loading.progress import LoadCancelled
from attnscope.engine.errors import ModelLoadError
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_sharded import build_model, put_in_cache, save_sharded
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat"
CASES = [("llama", "safetensors"), ("gpt2", "safetensors"), ("bert", "safetensors"), ("llama", "bin"), ("bert", "bin")]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """{(arch, fmt): folder} saved sharded in bfloat16, and the fake hub cache holding them all."""
    root = tmp_path_factory.mktemp("real-folders")
    folders = {}
    for arch, fmt in CASES:
        model, tokenizer = build_model(arch)
        folders[arch, fmt] = save_sharded(model, tokenizer, root / f"{arch}-{fmt}", fmt)
        put_in_cache(folders[arch, fmt], root / "hub", f"tiny-org/{arch}-{fmt}")
    return {"folders": folders, "cache": root / "hub", "root": root}


@pytest.fixture
def offline_cache(store, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(store["cache"]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return store


def _reference(folder, role, dtype):
    """transformers' own model of the folder, eager attention, in ``dtype``."""
    from transformers import AutoModel, AutoModelForCausalLM

    maker = AutoModel if role == "encoder" else AutoModelForCausalLM
    return maker.from_pretrained(str(folder), attn_implementation="eager", dtype=dtype, local_files_only=True).eval()


@pytest.mark.parametrize("arch,fmt", CASES)
def test_opened_by_hub_id_offline_equals_transformers(offline_cache, arch, fmt):
    loaded = open_model(f"tiny-org/{arch}-{fmt}", "cpu")
    folder = offline_cache["folders"][arch, fmt]
    assert loaded.name == f"tiny-org/{arch}-{fmt}"
    assert {p.dtype for p in loaded.model.parameters()} == {torch.bfloat16}   # the checkpoint's own dtype
    enc = loaded.tokenizer(TEXT, return_tensors="pt")
    ref16 = _reference(folder, loaded.role, torch.bfloat16)
    with torch.no_grad():
        ours, theirs = loaded.model(**enc), ref16(**enc)
    key = "last_hidden_state" if loaded.role == "encoder" else "logits"
    torch.testing.assert_close(ours[key].float(), theirs[key].float(), atol=3e-2, rtol=3e-2)
    # every weight as stored: a float32 copy of ours equals transformers' float32 load exactly
    ours32 = copy.deepcopy(loaded)
    ours32.model.float()
    ref32 = _reference(folder, loaded.role, torch.float32)
    theirs_params = dict(ref32.named_parameters())
    for name, p in ours32.model.named_parameters():
        assert torch.equal(p, theirs_params[name]), name
    trace = trace_text(ours32, TEXT)
    with torch.no_grad():
        out = ref32(**enc, output_attentions=True)
    expected = torch.stack([a[0] for a in out.attentions]).numpy()
    np.testing.assert_allclose(reading.weights(trace, trace.kinds[0]), expected, atol=1e-5)


def test_a_folder_and_its_cached_id_open_the_same(offline_cache):
    by_folder = open_model(str(offline_cache["folders"]["llama", "safetensors"]), "cpu")
    by_id = open_model("tiny-org/llama-safetensors", "cpu")
    assert by_id.meta["source"] == "tiny-org/llama-safetensors"
    for (n, a), (_, b) in zip(by_folder.model.named_parameters(), by_id.model.named_parameters()):
        assert torch.equal(a, b), n


def test_hf_home_and_the_default_cache_are_found(store, monkeypatch, tmp_path):
    from attnscope.engine.loading.hub_cache import cache_dir

    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert cache_dir() == tmp_path / "hf" / "hub"
    put_in_cache(store["folders"]["gpt2", "safetensors"], tmp_path / "hf" / "hub", "someone/gpt2-home")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert open_model("someone/gpt2-home", "cpu").role == "decoder"
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "huggingface" / "hub"


def test_an_id_that_is_not_cached_offline_says_where_it_looked(offline_cache):
    with pytest.raises(ModelLoadError) as err:
        open_model("nobody/not-here", "cpu")
    text = str(err.value)
    assert "nobody/not-here" in text and str(offline_cache["cache"]) in text and "offline" in text
    assert "\n" not in text


def test_cli_generate_and_export_by_id_offline(offline_cache, tmp_path, capsys):
    from attnscope.cli.entry import main

    assert main(["generate", "tiny-org/llama-safetensors", "the dog", "--max-new-tokens", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "tiny-org/llama-safetensors" and len(out["output_tokens"]) == 3
    assert main(["export", "tiny-org/bert-bin", "--text", TEXT, "--out", str(tmp_path / "x"), "--format", "npz"]) == 0
    captured = capsys.readouterr()
    assert (tmp_path / "x" / "trace.npz").exists() and captured.err == ""   # no bar off a terminal
    folder = str(offline_cache["folders"]["gpt2", "safetensors"])
    assert main(["generate", folder, "the dog", "--max-new-tokens", "2"]) == 0


def test_progress_is_determinate_and_a_stop_keeps_nothing(offline_cache):
    records = []
    loaded = open_model("tiny-org/llama-safetensors", "cpu", progress=records.append)
    fractions = [r.fraction for r in records]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert any("tensor" in r.text for r in records) and any("KiB of" in r.text for r in records)
    assert loaded is not None
    for after in (1, 5, 20):   # stopped before, while and after transformers builds the model
        seen = []
        with pytest.raises(LoadCancelled, match="cancelled"):
            open_model("tiny-org/llama-safetensors", "cpu", progress=seen.append, stop=lambda: len(seen) >= after)
        assert len(seen) == after


def test_float16_on_the_cpu_is_held_in_float32_with_a_note(tmp_path):
    model, tokenizer = build_model("gpt2", dtype=torch.float16)
    folder = save_sharded(model, tokenizer, tmp_path / "gpt2-fp16")
    loaded = open_model(str(folder), "cpu")
    assert {p.dtype for p in loaded.model.parameters()} == {torch.float32}
    assert "float16" in loaded.meta["notes"] and "float32" in loaded.meta["notes"]


def test_the_memory_check_uses_the_headers_and_names_the_numbers(store, monkeypatch):
    from attnscope.engine.loading import hf

    folder = store["folders"]["llama", "safetensors"]
    weights = hf.find_weights(folder)
    assert weights.stored_bytes == sum(p.stat().st_size for p in folder.glob("*.safetensors")) - sum(
        8 + int.from_bytes(p.read_bytes()[:8], "little") for p in folder.glob("*.safetensors"))
    assert hf.memory_needed(weights, torch.bfloat16) == weights.stored_bytes          # mapped, not copied
    assert hf.memory_needed(weights, torch.float32) == 3 * weights.stored_bytes       # cast copy + stored bytes
    monkeypatch.setattr(free_memory, "available_memory", lambda: 100_000)
    with pytest.raises(ModelLoadError) as err:
        open_model(str(folder), "cpu")
    text = str(err.value)
    assert "million parameters in 5 shards, held in bfloat16" in text and "is free here" in text, text


def test_broken_shards_and_indexes_get_one_sentence(store, tmp_path):
    import shutil

    good = store["folders"]["llama", "safetensors"]
    index = json.loads((good / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))

    def variant(name, change):
        folder = tmp_path / name
        shutil.copytree(good, folder)
        change(folder)
        return folder

    def write_index(folder, text):
        (folder / "model.safetensors.index.json").write_text(text)

    outside = dict(index, weight_map={**index["weight_map"], next(iter(index["weight_map"])): "../elsewhere.safetensors"})
    first, *_ = index["weight_map"]
    raw = json.dumps(index)
    dup = raw.replace('"weight_map": {', '"weight_map": {' + json.dumps(first) + ': ' + json.dumps(shards[0]) + ', ', 1)
    moved = dict(index, weight_map={**index["weight_map"], first: shards[1] if index["weight_map"][first] != shards[1]
                                    else shards[0]})
    cases = {
        "outside": (lambda f: write_index(f, json.dumps(outside)), "outside the model folder"),
        "missing": (lambda f: (f / shards[1]).unlink(), f"{shards[1]} is missing"),
        "truncated": (lambda f: (f / shards[2]).write_bytes((good / shards[2]).read_bytes()[:-1000]), "truncated"),
        "disagrees": (lambda f: write_index(f, json.dumps(moved)), "does not hold it"),
        "twice": (lambda f: write_index(f, dup), "twice"),
    }
    for name, (change, words) in cases.items():
        folder = variant(name, change)
        with pytest.raises(ModelLoadError) as err:
            open_model(str(folder), "cpu")
        text = str(err.value)
        assert words in text and str(folder) in text and "\n" not in text, (name, text)


def test_the_cache_lists_models_with_size_architecture_and_whether_they_open(offline_cache, tmp_path):
    from attnscope.engine.loading.cache_listing import cached_models

    broken = put_in_cache(offline_cache["folders"]["gpt2", "safetensors"], offline_cache["cache"], "tiny-org/broken")
    next(broken.glob("model-00002-*")).unlink()
    try:
        listed = {m.repo_id: m for m in cached_models()}
    finally:
        import shutil
        shutil.rmtree(offline_cache["cache"] / "models--tiny-org--broken")
    assert {f"tiny-org/{a}-{f}" for a, f in CASES} <= set(listed)
    llama = listed["tiny-org/llama-safetensors"]
    assert llama.architecture == "llama" and llama.problem is None and llama.size_bytes > 500_000
    assert listed["tiny-org/broken"].problem and "missing" in listed["tiny-org/broken"].problem


def test_load_progress_never_goes_back_even_when_said_anew():
    from attnscope.engine.loading.progress import Reporter
    seen = []
    reporter = Reporter("m", seen.append)
    reporter.report(0.5, "half")
    reporter.report(0.1, "a file done", force=True)      # said, at the fraction already shown
    reporter.report(0.2, "lower, not forced")             # not said
    assert [(r.fraction, r.text) for r in seen] == [(0.5, "half"), (0.5, "a file done")]
