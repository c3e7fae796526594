"""Per-step decoding latency with the KV cache against full recompute, at several prefix lengths.

A GPT of the "small" shape with a 320-token context; each measured step feeds one token
after a prefix of 16, 64 or 256 tokens: with the cache (engine.decoding's way) or by
re-running the whole sequence. Goal: a cached step at 256 within 1.5x of one at 16.
Prints one JSON object.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._timing import best_time  # noqa: E402

from engine.models import GPT, GPTConfig  # noqa: E402


@torch.no_grad()
def main() -> None:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=2000, block_size=320, n_layer=4, n_head=4, n_embd=192)).eval()
    out = {}
    for n in (16, 64, 256):
        prefix = torch.randint(0, 2000, (1, n))
        past = model(prefix, use_cache=True).present
        new = torch.randint(0, 2000, (1, 1))
        cached = best_time(lambda: model(new, need_weights=True, past=past, use_cache=True))
        full = best_time(lambda: model(torch.cat([prefix, new], 1), need_weights=True))
        out[str(n)] = {"cached_ms": round(cached * 1e3, 3), "recompute_ms": round(full * 1e3, 3),
                       "speedup": round(full / cached, 2)}
    print(json.dumps({"bench": "decoding", "device": "cpu", "threads": torch.get_num_threads(),
                      "model": "gpt 4x4x192, weights returned", "prefix": out,
                      "cached_256_over_16": round(out["256"]["cached_ms"] / out["16"]["cached_ms"], 3),
                      "goal": "cached_256_over_16 <= 1.5"}))


if __name__ == "__main__":
    main()
