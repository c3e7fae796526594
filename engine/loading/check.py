"""Stage 3 of loading (engine.loading.pipeline.load): may the described model be built here, and how
will it be held? The answer is a Plan; a model that may not is refused with numbers.

What is decided from the Description alone, before a tensor is allocated:
- a Hugging Face folder: its config's values and sizes (the rules below, then transformers'
  own config class), that it has a tokenizer, the dtype its weights are held in on the device
  (the checkpoint's own where the device computes it), the memory that takes, and, spread
  over every device (engine.loading.placement), where it goes;
- one of our checkpoints: its format version and family, its config against the family's
  bounds and the memory, its tokenizers against the embedding's rows.
The rules this stage asks live here, beside it (sane bounds far beyond any model attnscope can
draw, each family's fields, Hugging Face configs, parameter counts); the memory's refusal is
engine.runtime.free_memory's, as every estimate's. Each refusal is one ModelLoadError (an
HFModelError for a folder) that names the file and says what would work.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from attnscope.engine.errors import HFModelError, ModelLoadError, first_line
from attnscope.engine.loading.checkpoint_format import FORMAT_VERSION, CheckpointError
from attnscope.engine.loading.describe import ITEM_BYTES, Description, WeightFiles
from attnscope.engine.models import FAMILIES
from attnscope.engine.models.tokenizer import Tokenizer
from attnscope.engine.runtime.device import compute_device
from attnscope.engine.runtime.free_memory import check_memory
from attnscope.engine.runtime.quiet import quiet_transformers

if TYPE_CHECKING:
    from attnscope.engine.loading.placement import SpreadPlan

# transformers' BertConfig defaults, for the values a config.json leaves out
BERT_DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
                 "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                 "pad_token_id": 0}
# the torch dtype of each stored float dtype, and its name for people
TORCH_DTYPE = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64}
DTYPE_NAME = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32", torch.float64: "float64"}


# ---- the rules this stage asks: bounds, each family's fields, Hugging Face configs, sizes --------
# Sane bounds: far beyond any model attnscope can draw, far below what would exhaust a machine.
MAX_LAYERS = 256
MAX_HEADS = 256
MAX_WIDTH = 65_536
MAX_FFN = 262_144
MAX_VOCAB = 2_000_000
MIN_POSITIONS = 2
MAX_POSITIONS = 131_072
MAX_TYPE_VOCAB = 1024


# ---- field rules ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Int:
    lo: int
    hi: int
    meaning: str


@dataclass(frozen=True)
class Float:
    lo: float
    hi: float
    meaning: str
    lo_open: bool = False   # lo itself is not allowed
    hi_open: bool = False   # hi itself is not allowed


@dataclass(frozen=True)
class Bool:
    meaning: str


@dataclass(frozen=True)
class Choice:
    options: tuple
    meaning: str


@dataclass(frozen=True)
class OptionalIndex:
    meaning: str            # an id into the vocabulary, or null (checked against the vocabulary later)


LAYERS = Int(1, MAX_LAYERS, "the number of layers")
HEADS = Int(1, MAX_HEADS, "the number of attention heads")
WIDTH = Int(1, MAX_WIDTH, "the model width")
FFN = Int(1, MAX_FFN, "the feed-forward width")
VOCAB = Int(1, MAX_VOCAB, "the vocabulary size")
POSITIONS = Int(MIN_POSITIONS, MAX_POSITIONS, "the longest sequence (positions)")
PROB = Float(0.0, 1.0, "a dropout probability", hi_open=True)

RULES: dict[str, dict[str, object]] = {
    "translator": {
        "src_vocab_size": VOCAB, "tgt_vocab_size": VOCAB, "d_model": WIDTH, "n_head": HEADS,
        "n_encoder_layers": LAYERS, "n_decoder_layers": LAYERS, "d_ff": FFN, "dropout": PROB, "max_len": POSITIONS,
        "norm_first": Bool("norm_first"), "share_embeddings": Bool("share_embeddings"),
        "pad_id": Int(0, MAX_VOCAB - 1, "the padding id"),
    },
    "gpt": {
        "vocab_size": VOCAB, "block_size": POSITIONS, "n_layer": LAYERS, "n_head": HEADS, "n_embd": WIDTH,
        "dropout": PROB, "bias": Bool("bias"), "position": Choice(("learned", "rope"), "the position encoding"),
        "rope_base": Float(1.0, 1e12, "the rotary base"),
    },
    "bert": {
        "vocab_size": VOCAB, "hidden_size": WIDTH, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "intermediate_size": FFN, "max_position_embeddings": POSITIONS,
        "type_vocab_size": Int(1, MAX_TYPE_VOCAB, "the number of segment types"),
        "layer_norm_eps": Float(0.0, 1.0, "the LayerNorm epsilon", lo_open=True),
        "hidden_dropout_prob": PROB, "attention_probs_dropout_prob": PROB,
        "pad_token_id": OptionalIndex("the padding id"),
    },
}
# (width, heads) and (vocabulary, padding id) pairs that must agree, per family
_WIDTH_HEADS = {"translator": ("d_model", "n_head"), "gpt": ("n_embd", "n_head"), "bert": ("hidden_size", "num_attention_heads")}
_PAD = {"translator": ("pad_id", ("src_vocab_size", "tgt_vocab_size")), "bert": ("pad_token_id", ("vocab_size",))}


def _describe(rule) -> str:
    if isinstance(rule, Int):
        return f"{rule.meaning} must be a whole number from {rule.lo:,} to {rule.hi:,}"
    if isinstance(rule, Float):
        lo = f"above {rule.lo:g}" if rule.lo_open else f"at least {rule.lo:g}"
        hi = f"below {rule.hi:g}" if rule.hi_open else f"at most {rule.hi:g}"
        return f"{rule.meaning} must be a number {lo} and {hi}"
    if isinstance(rule, Bool):
        return f"{rule.meaning} must be true or false"
    if isinstance(rule, Choice):
        return f"{rule.meaning} must be one of {', '.join(map(repr, rule.options))}"
    return f"{rule.meaning} must be a whole number or null"


def _valid(rule, value) -> bool:
    if isinstance(rule, Int):
        return type(value) is int and rule.lo <= value <= rule.hi
    if isinstance(rule, Float):
        if type(value) not in (int, float) or not math.isfinite(value):
            return False
        return (value > rule.lo if rule.lo_open else value >= rule.lo) and (value < rule.hi if rule.hi_open else value <= rule.hi)
    if isinstance(rule, Bool):
        return type(value) is bool
    if isinstance(rule, Choice):
        return isinstance(value, str) and value in rule.options
    return value is None or (type(value) is int and 0 <= value < MAX_VOCAB)


def check_values(source: str, values: list[tuple[str, object, object]]) -> None:
    """Refuse the first (name, value, rule) whose value is out of its sane range; a value of
    None (the config does not say) passes. For configs read field by field (Hugging Face)."""
    for key, value, rule in values:
        if value is not None and not _valid(rule, value):
            raise ModelLoadError(f"{source}: the config value {key}={_short(value)} cannot be used: {_describe(rule)}. "
                                 "The file was edited or written by another program.")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_config(family: str, config: dict, source: str) -> None:
    """Refuse ``config`` (a family's config as a dict) if any value is out of its sane range."""
    family = "bert" if family == "hf-bert" else family
    rules = RULES[family]
    for key, rule in rules.items():
        if key in config and not _valid(rule, config[key]):
            raise ModelLoadError(f"{source}: the config value {key}={_short(config[key])} cannot be used: "
                                 f"{_describe(rule)}. The file was edited or written by another program; "
                                 "save or export the model again.")
    width_key, heads_key = _WIDTH_HEADS[family]
    width, heads = config.get(width_key), config.get(heads_key)
    if isinstance(width, int) and isinstance(heads, int) and width % heads:
        raise ModelLoadError(f"{source}: {width_key}={width} is not divisible by {heads_key}={heads}, so the heads "
                             "cannot split the width; the config does not describe a working model.")
    if family == "gpt" and config.get("position") == "rope" and (width // heads) % 2:
        raise ModelLoadError(f"{source}: rotary positions need an even head size, and {width}/{heads} = "
                             f"{width // heads}; the config does not describe a working model.")
    if family in _PAD and config.get(_PAD[family][0]) is not None:
        pad_key, vocab_keys = _PAD[family]
        for vk in vocab_keys:
            if vk in config and config[pad_key] >= config[vk]:
                raise ModelLoadError(f"{source}: the padding id {pad_key}={config[pad_key]} lies outside the vocabulary "
                                     f"({vk}={config[vk]}); the config does not describe a working model.")
    if family == "translator" and config.get("share_embeddings") and config.get("src_vocab_size") != config.get("tgt_vocab_size"):
        raise ModelLoadError(f"{source}: shared embeddings need one vocabulary, but src_vocab_size="
                             f"{config.get('src_vocab_size')} and tgt_vocab_size={config.get('tgt_vocab_size')}.")


# ---- Hugging Face configs --------------------------------------------------------------------------
def hf_config(raw: dict, source: str):
    """transformers' own config object for ``raw`` (built-in class of its model_type; no code):
    building it runs transformers' own checks of the values."""
    from transformers import CONFIG_MAPPING

    try:
        cls = CONFIG_MAPPING[raw["model_type"]]
        values = {k: v for k, v in raw.items() if k != "auto_map"}
        # transformers writes inf and nan as {"__float__": "Infinity"} (Mamba-2's time_step_limit) and
        # reads them back the same way: its own decoding, or its own configs would be refused
        values = getattr(cls, "_decode_special_floats", lambda v: v)(values)
        with quiet_transformers():
            return cls.from_dict(values)
    except Exception as exc:
        cause = exc.__cause__ or exc  # transformers' @strict wraps the validator's own sentence
        raise HFModelError(f"{source}: config.json does not describe a working {raw.get('model_type')} model "
                           f"({first_line(cause)}).") from None


def check_text_model(config, source: str) -> None:
    """A speech model (Voxtral, Qwen3-ASR, OmniASR, VibeVoice-ASR: their configs name an audio
    token or an audio encoder) reads audio features where attnscope gives text, and would fail deep in its own code."""
    if any(getattr(config, name, None) is not None for name in ("audio_token_id", "audio_config")):
        raise HFModelError(f"{source}: {config.model_type} is a speech model whose encoder reads audio features; "
                           "attnscope traces text, so it cannot open this model.")


def check_hf_sizes(config, source: str) -> None:
    """The sizes every transformer config names the same way (transformers' attribute_map
    gives GPT-2's n_layer, T5's num_layers, ... the standard names), against sane bounds."""
    def get(*names):
        for n in names:
            v = _attribute(config, n)
            if v is not None:
                return v
        return None
    values = [("num_hidden_layers", get("num_hidden_layers"), LAYERS),
              ("decoder_layers", get("decoder_layers", "num_decoder_layers"), LAYERS),
              ("num_attention_heads", get("num_attention_heads"), HEADS),
              ("num_key_value_heads", get("num_key_value_heads"), HEADS),
              ("hidden_size", get("hidden_size"), WIDTH),
              ("vocab_size", get("vocab_size"), VOCAB),
              ("max_position_embeddings", get("max_position_embeddings"), POSITIONS)]
    check_values(source, values)
    names = getattr(config, "attribute_map", None) or {}
    _check_heads(source, get("hidden_size"), get("num_attention_heads"), get("num_key_value_heads"),
                 _attribute(config, "head_dim"), lambda n: names.get(n, n))


def _attribute(config, name: str):
    """A config's value of ``name``, None where it has none or where it differs per layer
    (Gemma 4's head_dim: transformers refuses to give one value for the whole model)."""
    try:
        return getattr(config, name, None)
    except Exception:    # transformers' AmbiguousGlobalPerLayerAttributeError: a per-layer value
        return None


def _check_heads(source: str, width, heads, kv_heads, head_dim, own) -> None:
    """The head counts split the width and the query heads in whole parts, said in the
    config's own names (``own``: GPT-2's n_embd for hidden_size, ...); transformers' own
    messages say "look at the above report"."""
    def divisors(n):
        return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)

    w, h, kv = own("hidden_size"), own("num_attention_heads"), own("num_key_value_heads")
    if isinstance(heads, int) and isinstance(width, int) and heads > 0 and head_dim is None and width % heads:
        raise HFModelError(f"{source}: config.json has {w} {width} and {h} {heads}, but each head takes {w} / {h} "
                           f"dimensions and {width} / {heads} is not whole: {h} should divide {width} "
                           f"({divisors(width)}).")
    if isinstance(heads, int) and isinstance(kv_heads, int) and heads > 0 and kv_heads > 0 and heads % kv_heads:
        raise HFModelError(f"{source}: config.json has {h} {heads} and {kv} {kv_heads}, but each key/value head "
                           f"serves {h} / {kv} query heads and {heads} / {kv_heads} is not whole: {kv} should divide "
                           f"{heads} ({divisors(heads)}).")


def check_activation(source: str, act) -> None:
    """A BERT config's activation is one transformers has."""
    from transformers.activations import ACT2FN

    if not isinstance(act, str) or act not in ACT2FN:
        raise HFModelError(f"{source}: config.json names the activation {act!r}, which transformers does not have "
                           "(BERT uses 'gelu').")


def check_tokenizer_files(source: str, present: tuple) -> None:
    """A folder has some tokenizer (``present``: its tokenizer files): without one every word
    would become unknown."""
    if not present:
        raise HFModelError(f"{source} has no tokenizer (tokenizer.json, vocab.txt, a sentencepiece model, ...): every "
                           "word would become unknown. Copy the tokenizer files of the model into the folder.")


# ---- size and memory ------------------------------------------------------------------------------
def _attention(d: int) -> int:
    """Q, K, V and output projections with biases (self- and cross-attention alike)."""
    return 4 * d * d + 4 * d


def parameter_count(family: str, c: dict) -> int:
    """The number of parameters a config builds (float32 each), counted from the sizes alone.
    ``family``: a key of RULES, or "hf-bert" (Hugging Face's BERT: our BERT's sizes plus a pooler)."""
    if family == "translator":
        d, ff = c["d_model"], c["d_ff"]
        norms = 2 * d
        enc = _attention(d) + 2 * d * ff + ff + d + 2 * norms
        dec = 2 * _attention(d) + 2 * d * ff + ff + d + 3 * norms
        embed = c["src_vocab_size"] * d + (0 if c.get("share_embeddings") else c["tgt_vocab_size"] * d)
        out = (0 if c.get("share_embeddings") else d * c["tgt_vocab_size"]) + c["tgt_vocab_size"]
        final = 2 * norms if c.get("norm_first") else 0  # pre-LN stacks end with a LayerNorm each
        return embed + out + c["n_encoder_layers"] * enc + c["n_decoder_layers"] * dec + final
    if family == "gpt":
        d, bias = c["n_embd"], c.get("bias", True)
        block = 12 * d * d + (13 * d if bias else 2 * d)  # attention 4d², MLP 8d², two LayerNorms
        pos = c["block_size"] * d if c.get("position", "learned") == "learned" else 0
        return c["vocab_size"] * d + pos + c["n_layer"] * block + (2 * d if bias else d)
    d, ff = c["hidden_size"], c["intermediate_size"]
    layer = _attention(d) + 2 * d * ff + ff + d + 4 * d
    embed = (c["vocab_size"] + c["max_position_embeddings"] + c["type_vocab_size"]) * d + 2 * d
    pooler = d * d + d if family == "hf-bert" else 0  # Hugging Face's BertModel has a pooler; ours does not
    return embed + c["num_hidden_layers"] * layer + pooler


def buffer_bytes(family: str, c: dict) -> int:
    """Tables built besides the parameters (the translator's sinusoidal encodings)."""
    return 4 * c["max_len"] * c["d_model"] if family == "translator" else 0


def check_model_size(family: str, config: dict, source: str) -> int:
    """Bounds first, then the memory estimate: weights read from the file plus the model built from them."""
    check_config(family, config, source)
    n = parameter_count(family, config)
    check_memory(source, 2 * 4 * n + buffer_bytes(family, config), f"this model ({n / 1e6:,.1f} million parameters)")
    return n


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
    from attnscope.engine.loading.placement import plan_spread

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
        check_text_model(config, source)
    check_tokenizer_files(source, files.tokenizer_files)
    if not spread:
        check_memory(source, needed, f"this model ({weights.summary}, held in {DTYPE_NAME[dtype]})")
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
    this stage's rules before the model it describes is built."""

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
