"""What the local Hugging Face cache holds, as File > Open from Hugging Face cache lists it:
each model's name, size, architecture and whether attnscope can open it (and why not).

Its own module because it asks the loader's stages of every snapshot (engine.loading.describe,
then engine.loading.check: all that is known before a model is built), while the loader asks
engine.loading.hub_cache to resolve ids: imports go one way.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from attnscope.engine.loading.check import check_folder
from attnscope.engine.loading.describe import describe_folder, read_config
from attnscope.engine.loading.hub_cache import cache_dir, cached_snapshot, newest_snapshot
from attnscope.engine.errors import ModelLoadError
from attnscope.engine.inputs import check_kind


@dataclass(frozen=True)
class CachedModel:
    """One model of the cache, as the File > Open from Hugging Face cache dialog lists it."""
    repo_id: str
    folder: Path                 # its snapshot (refs/main, else the newest)
    size_bytes: int              # what its snapshot's files take on disk
    architecture: str            # config.json's model_type, or "" when it has none
    problem: str | None          # why attnscope cannot open it; None when it can


def cached_models(cache: Path | None = None) -> list[CachedModel]:
    """Every model in the cache, by name, with whether attnscope can open it and why not.
    Reads configs, indexes and weight headers only (see engine.loading.check.check_folder)."""
    return [checked(listed) for listed in cached_snapshots(cache)]


def cached_snapshots(cache: Path | None = None) -> list[CachedModel]:
    """Every model in the cache with its name, snapshot and size, from the file system alone
    (milliseconds): a list can show these at once and fill in ``checked`` as each is read
    (the checks of a single model took the window's dialog seconds)."""
    root = cache or cache_dir()
    found = []
    try:
        repos = sorted(p for p in root.iterdir() if p.name.startswith("models--") and p.is_dir())
    except OSError:
        return []
    for repo in repos:
        repo_id = repo.name[len("models--"):].replace("--", "/")
        folder = cached_snapshot(repo_id, cache=root) or newest_snapshot(repo)
        if folder is None:
            continue
        found.append(CachedModel(repo_id, folder, _snapshot_bytes(folder), "", None))
    return found


def checked(listed: CachedModel) -> CachedModel:
    """``listed`` with its architecture and whether attnscope can open it (the loader's checks)."""
    check_kind(listed, CachedModel, "listed", "a CachedModel (engine.loading.cached_snapshots)")
    return CachedModel(listed.repo_id, listed.folder, listed.size_bytes, *_openable(listed.folder))


def _snapshot_bytes(folder: Path) -> int:
    """What the snapshot's files take on disk, links followed (into blobs/, or anywhere)."""
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += (Path(dirpath) / name).stat().st_size
            except OSError:
                pass
    return total


def _openable(folder: Path) -> tuple[str, str | None]:
    """(architecture, problem) of a snapshot: every check before loading, none of the loading."""
    try:
        arch = read_config(folder).get("model_type")
    except ModelLoadError as exc:
        return "", _short(exc, folder)
    arch = arch if isinstance(arch, str) else ""
    try:
        check_folder(describe_folder(folder))
    except ModelLoadError as exc:
        return arch, _short(exc, folder)
    return arch, None


def _short(exc: Exception, folder: Path) -> str:
    """The loader's sentence without the long snapshot path it starts with."""
    text = str(exc)
    for prefix in (f"{folder}: ", f"{folder} "):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text.replace(str(folder), "this snapshot")
