"""The loader boundary's checks: every model config, weight tensor and file size that comes
from outside is checked here before anything is built from it.

Why one module: a model enters attnscope in many ways (our .safetensors checkpoints, .pt
files, nanoGPT's ckpt.pt, Hugging Face folders, the CLI, the window, ``--model``) and every
way must refuse the same hostile values with the same clear words. A config value is
description, not an instruction: a negative width, 10**9 layers or a padding id outside
the vocabulary is refused *before* a tensor is allocated, and so is a model whose estimated
size does not fit in the memory that is free. All refusals are ``ModelLoadError`` (a
Hugging Face source's ``HFModelError``): the message names the file and says what would
work; the CLI prints it as one line and the window shows it in a dialog.

The loader's stages (engine.loading.pipeline) ask these rules: engine.loading.check
the config values, sizes, the memory and the tokenizer; engine.loading.describe the files;
engine.loading.build the weights it reads (finite).
"""
from __future__ import annotations

import math
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

# Sane bounds: far beyond any model attnscope can draw, far below what would exhaust a machine.
MAX_LAYERS = 256
MAX_HEADS = 256
MAX_WIDTH = 65_536
MAX_FFN = 262_144
MAX_VOCAB = 2_000_000
MIN_POSITIONS = 2
MAX_POSITIONS = 131_072
MAX_TYPE_VOCAB = 1024
MAX_CONFIG_BYTES = 1 << 20     # a config.json is a few kB; more is not a config
MEMORY_SHARE = 0.8             # refuse a model that needs more than this share of the free memory


class ModelLoadError(ValueError):
    """A model that cannot be opened, with a message for the user that names the file."""


class HFModelError(ModelLoadError):
    """A Hugging Face model that cannot be opened, with a message for the user."""


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message (a library's own words), for one sentence."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]


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

    from engine.runtime.quiet import quiet_transformers

    try:
        with quiet_transformers():
            return CONFIG_MAPPING[raw["model_type"]].from_dict({k: v for k, v in raw.items() if k != "auto_map"})
    except Exception as exc:
        cause = exc.__cause__ or exc  # transformers' @strict wraps the validator's own sentence
        raise HFModelError(f"{source}: config.json does not describe a working {raw.get('model_type')} model "
                           f"({first_line(cause)}).") from None


def check_hf_sizes(config, source: str) -> None:
    """The sizes every transformer config names the same way (transformers' attribute_map
    gives GPT-2's n_layer, T5's num_layers, ... the standard names), against sane bounds."""
    def get(*names):
        for n in names:
            v = getattr(config, n, None)
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
                 getattr(config, "head_dim", None), lambda n: names.get(n, n))


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


def available_memory() -> int:
    """Bytes this process can still allocate: free RAM, within a cgroup or address-space limit."""
    free = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                free = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if free is None:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            free = 8 << 30  # cannot tell: assume a modest machine
    try:  # a container's limit (cgroup v2)
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text())
            free = min(free, int(limit) - used)
    except (OSError, ValueError):
        pass
    try:  # an address-space limit (ulimit -v)
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            size = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            free = min(free, soft - size)
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return max(0, free)


def gib(n: float) -> str:
    if n >= 1 << 40:
        return f"{n / (1 << 40):,.1f} TiB"
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / (1 << 20):.0f} MiB"


def check_memory(source: str, needed: int, what: str) -> None:
    """Refuse when ``needed`` bytes do not fit in the share of free memory attnscope allows itself."""
    free = available_memory()
    if needed > MEMORY_SHARE * free:
        raise ModelLoadError(f"{source}: {what} would need about {gib(needed)} of memory, and about {gib(free)} is "
                             "free here. Open it on a machine with more memory, or use a smaller model.")


def check_model_size(family: str, config: dict, source: str) -> int:
    """Bounds first, then the memory estimate: weights read from the file plus the model built from them."""
    check_config(family, config, source)
    n = parameter_count(family, config)
    check_memory(source, 2 * 4 * n + buffer_bytes(family, config), f"this model ({n / 1e6:,.1f} million parameters)")
    return n


