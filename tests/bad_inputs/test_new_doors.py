"""Issue 53 part 4, the new doors: an ``ndif:`` job's answer that is a pickle never runs here,
the key goes only over https to the host named, a config that declares 100,000 layers is
refused at once, and every message names what really happened (the hub, not NDIF; the
option, not argparse's function). No network: NDIF is a stand-in websocket and HTTP post."""
from __future__ import annotations

import io
import json
import pickle

import pytest
import torch

pytest.importorskip("nnsight")

from attnscope.engine.errors import RemoteJobError  # noqa: E402
from attnscope.engine.loading.catalog import open_model  # noqa: E402
from tests.helpers.hf_tiny import tiny_folder  # noqa: E402
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat ."
KEY = "secret-key-123"


class Evil:
    """A pickle that would make ``marker`` were it ever run."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def _said(err) -> str:
    text = str(err.value)
    assert "\n" not in text and len(text) < 400 and "Traceback" not in text, text
    return text


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    """A tiny Llama as the hub cache keeps tiny/llama: NDIF knows it by that id."""
    return tiny_folder(tmp_path_factory.mktemp("hub") / "models--tiny--llama" / "snapshots", "llama")


@pytest.fixture
def ndif(monkeypatch):
    """NDIF mode with a key, at a stand-in https host; the hub's answer for tiny/llama known."""
    import nnsight
    from nnsight.modeling import huggingface

    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    monkeypatch.setenv("NDIF_API_KEY", KEY)
    monkeypatch.setattr(nnsight.CONFIG.API, "APIKEY", None)
    monkeypatch.setattr(nnsight.CONFIG.API, "HOST", "https://ndif.example")
    monkeypatch.setitem(huggingface._ID_CACHE, "tiny/llama", "tiny/llama")


def _stand_in(monkeypatch, frames: list):
    """NDIF as a websocket that answers ``frames`` after the session id, and an HTTP post that
    says RECEIVED; returns what was sent where."""
    import websocket
    from nnsight.intervention.backends.remote import RemoteBackend
    from nnsight.schema.response import ResponseModel, Status

    sent = {}

    class Socket:
        def __init__(self):
            self.answers = [json.dumps({"session_id": "s1"}), *frames]

        def recv(self):
            return self.answers.pop(0)

        def settimeout(self, _):
            pass

        def close(self):
            pass

    def connect(url, header=None):
        sent["socket"], sent["socket_header"] = url, header
        return Socket()

    def post(self, request, blob):
        sent["post"], sent["key"] = self.host, self.api_key
        return ResponseModel(id="job1", status=Status.RECEIVED)

    monkeypatch.setattr(websocket, "create_connection", connect)
    monkeypatch.setattr(RemoteBackend, "_post", post)
    return sent


def _completed(data) -> bytes:
    from nnsight.schema.response import ResponseModel, Status
    return ResponseModel(id="job1", status=Status.COMPLETED, data=data).pickle()


