"""Stage 3 of loading (engine.loading.pipeline.load): may the described model be built here, and how
will it be held? The answer is a Plan; a model that may not is refused with numbers.

What is decided from the Description alone, before a tensor is allocated:
- a Hugging Face folder: its config's values and sizes (engine.loading.validation's rules,
  then transformers' own config class), the dtype its weights are held in on the device
  (the checkpoint's own where the device computes it), the memory that takes, that it has a
  tokenizer, and, spread over every device (engine.loading.placement), where it goes;
- one of our checkpoints: its format version and family, its config against the family's
  bounds and the memory, its tokenizers against the embedding's rows.
Every refusal is engine.loading.validation's (one place for the words); this module only
decides what to ask, in the order a user would want to hear it.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from engine.loading.checkpoint_format import FORMAT_VERSION, CheckpointError
from engine.loading.describe import ITEM_BYTES, Description, WeightFiles
from engine.loading.validation import (check_activation, check_config, check_hf_sizes, check_memory, check_model_size,
                                       check_tokenizer_files, first_line, hf_config)

if TYPE_CHECKING:
    from engine.loading.placement import SpreadPlan

# transformers' BertConfig defaults, for the values a config.json leaves out
BERT_DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
                 "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                 "pad_token_id": 0}
# the torch dtype of each stored float dtype, and its name for people
TORCH_DTYPE = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64}
DTYPE_NAME = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32", torch.float64: "float64"}


@dataclass
class Plan:
    """How the described model is built and held: what engine.loading.build needs besides the files."""
    device: torch.device                        # where it computes (spread: where its first layers do)
    notes: list[str] = field(default_factory=list)
    config: Any = None                          # transformers' config object, or our family's config
    dtype: torch.dtype | None = None            # a folder: the dtype its weights are held in
    spread: SpreadPlan | None = None            # a folder spread over devices and the disk
    family: str | None = None                   # ours: the family, its tokenizers, its facts
    tokenizer: Any = None
    target_tokenizer: Any = None
    training: dict | None = None
    version: int | None = None
    name: str | None = None


def check(files: Description, device: torch.device, spread: bool = False) -> Plan:
    """The Plan for ``files`` on ``device`` (``spread``: a folder over every device), or the
    project's load error saying why it cannot be built here."""
    if files.kind == "folder":
        return check_folder(files, device, spread)
    if files.kind == "checkpoint":
        return _check_checkpoint(files, device)
    return Plan(device)


def check_folder(files: Description, device: torch.device | str = "cpu", spread: bool = False) -> Plan:
    """Everything about a Hugging Face folder that can be checked before transformers touches
    it, the memory included: the weights' bytes in the dtype they will be held in on ``device``
    (``spread``: over every device and the disk, checked by engine.loading.placement instead)."""
    from engine.loading.placement import compute_device, plan_spread

    source, raw, weights = str(files.folder), files.config, files.weights
    dtype, note = load_dtype(weights.dtype, compute_device() if spread else device)
    needed = memory_needed(weights, dtype)
    config = None
    if files.model_type == "bert":
        check_config("hf-bert", {**BERT_DEFAULTS, **{k: raw[k] for k in BERT_DEFAULTS if k in raw}}, source)
        check_activation(source, raw.get("hidden_act", "gelu"))
    else:
        config = hf_config(raw, source)
        check_hf_sizes(config, source)
    if not spread:
        check_memory(source, needed, f"this model ({weights.summary}, held in {DTYPE_NAME[dtype]})")
    check_tokenizer_files(source, files.tokenizer_files)
    if config is None:                    # BERT's values checked in our words first, then transformers'
        config = hf_config(raw, source)
    plan = plan_spread(source, needed) if spread else None
    return Plan(torch.device(device), [*files.notes, *([note] if note else [])], config, dtype, plan)


def memory_needed(weights: WeightFiles, dtype: torch.dtype) -> int:
    """Bytes a load takes at its peak. Weights kept in their stored dtype are the file's own
    pages, mapped once; weights cast to another dtype are new memory, made while the stored
    bytes are read (a .bin file is read whole, it cannot be mapped lazily by name)."""
    size = torch.empty((), dtype=dtype).element_size()
    held = sum(n * (size if d in TORCH_DTYPE else ITEM_BYTES.get(d, 4)) for d, n in weights.numel_by_dtype.items())
    cast = any(TORCH_DTYPE[d] != dtype for d in weights.numel_by_dtype if d in TORCH_DTYPE)
    return held + (weights.stored_bytes if cast else 0)


