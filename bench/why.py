"""Why a head attends: what one split costs against a bare forward. Prints one JSON object.

The model is the CPU bench shape of bench/long_context.py (Llama-3.2-1B's attention: 16
layers x 32 query heads, 8 key/value heads, 512 wide, MLP 2048), random weights, opened as a
user opens a folder. At 1,024 and 8,192 tokens (ATTNSCOPE_BENCH_LENGTHS), alternating with
transformers' own bare sdpa forward (last position's logits only), ATTNSCOPE_BENCH_REPEATS
times (3), medians:

- ``why_last_layer``: the worst case, a head of the last layer (15 layers of sources: 15 x 32
  heads + 15 MLPs + embed + bias = 497 sources), query the last token, a key and a versus key
  (three positions): what ``attnscope why`` and the Why panel wait for, the model loaded;
- ``why_middle_layer``: a head of layer 8.

Goal (issue 48): each split <= 1.3 x the bare forward at every length; a miss exits 1.
ATTNSCOPE_BENCH_DEVICE=cuda runs the same on a GPU (bf16 there), when one is lent.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LENGTHS = tuple(int(n) for n in os.environ.get("ATTNSCOPE_BENCH_LENGTHS", "1024,8192").split(","))
REPEATS = int(os.environ.get("ATTNSCOPE_BENCH_REPEATS", "3"))
DEVICE = os.environ.get("ATTNSCOPE_BENCH_DEVICE", "cpu")
GOAL = 1.3


def main() -> None:
    import torch

    from bench._timing import interleaved, ratio, scratch_dir, summary
    from bench.long_context import SHAPE, bare_forward, build, text_of
    from attnscope.engine.experiments import why
    from attnscope.engine.loading.catalog import open_model

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    folder = scratch_dir("attnscope-why-") / "model"
    build(folder)
    loaded = open_model(str(folder), DEVICE)
    if DEVICE != "cpu":
        loaded.model.to(torch.bfloat16)
    report = {"shape": {k: SHAPE[k] for k in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                              "hidden_size", "intermediate_size")},
              "device": DEVICE, "repeats": REPEATS, "goal": f"<= {GOAL} x the bare forward", "lengths": {}}
    missed = []
    for n in LENGTHS:
        text = text_of(loaded.tokenizer, n)
        ids = torch.tensor([loaded.tokenizer(text)["input_ids"][:n]], device=loaded.device)
        text = loaded.tokenizer.decode(ids[0], skip_special_tokens=True)
        tokens = len(loaded.tokenizer(text)["input_ids"])
        q = tokens - 1

        def bare():
            bare_forward(loaded.model, ids)
            if DEVICE != "cpu":
                torch.cuda.synchronize()

        kept = {}

        def split(layer):
            def run():
                kept[layer] = why(loaded, text, "decoder self", layer, 7, q, q // 2, versus=q - 1)
            return run

        times = interleaved({"bare": bare, "why_last_layer": split(15), "why_middle_layer": split(8)}, REPEATS,
                            warmup=1)
        row = {"tokens": tokens, "bare_forward_s": summary([t / 1e3 for t in times["bare"]], 2)}
        for name, layer in (("why_last_layer", 15), ("why_middle_layer", 8)):
            r = ratio(times[name], times["bare"], 2)
            s = kept[layer]
            row[name] = {"seconds": summary([t / 1e3 for t in times[name]], 2), "over_bare": r,
                         "sources": len(s.query_sources) - 1,
                         "terms_minus_score": float(abs(s.exact_sum - s.score))}
            if r > GOAL:
                missed.append(f"{name} at {tokens} tokens: {r} x the bare forward")
        report["lengths"][str(tokens)] = row
    report["missed"] = missed
    print(json.dumps(report, indent=1))
    if missed:
        sys.exit(1)


if __name__ == "__main__":
    from bench._timing import run_main

    run_main(main)
