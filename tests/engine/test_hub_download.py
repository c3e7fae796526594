"""Downloading a hub id (engine/loading/hf.py ``_download``), end to end against a fake hub.

Why: a hub id not in the local cache is downloaded when the hub can be reached, and no
test machine can reach it. So the hub is faked where attnscope meets huggingface_hub:
``hf_hub_download``, ``HfApi.list_repo_files`` and ``snapshot_download`` copy files from a
"remote" folder into a cache laid out as huggingface_hub writes one (blobs named by their
hash, ``snapshots/<commit>/`` links to them, ``refs/main`` written by the first file, as the
real functions do), honour ``allow_patterns`` as huggingface_hub filters them (fnmatch), and
drive the given tqdm class as the real ``snapshot_download`` does: "Downloading bytes" bars
(unit "B") updated from the worker threads, and the "Fetching N files" bar (unit "it")
updated by huggingface_hub's own ``hf_thread_map`` as each file lands.

The remote repo is a tiny random Qwen2 saved in shards, with decoys that must never be
fetched: code (``modeling_evil.py``), the same weights as .bin shards beside the
safetensors ones, files of other frameworks and a subfolder. Each test checks what was
fetched, what the loader reported, and what a later open (online or offline) makes of the
cache, with no network anywhere. The last tests run huggingface_hub itself, only its HTTP
transport faked.
"""
from __future__ import annotations

import fnmatch
import hashlib
import logging
import json
import os
import shutil
from pathlib import Path

import huggingface_hub
import pytest
import torch

import attnscope.engine.loading.hf as hf
import attnscope.engine.runtime.free_memory as free_memory
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.loading.hf import HFModelError, load_hf_model
from attnscope.engine.loading.hub_cache import cached_snapshot, lacks_weights, repo_folder
from attnscope.engine.loading.progress import DOWNLOAD_SHARE, LoadCancelled, size_of
from tests.helpers.hf_sharded import build_model, save_sharded

REPO = "tiny-org/qwen-sharded"
DECOYS = {"modeling_evil.py": "import os\nos.system('echo pwned')\n", "README.md": "# a model\n",
          "tf_model.h5": "not weights", "onnx/model.onnx": "not weights", "onnx/config.json": "{}"}


CHAT_TEMPLATE = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """Remote repos by layout: {"safetensors": folder, "bin": folder, "single": folder}, and
    the model they all hold (its state dict, to compare what was opened against)."""
    root = tmp_path_factory.mktemp("remote")
    model, tokenizer = build_model("qwen2")
    folders = {"safetensors": save_sharded(model, tokenizer, root / "safetensors", "safetensors"),
               "bin": save_sharded(model, tokenizer, root / "bin", "bin")}
    for file in save_sharded(model, tokenizer, root / "bin-copy", "bin").glob("pytorch_model*"):
        shutil.copy(file, folders["safetensors"] / file.name)    # the same weights as .bin: never needed
    single = root / "single"
    model.save_pretrained(single, max_shard_size="100MB")
    tokenizer.save_pretrained(single)
    for file in folders["safetensors"].glob("model-*-of-*.safetensors"):
        shutil.copy(file, single / file.name)                    # stray shards beside model.safetensors
    folders["single"] = single
    for folder in folders.values():
        for name, text in DECOYS.items():
            (folder / name).parent.mkdir(exist_ok=True)
            (folder / name).write_text(text)
        (folder / "chat_template.jinja").write_text(CHAT_TEMPLATE)   # an instruct model's: fetched with the side files
    state = {k: v.clone() for k, v in model.state_dict().items()}
    return folders, state


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


