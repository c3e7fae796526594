"""The head atlas (engine.atlas, `attnscope atlas`): exact against a dense reference of our own,
top contexts against a brute-force ranking, a stopped atlas resumed equal to one built in one
go, the bundled GPT's roles, and bad input refused in one sentence."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from attnscope.engine.atlas import build_atlas, load_state
from attnscope.engine.atlas.corpus import documents
from attnscope.engine.atlas.read import atlas_summary, head_detail, means
from attnscope.engine.atlas.similarity import similarity, similarity_rows
from attnscope.engine.inspection.statistics import LOCAL_WINDOW, NAMES
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.traces import RunCancelled
from tests.helpers.hf_tiny import tiny_folder
from tests.helpers.hf_sinks import sink_folder

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "resources" / "checkpoints" / "gpt.safetensors"
TEXT = ("the cat sat on the mat and the cat ran to the mat\n"
        "a dog saw the cat and the dog sat on the mat again\n"
        "then the cat and the dog ran and ran to the red mat\n") * 2
LENGTH, DOCS, TOP = 24, 3, 5


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "small.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def reference(folder: Path, loaded, corpus: Path) -> tuple[dict, np.ndarray]:
    """Every statistic's mean (L, H) and every position's activation (docs, L, H, T), from the
    eager attention weights of transformers' own model (output_attentions) and the heads'
    outputs entering its output projection: no part of the seam or the atlas."""
    from transformers import AutoModel, AutoModelForCausalLM

    from attnscope.engine.adapters import adapter_for

    adapter = adapter_for(loaded)
    encoder = loaded.role == "encoder"
    side = (lambda f: f.source_ids) if encoder else (lambda f: f.target_ids)
    model = (AutoModel if encoder else AutoModelForCausalLM).from_pretrained(folder, attn_implementation="eager").eval()
    arch = model.config.model_type
    linear = arch != "gpt2"                                                       # Linear (D, H * Dv)
    blocks = model.encoder.layer if encoder else model.model.layers if linear else model.transformer.h
    projections = [b.attention.output.dense if encoder else b.self_attn.o_proj if linear else b.attn.c_proj
                   for b in blocks]
    framing = len(side(adapter.frame_ids([5])[0])) - 1
    sums = {n: 0.0 for n in NAMES}
    counts = {n: 0.0 for n in NAMES}
    acts, gram = [], 0.0
    for index, body in enumerate(documents(adapter, corpus, LENGTH - framing)):
        if index == DOCS:
            break
        ids = np.array(side(adapter.frame_ids(body)[0]))
        seen = []
        handles = [p.register_forward_pre_hook(lambda m, a: seen.append(a[0][0].detach())) for p in projections]
        with torch.no_grad():
            out = model(torch.from_numpy(ids)[None], output_attentions=True)
        for h in handles:
            h.remove()
        w = torch.stack(out.attentions)[:, 0].double().numpy()                  # (L, H, T, T)
        T = len(ids)
        i, j = np.arange(T)[:, None], np.arange(T)[None, :]
        earlier_copy = (ids[None, :] == ids[:, None]) & (j < i)                   # (T, T)
        has = earlier_copy.any(-1)
        before = np.r_[-1, ids[:-1]]
        after_copy = (before[None, :] == ids[:, None]) & (j <= i) & (j >= 1)
        rows = {
            "entropy": -(w * np.log(np.where(w > 0, w, 1.0))).sum(-1),
            "distance": (w * np.abs(i - j)).sum(-1),
            "sink": w[..., 0],
            "learned_sink": np.clip(1.0 - w.sum(-1), 0.0, None),
            "previous": w[..., np.arange(1, T), np.arange(T - 1)],
            "self": w[..., np.arange(T), np.arange(T)],
            "local": (w * (np.abs(i - j) <= LOCAL_WINDOW)).sum(-1),
            "duplicate": (w * earlier_copy).sum(-1)[..., has],
            "induction": (w * after_copy).sum(-1)[..., has],
        }
        x = w[:, :, similarity_rows(index, T)].reshape(w.shape[0] * w.shape[1], -1)   # (L*H, n*T)
        gram = gram + x @ x.T
        for name, v in rows.items():
            sums[name] += v.sum(-1)
            counts[name] += v.shape[-1]
        doc_acts = []
        for layer, z in enumerate(seen):                                          # z (T, H * Dv)
            weight = projections[layer].weight.detach().double()
            H = model.config.num_attention_heads
            dv = z.shape[-1] // H
            zh = z.double().view(T, H, dv)
            if linear:                                                            # Linear: (D, H * Dv)
                vec = torch.einsum("thv,dhv->htd", zh, weight.view(-1, H, dv))
            else:                                                                 # Conv1D: (H * Dv, D)
                vec = torch.einsum("thv,hvd->htd", zh, weight.view(H, dv, -1))
            doc_acts.append(vec.norm(dim=-1).numpy())                             # (H, T)
        acts.append(np.stack(doc_acts))
    return {**{n: sums[n] / counts[n] for n in NAMES}, "gram": gram}, acts


@pytest.mark.parametrize("arch", ["llama", "gpt2", "gpt_oss", "bert"])
def test_every_mean_equals_a_dense_reference_and_top_contexts_a_brute_force_ranking(arch, corpus, tmp_path):
    """A Llama with grouped key/value heads, GPT-2, gpt-oss with learned sinks (rows below 1), and
    BERT (every key seen: no causal shortcut)."""
    folder = sink_folder(tmp_path, arch) if arch == "gpt_oss" else tiny_folder(tmp_path, arch)
    loaded = open_model(str(folder), "cpu")
    state = build_atlas(loaded, tmp_path / "a.safetensors", corpus=corpus, length=LENGTH, docs=DOCS, top=TOP)
    ref, acts = reference(folder, loaded, corpus)
    got = means(state)
    for name in NAMES:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-5, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(similarity(state.arrays["sim.gram"]), similarity(ref["gram"]), rtol=1e-5, atol=1e-6)
    L, H = got["entropy"].shape
    for layer in range(L):
        for head in range(H):
            ranked = sorted(((-float(a[layer, head, p]), d, p) for d, a in enumerate(acts)
                             for p in range(a.shape[-1])))[:TOP]
            a = state.arrays
            assert [(d, p) for _, d, p in ranked] == list(zip(a["top.doc"][layer, head], a["top.pos"][layer, head]))
            np.testing.assert_allclose(a["top.value"][layer, head], [-v for v, *_ in ranked], rtol=1e-4)
    detail = head_detail(load_state(tmp_path / "a.safetensors"), L - 1, H - 1)
    assert len(detail["top"]) == TOP and 0 < detail["projection"]["variance_kept"] <= 1


def test_a_stopped_atlas_resumed_equals_one_built_in_one_go(corpus, tmp_path):
    loaded = open_model(str(tiny_folder(tmp_path, "llama")), "cpu")
    whole = build_atlas(loaded, tmp_path / "whole.safetensors", corpus=corpus, length=16, docs=4, top=3, samples=16)
    done = []
    with pytest.raises(RunCancelled):
        build_atlas(loaded, tmp_path / "part.safetensors", corpus=corpus, length=16, docs=4, top=3, samples=16,
                    report=done.append, stop=lambda: len(done) >= 2)
    assert load_state(tmp_path / "part.safetensors").docs_done == 2
    resumed = build_atlas(loaded, tmp_path / "part.safetensors", corpus=corpus, length=16, docs=4, top=3, samples=16)
    assert resumed.docs_done == whole.docs_done == 4
    for key, value in whole.arrays.items():
        np.testing.assert_array_equal(resumed.arrays[key], value, err_msg=key)
    assert resumed.tokens == whole.tokens


def test_the_bundled_gpts_roles(tmp_path):
    """The README's heads (0-based): induction at layer 3 head 3, previous-token at layer 2 head 1."""
    state = build_atlas(open_model(str(GPT), "cpu"), tmp_path / "gpt.safetensors", length=128, docs=3)
    got = means(state)
    assert np.unravel_index(np.argmax(got["induction"]), got["induction"].shape) == (3, 3)
    assert np.unravel_index(np.argmax(got["previous"]), got["previous"].shape) == (2, 1)
    summary = atlas_summary(load_state(tmp_path / "gpt.safetensors"))
    assert summary["documents"] == 3 and len(summary["heads"]) == 16 and set(summary["definitions"]) == set(NAMES)
    assert sorted(summary["similarity"]["order"]) == sorted(h["name"] for h in summary["heads"])


