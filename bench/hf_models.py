"""What collecting attention costs on Hugging Face models. Prints one JSON object.

For each architecture, a random model of a realistic small shape (6 layers, 8 heads, 512
wide; Llama and Qwen2 with grouped-query attention) built from transformers' config class
and opened from its folder the way the window opens one. At 128 and 512 tokens:

- baseline: the model's forward through the seam recording nothing (the fused kernel);
- candidate: what a Run does, ``engine.traces.tracing.trace_text`` (frame the text, forward
  with the recorder on, every head computed from the recorded queries and keys, float32).

Both on a worker thread, as a Run's forward runs; interleaved in one loop (bench/_timing:
the order rotates each round, one warm-up round), medians over the repetitions with their
spread; ratio = candidate / baseline
(the weights are computed once more from q and k, which the fused forward never writes out:
that cost is what this ratio shows). Encoder-decoders are timed on the encoder and one decoder pass over a fixed
target, so generation is not in the figure.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._timing import interleaved, machine, on_worker, ratio, run_main, scratch_dir, summary  # noqa: E402

def _archs() -> tuple[str, ...]:
    """Every architecture the tests open (tests/hf_tiny.ARCHITECTURES): 15 since Mistral,
    Gemma 2 (soft cap, sliding windows), Phi-3, Qwen3, ELECTRA and Marian joined."""
    from tests.helpers.hf_tiny import ARCHITECTURES
    return ARCHITECTURES


def _folder(root: Path, arch: str) -> Path:
    """A 6-layer, 8-head, 512-wide random model of ``arch`` with the test tokenizers."""
    from tests.helpers.hf_tiny import tiny_folder
    return tiny_folder(root, arch, width=512, layers=6, heads=8, positions=1024)


def _text(tokenizer, n_tokens: int) -> str:
    words = "the big dog sees the small cat and the cat sees a dog".split()
    text, i = "", 0
    while len(tokenizer(text)["input_ids"]) < n_tokens:
        text += " " + words[i % len(words)]
        i += 1
    return text.strip()


def bench(loaded, tokens: int, repeats: int = 15) -> dict:
    from attnscope.engine.traces.tracing import trace_text

    model, tok = loaded.model, loaded.tokenizer
    text = _text(tok, tokens)
    enc = tok(text, return_tensors="pt", truncation=True, max_length=loaded.max_len)
    seq2seq = loaded.role == "encoder-decoder"
    target = " ".join(["the dog"] * 8)
    if seq2seq:
        start = model.config.decoder_start_token_id or 0
        dec = torch.tensor([[start] + tok(target, add_special_tokens=False)["input_ids"]])

    def baseline():
        with torch.no_grad():
            model(**enc, decoder_input_ids=dec) if seq2seq else model(**enc)

    def candidate():
        trace_text(loaded, text, target=target if seq2seq else None)

    times = interleaved({"baseline": on_worker(baseline), "candidate": on_worker(candidate)}, repeats)
    base, cand = summary(times["baseline"]), summary(times["candidate"])
    return {"tokens": int(enc["input_ids"].shape[1]), "forward_no_weights_ms": base["median"],
            "trace_ms": cand["median"], "ratio": ratio(times["candidate"], times["baseline"]),
            "spread": {"forward_no_weights_ms": base, "trace_ms": cand}}


def main() -> None:
    from attnscope.engine.loading.catalog import open_model

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    root = scratch_dir("attnscope-bench-hf-")
    result = {"bench": "hf_models", "cores": os.cpu_count(), "threads": torch.get_num_threads(),
              "shape": "6 layers, 8 heads, 512 wide", "models": {}}
    for arch in _archs():
        loaded = open_model(str(_folder(root, arch)), "cpu")
        result["models"][arch] = {"role": loaded.role, "at_128": bench(loaded, 128), "at_512": bench(loaded, 512)}
    ratios = [m[k]["ratio"] for m in result["models"].values() for k in ("at_128", "at_512")]
    result["worst_ratio"] = max(ratios)
    result["median_ratio"] = sorted(ratios)[len(ratios) // 2]
    result["machine"] = machine()
    result["goal"] = "ratio <= 1.1"
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    run_main(main)
