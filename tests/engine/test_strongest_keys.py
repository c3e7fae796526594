"""A recorded trace's own strongest keys (RecordedTrace.strongest_keys: every asked head of a
block of rows scored at once, topk on the model's device, a causal block scored up to its
last row) equal what engine.inspection.top_keys reads head by head through ``tile``: the same
keys, weights and leftover, for every kind of attention the seam sees (grouped-query causal,
sliding window, softcap, T5's bias, our translator's masks), any k, any block of rows, with
and without keys hidden, before and after the overview kept each row's log-sum-exp. Equal
weights go in key order, as numpy's stable sort gives; word-merged and dense traces keep the
head-by-head path.
"""
import numpy as np
import pytest
import torch

from attnscope.engine.runtime.blocks import forced
from attnscope.engine.inspection.top_keys import head_top_keys, layer_top_keys
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.loading.demo import random_model
from attnscope.engine.seam.call import AttentionCall, Site
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_tiny import tiny_folder
from tests.helpers.traces import TEXT, fresh_recording, top_k_reference
from attnscope.engine.traces import reading

NAMES = ["llama", "mistral", "gemma2", "t5", "translator"]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """name -> a trace of TEXT (t5 and the translator with a target): recorded, small."""
    root = tmp_path_factory.mktemp("strongest")
    found = {}
    for name in NAMES:
        loaded = random_model("translator", seed=4) if name == "translator" else open_model(
            str(tiny_folder(root, name)), "cpu")
        found[name] = trace_text(loaded, TEXT, target="the dog" if name in ("t5", "translator") else None)
    return found


def head_by_head(trace, kind, layer, heads, k, keys=None):
    """The generic path: each head read through ``tile``, a few rows at a time."""
    return {h: head_top_keys(trace, kind, layer, h, k, keys, chunk_bytes=4 * 7 * 3) for h in heads}


def assert_same(fast, slow):
    assert fast.keys() == slow.keys()
    for h in slow:
        np.testing.assert_array_equal(fast[h].keys, slow[h].keys)
        np.testing.assert_allclose(fast[h].weights, slow[h].weights, atol=1e-6, rtol=0)
        np.testing.assert_allclose(fast[h].leftover, slow[h].leftover, atol=1e-6, rtol=0)
        assert fast[h].keys.dtype == np.int64 and fast[h].weights.dtype == np.float32


