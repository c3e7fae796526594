"""Any Hugging Face transformer, tested without the internet on tiny random models of fifteen
architectures (tests/helpers/hf_tiny.py), opened from their folders as a user would.

For each: its role; attention recorded at the seam equals transformers' own eager
output_attentions (a reference copy loaded with attn_implementation="eager"), and recording
leaves the logits as they are; the stepper's greedy tokens equal model.generate(do_sample=
False); each step's attention rows equal a full recompute; the neuron view's weights, from
the same recording, equal the traced ones."""
import dataclasses

import numpy as np
import pytest
import torch

from attnscope.engine.loading.catalog import open_model
from attnscope.engine.decoding.session import DecodeSession, DecodeSettings, decode_all
from attnscope.engine.models.outputs import CROSS, DECODER_SELF, ENCODER_SELF
from attnscope.engine.inspection.neurons import query_keys
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_tiny import ARCHITECTURES, ROLE, tiny_folder
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-tiny")
    return {arch: tiny_folder(root, arch) for arch in ARCHITECTURES}


@pytest.fixture(scope="module")
def models(folders):
    return {arch: open_model(str(folder), "cpu") for arch, folder in folders.items()}


@pytest.fixture(scope="module")
def eager(folders):
    """transformers' own reference: each folder loaded with its eager attention, float32."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    maker = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "encoder-decoder": AutoModelForSeq2SeqLM}
    return {arch: maker[ROLE[arch]].from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
            for arch, folder in folders.items()}


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_role_and_trace_equal_output_attentions(models, eager, arch):
    loaded, reference = models[arch], eager[arch]
    assert loaded.role == ROLE[arch]
    trace = trace_text(loaded, TEXT)
    assert tuple(trace.kinds) == loaded.kinds
    enc = loaded.tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        if loaded.role == "encoder-decoder":
            dec = torch.tensor([[loaded.model.config.decoder_start_token_id or 0]
                                + [i for i in decode_all(loaded, TEXT, DecodeSettings(max_new_tokens=64)).steps[-1].output_ids
                                   if i != loaded.model.generation_config.eos_token_id]])
            assert dec.shape[1] == trace.shape(DECODER_SELF)[2]
            out = reference(**enc, decoder_input_ids=dec, output_attentions=True)
            ref = {ENCODER_SELF: out.encoder_attentions, DECODER_SELF: out.decoder_attentions,
                   CROSS: out.cross_attentions}
            ours = loaded.model(**enc, decoder_input_ids=dec)
        else:
            out = reference(**enc, output_attentions=True)
            ref = {trace.kinds[0]: out.attentions}
            ours = loaded.model(**enc)
    field = "logits" if hasattr(out, "logits") else "last_hidden_state"
    torch.testing.assert_close(getattr(ours, field), getattr(out, field), atol=1e-5, rtol=0)   # recording changes no output
    for kind, layers in ref.items():
        expected = torch.stack([a[0] for a in layers]).numpy()   # (L, H, Tq, Tk)
        np.testing.assert_allclose(reading.weights(trace, kind), expected, atol=1e-5)
        np.testing.assert_allclose(reading.weights(trace, kind).sum(-1), 1.0, atol=1e-4)


@pytest.mark.parametrize("arch", [a for a in ARCHITECTURES if ROLE[a] != "encoder"])
def test_greedy_steps_equal_generate_and_a_full_recompute(models, eager, arch):
    loaded = models[arch]
    model, tok = eager[arch], loaded.tokenizer
    session = DecodeSession(loaded, TEXT, DecodeSettings(max_new_tokens=6))
    steps = list(session.steps())
    ours = steps[-1].output_ids
    enc = tok(TEXT, return_tensors="pt")
    with torch.no_grad():
        generated = model.generate(**enc, max_new_tokens=6, do_sample=False, num_beams=1)[0].tolist()
    start = enc["input_ids"].shape[1] if loaded.role == "decoder" else 1
    assert ours == generated[start:start + len(ours)]
    # every step's rows are those of a full forward over everything so far
    prefix = session.stepper.prompt_ids
    for i, step in enumerate(steps):
        seq = torch.tensor([prefix + ours[:i]])
        with torch.no_grad():
            if loaded.role == "decoder":
                out = model(input_ids=seq, output_attentions=True)
                self_rows = torch.stack([a[0, :, -1] for a in out.attentions]).numpy()
            else:
                out = model(**enc, decoder_input_ids=seq, output_attentions=True)
                self_rows = torch.stack([a[0, :, -1] for a in out.decoder_attentions]).numpy()
                cross = torch.stack([a[0, :, -1] for a in out.cross_attentions]).numpy()
                np.testing.assert_allclose(step.cross_rows, cross, atol=1e-5)
        np.testing.assert_allclose(step.self_rows, self_rows, atol=1e-5)
    if arch in ("mistral", "gemma2"):   # the window bites: the newest token ignores the oldest keys
        window = model.config.sliding_window
        last = steps[-1].self_rows                                     # (L, H, T)
        assert last.shape[-1] > window
        assert np.all(last[0, :, :-window] == 0) and np.all(last[0, :, -window:].sum(-1) > 0.99)
        if arch == "gemma2":                                           # its second layer attends to everything
            assert np.all(last[1, :, :-window].sum(-1) > 0)


@pytest.mark.parametrize("arch", ["gpt2", "llama", "t5", "bart"])
def test_beam_search_and_sampling_run_through_the_models_cache(models, arch):
    loaded = models[arch]
    beam = decode_all(loaded, TEXT, DecodeSettings(strategy="beam", beam_width=3, max_new_tokens=5))
    assert beam.steps and len(beam.steps[0].beams) >= 1
    a = decode_all(loaded, TEXT, DecodeSettings(strategy="sample", seed=3, max_new_tokens=5))
    b = decode_all(loaded, TEXT, DecodeSettings(strategy="sample", seed=3, max_new_tokens=5))
    assert a.output_tokens == b.output_tokens


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_neuron_view_recomputes_the_traced_weights(models, arch):
    """q and k as the model uses them (after rotary, before key heads are shared out), read
    from the Run's recording: softmax(q.k * scale + bias) equals the traced weights."""
    loaded = models[arch]
    trace = trace_text(loaded, TEXT)
    for kind in loaded.kinds:
        data = query_keys(trace, kind, 1, 3)
        traced = reading.weights(data.trace, kind)[1, 3]
        recomputed = np.stack([data.row(i)["weights"] for i in range(traced.shape[0])])
        np.testing.assert_allclose(recomputed, traced, atol=1e-5)
    if arch in ("llama", "qwen2", "qwen3", "mistral", "gemma2", "phi3"):
        assert "key/value head" in data.note
    if arch == "mistral":
        assert "only the last 4 tokens" in data.note
    if arch == "gemma2":     # the cap bites on these weights: without it the softmax differs
        assert data.softcap == 2.0 and "soft-capped" in data.note
        uncapped = dataclasses.replace(data, softcap=None)
        assert max(np.abs(uncapped.row(i)["weights"] - data.row(i)["weights"]).max()
                   for i in range(traced.shape[0])) > 1e-3