def test_bad_input_is_one_sentence_and_exit_2(tmp_path, capsys):
    from attnscope.cli.entry import main

    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(b"\x00" * 40)
    cases = {
        "holds no text": ["atlas", str(GPT), "--corpus", str(empty), "--out", str(tmp_path / "x.safetensors")],
        "past what": ["atlas", str(GPT), "--length", "100000", "--out", str(tmp_path / "y.safetensors")],
        "not a readable atlas": ["atlas", str(damaged), "--json"],
    }
    for words, argv in cases.items():
        assert main(["--device", "cpu", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and "Traceback" not in err and len(err.splitlines()) == 1, err


def test_docs_hold_every_definition():
    text = (ROOT / "docs" / "atlas.md").read_text(encoding="utf-8")
    from attnscope.engine.inspection.statistics import STATISTICS

    assert [s.name for s in STATISTICS if s.name not in text or s.definition not in text or s.source not in text] == []


def test_a_family_without_piece_ids_reads_its_corpus(corpus, tmp_path):
    """Our BERT has no ``piece_ids``: the corpus is read through its framing, the framing's tokens cut."""
    from attnscope.engine.adapters import adapter_for

    loaded = open_model("random-bert", "cpu")
    body = next(documents(adapter_for(loaded), corpus, 6))
    framed = adapter_for(loaded).frame(TEXT.splitlines()[0])
    assert body == framed.source_ids[1:7]
    state = build_atlas(loaded, tmp_path / "bert.safetensors", corpus=corpus, length=16, docs=2, top=2, samples=8)
    assert state.docs_done == 2 and np.isfinite(means(state)["entropy"]).all()
