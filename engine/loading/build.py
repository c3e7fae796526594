"""Stage 4 of loading (engine.loading.pipeline.load): the model built as the Plan says, its weights
read and checked, on its device: a LoadedModel (attached to the seam next).

A Hugging Face folder is built by transformers' Auto class for its role, from the config
object the check made, with trust_remote_code=False: code shipped in a folder never runs.
Weights stay in the dtype the check chose, read from the files' memory map by transformers,
so loading takes about the model's size on disk and no more; every tensor handed over and
every byte read is reported (engine.loading.progress), and a stop asked between two tensors
ends the load with nothing kept. Our checkpoints are built from their family's class and
their weights loaded once names and shapes match; a random model is made by
engine.loading.demo. Every weight read is checked finite (``check_tensors``, below).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from attnscope.engine.errors import HFModelError, ModelLoadError, first_line
from attnscope.engine.loading.check import Plan
from attnscope.engine.loading.checkpoint_format import CheckpointError, damaged, name_list
from attnscope.engine.loading.dense import DENSE_NOTE
from attnscope.engine.loading.describe import Description
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.loading.progress import LoadCancelled, Reporter, counting_tensors
from attnscope.engine.models import FAMILIES
from attnscope.engine.runtime.quiet import quiet_transformers
from attnscope.engine.seam.hf_attention import NAME as SEAM, embedding_rows, register as register_seam

SIDE_JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json",
                   "added_tokens.json", "vocab.json")
FAMILY_OF_ROLE = {"encoder": "hf-encoder", "decoder": "hf-decoder", "encoder-decoder": "hf-seq2seq"}


def build(files: Description, plan: Plan, progress=None, stop=None) -> LoadedModel:
    """The model ``files`` describe, built and held as ``plan`` says, on ``plan.device``; a
    folder's tensors built and bytes read reported to ``progress`` (after a download's, which
    took the first part of the bar), stopped between two when ``stop()`` says so."""
    if files.kind == "folder":
        return build_folder(files, plan, progress, stop)
    if files.kind == "checkpoint":
        return _build_checkpoint(files, plan)
    from attnscope.engine.loading.demo import random_model
    return random_model(files.source.family).to(plan.device)


def build_folder(files: Description, plan: Plan, progress=None, stop=None) -> LoadedModel:
    """A Hugging Face folder as a LoadedModel of family "hf-bert", "hf-encoder", "hf-decoder" or
    "hf-seq2seq", with its tokenizer; a spread model's weights that stay off the computing
    device (in RAM or on the disk) are read at each forward, not here (a note says how many)."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    path, role, config, found = files.folder, files.role, plan.config, files.source
    source, given = str(path), found.given if found else str(path)
    reporter = (found and found.reporter) or Reporter(Path(given).name or given, progress, stop)
    maker = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    register_seam()
    dense = False          # its own attention classes: opened eager, drawn from its own weights (adapters/hf_dense)

    def made(implementation):
        return maker.from_pretrained(source, config=config, attn_implementation=implementation,
                                     local_files_only=True, output_loading_info=True, trust_remote_code=False,
                                     dtype=plan.dtype, **(plan.spread.kwargs() if plan.spread else {}))
    try:
        with quiet_transformers(), counting_tensors(reporter):
            try:
                model, info = made(SEAM)
            except KeyError as exc:
                if not (exc.args and exc.args[0] == SEAM and role != "encoder-decoder" and plan.spread is None):
                    raise
                (model, info), dense = made("eager"), True
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True, trust_remote_code=False)
    except LoadCancelled:
        raise
    except Exception as exc:
        broken = _broken_json_file(path)
        if broken:
            raise HFModelError(f"{source}: {broken}. Copy the folder again.") from None
        if isinstance(exc, KeyError) and exc.args and exc.args[0] == SEAM:     # its own attention classes
            raise HFModelError(f"{source}: {config.model_type} computes attention its own way, not through "
                               f"transformers' attention interface, so attnscope cannot see its heads.") from None
        raise HFModelError(f"Could not open {source} with transformers: {first_line(exc)}") from None
    missing = [k for k in info.get("missing_keys", []) if not k.startswith("pooler.")]
    if missing:
        raise HFModelError(f"{source}: the weights lack {len(missing)} tensors (e.g. {sorted(missing)[0]}); "
                           "the model would run on random weights.")
    mismatched = list(info.get("mismatched_keys", []))
    if mismatched:
        raise HFModelError(f"{source}: {len(mismatched)} tensors do not match the sizes in config.json "
                           f"(e.g. {mismatched[0][0] if isinstance(mismatched[0], tuple) else mismatched[0]}).")
    # Every weight read once and checked finite, the bytes read reported: weights kept in their
    # stored dtype are the file's own memory map, so this is where a cold disk is read, and where
    # the bar moves. A spread model's weights kept off its computing device ("meta") are not.
    params = [(n, p) for n, p in model.named_parameters() if p.device.type != "meta"]
    total, done = sum(p.numel() * p.element_size() for _, p in params), 0
    reporter.reading(done, total)
    _check_integers(source, files.weights, model)       # after the bar's first word: the checks read in one go
    for name, p in params:
        if p.is_floating_point():          # the model's own integer parameters: held against the file above
            check_tensors(source, [(name, p)])
        done += p.numel() * p.element_size()
        reporter.reading(done, total)
    vocab = embedding_rows(model)
    if len(tokenizer) > vocab:
        raise HFModelError(f"{source}: the tokenizer has {len(tokenizer)} tokens but the model's embedding has only "
                           f"{vocab} rows, so ids beyond {vocab - 1} would fail on every run. "
                           "The tokenizer files do not belong to these weights.")
    model.eval()
    if plan.spread is None:
        model.to(plan.device)
    meta = {"source": source if found is None or found.local else found.given, "hf_config": config.to_dict(),
            "model_type": config.model_type, "role": role,
            "folder": source,      # where its files are read from (a hub id's cache snapshot): never written over
            "dense": dense}
    notes = list(plan.notes) + ([DENSE_NOTE] if dense else [])
    if plan.spread is not None:
        on_disk = sum(1 for _, p in model.named_parameters() if p.device.type == "meta")
        meta["placement"] = describe_map(getattr(model, "hf_device_map", None) or {"": str(model.device)})
        notes.append(meta["placement"] + (f"; {on_disk} weights stay off the computing device, in RAM or on the "
                                          "disk, read in at each forward (not checked at load)" if on_disk else "")
                     + ".")
        model.attnscope_offload = plan.spread.offload   # the disk's share lives as long as the model
    if notes:
        meta["notes"] = " ".join(notes)
    family = "hf-bert" if config.model_type == "bert" else FAMILY_OF_ROLE[role]
    return LoadedModel(files.name or path.name, family, model, tokenizer, meta=meta)