def test_tokens_read_as_words_and_merge(models):
    trace = trace_text(models["gpt2"], "the big dog", merge_subwords=True)
    assert trace.target_tokens == ["<s>", "the", "big", "dog"]
    assert not any(t.startswith(("Ġ", "▁")) for t in trace_text(models["llama"], TEXT).target_tokens)
    merged = trace_text(models["t5"], TEXT, merge_subwords=True)
    assert "big" in merged.source_tokens
    for kind in merged.kinds:
        np.testing.assert_allclose(reading.weights(merged, kind).sum(-1), 1.0, atol=1e-4)


def test_an_unknown_architecture_is_named(tmp_path):
    from attnscope.engine.errors import ModelLoadError
    import json

    folder = tmp_path / "mystery"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "mystery-net", "auto_map": {"AutoModel": "x.Y"}}))
    (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError, match="'mystery-net'"):
        open_model(str(folder), "cpu")


@pytest.mark.parametrize("arch", ["llama", "bart"])
def test_a_text_longer_than_the_model_reads_is_cut_and_said(models, arch):
    from attnscope.engine.decoding.session import DecodeSession

    loaded = models[arch]
    assert DecodeSession(loaded, TEXT).notes == []
    words = " ".join([TEXT] * 40)
    n = len(loaded.tokenizer(words)["input_ids"])
    assert n > loaded.max_len
    note, = DecodeSession(loaded, words).notes
    assert f"has {n} tokens" in note and str(loaded.max_len) in note