def hidden_keys(tk: int) -> np.ndarray:
    """(Tk,) bool: every key but the first (a sink) and two in the middle."""
    allowed = np.ones(tk, bool)
    allowed[[0, tk // 2, tk // 2 + 1]] = False
    return allowed


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("block_bytes", [1, 4 * 4 * 40, 2**25])    # a row a block, a few rows, all of them
def test_every_kind_equals_the_head_by_head_path(traces, name, block_bytes):
    with forced(block_bytes):
        every_kind_equals_the_head_by_head_path(traces[name])


def every_kind_equals_the_head_by_head_path(trace):
    for kind in trace.kinds:
        _, heads, _, tk = trace.shape(kind)
        for overview in (False, True):                   # the rows' log-sum-exp from the kernel / the thumbnails
            lazy = fresh_recording(trace)
            if overview:
                reading.thumbnails(lazy, kind, 5)
            for k in (1, 3, tk + 5):                     # k past Tk: every key, zeros in key order
                for keys in (None, hidden_keys(tk)):
                    every = list(range(heads))           # query heads grouped over their key head
                    assert_same(layer_top_keys(lazy, kind, 1, every, k, keys), head_by_head(lazy, kind, 1, every, k, keys))
                    some = [heads - 1, 0]
                    assert_same(layer_top_keys(lazy, kind, 0, some, k, keys), head_by_head(lazy, kind, 0, some, k, keys))
            assert not lazy._dense and not lazy._layers


@pytest.mark.parametrize("name", ["llama", "t5"])
def test_any_block_of_rows_is_the_same_rows_of_the_whole(traces, name):
    trace = fresh_recording(traces[name])
    kind = trace.kinds[-1]
    _, heads, tq, tk = trace.shape(kind)
    whole = trace.strongest_keys(kind, 1, [2, 1], slice(0, tq), 4, hidden_keys(tk))
    for rows in (slice(0, 1), slice(3, 9), slice(tq - 2, tq)):
        keys, weights, leftover = trace.strongest_keys(kind, 1, [2, 1], rows, 4, hidden_keys(tk))
        np.testing.assert_array_equal(keys, whole[0][:, rows])
        np.testing.assert_allclose(weights, whole[1][:, rows], atol=1e-6, rtol=0)   # a float's last bit may
        np.testing.assert_allclose(leftover, whole[2][:, rows], atol=1e-6, rtol=0)  # move with the block's shape


def tied_trace(t: int = 23, heads: int = 4, kv: int = 2, causal: bool = True) -> RecordedTrace:
    """A causal recording whose keys repeat three vectors: every row holds runs of equal scores,
    hence equal weights, which must go in key order (and 0-weight keys past a short row's end)."""
    g = torch.Generator().manual_seed(5)
    q = torch.randn(1, heads, t, 8, generator=g)
    k = torch.randn(1, kv, 3, 8, generator=g)[:, :, torch.arange(t) % 3]     # (1, kv, t, 8) three vectors
    call = AttentionCall(Site("decoder self", 0), q, k, None, scale=0.5, causal=causal)
    tokens = [f"w{i}" for i in range(t)]
    return RecordedTrace({"decoder self": [call]}, model_name="tied", family="gpt", source_tokens=[],
                         target_tokens=tokens)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("k", [1, 2, 5, 12, 30])
def test_equal_weights_go_in_key_order(causal, k):
    with forced(4 * 4 * 23 * 4):                                        # a few rows a block
        equal_weights_go_in_key_order(causal, k)


def equal_weights_go_in_key_order(causal, k):
    trace = tied_trace(causal=causal)
    dense = trace.call("decoder self", 0).weights(0).numpy()             # (H, T, T) softmax rows
    for keys in (None, hidden_keys(23)):
        tops = layer_top_keys(trace, "decoder self", 0, [0, 1, 2, 3], k, keys)
        for h, top in tops.items():
            want, weights, leftover = top_k_reference(dense[h], k, keys)
            np.testing.assert_array_equal(top.keys, want)
            np.testing.assert_allclose(top.weights, weights, atol=1e-6, rtol=0)
            np.testing.assert_allclose(top.leftover, leftover, atol=1e-6, rtol=0)
        assert_same(tops, head_by_head(trace, "decoder self", 0, [0, 1, 2, 3], k, keys))


def test_a_row_with_every_key_masked_keeps_nothing_and_leaves_nothing():
    t = 9
    q, k = torch.randn(1, 2, t, 4), torch.randn(1, 2, t, 4)
    mask = torch.ones(1, 1, t, t, dtype=torch.bool)
    mask[..., 4, :] = False                                              # query 4 may see no key
    call = AttentionCall(Site("encoder self", 0), q, k, None, mask=mask)
    trace = RecordedTrace({"encoder self": [call]}, model_name="m", family="bert",
                          source_tokens=[f"s{i}" for i in range(t)], target_tokens=[])
    tops = layer_top_keys(trace, "encoder self", 0, [0, 1], 3)
    assert_same(tops, head_by_head(trace, "encoder self", 0, [0, 1], 3))
    for top in tops.values():
        assert (top.weights[4] == 0).all() and top.leftover[4] == 0
        np.testing.assert_allclose(np.delete(top.leftover + top.weights.sum(1), 4), 1.0, atol=1e-6)


def test_merged_and_dense_traces_read_head_by_head(traces, monkeypatch):
    trace = fresh_recording(traces["llama"])
    merged = RecordedTrace(trace.calls, model_name="m", family="llama", source_tokens=[],
                           target_tokens=trace.target_tokens, groups={"target": list(range(len(trace.target_tokens)))})
    reading.weights(trace, "decoder self")                                         # computed whole
    for t in (merged, trace):
        assert t.strongest_keys("decoder self", 0, [0], slice(0, 4), 2) is None
        assert_same(layer_top_keys(t, "decoder self", 0, [0, 3], 4), head_by_head(t, "decoder self", 0, [0, 3], 4))
