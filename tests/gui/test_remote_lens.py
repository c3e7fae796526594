"""The logit lens of an ndif: model, read where it is served in one nnsight job
(engine.remote.lens; ATTNSCOPE_NDIF=local: serialised as for NDIF, run here): the same top
tokens and probabilities as the local lens, under interventions too, from the command line and
in the window's Lens view; with no API key, one sentence."""
import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest

pytest.importorskip("nnsight")

from attnscope.engine.interventions import logit_lens  # noqa: E402
from attnscope.engine.loading.catalog import open_model  # noqa: E402
from attnscope.engine.remote import remote_lens  # noqa: E402
from tests.helpers.hf_tiny import tiny_folder  # noqa: E402

TEXT = "the big dog sees the small cat . time flies like an arrow"
KIND = "decoder self"
ATOL = 1e-6


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("ndif-lens")
    return {arch: tiny_folder(root, arch) for arch in ("gpt2", "llama", "gemma2", "mistral")}


@pytest.fixture
def local(monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gemma2", "mistral"])     # gemma2: a final softcap
def test_the_remote_lens_is_the_local_lens(folders, local, arch):
    plain = logit_lens(open_model(str(folders[arch]), "cpu"), TEXT)
    theirs = remote_lens(open_model(f"ndif:{folders[arch]}", "cpu"), TEXT)
    assert theirs.tokens == plain.tokens and theirs.n_layers == plain.n_layers
    np.testing.assert_array_equal(theirs.top_ids, plain.top_ids)
    np.testing.assert_allclose(theirs.top_p, plain.top_p, atol=ATOL)
    np.testing.assert_allclose(theirs.final_p, plain.final_p, atol=ATOL)
    assert theirs.top_tokens == plain.top_tokens


def test_the_remote_lens_holds_interventions_there(folders, local):
    from attnscope.engine.interventions import HeadRef, Interventions

    made = Interventions(ablated=((HeadRef(KIND, 0, 1), "zero"), (HeadRef(KIND, 1, 2), "mean")))
    model = open_model(str(folders["mistral"]), "cpu")
    changed, unchanged = logit_lens(model, TEXT, spec=made), logit_lens(model, TEXT)
    theirs = remote_lens(open_model(f"ndif:{folders['mistral']}", "cpu"), TEXT, spec=made)
    np.testing.assert_allclose(theirs.top_p, changed.top_p, atol=ATOL)
    np.testing.assert_allclose(theirs.final_p, changed.final_p, atol=ATOL)
    assert np.abs(theirs.final_p - unchanged.final_p).max() > 1e-4        # they changed what was computed


def test_attnscope_lens_reads_an_ndif_model_there(folders, local):
    from attnscope.cli.entry import main

    outs = []
    for model in (str(folders["llama"]), f"ndif:{folders['llama']}"):
        with redirect_stdout(io.StringIO()) as out:
            assert main(["--device", "cpu", "lens", model, "--text", TEXT]) == 0
        outs.append(json.loads(out.getvalue()))
    plain, ndif = outs
    assert ndif["tokens"] == plain["tokens"]
    for a, b in zip(ndif["layers"], plain["layers"]):
        assert [[i for i, _ in row] for row in a["top"]] == [[i for i, _ in row] for row in b["top"]]


def test_no_api_key_is_one_sentence(folders, monkeypatch, capsys):
    import nnsight

    from attnscope.engine.errors import RemoteJobError
    from attnscope.cli.entry import main

    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    monkeypatch.setattr(nnsight.CONFIG.API, "APIKEY", None)
    with pytest.raises(RemoteJobError, match="No NDIF API key is set"):
        remote_lens(open_model(f"ndif:{folders['llama']}", "cpu"), TEXT)
    assert main(["--device", "cpu", "lens", f"ndif:{folders['llama']}", "--text", TEXT]) == 2
    said = capsys.readouterr().err
    assert "No NDIF API key is set" in said and "is an encoder" not in said and len(said.strip().splitlines()) == 1


def test_the_lens_view_reads_an_ndif_model(window, qtbot, tmp_path, monkeypatch, folders, local):
    from attnscope.engine.remote import RemoteTrace

    window.opening.open_source(f"ndif:{folders['llama']}")
    qtbot.waitUntil(lambda: isinstance(window.state.trace, RemoteTrace) and not window.run_jobs.busy, timeout=30000)
    window.docks["Lens"].show()
    lens = window.dock_layout.view("Lens")
    qtbot.waitUntil(lambda: lens.lens is not None, timeout=30000)
    plain = logit_lens(open_model(str(folders["llama"]), "cpu"), window.state.text)
    np.testing.assert_array_equal(lens.lens.top_ids, plain.top_ids)
    assert window.last_error is None
