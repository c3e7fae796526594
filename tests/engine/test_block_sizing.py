"""Blocks of scores are sized for the device they run on (engine.runtime.blocks), and the
numbers never depend on the size: a block of one query row and a block of every row give the
same pooled overview, the same Head detail viewport and the same strongest keys, on every
kind of attention the seam sees. Engine only (runs where Qt is absent, as on a GPU server)."""
import numpy as np
import pytest
import torch

from attnscope.engine.inspection.top_keys import layer_top_keys
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.loading.demo import random_model
from attnscope.engine.runtime import blocks
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.traces.viewport import viewport_weights
from tests.helpers.hf_tiny import tiny_folder
from attnscope.engine.decoding.greedy import frame
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat and the cat sees the big dog because it is small"
TINY, HUGE = 1, 2**40          # a single score a block (one row at least) / every row at once


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    root = tmp_path_factory.mktemp("blocks")
    out = {arch: trace_text(open_model(str(tiny_folder(root, arch)), "cpu"), TEXT) for arch in ("llama", "gemma2")}
    out["t5"] = trace_text(open_model(str(tiny_folder(root, "t5")), "cpu"), TEXT, target="the dog")
    out["gpt"] = trace_text(random_model("gpt", seed=1), TEXT)
    return out


def fresh(trace) -> RecordedTrace:
    return RecordedTrace(trace.calls, model_name=trace.model_name, family=trace.family,
                         source_tokens=trace.source_tokens, target_tokens=trace.target_tokens)


def everything(trace, kind: str) -> list[np.ndarray]:
    """What the overview, Head detail (one head, mean and max of heads, a zoom) and Head lines read."""
    lazy = fresh(trace)
    _, heads, tq, tk = lazy.shape(kind)
    out = []
    for how in ("max", "mean"):
        th = reading.thumbnails(lazy, kind, 4, how)
        out += [th.pooled, th.sink]
    for how in ("one head", "mean of heads", "max of heads"):
        out.append(viewport_weights(lazy, kind, 1, heads - 1, how, (0, tq), (0, tk), (5, 7)))
        out.append(viewport_weights(fresh(trace), kind, 0, 1, how, (2, tq - 1), (1, tk), (64, 64)))
    for h, top in layer_top_keys(lazy, kind, 1, list(range(heads)), 3).items():
        out += [top.keys, top.weights, top.leftover]
    return out


@pytest.mark.parametrize("name", ["llama", "gemma2", "t5", "gpt"])
def test_a_tiny_and_a_huge_block_give_the_same_numbers(traces, name):
    trace = traces[name]
    for kind in trace.kinds:
        with blocks.forced(TINY):
            small = everything(trace, kind)
        with blocks.forced(HUGE):
            large = everything(trace, kind)
        for a, b in zip(small, large):
            np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)


def test_the_viewport_equals_the_dense_head_pooled(traces):
    trace = traces["llama"]
    dense = reading.weights(trace, "decoder self")                                  # (L, H, T, T)
    t = dense.shape[-1]
    with blocks.forced(TINY):
        one = viewport_weights(fresh(trace), "decoder self", 1, 2, "one head", (0, t), (0, t), (t, t))
        mean = viewport_weights(fresh(trace), "decoder self", 1, 0, "mean of heads", (0, t), (0, t), (t, t))
    np.testing.assert_allclose(one, dense[1, 2], atol=1e-6)
    np.testing.assert_allclose(mean, dense[1].mean(0), atol=1e-6)


def test_the_block_is_chosen_by_the_device():
    assert blocks.score_block_bytes(torch.device("cpu")) == blocks.CPU_SCORE_BYTES
    assert blocks.score_block_bytes(torch.device("cpu"), "select") == blocks.CPU_SELECT_BYTES
    assert blocks.score_block_bytes(torch.device("meta")) == blocks.OTHER_BYTES
    with blocks.forced(1000):
        assert blocks.score_block_bytes(torch.device("cpu")) == 1000
        assert blocks.rows_per_block(torch.device("cpu"), 100) == 2          # 100 float32 a row
    assert blocks.rows_per_block(torch.device("cpu"), 10**12) == 1           # never less than a row


