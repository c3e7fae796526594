"""One-file checkpoints: save a LoadedModel, load it back, and refuse bad files clearly.

The format (one ``.safetensors`` file whose string table carries the family, config,
tokenizers and training facts), and how a file is read, is engine.loading.checkpoint_format.
Saving is here: written to a temporary beside the file, then renamed. ``load_checkpoint``
also reads PyTorch files (ours and nanoGPT's ``ckpt.pt``, always with
``torch.load(weights_only=True)``) through the loader's stages (engine.loading.pipeline):
nothing is built before its config passed ``engine.loading.check`` (sane bounds and a
memory estimate), no tensor is read before its name and shape matched the model, and
weights with NaN or Inf are refused. Every way a file can be wrong ends in a CheckpointError
whose message says what is wrong and what would work; the GUI shows it as is.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import torch

from attnscope.engine.loading.checkpoint_format import FORMAT, FORMAT_VERSION, CheckpointError  # noqa: F401 - named here too
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.errors import ModelLoadError
from attnscope.engine.models import FAMILIES
from attnscope.engine.models.tokenizer import Tokenizer
from attnscope.engine.runtime.files import atomic_path
from attnscope.engine.inputs import check_kind, check_path

# ---- saving ----------------------------------------------------------------------------
def checkpoint_metadata(loaded: LoadedModel, training: dict | None = None) -> dict[str, str]:
    """The string table that describes ``loaded`` (see the module docstring)."""
    if loaded.family not in FAMILIES:
        raise CheckpointError(f"Only attnscope's own families can be saved, not {loaded.family!r}.")
    if not isinstance(loaded.tokenizer, Tokenizer):
        raise CheckpointError("This model has no tokenizer of its own (nanoGPT import); there is nothing complete to save.")
    meta = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "family": loaded.family,
        "name": loaded.name,
        "config": json.dumps(dataclasses.asdict(loaded.model.config)),
        "tokenizer": loaded.tokenizer.to_json(),
        "training": json.dumps(training if training is not None else loaded.meta.get("training", {})),
    }
    if loaded.target_tokenizer is not None:
        meta["target_tokenizer"] = loaded.target_tokenizer.to_json()
    return meta


def _unique_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with tied weights (one tensor under two names) stored once."""
    seen, out = set(), {}
    for name, tensor in model.state_dict().items():
        key = (tensor.data_ptr(), tuple(tensor.shape))
        if key not in seen:
            seen.add(key)
            out[name] = tensor.detach().cpu().contiguous()
    return out


def check_checkpoint_path(path: str | Path) -> Path:
    """The path a checkpoint can be saved to, checked before any work is done (CheckpointError if not)."""
    check_path(path, "checkpoint to write")
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path} is a folder; give a file name ending in .safetensors, e.g. "
                              f"{path / 'model.safetensors'}.")
    if path.suffix != ".safetensors":
        what = f"{path.suffix} files" if path.suffix else "names without an extension"
        raise CheckpointError(f"Checkpoints are saved as .safetensors files, not {what}: "
                              f"name it {path.stem or 'model'}.safetensors.")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise CheckpointError(f"Cannot write {path}: {folder} is not a folder this user can write to.")
    return path


def save_checkpoint(loaded: LoadedModel, path: str | Path, training: dict | None = None) -> Path:
    """Write ``loaded`` to one .safetensors file (engine.runtime.files.atomic_path: written to a temporary
    beside it, then renamed, so an interrupted save never harms the file that was there)."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    check_path(path, "checkpoint to write")
    from safetensors.torch import save_file

    path = check_checkpoint_path(path)
    metadata, state = checkpoint_metadata(loaded, training), _unique_state(loaded.model)
    with atomic_path(path) as tmp:
        save_file(state, str(tmp), metadata=metadata)
    return path


# ---- loading ---------------------------------------------------------------------------
def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Open any checkpoint attnscope understands; CheckpointError for anything else. A file
    through the loader's stages (engine.loading.pipeline.load): described
    (engine.loading.checkpoint_format.read_file), checked, built, its weights read."""
    check_path(path, "checkpoint to open")
    from attnscope.engine.loading.pipeline import load
    from attnscope.engine.loading.source import Source

    path = Path(path)
    try:
        return load(Source(str(path), "checkpoint", path), torch.device(device))
    except CheckpointError:
        raise
    except ModelLoadError as exc:  # from a stage's rules: the same words, this module's type
        raise CheckpointError(str(exc)) from None
