"""Decoding one token per click: ``engine.decoding.session.DecodeSession`` steps, as the Decoding
panel and ``attnscope generate/translate`` take them. Prints one JSON object.

Models: the bundled checkpoints (whatever resources/checkpoints holds: the translator and
the GPT), and a Hugging Face GPT-2 of a realistic small shape (6 layers, 8 heads, 512 wide,
random weights, opened from its folder: the stepper's path for every Hugging Face decoder).

For each model, a short and a long input (the GPT-2 at 16 and 256 prompt tokens; the bundled
models at a short prompt and at their longest: the translator's source at max_len, the GPT's
prompt at block_size - 24), decoded greedily, the two alternating in one loop
(bench/_timing's rule). A step is one ``next()`` of ``steps()``: the forward of the new
token on the KV cache, the attention rows it returns, the candidates. The first step also
feeds the prompt (prefill) and is reported apart. Goal: a step after the long input within
1.5x of one after the short input (the cache keeps a step's cost from growing with the
prefix). Sessions run on the model thread, as the Decoding panel runs them.

The models take turns (``round_robin``: ROUNDS rounds of two pairs each, paced over 40 s a
model). Unpaced, the bundled GPT's ratio read 1.07 in some runs and 1.19 in others: its
step after the long input (and its prefill, 8.2 against 10.6 ms) ran at two speeds that
switched every few seconds to minutes with the host, even within one process, while the
step after the short input did not move; 15 pairs taken within two seconds all fell in one.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._timing import machine, on_worker, round_robin, run_main, scratch_dir, summary  # noqa: E402

STEPS = 24
ROUNDS = 12   # each model's pairs come in this many turns, paced over the bench (see the docstring)


def _session_times(loaded, text: str) -> tuple[float, list[float]]:
    """(first step ms, the later steps' ms) of one greedy session on ``text``."""
    from attnscope.engine.decoding.session import DecodeSession, DecodeSettings

    start = time.perf_counter()
    session = DecodeSession(loaded, text, DecodeSettings(strategy="greedy", max_new_tokens=STEPS))
    steps, times = session.steps(), []
    for _ in steps:
        now = time.perf_counter()
        times.append((now - start) * 1e3)
        start = now
    return times[0], times[1:]


def _text(loaded, n_tokens: int, words: str) -> tuple[str, int]:
    """A text of about ``n_tokens`` input tokens for ``loaded`` (fewer if it truncates)."""
    from attnscope.engine.decoding.session import DecodeSession

    text, n = words, 0
    while True:
        session = DecodeSession(loaded, text)
        n_now = len(session.source_tokens) or len(session.prompt_tokens)
        if n_now >= n_tokens or n_now <= n:
            return text, n_now
        n, text = n_now, f"{text} {words}"


class SessionPairs:
    """One model's short and long sessions; each call decodes ``per_call`` pairs, the order
    alternating (bench/_timing's rule), on the model thread as the Decoding panel does."""

    def __init__(self, loaded, texts: dict[str, str], per_call: int = 2):
        self.loaded, self.texts, self.per_call, self.calls = loaded, texts, per_call, 0
        self.first = {name: [] for name in texts}
        self.later = {name: [] for name in texts}

    def __call__(self, timed: bool) -> None:
        names = list(self.texts)
        for _ in range(self.per_call):
            self.calls += 1
            for name in (names if self.calls % 2 else names[::-1]):
                f, rest = on_worker(lambda: _session_times(self.loaded, self.texts[name]))()
                if timed:
                    self.first[name].append(f)
                    self.later[name].append(rest)

    def result(self) -> dict:
        k = min(len(rest) for rows in self.later.values() for rest in rows)   # the same step indices for both
        steps = {name: [t for rest in rows for t in rest[:k]] for name, rows in self.later.items()}
        short, long_ = self.texts
        return {"steps_compared_per_session": k,
                "first_step_with_prefill_ms": {name: summary(v, 2) for name, v in self.first.items()},
                "step_ms": {name: summary(v, 2) for name, v in steps.items()},
                "long_over_short": round(statistics.median(steps[long_]) / statistics.median(steps[short]), 3)}


def main() -> None:
    from attnscope.engine.loading import catalog

    torch.manual_seed(0)
    about, pairs = {}, {}
    for path in catalog.bundled_checkpoints():
        loaded = catalog.open_model(str(path), "cpu")
        if loaded.role == "encoder":
            continue
        if loaded.family == "translator":
            words, longest = "the big dog sees the small cat and", loaded.model.config.max_len
        else:
            words, longest = "the dog plays with the child because", loaded.model.config.block_size - STEPS
        short, n_short = _text(loaded, 8, words)
        long_, n_long = _text(loaded, longest, words)
        about[path.stem] = {"model": loaded.name, "input_tokens": {"short": n_short, "long": n_long}}
        pairs[path.stem] = SessionPairs(loaded, {"short": short, "long": long_})
    from tests.helpers.hf_tiny import tiny_folder

    folder = tiny_folder(scratch_dir("attnscope-bench-decode-"), "gpt2", width=512, layers=6,
                         heads=8, positions=1024)
    loaded = catalog.open_model(str(folder), "cpu")
    words = "the big dog sees the small cat and the cat sees a dog"
    short, n_short = _text(loaded, 16, words)
    long_, n_long = _text(loaded, 256, words)
    about["hf_gpt2_6x8x512"] = {"model": "Hugging Face GPT-2, random, 6 layers x 8 heads x 512",
                                "input_tokens": {"short": n_short, "long": n_long}}
    pairs["hf_gpt2_6x8x512"] = SessionPairs(loaded, {"short": short, "long": long_})
    probes = round_robin(pairs, ROUNDS)
    out = {name: about[name] | pairs[name].result() for name in pairs}
    print(json.dumps({"bench": "decoding", "device": "cpu", "threads": torch.get_num_threads(), "strategy": "greedy",
                      "models": out, "worst_long_over_short": max(m["long_over_short"] for m in out.values()),
                      "rounds": ROUNDS, "machine": machine(probes), "goal": "long_over_short <= 1.5"}))


if __name__ == "__main__":
    run_main(main)