@pytest.mark.parametrize("name", ["tokenizer.json", "tokenizer_config.json"])
def test_a_damaged_tokenizer_file_is_named(folders, tmp_path, name):
    """transformers' own error is a JSON decoder's position; the refusal names the file."""
    import shutil

    from attnscope.engine.errors import ModelLoadError

    folder = tmp_path / "copy"
    shutil.copytree(folders["gpt2"], folder)
    (folder / name).write_text('{"model": ', encoding="utf-8")
    with pytest.raises(ModelLoadError, match=f"{name} is not valid JSON .*Copy the folder again"):
        open_model(str(folder), "cpu")


def test_cli_generate_translate_export_and_compare(folders, tmp_path, capsys):
    import json
    from attnscope.cli.entry import main

    assert main(["generate", str(folders["llama"]), "the big dog", "--max-new-tokens", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 1 <= len(out["output_tokens"]) <= 4 and "continuation" in out and out["prompt_tokens"][1] == "the"
    assert main(["generate", str(folders["t5"]), "the big dog", "--max-new-tokens", "3"]) == 0
    assert "translation" in json.loads(capsys.readouterr().out)
    assert main(["translate", str(folders["gpt2"]), "the big dog"]) == 2
    assert "translate' needs an encoder-decoder" in capsys.readouterr().err
    assert main(["export", str(folders["bart"]), "--text", TEXT, "--out", str(tmp_path / "bart"),
                 "--format", "npz"]) == 0
    assert list((tmp_path / "bart").glob("*.npz"))
    capsys.readouterr()
    assert main(["compare", str(folders["gpt2"]), "--with", str(folders["gpt2"]), "--text", TEXT]) == 0
    assert json.loads(capsys.readouterr().out)["max_abs_diff"] == 0.0


def test_the_window_opens_and_steps_them_from_the_file_menu(folders, qtbot, monkeypatch, drawn):
    from PySide6.QtWidgets import QFileDialog
    from attnscope.gui.window.main_window import MainWindow

    w = MainWindow(source="random-bert", device="cpu")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.state.trace is not None, timeout=30000)
    for arch, kinds in (("llama", [DECODER_SELF]), ("t5", [ENCODER_SELF, DECODER_SELF, CROSS])):
        monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, _f=str(folders[arch]), **k: _f)
        with qtbot.waitSignal(w.state.model_changed, timeout=30000):
            w.open_hf_action.trigger()
        qtbot.waitUntil(lambda: w.state.trace is not None and w.state.trace.family == w.state.loaded.family,
                        timeout=30000)
        assert w.state.trace.kinds == kinds and w.input_bar.target_edit.isVisible() == (arch == "t5")
        drawn(w.grid)
        assert w.grid.layout_.rows == 2 and w.grid.layout_.cols == 4
        decoding = w.dock_layout.view("Decoding")
        decoding.step()
        qtbot.waitUntil(lambda: len(decoding.history) == 1 and not decoding.jobs.busy, timeout=30000)
        assert decoding.history[0].self_rows.shape[:2] == (2, 4)
        assert (decoding.history[0].cross_rows is not None) == (arch == "t5")
        neurons = w.dock_layout.view("Neurons")
        w.state.select_head(kinds[-1], 1, 3)
        qtbot.waitUntil(lambda: neurons.data is not None and not neurons.jobs.busy, timeout=30000)
        if arch == "llama":
            assert "key/value head 1" in neurons.note.text()
    w.close()


def test_compare_view_takes_two_folders_of_one_architecture(folders, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog
    from attnscope.gui.state import AppState
    from attnscope.gui.views.compare import CompareView

    other = tiny_folder(tmp_path, "llama", seed=5)          # same architecture and tokenizer, other weights
    state = AppState()
    state.text = TEXT
    view = CompareView(state)
    qtbot.addWidget(view)
    state.set_model(open_model(str(folders["llama"]), "cpu"))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(other))
    view.open_folder_button.click()
    qtbot.waitUntil(lambda: view.result is not None and not view.jobs.busy, timeout=30000)
    _, ta, tb, comparisons = view.result
    assert list(comparisons) == [DECODER_SELF] and comparisons[DECODER_SELF]["max"] > 1e-3
