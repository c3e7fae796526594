"""A transformers model already in memory, opened by attnscope.load(model, tokenizer=...)
through the same checks and door as its folder (engine/loading/in_memory.py, issue 55): its
trace equals the CLI's export of the same model saved as a folder."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest
import torch

import attnscope
from attnscope.engine.errors import ModelLoadError
from tests.helpers.hf_tiny import tiny_folder

TEXT = "the cat sat on the mat and the dog sat too"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_folder(tmp_path_factory.mktemp("mem"), "llama")


def _in_memory(folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


def test_an_in_memory_llama_traces_as_the_clis_export_of_its_folder(folder, tmp_path):
    from attnscope.cli.entry import main

    model, tokenizer = _in_memory(folder)
    loaded = attnscope.load(model, device="cpu", tokenizer=tokenizer)
    ours = attnscope.trace(loaded, TEXT).to_numpy()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(["--device", "cpu", "export", str(folder), "--text", TEXT, "--format", "npz",
                     "--out", str(tmp_path / "x")]) == 0
    with np.load(next((tmp_path / "x").glob("*.npz"))) as f:
        theirs = np.array(f["attn_decoder_self"])
    np.testing.assert_allclose(ours["decoder self"], theirs, atol=1e-6)
    assert loaded.meta["in_memory"] and loaded.model is model


def test_a_damaged_model_in_memory_is_refused_as_its_folder_would_be(folder):
    model, tokenizer = _in_memory(folder)
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] = float("nan")
    with pytest.raises(ModelLoadError) as caught:
        attnscope.load(model, device="cpu", tokenizer=tokenizer)
    assert "NaN" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("bad", ["no tokenizer", "not a tokenizer", "tokenizer with a path", "a number"])
def test_bad_input_to_load_is_one_sentence(folder, bad):
    model, tokenizer = _in_memory(folder)
    call = {"no tokenizer": lambda: attnscope.load(model, device="cpu"),
            "not a tokenizer": lambda: attnscope.load(model, device="cpu", tokenizer=3),
            "tokenizer with a path": lambda: attnscope.load("gpt", device="cpu", tokenizer=tokenizer),
            "a number": lambda: attnscope.load(7)}[bad]
    with pytest.raises(ModelLoadError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and message.endswith(".")
