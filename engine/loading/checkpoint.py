"""One-file checkpoints: save a LoadedModel, load it back, and refuse bad files clearly.

Our format is a single ``.safetensors`` file. Why safetensors: it holds only tensors and a
string table, so opening a file can never run code, and it loads lazily and fast. The
string table (the safetensors *metadata*) carries everything else a model needs:

    format = "attnscope", format_version = "1", family, name,
    config (JSON of the family's config dataclass), tokenizer (JSON of the HF tokenizer),
    target_tokenizer (JSON, translators with a separate target vocabulary),
    training (JSON: corpus, steps, metrics, the command that made it)

``load_checkpoint`` also reads PyTorch files, always with ``torch.load(weights_only=True)``:
our metadata + state dict layout (``{"attnscope": metadata, "model": state_dict}``) and
nanoGPT's ``ckpt.pt`` (``{"model_args": ..., "model": state_dict}``) into the GPT family.
Every way a file can be wrong ends in a CheckpointError whose message says what is wrong
and what would work; the GUI shows it as is. Nothing is built before its config passed
``engine.loading.validation`` (sane bounds and a memory estimate), no tensor is read before its
name and shape matched the model, and weights with NaN or Inf are refused.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import re
import warnings
import zipfile
from pathlib import Path

import torch

from engine.runtime.files import atomic_path
from engine.loading.loaded import LoadedModel
from engine.models import FAMILIES
from engine.models.tokenizer import ByteTokenizer, Tokenizer
from engine.loading.validation import ModelLoadError, check_archive, check_model_size, check_regular_file, check_tensors

FORMAT = "attnscope"
FORMAT_VERSION = 1
_SAFETENSORS_SUFFIXES = {".safetensors"}
_TORCH_SUFFIXES = {".pt", ".pth", ".bin", ".ckpt"}


class CheckpointError(ModelLoadError):
    """A file that cannot be opened as a model, with a message meant for the user."""


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
    from safetensors.torch import save_file

    path = check_checkpoint_path(path)
    metadata, state = checkpoint_metadata(loaded, training), _unique_state(loaded.model)
    with atomic_path(path) as tmp:
        save_file(state, str(tmp), metadata=metadata)
    return path


# ---- loading ---------------------------------------------------------------------------
def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Open any checkpoint attnscope understands; CheckpointError for anything else."""
    path = Path(path)
    try:
        check_regular_file(path)
        kind = _sniff(path)
        if kind == "safetensors":
            loaded = _load_safetensors(path)
        elif kind == "torch":
            loaded = _load_torch(path)
        else:
            raise CheckpointError(
                f"{path.name} is not a checkpoint: it is neither a .safetensors file nor a PyTorch file. "
                "attnscope opens its own .safetensors checkpoints, PyTorch state dicts (.pt/.pth) "
                "and nanoGPT's ckpt.pt; for a Hugging Face model, open its folder.")
    except CheckpointError:
        raise
    except ModelLoadError as exc:  # from engine.loading.validation: the same words, this module's type
        raise CheckpointError(str(exc)) from None
    loaded.meta.setdefault("source", str(path))
    return loaded.to(device)


def _sniff(path: Path) -> str:
    """Tell the format by the first bytes, falling back to the extension."""
    with path.open("rb") as f:
        head = f.read(9)
    if len(head) == 9 and head[8:9] == b"{":       # 8-byte header length, then JSON
        return "safetensors"
    if head[:2] == b"PK" or head[:1] == b"\x80":  # zip (torch.save) or a bare pickle
        return "torch"
    suffix = path.suffix.lower()
    if suffix in _SAFETENSORS_SUFFIXES:
        return "safetensors"
    if suffix in _TORCH_SUFFIXES:
        return "torch"
    return "unknown"


def _damaged(path: Path, what: str, exc: BaseException) -> CheckpointError:
    return CheckpointError(f"{path.name} is damaged or truncated and cannot be read as {what} ({_first_line(exc)}). "
                           "Copy or save the file again.")