class FakeHub:
    """huggingface_hub's three entry points, serving ``remote`` as ``repo_id``; ``closed``
    makes every call fail (a second open must not reach the hub)."""

    def __init__(self, remote: Path, repo_id: str = REPO):
        self.remote, self.repo_id = remote, repo_id
        self.commit = hashlib.sha1(f"{repo_id}:{remote}".encode()).hexdigest()
        self.calls: list[str] = []          # every call made, in order
        self.fetched: list[str] = []        # files snapshot_download placed in the cache
        self.closed = False

    def _call(self, what: str, repo_id: str) -> None:
        self.calls.append(what)
        if self.closed:
            raise AssertionError(f"the hub was asked ({what}) after the model was cached")
        assert repo_id == self.repo_id

    def _put(self, filename: str, cache_dir) -> Path:
        """One file into the cache as huggingface_hub writes it: blob, link, refs/main."""
        source = self.remote / filename
        if not source.is_file():
            raise huggingface_hub.errors.EntryNotFoundError(f"{filename} is not in {self.repo_id}")
        repo = repo_folder(self.repo_id, Path(cache_dir))
        blob = repo / "blobs" / hashlib.sha256(source.read_bytes()).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(self.commit)
        link = repo / "snapshots" / self.commit / filename
        if not link.exists():
            shutil.copyfile(source, str(blob) + ".incomplete")
            os.replace(str(blob) + ".incomplete", blob)
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(blob, link.parent), link)
        return link

    def hf_hub_download(self, repo_id, filename, *, cache_dir=None, **_):
        self._call(f"hf_hub_download {filename}", repo_id)
        return str(self._put(filename, cache_dir))

    def list_repo_files(self, repo_id, **_):
        self._call("list_repo_files", repo_id)
        return _files(self.remote)

    def get_paths_info(self, repo_id, paths, **_):
        self._call("get_paths_info", repo_id)
        return [type("RepoFile", (), {"path": p, "size": (self.remote / p).stat().st_size})()
                for p in paths if (self.remote / p).is_file()]

    def snapshot_download(self, repo_id, *, cache_dir=None, allow_patterns=None, ignore_patterns=None,
                          tqdm_class=None, max_workers=1, **_):
        from huggingface_hub.utils import filter_repo_objects
        from huggingface_hub.utils.tqdm import _create_progress_bar, hf_thread_map

        self._call("snapshot_download", repo_id)
        assert ignore_patterns is None
        files = list(filter_repo_objects(_files(self.remote), allow_patterns=allow_patterns))
        assert files == [f for f in _files(self.remote) if any(fnmatch.fnmatch(f, p) for p in allow_patterns)]
        repo = repo_folder(repo_id, Path(cache_dir))
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(self.commit)          # written before any file, as the real one does
        snapshot = repo / "snapshots" / self.commit
        bytes_bar = _create_progress_bar(cls=tqdm_class, log_level=logging.INFO, desc="Downloading bytes", total=0,
                                         initial=0, unit="B", unit_scale=True)

        def fetch(name):
            if not (snapshot / name).exists():
                bytes_bar.total += (self.remote / name).stat().st_size
                bytes_bar.update((self.remote / name).stat().st_size)      # from the worker thread
                self._put(name, cache_dir)
                self.fetched.append(name)

        try:
            hf_thread_map(fetch, files, desc=f"Fetching {len(files)} files", max_workers=max_workers,
                          tqdm_class=tqdm_class)
        finally:
            bytes_bar.close()
        return str(snapshot)


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache of this test's own, found through HF_HOME."""
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    return tmp_path / "hf-home" / "hub"


@pytest.fixture
def serve(remote, hub_cache, monkeypatch):
    """``serve(layout)``: the hub online, serving the remote repo of that layout; its FakeHub."""
    def start(layout: str = "safetensors", folder: Path | None = None) -> FakeHub:
        hub = FakeHub(folder or remote[0][layout])
        monkeypatch.setattr(hf, "_online", lambda *a, **k: True)
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", hub.hf_hub_download)
        monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)
        monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files",
                            lambda self, repo_id, **kw: hub.list_repo_files(repo_id, **kw))
        monkeypatch.setattr(huggingface_hub.HfApi, "get_paths_info",
                            lambda self, repo_id, paths, **kw: hub.get_paths_info(repo_id, paths, **kw))
        return hub
    return start


def _offline(monkeypatch):
    def no_network(*a, **k):
        return False
    monkeypatch.setattr(hf, "_online", no_network)


