"""An ``ndif:`` model's files read at the door, before anything is built on the meta device.

A model served by NDIF is opened here from its config and tokenizer alone (no weights, so the
local folder's describe/check stages do not run on it). These are the same doors in their
place: config.json read by the folder's own reader (not JSON, too large, nested past reading:
one sentence), transformers' config checked and its sizes held to the local bounds, so a config
declaring 100,000 layers is refused at once with its number (built on the meta device it took
minutes, module by module); the dtype it is served in named as a float dtype; the tokenizer's
JSON files read as text before transformers reads them. And what ``ndif:`` takes: a Hugging
Face hub id or a transformers language model's folder, never attnscope's own checkpoints or
toys (nnsight cannot wrap them: "Could not infer a pipeline task").
"""
from __future__ import annotations

import json
from pathlib import Path

from attnscope.engine.errors import HFModelError, ModelLoadError, first_line

SERVED_DTYPES = ("bfloat16", "float16", "float32")
JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
              "vocab.json", "generation_config.json")
MAX_JSON_BYTES = 1 << 30              # a tokenizer.json is tens of MB; a gigabyte is not one


def not_for_ndif(name: str, what: str) -> ModelLoadError:
    return ModelLoadError(f"ndif: takes a Hugging Face hub id (owner/name) or the folder of a transformers language "
                          f"model, and {name} is {what}: open it without ndif: to run it here.")


def check_ndif_name(name: str) -> None:
    """ModelLoadError for a name ``ndif:`` cannot take: attnscope's bundled models and toys, a file."""
    from attnscope.engine.loading.bundled import MINILM, RANDOM_SOURCES, bundled_names

    word, path = name.strip().lower(), Path(name).expanduser()
    if path.is_dir():                     # the user's own folder comes first, as resolve_name has it
        return
    if word in RANDOM_SOURCES:
        raise not_for_ndif(name, "one of attnscope's untrained toys")
    if word in bundled_names() or word == MINILM:
        raise not_for_ndif(name, "a model bundled with attnscope")
    if path.is_file():
        raise not_for_ndif(name, "a file (a checkpoint), not a folder")


def check_ndif_loaded(name: str, loaded) -> None:
    """Opened here (ATTNSCOPE_NDIF=local): ModelLoadError unless it is a transformers model."""
    if not str(loaded.family).startswith("hf-"):
        raise not_for_ndif(name, f"attnscope's own {loaded.family} model, not a transformers one")


def read_served_config(folder: Path, source: str):
    """transformers' config of ``folder``: read, checked and held to the local bounds (one
    sentence each), with the dtype the model is served in."""
    import torch

    from attnscope.engine.loading.check import HEADS, LAYERS, VOCAB, WIDTH, check_values, hf_config
    from attnscope.engine.loading.describe import hf_role, read_config

    try:
        raw = read_config(folder)
    except RecursionError:
        raise HFModelError(f"{source}: config.json nests its values deeper than any config does, so it cannot be "
                           "read.") from None
    role = hf_role(raw.get("model_type"), source)
    if role != "decoder":
        raise HFModelError(f"{source} is an {role}; NDIF serves language models (decoders), which ndif: opens.")
    declared = raw.get("dtype", raw.get("torch_dtype"))
    if declared not in (None, "auto", *SERVED_DTYPES):
        raise HFModelError(f"{source}: config.json says the model is served in {str(declared)[:40]!r}, which is not a "
                           f"float dtype a model is served in ({', '.join(SERVED_DTYPES)}).")
    config = hf_config(raw, source)
    text = config.get_text_config()
    names = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size", "vocab_size")
    check_values(source, [(n, getattr(text, n, None), r) for n, r in zip(names, (LAYERS, HEADS, HEADS, WIDTH, VOCAB))])
    dtype = getattr(torch, declared) if declared in SERVED_DTYPES else torch.bfloat16
    return config, dtype


def read_served_tokenizer(folder: Path, source: str):
    """The tokenizer of ``folder``, its JSON files read as text first: one sentence, in words,
    for one that is not UTF-8, not JSON or nested past reading."""
    from transformers import AutoTokenizer

    from attnscope.engine.loading.check import check_tokenizer_files
    from attnscope.engine.loading.describe import TOKENIZER_FILES

    check_tokenizer_files(source, tuple(f for f in TOKENIZER_FILES if (folder / f).is_file()))
    for name in JSON_FILES:
        wrong = _json_problem(folder / name)
        if wrong:
            raise HFModelError(f"{source}: {name} {wrong}, so its tokenizer cannot be read. Copy the folder again.")
    try:
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    except Exception as exc:
        raise HFModelError(f"{source}: its tokenizer files could not be read by transformers "
                           f"({type(exc).__name__}: {first_line(exc, 120)}).") from None


def _json_problem(file: Path) -> str | None:
    """What is wrong with the JSON file ``file``, in words; None if it reads (or is absent)."""
    if not file.is_file():
        return None
    if file.stat().st_size > MAX_JSON_BYTES:
        return f"is {file.stat().st_size:,} bytes, larger than any such file"
    try:
        json.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        return f"is not UTF-8 text (byte {exc.start:,} is 0x{exc.object[exc.start]:02x})"
    except RecursionError:
        return "nests its values deeper than any such file does"
    except json.JSONDecodeError as exc:
        return f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    return None