def load_dtype(stored: str, device) -> tuple[torch.dtype, str | None]:
    """The dtype to hold weights stored in ``stored`` ("BF16", "F16", "F32", "F64") on ``device``,
    and a note for the user when it is not the stored one. The checkpoint's own dtype where
    the device computes it: bfloat16 matmuls run on current CPUs and GPUs; float16 on a CPU
    falls back to slow paths (and some operations lack it), so it becomes float32 there;
    float64 becomes float32 everywhere (nothing is gained, twice the memory is spent)."""
    kind = torch.device(device).type
    want = TORCH_DTYPE.get(stored, torch.float32)
    if want == torch.float64:
        got = torch.float32
    elif want == torch.float16 and kind == "cpu":
        got = torch.float32
    elif want == torch.bfloat16 and kind == "cuda" and not torch.cuda.is_bf16_supported():
        got = torch.float32
    elif want == torch.bfloat16 and kind == "mps":
        got = torch.float32
    else:
        got = want
    if got == want:
        return got, None
    ratio = torch.empty((), dtype=got).element_size() / torch.empty((), dtype=want).element_size()
    return got, (f"The weights are stored in {DTYPE_NAME[want]}, which the {kind} does not compute well: they are "
                 f"held in {DTYPE_NAME[got]}, {'twice' if ratio > 1 else 'half'} the memory of the file.")


# ---- our checkpoints ------------------------------------------------------------------------------
def _check_checkpoint(files: Description, device: torch.device) -> Plan:
    """Our checkpoint's string table (engine.loading.checkpoint_format): every value passes
    engine.loading.validation before the model it describes is built."""
    from engine.models import FAMILIES
    from engine.models.tokenizer import Tokenizer

    file = files.checkpoint
    name, meta = file.path.name, file.meta
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
    config_cls = FAMILIES[family][1]
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
    src_vocab, tgt_vocab = _vocab_sizes(family, config)
    try:
        tokenizer = (file.tokenizer_class(src_vocab) if file.tokenizer_class is not None
                     else Tokenizer.from_json(meta["tokenizer"]))
        target = Tokenizer.from_json(meta["target_tokenizer"]) if meta.get("target_tokenizer") else None
    except Exception as exc:
        raise CheckpointError(f"{name}: the tokenizer in the file is missing or invalid "
                              f"({first_line(exc, 200)}).") from None
    for tok, vocab, side in ((tokenizer, src_vocab, "source "), (target or tokenizer, tgt_vocab, "target ")):
        if tok.id_bound > vocab:
            side = side if family == "translator" else ""
            size = (f"has {tok.vocab_size} tokens" if tok.id_bound == tok.vocab_size
                    else f"gives ids up to {tok.id_bound - 1}")
            raise CheckpointError(f"{name}: the {side}tokenizer {size} but the model's "
                                  f"embedding has only {vocab} rows, so ids beyond {vocab - 1} would fail on every "
                                  "run. The tokenizer and the model do not belong together; save the model again.")
    display = meta.get("name")
    display = display[:200] if isinstance(display, str) and display.strip() else file.path.stem
    return Plan(device, list(file.notes), config, family=family, tokenizer=tokenizer, target_tokenizer=target,
                training=training, version=version, name=display)


def _json_field(name: str, meta: dict, key: str, what: str, default: str | None = None):
    text = meta.get(key, default)
    if not isinstance(text, str):
        raise CheckpointError(f"{name}: the {what} is missing from the file's description; save the model again.")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CheckpointError(f"{name}: the {what} in the file is not valid JSON ({first_line(exc, 200)}); "
                              "save the model again.") from None


def _vocab_sizes(family: str, config) -> tuple[int, int]:
    """(source vocabulary, target vocabulary) of a config: the embedding rows the ids index."""
    if family == "translator":
        return config.src_vocab_size, config.tgt_vocab_size
    return config.vocab_size, config.vocab_size
