"""all-MiniLM-L6-v2 forward passes, the app's path first. Prints one JSON object.

At 16, 128 and 512 tokens of the same text, five calls in one interleaved loop, each on a
worker thread as the app runs a forward (bench/_timing: rotating order, one warm-up round,
medians and spread):

- ``app_trace``: what a Run in the window computes for MiniLM, ``engine.traces.tracing.trace_text``:
  the adapter frames the text, the forward runs through the seam with the recorder on, and
  every head is computed from the recorded queries and keys (the trace densified);
- ``hf_eager_weights``: transformers' eager forward with ``output_attentions`` called bare
  (no tokenising, no trace): the path attnscope took before the seam;
- ``ours_weights``: attnscope's own BERT encoder on the same weights, recorded at the seam and
  every layer's weights computed (the path of Compare and ``attnscope compare``);
- ``ours_fused`` / ``hf_sdpa``: both without weights, on the fused kernel.

Ratios: app_trace / hf_eager_weights (goal <= 1.1), ours / HF eager with weights (goal <=
1.0), ours fused / HF sdpa (goal <= 1.05).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._timing import interleaved, machine, on_worker, ratio, run_main, summary  # noqa: E402


def text_of(tokenizer, n: int) -> str:
    """A text that tokenises to exactly ``n`` pieces with [CLS] and [SEP]."""
    words = "attention lets every token look at every other token in the sentence".split()
    text, i = "", 0
    while len(tokenizer(text)["input_ids"]) < n:
        text = f"{text} {words[i % len(words)]}".strip()
        i += 1
    return text


@torch.no_grad()
def main() -> None:
    from transformers import AutoModel

    from attnscope.engine.loading.convert import hf_to_scratch
    from attnscope.engine.loading.hf import load_hf_model, minilm_path
    from attnscope.engine.seam import recording
    from attnscope.engine.traces.tracing import trace_text

    loaded = load_hf_model(minilm_path())
    eager = AutoModel.from_pretrained(minilm_path(), attn_implementation="eager").eval()
    sdpa = AutoModel.from_pretrained(minilm_path(), attn_implementation="sdpa").eval()
    ours = hf_to_scratch(loaded).model

    def ours_weights(ids, types, mask):
        with recording() as rec:
            ours(ids, types, mask)
        return [c.weights(None) for c in rec.layers("encoder self")]
    results = {}
    for n in (16, 128, 512):
        text = text_of(loaded.tokenizer, n)
        enc = loaded.tokenizer(text, return_tensors="pt")
        ids, types, mask = enc["input_ids"], enc["token_type_ids"], enc["attention_mask"]
        fns = {
            "app_trace": lambda: trace_text(loaded, text),
            "hf_eager_weights": lambda: eager(input_ids=ids, token_type_ids=types, attention_mask=mask,
                                              output_attentions=True),
            "ours_weights": lambda: ours_weights(ids, types, mask),
            "ours_fused": lambda: ours(ids, types, mask),
            "hf_sdpa": lambda: sdpa(input_ids=ids, token_type_ids=types, attention_mask=mask),
        }
        t = interleaved({name: on_worker(torch.no_grad()(fn)) for name, fn in fns.items()},
                        repeats=21)
        results[str(n)] = {
            "tokens": int(ids.shape[1]),
            "ms": {name: summary(v, 2) for name, v in t.items()},
            "app_trace_over_hf_eager": ratio(t["app_trace"], t["hf_eager_weights"]),
            "weights_ratio_ours_over_hf_eager": ratio(t["ours_weights"], t["hf_eager_weights"]),
            "fused_ratio_ours_over_hf_sdpa": ratio(t["ours_fused"], t["hf_sdpa"]),
        }
    print(json.dumps({"bench": "bert_forward", "model": "all-MiniLM-L6-v2", "device": "cpu",
                      "threads": torch.get_num_threads(), "tokens": results, "machine": machine(),
                      "goal": {"app_trace_over_hf_eager": "<= 1.1", "weights_ratio": "<= 1.0",
                               "fused_ratio": "<= 1.05"}}))


if __name__ == "__main__":
    run_main(main)
