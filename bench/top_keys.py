"""What Head lines waits for on a long text: one head's 16 strongest keys of every query
(engine.inspection.top_keys), on a recorded trace. Prints one JSON object.

The Llama-3.2-1B-shaped random model of bench/long_context (16 layers x 32 query heads, 8
key/value heads, head_dim 16), opened as a user opens a folder, a text of 4,096 and of
8,192 tokens recorded by a Run (trace_text, the rows' log-sum-exp from the kernel). Per
length, in one process, on the app's model thread, the two paths interleaved (the order
rotating each round, a different head each round, the same head for both):

- ``before_s``: the head-by-head path, as every trace had it (``head_top_keys``: the head read
  through ``tile`` 4 MB of rows at a time, numpy's partition on each block);
- ``after_s``: ``layer_top_keys`` on the same head, which a recorded trace now answers itself
  (RecordedTrace.strongest_keys: scores and torch.topk in blocks of rows, a causal block
  scored up to its last row only);
- ``after_every_head_s``: ``layer_top_keys`` for all 32 heads of a layer in one call, per head;
- ``same``: whether both paths chose the same keys, and their largest weight / leftover gap.

Seconds per head, medians (with the spread). On this project's 2-core machines other jobs
share the cores: the load average taken each round is given with the figures (torch's two
threads wait for each other at every operation, so a busy neighbour slows many small
operations more than a few large ones).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._timing import machine, ratio, run_main, scratch_dir, summary  # noqa: E402

LENGTHS = tuple(int(n) for n in os.environ.get("ATTNSCOPE_BENCH_LENGTHS", "4096,8192").split(","))
ROUNDS = int(os.environ.get("ATTNSCOPE_BENCH_REPEATS", "5"))
K = 16                      # gui.views.head_lines.MAX_KEYS_PER_QUERY: what the view reads once a head


def bench(loaded, n: int, rounds: int) -> dict:
    import numpy as np

    from bench.long_context import text_of
    from attnscope.engine.inspection.top_keys import head_top_keys, layer_top_keys
    from attnscope.engine.traces.tracing import trace_text

    kind = "decoder self"
    trace = trace_text(loaded, text_of(loaded.tokenizer, n))
    layers, heads, tq, _ = trace.shape(kind)
    timed = {"before": [], "after": [], "after_every_head": []}
    load, gaps = [], {"keys_differ": 0, "weight": 0.0, "leftover": 0.0}

    def compare(a, b) -> None:
        gaps["keys_differ"] += int((a.keys != b.keys).any(1).sum())
        gaps["weight"] = max(gaps["weight"], float(np.abs(a.weights - b.weights).max()))
        gaps["leftover"] = max(gaps["leftover"], float(np.abs(a.leftover - b.leftover).max()))

    for r in range(rounds + 1):                                   # round 0: warm-up, untimed
        layer, head = (3 + 5 * r) % layers, (7 + 11 * r) % heads
        got = {}
        calls = {"before": lambda: head_top_keys(trace, kind, layer, head, K),
                 "after": lambda: layer_top_keys(trace, kind, layer, [head], K)[head],
                 "after_every_head": lambda: layer_top_keys(trace, kind, layer, list(range(heads)), K)[head]}
        names = list(calls)
        for name in names[r % 3:] + names[:r % 3]:
            start = time.perf_counter()
            got[name] = calls[name]()
            seconds = time.perf_counter() - start
            if r:
                timed[name].append(seconds / (heads if name == "after_every_head" else 1))
        load.append(os.getloadavg()[0])
        compare(got["after"], got["before"])
        compare(got["after_every_head"], got["before"])
    return {"tokens": tq, **{f"{name}_s": round(statistics.median(v), 3) for name, v in timed.items()},
            "speedup": round(1 / ratio(timed["after"], timed["before"], digits=6), 1),
            "speedup_every_head": round(1 / ratio(timed["after_every_head"], timed["before"], digits=6), 1),
            "same": {"queries_with_other_keys": gaps["keys_differ"], "max_weight_gap": gaps["weight"],
                     "max_leftover_gap": gaps["leftover"]},
            "loadavg_1m_each_round": [round(x, 2) for x in load],
            "spread_s": {name: summary(v, 3) for name, v in timed.items()}}


def main() -> None:
    import torch

    from bench.long_context import build
    from attnscope.engine.loading.catalog import open_model

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    folder = scratch_dir("attnscope-bench-topkeys-") / "llama-1b-shape"
    build(folder)
    loaded = open_model(str(folder), "cpu")
    result = {"bench": "top_keys", "shape": "Llama-3.2-1B attention: 16 layers x 32 heads, 8 kv heads; "
              "512 wide (head_dim 16)", "device": "cpu", "threads": torch.get_num_threads(), "k": K,
              "unit": "seconds per head", "lengths": {}}
    for n in LENGTHS:
        result["lengths"][str(n)] = bench(loaded, n, ROUNDS)
    result["machine"] = machine()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    run_main(main)
