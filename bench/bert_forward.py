"""attnscope's BERT encoder against Hugging Face's on the same MiniLM weights.

Two comparisons, measured in one run on one machine, as ratios (ours / theirs):
- with attention weights returned: our weights path vs HF eager with output_attentions
  (goal <= 1.0 at every length);
- without weights: our fused path (scaled_dot_product_attention) vs HF sdpa (goal <= 1.05).
Prints one JSON object.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._timing import best_time  # noqa: E402


@torch.no_grad()
def main() -> None:
    from transformers import AutoModel

    from engine.hf import hf_to_scratch, load_hf_model, minilm_path

    eager = load_hf_model(minilm_path())
    sdpa = AutoModel.from_pretrained(minilm_path(), attn_implementation="sdpa").eval()
    ours = hf_to_scratch(eager).model
    results = {}
    for n in (16, 128, 512):
        ids = torch.randint(1000, 20000, (1, n))
        types, mask = torch.zeros_like(ids), torch.ones_like(ids)
        repeats = 20 if n < 512 else 12
        t_ours_w = best_time(lambda: ours(ids, types, mask, need_weights=True), repeats)
        t_hf_w = best_time(lambda: eager.model(input_ids=ids, token_type_ids=types, attention_mask=mask,
                                               output_attentions=True), repeats)
        t_ours_f = best_time(lambda: ours(ids, types, mask, need_weights=False), repeats)
        t_hf_f = best_time(lambda: sdpa(input_ids=ids, token_type_ids=types, attention_mask=mask), repeats)
        results[str(n)] = {
            "weights_ms": {"attnscope": round(t_ours_w * 1e3, 2), "hf_eager": round(t_hf_w * 1e3, 2),
                           "ratio": round(t_ours_w / t_hf_w, 3)},
            "fused_ms": {"attnscope": round(t_ours_f * 1e3, 2), "hf_sdpa": round(t_hf_f * 1e3, 2),
                         "ratio": round(t_ours_f / t_hf_f, 3)},
        }
    print(json.dumps({"bench": "bert_forward", "model": "all-MiniLM-L6-v2", "device": "cpu",
                      "threads": torch.get_num_threads(), "tokens": results,
                      "goal": {"weights_ratio": "<= 1.0", "fused_ratio": "<= 1.05"}}))


if __name__ == "__main__":
    main()