def _same_weights(loaded, state) -> None:
    got = loaded.model.state_dict()
    for name, tensor in state.items():
        if name in got:
            assert torch.equal(got[name].to(tensor.dtype), tensor), name
    assert {"model.embed_tokens.weight", "model.layers.1.mlp.down_proj.weight"} <= set(got)


WEIGHTS = {"safetensors": lambda f: f.startswith("model") and f.endswith(".safetensors") or f == INDEX_ST,
           "bin": lambda f: f.startswith("pytorch_model"),
           "single": lambda f: f == "model.safetensors"}
INDEX_ST = "model.safetensors.index.json"


@pytest.mark.parametrize("layout", ["safetensors", "bin", "single"])
def test_downloaded_repo_opens_with_its_weights_and_no_code(serve, remote, layout):
    hub = serve(layout)
    records = []
    loaded = open_model(REPO, "cpu", progress=records.append)
    assert loaded.family == "hf-decoder" and loaded.meta["source"] == REPO
    _same_weights(loaded, remote[1])

    snapshot = cached_snapshot(REPO)
    here = set(_files(snapshot))
    weights = {f for f in _files(hub.remote) if WEIGHTS[layout](f)}
    assert weights and weights <= here, "every weight file transformers reads was fetched"
    shards = {f for f in weights if "-of-" in f}
    assert len(shards) >= (2 if layout != "single" else 0)
    assert not any(f.endswith(".py") for f in here), "code is never fetched"
    assert not {"tf_model.h5", "onnx/model.onnx", "onnx/config.json", "README.md"} & here
    other = {"safetensors": "pytorch_model", "bin": "model", "single": "model-"}[layout]
    assert not [f for f in here if f.startswith(other) and f not in weights], "no second weight format"
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= here
    assert set(hub.fetched) | {"config.json"} | ({INDEX_ST} if layout == "safetensors" else set()) \
        | ({"pytorch_model.bin.index.json"} if layout == "bin" else set()) >= here

    fetching = [r for r in records if r.text.startswith("downloading")]
    n = len(here)
    assert fetching and fetching[-1].text.endswith(f"file {n:,} of {n:,}"), [r.text for r in records]
    fractions = [r.fraction for r in records]
    assert fractions == sorted(fractions), fractions
    assert fractions[-1] == 1.0 and all(0.0 <= f <= 1.0 for f in fractions)


def test_second_open_is_served_from_the_cache(serve, remote, monkeypatch):
    hub = serve("safetensors")
    load_hf_model(REPO, "cpu")
    first = list(hub.calls)
    assert "snapshot_download" in first
    hub.closed = True

    def no_probe(*a, **k):
        raise AssertionError("a cached model needs no network probe")
    monkeypatch.setattr(hf, "_online", no_probe)
    again = open_model(REPO, "cpu")
    _same_weights(again, remote[1])
    assert hub.calls == first, "the second open asked the hub nothing"


def test_cancel_after_the_first_file_leaves_no_model_that_looks_complete(serve, hub_cache, monkeypatch):
    hub = serve("safetensors")
    asked = []

    def stop():
        asked.append(len(hub.fetched))
        return len(hub.fetched) >= 1
    with pytest.raises(LoadCancelled, match="cancelled"):
        open_model(REPO, "cpu", stop=stop)
    shards = [f for f in _files(hub.remote) if f.startswith("model-")]
    assert 1 <= len(hub.fetched) < len(shards), "the download stopped soon after the first file"
    assert asked and asked[0] == 0, "stop was asked while the download ran"

    # The half-downloaded snapshot is on disk but is not the cache's copy of the model:
    # an offline open says the model is not there, not that it is broken, nor opens it.
    assert cached_snapshot(REPO) is None
    assert (repo_folder(REPO) / "snapshots" / hub.commit / "config.json").exists()
    _offline(monkeypatch)
    with pytest.raises(HFModelError, match="offline"):
        open_model(REPO, "cpu")

    # Online again, the download resumes: the files already here are not fetched twice.
    again = serve("safetensors")
    loaded = open_model(REPO, "cpu")
    assert loaded.family == "hf-decoder" and cached_snapshot(REPO) is not None
    assert again.fetched and not set(again.fetched) & set(hub.fetched), "no file fetched twice"


