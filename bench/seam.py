"""What seeing every attention call costs: the seam's recording against the bare fused forward.
Prints one JSON object.

A random model with Llama-3.2-1B's attention shape (16 layers, 32 query heads, 8 key/value
heads, head_dim 64; 1024 wide with a 2048-wide MLP and a 512-token vocabulary, so a forward
at 2,048 tokens takes seconds, not minutes, on two cores), built from transformers' config
class. At 512 and 2,048 tokens, interleaved in one loop on the app's model thread
(bench/_timing):

- ``sdpa_bare``: transformers' own ``sdpa`` attention, plain forward (the baseline);
- ``seam_recording``: attnscope's attention function with the Recorder on, which is what a
  Run does before it computes any head (queries and keys kept per layer, and each query's
  log-sum-exp from the kernel: torch's CPU flash kernel, keys and values repeated per
  query head for it);
- ``eager_weights``: the old path, transformers' eager attention with ``output_attentions``
  (the dense (L, H, T, T) weights of every layer), at 512 tokens only: at 2,048 it would
  hold 16 x 32 x 2048^2 x 4 B = 8.6 GB of weights at once.

ratio = seam_recording / sdpa_bare (goal <= 1.15 at both lengths).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._timing import interleaved, machine, on_worker, ratio, run_main, summary  # noqa: E402

SHAPE = dict(hidden_size=1024, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, head_dim=64,
             intermediate_size=2048, vocab_size=512, max_position_embeddings=4096)


def build():
    from transformers import LlamaConfig, LlamaForCausalLM

    from attnscope.engine.seam.hf_attention import assign_sites

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**SHAPE)).eval()
    assign_sites(model, "decoder")
    return model


def bench(model, tokens: int, repeats: int, with_eager: bool) -> dict:
    from attnscope.engine.seam import recording
    from attnscope.engine.seam.hf_attention import NAME

    ids = torch.randint(3, SHAPE["vocab_size"], (1, tokens))
    kept = {}

    def as_impl(name, **kwargs):
        def run():
            model.set_attn_implementation(name)
            with torch.no_grad():
                return model(input_ids=ids, **kwargs)
        return run

    def seam_recording():
        model.set_attn_implementation(NAME)
        with torch.no_grad(), recording(lse=True) as rec:
            model(input_ids=ids)
        kept["bytes"] = sum(c.q.nbytes + c.k.nbytes for c in rec.calls.values())

    fns = {"sdpa_bare": as_impl("sdpa"), "seam_recording": seam_recording}
    if with_eager:
        fns["eager_weights"] = as_impl("eager", output_attentions=True)
    times = interleaved({k: on_worker(f) for k, f in fns.items()}, repeats)
    out = {"tokens": tokens, **{f"{k}_ms": summary(v)["median"] for k, v in times.items()},
           "ratio": ratio(times["seam_recording"], times["sdpa_bare"]),
           "recording_mb": round(kept["bytes"] / 2**20, 1),
           "dense_trace_mb": round(SHAPE["num_hidden_layers"] * SHAPE["num_attention_heads"] * tokens**2 * 4 / 2**20, 1),
           "spread": {k: summary(v) for k, v in times.items()}}
    if with_eager:
        out["eager_ratio"] = ratio(times["eager_weights"], times["sdpa_bare"])
    return out


def main() -> None:
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    model = build()
    result = {"bench": "seam", "cores": os.cpu_count(), "threads": torch.get_num_threads(),
              "shape": "Llama-3.2-1B attention: 16 layers x 32 heads, 8 kv heads, head_dim 64 (1024 wide, MLP 2048)",
              "at_512": bench(model, 512, repeats=int(os.environ.get("ATTNSCOPE_BENCH_REPEATS", "9")), with_eager=True),
              "at_2048": bench(model, 2048, repeats=int(os.environ.get("ATTNSCOPE_BENCH_REPEATS_LONG", "3")),
                               with_eager=False),
              "goal": "ratio <= 1.15 at 512 and 2048 tokens"}
    result["machine"] = machine()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    run_main(main)
