"""ndif: sources (engine.remote): a Run is one nnsight trace, run here through nnsight's local
stand-in for NDIF (ATTNSCOPE_NDIF=local: the job serialised as for NDIF, read back with
attnscope's modules hidden, then run). What comes back (k, each row's log-sum-exp, the
overview's pixels, the asked rows of q) gives the local Run's weights; rows not fetched are
fetched by a new job; the errors NDIF users hit are each one sentence (stand-ins for the
server's answers: no network here, no real NDIF job is run)."""
import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest
import torch

pytest.importorskip("nnsight")

from attnscope.engine.errors import RemoteJobError  # noqa: E402
from attnscope.engine.loading.catalog import open_model  # noqa: E402
from attnscope.engine.remote import RemoteTrace, trace_remote  # noqa: E402
from attnscope.engine.remote.estimate import JOB_SECONDS, check_travel, travel_estimate  # noqa: E402
from attnscope.engine.remote.jobs import Session, explain  # noqa: E402
from attnscope.engine.traces.tracing import trace_text  # noqa: E402
from tests.helpers.hf_tiny import tiny_folder  # noqa: E402
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat . time flies like an arrow ; fruit flies like a banana ."
KIND = "decoder self"
ATOL = 1e-6            # float32 weights: the local path's own recorded-vs-eager tolerance is 1e-5


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("ndif")
    return {arch: tiny_folder(root, arch) for arch in ("gpt2", "llama", "qwen3", "gemma2", "mistral")}