def test_a_gpu_block_is_a_share_of_its_free_memory_within_bounds(monkeypatch):
    for free, want in ((80 * 2**30, blocks.GPU_MAX_BYTES), (2**30, 2**30 // 8), (2**20, blocks.GPU_MIN_BYTES)):
        monkeypatch.setattr(blocks, "free_bytes", lambda device, free=free: free)
        assert blocks.score_block_bytes(torch.device("cuda", 0)) == want


def test_a_run_on_a_gpu_is_estimated_against_the_gpus_free_memory(monkeypatch):
    """The recording lives where the model runs: on a GPU the Run is weighed against that GPU's
    free memory (faked here: the model is on the CPU) and refused with the numbers and the place."""
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.runtime import free_memory
    from attnscope.engine.traces import estimate

    loaded = random_model("gpt", seed=1)
    framed = frame(adapter_for(loaded), TEXT)
    roomy = estimate.estimate_run(adapter_for(loaded), framed)
    assert roomy.where == "in memory" and roomy.fits
    monkeypatch.setattr(free_memory, "free_where", lambda device: (1000, f"on {device}"))   # the adapter's facts
    tight = estimate.estimate_run(adapter_for(loaded), framed)
    assert tight.free == 1000 and tight.where == "on cpu" and not tight.fits
    with pytest.raises(estimate.RunTooLarge, match="would not fit on cpu: .* free on cpu"):
        trace_text(loaded, TEXT)


def test_a_causal_overview_block_stays_within_its_budget(tmp_path, monkeypatch):
    """A causal block is scored up to its last row, so its width grows with its rows: the rows
    are chosen for the whole block (the first block was once sized by its first row alone, on a
    GPU every row x every key at once)."""
    from attnscope.engine.seam.call import AttentionCall

    loaded = open_model(str(tiny_folder(tmp_path, "llama", positions=512)), "cpu")
    trace = fresh(trace_text(loaded, " ".join([TEXT] * 12)))           # some 200 tokens: wider than a first block
    call = trace.call("decoder self", 0)
    assert call.causal and call.lse is not None                    # the plain causal path, kernel's lse
    seen, scores = [], AttentionCall.scores

    def counted(self, b=0, heads=None, rows=None, cols=None, scaled=True):
        s = scores(self, b, heads, rows, cols, scaled)
        seen.append(s.numel() * 4)
        return s
    monkeypatch.setattr(AttentionCall, "scores", counted)
    _, heads, tq, tk = trace.shape("decoder self")
    budget = 4 * heads * 100 * 64                                 # 100 rows of 64 keys, or 80 x 80
    with blocks.forced(budget):
        reading.thumbnails(trace, "decoder self", tk)                       # one key a pixel: no rounding of widths
    assert len(seen) > 2 and max(seen) <= budget


def test_causal_rows_fill_the_cells_and_never_pass_them():
    for cells, first in ((1, 0), (100, 0), (100, 7), (10**9, 32_000), (5, 10**6)):
        n = blocks.causal_rows(cells, first)
        assert n >= 1 and (n == 1 or n * (first + n) <= cells) and (n + 1) * (first + n + 1) > cells


def test_a_long_trace_merged_into_words_reads_blocks_of_pieces(tmp_path, monkeypatch):
    """Word pieces merged into words, on a text too long to read a layer whole: tiles, rows and
    each query's strongest keys (Head lines) come from blocks of pieces merged a block at a
    time, and equal the merged whole layer."""
    from attnscope.engine.traces import recorded

    loaded = open_model(str(tiny_folder(tmp_path, "bert")), "cpu")
    trace = trace_text(loaded, "the dogs playing fetch see cats playing like bananas . " * 2, merge_subwords=True)
    kind = "encoder self"
    _, heads, tq, tk = trace.shape(kind)
    assert reading.pieces(trace)["source"] != trace.source_tokens                  # pieces were merged
    whole = reading.layer(trace, kind, 1)                                          # (H, Wq, Wk) merged, read whole
    lazy = RecordedTrace(trace.calls, model_name="m", family="hf-bert", source_tokens=trace.source_tokens,
                         target_tokens=[], groups=reading.groups(trace), pieces=reading.pieces(trace))
    monkeypatch.setattr(recorded, "LAYER_BYTES", 64)                      # every layer too long to read whole
    assert not lazy._reads_whole(kind, 1)
    np.testing.assert_allclose(reading.tile(lazy, kind, 1, 2, slice(1, tq - 1), slice(2, tk)), whole[2, 1:tq - 1, 2:], atol=1e-6)
    np.testing.assert_allclose(reading.row(lazy, kind, 1, 0, 3), whole[0, 3], atol=1e-6)
    np.testing.assert_allclose(reading.tile(lazy, kind, 1, 1, slice(0, tq), slice(0, tk)).sum(-1), 1.0, atol=1e-5)
    for h, top in layer_top_keys(lazy, kind, 1, [0, heads - 1], 3).items():
        want = np.argsort(-whole[h], axis=1, kind="stable")[:, :3]
        np.testing.assert_array_equal(top.keys, want)
    assert not lazy._layers                                                # nothing held whole


def test_the_overview_of_a_long_merged_trace_is_pooled_block_by_block(tmp_path, monkeypatch):
    """The heads overview of a text merged into words, too long to read a layer whole: pooled
    from blocks of whole pixel rows, equal to pooling each merged layer whole."""
    from attnscope.engine.traces import recorded
    from attnscope.engine.traces.pooling import pool_2d

    loaded = open_model(str(tiny_folder(tmp_path, "bert")), "cpu")
    trace = trace_text(loaded, "the dogs playing fetch see cats playing like bananas . " * 3, merge_subwords=True)
    kind = "encoder self"
    L, H, tq, tk = trace.shape(kind)
    whole = reading.weights(trace, kind)                                               # (L, H, Wq, Wk)
    lazy = RecordedTrace(trace.calls, model_name="m", family="hf-bert", source_tokens=trace.source_tokens,
                         target_tokens=[], groups=reading.groups(trace), pieces=reading.pieces(trace))
    monkeypatch.setattr(recorded, "LAYER_BYTES", 64)
    for how in ("max", "mean"):
        with blocks.forced(4 * H * tk * 3):                                   # a few word rows a block
            th = reading.thumbnails(lazy, kind, 5, how)
        want = pool_2d(torch.from_numpy(whole), -(-tq // -(-tq // 5)), -(-tk // -(-tk // 5)), how).numpy()
        np.testing.assert_allclose(th.pooled, want, atol=1e-6)
    assert not lazy._layers
