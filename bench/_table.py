"""The benchmark table of bench/README.md, from the output of two ``make bench`` runs.

    make bench > run1.json; make bench > run2.json
    .venv/bin/python bench/_table.py run1.json run2.json

Each file holds the JSON objects the benches print, one after another. A row gives each
run's figure and whether the two agree within 10 % (|a - b| / mean).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def read_run(path: str) -> dict[str, dict]:
    text, decoder, pos, found = Path(path).read_text(encoding="utf-8"), json.JSONDecoder(), 0, {}
    while True:
        start = text.find("{", pos)
        if start < 0:
            return found
        obj, pos = decoder.raw_decode(text, start)
        found[obj["bench"]] = obj


def _cold(name):
    return lambda r: r["gui"]["cold_start_to_first_heads_drawn"][name]["spawn_to_first_heads_drawn_ms"]["median"]


def _shown(name):
    return lambda r: r["gui"]["cold_start_to_first_heads_drawn"][name]["spawn_to_window_shown_ms"]["median"]


def _run(name):
    return lambda r: r["gui"]["run_to_all_heads_drawn"][name]["run_to_all_heads_drawn_ms"]["median"]


def _bert(n, key):
    return lambda r: r["bert_forward"]["tokens"][n][key]


def _decode(name):
    return lambda r: r["decoding"]["models"][name]["long_over_short"]


# (what, unit, figure, goal)
ROWS = [
    ("cold start, `attnscope` (bundled translator): spawn to first heads drawn", "ms", _cold("default"), "-"),
    ("cold start, `attnscope --model minilm`: spawn to first heads drawn", "ms", _cold("minilm"), "-"),
    ("cold start, `attnscope`: spawn to window shown", "ms", _shown("default"), "-"),
    ("cold start, `attnscope --model minilm`: spawn to window shown", "ms", _shown("minilm"), "-"),
    ("Run to every visible view drawn and painted, real window, translator at 64 tokens (its max_len)", "ms",
     _run("default"), "<= 100 at 128"),
    ("Run to every visible view drawn and painted, real window, MiniLM at 128 tokens", "ms", _run("minilm"),
     "<= 100"),
    ("  of which the forward in the worker (MiniLM, 128 tokens)", "ms",
     lambda r: r["gui"]["run_to_all_heads_drawn"]["minilm"]["phases"]["of_which_forward_in_worker_ms"]["median"], "-"),
    ("longest freeze (event-loop gap) while a 512-token MiniLM result is drawn, every view open", "ms",
     lambda r: r["gui"]["longest_event_loop_gap_512_tokens"]["gap_ms"]["median"], "<= 100"),
    ("  same, the first 512-token Run after a 128-token one (every view changes size)", "ms",
     lambda r: r["gui"]["longest_event_loop_gap_512_tokens"]["gap_after_a_short_text_ms"]["median"], "<= 100"),
    ("tenth of ten quick Runs to its result, over one Run (MiniLM, every view open)", "x",
     lambda r: r["gui"]["tenth_of_ten_quick_runs_over_one_run"]["ratio"], "<= 2"),
    ("Head lines, all 12 heads of a MiniLM layer at 134 tokens: click to painted", "ms",
     lambda r: r["gui"]["head_lines_all_heads_128_tokens"]["click_to_painted_ms"]["median"], "<= 100"),
    ("heads grid redraws per second, 12 x 12 heads at 64 tokens (new trace, prepared, drawn, grabbed)", "/s",
     lambda r: r["gui"]["grid_redraws_per_s_12x12_64_tokens"], ">= 60"),
    ("heads grid redraws per second, 12 x 12 heads at 128 tokens", "/s",
     lambda r: r["gui"]["grid_redraws_per_s_12x12_128_tokens"], ">= 60"),
    ("512 tokens, MiniLM: Run's forward with weights (trace_text)", "ms",
     lambda r: r["long_inputs"]["forward"]["trace_text_ms"]["median"], "-"),
    ("512 tokens, MiniLM: slowest view, new trace to painted", "ms",
     lambda r: f'{r["long_inputs"]["slowest_view_ms"]} ({r["long_inputs"]["slowest_view"]})', "no freeze"),
    ("512 tokens, MiniLM: Head lines, all 12 heads, new trace to painted", "ms",
     lambda r: r["long_inputs"]["view_draw_ms"]["Head lines"]["median"], "no freeze"),
    ("MiniLM Run (trace_text via transformers eager) over the bare eager forward, 16 tokens", "x",
     _bert("16", "app_trace_over_hf_eager"), "<= 1.1"),
    ("  same, 128 tokens", "x", _bert("128", "app_trace_over_hf_eager"), "<= 1.1"),
    ("  same, 512 tokens", "x", _bert("512", "app_trace_over_hf_eager"), "<= 1.1"),
    ("our BERT encoder over HF eager, weights returned, 16 / 128 / 512 tokens", "x",
     lambda r: " / ".join(str(_bert(n, "weights_ratio_ours_over_hf_eager")(r)) for n in ("16", "128", "512")), "<= 1.0"),
    ("our BERT encoder fused over HF sdpa, 16 / 128 / 512 tokens", "x",
     lambda r: " / ".join(str(_bert(n, "fused_ratio_ours_over_hf_sdpa")(r)) for n in ("16", "128", "512")), "<= 1.05"),
    ("trace over the eager forward, Hugging Face architectures (median over each at 128 and 512 tokens)", "x",
     lambda r: r["hf_models"]["median_ratio"], "<= 1.1"),
    ("  worst of them", "x", lambda r: r["hf_models"]["worst_ratio"], "<= 1.1"),
    ("decoding step after the longest input over one after a short one, bundled translator", "x",
     _decode("translator"), "<= 1.5"),
    ("  same, bundled GPT", "x", _decode("gpt"), "<= 1.5"),
    ("  same, Hugging Face GPT-2 6 x 8 x 512, 274 over 22 prompt tokens", "x", _decode("hf_gpt2_6x8x512"), "<= 1.5"),
    ("training tokens/s, our translator over `torch.nn.Transformer`", "x",
     lambda r: r["train_throughput"]["ratio"], ">= 0.9"),
]


def _number(value) -> float | None:
    try:
        return float(str(value).split()[0])
    except ValueError:
        return None


def _agree(a, b) -> str:
    parts_a, parts_b = str(a).split(" / "), str(b).split(" / ")
    worst = 0.0
    for x, y in zip(parts_a, parts_b):
        x, y = _number(x), _number(y)
        if x is None or y is None:
            return "?"
        mean = (x + y) / 2
        worst = max(worst, abs(x - y) / mean if mean else 0.0)
    return f"{'yes' if worst <= 0.10 else 'NO'} ({100 * worst:.0f} %)"


class _BenchOf(Exception):
    pass


class _FirstKey(dict):
    """Handed to a row's figure: the first key it reads names the bench the row comes from."""

    def __getitem__(self, key):
        raise _BenchOf(key)


