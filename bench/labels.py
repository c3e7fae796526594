"""Token labels and word merging at growing lengths: each step must stay linear in the text
(at 32k tokens a step quadratic in T once cost more than a GPU's whole forward). Prints one
JSON object: seconds per step at 4k to 64k tokens and the time per 1,000 tokens, which stays
flat when the step is linear.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LENGTHS = (4096, 16384, 32768, 65536)


def best(fn, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    import numpy as np

    from bench._timing import machine
    from attnscope.engine.adapters.hf_text import readable_tokens
    from attnscope.engine.traces.words import merge_pieces, merged_tokens, word_groups
    from tests.helpers.hf_tiny import _bpe_tokenizer

    tok = _bpe_tokenizer("decoder")
    words = "the big dog sees the small cat and the cat sees a bananas dog because it is small".split()
    ids = tok(" ".join(words[i % len(words)] for i in range(max(LENGTHS))), add_special_tokens=False)["input_ids"]
    out = {"bench": "labels", "lengths": {}}
    for n in LENGTHS:
        part = ids[:n]
        labels = readable_tokens(tok, part)
        groups = word_groups(labels)
        row = np.full((1, n), 1.0 / n, np.float32)                     # one query row over n keys
        steps = {"readable_tokens_s": best(lambda: readable_tokens(tok, part)),
                 "word_groups_s": best(lambda: word_groups(labels)),
                 "merged_tokens_s": best(lambda: merged_tokens(labels, groups)),
                 "merge_one_row_s": best(lambda: merge_pieces(row, [0], groups))}
        steps = {k: round(v, 4) for k, v in steps.items()}
        steps["labels_ms_per_1000_tokens"] = round(1000 * steps["readable_tokens_s"] / n * 1000, 3)
        out["lengths"][str(n)] = steps
    out["machine"] = machine()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
