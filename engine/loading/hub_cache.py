"""Models in the local Hugging Face cache: a hub id resolved offline to its snapshot folder.

Why: whoever ran ``from_pretrained("Qwen/Qwen2.5-0.5B")`` once has that model on disk, under
``~/.cache/huggingface/hub`` (or ``$HF_HOME/hub``, or ``$HF_HUB_CACHE``), in the layout
huggingface_hub writes: ``models--Qwen--Qwen2.5-0.5B/refs/main`` holds a commit hash, and
``snapshots/<hash>/`` holds the files (links into ``blobs/``). attnscope opens that snapshot
as a folder, with no network, as transformers does with ``local_files_only``.

What is in the cache, and whether each can be opened, is engine.loading.cache_listing.

A download that ends early (cancelled, failed) must not leave a snapshot that a later open
takes for the model: huggingface_hub writes ``refs/main`` with the first file it fetches, so
``unreferenced_unless_finished`` puts the ref back as it was; a download killed with its
process leaves one anyway, which ``lacks_weights`` tells (a later online open resumes it).

The cache folder is worked out when asked, from the environment as huggingface_hub reads
it (HF_HUB_CACHE, then HF_HOME/hub, then XDG_CACHE_HOME/huggingface/hub), not from
huggingface_hub's constants, which are fixed when it is first imported.
"""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from attnscope.engine.errors import ModelLoadError
from attnscope.engine.loading.describe import INDEX, SINGLE, read_index

# "org/name" or a bare "name" (the hub's old canonical models); never a path with more parts.
_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}$")
_FILE_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".ckpt", ".json", ".txt", ".tsv", ".gz")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def cache_dir() -> Path:
    """Where huggingface_hub keeps downloaded models on this machine, now."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = Path(os.environ["XDG_CACHE_HOME"]).expanduser() if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def looks_like_hub_id(source: str) -> bool:
    """Could ``source`` name a model on the hub ("Qwen/Qwen2.5-0.5B", "gpt2")? Paths with more
    parts, or ending like a file, cannot."""
    return bool(_HUB_ID.match(source)) and not source.lower().endswith(_FILE_SUFFIXES) and ".." not in source


def repo_folder(repo_id: str, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / ("models--" + repo_id.replace("/", "--"))


def cached_snapshot(repo_id: str, revision: str = "main", cache: Path | None = None) -> Path | None:
    """The snapshot folder of ``repo_id`` at ``revision`` (a branch, tag or commit hash) in the
    cache, or None when it is not there. Reads two small files; no network."""
    repo = repo_folder(repo_id, cache)
    commit = revision if _COMMIT.match(revision) else None
    if commit is None:
        try:
            commit = (repo / "refs" / revision).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
    if not _COMMIT.match(commit or ""):
        return None
    folder = repo / "snapshots" / commit
    return folder if folder.is_dir() else None


def complete_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot of ``repo_id`` when it holds its weights, else None: a hub id resolved in
    this room alone (no network); engine.loading.hf.hub_folder fetches what is not here."""
    snapshot = cached_snapshot(repo_id)
    return snapshot if snapshot is not None and not lacks_weights(snapshot) else None


def newest_snapshot(repo: Path) -> Path | None:
    try:
        snaps = [p for p in (repo / "snapshots").iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(snaps, key=lambda p: p.stat().st_mtime, default=None)


def lacks_weights(folder: Path) -> bool:
    """Whether a snapshot misses weights it should hold: none at all, or a file its index
    names (a link whose blob is gone counts as missing). Reads the index only."""
    for fmt in ("safetensors", "bin"):
        if (folder / SINGLE[fmt]).is_file():
            return False
        if (folder / INDEX[fmt]).exists():
            try:
                files = set(read_index(folder, INDEX[fmt], fmt).values())
            except ModelLoadError:
                return False                  # a broken index: the weights check says what is wrong
            return not all((folder / f).is_file() for f in files)
    return True


@contextlib.contextmanager
def unreferenced_unless_finished(repo_id: str, revision: str = "main", cache: Path | None = None):
    """Around a download of ``repo_id``: if it ends with an exception (cancelled, failed),
    ``refs/<revision>`` is put back as it was (removed if there was none), so the files it
    left are not found by ``cached_snapshot``. The files stay: a later download resumes."""
    ref = repo_folder(repo_id, cache) / "refs" / revision
    try:
        before = ref.read_bytes()
    except OSError:
        before = None
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            if before is None:
                ref.unlink(missing_ok=True)
            else:
                ref.write_bytes(before)
        raise