def test_cancel_that_surfaces_as_a_library_error_is_still_a_cancel(serve, monkeypatch):
    """A LoadCancelled raised inside a progress callback that the library runs from native
    code (hf_xet's) may come back as the library's own error: the user cancelled, so the
    load says cancelled, not "Could not download"."""
    hub = serve("safetensors")
    stopped = []

    def failing(*a, **k):
        stopped.append(True)
        raise RuntimeError("progress callback failed")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", failing)
    with pytest.raises(LoadCancelled):
        open_model(REPO, "cpu", stop=lambda: bool(stopped))
    stopped.clear()
    with pytest.raises(HFModelError, match=f"Could not download {REPO}: progress callback failed"):
        open_model(REPO, "cpu", stop=lambda: False)
    assert hub.calls.count("list_repo_files") == 2


def test_snapshot_left_by_a_killed_download_is_resumed_online_and_refused_offline(serve, remote, monkeypatch):
    """A download killed with the process (no exception to clean up after) leaves refs/main
    pointing at a snapshot that lacks shards."""
    hub = serve("safetensors")
    load_hf_model(REPO, "cpu")
    snapshot = cached_snapshot(REPO)
    lost = sorted(f for f in _files(snapshot) if f.startswith("model-"))[-1]
    (snapshot / lost).unlink()

    _offline(monkeypatch)
    with pytest.raises(HFModelError, match=f"{lost} is missing.*stopped early"):
        open_model(REPO, "cpu")

    monkeypatch.setattr(hf, "_online", lambda *a, **k: True)
    hub.fetched.clear()
    loaded = open_model(REPO, "cpu")
    _same_weights(loaded, remote[1])
    assert hub.fetched == [lost], "only the missing shard was fetched again"