def _load_safetensors(path: Path) -> LoadedModel:
    """Header first (metadata, names, shapes), the tensors only once they match the model."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    except Exception as exc:  # safetensors raises its own error types for every bad header
        raise _damaged(path, "safetensors", exc) from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{path.name} holds tensors but no attnscope description (family, config, tokenizer): "
            "it is probably a Hugging Face weights file. Open the folder that holds it together "
            "with config.json (File > Open Hugging Face Folder).")
    loaded = _build(path, meta)
    _check_names_and_shapes(path.name, loaded.model, shapes)
    try:
        with safe_open(str(path), framework="pt") as f:
            tensors = {k: f.get_tensor(k) for k in shapes}
    except Exception as exc:
        raise _damaged(path, "safetensors", exc) from None
    _load_weights(path.name, loaded.model, tensors)
    return loaded


def _load_torch(path: Path) -> LoadedModel:
    check_archive(path)  # a zip bomb is refused before torch.load inflates it
    try:
        with warnings.catch_warnings():
            # torch's safe unpickler warns on stderr about a pickle protocol torch.save does not
            # write (a damaged or foreign file) before it fails; the refusal says what is wrong.
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise _refused_pickle(path, exc) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError) as exc:
        raise _damaged(path, "a PyTorch file", exc) from None
    except Exception as exc:  # anything else torch.load raises means it is not a checkpoint we know
        raise CheckpointError(f"{path.name} is damaged or is not a PyTorch file: the loader stopped inside it "
                              f"({_first_line(exc)}). {SAVE_TENSORS}") from None
    if isinstance(obj, dict) and "model_args" in obj and "model" in obj:
        return _from_nanogpt(path, obj)
    if isinstance(obj, dict) and isinstance(obj.get("attnscope"), dict) and "model" in obj:
        meta = {str(k): v for k, v in obj["attnscope"].items()}
        state = _state_dict(path, obj["model"])
        loaded = _build(path, meta)
        _check_names_and_shapes(path.name, loaded.model, {k: tuple(v.shape) for k, v in state.items()})
        _load_weights(path.name, loaded.model, state)
        return loaded
    if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise CheckpointError(
            f"{path.name} is a bare state dict: it holds weights but not the model's family, sizes or "
            "tokenizer, so attnscope cannot rebuild it. Save it with attnscope (a .safetensors "
            "checkpoint) or in nanoGPT's layout {'model_args': ..., 'model': state_dict}.")
    raise CheckpointError(
        f"{path.name} is a PyTorch file but not a model checkpoint attnscope knows "
        "(expected nanoGPT's {'model_args', 'model'} or attnscope's {'attnscope', 'model'}).")


def _state_dict(path: Path, state) -> dict[str, torch.Tensor]:
    """``state`` as {name: tensor}, or a CheckpointError saying what it is instead."""
    if not isinstance(state, dict) or not state:
        raise CheckpointError(f"{path.name}: 'model' should hold the weights as {{name: tensor}}, but it is "
                              f"{'empty' if isinstance(state, dict) else 'a ' + type(state).__name__}.")
    odd = [str(k) for k, v in state.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
    if odd:
        raise CheckpointError(f"{path.name}: 'model' should hold only {{name: tensor}}, but {_names(odd)} "
                              "is not a named tensor. Save the weights again with torch.save(model.state_dict(), ...).")
    return dict(state)


def _from_nanogpt(path: Path, obj: dict) -> LoadedModel:
    """nanoGPT's ckpt.pt into our GPT: the parameter names already match, bar the
    ``_orig_mod.`` prefix of torch.compile and the causal-mask buffers of old versions."""
    from engine.models import GPTConfig

    args = obj["model_args"]
    if not isinstance(args, dict):
        raise CheckpointError(f"{path.name}: nanoGPT's model_args should be a dict of sizes, not a "
                              f"{type(args).__name__}.")
    fields = {f.name for f in dataclasses.fields(GPTConfig)}
    try:
        config = GPTConfig(**{k: v for k, v in args.items() if k in fields})
    except TypeError as exc:
        raise CheckpointError(f"{path.name}: nanoGPT model_args are incomplete ({exc}).") from None
    state = {}
    for name, tensor in _state_dict(path, obj["model"]).items():
        name = name.removeprefix("_orig_mod.")
        if re.fullmatch(r"transformer\.h\.\d+\.attn\.(bias|masked_bias)", name):
            continue  # nanoGPT's causal mask buffer, not a weight
        state[name] = tensor
    iter_num = obj.get("iter_num")
    meta = {
        "format": FORMAT, "format_version": str(FORMAT_VERSION), "family": "gpt",
        "name": f"nanoGPT {path.stem}", "config": json.dumps(dataclasses.asdict(config)),
        "training": json.dumps({"source": "nanoGPT ckpt.pt", "iter_num": iter_num if isinstance(iter_num, int) else None}),
    }
    loaded = _build(path, meta, tokenizer=ByteTokenizer)
    _check_names_and_shapes(path.name, loaded.model, {k: tuple(v.shape) for k, v in state.items()})
    _load_weights(path.name, loaded.model, state)
    loaded.meta["notes"] = ("nanoGPT checkpoints carry no tokenizer: text is shown byte by byte "
                            "(ids 0-255), which matches only byte- or char-level training data.")
    return loaded


def _json_field(name: str, meta: dict, key: str, what: str, default: str | None = None):
    text = meta.get(key, default)
    if not isinstance(text, str):
        raise CheckpointError(f"{name}: the {what} is missing from the file's description; save the model again.")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CheckpointError(f"{name}: the {what} in the file is not valid JSON ({_first_line(exc)}); "
                              "save the model again.") from None


def _vocab_sizes(family: str, config) -> tuple[int, int]:
    """(source vocabulary, target vocabulary) of a config: the embedding rows the ids index."""
    if family == "translator":
        return config.src_vocab_size, config.tgt_vocab_size
    return config.vocab_size, config.vocab_size


def _build(path: Path, meta: dict, tokenizer=None) -> LoadedModel:
    """The model (random weights, not yet loaded) and tokenizers its metadata describes, after
    every value passed engine.loading.validation. ``tokenizer`` a class: built from the vocabulary size."""
    name = path.name
    try:
        version = int(meta.get("format_version", "0"))
    except (TypeError, ValueError):
        raise CheckpointError(f"{name}: the format version {meta.get('format_version')!r} is not a number.") from None
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"{name} was written by a newer attnscope (format version {version}; this one reads up to "
            f"{FORMAT_VERSION}). Update attnscope to open it.")
    family = meta.get("family")
    if not isinstance(family, str) or family not in FAMILIES:
        raise CheckpointError(
            f"{name} is for an unknown model family {family!r}; attnscope builds {', '.join(FAMILIES)}.")
    model_cls, config_cls = FAMILIES[family]
    raw = _json_field(name, meta, "config", "model config")
    if not isinstance(raw, dict):
        raise CheckpointError(f"{name}: the model config in the file should be a JSON object, not "
                              f"{type(raw).__name__}; save the model again.")
    try:
        config = config_cls(**raw)
    except TypeError as exc:
        raise CheckpointError(f"{name}: the model config in the file is missing or invalid ({exc}).") from None
    check_model_size(family, dataclasses.asdict(config), name)  # bounds and memory before anything is built
    training = _json_field(name, meta, "training", "training record", default="{}")
    if not isinstance(training, dict):
        raise CheckpointError(f"{name}: the training record in the file should be a JSON object, not "
                              f"{type(training).__name__}; save the model again.")
    try:
        if tokenizer is None:
            tokenizer = Tokenizer.from_json(meta["tokenizer"])
        else:
            tokenizer = tokenizer(_vocab_sizes(family, config)[0])
        target = Tokenizer.from_json(meta["target_tokenizer"]) if meta.get("target_tokenizer") else None
    except Exception as exc:
        raise CheckpointError(f"{name}: the tokenizer in the file is missing or invalid ({_first_line(exc)}).") from None
    src_vocab, tgt_vocab = _vocab_sizes(family, config)
    for tok, vocab, side in ((tokenizer, src_vocab, "source "), (target or tokenizer, tgt_vocab, "target ")):
        if tok.id_bound > vocab:
            side = side if family == "translator" else ""
            size = (f"has {tok.vocab_size} tokens" if tok.id_bound == tok.vocab_size
                    else f"gives ids up to {tok.id_bound - 1}")
            raise CheckpointError(f"{name}: the {side}tokenizer {size} but the model's "
                                  f"embedding has only {vocab} rows, so ids beyond {vocab - 1} would fail on every "
                                  "run. The tokenizer and the model do not belong together; save the model again.")
    try:
        model = model_cls(config)
    except (ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{name}: the model config does not describe a model that can be built "
                              f"({_first_line(exc)}).") from None
    model.eval()
    display = meta.get("name")
    display = display[:200] if isinstance(display, str) and display.strip() else path.stem
    return LoadedModel(display, family, model, tokenizer, target, meta={"training": training, "format_version": version})


def _tied_groups(model: torch.nn.Module) -> tuple[dict, dict[int, list[str]]]:
    expected = model.state_dict()
    groups: dict[int, list[str]] = {}
    for key, t in expected.items():
        groups.setdefault(t.data_ptr(), []).append(key)
    return expected, groups


def _check_names_and_shapes(name: str, model: torch.nn.Module, shapes: dict[str, tuple]) -> None:
    """The file's tensor names and shapes against the model's, before any tensor is read."""
    expected, groups = _tied_groups(model)
    # Tied weights are stored once: any name of a tied group may supply the others.
    missing = [k for k, t in expected.items() if not any(g in shapes for g in groups[t.data_ptr()])]
    unexpected = [k for k in shapes if k not in expected]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing tensors {_names(missing)}")
        if unexpected:
            parts.append(f"unexpected tensors {_names(unexpected)}")
        raise CheckpointError(
            f"{name} does not match its own model description: {'; '.join(parts)}. "
            "The file was edited or written by another program; save the model again.")
    bad = [f"{k} {tuple(shapes[k])} (the model needs {tuple(expected[k].shape)})"
           for k in shapes if tuple(shapes[k]) != tuple(expected[k].shape)]
    if bad:
        raise CheckpointError(f"{name}: tensor shapes do not match the config: {'; '.join(bad[:3])}.")


def _load_weights(name: str, model: torch.nn.Module, tensors: dict) -> None:
    check_tensors(name, tensors.items())
    expected, groups = _tied_groups(model)
    state = {k: tensors[k] if k in tensors else tensors[next(g for g in groups[t.data_ptr()] if g in tensors)]
             for k, t in expected.items()}
    model.load_state_dict(state, strict=True)


def _names(keys: list[str]) -> str:
    return ", ".join(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")


SAVE_TENSORS = "Save only the tensors: torch.save(model.state_dict(), ...) or a .safetensors file."


def _refused_pickle(path: Path, exc: pickle.UnpicklingError) -> CheckpointError:
    """What torch's safe unpickler refused, said without its advice (its message opens by
    suggesting ``weights_only=False``, which would run the file's code): a pickle that calls
    something (it names what), or bytes the safe loader cannot read (a plain or very old
    pickle, or a damaged file)."""
    lines = [line.strip() for line in str(exc).splitlines()]
    calls = [line for line in lines if "GLOBAL" in line]
    if calls:
        named = re.search(r"GLOBAL ([\w.]+)", calls[0])
        what = f"it calls {named.group(1)}" if named else calls[0][:200]
        return CheckpointError(f"{path.name} is a pickle that needs code to load ({what}). attnscope never runs "
                               f"code from a file. {SAVE_TENSORS}")
    reason = next((line for line in lines if line.startswith("Unsupported")), _first_line(exc))[:200]
    return CheckpointError(f"{path.name} is not a PyTorch checkpoint that can be read without running code "
                           f"({reason}): a plain pickle, a very old torch.save, or a damaged file. {SAVE_TENSORS}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
