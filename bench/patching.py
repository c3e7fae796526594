"""What patching every head costs, in bare forwards of the same model. Prints one JSON object.

Two random models built locally and opened as a user opens a folder (onto the seam):

- ``gpt2_small``: GPT-2 small's shape (12 layers x 12 heads, 768 wide, 50,257-token
  vocabulary) on a 20-token prompt pair;
- ``llama_1b``: Llama-3.2-1B's attention shape (16 layers x 32 query heads of 64, 8 key/value
  heads) on a 200-token pair. On a GPU at full width (2,048 wide, MLP 8,192, 128,256-token
  vocabulary); on a CPU at reduced width (512 wide, MLP 2,048, 8,192-token vocabulary: the
  heads as in the 1B, the matrices around them smaller), since one full-width 200-token forward
  takes seconds there and exact patching needs hundreds. ``width`` says which ran.

For each, in one loop whose order rotates each round (bench/_timing), on the model thread:

- ``bare_forward_ms``: the adapter's forward of the corrupted text, no hook, the last
  position's logits only, as every patched run unembeds (the unit; unembedding every position
  made it 1.27-1.42x heavier by FLOP count, and the ratios looked better than they were);
- ``exact_heads_ms``: engine.experiments exact patching of every head (all positions),
  both texts' own forwards included; goal <= 0.6 x layers x heads bare forwards;
- ``attribution_ms``: attribution patching of every head at every position (and every
  head), both forwards and the backward included; goal <= 4 bare forwards.

Ratios are of medians taken in the same run. ``ATTNSCOPE_BENCH_DEVICE`` (default cpu) and
``ATTNSCOPE_BENCH_ROUNDS`` (default 3) choose where and how often; ``ATTNSCOPE_BENCH_QUICK=1``
runs GPT-2 small's shape alone (about a minute on 2 cores; the whole bench took over
20 minutes there). Progress goes to stderr as it runs. Both goals are checked: a miss exits 1.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._timing import interleaved, machine, on_worker, ratio, run_main, scratch_dir, summary  # noqa: E402

QUICK = os.environ.get("ATTNSCOPE_BENCH_QUICK") == "1"
ROUNDS = int(os.environ.get("ATTNSCOPE_BENCH_ROUNDS", "3"))
DEVICE = os.environ.get("ATTNSCOPE_BENCH_DEVICE", "cpu")
MISSED: list[str] = []   # goals missed: the process exits 1 (from the main thread, after the model thread's run)
BARE_PER_ROUND = 5     # bare forwards timed per round (their mean is one sample)


def on_model_thread(fn):
    """On a CPU, where the app runs model work (bench/_timing); a GPU machine has no Qt, and its
    kernels do not care which thread launches them."""
    return on_worker(fn) if DEVICE == "cpu" else fn


def shapes(device: str) -> dict:
    full = device != "cpu"
    llama = dict(hidden_size=2048, intermediate_size=8192, vocab_size=128256) if full else \
        dict(hidden_size=512, intermediate_size=2048, vocab_size=8192)
    return {"gpt2_small": ("gpt2", dict(n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50257), 20),
            "llama_1b": ("llama", dict(num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                                       max_position_embeddings=2048, tie_word_embeddings=True, **llama), 200)}


def build(folder: Path, arch: str, sizes: dict) -> None:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    from tests.helpers.hf_tiny import _bpe_tokenizer

    torch.manual_seed(0)
    config, model = (GPT2Config, GPT2LMHeadModel) if arch == "gpt2" else (LlamaConfig, LlamaForCausalLM)
    model(config(**sizes, bos_token_id=1, eos_token_id=2, pad_token_id=0)).save_pretrained(folder)
    _bpe_tokenizer("decoder").save_pretrained(folder)


def pair_of(loaded, tokens: int):
    """A pair of ``tokens`` tokens each (BOS included): the clean text, and the same with its
    middle word changed; answers by id."""
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.experiments.pairs import PromptPair, frame_pair

    adapter = adapter_for(loaded)
    words = "the big dog sees the small cat and the cat sees a dog because it is small".split()
    clean: list[str] = []
    while not clean or len(adapter.frame(" ".join(clean)).target_ids) < tokens:
        clean.append(words[len(clean) % len(words)])
    corrupt = list(clean)
    middle = len(clean) // 2
    corrupt[middle] = "cat" if clean[middle] != "cat" else "dog"
    return frame_pair(loaded, PromptPair(" ".join(clean), " ".join(corrupt), "id:5", "id:6"))


def case(name: str, arch: str, sizes: dict, tokens: int, root: Path) -> dict:
    import torch

    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.experiments.attribution import attribution_patching
    from attnscope.engine.experiments.patching import exact_patching, run_to_end
    from attnscope.engine.loading.catalog import open_model

    folder = root / name
    on_model_thread(lambda: build(folder, arch, sizes))()
    loaded = on_model_thread(lambda: open_model(str(folder), DEVICE))()
    loaded.model.eval()
    adapter = adapter_for(loaded)
    pair = on_model_thread(lambda: pair_of(loaded, tokens))()
    layers, heads = len(adapter.residual_blocks()), sizes.get("n_head") or sizes["num_attention_heads"]
    sync = torch.cuda.synchronize if loaded.device.type == "cuda" else (lambda: None)
    estimate = {}

    def bare():
        with torch.no_grad():
            for _ in range(BARE_PER_ROUND):
                adapter.forward(pair.corrupt, last_only=True)       # as a patched run: the last logits
        sync()

    def exact():
        say(f"{name}: exact patching of every head ({layers} x {heads})")

        def keep(p):
            if p.text.startswith("Patching:"):
                estimate["text"] = p.text
        run_to_end(exact_patching(loaded, pair, ("heads",)), keep)
        sync()

    def attribution():
        say(f"{name}: attribution patching")
        run_to_end(attribution_patching(loaded, pair, ("heads", "heads-by-pos")))
        sync()

    start = time.perf_counter()
    times = interleaved({"bare": on_model_thread(bare), "exact": on_model_thread(exact),
                         "attribution": on_model_thread(attribution)}, ROUNDS)
    bare_ms = [t / BARE_PER_ROUND for t in times["bare"]]
    exact_ratio, attribution_ratio = ratio(times["exact"], bare_ms), ratio(times["attribution"], bare_ms)
    return {"arch": arch, "layers": layers, "heads": heads, "tokens": pair.tokens,
            "width": {k: v for k, v in sizes.items() if k in ("n_embd", "hidden_size", "intermediate_size",
                                                               "vocab_size", "head_dim")},
            "parameters_m": round(sum(p.numel() for p in loaded.model.parameters()) / 1e6, 1),
            "dtype": str(next(loaded.model.parameters()).dtype).replace("torch.", ""),
            "bare_forward_ms": summary(bare_ms, 2), "exact_heads_ms": summary(times["exact"]),
            "attribution_ms": summary(times["attribution"]),
            "exact_heads_in_bare_forwards": exact_ratio,
            "exact_goal_in_bare_forwards": round(0.6 * layers * heads, 1),
            "exact_per_head_in_bare_forwards": round(exact_ratio / (layers * heads), 3),
            "attribution_in_bare_forwards": attribution_ratio, "attribution_goal_in_bare_forwards": 4,
            "estimate": estimate.get("text"), "wall_s": round(time.perf_counter() - start, 1)}


def main() -> None:
    import torch

    root = scratch_dir("attnscope-bench-patching-")
    out = {"bench": "patching", "device": DEVICE, "rounds": ROUNDS,
           "device_name": torch.cuda.get_device_name() if DEVICE.startswith("cuda") else "cpu",
           "threads": torch.get_num_threads()}
    for name, (arch, sizes, tokens) in list(shapes(DEVICE).items())[:1 if QUICK else None]:
        out[name] = case(name, arch, sizes, tokens, root)
    out["goals"] = goals(out)
    if "llama_1b" in out:
        out["llama_1b"]["note"] = ("full Llama-3.2-1B width" if DEVICE != "cpu" else
                                   "Llama-3.2-1B attention shape (16 x 32 heads of 64, 8 kv heads) at reduced width "
                                   "(512 wide, MLP 2048, vocabulary 8192): the CPU cannot afford hundreds of "
                                   "full-width 200-token forwards")
    if DEVICE == "cpu":
        out["machine"] = machine()
    print(json.dumps(out, indent=2))
    MISSED.extend(out["goals"]["missed"])


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def goals(out: dict) -> dict:
    """Each case's two goals, met or missed, with the figure."""
    met, missed = [], []
    for name, case_out in out.items():
        if not isinstance(case_out, dict) or "exact_heads_in_bare_forwards" not in case_out:
            continue
        for figure, goal in (("exact_heads_in_bare_forwards", case_out["exact_goal_in_bare_forwards"]),
                             ("attribution_in_bare_forwards", case_out["attribution_goal_in_bare_forwards"])):
            (met if case_out[figure] <= goal else missed).append(f"{name} {figure} {case_out[figure]} <= {goal}")
    return {"met": met, "missed": missed}


if __name__ == "__main__":
    run_main(main) if DEVICE == "cpu" else main()
    sys.exit(1 if MISSED else 0)