def test_repo_without_weights_is_refused_in_one_sentence(serve, remote, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(remote[0]["safetensors"], bare,
                    ignore=lambda d, names: [n for n in names if n.startswith(("model", "pytorch_model"))])
    hub = serve(folder=bare)
    with pytest.raises(HFModelError, match=f"{REPO} on the Hugging Face hub has no weights attnscope can read"):
        open_model(REPO, "cpu")
    assert "snapshot_download" not in hub.calls, "nothing is fetched for a repo with no weights"
    assert cached_snapshot(REPO) is None


def test_the_download_bar_counts_the_weights_bytes_then_the_load_follows(serve, remote):
    """huggingface_hub's bytes bar grows its total as each file starts: the bar goes by the
    weights' sizes asked first, so a single 1 GB file is not "done" once the small files are."""
    hub = serve("single")
    records = []
    open_model(REPO, "cpu", progress=records.append)
    weights = (hub.remote / "model.safetensors").stat().st_size
    down = [r for r in records if r.text.startswith("downloading")]
    # The hub's bar grows its total as each file starts, in its worker threads and in any order (the
    # side files may join it before the files are counted): the total said is never below the weights'
    # size, asked before the first byte, and the files are counted.
    assert weights < 1 << 20 and size_of(weights).endswith(" KiB")
    said_total = lambda text: float(text.split(" of ")[1].split(" KiB")[0].replace(",", ""))  # noqa: E731
    assert all(said_total(r.text) >= round(weights / 1024) for r in down), [r.text for r in down]
    assert any(", file " in r.text for r in down), [r.text for r in down]
    assert all(r.fraction <= DOWNLOAD_SHARE for r in down) and down[-1].fraction >= 0.9 * DOWNLOAD_SHARE
    assert all(r.fraction >= DOWNLOAD_SHARE for r in records if r.text.startswith(("building", "reading")))
    assert "get_paths_info" in hub.calls


@pytest.mark.parametrize("short_of", ["disk", "memory"])
def test_a_model_too_large_is_refused_before_its_shards_are_fetched(serve, remote, tmp_path, monkeypatch, short_of):
    large = tmp_path / "large"
    shutil.copytree(remote[0]["safetensors"], large)
    index = json.loads((large / INDEX_ST).read_text())
    index["metadata"]["total_size"] = 40 * 2**30                         # the index says 40 GB
    (large / INDEX_ST).write_text(json.dumps(index))
    hub = serve(folder=large)
    if short_of == "disk":
        monkeypatch.setattr(shutil, "disk_usage", lambda _p: type("U", (), {"free": 10 * 2**30})())
        monkeypatch.setattr(free_memory, "available_memory", lambda: 100 * 2**30)
    else:
        monkeypatch.setattr(free_memory, "available_memory", lambda: 16 * 2**30)
    with pytest.raises(HFModelError) as err:
        open_model(REPO, "cpu")
    text = str(err.value)
    assert "40.0 GiB" in text and "nothing was downloaded" in text and "\n" not in text
    assert ("10.0 GiB free" in text) if short_of == "disk" else ("16.0 GiB" in text)
    assert "snapshot_download" not in hub.calls and hub.fetched == []
    assert cached_snapshot(REPO) is None                                  # nothing that looks like the model


def test_a_single_file_model_too_large_for_the_memory_is_refused_before_its_download(serve, monkeypatch):
    hub = serve("single")
    size = (hub.remote / "model.safetensors").stat().st_size
    monkeypatch.setattr(free_memory, "available_memory", lambda: size // 2)    # the hub's size of the file says it
    with pytest.raises(HFModelError, match="nothing was downloaded"):
        open_model(REPO, "cpu")
    assert "snapshot_download" not in hub.calls and hub.fetched == []


def test_offline_and_not_cached_says_so(hub_cache, monkeypatch):
    calls = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: calls.append(a))
    _offline(monkeypatch)
    with pytest.raises(HFModelError) as err:
        open_model(REPO, "cpu")
    assert "offline" in str(err.value) and str(hub_cache) in str(err.value) and REPO in str(err.value)
    assert not calls


def test_online_probe_honours_offline_mode_endpoint_and_proxy(monkeypatch):
    """No socket when HF_HUB_OFFLINE is on; the host probed is HF_ENDPOINT's (a mirror); a
    configured proxy is trusted (a direct connection would fail behind it)."""
    import socket

    tried = []

    def connect(address, timeout=None):
        tried.append(address)
        raise OSError("no network here")
    monkeypatch.setattr(socket, "create_connection", connect)
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    assert hf._online() is False and tried == []
    monkeypatch.setenv("HF_HUB_OFFLINE", "false")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "yes")          # huggingface_hub honours either
    assert hf._online() is False and tried == []
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    assert hf._online() is False and tried == [("huggingface.co", 443)]
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example:8080/")
    assert hf._online() is False and tried[-1] == ("mirror.example", 8080)
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")   # not the proxy of an http endpoint
    assert hf._online() is False and len(tried) == 3
    monkeypatch.delenv("HF_ENDPOINT")
    assert hf._online() is True and len(tried) == 3


# --- the real huggingface_hub, over a fake network ------------------------------------------
# The fakes above stand in for huggingface_hub's functions. Here huggingface_hub itself runs
# (repo info, tree listing, HEAD and GET of each file, its thread pool, its progress bars,
# its cache writes, resuming), and only its HTTP client is replaced: a transport that
# answers the hub's routes from the remote folder. What attnscope relies on in the library
# (refs written early, the tqdm class it is handed, a LoadCancelled raised inside a worker)
# is then the library's own behaviour, not a fake's.

