"""Where models come from: the names of the sources, and the one function (``open_model``) that
resolves any model source a user names and hands it to the loader's stages (engine.loading.pipeline).

A source is a checkpoint file (ours, a .pt state dict, nanoGPT's ckpt.pt), a Hugging Face
folder (one weights file or shards), a Hugging Face hub id ("Qwen/Qwen2.5-0.5B": the copy in
the local Hugging Face cache, else downloaded when online), a bundled model's name ("gpt",
"translator": ``resolve_name``, as the window's Model menu names them), "minilm" (the packaged
all-MiniLM-L6-v2), "random-<family>" (an untrained toy), or "ndif:<hub id or folder>" (a model run
where NDIF serves it, engine.loading.remote_source). The GUI's menus and the CLI both
go through ``open_model``, so they accept the same things.

Importing this module is cheap (no torch, no transformers): the names of the sources and
the bundled files are known without them; torch is imported by ``open_model``, the first
moment a model is really needed (in the window, inside the loading worker), and so are the
stages (engine.loading.pipeline).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from attnscope.engine.loading.bundled import (CHECKPOINTS, DEFAULT_ORDER, MINILM, RANDOM_SOURCES, RESOURCES,  # noqa: F401 - the face
                                     bundled_checkpoints, bundled_names, models_help, named_models)
from attnscope.engine.loading.hub_cache import complete_snapshot, looks_like_hub_id
from attnscope.engine.loading.remote_source import PREFIX as REMOTE, open_remote
from attnscope.engine.errors import ModelLoadError
from attnscope.engine.inputs import too_long
from attnscope.engine.runtime.device import SPREAD, pick_device

if TYPE_CHECKING:
    import torch

    from attnscope.engine.loading.loaded import LoadedModel

def resolve_name(source: str) -> str:
    """The one resolver of a model's short name, for the window and every command: a bundled
    model's name ("gpt", or the menu's "gpt (bundled)") is its checkpoint's path, unless a file or
    folder of that name is where the user stands (theirs comes first). Anything else is returned
    as given (a path, a hub id, minilm, random-<family>, ndif:...)."""
    given = str(source)
    word = given.strip()
    if word.lower().endswith("(bundled)"):
        word = word[: -len("(bundled)")].strip()
    path = bundled_names().get(word.lower())
    if path is None or (word == given and Path(given).expanduser().exists()):
        return given
    return str(path)


def default_source() -> str:
    bundled = bundled_checkpoints()
    return str(bundled[0]) if bundled else "random-translator"


def open_model(source: str, device: str | torch.device | None = "auto", progress=None, stop=None) -> LoadedModel:
    """Load ``source`` onto ``device``: the one loader boundary of the window, the CLI and ``--model``.

    What ``source`` names is resolved here (the loader's first stage: a hub id not in the
    cache is downloaded by engine.loading.hf), then engine.loading.pipeline.load runs the
    others in order: describe, check, build, attach to the seam.

    ``device`` "spread": a Hugging Face model over every device (engine.loading.placement); our
    own models are small and run on the best single device. ``progress`` gets
    engine.loading.progress.LoadProgress records from the stages that take a while (a download,
    the build: the window's bar, the CLI's tqdm); once ``stop()`` is true the load ends with
    LoadCancelled (a ModelLoadError) and nothing of it is kept.

    Every refusal is an ``engine.errors.ModelLoadError`` whose message names the file,
    of the source's own type (HFModelError for a folder or hub id, CheckpointError for a file);
    an unexpected failure inside a stage (a library's own exception, an allocation that
    fails) becomes one too, so callers catch one type and show one sentence."""
    import torch

    from attnscope.engine.loading.pipeline import load
    from attnscope.engine.loading.source import Source

    if not (device is None or isinstance(device, (str, torch.device))):
        raise ModelLoadError(f"The device to open {source} on is a name such as 'auto', 'cpu', 'cuda', 'cuda:1', 'mps' "
                             f"or '{SPREAD}' (or a torch.device), not {device!r:.40}.")
    given = resolve_name(source)   # "gpt" -> resources/checkpoints/gpt.safetensors
    try:
        dev = device if isinstance(device, torch.device) else pick_device(device)
    except ValueError as exc:          # an unknown device, or one this machine lacks
        raise ModelLoadError(f"{source} cannot be opened there: {exc}.") from None
    spread = isinstance(device, str) and device.strip().lower() == SPREAD
    try:
        if given.strip().lower().startswith(REMOTE):   # ndif:NAME, run where NDIF serves it (remote_source.py)
            return open_remote(given, lambda name: open_model(name, device, progress, stop))
        path = Path(given).expanduser()                            # 1: resolve, here, in this one room
        try:
            missing = not path.exists() and not path.is_symlink()
        except OSError as exc:      # a name past what the file system takes (ENAMETOOLONG): the guard's sentence
            raise ModelLoadError(too_long(given, "model") or f"{source} cannot be read here ({exc.strerror}).") from None
        if given in RANDOM_SOURCES:
            found = Source(given, "random", None)
        elif given == MINILM:
            from attnscope.engine.loading.describe import minilm_path
            found = Source(given, "folder", Path(minilm_path()))
        elif path.is_dir():
            found = Source(given, "folder", path)
        elif missing and looks_like_hub_id(given):
            folder, reporter = complete_snapshot(given), None      # the local cache first: no network, no hf
            if folder is None:                                     # else fetched (engine.loading.hf)
                from attnscope.engine.loading.hf import hub_folder
                folder, reporter = hub_folder(given, progress, stop, spread)
            found = Source(given, "folder", folder, local=False, reporter=reporter)
        elif missing:               # a name too long may read as missing (os.path.exists says False): said as such
            raise ModelLoadError(too_long(given, "model") or f"No such file or folder: {path}. Give a checkpoint file, a Hugging Face model "
                                 f"folder or hub id, or one of {', '.join(named_models())}.")
        else:
            found = Source(given, "checkpoint", path)
        return load(found, dev, progress, stop, spread)              # 2-5: describe, check, build, attach
    except ModelLoadError:
        raise
    except Exception as exc:  # defence in depth: the checks should have caught it
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ModelLoadError(f"{source} could not be opened ({type(exc).__name__}: {first}). attnscope opens its own "
                             ".safetensors checkpoints, PyTorch and nanoGPT checkpoints, and Hugging Face model folders "
                             "and hub ids.") from None
