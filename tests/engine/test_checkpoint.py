"""Checkpoints round-trip exactly, nanoGPT files load, and every bad file is refused clearly."""
import json
import os

import pytest
import torch

from attnscope.engine.loading.checkpoint import CheckpointError, checkpoint_metadata, load_checkpoint, save_checkpoint
from attnscope.engine.loading.demo import random_model


def logits(loaded, ids=(7, 8, 9, 10)):
    x = torch.tensor([list(ids)])
    with torch.no_grad():
        if loaded.family == "translator":
            return loaded.model(x, x).logits
        if loaded.family == "gpt":
            return loaded.model(x).logits
        return loaded.model(x).hidden


@pytest.mark.parametrize("family", ["translator", "gpt", "bert"])
def test_round_trip_gives_the_same_outputs(tmp_path, family):
    loaded = random_model(family, seed=3)
    path = save_checkpoint(loaded, tmp_path / f"{family}.safetensors", training={"steps": 12, "corpus": "test"})
    back = load_checkpoint(path)
    assert back.family == family and back.name == loaded.name
    assert back.meta["training"] == {"steps": 12, "corpus": "test"}
    assert back.tokenizer.to_json() == loaded.tokenizer.to_json()
    assert torch.equal(logits(back), logits(loaded))
    assert not (tmp_path / f"{family}.safetensors.part").exists()


def test_tied_weights_stay_tied(tmp_path):
    loaded = random_model("gpt")
    back = load_checkpoint(save_checkpoint(loaded, tmp_path / "g.safetensors"))
    assert back.model.lm_head.weight.data_ptr() == back.model.transformer.wte.weight.data_ptr()


def nanogpt_file(tmp_path, compiled=False):
    """A checkpoint in nanoGPT's layout, built from our GPT by renaming into it."""
    loaded = random_model("gpt", seed=5)
    c = loaded.model.config
    state = {("_orig_mod." if compiled else "") + k: v for k, v in loaded.model.state_dict().items()}
    for i in range(c.n_layer):  # old nanoGPT versions saved the causal mask as a buffer
        state[f"transformer.h.{i}.attn.bias"] = torch.tril(torch.ones(1, 1, c.block_size, c.block_size))
    model_args = dict(n_layer=c.n_layer, n_head=c.n_head, n_embd=c.n_embd, block_size=c.block_size,
                      bias=c.bias, vocab_size=c.vocab_size, dropout=0.0)
    path = tmp_path / "ckpt.pt"
    torch.save({"model": state, "model_args": model_args, "iter_num": 100, "best_val_loss": 1.5}, path)
    return loaded, path


@pytest.mark.parametrize("compiled", [False, True])
def test_nanogpt_layout_loads_with_the_same_logits(tmp_path, compiled):
    original, path = nanogpt_file(tmp_path, compiled)
    loaded = load_checkpoint(path)
    assert loaded.family == "gpt" and "tokenizer" in loaded.meta["notes"]
    assert torch.equal(logits(loaded), logits(original))
    assert loaded.tokenizer.encode("ab") == [97, 98][: len(loaded.tokenizer.encode("ab"))]


def test_attnscope_pt_layout(tmp_path):
    loaded = random_model("translator", seed=1)
    path = tmp_path / "model.pth"
    torch.save({"attnscope": checkpoint_metadata(loaded), "model": loaded.model.state_dict()}, path)
    assert torch.equal(logits(load_checkpoint(path)), logits(loaded))


# ---- bad files -----------------------------------------------------------------------
@pytest.fixture
def good(tmp_path):
    return save_checkpoint(random_model("gpt"), tmp_path / "good.safetensors")


def rewrite(path, out, meta=None, tensors=None):
    from safetensors import safe_open
    from safetensors.torch import save_file
    with safe_open(str(path), framework="pt") as f:
        m, t = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    m.update(meta or {})
    save_file(tensors(t) if tensors else t, str(out), metadata=m)
    return out


def refused(path, *phrases):
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(path)
    for phrase in phrases:
        assert phrase in str(err.value)
    assert "Traceback" not in str(err.value)
    return str(err.value)


def test_not_a_checkpoint(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello, I am a text file")
    refused(p, "not a checkpoint", ".safetensors")
    refused(tmp_path / "absent.safetensors", "No such file")


def test_truncated_safetensors(tmp_path, good):
    data = good.read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[: len(data) // 2])
    refused(cut, "damaged or truncated")


def test_truncated_torch_file(tmp_path):
    _, path = nanogpt_file(tmp_path)
    data = path.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) // 3])
    refused(cut, "damaged or truncated")


def test_foreign_safetensors_without_our_metadata(tmp_path):
    from safetensors.torch import save_file
    p = tmp_path / "model.safetensors"
    save_file({"w": torch.zeros(2)}, str(p))
    refused(p, "Hugging Face", "folder")


def test_unknown_family(tmp_path, good):
    refused(rewrite(good, tmp_path / "x.safetensors", {"family": "mamba"}), "unknown model family 'mamba'")


def test_newer_format_version(tmp_path, good):
    refused(rewrite(good, tmp_path / "x.safetensors", {"format_version": "9"}), "newer attnscope", "Update")


def test_missing_and_unexpected_tensors(tmp_path, good):
    def drop(t):
        t.pop("transformer.ln_f.weight")
        t["extra.weight"] = torch.zeros(1)
        return t
    refused(rewrite(good, tmp_path / "x.safetensors", tensors=drop), "missing tensors transformer.ln_f.weight",
            "unexpected tensors extra.weight")


def test_shape_mismatch(tmp_path, good):
    def grow(t):
        t["transformer.ln_f.weight"] = torch.ones(3)
        return t
    refused(rewrite(good, tmp_path / "x.safetensors", tensors=grow), "shapes do not match", "transformer.ln_f.weight")


def test_invalid_config(tmp_path, good):
    refused(rewrite(good, tmp_path / "x.safetensors", {"config": json.dumps({"bogus": 1})}), "config")


class Payload:
    """Unpickling this would call os.system: a checkpoint that runs code."""
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))


def test_pickle_that_needs_code_is_refused_and_not_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "evil.pt"
    torch.save({"model": Payload()}, p)
    message = refused(p, "needs code", "never runs", "it calls posix.system")
    assert not (tmp_path / "pwned.txt").exists()
    assert "weights_only" not in message   # torch's own advice would run the file's code


@pytest.mark.parametrize("data", [b"\x80\x04" + bytes(range(256)) * 8,           # a pickle torch refuses
                                  b"\x80\xac" + bytes(range(255, -1, -1)) * 8])   # no pickle at all
def test_bytes_that_are_no_torch_checkpoint_are_refused_without_warnings(tmp_path, data):
    """Not called code (nothing in them calls anything), no advice to turn the safe loader
    off, and nothing on stderr from torch before the refusal."""
    import warnings

    p = tmp_path / "weights.pt"
    p.write_bytes(data)
    with warnings.catch_warnings(record=True) as caught:   # the filters as the app has them
        message = refused(p, "weights.pt", "Save only the tensors")
    assert "needs code" not in message and "weights_only" not in message
    assert [str(w.message) for w in caught] == []


def test_bare_state_dict_is_explained(tmp_path):
    p = tmp_path / "weights.pt"
    torch.save(random_model("gpt").model.state_dict(), p)
    refused(p, "bare state dict", "nanoGPT")