@pytest.fixture
def real_hub(remote, hub_cache, monkeypatch):
    """``real_hub(layout)``: huggingface_hub online against a transport serving that remote
    repo; returns the list of requests made ("GET <file>", "HEAD <file>", "GET /api/...")."""
    import httpx2
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    factory = _http._GLOBAL_CLIENT_FACTORY
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf, "_online", lambda *a, **k: True)
    served = {}

    def handler(request):
        folder, commit = served["folder"], served["commit"]
        path = request.url.path
        if path == f"/api/models/{REPO}/revision/main":
            served["log"].append(f"GET {path}")
            return httpx2.Response(200, json={"id": REPO, "sha": commit,
                                              "siblings": [{"rfilename": f} for f in _files(folder)]})
        if path.startswith(f"/api/models/{REPO}/tree/"):
            served["log"].append(f"GET {path}")
            return httpx2.Response(200, json=[{"type": "file", "path": f, "size": (folder / f).stat().st_size,
                                               "oid": hashlib.sha1((folder / f).read_bytes()).hexdigest()}
                                              for f in _files(folder)])
        prefix = f"/{REPO}/resolve/"
        if path.startswith(prefix):
            name = path[len(prefix):].split("/", 1)[1]
            served["log"].append(f"{request.method} {name}")
            if name not in _files(folder):
                return httpx2.Response(404, headers={"X-Error-Code": "EntryNotFound"})
            data = (folder / name).read_bytes()
            headers = {"X-Repo-Commit": commit, "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                       "Content-Length": str(len(data))}
            return httpx2.Response(200, headers=headers, content=data if request.method == "GET" else b"")
        return httpx2.Response(404)

    def serve_real(layout: str = "safetensors"):
        served.update(folder=remote[0][layout], commit=hashlib.sha1(layout.encode()).hexdigest(), log=[])
        return served["log"]

    _http.set_client_factory(lambda: httpx2.Client(transport=httpx2.MockTransport(handler), follow_redirects=True))
    yield serve_real
    _http.set_client_factory(factory)


def _got(log) -> set[str]:
    return {line.split(" ", 1)[1] for line in log if line.startswith("GET ") and not line.startswith("GET /api/")}


@pytest.mark.parametrize("layout", ["safetensors", "single"])
def test_real_library_fetches_every_shard_and_nothing_else(real_hub, remote, layout):
    log = real_hub(layout)
    records = []
    loaded = open_model(REPO, "cpu", progress=records.append)
    _same_weights(loaded, remote[1])
    folder = remote[0][layout]
    weights = {f for f in _files(folder) if WEIGHTS[layout](f)}
    assert weights <= _got(log), "every weight file was downloaded"
    assert not _got(log) - weights - set(hf.SIDE_FILES), f"only weights and side files: {sorted(_got(log))}"
    assert "chat_template.jinja" in _got(log) and loaded.tokenizer.chat_template == CHAT_TEMPLATE
    assert set(_files(cached_snapshot(REPO))) == _got(log)
    texts = [r.text for r in records]
    n = len(_got(log))
    assert any(t.endswith(f"file {n} of {n}") for t in texts), texts
    assert [r.fraction for r in records] == sorted(r.fraction for r in records)

    log.clear()
    again = open_model(REPO, "cpu")
    assert again.family == "hf-decoder" and log == [], "the second open is the cache's"


def test_real_library_cancel_keeps_nothing_that_looks_like_the_model(real_hub, monkeypatch):
    log = real_hub("safetensors")

    def stop():      # once a shard's download has begun
        return any(line.startswith("GET model-") for line in log)
    with pytest.raises(LoadCancelled):
        open_model(REPO, "cpu", stop=stop)
    snapshot = repo_folder(REPO) / "snapshots" / hashlib.sha1(b"safetensors").hexdigest()
    kept = set(_files(snapshot))
    assert {"config.json", INDEX_ST} <= kept and lacks_weights(snapshot), "the download stopped part way"
    assert cached_snapshot(REPO) is None, "and what it left is not the cache's copy of the model"

    _offline(monkeypatch)
    with pytest.raises(HFModelError, match="offline"):
        open_model(REPO, "cpu")

    monkeypatch.setattr(hf, "_online", lambda *a, **k: True)
    log.clear()
    loaded = open_model(REPO, "cpu")
    assert loaded.family == "hf-decoder" and cached_snapshot(REPO) is not None
    assert not _got(log) & kept, "what the cancelled download finished is not fetched again"
