"""attnscope's one-file checkpoint format: what a file holds, and how it is read without
building anything (the loader's describe stage, engine.loading.describe, asks ``read_file``).

Our format is a single ``.safetensors`` file. Why safetensors: it holds only tensors and a
string table, so opening a file can never run code, and it loads lazily and fast. The
string table (the safetensors *metadata*) carries everything else a model needs:

    format = "attnscope", format_version = "1", family, name,
    config (JSON of the family's config dataclass), tokenizer (JSON of the HF tokenizer),
    target_tokenizer (JSON, translators with a separate target vocabulary),
    training (JSON: corpus, steps, metrics, the command that made it)

PyTorch files are read too, always with ``torch.load(weights_only=True)``: our metadata +
state dict layout (``{"attnscope": metadata, "model": state_dict}``) and nanoGPT's
``ckpt.pt`` (``{"model_args": ..., "model": state_dict}``), described as our GPT family.
Every way a file can be wrong ends in a CheckpointError whose message says what is wrong
and what would work. Writing is engine.loading.checkpoint.
"""
from __future__ import annotations

import dataclasses
import json
import pickle
import re
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from attnscope.engine.errors import ModelLoadError, first_line
from attnscope.engine.runtime.files import check_archive
from attnscope.engine.models import GPTConfig
from attnscope.engine.models.tokenizer import ByteTokenizer

FORMAT = "attnscope"
FORMAT_VERSION = 1
_SAFETENSORS_SUFFIXES = {".safetensors"}
_TORCH_SUFFIXES = {".pt", ".pth", ".bin", ".ckpt"}


class CheckpointError(ModelLoadError):
    """A file that cannot be opened as a model, with a message meant for the user."""


@dataclass(frozen=True)
class CheckpointFile:
    """What a checkpoint file says of itself, read before any model is built."""
    path: Path
    meta: dict                          # the string table (module docstring); nanoGPT's made from its model_args
    shapes: dict                        # tensor name -> shape
    state: dict | None = None           # the tensors, when reading the file read them (.pt); None: read when built
    tokenizer_class: type | None = None # a tokenizer made from the vocabulary size (nanoGPT's bytes)
    notes: tuple[str, ...] = ()


def read_file(path: Path) -> CheckpointFile:
    """The description of a checkpoint file: its string table and its tensors' shapes (a
    safetensors header; a PyTorch file is read whole, by torch's safe loader). CheckpointError
    for a file that is none of ours, nanoGPT's or a state dict with our description (the
    path is known to be a regular file: engine.loading.describe asked)."""
    kind = _sniff(path)
    if kind == "safetensors":
        return _read_safetensors(path)
    if kind == "torch":
        return _read_torch(path)
    raise CheckpointError(
        f"{path.name} is not a checkpoint: it is neither a .safetensors file nor a PyTorch file. "
        "attnscope opens its own .safetensors checkpoints, PyTorch state dicts (.pt/.pth) "
        "and nanoGPT's ckpt.pt; for a Hugging Face model, open its folder.")


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


def damaged(path: Path, what: str, exc: BaseException) -> CheckpointError:
    return CheckpointError(f"{path.name} is damaged or truncated and cannot be read as {what} "
                           f"({first_line(exc, 200)}). Copy or save the file again.")


def _read_safetensors(path: Path) -> CheckpointFile:
    """Header only (metadata, names, shapes): the tensors are read once they match the model."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    except Exception as exc:  # safetensors raises its own error types for every bad header
        raise damaged(path, "safetensors", exc) from None
    if meta.get("format") != FORMAT and "attnscope" in meta:     # engine.traces.recording_file's
        raise CheckpointError(
            f"{path.name} is an attnscope recording (the attention of one Run: queries and keys, no weights), not a "
            "model: it can be drawn and exported with no model (File > Open Recording, or attnscope export "
            f"{path.name} --out DIR), but not run, continued, changed or recorded again; open the model it was "
            "recorded from for that.")
    if meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{path.name} holds tensors but no attnscope description (family, config, tokenizer): "
            "it is probably a Hugging Face weights file. Open the folder that holds it together "
            "with config.json (File > Open Hugging Face Folder).")
    return CheckpointFile(path, meta, shapes)


def _read_torch(path: Path) -> CheckpointFile:
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
        raise damaged(path, "a PyTorch file", exc) from None
    except Exception as exc:  # anything else torch.load raises means it is not a checkpoint we know
        raise CheckpointError(f"{path.name} is damaged or is not a PyTorch file: the loader stopped inside it "
                              f"({first_line(exc, 200)}). {SAVE_TENSORS}") from None
    if isinstance(obj, dict) and "model_args" in obj and "model" in obj:
        return _from_nanogpt(path, obj)
    if isinstance(obj, dict) and isinstance(obj.get("attnscope"), dict) and "model" in obj:
        state = _state_dict(path, obj["model"])
        return CheckpointFile(path, {str(k): v for k, v in obj["attnscope"].items()},
                              {k: tuple(v.shape) for k, v in state.items()}, state)
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
        raise CheckpointError(f"{path.name}: 'model' should hold only {{name: tensor}}, but {name_list(odd)} "
                              "is not a named tensor. Save the weights again with torch.save(model.state_dict(), ...).")
    return dict(state)


def _from_nanogpt(path: Path, obj: dict) -> CheckpointFile:
    """nanoGPT's ckpt.pt described as our GPT: the parameter names already match, bar the
    ``_orig_mod.`` prefix of torch.compile and the causal-mask buffers of old versions."""

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
    note = ("nanoGPT checkpoints carry no tokenizer: text is shown byte by byte "
            "(ids 0-255), which matches only byte- or char-level training data.")
    return CheckpointFile(path, meta, {k: tuple(v.shape) for k, v in state.items()}, state, ByteTokenizer, (note,))


def name_list(keys: list[str]) -> str:
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
    reason = next((line for line in lines if line.startswith("Unsupported")), first_line(exc, 200))[:200]
    return CheckpointError(f"{path.name} is not a PyTorch checkpoint that can be read without running code "
                           f"({reason}): a plain pickle, a very old torch.save, or a damaged file. {SAVE_TENSORS}")