def bench_of(figure) -> str:
    try:
        figure(_FirstKey())
    except _BenchOf as found:
        return str(found.args[0])
    raise ValueError("a row's figure reads no bench")


def _probe(run: dict, bench: str) -> float | None:
    value = run.get(bench, {}).get("machine", {}).get("host_probe_ms")
    return float(value) if value is not None else None


def _probe_note(runs: list[dict], bench: str) -> str:
    """When the host ran the probe at different speeds in the two runs, the row says so: a
    millisecond figure cannot agree better than the host it ran on."""
    a, b = _probe(runs[0], bench), _probe(runs[1], bench)
    if a is None or b is None or not a + b:
        return ""
    diff = abs(a - b) / ((a + b) / 2)
    return f"; host probe {100 * diff:.0f} % apart" if diff > 0.10 else ""


def _machine_figure(machine: dict, key: str) -> str:
    value = machine.get(key, "-")
    return str(value[0] if isinstance(value, list) else value)


def table(runs: list[dict]) -> str:
    head = "| what | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | agree | goal |"
    lines = [head, "|---" * (len(runs) + 3) + "|"]
    for what, unit, figure, goal in ROWS:
        values = []
        for run in runs:
            try:
                values.append(figure(run))
            except KeyError:
                values.append("-")
        agree = _agree(*values[:2]) if len(values) >= 2 and "-" not in values else ""
        if agree.startswith("NO") and unit != "x":     # a ratio's two sides shared the host
            agree = agree[:-1] + _probe_note(runs, bench_of(figure)) + ")"
        unit = "" if unit == "x" else f" {unit}"
        lines.append(f"| {what} | " + " | ".join(f"{v}{unit if v != '-' else ''}" for v in values)
                     + f" | {agree} | {goal} |")
    lines.append("")
    for label, key in (("Load average (1 min)", "loadavg_1m_5m"), ("Host probe (ms, bench/_timing.host_probe_ms)",
                                                                  "host_probe_ms")):
        per_run = [[_machine_figure(run[b]["machine"], key) for b in sorted(run) if "machine" in run[b]] for run in runs]
        when = "as each bench ended" if key.startswith("load") else "(median of one per round in gui and long_inputs, at the end in the others)"
        lines.append(f"{label} {when}, in `make bench` order: "
                     + "; ".join(f"run {i + 1}: " + ", ".join(per_run[i]) for i in range(len(runs))))
        lines.append("")
    return "\n".join(lines).rstrip()


if __name__ == "__main__":
    print(table([read_run(p) for p in sys.argv[1:]]))