# ---- weights and files ------------------------------------------------------------------------------
_FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")


def check_tensors(source: str, tensors) -> None:
    """Every weight is a real-valued float tensor with finite values (NaN or Inf would make every
    output NaN: silent garbage). ``tensors`` yields (name, tensor)."""
    import torch

    for name, t in tensors:
        if not isinstance(t, torch.Tensor):
            raise ModelLoadError(f"{source}: {name} is a {type(t).__name__}, not a tensor; the file was edited or "
                                 "written by another program. Save the model again.")
        if str(t.dtype).removeprefix("torch.") not in _FLOAT_NAMES:
            raise ModelLoadError(f"{source}: the weights {name} are of type {str(t.dtype).removeprefix('torch.')}; "
                                 "weights must be floating point (float16, bfloat16 or float32). Save the model again.")
        if t.numel() and not _finite(t):
            raise ModelLoadError(f"{source}: the weights {name} hold NaN or infinite values, so every output would be "
                                 "NaN. The training diverged or the file is damaged; use an earlier checkpoint.")


def _finite(t) -> bool:
    """No NaN or infinity in ``t``. Its sum is finite only then (a NaN or an infinity anywhere
    makes it NaN or infinite), one pass that allocates nothing the size of ``t`` (isfinite
    would make a mask as large as the tensor: a 1 GB embedding, a 1 GB mask) and half the
    time of min and max (640 M bf16 weights: 0.10 s against 0.20 s). Finite values whose sum
    overflows are told apart by their smallest and largest, which are NaN when any value is."""
    import torch

    t = t.detach()
    if bool(torch.isfinite(t.sum())):
        return True
    low, high = torch.aminmax(t)
    return bool(torch.isfinite(low) & torch.isfinite(high))


def check_regular_file(path: Path, what: str = "file") -> None:
    """A path that exists and is a regular file (not a folder, pipe or device)."""
    if not path.exists() and not path.is_symlink():
        raise ModelLoadError(f"No such {what}: {path}")
    if not path.is_file():
        raise ModelLoadError(f"{path} is not a regular {what} (a folder, pipe, device or broken link); "
                             "give the path of a model file or of a Hugging Face model folder.")


def check_archive(path: Path, ratio: int = 4) -> None:
    """A zip must not expand to far more than its size: a zip bomb would fill the memory before
    the reader sees that the content is nonsense. torch.save stores without compression, so a
    real checkpoint expands to about its own size (``ratio`` 4); attention arrays in an .npz
    compress a few times (callers pass a larger ``ratio``). Then the expanded size must fit."""
    try:
        if not zipfile.is_zipfile(path):
            return
        with zipfile.ZipFile(path) as z:
            expanded = sum(i.file_size for i in z.infolist())
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        return  # not a readable zip: the reader gives its own "damaged" message
    size = path.stat().st_size
    if expanded > ratio * size + (64 << 20):
        raise ModelLoadError(f"{path.name} is a {gib(size)} file that would expand to {gib(expanded)}, far more than "
                             "any file attnscope or PyTorch writes (a zip bomb?); attnscope does not open it.")
    check_memory(path.name, 2 * expanded, "reading this file")


# ---- texts --------------------------------------------------------------------------------------------
def text_problem(text: str) -> str | None:
    """Why ``text`` cannot go to a tokenizer (None when it can): text that is not valid Unicode,
    as invalid UTF-8 bytes on a command line arrive (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        ch = text[exc.start]
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            return (f"the text is not valid UTF-8 (byte 0x{ord(ch) - 0xDC00:02x} at character {exc.start + 1}); "
                    "pass UTF-8 text")
        return f"the text holds a lone surrogate (U+{ord(ch):04X} at character {exc.start + 1}); pass valid Unicode text"
    return None
