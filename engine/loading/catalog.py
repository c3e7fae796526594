"""Where models come from: one function turns any model source a user names into a LoadedModel.

A source is a checkpoint file (ours, a .pt state dict, nanoGPT's ckpt.pt), a Hugging Face
folder (one weights file or shards), a Hugging Face hub id ("Qwen/Qwen2.5-0.5B": the copy in
the local Hugging Face cache, else downloaded when online), "minilm" (the packaged
all-MiniLM-L6-v2), or "random-<family>" (an untrained toy). The GUI's menus and the CLI both
go through ``open_model``, so they accept the same things.

Importing this module is cheap (no torch, no transformers): the names of the sources and
the bundled files are known without them; torch is imported by ``open_model``, the first
moment a model is really needed (in the window, inside the loading worker).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from engine.loading.hub_cache import looks_like_hub_id
from engine.loading.validation import ModelLoadError
from engine.runtime.device import SPREAD

if TYPE_CHECKING:
    import torch

    from engine.loading.loaded import LoadedModel

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
CHECKPOINTS = RESOURCES / "checkpoints"
# The window opens on the first of these that exists.
DEFAULT_ORDER = ("translator.safetensors", "gpt.safetensors")
RANDOM_SOURCES = ("random-translator", "random-gpt", "random-bert")
MINILM = "minilm"


def bundled_checkpoints() -> list[Path]:
    """The trained checkpoints shipped in resources/checkpoints, default first."""
    found = sorted(CHECKPOINTS.glob("*.safetensors"))
    order = {name: i for i, name in enumerate(DEFAULT_ORDER)}
    return sorted(found, key=lambda p: (order.get(p.name, len(order)), p.name))


def default_source() -> str:
    bundled = bundled_checkpoints()
    return str(bundled[0]) if bundled else "random-translator"


def open_model(source: str, device: str | torch.device | None = "auto", progress=None, stop=None) -> LoadedModel:
    """Load ``source`` onto ``device``: the one loader boundary of the window, the CLI and ``--model``.

    ``progress`` gets engine.loading.progress.LoadProgress records while a Hugging Face model
    loads (the window's bar, the CLI's tqdm); once ``stop()`` is true the load ends with
    LoadCancelled (a ModelLoadError) and nothing of it is kept.

    Every refusal is an ``engine.loading.validation.ModelLoadError`` whose message names the file;
    an unexpected failure inside a loader (a library's own exception, an allocation that
    fails) becomes one too, so callers catch one type and show one sentence."""
    import torch

    from engine.runtime.device import pick_device

    dev = device if isinstance(device, torch.device) else pick_device(device)
    spread = isinstance(device, str) and device.strip().lower() == SPREAD
    try:
        return _open(str(source), dev, progress, stop, spread)
    except ModelLoadError:
        raise
    except Exception as exc:  # defence in depth: the checks should have caught it
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ModelLoadError(f"{source} could not be opened ({type(exc).__name__}: {first}). attnscope opens its own "
                             ".safetensors checkpoints, PyTorch and nanoGPT checkpoints, and Hugging Face model folders "
                             "and hub ids.") from None


def _open(source: str, dev: torch.device, progress, stop, spread: bool = False) -> LoadedModel:
    """``spread``: a Hugging Face model over every device (engine.loading.placement); our own
    models are small and run on ``dev``, the best single device."""
    hf_device = SPREAD if spread else str(dev)
    if source in RANDOM_SOURCES:
        from engine.loading.demo import random_model
        return random_model(source.split("-", 1)[1]).to(dev)
    if source == MINILM:
        from engine.loading.hf import load_hf_model, minilm_path
        return load_hf_model(minilm_path(), device=hf_device, progress=progress, stop=stop)
    path = Path(source).expanduser()
    missing = not path.exists() and not path.is_symlink()
    if path.is_dir() or (missing and looks_like_hub_id(source)):
        from engine.loading.hf import load_hf_model
        return load_hf_model(str(path) if path.is_dir() else source, device=hf_device, progress=progress,
                             stop=stop)
    if missing:
        raise ModelLoadError(f"No such file or folder: {path}. Give a checkpoint file, a Hugging Face model folder "
                             f"or hub id, '{MINILM}' or one of {', '.join(RANDOM_SOURCES)}.")
    from engine.loading.checkpoint import load_checkpoint
    loaded = load_checkpoint(str(path), device=str(dev))
    loaded.meta.setdefault("source", str(path))
    return loaded
