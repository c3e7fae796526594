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

from engine.errors import RemoteJobError  # noqa: E402
from engine.loading.catalog import open_model  # noqa: E402
from tests.hf_tiny import tiny_folder  # noqa: E402

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
    from engine.remote import trace_remote

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
    from engine.remote import trace_remote
    from engine.remote.run import session_for

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

    from engine.remote import trace_remote

    monkeypatch.setattr(nnsight.CONFIG.API, "HOST", host)
    sent = _stand_in(monkeypatch, [])
    with pytest.raises(RemoteJobError) as err:
        trace_remote(open_model(f"ndif:{snapshot}", "cpu"), TEXT)
    said = _said(err)
    assert "https://" in said and "NDIF_HOST" in said and "nothing was sent" in said and not sent
    monkeypatch.setenv("NDIF_HOST", host)                  # plain http to the host the user named: allowed
    if host == "http://ndif.example":
        with pytest.raises(RemoteJobError):                # the stand-in answers nothing more
            trace_remote(open_model(f"ndif:{snapshot}", "cpu"), TEXT)
        assert sent["post"] == host


def test_offline_the_hub_is_blamed_not_ndif_and_nothing_is_said_before(snapshot, ndif, monkeypatch, capsys):
    from nnsight.modeling import huggingface

    from main import main

    monkeypatch.delitem(huggingface._ID_CACHE, "tiny/llama")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as hub
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    sent = _stand_in(monkeypatch, [])
    assert main(["record", f"ndif:{snapshot}", "--text", TEXT, "--out", str(snapshot.parent / "r.safetensors")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "offline" in err and "hub" in err and "NDIF could not be reached" not in err
    assert not sent
