"""Real-world model folders, built locally: sharded, in bfloat16, and in a fake Hugging Face cache.

Why: researchers keep models as transformers and huggingface_hub write them. Anything above
a few GB is saved in shards (``model-00001-of-00003.safetensors`` + an index, or the same
as PyTorch ``.bin`` files), in the dtype it was trained in (bfloat16), and a model that was
ever downloaded sits in the hub cache (``models--org--name/refs/main`` holds a commit hash,
``snapshots/<hash>/`` links to ``blobs/``). No weights can be downloaded here, so each is
built from transformers' config classes with random weights (tests/helpers/hf_tiny.py), then saved
in exactly those layouts.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import torch

from tests.helpers.hf_tiny import ROLE, _bpe_tokenizer, _config, _wordpiece_tokenizer

SHARD = "200KB"                   # tiny models of ~0.5-1 MB split into 3-6 shards
SIZES = dict(width=128, layers=2, heads=4, positions=64)


def build_model(arch: str, seed: int = 0, dtype=torch.bfloat16):
    """(model, tokenizer): a random ``arch`` model in ``dtype``, large enough to need shards."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    role = ROLE[arch]
    tokenizer = _wordpiece_tokenizer() if role == "encoder" else _bpe_tokenizer(role)
    config = _config(arch, max(len(tokenizer), 64), **SIZES)
    torch.manual_seed(seed)
    maker = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    model = maker.from_config(config, attn_implementation="eager").to(dtype).eval()
    model.config.dtype = dtype
    return model, tokenizer


def save_sharded(model, tokenizer, folder: Path, fmt: str = "safetensors", max_shard_size: str = SHARD) -> Path:
    """``model`` saved in shards of SHARD: safetensors by transformers' own save_pretrained;
    .bin as transformers 4 wrote them (torch.save per shard, pytorch_model.bin.index.json),
    since transformers 5 no longer writes them but still reads them."""
    folder = Path(folder)
    if fmt == "safetensors":
        model.save_pretrained(folder, max_shard_size=max_shard_size)
    else:
        from huggingface_hub import split_torch_state_dict_into_shards

        folder.mkdir(parents=True, exist_ok=True)
        model.config.save_pretrained(folder)
        state = {k: v.contiguous().clone() for k, v in model.state_dict().items()}
        split = split_torch_state_dict_into_shards(state, filename_pattern="pytorch_model{suffix}.bin",
                                                   max_shard_size=max_shard_size)
        for file, names in split.filename_to_tensors.items():
            torch.save({n: state[n] for n in names}, folder / file)
        index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in state.values())},
                 "weight_map": split.tensor_to_filename}
        (folder / "pytorch_model.bin.index.json").write_text(json.dumps(index, indent=2))
    tokenizer.save_pretrained(folder)
    shards = sorted(folder.glob("*-of-*"))
    assert len(shards) >= 2, f"{folder} was saved in one file; SHARD is too large for this model"
    return folder


def put_in_cache(folder: Path, cache: Path, repo_id: str, commit_seed: str = "") -> Path:
    """Copy ``folder`` into ``cache`` as huggingface_hub lays out a download: every file a
    blob named by its hash, the snapshot's files links to the blobs, refs/main the commit."""
    repo = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    commit = hashlib.sha1((repo_id + commit_seed).encode()).hexdigest()
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for file in sorted(Path(folder).iterdir()):
        data = file.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        if not blob.exists():
            shutil.copyfile(file, blob)
        link = snapshot / file.name
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(os.path.relpath(blob, snapshot), link)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot
