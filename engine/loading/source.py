"""What the user named, resolved (the loader's first stage): the Source the other stages read.

The entry points resolve (engine.loading.catalog.open_model: any source; engine.loading.hf:
folders and hub ids, a hub id fetched into the local cache; engine.loading.checkpoint: a
file) and hand a Source to engine.loading.pipeline.load. Nothing of the files is read here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from attnscope.engine.errors import HFModelError, ModelLoadError

if TYPE_CHECKING:
    from attnscope.engine.loading.progress import Reporter


@dataclass(frozen=True)
class Source:
    """What the user named, resolved: which kind of source, and where its files are."""
    given: str              # what the user named
    kind: str               # "random", "checkpoint" or "folder" (a Hugging Face folder, the cache's included)
    path: Path | None       # the file or folder to read; None for a random model
    local: bool = True      # named as a file or folder, not as a hub id
    reporter: Reporter | None = field(default=None, compare=False)   # a download's: the build's bar goes on from it

    @property
    def family(self) -> str:
        """A random model's family ("random-gpt": "gpt")."""
        return self.given.split("-", 1)[1]

    @property
    def error(self) -> type[ModelLoadError]:
        """The load error type for this kind of source (what its loader always raised)."""
        from attnscope.engine.loading.checkpoint_format import CheckpointError

        return {"folder": HFModelError, "checkpoint": CheckpointError}.get(self.kind, ModelLoadError)