def _saved(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return _packed(buffer.getvalue())


def _packed(blob: bytes) -> bytes:
    """As NDIF sends a result: zstd-compressed (nnsight asks for it by default)."""
    import zstandard as zstd
    return zstd.ZstdCompressor().compress(blob)


@pytest.mark.parametrize("where", ["frame", "result", "result in a torch file"])
def test_a_pickled_answer_never_runs_and_is_one_sentence(snapshot, ndif, monkeypatch, tmp_path, where):
    """The host answers a Run with a pickle whose __reduce__ would write a file: as the status
    frame itself, as the result's bytes, or inside a torch.save file. Nothing is made."""
    from attnscope.engine.remote import trace_remote

    marker = tmp_path / "ran"
    evil = {"frame": pickle.dumps(Evil(marker)), "result": _completed(_packed(pickle.dumps(Evil(marker)))),
            "result in a torch file": _completed(_saved({"layers": Evil(marker)}))}[where]
    sent = _stand_in(monkeypatch, [evil])
    with pytest.raises(RemoteJobError) as err:
        trace_remote(open_model(f"ndif:{snapshot}", "cpu"), TEXT)
    said = _said(err)
    assert not marker.exists()
    assert "'https://ndif.example'" in said and "data only" in said and KEY not in said
    assert sent["post"] == "https://ndif.example" and sent["socket"].startswith("wss://ndif.example/")


def test_an_answer_of_tensors_still_reads(snapshot, ndif, monkeypatch):
    """What a job really brings back (a local job's layers, tensors and plain values in dicts with
    tuple keys) is read through the same data-only loader, as the Run's trace."""
    from attnscope.engine.remote import trace_remote
    from attnscope.engine.remote.run import session_for

    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")
    here = open_model(f"ndif:{snapshot}", "cpu")
    ids = [1, 5, 9, 12, 7]
    job = session_for(here).run(ids, (3, 5), [(16, "max")])
    monkeypatch.delenv("ATTNSCOPE_NDIF")
    sent = _stand_in(monkeypatch, [_completed(_saved({"layers": job.layers, "said": []}))])
    loaded = open_model(f"ndif:{snapshot}", "cpu")
    trace = trace_remote(loaded, TEXT, rows=2, overview=16)
    assert sent["key"] == KEY and sent["socket_header"] == {"ndif-api-key": KEY}
    assert trace.jobs == 1 and len(trace._k) == len(job.layers)
    torch.testing.assert_close(trace._k[0].reshape(job.layers[0]["k"].shape), job.layers[0]["k"])


@pytest.mark.parametrize("host", ["http://ndif.example", "ftp://ndif.example", "ndif.example", "https://",
                                  "https://\nx", "http://" + "a" * 120_000])
def test_the_key_goes_only_over_https_to_the_host_named(snapshot, ndif, monkeypatch, host):
    import nnsight

    from attnscope.engine.remote import trace_remote

    monkeypatch.setattr(nnsight.CONFIG.API, "HOST", host)
    sent = _stand_in(monkeypatch, [])
    with pytest.raises(RemoteJobError) as err:
        trace_remote(open_model(f"ndif:{snapshot}", "cpu"), TEXT)
    said = _said(err)
    assert "https" in said and "NDIF_HOST" in said and "not sent" in said and not sent
    monkeypatch.setenv("NDIF_HOST", host)                  # plain http to the host the user named: allowed
    if host == "http://ndif.example":
        with pytest.raises(RemoteJobError):                # the stand-in answers nothing more
            trace_remote(open_model(f"ndif:{snapshot}", "cpu"), TEXT)
        assert sent["post"] == host


def test_a_key_of_blanks_is_no_key_even_where_nnsight_read_it_itself(snapshot, ndif, monkeypatch):
    """nnsight reads NDIF_API_KEY into its CONFIG on its own: a variable of blanks must still be
    "no key is set", never a blank key sent (issue 58)."""
    import nnsight

    from attnscope.engine.remote import trace_remote

    monkeypatch.setenv("NDIF_API_KEY", "   ")
    monkeypatch.setattr(nnsight.CONFIG.API, "APIKEY", "   ")
    sent = _stand_in(monkeypatch, [])
    with pytest.raises(RemoteJobError) as err:
        trace_remote(open_model(f"ndif:{snapshot}", "cpu"), TEXT)
    assert "No NDIF API key is set" in _said(err) and not sent


def test_offline_the_hub_is_blamed_not_ndif_and_nothing_is_said_before(snapshot, ndif, monkeypatch, capsys):
    from nnsight.modeling import huggingface

    from attnscope.cli.entry import main

    monkeypatch.delitem(huggingface._ID_CACHE, "tiny/llama")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as hub
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    sent = _stand_in(monkeypatch, [])
    assert main(["record", f"ndif:{snapshot}", "--text", TEXT, "--out", str(snapshot.parent / "r.safetensors")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "offline" in err and "hub" in err and "NDIF could not be reached" not in err
    assert not sent


# ---- an ndif: folder's files, read at the door (NDIF mode, no key: nothing is sent) -----------------
def _folder_with(root, name, config=None, files=None):
    import shutil

    folder = root / name
    shutil.copytree(tiny_folder(root / "base", "llama"), folder)
    if config is not None:
        raw = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(config(raw) if callable(config) else config)
    for file, data in (files or {}).items():
        (folder / file).write_bytes(data)
    return folder


def _with(**values):
    return lambda raw: json.dumps({**raw, **values})


CONFIGS = {
    "100,000 layers": (_with(num_hidden_layers=100_000), "num_hidden_layers=100000"),
    "10 million layers": (_with(num_hidden_layers=10_000_000), "num_hidden_layers=10000000"),
    "not JSON": ('{"model_type": "llama",', "not valid JSON"),
    "nested 100,000 deep": (lambda raw: json.dumps(raw)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
                            "nests"),
    "a bogus dtype": (_with(dtype="bogus", torch_dtype="bogus"), "'bogus'"),
    "an integer dtype": (_with(dtype="int8"), "'int8'"),
    "an encoder": (_with(model_type="bert"), "decoders"),
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_an_ndif_config_is_refused_at_the_door_in_one_sentence(tmp_path, monkeypatch, case):
    from attnscope.engine.errors import ModelLoadError

    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    config, says = CONFIGS[case]
    folder = _folder_with(tmp_path, "m", config=config)
    with pytest.raises(ModelLoadError) as err:
        open_model(f"ndif:{folder}", "cpu")
    said = _said(err)
    assert says in said and "Recursion" not in said and "codec" not in said


@pytest.mark.parametrize("data, says", [(b"\xff\xfe garbage \x00", "not UTF-8"), (b"{", "not valid JSON"),
                                        (b"[" * 100_000 + b"]" * 100_000, "nests")])
def test_a_garbage_tokenizer_is_one_sentence_in_words(tmp_path, monkeypatch, data, says):
    from attnscope.engine.errors import ModelLoadError

    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    folder = _folder_with(tmp_path, "m", files={"tokenizer.json": data})
    with pytest.raises(ModelLoadError) as err:
        open_model(f"ndif:{folder}", "cpu")
    said = _said(err)
    assert "tokenizer.json" in said and says in said and "codec" not in said


@pytest.mark.parametrize("mode", ["ndif", "local"])
@pytest.mark.parametrize("name", ["random-gpt", "gpt", "resources/checkpoints/gpt.safetensors"])
def test_ndif_takes_a_transformers_model_not_attnscopes_own(monkeypatch, capsys, mode, name):
    from attnscope.cli.entry import main

    if mode == "local":
        monkeypatch.setenv("ATTNSCOPE_NDIF", "local")
    else:
        monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    assert main(["record", f"ndif:{name}", "--text", TEXT, "--out", "/nonexistent/r.safetensors"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ndif: takes a Hugging Face hub id" in err and "pipeline" not in err


def test_heads_of_a_model_served_by_ndif_says_why_not(snapshot, monkeypatch, capsys):
    from attnscope.cli.entry import main

    monkeypatch.delenv("ATTNSCOPE_NDIF", raising=False)
    assert main(["heads", f"ndif:{snapshot}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "runs on NDIF and has no weights here" in err and "stack" not in err


# ---- why: its options in the project's words, and the sinks family --------------------------------
WHY = ["why", "random-gpt", "--text", TEXT]


@pytest.mark.parametrize("option, value", [("--head", "1.²"), ("--head", "𐩀.0"), ("--head", "cross:1.²"),
                                           ("--head", "1." + "9" * 5000), ("--query", "²"), ("--key", "𐩀"),
                                           ("--query", "9" * 5000), ("--versus", "１")])
def test_a_why_option_that_is_no_number_names_the_option(capsys, option, value):
    from attnscope.cli.entry import main

    given = {"--head": "0.0", "--query": "2", "--key": "1", option: value}
    args = WHY + [a for k, v in given.items() for a in (k, v)]
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option in err and "0-9" in err and len(err) < 300
    assert "invalid" not in err and "head_arg" not in err and "_position" not in err


@pytest.mark.parametrize("command", ["why", "lens"])
def test_target_on_a_decoder_is_refused_not_dropped(capsys, command):
    from attnscope.cli.entry import main

    args = [command, "random-gpt", "--text", TEXT, "--target", "der"]
    args += ["--head", "0.0", "--query", "2", "--key", "1"] if command == "why" else []
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--target" in err and "a decoder" in err


def test_why_splits_a_gpt_oss_head_with_its_sinks_and_its_experts(tmp_path):
    """gpt-oss: each head's sink adds a key-less logit to the softmax's denominator, and its MLP
    is a mixture of experts that returns (output, router scores). The split is the score's, the
    weight the one the Run draws (the sink in it), and the loadings run too."""
    import numpy as np

    from attnscope.engine.experiments import why
    from attnscope.engine.traces.tracing import trace_text
    from tests.helpers.hf_sinks import sink_folder

    loaded = open_model(str(sink_folder(tmp_path, "gpt_oss")), "cpu")
    split = why(loaded, TEXT, "decoder self", 1, 1, 5, 2, loadings=True)
    assert "L0.mlp" in split.query_sources
    np.testing.assert_allclose(split.terms.sum(), split.score, atol=1e-5)
    drawn = reading.head(trace_text(loaded, TEXT), "decoder self", 1, 1)
    np.testing.assert_allclose(split.weight, drawn[5, 2], atol=1e-5)
    assert drawn[5].sum() < 1 - 1e-3                                  # the sink took its share of the row
    assert split.loadings is not None


# ---- issue 58 item 7: the logit lens of a model served by NDIF, in NDIF mode ------------------------
def test_lens_of_a_model_served_by_ndif_runs_in_ndif_mode(snapshot, ndif, monkeypatch, capsys):
    """The meta-device model (no seam, no weights) finds its blocks from the attention ops; the job
    goes to the (stand-in) host and its answer, the reductions a local job brings back, is the
    lens the CLI prints: the same tokens as nnsight's local stand-in gives."""
    from attnscope.engine.remote import remote_lens
    from attnscope.engine.remote.lens import lens_job, tail_paths
    from attnscope.engine.remote.run import session_for
    from attnscope.cli.entry import main

    monkeypatch.setenv("ATTNSCOPE_NDIF", "local")
    here = open_model(f"ndif:{snapshot}", "cpu")
    expected = remote_lens(here, TEXT)
    paths = tail_paths(here, session_for(here).ops)
    back = lens_job(session_for(here), expected.token_ids, *paths, None, 5)
    monkeypatch.delenv("ATTNSCOPE_NDIF")
    served = open_model(f"ndif:{snapshot}", "cpu")
    assert {p.device.type for p in served.model.parameters()} == {"meta"}
    assert tail_paths(served, session_for(served).ops) == paths
    sent = _stand_in(monkeypatch, [_completed(_saved({"back": back}))])
    import nnsight
    # nnsight's debug mode (NNSIGHT_DEBUG, or a -v anywhere in sys.argv, as `pytest -v` has) prints the
    # job's status lines to stdout: they must go to stderr, and stdout hold the JSON alone.
    monkeypatch.setattr(nnsight.CONFIG.APP, "DEBUG", True)
    capsys.readouterr()
    assert main(["lens", f"ndif:{snapshot}", "--text", TEXT]) == 0
    said = capsys.readouterr()
    printed = json.loads(said.out)
    assert "payload" in said.err
    assert sent["post"] == "https://ndif.example" and printed["token_ids"] == expected.token_ids
    assert [[top[0][0] for top in layer["top"]] for layer in printed["layers"]] == \
        [[int(ids[0]) for ids in layer] for layer in expected.top_ids]
