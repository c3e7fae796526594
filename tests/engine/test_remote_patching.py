"""Activation patching of every head of an ndif: model, run where it is served (issue 49): one
nnsight job through nnsight's local stand-in for NDIF (ATTNSCOPE_NDIF=local: serialised as for
NDIF, read back with attnscope's modules hidden, then run). Its numbers equal the local
exact_patching's; what needs the weights here is refused in one sentence; the CLI's
`attnscope patch ndif:FOLDER` works. No real NDIF job is run."""
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

pytest.importorskip("nnsight")

from attnscope.engine.errors import RemoteJobError  # noqa: E402
from attnscope.engine.experiments import PromptPair, experiment, frame_pair  # noqa: E402
from attnscope.engine.experiments.patching import exact_patching, run_to_end  # noqa: E402
from attnscope.engine.inputs import InputError  # noqa: E402
from attnscope.engine.loading.catalog import open_model  # noqa: E402
from tests.helpers.hf_tiny import tiny_folder  # noqa: E402

PAIR = PromptPair("the big dog sees the small cat", "the big cat sees the small dog", " dog", " cat")
ATOL = 1e-5            # the local path's own: its batched copies against single runs (test_patching)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("ndif_patch")
    return {arch: tiny_folder(root, arch) for arch in ("gpt2", "llama")}


@pytest.fixture
def local(monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("noising, metric", [(False, "logit_diff"), (True, "logprob")])
def test_remote_patching_equals_the_local_exact_patching(folders, local, arch, noising, metric):
    plain = open_model(str(folders[arch]), "cpu")
    ref = run_to_end(exact_patching(plain, frame_pair(plain, PAIR), noising=noising, metric=metric))
    loaded = open_model(f"ndif:{folders[arch]}", "cpu")
    said = []
    got = run_to_end(experiment(loaded, frame_pair(loaded, PAIR), noising=noising, metric=metric, max_batch=3),
                     lambda p: said.append(p.text))
    assert got.method == "exact" and got.noising == noising and got.answers == ref.answers
    assert got.token_ids == ref.token_ids
    assert got.clean == pytest.approx(ref.clean, abs=ATOL) and got.corrupt == pytest.approx(ref.corrupt, abs=ATOL)
    assert set(got.results) == {"heads"} and got.results["heads"].shape == (2, 4)        # (L, H)
    np.testing.assert_allclose(got.results["heads"], ref.results["heads"], atol=ATOL)
    # estimated before it went: 8 runs in batches of 3 (within a layer: 3 + 1 a layer), the floats back
    estimate = next(s for s in said if s.startswith("Patching"))
    assert "8 patched runs in 4 batches of at most 3 in one job" in estimate
    assert "40 bytes will travel back" in estimate                                 # (8 + 2) float32
    assert said[-1].startswith("Patched here through nnsight") and "40 bytes came back" in said[-1]


@pytest.mark.parametrize("options, says", [
    (dict(method="attribution"), "Attribution patching runs a backward pass through"),
    (dict(method="dla"), "Direct logit attribution reads"),
    (dict(what=("heads", "resid-pre")), "Patching resid-pre needs"),
])
def test_what_needs_the_weights_here_is_one_sentence(folders, local, options, says):
    loaded = open_model(f"ndif:{folders['gpt2']}", "cpu")
    with pytest.raises(InputError) as caught:
        run_to_end(experiment(loaded, frame_pair(loaded, PAIR), **options))
    said = str(caught.value)
    assert said.startswith(says) and "served by NDIF does not have" in said
    assert said.count(". ") == 0 and "\n" not in said                                # one sentence


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("ablation", ["zero", "mean"])
def test_remote_patching_under_interventions_equals_the_local(folders, local, arch, ablation):
    from attnscope.engine.interventions import Edge, HeadRef, Interventions

    spec = Interventions(ablated=((HeadRef("decoder self", 0, 1), ablation),),
                         knockout=(Edge("decoder self", (6, 7), (2,), (1,)),))   # the answer's query kept off "dog"
    plain = open_model(str(folders[arch]), "cpu")
    ref = run_to_end(exact_patching(plain, frame_pair(plain, PAIR), interventions=spec))
    unchanged = run_to_end(exact_patching(plain, frame_pair(plain, PAIR)))
    loaded = open_model(f"ndif:{folders[arch]}", "cpu")
    got = run_to_end(experiment(loaded, frame_pair(loaded, PAIR), interventions=spec))
    assert got.clean == pytest.approx(ref.clean, abs=ATOL) and got.corrupt == pytest.approx(ref.corrupt, abs=ATOL)
    np.testing.assert_allclose(got.results["heads"], ref.results["heads"], atol=ATOL)
    assert np.abs(ref.results["heads"] - unchanged.results["heads"]).max() > 1e-4        # they changed something
    with pytest.raises(InputError, match="do not fit"):
        run_to_end(experiment(loaded, frame_pair(loaded, PAIR),
                              interventions=Interventions(ablated=((HeadRef("decoder self", 0, 9), "zero"),))))


def test_a_patching_job_past_ndifs_limit_is_refused_with_numbers(folders, local, monkeypatch):
    from attnscope.engine.experiments import remote_patching

    monkeypatch.setattr(remote_patching, "SERVER_FLOPS", 1.0)                     # a very slow server
    loaded = open_model(f"ndif:{folders['gpt2']}", "cpu")
    with pytest.raises(RemoteJobError, match="would take about .* more than NDIF's 60.0 min limit"):
        run_to_end(experiment(loaded, frame_pair(loaded, PAIR)))


def test_attnscope_patch_runs_an_ndif_model(folders, local):
    from attnscope.cli.entry import main

    plain = open_model(str(folders["llama"]), "cpu")
    ref = run_to_end(exact_patching(plain, frame_pair(plain, PAIR)))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["patch", f"ndif:{folders['llama']}", "--clean", PAIR.clean, "--corrupt", PAIR.corrupt,
                     "--answers", PAIR.answer, PAIR.wrong, "--json"])
    assert code == 0, err.getvalue()
    assert "Patching here through nnsight (ATTNSCOPE_NDIF=local): 8 patched runs" in err.getvalue()
    got = json.loads(out.getvalue())
    assert got["method"] == "exact" and got["clean"] == pytest.approx(ref.clean, abs=ATOL)
    np.testing.assert_allclose(got["results"]["heads"], ref.results["heads"], atol=ATOL)
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(["patch", f"ndif:{folders['llama']}", "--clean", PAIR.clean, "--corrupt", PAIR.corrupt,
                     "--answers", PAIR.answer, PAIR.wrong, "--method", "dla", "--json"])
    assert code == 2 and "Direct logit attribution reads" in err.getvalue()
    assert "Traceback" not in err.getvalue()


def test_a_pair_for_ndif_is_framed_here_and_the_job_asks_for_a_key(folders, monkeypatch):
    import nnsight

    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    monkeypatch.setattr(nnsight.CONFIG.API, "APIKEY", None)
    loaded = open_model(f"ndif:{folders['llama']}", "cpu")                # built on meta: no weights here
    pair = frame_pair(loaded, PAIR)                                       # the tokenizer's work, here
    plain = open_model(str(folders["llama"]), "cpu")
    assert pair.clean.target_ids == frame_pair(plain, PAIR).clean.target_ids
    with pytest.raises(RemoteJobError, match="No NDIF API key is set"):
        run_to_end(experiment(loaded, pair))
