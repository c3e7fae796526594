"""Every head of a 1B-shaped model at thousands of tokens, in the window. Prints one JSON object.

A random model with Llama-3.2-1B's attention shape (16 layers x 32 query heads, 8 key/value
heads; 512 wide, so head_dim 16; MLP 2048, 512-token vocabulary), built locally and opened
as a user opens a folder (engine.loading.catalog.open_model: onto the seam). At 1,024, 4,096
and 8,192 tokens, each length in a fresh process (so its peak memory is its own):

Each timed figure is taken ATTNSCOPE_BENCH_REPEATS times (3), the Run and the bare forward
alternating (bench/_timing.interleaved), and given as a median with its spread; the goals are
checked and a miss exits 1.

- ``sdpa_forward_s``: transformers' own sdpa forward, bare (the baseline);
- ``run_to_overview_s``: what a Run costs until the heads overview is painted: trace_text
  (recorded forward), the pooled thumbnails of all 512 heads, the mosaic, and a grab of the
  HeadGrid widget (the paint). Goal <= 3x the bare forward;
- ``head_detail_s``: one head opened in Head detail until painted: its whole-head viewport,
  exact weights pooled by max to the screen (800 x 800 pixels). Goal <= 1 s at 8k on CPU;
- ``zoom_s``: a 256 x 256-token block zoomed into, recomputed cell for cell, painted;
- ``peak_rss_gb`` (ru_maxrss of the process) against the model's weights; goal <= model + 1.5 GB at 8k;
- ``recording_mb``: the queries and keys kept (head_dim 16); Llama-3.2-1B's real head_dim of
  64 makes it 4x: ``recording_mb_at_head_dim_64``;
- ``dense_gb``: what the old dense (L, H, T, T) float32 trace would take; ``eager_weights_s``:
  the old path (eager attention with output_attentions) where it fits (1,024 tokens).
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LENGTHS = tuple(int(n) for n in os.environ.get("ATTNSCOPE_BENCH_LENGTHS", "1024,4096,8192").split(","))
REPEATS = int(os.environ.get("ATTNSCOPE_BENCH_REPEATS", "3"))   # each figure's repetitions (medians)
SHAPE = dict(hidden_size=512, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
             intermediate_size=2048, vocab_size=512,
             max_position_embeddings=max(16384, max(LENGTHS) + 64))    # the longest text asked fits whole


def build(folder: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.helpers.hf_tiny import _bpe_tokenizer

    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**SHAPE, bos_token_id=1, eos_token_id=2, pad_token_id=0)).save_pretrained(folder)
    _bpe_tokenizer("decoder").save_pretrained(folder)


def bare_forward(model, ids) -> None:
    """transformers' own sdpa forward of ``ids`` (B, T), the last position's logits only, the
    seam switched off for it: the baseline the benches divide by."""
    import torch

    from attnscope.engine.seam.hf_attention import NAME

    model.set_attn_implementation("sdpa")
    try:
        with torch.no_grad():
            model(input_ids=ids, logits_to_keep=1)
    finally:
        model.set_attn_implementation(NAME)


def text_of(tokenizer, n: int) -> str:
    words = "the big dog sees the small cat and the cat sees a dog because it is small".split()
    per = len(tokenizer(" ".join(words), add_special_tokens=False)["input_ids"]) / len(words)
    text = " ".join(words[i % len(words)] for i in range(int(n / per)))
    while len(tokenizer(text)["input_ids"]) < n:
        text += " dog"
    return text


def child(folder: str, n: int) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import torch

    from bench._app import application
    from bench._timing import interleaved, ratio, summary
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.engine.traces import reading
    from attnscope.gui.state import AppState
    from attnscope.gui.views.head_detail import HeadDetail
    from attnscope.gui.views.head_grid import HeadGrid
    from attnscope.gui.drawing.prepared import wait_until_drawn

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    app = application()
    loaded = open_model(folder, "cpu")
    model_bytes = sum(p.numel() * p.element_size() for p in loaded.model.parameters())
    text = text_of(loaded.tokenizer, n)
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"][:n]])
    out = {"tokens": int(ids.shape[1])}

    with torch.no_grad():
        loaded.model(input_ids=ids[:, :64])                        # warm-up

    def sdpa_forward():
        bare_forward(loaded.model, ids)

    state = AppState()
    state.set_model(loaded)
    grid, detail = HeadGrid(state), HeadDetail(state)
    grid.resize(1200, 800)
    detail.resize(900, 900)
    grid.show()
    detail.show()
    app.processEvents()
    shown = {}

    def run_to_overview():
        shown["trace"] = None                                     # the last Run's trace goes first, as in the window
        state.set_trace(None)
        shown["trace"] = trace_text(loaded, text)
        state.set_trace(shown["trace"])
        assert wait_until_drawn(grid, 3600)
        grid.grab()

    # The bare forward and the Run alternate, REPEATS times each (bench/_timing.interleaved):
    # medians of figures that saw the same minutes of the host.
    times = interleaved({"sdpa_forward": sdpa_forward, "run_to_overview": run_to_overview}, REPEATS, warmup=0)
    out["sdpa_forward_s"] = summary([t / 1e3 for t in times["sdpa_forward"]], 2)
    out["run_to_overview_s"] = summary([t / 1e3 for t in times["run_to_overview"]], 2)
    out["overview_over_forward"] = ratio(times["run_to_overview"], times["sdpa_forward"], 2)
    out["overview_note"] = grid.readout.text()[:160]
    trace = shown["trace"]
    heads = iter(range(10**6))

    def head_detail():                                            # another head each time: never a cached drawing
        state.select("decoder self", 5, 7 + next(heads) % 8)
        assert wait_until_drawn(detail, 600)
        detail.grab()
    out["head_detail_s"] = summary([t / 1e3 for t in interleaved({"head": head_detail}, REPEATS, warmup=0)["head"]], 2)
    if detail.drawing.long:          # a viewport: zoom into a block near the sink and the diagonal's end
        def zoom():
            detail.item.setRange(xRange=(0, 256), yRange=(n - 256, n), padding=0)
            detail.zoom_timer.stop()
            detail._zoom()
            assert wait_until_drawn(detail, 600)
            detail.grab()
            detail.item.setRange(xRange=(0, n), yRange=(0, n), padding=0)   # back out: the next zoom is computed again
            detail.zoom_timer.stop()
        out["zoom_s"] = summary([t / 1e3 for t in interleaved({"zoom": zoom}, REPEATS, warmup=0)["zoom"]], 3)
        out["zoomed_block"] = [list(b) for b in detail.zoom_block]
    else:
        out["zoom_s"] = "drawn cell for cell already"
    rec = sum(c.q.nbytes + c.k.nbytes for calls in trace.calls.values() for c in calls)
    out["recording_mb"] = round(rec / 2**20, 1)
    out["recording_mb_at_head_dim_64"] = round(4 * rec / 2**20, 1)
    out["dense_gb"] = round(reading.dense_bytes(trace, "decoder self") / 2**30, 1)
    out["model_gb"] = round(model_bytes / 2**30, 2)
    out["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    out["peak_over_model_gb"] = round(out["peak_rss_gb"] - out["model_gb"], 2)
    if reading.dense_bytes(trace, "decoder self") < 4 * 2**30:               # the old dense path, where it fits
        loaded.model.set_attn_implementation("eager")
        with torch.no_grad():
            start = time.perf_counter()
            loaded.model(input_ids=ids, output_attentions=True, logits_to_keep=1)
            out["eager_weights_s"] = round(time.perf_counter() - start, 2)
    else:
        out["eager_weights_s"] = f"does not fit: {out['dense_gb']} GB of weights"
    return out


def main() -> None:
    from bench._timing import machine, scratch_dir

    folder = scratch_dir("attnscope-bench-long-") / "llama-1b-shape"
    build(folder)
    result = {"bench": "long_context", "shape": "Llama-3.2-1B attention: 16 layers x 32 heads, 8 kv heads; "
              "512 wide (head_dim 16), MLP 2048", "device": "cpu", "lengths": {}}
    for n in LENGTHS:
        done = subprocess.run([sys.executable, __file__, "--child", str(folder), str(n)], capture_output=True,
                              text=True)
        lines = done.stdout.strip().splitlines()
        result["lengths"][str(n)] = json.loads(lines[-1]) if done.returncode == 0 and lines else {
            "failed": (done.stderr.strip().splitlines() or ["?"])[-1][:300]}
    result["goals"] = check_goals(result["lengths"])
    result["machine"] = machine()
    print(json.dumps(result, indent=2))
    if result["goals"]["missed"]:
        sys.exit(1)


def check_goals(lengths: dict) -> dict:
    """Run to overview <= 3 bare forwards at every length; at 8,192 tokens Head detail <= 1 s
    and peak RSS <= the model + 1.5 GB (medians): met or missed, with the figure."""
    met, missed = [], []
    for n, got in lengths.items():
        if "failed" in got:
            missed.append(f"{n}: {got['failed']}")
            continue
        checks = [("overview_over_forward", got["overview_over_forward"], 3.0)]
        if n == "8192":
            checks += [("head_detail_s", got["head_detail_s"]["median"], 1.0),
                       ("peak_over_model_gb", got["peak_over_model_gb"], 1.5)]
        for name, value, most in checks:
            (met if value <= most else missed).append(f"{n} {name} {value} <= {most}")
    return {"met": met, "missed": missed}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
