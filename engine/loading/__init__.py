"""Every way a model enters: ``open_model`` (catalog.py) resolves what was named (a file, a
folder, a hub id, a bundled model) and the pipeline (pipeline.py) describes, checks and builds
it in numbered stages, each stage's rules beside it; checkpoints are saved and read
(checkpoint.py), the Hugging Face cache listed (cache_listing.py, hub_cache.py). Public: the
names gui/ and cli/ use, listed in ``__all__``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.loading.cache_listing import cached_snapshots, checked
    from attnscope.engine.loading.catalog import models_help, open_model
    from attnscope.engine.loading.checkpoint import (CheckpointError, check_checkpoint_path, load_checkpoint,
                                           save_checkpoint)
    from attnscope.engine.loading.convert import hf_to_scratch
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.loading.dense import DENSE_NOTE, check_seam
    from attnscope.engine.loading.hub_cache import cache_dir
    from attnscope.engine.loading.loaded import LoadedModel
    from attnscope.engine.loading.placement import accelerate_missing
    from attnscope.engine.loading.remote_source import local_mode, use_api_key

_PUBLIC = {
    "cached_snapshots": "cache_listing",
    "checked": "cache_listing",
    "models_help": "catalog",
    "open_model": "catalog",
    "CheckpointError": "checkpoint",
    "check_checkpoint_path": "checkpoint",
    "load_checkpoint": "checkpoint",
    "save_checkpoint": "checkpoint",
    "hf_to_scratch": "convert",
    "random_model": "demo",
    "DENSE_NOTE": "dense",
    "check_seam": "dense",
    "cache_dir": "hub_cache",
    "LoadedModel": "loaded",
    "accelerate_missing": "placement",
    "local_mode": "remote_source",
    "use_api_key": "remote_source",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["CheckpointError", "DENSE_NOTE", "LoadedModel", "accelerate_missing", "cache_dir", "cached_snapshots",
           "check_checkpoint_path", "check_seam", "checked", "hf_to_scratch", "load_checkpoint", "models_help", "open_model",
           "local_mode", "random_model", "save_checkpoint", "use_api_key"]
