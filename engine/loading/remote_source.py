"""``ndif:<hub id or folder>``: a model run where NDIF serves it, opened here without its weights.

Its config and tokenizer are read here (a folder, the local Hugging Face cache, or a download
of those small files when online) and the model is built on the meta device: its shapes and
its source (what nnsight instruments, engine.remote), no weights. Under
``ATTNSCOPE_NDIF=local`` the folder or cached hub id is opened for real instead, through
``open_model`` as any source (the same checks, the seam attached), and its Runs go through
nnsight's local stand-in for NDIF. Either way ``meta["ndif"]`` says so: {"model": the name
after ``ndif:``, "mode": "local" or "ndif"}. nnsight itself is imported only by engine.remote.
"""
from __future__ import annotations

import os
from pathlib import Path

from attnscope.engine.errors import HFModelError, ModelLoadError, first_line
from attnscope.engine.loading.ndif_key import checked_key
from attnscope.engine.loading.remote_config import check_ndif_loaded, check_ndif_name, read_served_config, read_served_tokenizer

PREFIX = "ndif:"
MODE_VARIABLE = "ATTNSCOPE_NDIF"
CONFIG_FILES = ["config.json", "generation_config.json", "tokenizer*", "special_tokens_map.json", "vocab*",
                "merges.txt", "*.model"]


KEY_VARIABLE = "NDIF_API_KEY"
_given_key: list[str] = []          # the key the window's settings hold (use_api_key), for this process


def use_api_key(key: str | None) -> None:
    """The NDIF API key the window's settings hold (File > NDIF API Key…), used by this
    process's jobs before NDIF_API_KEY; None (or only blanks) keeps none; a key no key can be
    (engine.loading.ndif_key) is refused in one sentence. attnscope never prints, logs or writes
    it elsewhere."""
    key = checked_key(key)
    _given_key[:] = [key] if key else []


def api_key() -> str | None:
    """The key a job to NDIF goes with: the settings' (``use_api_key``), else NDIF_API_KEY (a
    variable of blanks is no key; one that no key can be is refused in one sentence)."""
    return (_given_key or [None])[0] or checked_key(os.environ.get(KEY_VARIABLE), f"the {KEY_VARIABLE} variable")


def local_mode() -> bool:
    """Whether ``ndif:`` sources run here through nnsight's local stand-in for NDIF."""
    return os.environ.get(MODE_VARIABLE, "").strip().lower() == "local"


def open_remote(given: str, open_here):
    """``given`` ("ndif:NAME") as a LoadedModel: ``open_here(NAME)`` (engine.loading.catalog's
    open_model) under ATTNSCOPE_NDIF=local, else built on the meta device from its config."""
    name = str(given).strip()[len(PREFIX):].strip()
    if not name:
        raise ModelLoadError("Name the model after ndif:, as NDIF serves it: ndif:meta-llama/Llama-3.1-70B, say.")
    check_ndif_name(name)
    if local_mode():
        loaded = open_here(name)
        check_ndif_loaded(name, loaded)
        loaded.meta["ndif"] = {"model": name, "mode": "local"}
        return loaded
    return _on_meta(name, _config_folder(name))


def _config_folder(name: str) -> Path:
    """Where the config and tokenizer of ``name`` are: the folder itself, the cache's snapshot,
    or those files alone downloaded into the cache (never the weights)."""
    from attnscope.engine.loading.hub_cache import cached_snapshot, looks_like_hub_id

    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if not looks_like_hub_id(name):
        raise ModelLoadError(f"ndif:{name}: no such folder, and not a Hugging Face hub id (owner/name).")
    folder = cached_snapshot(name)
    if folder is not None and (folder / "config.json").is_file():
        return folder
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, allow_patterns=CONFIG_FILES))
    except Exception as exc:
        raise HFModelError(f"ndif:{name}: its config and tokenizer are not in the local Hugging Face cache and could "
                           f"not be downloaded ({first_line(exc, 160)}).") from None


def _on_meta(name: str, folder: Path):
    """The decoder of ``folder``'s config, built on the meta device, with its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM

    from attnscope.engine.loading.loaded import LoadedModel

    config, dtype = read_served_config(folder, f"{PREFIX}{name}")    # dtype as served: what the estimates count
    tokenizer = read_served_tokenizer(folder, f"{PREFIX}{name}")
    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, trust_remote_code=False, dtype=dtype)
    except Exception as exc:
        raise HFModelError(f"ndif:{name}: its config in {folder} does not make a language model transformers can "
                           f"build ({first_line(exc, 160)}).") from None
    model.config._name_or_path = name                   # the key NDIF knows it by
    model.eval()
    meta = {"ndif": {"model": name, "mode": "ndif"}, "source": f"{PREFIX}{name}", "hf_config": config.to_dict(),
            "model_type": config.model_type, "role": "decoder", "folder": str(folder),
            "notes": f"Served by NDIF: built here on the meta device from its config, with no weights; a Run is one "
                     f"nnsight job on NDIF."}
    return LoadedModel(name, "hf-decoder", model, tokenizer, meta=meta)
