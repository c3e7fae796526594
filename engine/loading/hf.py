"""Hugging Face hub ids: a model on the hub made a folder in the local cache, downloaded when online.

Part of the loader's first stage (resolving what was named, engine.loading.pipeline): a hub id already in the
local Hugging Face cache opens from there with no network (engine.loading.hub_cache); one
that is not is downloaded when the hub can be reached (offline: HFModelError at once). Only
its config, tokenizer and weight files are fetched, never code. Its config is checked and its
size known before the weights are fetched (a shard index's total, or the hub's sizes of the
weight files), so a model that the cache's disk, or the memory, cannot hold is refused
before gigabytes move; the download reports its bytes (engine.loading.progress) and stops
when asked, leaving nothing that a later open takes for the model.

``load_hf_model`` opens a folder or hub id through the loader's stages; the stages' names
imported from here (memory_needed, find_weights, minilm_path, ...) are kept where callers expect them.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path

import torch

from attnscope.engine.loading.check import (BERT_DEFAULTS, check_hf_sizes, hf_config,  # noqa: F401 - the stages' names,
                                  memory_needed)                               # imported from here
from attnscope.engine.loading.describe import (INDEX, SINGLE, TOKENIZER_FILES, find_weights, hf_role,  # noqa: F401
                                     minilm_path, read_config, read_index)
from attnscope.engine.loading.hub_cache import cache_dir, cached_snapshot, looks_like_hub_id
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.loading.progress import LoadCancelled, Reporter, size_of
from attnscope.engine.errors import HFModelError, ModelLoadError, first_line
from attnscope.engine.runtime.free_memory import check_memory, gib
from attnscope.engine.runtime.device import SPREAD, pick_device


def _online(timeout: float = 2.0) -> bool:
    """Whether the hub can be reached, as huggingface_hub would reach it: never in offline
    mode (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE, read as huggingface_hub reads them), the
    host of HF_ENDPOINT (a mirror) when set, and, behind a proxy, which a direct connection
    cannot pass, the download itself tells."""
    from urllib.parse import urlsplit

    if any(os.environ.get(v, "").upper() in ("1", "ON", "YES", "TRUE")
           for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return False
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    proxies = ("HTTPS_PROXY", "ALL_PROXY") if endpoint.scheme == "https" else ("HTTP_PROXY", "ALL_PROXY")
    if any(os.environ.get(v) or os.environ.get(v.lower()) for v in proxies):
        return True
    try:
        port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
        socket.create_connection((endpoint.hostname or "huggingface.co", port), timeout=timeout).close()
        return True
    except (OSError, ValueError):
        return False


# chat_template.jinja: where an instruct model's tokenizer keeps its chat template (transformers
# writes it beside tokenizer_config.json); without it a chat prompt is refused (engine.adapters.chat).
SIDE_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
              "added_tokens.json", *TOKENIZER_FILES, "merges.txt", "target.spm", "chat_template.jinja")


def _download(name: str, reporter: Reporter, spread: bool = False) -> Path:
    """A hub model's config, tokenizer and every weight file it needs (all its shards; never
    code) into the local cache, with the files fetched reported; its snapshot folder. One
    that ends early (cancelled, refused, failed) leaves the cache's ref as it was, so its
    files are not taken for the model by a later open (a later download resumes them).
    Its size (a shard index's total_size, or the hub's sizes of the weight files) is known
    first: a model that the cache's disk, or (unless ``spread``) the memory, cannot hold is
    refused before its weights are fetched."""
    from huggingface_hub import HfApi, hf_hub_download, snapshot_download

    from attnscope.engine.loading.hub_cache import unreferenced_unless_finished

    cache = cache_dir()
    with unreferenced_unless_finished(name, cache=cache):
        folder = Path(hf_hub_download(name, "config.json", cache_dir=cache)).parent
        raw = read_config(folder)
        hf_role(raw.get("model_type"), name)
        check_hf_sizes(hf_config(raw, name), name)
        available = set(HfApi().list_repo_files(name))
        wanted: list[str] = []
        listed = None                         # the weights' bytes as an index says them
        for fmt in ("safetensors", "bin"):      # transformers' order: one file, then shards, safetensors first
            if SINGLE[fmt] in available:
                wanted = [SINGLE[fmt]]
                break
            if INDEX[fmt] in available:
                index_folder = Path(hf_hub_download(name, INDEX[fmt], cache_dir=cache)).parent
                wanted = [INDEX[fmt], *dict.fromkeys(read_index(index_folder, INDEX[fmt], fmt).values())]
                listed = _index_total(index_folder / INDEX[fmt])
                break
        if not wanted:
            raise HFModelError(f"{name} on the Hugging Face hub has no weights attnscope can read (model.safetensors, "
                               "pytorch_model.bin or their shards).")
        sizes = _weights_size(name, wanted)
        _check_room(name, max(listed or 0, sizes or 0), cache, spread)
        reporter.check()
        return Path(snapshot_download(name, cache_dir=cache, allow_patterns=[*SIDE_FILES, *wanted],
                                      tqdm_class=_fetch_bar(reporter, name, sizes)))


def _weights_size(name: str, files: list[str]) -> int | None:
    """The bytes of ``files`` on the hub (for the download's bar), or None when it does not say."""
    from huggingface_hub import HfApi

    try:
        return sum(int(getattr(info, "size", 0) or 0) for info in HfApi().get_paths_info(name, files)) or None
    except Exception:  # the hub's own errors: only the bar's precision depends on it
        return None


def _index_total(index: Path) -> int | None:
    """The bytes of weights a shard index says it names (metadata.total_size), if it says."""
    try:
        return int(json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size") or 0) or None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _check_room(name: str, total: int, cache: Path, spread: bool) -> None:
    """Refuse a download of ``total`` bytes of weights that the cache's disk cannot hold, or
    that would be refused once downloaded because the memory cannot (a spread model may go
    to the disk): said before gigabytes are fetched. 0: the size is not known (the weights
    check after the download decides)."""
    import shutil

    if total <= 0:
        return
    where = cache
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    if total > free:
        raise HFModelError(f"{name} is {gib(total)} of weights, and the Hugging Face cache ({cache}) has {gib(free)} "
                           "free: nothing was downloaded. Free disk space, or set HF_HOME to a larger disk.")
    if not spread:
        check_memory(name, total, "this model's weights (nothing was downloaded)")


def _fetch_bar(reporter: Reporter, name: str, expected: int | None = None):
    """A tqdm class for huggingface_hub's bars (bytes downloaded, files fetched) that reports
    to ``reporter`` (and can stop the download) instead of writing to the terminal.

    huggingface_hub's bytes bars grow their total as each file starts, so after the small
    files first a bar at 100 % would stand still through a 1 GB shard: the fraction is the
    bytes over ``expected`` (the weights' sizes, asked before), else the files fetched."""
    from tqdm.auto import tqdm

    state = {"bytes": {}, "files": (0, 0)}        # bar -> (done, total) bytes; (done, total) files

    def say(force: bool) -> None:
        done = max((d for d, _ in state["bytes"].values()), default=0)
        total = max([t for _, t in state["bytes"].values()] + [expected or 0])
        fd, ft = state["files"]
        files = f"file {fd:,} of {ft:,}" if ft else ""
        if expected:                               # the weights' sizes known: the bar goes by bytes only
            reporter.downloading(min(1.0, done / total), f"{size_of(done)} of {size_of(total)}, {files}".rstrip(", "),
                                 force)
        elif ft:
            reporter.downloading(fd / ft, (f"{size_of(done)}, " if done else "") + files, force)
        else:
            reporter.check()

    class FetchBar(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = False
            kwargs["file"] = open(os.devnull, "w")  # noqa: SIM115 - closed with the bar
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            out = super().update(n)
            if self.unit == "B":
                state["bytes"][id(self)] = (self.n, self.total or 0)
                say(False)
            else:                                  # a file done: said even where the bar does not move
                state["files"] = (self.n, self.total or 0)
                say(True)
            return out

        def close(self):
            file = self.fp
            super().close()
            with contextlib.suppress(Exception):
                file.close()

    return FetchBar


def hub_folder(name: str, progress=None, stop=None, spread: bool = False) -> tuple[Path, Reporter | None]:
    """The snapshot folder of the hub id ``name``: from the local cache (no network), else
    downloaded when the hub can be reached (also when the cached copy lacks weights: a download
    that was killed part way resumes), and the Reporter the download's progress went to (None
    when nothing was downloaded), whose bar the build goes on with. ``spread``: the model may go
    to the disk (no memory check before it)."""
    from attnscope.engine.loading.hub_cache import lacks_weights

    snapshot = cached_snapshot(name)
    if snapshot is not None and not lacks_weights(snapshot):
        return snapshot, None
    if not _online():
        if snapshot is not None:      # a download killed part way: the weights check names what is missing
            return snapshot, None
        raise HFModelError(
            f"'{name}' is not a local folder, nor a model in the Hugging Face cache ({cache_dir()}), and the "
            "hub cannot be reached from this machine (offline). Set HF_HOME or HF_HUB_CACHE to the cache that holds "
            "it, or open its folder.")
    reporter = Reporter(Path(name).name or name, progress, stop)
    try:
        return _download(name, reporter, spread), reporter
    except ModelLoadError as exc:
        if type(exc) is ModelLoadError:     # engine.runtime.free_memory's words (the memory), a hub id's type
            raise HFModelError(str(exc)) from None
        raise
    except Exception as exc:
        reporter.check()              # a cancel that surfaced as the library's own error is still a cancel
        raise HFModelError(f"Could not download {name}: {first_line(exc)}") from None


def load_hf_model(path_or_name: str, device: str | torch.device = "cpu", progress=None, stop=None) -> LoadedModel:
    """A Hugging Face folder or hub id (never a checkpoint file) as a LoadedModel of family
    "hf-bert", "hf-encoder", "hf-decoder" or "hf-seq2seq", with its tokenizer: resolved here,
    then the loader's stages (engine.loading.pipeline.load); ``device`` may be "spread".

    ``progress`` gets engine.loading.progress.LoadProgress records; once ``stop()`` is true
    the load ends with LoadCancelled and nothing of it is kept."""
    from attnscope.engine.loading.pipeline import load
    from attnscope.engine.loading.source import Source

    spread = str(device) == SPREAD
    dev = pick_device(SPREAD) if spread else torch.device(device)
    try:
        path = Path(path_or_name).expanduser()
        if path.is_dir():
            found = Source(path_or_name, "folder", path)
        elif looks_like_hub_id(path_or_name):
            folder, reporter = hub_folder(path_or_name, progress, stop, spread)
            found = Source(path_or_name, "folder", folder, local=False, reporter=reporter)
        else:
            raise HFModelError(f"No such folder: {path}. Give a Hugging Face model folder or a hub id such as "
                               "Qwen/Qwen2.5-0.5B.")
        return load(found, dev, progress, stop, spread)
    except (HFModelError, LoadCancelled):
        raise
    except ModelLoadError as exc:  # from a stage's rules: the same words, this module's type
        raise HFModelError(str(exc)) from None
