"""Opening a large sharded bfloat16 model: peak memory and time, attnscope against transformers.

Prints one JSON object. The model is a Llama of ~640 M parameters (16 layers, 1536 wide,
grouped-query attention, 32,000-token vocabulary) with random weights, built from
transformers' config class once into a scratch folder and saved as transformers saves a
real one: bfloat16, shards of 500 MB with model.safetensors.index.json, and a tokenizer.

Each measurement is a fresh Python process started by a parent that never imports torch
(so ``ru_maxrss`` is that load's own peak and nothing stays warm in the process; the files
stay in the page cache, as after a first open), taking turns over ``ROUNDS`` rounds:

- ``attnscope``: ``engine.loading.catalog.open_model(folder, "cpu")``, the window's and the
  CLI's way in: every check (index, headers, config, memory), the model in the checkpoint's
  own dtype, the tokenizer, and every weight read once and checked finite.
- ``transformers``: ``AutoModelForCausalLM.from_pretrained(folder)`` and
  ``AutoTokenizer.from_pretrained(folder)``, transformers' own defaults (dtype "auto").
  It maps the files and reads no weight until the first forward.
- ``transformers_read``: the same, then every weight read once (``torch.aminmax``), as the
  first forward would: the same work attnscope's load does.

Goals: attnscope's peak RSS <= 1.3 x the weights' bytes on disk; its time <= 1.2 x
transformers'. The processes' memory before loading (Python, torch, transformers
imported) is given too: it is part of every peak.
"""
from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROUNDS = int(os.environ.get("ATTNSCOPE_BENCH_ROUNDS", "3"))   # each a fresh process per kind
SHAPE = dict(hidden_size=1536, num_hidden_layers=16, num_attention_heads=12, num_key_value_heads=2,
             intermediate_size=6144, vocab_size=32000, max_position_embeddings=2048)


def _maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build(folder: Path) -> Path:
    """The model folder, written once (about 40 s and 1.3 GB of memory on 2 cores)."""
    import torch
    import transformers as tf

    from tests.helpers.hf_tiny import _bpe_tokenizer

    if (folder / "model.safetensors.index.json").exists():
        return folder
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)      # built in bfloat16 directly: no float32 copy
    model = tf.LlamaForCausalLM(tf.LlamaConfig(**SHAPE, dtype="bfloat16"))
    model.save_pretrained(folder, max_shard_size="500MB")
    _bpe_tokenizer("decoder").save_pretrained(folder)
    return folder


def child(kind: str, folder: str) -> dict:
    """One load in this process; what it took."""
    if kind == "attnscope":
        from attnscope.engine.runtime.memory import keep_freed_memory
        keep_freed_memory()          # as attnscope's main() does first
        from attnscope.engine.loading.catalog import open_model
        import attnscope.engine.loading.hf  # noqa: F401  (imports transformers, as the others do before the clock)
    import torch
    import transformers as tf
    before = _maxrss()
    start = time.perf_counter()
    if kind == "attnscope":
        loaded = open_model(folder, "cpu")
        model = loaded.model
    else:
        model = tf.AutoModelForCausalLM.from_pretrained(folder)
        tf.AutoTokenizer.from_pretrained(folder)
        if kind == "transformers_read":
            for p in model.parameters():
                torch.aminmax(p)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "maxrss": _maxrss(), "rss_before": before,
            "dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
            "parameters": sum(p.numel() for p in model.parameters())}


def _run(kind: str, folder: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(folder)], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    from bench._timing import scratch_dir

    folder = Path(os.environ.get("ATTNSCOPE_BENCH_LOAD_DIR") or scratch_dir("attnscope-load-")) / "llama-640m"
    # Built in a process of its own: ru_maxrss survives fork and exec, so a parent that had
    # held the model would lend its peak to every child measured after it.
    subprocess.run([sys.executable, __file__, "--build", str(folder)], cwd=ROOT, check=True, capture_output=True)
    disk = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    kinds = ("attnscope", "transformers", "transformers_read")
    runs = {k: [] for k in kinds}
    _run("transformers", folder)                 # the files into the page cache, once
    for r in range(ROUNDS):
        for k in kinds[r % 3:] + kinds[:r % 3]:   # the order rotates each round
            runs[k].append(_run(k, folder))

    def med(k, key):
        return statistics.median(x[key] for x in runs[k])

    result = {"bench": "load", "model": "llama, random weights, bfloat16, sharded safetensors",
              "parameters": runs["attnscope"][0]["parameters"], "shards": len(list(folder.glob("model-*.safetensors"))),
              "weights_bytes_on_disk": disk, "rounds": ROUNDS}
    for k in kinds:
        result[k] = {"seconds_median": round(med(k, "seconds"), 3),
                     "seconds": [round(x["seconds"], 3) for x in runs[k]],
                     "peak_rss_bytes_median": int(med(k, "maxrss")),
                     "rss_before_load_bytes": int(med(k, "rss_before")),
                     "peak_rss_over_disk": round(med(k, "maxrss") / disk, 3),
                     "dtype": runs[k][0]["dtype"]}
    result["time_ratio_attnscope_over_transformers"] = round(med("attnscope", "seconds") / med("transformers", "seconds"), 3)
    result["time_ratio_attnscope_over_transformers_read"] = round(
        med("attnscope", "seconds") / med("transformers_read", "seconds"), 3)
    result["goals"] = {"peak_rss_over_disk": 1.3, "time_ratio": 1.2}
    result["load_avg_1min"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    elif len(sys.argv) == 3 and sys.argv[1] == "--build":
        build(Path(sys.argv[2]))
    else:
        main()