def _broken_json_file(path) -> str | None:
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
            return f"{name} is not valid JSON ({first_line(exc)})"
    return None


# ---- our checkpoints ------------------------------------------------------------------------------
def _build_checkpoint(files: Description, plan: Plan) -> LoadedModel:
    """Our family's model (random weights first), its tensors' names and shapes checked
    against it before any tensor is read, then its weights loaded and checked finite."""

    file = files.checkpoint
    name = file.path.name
    model_cls = FAMILIES[plan.family][0]
    try:
        model = model_cls(plan.config)
    except (ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{name}: the model config does not describe a model that can be built "
                              f"({first_line(exc, 200)}).") from None
    model.eval()
    _check_names_and_shapes(name, model, file.shapes)
    tensors = file.state if file.state is not None else _read_safetensors(file.path, file.shapes)
    check_tensors(name, tensors.items())
    expected, groups = _tied_groups(model)
    state = {k: tensors[k] if k in tensors else tensors[next(g for g in groups[t.data_ptr()] if g in tensors)]
             for k, t in expected.items()}
    model.load_state_dict(state, strict=True)
    meta = {"training": plan.training, "format_version": plan.version, "source": str(file.path)}
    if plan.notes:
        meta["notes"] = " ".join(plan.notes)
    loaded = LoadedModel(plan.name, plan.family, model, plan.tokenizer, plan.target_tokenizer, meta=meta)
    return loaded.to(plan.device)


def _read_safetensors(path, names) -> dict[str, torch.Tensor]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            return {k: f.get_tensor(k) for k in names}
    except Exception as exc:
        raise damaged(path, "safetensors", exc) from None


def _tied_groups(model: torch.nn.Module) -> tuple[dict, dict[int, list[str]]]:
    expected = model.state_dict()
    groups: dict[int, list[str]] = {}
    for key, t in expected.items():
        groups.setdefault(t.data_ptr(), []).append(key)
    return expected, groups


def _check_names_and_shapes(name: str, model: torch.nn.Module, shapes: dict[str, tuple]) -> None:
    """The file's tensor names and shapes against the model's, before any tensor is read."""
    expected, groups = _tied_groups(model)
    # Tied weights are stored once: any name of a tied group may supply the others.
    missing = [k for k, t in expected.items() if not any(g in shapes for g in groups[t.data_ptr()])]
    unexpected = [k for k in shapes if k not in expected]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing tensors {name_list(missing)}")
        if unexpected:
            parts.append(f"unexpected tensors {name_list(unexpected)}")
        raise CheckpointError(
            f"{name} does not match its own model description: {'; '.join(parts)}. "
            "The file was edited or written by another program; save the model again.")
    bad = [f"{k} {tuple(shapes[k])} (the model needs {tuple(expected[k].shape)})"
           for k in shapes if tuple(shapes[k]) != tuple(expected[k].shape)]
    if bad:
        raise CheckpointError(f"{name}: tensor shapes do not match the config: {'; '.join(bad[:3])}.")


# ---- the rule this stage asks: weights that are real, finite floats ---------------------------------
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


def _check_integers(source: str, weights, model) -> None:
    """Whole-number tensors in the files only where the model declares that tensor whole-number
    itself (DeepSeek-V4's router table ``ffn.gate.tid2eid``, a position-id buffer): anywhere else
    they would be cast into floating-point weights, and the model would compute with them."""
    from attnscope.engine.loading.describe import INTEGER_DTYPES

    stored = {n for n, t in (weights.tensors if weights else {}).items() if t.dtype in INTEGER_DTYPES}
    if not stored:
        return
    own = {n: t for n, t in [*model.named_parameters(), *model.named_buffers()]}
    odd = sorted(n for n in stored if n in own and own[n].is_floating_point())
    if odd:
        raise ModelLoadError(f"{source} holds weights that are not floating point where the model computes with "
                             f"floating-point ones: {', '.join(odd[:3])}. The file was edited or written by another "
                             "program.")


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


def describe_map(device_map: dict) -> str:
    """Where a spread model's modules went, for the status bar:
    "spread by accelerate: 9 modules on GPU 0, 7 on cpu, 2 on disk". Here, beside the build that
    reads accelerate's map, not in placement, which plans before anything is built."""
    counts: dict[str, int] = {}
    for where in device_map.values():
        name = f"GPU {where}" if isinstance(where, int) else str(where)
        counts[name] = counts.get(name, 0) + 1
    if len(counts) == 1:
        return f"spread by accelerate: all of it on {next(iter(counts))}"
    (first, n), *rest = counts.items()
    parts = [f"{n} module{'s' if n > 1 else ''} on {first}"] + [f"{m} on {where}" for where, m in rest]
    return "spread by accelerate: " + ", ".join(parts)