@pytest.fixture
def local(monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")


@pytest.mark.parametrize("arch", ["gpt2", "llama", "qwen3", "gemma2", "mistral"])
def test_a_remote_run_gives_the_local_runs_weights(folders, local, arch):
    plain = trace_text(open_model(str(folders[arch]), "cpu"), TEXT)
    loaded = open_model(f"ndif:{folders[arch]}", "cpu")
    assert loaded.meta["ndif"] == {"model": str(folders[arch]), "mode": "local"}
    t = plain.shape(KIND)[2]
    remote = trace_remote(loaded, TEXT, rows=5, overview=7)         # q of the last 5 queries only
    assert isinstance(remote, RemoteTrace) and remote.shape(KIND) == plain.shape(KIND)
    assert remote.rows_fetched == [(t - 5, t)] and not remote.complete and remote.computes_on_demand(KIND)
    with pytest.raises(RemoteJobError, match=f"Only query rows {t - 5}-{t - 1} of {t} were fetched"):
        remote.calls                                                # nothing saved with holes
    # the overview was pooled where the model ran, by the local path's own code
    mine, theirs = reading.thumbnails(plain, KIND, 7), reading.thumbnails(remote, KIND, 7)
    np.testing.assert_allclose(theirs.pooled, mine.pooled, atol=ATOL)
    np.testing.assert_allclose(theirs.sink, mine.sink, atol=ATOL)
    assert remote.jobs == 1
    # the rows fetched, from q, k and the log-sum-exp that travelled
    for layer in range(plain.shape(KIND)[0]):
        np.testing.assert_allclose(reading.tile(remote, KIND, layer, 1, slice(t - 5, t), slice(None)),
                                   reading.tile(plain, KIND, layer, 1, slice(t - 5, t), slice(None)), atol=ATOL)
        np.testing.assert_allclose(reading.row(remote, KIND, layer, 0, t - 1), reading.row(plain, KIND, layer, 0, t - 1), atol=ATOL)
        call = plain.call(KIND, layer)
        np.testing.assert_allclose(remote._k[layer].float().numpy(), call.k.float().numpy(), atol=ATOL)
        lse = call.log_denominators(call.scores(0), 0)                  # (H, T) every row's, from the local Run
        np.testing.assert_allclose(remote._lse[layer].numpy(), lse.numpy(), atol=1e-5)
    assert remote.jobs == 1                                         # nothing more was asked of the server
    # a row not fetched: one more job, then kept
    said = []
    remote.say = said.append
    np.testing.assert_allclose(reading.tile(remote, KIND, 1, 2, slice(0, 3), slice(None)),
                               reading.tile(plain, KIND, 1, 2, slice(0, 3), slice(None)), atol=ATOL)
    assert remote.jobs == 2 and remote.rows_fetched == [(0, 3), (t - 5, t)]
    assert len(said) == 1 and "will travel back" in said[0] and "the last job took" in said[0]
    np.testing.assert_allclose(reading.weights(remote, KIND), reading.weights(plain, KIND), atol=ATOL)   # the rest: one job more
    assert remote.jobs == 3 and remote.complete
    np.testing.assert_allclose(reading.weights(remote.whole_recording(), KIND), reading.weights(plain, KIND), atol=ATOL)


def test_record_through_ndif_exports_as_the_plain_recording(folders, local, tmp_path):
    from attnscope.engine.inspection.export import load_npz
    from attnscope.cli.entry import main

    (tmp_path / "t.txt").write_text(TEXT, encoding="utf-8")
    for name, model in (("plain", str(folders["llama"])), ("ndif", f"ndif:{folders['llama']}")):
        with redirect_stdout(io.StringIO()) as out:
            assert main(["record", model, "--text-file", str(tmp_path / "t.txt"),
                         "--out", str(tmp_path / f"{name}.safetensors")]) == 0
        assert json.loads(out.getvalue())["kinds"][KIND][0] == 2
        with redirect_stdout(io.StringIO()):
            assert main(["export", str(tmp_path / f"{name}.safetensors"), "--out", str(tmp_path / name),
                         "--format", "npz"]) == 0
    plain, ndif = load_npz(tmp_path / "plain" / "trace.npz"), load_npz(tmp_path / "ndif" / "trace.npz")
    assert ndif.target_tokens == plain.target_tokens
    np.testing.assert_allclose(reading.weights(ndif, KIND), reading.weights(plain, KIND), atol=ATOL)


def test_the_attention_op_is_found_from_the_source(folders, local):
    session = Session(open_model(f"ndif:{folders['gpt2']}", "cpu"))
    assert [path for path, _ in session.ops] == ["transformer.h.0.attn", "transformer.h.1.attn"]
    assert {op for _, op in session.ops} == {"attention_interface_1"}    # transformers 5.x: after its look-up


def test_ndif_builds_on_the_meta_device_and_asks_for_a_key(folders, monkeypatch):
    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    import nnsight
    monkeypatch.setattr(nnsight.CONFIG.API, "APIKEY", None)
    loaded = open_model(f"ndif:{folders['llama']}", "cpu")
    assert loaded.meta["ndif"]["mode"] == "ndif"
    assert {p.device.type for p in loaded.model.parameters()} == {"meta"}            # no weights here
    assert {p.dtype for p in loaded.model.parameters()} == {torch.float32}           # as its config.json says
    with pytest.raises(RemoteJobError, match="No NDIF API key is set: put yours in File > NDIF API Key… or in the "
                                             "NDIF_API_KEY"):
        trace_remote(loaded, TEXT)
    from attnscope.engine.inputs import InputError
    with pytest.raises(InputError, match="runs on NDIF and has no weights here"):
        trace_text(loaded, TEXT)                                   # the local Run: refused, not run on meta


def test_a_refused_connection_is_one_sentence_and_never_shows_the_key(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    monkeypatch.setenv("NDIF_API_KEY", "secret-key-123")
    import nnsight
    monkeypatch.setattr(nnsight.CONFIG.API, "HOST", "http://127.0.0.1:9")       # nothing listens there
    monkeypatch.setenv("NDIF_HOST", "http://127.0.0.1:9")          # plain http: the host the user named
    monkeypatch.setattr(nnsight.CONFIG.API, "APIKEY", None)                     # set from the variable, then undone
    from nnsight.modeling import huggingface
    monkeypatch.setitem(huggingface._ID_CACHE, "tiny/llama", "tiny/llama")    # the hub's answer, known: no lookup
    snapshot = tiny_folder(tmp_path / "models--tiny--llama" / "snapshots", "llama")   # as the hub cache keeps it
    loaded = open_model(f"ndif:{snapshot}", "cpu")
    with pytest.raises(RemoteJobError) as caught:
        trace_remote(loaded, TEXT)
    said = str(caught.value)
    assert "could not be reached" in said and "secret-key-123" not in said and "\n" not in said


def test_a_folder_of_no_repository_is_refused_for_ndif(folders, monkeypatch):
    import nnsight
    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    monkeypatch.setenv("NDIF_API_KEY", "secret-key-123")
    monkeypatch.setattr(nnsight.CONFIG.API, "APIKEY", None)
    with pytest.raises(RemoteJobError, match="NDIF knows models by their hub id"):
        trace_remote(open_model(f"ndif:{folders['llama']}", "cpu"), TEXT)


# The server's answers, as nnsight raises them (RemoteError with NDIF's description).
@pytest.mark.parametrize("answer, says", [
    ("Failed to send request: [Errno 111] Connection refused", "could not be reached"),
    ("Model key 'nnsight.modeling.transformers.TransformersModel:{\"repo_id\": \"x/y\"}' not found: model is not "
     "deployed", "does not serve x/y"),
    ("Client nnsight version 0.8.1 does not match the server's nnsight version 0.9.2", "NDIF runs nnsight 0.9.2"),
    ("Job timed out after 3600 seconds", "ran past NDIF's time limit"),
    ("Invalid API key secret-key-123", "refused the API key"),
])
def test_each_server_answer_is_one_sentence(monkeypatch, answer, says):
    from nnsight.intervention.backends.remote import RemoteError

    monkeypatch.setenv("NDIF_API_KEY", "secret-key-123")
    said = str(explain(RemoteError(answer), "x/y"))
    assert says in said and "secret-key-123" not in said and "\n" not in said
    if "version" in answer:
        from importlib.metadata import version
        assert version("nnsight") in said                         # both versions named


def test_a_job_past_ndifs_limit_is_refused_with_numbers(folders):
    loaded = open_model(str(folders["llama"]), "cpu")
    config = loaded.model.config
    small = travel_estimate(config, 25, 25, 256, 4, parameters=loaded.n_parameters)
    assert small.total == small.parts["k"] + small.parts["log-sum-exp"] + small.parts["overview"] \
        + small.parts["q rows"] and small.parts["k"] == 2 * 2 * 25 * 8 * 4          # L x Hkv x T x Dh x 4 bytes
    check_travel(small, "llama")
    huge = travel_estimate(config, 3_000_000, 256, 256, 2, parameters=70 * 10**9)
    assert huge.seconds > JOB_SECONDS
    with pytest.raises(RemoteJobError, match="would take about 70.3 min .* more than NDIF's 60.0 min limit"):
        check_travel(huge, "llama")


def test_queries_and_keys_are_read_and_a_whole_trace_is_saved_whole(folders, local, tmp_path):
    from attnscope.engine.inspection.neurons import query_keys
    from attnscope.engine.traces.partial import PartialTrace
    from attnscope.engine.traces.recording_file import load_recording, save_recording

    plain = trace_text(open_model(str(folders["qwen3"]), "cpu"), TEXT)
    remote = trace_remote(open_model(f"ndif:{folders['qwen3']}", "cpu"), TEXT, rows=3)
    small, pooled = reading.thumbnails(plain, KIND, 4, "mean"), reading.thumbnails(remote, KIND, 4, "mean")   # another size: a job
    assert remote.jobs == 2 and not remote.complete
    np.testing.assert_allclose(pooled.pooled, small.pooled, atol=ATOL)
    mine, theirs = query_keys(plain, KIND, 1, 2), query_keys(remote, KIND, 1, 2)   # the rows not here: one job
    assert remote.complete and remote.jobs == 3
    np.testing.assert_allclose(theirs.queries, mine.queries, atol=ATOL)
    np.testing.assert_array_equal(theirs.masked, mine.masked)
    back = load_recording(save_recording(remote, tmp_path / "r"))    # every row here: a plain recording
    assert not isinstance(back, PartialTrace)                       # (rows not fetched: test_remote_recording.py)
    np.testing.assert_allclose(reading.weights(back, KIND), reading.weights(plain, KIND), atol=ATOL)


@pytest.mark.parametrize("spec", ["ablation", "knockout"])
def test_interventions_run_there_through_the_seams_hooks(folders, local, spec):
    from attnscope.engine.inputs import InputError
    from attnscope.engine.interventions import Edge, HeadRef, Interventions

    made = {"ablation": Interventions(ablated=((HeadRef(KIND, 0, 1), "zero"), (HeadRef(KIND, 0, 2), "mean"))),
            "knockout": Interventions(knockout=(Edge(KIND, range(5, 9), range(1, 3), None),))}[spec]
    plain_model = open_model(str(folders["mistral"]), "cpu")
    changed, unchanged = trace_text(plain_model, TEXT, interventions=made), trace_text(plain_model, TEXT)
    remote = trace_remote(open_model(f"ndif:{folders['mistral']}", "cpu"), TEXT, rows=4, interventions=made)
    theirs = reading.weights(remote, KIND)                                   # the rows not here: a job under them too
    assert remote.jobs == 2
    np.testing.assert_allclose(theirs, reading.weights(changed, KIND), atol=ATOL)
    assert np.abs(theirs - reading.weights(unchanged, KIND)).max() > 1e-3    # they changed what was computed
    with pytest.raises(InputError, match="do not fit .*heads are 0 to 3"):
        trace_remote(open_model(f"ndif:{folders['mistral']}", "cpu"), TEXT,
                     interventions=Interventions(ablated=((HeadRef(KIND, 1, 9), "zero"),)))


def test_what_ndif_serves_is_read_from_its_status(monkeypatch):
    from nnsight import ndif

    from attnscope.engine.remote import served_models

    def running(model, state="RUNNING", task="text-generation", level="HOT"):
        return {"repo_id": model, "model_key": f"x:{model}", "task": task, "deployment_level": level,
                "application_state": state}
    answer = {"deployments": {"a": running("meta-llama/Llama-3.1-70B"), "b": running("openai-community/gpt2"),
                              "c": running("x/deploying", state="DEPLOYING"), "d": running("x/cold", level="COLD")}}
    monkeypatch.setattr(ndif, "_get", lambda *a, **k: answer)                # a stand-in for NDIF's /status
    assert served_models() == ["meta-llama/Llama-3.1-70B", "openai-community/gpt2"]

    def refused(*a, **k):
        raise ConnectionError("[Errno 111] Connection refused")
    monkeypatch.setattr(ndif, "_get", refused)
    assert served_models() == []
